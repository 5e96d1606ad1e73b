"""What several error families share: the commands that read a machine fact, the container
start line, the text that marks a message as ROCm's, and sources cited by more than one family.
"""

from __future__ import annotations

from rocmdoctor.kb.messages import Variant

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
# before the image name (everything after the image is the container's own command). The render
# group by its host's number: a name is looked up in the image's /etc/group, whose render group
# (if any) need not have the host's number (ROCm/ROCm-docker#116; doctor/fixes.py does the same).
DOCKER_ROCM = ("docker run --device=/dev/kfd --device=/dev/dri --group-add video "
               "--group-add $(getent group render | cut -d: -f3) "
               "--security-opt seccomp=unconfined <image>")
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

# Windows: ROCm's Linux runtime (libhsakmt, HSAKMT_TOPOLOGY in kb.gfx) reads
# HSA_OVERRIDE_GFX_VERSION, the Windows HIP SDK does not (ollama's GPU guide has "Overrides on
# Linux" only); PyTorch's ROCm wheels are Linux-only (manylinux, OneTrainer issue 1381: "no
# wheels with a matching platform tag (e.g., win_amd64)"); AMD publishes Windows wheels for the
# GPUs of its Windows compatibility matrix, and its multi-arch wheels keep each GPU's kernels
# in a device package (TheRock RELEASES.md, issue 7839).
AMD_WINDOWS_MATRIX = ("https://rocm.docs.amd.com/projects/radeon-ryzen/en/docs-7.2.1/docs/"
                      "compatibility/compatibilityrad/windows/windows_compatibility.html")
THEROCK_RELEASES = "https://github.com/ROCm/TheRock/blob/main/RELEASES.md"
TORCH_WINDOWS = ('python -c "import torch; print(torch.__version__, torch.version.hip, '
                 'torch.cuda.is_available())"')
WINDOWS_GPU_CODE = Variant(
    "windows",
    "On Windows HSA_OVERRIDE_GFX_VERSION changes nothing (only ROCm's Linux runtime reads it): "
    "install a torch with code for this GPU's gfx target. AMD's Windows wheels keep each GPU's "
    "kernels in a device package (torch[device-gfxNNNN]); a GPU outside AMD's Windows list "
    "needs Linux (or WSL, where AMD supports it).",
    (TORCH_WINDOWS,), "The log was written on Windows: the Windows fix.")
WINDOWS_TORCH_BUILD = Variant(
    "windows",
    "On Windows the torch to install depends on the GPU, into the environment the program "
    "runs: for NVIDIA a CUDA wheel (pip's default torch on Windows is CPU-only); for AMD, "
    "PyTorch's own ROCm wheels do not exist on Windows (download.pytorch.org's ROCm wheels are "
    "Linux-only): AMD's PyTorch wheels for Windows, for a GPU AMD's Windows compatibility "
    "matrix lists (Radeon RX 7000 and 9000, Ryzen AI); other Radeon GPUs have no ROCm torch on "
    "Windows (Linux or WSL, or DirectML or ZLUDA builds of the program).",
    (TORCH_WINDOWS,), "The log was written on Windows: the Windows fix.")
WINDOWS_ROCBLAS = Variant(
    "windows",
    "On Windows HSA_OVERRIDE_GFX_VERSION changes nothing: use rocBLAS built for this GPU and "
    "this HIP SDK version (rocblas.dll and its rocblas\\library folder), or a build of the "
    "application that bundles one.",
    ("hipInfo", 'dir "%HIP_PATH%bin\\rocblas\\library"'),
    "The log was written on Windows: the Windows fix.")
