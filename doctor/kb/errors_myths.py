"""Settings copied from blog posts that do not exist, debugging settings left on, device
names PyTorch does not have, and compiled extensions built for another torch (or another C++
runtime). `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.debug_vars import DEBUG_VARS
from rocmdoctor.kb.errors_base import TORCH_HIP_NOTES
from rocmdoctor.kb.messages import KnownMessage

VISION_README = "https://github.com/pytorch/vision#installation"
TORCH_23585 = "https://github.com/pytorch/pytorch/issues/23585"
TORCH_8318 = "https://github.com/pytorch/pytorch/issues/8318"
TORCH_BACKENDS = "https://github.com/pytorch/pytorch/tree/main/torch/backends"
TORCH_UTILS_DATA = "https://github.com/pytorch/pytorch/tree/main/torch/utils/data"
TORCH_HCC_REMOVED = "https://github.com/pytorch/pytorch/pull/111975"
ROCR_FLAGS = ("https://github.com/ROCm/rocm-systems/blob/develop/projects/rocr-runtime/"
              "runtime/hsa-runtime/core/util/flag.h")

MYTH_MESSAGES: tuple[KnownMessage, ...] = (
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
        (r"operator torchvision::nms does not exist", r"No such operator torchvision::nms"),
        "torchvision's compiled operators were built for another torch than the one "
        "installed (another version, or another build: PyPI's torchvision beside a +rocm or "
        "+cpu torch).",
        "Install the torchvision release paired with your torch, from the same wheel index "
        "as torch.",
        "torchvision-match", VISION_README, commands=("pip list | grep -i torch",),
        context="torchvision", threads=22),
    KnownMessage(
        "undefined-symbol", "undefined symbol in a compiled extension", "error",
        (r"undefined\s+symbol: _Z\w+", r"undefined\s+symbol: (?:hip|cuda|cu|nccl|rccl)[A-Z]\w*",
         # the same line wrapped after "undefined" by a terminal or an issue's editor
         r"^\s*symbol: _Z\w+\s*$"),
        "A compiled extension (torchvision, torchaudio, or one built from source) was built "
        "against another torch than the one installed, so a C++ symbol it needs is missing "
        "(pytorch issue 23585: a torchvision built for torch 1.1 under torch 1.2).",
        "Reinstall torch and its companion packages together from one wheel index at paired "
        "versions, and rebuild extensions compiled from source against the installed torch.",
        "torchvision-match", TORCH_23585, commands=("pip list | grep -i torch",),
        context="torchvision", yields_to=("bitsandbytes-rocm-library-broken",), threads=6),
    KnownMessage(
        "glibcxx-not-found", "libstdc++.so.6: version `GLIBCXX_3.4.x' not found", "error",
        (r"libstdc\+\+\.so\.6: version .?(?:GLIBCXX|CXXABI)_[\d.]+.? not found",),
        "The process loaded an older libstdc++ than torch or an extension was built with: the "
        "system's copy was found first (an old distribution, a conda environment whose "
        "libstdc++.so.6 link is missing, LD_LIBRARY_PATH pointing elsewhere). The path in "
        "the message is the library that was loaded; 'required by' names who needs more.",
        "Put the environment's newer libstdc++ first on the loader path (in conda: install "
        "libstdcxx-ng), or use a newer OS or image; pytorch issue 8318's reporter fixed it "
        "with the conda env's lib folder first on LD_LIBRARY_PATH.",
        "torch-install", TORCH_8318,
        commands=("strings \"$(gcc -print-file-name=libstdc++.so.6)\" | grep GLIBCXX_3.4 | tail -2",
                  "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH",
                  "conda install -c conda-forge libstdcxx-ng"), threads=12),
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
