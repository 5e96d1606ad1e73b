"""GPUs too old (or newer than) the torch build, in every wording torch has printed, ROCm's
placeholder capability, and CUDA runtime errors with one fix (804 forward compatibility, 802
fabric manager). `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.cuda_arch import TORCH_CUDA_CODE
from rocmdoctor.kb.errors_base import ARCH_LIST, NVIDIA_SMI
from rocmdoctor.kb.messages import KnownMessage

ROCM_1113 = "https://github.com/ROCm/legacy-rocm-build/issues/1113"
SPARK_VLLM_15 = "https://github.com/eugr/spark-vllm-docker/issues/15"
CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/index.html"
FABRIC_MANAGER = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
PYTORCH_87595 = "https://github.com/pytorch/pytorch/issues/87595"
CAPABILITY = "nvidia-smi --query-gpu=name,compute_cap --format=csv"

# The wordings of torch/cuda/__init__.py's capability check, oldest first: "PyTorch no
# longer supports this GPU because it is too old" (0.3 to 1.x), "Minimum and Maximum cuda
# capability supported by this version of PyTorch is (x) - (y)" (2.x), "which is of compute
# capability (CC) x.y. The following list shows the CCs ..." (2.8 on).
_TOO_OLD = r"PyTorch no longer supports this GPU because it is too old"
_RANGE = r"Minimum and Maximum cuda capability supported by this version of PyTorch is"
_CC_LIST = r"which is of compute capability \(CC\) \d+\.\d\.\s*The following list shows the CCs"

CUDA_BUILD_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "cuda-gpu-too-old", "GPU older than this torch build supports", "error",
        (_TOO_OLD, _RANGE, _CC_LIST),
        "The torch build carries no code for this GPU's compute capability: the GPU is "
        "older than the oldest capability the wheels are built for, so its kernels fail "
        "('no kernel image is available for execution on the device').",
        "Install a torch whose wheels carry code for this capability (the notes say which), "
        "build torch from source for it (TORCH_CUDA_ARCH_LIST), or run on the CPU.",
        "torch-arch-support", TORCH_CUDA_CODE, commands=(ARCH_LIST, CAPABILITY),
        requires=("not_amd_paste", "not_capability_above_build"), context="old_gpu",
        threads=7),
    KnownMessage(
        "rocm-capability-placeholder", "ROCm: 'cuda capability 3.0' warning (a placeholder)",
        "harmless", (_TOO_OLD, _RANGE),
        "On ROCm, older torch releases compared the capability HIP reports for an AMD GPU "
        "('cuda capability 3.0', a placeholder, not a CUDA capability) with CUDA's minimum "
        "and warned. It says nothing about the GPU; torch now skips this check on ROCm "
        "('on ROCm we don't want this check').",
        "Nothing to fix: ignore this warning; if something fails, the error after it is the "
        "one to explain.", None, ROCM_1113, requires=("amd_paste",), yields_to=("*",),
        threads=2),
    KnownMessage(
        "cuda-capability-above-build", "GPU newer than the newest capability of this build",
        "harmless", (_RANGE,),
        "Older torch warned whenever a GPU's capability was above the newest one it was "
        "built for. NVIDIA GPUs run code built for an older minor version of the same major "
        "(sm_120 code runs on capability 12.1, DEVICE_REQUIREMENT in torch/cuda), so the "
        "warning is spurious when the major versions match (spark-vllm-docker issue 15: "
        "'you can safely ignore it').",
        "Nothing to fix: ignore the warning when the GPU's major version matches the build's "
        "newest; a newer major version needs a torch built for it.", "torch-arch-support",
        SPARK_VLLM_15,
        commands=(ARCH_LIST,), requires=("capability_above_build",), context="old_gpu",
        yields_to=("*",), threads=1),
    KnownMessage(
        "nvrtc-arch-unknown", "nvrtc: invalid value for --gpu-architecture", "error",
        (r"nvrtc: error: invalid value for --gpu-architecture",),
        "torch compiles some kernels at run time with NVRTC (the TorchScript fuser, the "
        "jiterator), from the CUDA it was built with, and asked it for this GPU's "
        "architecture, which that CUDA does not know: an RTX 40 card (sm_89, 'explicitly "
        "supported only by cuda 11.8', PyTorch maintainers in pytorch issue 87595) under a "
        "CUDA 11.7 or older build, an RTX 30 card (sm_86) under CUDA 11.0 (pytorch issue "
        "47658).",
        "Install a torch built for a CUDA that knows the GPU (for RTX 40 and H100, a cu118 "
        "or newer build, which also carries the fix of pytorch issue 87595), with its "
        "torchvision from the same index.", "torch-arch-support", PYTORCH_87595,
        commands=('python -c "import torch; print(torch.__version__, torch.version.cuda)"',
                  CAPABILITY, NVIDIA_SMI),
        context="cuda_wheel", threads=20),
    KnownMessage(
        "cuda-forward-compat-unsupported", "CUDA 804: forward compatibility on a GPU without it",
        "error",
        (r"forward compatibility was attempted on non supported HW",
         r"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", r"\bError 804\b",
         r"cudaErrorCompatNotSupportedOnDevice"),
        "The CUDA libraries in use (an image's, a wheel's) are newer than the NVIDIA driver "
        "supports, so CUDA tried forward compatibility, which works only on data-center GPUs "
        "with the cuda-compat package; on a GeForce or workstation card the driver itself "
        "must support that CUDA version.",
        "Update the NVIDIA driver to one that supports the CUDA version of the image or "
        "wheel (nvidia-smi shows the newest CUDA the driver supports), or use an image or "
        "torch built for an older CUDA.", "nvidia-driver", CUDA_COMPAT,
        commands=(NVIDIA_SMI,),
        container_fix="The container uses the host's driver: update the host's NVIDIA driver, "
                      "or use an image built for the CUDA version the host driver supports.",
        container_commands=(NVIDIA_SMI,), context="forward_compat", threads=9),
    KnownMessage(
        "cuda-fabric-manager", "CUDA 802: system not yet initialized (Fabric Manager)", "error",
        (r"Error 802: system not yet initialized", r"cudaErrorSystemNotReady",
         r"CUDA_ERROR_SYSTEM_NOT_READY"),
        "On NVSwitch systems (HGX, DGX) CUDA waits for NVIDIA's Fabric Manager service, of "
        "the same version as the driver, to set up the switches; it is not installed or not "
        "running.",
        "Install the nvidia-fabricmanager package of the driver's version, then enable and "
        "start the service.", "nvidia-driver", FABRIC_MANAGER,
        commands=("systemctl status nvidia-fabricmanager",
                  "sudo systemctl enable --now nvidia-fabricmanager"),
        needs_root=True, threads=1),
    # bf16 products on GPUs whose cuBLAS has none: a P100 (sm_60) in torch's own tests
    # (pytorch issue 57773), a Tesla M40 (sm_52) in MinerU issue 1508 (fixed by not using
    # bf16), while the same tests pass on a T4 (sm_75, torch's CI).
    KnownMessage(
        "cublas-bf16-unsupported", "CUBLAS_STATUS_NOT_SUPPORTED for a bf16 matrix product",
        "error",
        (r"CUBLAS_STATUS_NOT_SUPPORTED when calling `?cublas\w*\([^`]{0,200}?CUDA_R_16BF",),
        "cuBLAS has no bf16 (CUDA_R_16BF) matrix product for this GPU: Maxwell and Pascal "
        "cards (a Tesla M40, a P100) fail this way, while Turing (T4) and newer run it.",
        "Run the model in fp16 or fp32 instead of bf16 (the program's dtype or precision "
        "option; torch_dtype=torch.float16 for transformers).", "torch-device",
        "https://github.com/pytorch/pytorch/issues/57773", commands=(CAPABILITY,),
        requires=("not_amd_paste",), context="bf16_gemm", threads=2),
)
