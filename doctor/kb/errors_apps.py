"""Messages of the runtimes people run on top of ROCm and CUDA (Ollama, llama.cpp and the
ggml family), and the no-device errors they print. `threads` as in
rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import DOCKER_ROCM, KFD_NODES, ROCM_AGENTS
from rocmdoctor.kb.messages import KnownMessage, Variant

OLLAMA_GPU = "https://github.com/ollama/ollama/blob/main/docs/gpu.md#overrides"
OLLAMA_LINUX = "https://github.com/ollama/ollama/blob/main/docs/linux.md"
LLAMACPP_ROCM_83 = "https://github.com/lemonade-sdk/llamacpp-rocm/issues/83"
OLLAMA_6685 = "https://github.com/ollama/ollama/issues/6685"

APP_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "ollama-amdgpu-not-supported", "ollama: amdgpu is not supported (supported types)",
        "error",
        (r"amdgpu is not supported \(supported types:\[",
         # the same check's older wording (ollama 0.1.32's amd_linux.go, in ollama issue 4099):
         # "amdgpu [0] gfx1103 is not supported by /tmp/ollama.../rocm [gfx1030 gfx1100 ...]"
         r"amdgpu \[\d+\] gfx[0-9a-f]+ is not supported by \S+ \[gfx",
         # the warning ollama writes right after that line and nowhere else (every release's
         # amd_linux.go and amd_windows.go), left when a log is cut before it
         r"msg=\"?See \S+ for HSA_OVERRIDE_GFX_VERSION usage"),
        "Ollama's bundled ROCm libraries have no build for this GPU's gfx target, so it runs "
        "on the CPU. An empty list ('supported types:[]') means it found no ROCm libraries "
        "it can match at all (Windows community builds without their rocblas.dll and "
        "library folder).",
        "Give the ollama service an HSA_OVERRIDE_GFX_VERSION of a supported target of the "
        "same family (a number such as 10.3.0, set where the service reads it), then "
        "restart it.", "gfx-override", OLLAMA_GPU,
        commands=("sudo systemctl edit ollama.service",
                  "sudo systemctl daemon-reload && sudo systemctl restart ollama"),
        needs_root=True, context="ollama_gfx",
        container_fix="Pass the override when the container starts: "
                      "-e HSA_OVERRIDE_GFX_VERSION=<x.y.z> (ollama/ollama:rocm image).",
        variants=(Variant(
            "windows", "On Windows the override does nothing (ROCm's Linux runtime reads it): "
            "use an ollama release whose bundled ROCm libraries list the GPU's target, or a "
            "community build for it whose rocblas.dll and rocblas\\library folder are built for "
            "that target (ollama-for-amd issue 14, maintainer).",
            ("ollama --version",), "The log was written on Windows."),),
        threads=12),
    KnownMessage(
        "ollama-no-compatible-gpu", "ollama: no compatible GPUs were discovered", "error",
        (r"no compatible amdgpu devices detected", r"no compatible GPUs were discovered"),
        "Ollama found no GPU it can use and falls back to the CPU: no GPU visible to the "
        "service, or one its libraries do not support (the log line before this says which).",
        "Check that the service's user can open /dev/kfd and which GPUs rocminfo lists; "
        "read the WARN lines above for the GPU it skipped.", "kfd-access", OLLAMA_LINUX,
        commands=(KFD_NODES, ROCM_AGENTS, "journalctl -u ollama --no-pager | grep -i amdgpu"),
        variants=(Variant(
            "windows", "Read the WARN lines above it for the GPU ollama skipped and why; on "
            "Windows ollama uses the AMD driver's HIP runtime (no /dev/kfd): update the AMD "
            "driver and ollama.", ("ollama --version",), "The log was written on Windows."),),
        yields_to=("ollama-amdgpu-not-supported", "gfx-override-format")),
    KnownMessage(
        "ollama-amdgpu-version-missing", "ollama: amdgpu version file missing", "harmless",
        (r"amdgpu version file missing: /sys/module/amdgpu/version",),
        "The kernel's own amdgpu driver has no /sys/module/amdgpu/version (only AMD's "
        "amdgpu-dkms adds it); Ollama only warns. It is not why a GPU goes unused: that is "
        "a 'not supported' line or missing device access.",
        "Nothing to fix for this line; installing AMD's driver does not add GPU targets.",
        None, OLLAMA_GPU, yields_to=("*",), threads=2),
    KnownMessage(
        "hip-no-device", "no ROCm-capable device is detected", "error",
        (r"no ROCm-capable device is detected", r"hipErrorNoDevice"),
        "HIP enumerated no GPU although the system may show one: visibility masks hiding it, "
        "no access to /dev/kfd, a runtime that does not know a new GPU, or on Windows a "
        "bundled amdhip64 DLL newer than the installed driver (llamacpp-rocm issue 83, "
        "maintainer: update the Adrenalin driver).",
        "Run rocminfo in the same environment (as the same user); fix the masks or access it "
        "shows; on Windows update the AMD driver and reboot.", "gpu-agents", LLAMACPP_ROCM_83,
        commands=(ROCM_AGENTS, KFD_NODES, "env | grep VISIBLE_DEVICES"),
        container_fix="Pass /dev/kfd and /dev/dri with the owning groups when the container "
                      "starts.", container_commands=(DOCKER_ROCM,),
        # /dev/kfd refused in the same text is why HIP saw no device
        yields_to=("visible-devices-both-set", "visible-devices-mask", "rocm-on-nvidia",
                   "wsl-rocm-bundled-hsa", "kfd-permission", "kfd-root-only",
                   "container-kfd-groups"), threads=7),
    KnownMessage(
        "cuda-no-device", "no CUDA-capable device is detected", "error",
        (r"no CUDA-capable device is detected", r"cudaErrorNoDevice"),
        "The CUDA driver found no GPU: no NVIDIA GPU in the machine, CUDA_VISIBLE_DEVICES "
        "hiding it, or a container started without GPUs.",
        "Check nvidia-smi -L and the mask; start containers with --gpus all.",
        "nvidia-driver", "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
        commands=("nvidia-smi -L", "echo $CUDA_VISIBLE_DEVICES"),
        # NVIDIA's CUDA on WSL guide: the Windows driver is stubbed inside WSL 2 as libcuda.so
        # (/usr/lib/wsl/lib), so no NVIDIA Linux driver may be installed within WSL 2.
        wsl_fix="Under WSL the Windows NVIDIA driver provides CUDA (/usr/lib/wsl/lib/libcuda.so); "
                "a Linux NVIDIA driver installed inside WSL shadows it and finds no GPU: remove "
                "that driver's packages (NVIDIA's CUDA on WSL guide: install no Linux driver in "
                "WSL 2), or put /usr/lib/wsl/lib first on LD_LIBRARY_PATH.",
        wsl_commands=("ldconfig -p | grep libcuda.so",
                      "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"),
        unless_text=(r"ROCm",), yields_to=("visible-devices-mask",)),
    KnownMessage(
        "rocblas-no-devices", "rocBLAS: Could not initialize Tensile host: No devices found",
        "error",
        (r"Could not initialize Tensile host: No devices found",),
        "rocBLAS started without any GPU to run on: the process sees no AMD GPU (device "
        "access, masks, or an HSA_OVERRIDE_GFX_VERSION value the runtime rejects; in ollama "
        "issue 6685, unresolved, it failed from compose with a value that worked with "
        "`docker run -e`).",
        "Make rocminfo list the GPU in the same environment; check the override's exact "
        "value.", "gpu-agents", OLLAMA_6685,
        commands=(ROCM_AGENTS, "env | grep HSA_OVERRIDE"), threads=2),
)
