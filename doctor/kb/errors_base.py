"""What several error families share: the commands that read a machine fact, the container
start line, the text that marks a message as ROCm's, and sources cited by more than one family.
"""

from __future__ import annotations

ARCH_LIST = 'python -c "import torch; print(torch.cuda.get_arch_list())"'
GFX_OF_GPU = "rocminfo | grep -o -m1 'gfx[0-9a-f]*'"
TORCH_BUILD = ('python -c "import torch; print(torch.__version__, torch.version.cuda, '
               'torch.version.hip, torch.cuda.is_available())"')
ROCM_AGENTS = "rocminfo | grep -E 'Marketing Name|gfx'"
KFD_NODES = "ls -ln /dev/kfd /dev/dri"
DKMS_STATUS = "dkms status"
NVIDIA_XID = "sudo dmesg | grep -iE 'NVRM|Xid'"
NVIDIA_SMI = "nvidia-smi"

# ROCm's container guide: the devices and the groups that own them, on the docker command line
# before the image name (everything after the image is the container's own command).
DOCKER_ROCM = ("docker run --device=/dev/kfd --device=/dev/dri --group-add video "
               "--group-add render --security-opt seccomp=unconfined <image>")
DOCKER_NVIDIA = "docker run --gpus all <image>"
ROCM_DOCKER = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html"
NVIDIA_TOOLKIT = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
                  "install-guide.html")

# A text that names HIP or ROCm is a ROCm run even where torch prints "CUDA error" (c10 keeps
# CUDA's names on ROCm builds).
HIP_TEXT = (r"\bHIP\b|hipError|AMD_SERIALIZE_KERNEL|TORCH_USE_HIP_DSA|\brocm|\bgfx[0-9]|"
            r"HSA_STATUS|amdgpu|MIOpen|rocBLAS")

ROCM_PREREQUISITES = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/prerequisites.html"
)
ROCM_SYSTEM_REQUIREMENTS = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/"
                            "reference/system-requirements.html")
ROCM_INSTALL_FAQ = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/"
                    "install-faq.html")
ROCM_WSL_PYTORCH = ("https://rocm.docs.amd.com/projects/radeon/en/latest/docs/install/wsl/"
                    "install-pytorch.html")
HIP_ERRORS = "https://github.com/ROCm/clr/blob/develop/hipamd/src/hip_error.cpp"
CUDA_RUNTIME_TYPES = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
CUDA_FUNCTIONS = "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAFunctions.cpp"
TORCH_CUDA_INIT = "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py"
TORCH_HIP_NOTES = "https://docs.pytorch.org/docs/stable/notes/hip.html"
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
NCCL_ERRORS = "https://github.com/NVIDIA/nccl/blob/master/src/init.cc"
MIOPEN_PERFDB = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/perfdatabase.html"
MIOPEN_DEBUG = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/how-to/debug-log.html"
WHL = "https://download.pytorch.org/whl/"
