"""Messages `rocmdoctor explain` recognises: errors, kernel-log lines, settings copied from
blog posts that do not exist, and debugging settings left on. Each entry: the patterns that
identify it, its cause, the fix, the check that confirms it, and the source behind it.

`rocmdoctor.explain` reads this table; `context` names the function there that makes the
answer specific to a machine (or to the numbers in the message itself).
"""

from __future__ import annotations

from rocmdoctor.kb.allocator import CUDA_NOTES
from rocmdoctor.kb.debug_vars import DEBUG_VARS
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.kb.messages import DMESG_AMDGPU, KnownMessage

ROCM_3207 = "https://github.com/ROCm/ROCm/issues/3207"
CLR_CODE_OBJECT = "https://github.com/ROCm/clr/blob/develop/hipamd/src/hip_code_object.cpp"
ROCM_5990 = "https://github.com/ROCm/ROCm/issues/5990"
ROCM_PREREQUISITES = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/prerequisites.html"
)
ROCM_4043 = "https://github.com/ROCm/ROCm/issues/4043"
ROCM_1498 = "https://github.com/ROCm/ROCm/issues/1498"
MIOPEN_PERFDB = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/perfdatabase.html"
MIOPEN_DEBUG = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/how-to/debug-log.html"
ROCM_2330 = "https://github.com/ROCm/ROCm/issues/2330"
TORCH_HIP_NOTES = "https://docs.pytorch.org/docs/stable/notes/hip.html"
VISION_README = "https://github.com/pytorch/vision#installation"
TORCH_23585 = "https://github.com/pytorch/pytorch/issues/23585"
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
TORCH_BACKENDS = "https://github.com/pytorch/pytorch/tree/main/torch/backends"
TORCH_UTILS_DATA = "https://github.com/pytorch/pytorch/tree/main/torch/utils/data"
TORCH_HCC_REMOVED = "https://github.com/pytorch/pytorch/pull/111975"
ROCR_FLAGS = ("https://github.com/ROCm/rocm-systems/blob/develop/projects/rocr-runtime/"
              "runtime/hsa-runtime/core/util/flag.h")

ARCH_LIST = 'python -c "import torch; print(torch.cuda.get_arch_list())"'


_GPU_CODE = ("Install a torch build whose compiled targets include your GPU's gfx target; for "
             "a consumer GPU that no build includes, HSA_OVERRIDE_GFX_VERSION can map it onto "
             "a compiled target of the same family.")

KNOWN_MESSAGES: tuple[KnownMessage, ...] = (
    *KERNEL_MESSAGES,
    KnownMessage(
        "invalid-device-function", "HIP error: invalid device function", "error",
        (r"invalid device function", r"hipErrorInvalidDeviceFunction"),
        "A GPU kernel was launched that has no code for the GPU's gfx target: torch (or an "
        "extension) was not compiled for it, or HSA_OVERRIDE_GFX_VERSION makes the runtime ask "
        "for a target the build lacks (in ROCm issue 3207, HSA_OVERRIDE_GFX_VERSION=11.0.2 on a "
        "gfx1103 gave this error: the wheel has no gfx1102 code).",
        _GPU_CODE, "torch-arch-support", ROCM_3207,
        commands=(ARCH_LIST, "rocminfo | grep -o -m1 'gfx[0-9a-f]*'"), context="gpu_code"),
    KnownMessage(
        "no-binary-for-gpu", "hipErrorNoBinaryForGpu", "error",
        (r"hipErrorNoBinaryForGpu", r"Unable to find code object for all current devices"),
        "The HIP runtime found no code object for the GPU's gfx target in the program or "
        "library it loaded; it lists the devices it looked for as [Not Found].",
        _GPU_CODE, "torch-arch-support", CLR_CODE_OBJECT,
        commands=(ARCH_LIST, "rocminfo | grep -o -m1 'gfx[0-9a-f]*'"), context="gpu_code"),
    KnownMessage(
        "hip-out-of-memory", "HIP out of memory", "error",
        (r"HIP out of memory", r"hipErrorOutOfMemory"),
        "An allocation needed more GPU memory than was free. Much memory 'reserved by PyTorch "
        "but unallocated' means the cache is fragmented and an allocator setting helps; a "
        "single request larger than the GPU's total capacity only a smaller request fixes. On "
        "APUs the capacity HIP reports can be far below the VRAM carve-out in the kernel log "
        "(TheRock issue 1054).",
        "Lower the batch size or sequence length, use mixed precision or activation "
        "checkpointing. Against fragmentation: expandable_segments:True where torch supports "
        "it on ROCm (torch 2.12 and newer built for ROCm 7.0 or newer), otherwise "
        "garbage_collection_threshold:0.8,max_split_size_mb:512.",
        "allocator-config", CUDA_NOTES, context="out_of_memory"),
    KnownMessage(
        "memory-access-fault", "Memory access fault by GPU node", "error",
        (r"Memory access fault by GPU node-\d+",),
        "A GPU kernel touched an address that is not mapped and the HSA runtime aborted the "
        "process. Causes seen: code built for another target run through "
        "HSA_OVERRIDE_GFX_VERSION, driver or kernel regressions (ROCm issue 5990: crashes on "
        "Linux 6.18.9, not on 6.17.9), and out-of-bounds bugs in a kernel.",
        "Unset HSA_OVERRIDE_GFX_VERSION if it is set and use a build for your GPU; try a "
        "kernel the installed ROCm supports; to find the failing kernel, rerun once with "
        "AMD_SERIALIZE_KERNEL=3 (debugging only, slow), and read the kernel log.",
        "gfx-override", ROCM_5990, commands=(DMESG_AMDGPU,), needs_root=True,
        context="machine_state"),
    KnownMessage(
        "kfd-permission", "Permission denied on /dev/kfd", "error",
        (r"Unable to open /dev/kfd read-write: Permission denied",
         r"\bopen\w*\b[^\n]*/dev/kfd[^\n]*Permission denied"),
        "Your user may not open /dev/kfd: it is not in the group that owns the device "
        "(render, or video on older systems).",
        "Add your user to the render and video groups, then log out and in again.",
        "kfd-access", ROCM_PREREQUISITES, commands=("sudo usermod -aG render,video $USER",),
        needs_root=True, needs_relogin=True, context="user_groups"),
    KnownMessage(
        "kfd-open", "Unable to open /dev/kfd", "error",
        (r"Unable to open /dev/kfd", r"/dev/kfd.*(No such file|Invalid argument)"),
        "/dev/kfd is missing (the amdgpu driver is not loaded, or a container was started "
        "without it), was not passed into the container properly (Invalid argument: inside "
        "it the device belongs to nobody:nogroup, ROCm issue 4043), or the driver refused it "
        "(Operation not permitted, Cannot allocate memory: read the kernel log).",
        "On the host, check the device and the driver; start containers with "
        "--device /dev/kfd --device /dev/dri --group-add video.",
        "kfd-access", ROCM_4043, commands=("ls -ln /dev/kfd /dev/dri", DMESG_AMDGPU),
        needs_root=True, unless=(r"Permission denied",)),
    KnownMessage(
        "rock-not-loaded", "ROCk module is NOT loaded", "error",
        (r"ROCk module is NOT (loaded|live)",),
        "The amdgpu kernel driver is not loaded or not initialized: no AMD GPU is attached to "
        "this machine or VM, the driver is blacklisted, or it failed to load (ROCm issue 1498: "
        "an Azure NVv4 VM's MI25 was never bound to amdgpu).",
        "Load the driver, then read the kernel log for why it did not load.",
        "amdgpu-driver", ROCM_1498, commands=("sudo modprobe amdgpu", "sudo dmesg | grep -i "
                                                                      "amdgpu"),
        needs_root=True),
    KnownMessage(
        "miopen-database", "MIOpen cannot use its database", "error",
        (r"MIOpen.*(unable to open database file|readonly database|SQLite)",),
        "MIOpen could not open or write its performance database or kernel cache (SQLite files "
        "under $HOME/.config/miopen and $HOME/.cache/miopen): the folder is read-only or "
        "missing, as in containers with a read-only or shared HOME.",
        "Give MIOpen writable folders before Python starts.",
        "torch-device", MIOPEN_PERFDB,
        commands=('mkdir -p "/tmp/miopen-$USER"', 'export MIOPEN_USER_DB_PATH="/tmp/miopen-$USER"',
                  'export MIOPEN_CUSTOM_CACHE_DIR="/tmp/miopen-$USER"')),
    KnownMessage(
        "miopen-error", "MIOpen error", "error",
        (r"MIOpen Error", r"miopenStatus\w*Error", r"MIOpen\(HIP\): Error"),
        "MIOpen (the convolution and normalization library on ROCm) failed: a kernel did not "
        "compile or the chosen solver does not fit the problem, often after a ROCm, compiler "
        "or GPU change, or on a GPU the MIOpen release does not support.",
        "Log one failing run at level 4 to see the failing step (debugging only; unset it "
        "afterwards); to get going meanwhile, torch.backends.cudnn.enabled = False bypasses "
        "MIOpen at a speed cost.",
        "torch-device", MIOPEN_DEBUG, commands=("export MIOPEN_LOG_LEVEL=4",),
        yields_to=("miopen-database",)),
    KnownMessage(
        "autocast-hip", "autocast device_type 'hip'", "error",
        (r"unsupported autocast device_type '(hip|rocm)'",),
        "ROCm builds of PyTorch drive AMD GPUs through the 'cuda' device type; there is no "
        "'hip' or 'rocm' autocast device.",
        "Write torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16) (or float16): it "
        "runs on the AMD GPU.",
        "torch-install", TORCH_HIP_NOTES),
    KnownMessage(
        "device-string-rocm", "device type 'rocm' or 'hip'", "error",
        (r"device type at start of device string: (rocm|hip)",),
        "PyTorch names AMD GPUs 'cuda' on ROCm builds; 'rocm' is not a device type.",
        "Use torch.device(\"cuda\") (or \"cuda:0\"): it is the AMD GPU.",
        "torch-install", TORCH_HIP_NOTES),
    KnownMessage(
        "torchvision-nms", "operator torchvision::nms does not exist", "error",
        (r"operator torchvision::nms does not exist",),
        "torchvision's compiled operators were built for another torch than the one "
        "installed (another version, or another build: PyPI's torchvision beside a +rocm or "
        "+cpu torch).",
        "Install the torchvision release paired with your torch, from the same wheel index "
        "as torch.",
        "torchvision-match", VISION_README, commands=("pip list | grep -i torch",),
        context="torchvision"),
    KnownMessage(
        "undefined-symbol", "undefined symbol in a compiled extension", "error",
        (r"undefined symbol: _Z\w+",),
        "A compiled extension (torchvision, torchaudio, or one built from source) was built "
        "against another torch than the one installed, so a C++ symbol it needs is missing "
        "(pytorch issue 23585: a torchvision built for torch 1.1 under torch 1.2).",
        "Reinstall torch and its companion packages together from one wheel index at paired "
        "versions, and rebuild extensions compiled from source against the installed torch.",
        "torchvision-match", TORCH_23585, commands=("pip list | grep -i torch",),
        context="torchvision"),
    KnownMessage(
        "nccl-error", "RCCL/NCCL error", "error",
        (r"\bNCCL error\b", r"\bnccl(UnhandledCuda|System|Internal|InvalidUsage|"
                            r"InvalidArgument|Remote)Error\b", r"\bRCCL\b.*\berror\b",
         r"NCCL WARN"),
        "A collective (all-reduce, broadcast) failed in RCCL, AMD's NCCL: ncclSystemError and "
        "ncclUnhandledCudaError mean a call into the OS or the GPU runtime failed (GPU peer "
        "access, too little shared memory in a container), ncclInvalidUsage a bug in how the "
        "program calls it.",
        "Rerun with RCCL's log on to see the failing step; in containers start with "
        "--ipc=host or a large --shm-size; check that every rank sees its own GPU.",
        "visible-devices", NCCL_TROUBLESHOOTING,
        commands=("export NCCL_DEBUG=INFO", "df -h /dev/shm")),
    KnownMessage(
        "not-a-module-backends", "torch.backends.roc / torch.backends.rocm", "not-a-setting",
        (r"torch\.backends\.rocm?\b", r"torch\.backends' has no attribute 'rocm?'"),
        "No PyTorch release has torch.backends.roc or torch.backends.rocm (torch/backends has "
        "cuda, cudnn, miopen, mha, mps, ... and no roc); settings such as "
        "torch.backends.roc.enable_optimizations or torch.backends.rocm.enable_math_ops do "
        "nothing but raise.",
        "Delete those lines. On ROCm the real switches keep their CUDA names: "
        "torch.backends.cudnn.* (MIOpen), torch.backends.cuda.*.",
        "torch-install", TORCH_BACKENDS),
    KnownMessage(
        "not-a-module-dataloader", "torch.utils.roc.ROCmDataLoader", "not-a-setting",
        (r"torch\.utils\.roc\b", r"ROCmDataLoader"),
        "torch.utils.roc and ROCmDataLoader do not exist; PyTorch has one DataLoader for "
        "every device.",
        "Use torch.utils.data.DataLoader (with num_workers and pin_memory=True).",
        "torch-install", TORCH_UTILS_DATA),
    KnownMessage(
        "not-a-setting-hcc", "HCC_OPT_LEVEL", "not-a-setting",
        (r"\bHCC_OPT_LEVEL\b",),
        "Nothing in ROCm or PyTorch reads HCC_OPT_LEVEL: HCC, ROCm's old compiler, was "
        "replaced by HIP-Clang and its last references were removed for ROCm 6.0.",
        "Remove it; it changes nothing.", None, TORCH_HCC_REMOVED,
        commands=("unset HCC_OPT_LEVEL",), variable="HCC_OPT_LEVEL"),
    KnownMessage(
        "not-a-setting-oversubscribe", "HSA_OVERSUBSCRIBE", "not-a-setting",
        (r"\bHSA_OVERSUBSCRIBE\b",),
        "HSA_OVERSUBSCRIBE is not a ROCm setting: the HSA runtime reads its HSA_* variables "
        "from one list (flag.h), and this one is not in it.",
        "Remove it; it changes nothing.", None, ROCR_FLAGS,
        commands=("unset HSA_OVERSUBSCRIBE",), variable="HSA_OVERSUBSCRIBE"),
    # Debugging variables that slow training when left on (rocmdoctor.kb.debug_vars).
    *(KnownMessage(
        f"left-on-{var.name.lower().replace('_', '-')}", var.name, "harmful",
        # a level below the harmful one (MIOPEN_LOG_LEVEL=4) is fine
        (rf"\b{var.name}\b" if var.min_level <= 1 else
         rf"\b{var.name}\W{{1,3}}([{var.min_level}-9]|[1-9][0-9])",),
        f"{var.name} {var.cost}: a debugging setting that slows every run it is left on in.",
        f"Unset {var.name} for training and benchmarks; set it for one debugging run only.",
        "debug-env", var.source, commands=(f"unset {var.name}",),
        # torch's own HIP error text suggests AMD_SERIALIZE_KERNEL=3 for debugging
        unless=(r"consider passing",), context="variable", variable=var.name)
      for var in DEBUG_VARS),
)
