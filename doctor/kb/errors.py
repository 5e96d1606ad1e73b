"""Messages `rocmdoctor explain` recognises, one table built from the families below: errors,
kernel-log lines, settings copied from blog posts that do not exist, and debugging settings
left on. Each entry: the patterns that identify it, its cause, the fix (with the container and
WSL variants where they differ), the check that confirms it, and the source behind it.

`rocmdoctor.explain` reads this table; `context` names the function there that makes the
answer specific to a machine (or to the numbers in the message itself), `requires` the
conditions on the text or the machine under which an entry applies. In `yields_to`, "*" means
"any other entry found in the same text" (a generic or harmless message stands back).

Families: kb/errors_runtime.py (HIP/CUDA runtime), kb/errors_torch.py (builds, drivers,
devices, containers, extensions), kb/errors_hsa.py (HSA, KFD, masks, overrides),
kb/errors_libs.py (MIOpen, rocBLAS, hipBLASLt), kb/errors_stack.py (libraries on top of
ROCm, system libraries under it), kb/errors_cuda.py (GPUs too old for a build, CUDA 804/802),
kb/errors_nccl.py (collectives),
kb/errors_apps.py (Ollama, llama.cpp), kb/errors_myths.py (blog myths, extensions),
kb/errors_kernel.py (driver lines outside the kernel log) and kb/kernel_log.py, the one
catalogue of kernel-log lines (the kernel-log check's).
"""

from __future__ import annotations

from rocmdoctor.kb import nvidia_xid
from rocmdoctor.kb.errors_apps import APP_MESSAGES
from rocmdoctor.kb.errors_cuda import CUDA_BUILD_MESSAGES
from rocmdoctor.kb.errors_hsa import HSA_MESSAGES
from rocmdoctor.kb.errors_kernel import KERNEL_FALLBACK, XID_MEANINGS
from rocmdoctor.kb.errors_libs import LIBRARY_MESSAGES
from rocmdoctor.kb.errors_myths import MYTH_MESSAGES
from rocmdoctor.kb.errors_nccl import NCCL_MESSAGES
from rocmdoctor.kb.errors_runtime import RUNTIME_MESSAGES
from rocmdoctor.kb.errors_stack import STACK_MESSAGES
from rocmdoctor.kb.errors_torch import TORCH_MESSAGES
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.kb.messages import KnownMessage

__all__ = ["GENERIC_KEYS", "GPU_ERROR_SHAPES", "KERNEL_FALLBACK_KEYS", "KNOWN_MESSAGES",
           "KnownMessage", "LINUX_ONLY_CHECKS", "XID_MEANINGS"]

# The kernel-log catalogue wins where it has the same key.
_KERNEL_KEYS = {m.key for m in KERNEL_MESSAGES}
_FALLBACK = tuple(m for m in KERNEL_FALLBACK if m.key not in _KERNEL_KEYS)
KERNEL_FALLBACK_KEYS = frozenset(m.key for m in _FALLBACK)

KNOWN_MESSAGES: tuple[KnownMessage, ...] = (
    *KERNEL_MESSAGES,
    *_FALLBACK,
    *RUNTIME_MESSAGES,
    *TORCH_MESSAGES,
    *HSA_MESSAGES,
    *LIBRARY_MESSAGES,
    *STACK_MESSAGES,
    *CUDA_BUILD_MESSAGES,
    *NCCL_MESSAGES,
    *APP_MESSAGES,
    *MYTH_MESSAGES,
)

# What a GPU-stack error line looks like, for text no entry recognises: the shapes of HIP's
# and CUDA's error strings (hip_error.cpp, the CUDA runtime's cudaError names), the HSA
# status names, the library prefixes (MIOpen, rocBLAS, hipBLASLt, cuDNN, cuBLAS, NCCL) and the
# kernel drivers' prefixes. A bare "cuda:0" (a device name in a program's own error) is not one.
GPU_ERROR_SHAPES: tuple[str, ...] = (
    r"\b(?:CUDA|HIP) error\b", r"\bcuda runtime error\b", r"\bhipError[A-Z]\w*",
    r"\bcudaError[A-Z]\w*", r"\bCUDA_ERROR_[A-Z_]+", r"\bHSA_STATUS_ERROR\w*",
    r"\bhsa_\w+ failed", r"MIOpen(?:\(HIP\))?:? Error|miopenStatus\w+",
    r"rocBLAS error|rocblaslt error|hipBLASLt error|\b(?:HIP|CU)BLAS_STATUS_\w+",
    r"\bCUDNN_STATUS_\w+", r"\bNCCL (?:error|WARN)\b|\bnccl[A-Z]\w*Error\b",
    r"\bNVRM: ", r"\bamdgpu\b[^\n]*(?:\*ERROR\*|failed|error)", r"\bkfd\b[^\n]*(?:fail|error)",
    r"/dev/kfd", r"\bROCk module\b", r"\bNVIDIA driver\b", r"\bNVML\b",
    r"\b(?:CUDA|HIP|GPU) out of memory", r"\bROCm\b[^\n]*(?:error|fail)",
    r"\bAcceleratorError\b", r"\b(?:HIP|NV)RTC_ERROR_[A-Z_]+",
    # nccl-tests' NCCLCHECK ("NCCL failure all_reduce.cu:95 'unhandled cuda error'") and
    # rocm_smi.py's check of a library call ("ROCm SMI returned 8 (the expected value is 0)")
    r"\bNCCL failure \S+:\d+ '", r"\bROCm SMI returned \d+",
    # JAX's backend initialisation ("Unable to initialize backend 'rocm': NOT_FOUND", its
    # xla_bridge), hipcc's own Perl failing ("... at /usr/lib/hip/bin/hipcc line 192"), an
    # SELinux denial on a GPU's device node, and torch.compile's backend failing
    r"\bUnable to initialize backend '\w+'", r"\bat \S*/hipcc(?:\.pl)? line \d+",
    # XLA finding no GPU kernel for a custom call ("No FFI handler registered for
    # hipsolver_getrf_ffi on a platform ROCM"), and JAX's GPU plugin missing its extension
    r"\bNo FFI handler registered for \w+ on a platform (?i:rocm|cuda)\b",
    r"\b(?:rocm|cuda)_plugin_extension is not found\b",
    # Windows refusing a GPU library's folder ("[WinError 3] ... ctranslate2/../_rocm_sdk_core/
    # bin": a wheel adding ROCm's DLL folder on a machine without it)
    r"\[WinError \d+\][^\n]*(?i:rocm|\bhip|cuda|nvidia)",
    r"\bavc:\s+denied [^\n]*path=\"/dev/(?:dri|kfd|nvidia)",
    r"torch\._dynamo\.exc\.BackendCompilerFailed\b",
    # a GPU runtime's DLL Windows could not load ("Failed to load amdhip64.dll: ... (0x7E)",
    # torch's preloading on Windows), TensorFlow's CUDA initialisation, the toolkit's CLI
    r"\b(?:amdhip64|hiprtc\w*|hipblas\w*|rocblas|MIOpen|cudart64\w*|cublas\w*|nvcuda|"
    r"cudnn\w*|nvrtc\w*)\.dll\b[^\n]*(?:could not be found|Can't open|cannot be loaded|0x7E)",
    r"\bCUDA runtime implicit initialization on GPU:\d+ failed\b",
    r"\bnvidia-container-cli: [\w ]*error\b",
    # ROCr's report of a queue's hardware exception ("HW Exception by GPU node-1 (Agent
    # handle: ...) reason :GPU Hang", ROCR-Runtime core/runtime/runtime.cpp)
    r"\bHW Exception by GPU node-\d+",
    # a GPU library of torch's that Windows could not load ("Error loading
    # "...\torch\lib\caffe2_nvrtc.dll" or one of its dependencies", torch/__init__.py)
    r"Error loading \"[^\"\n]*[/\\]torch[/\\]lib[/\\](?i:caffe2_nvrtc|c10_cuda|torch_cuda|"
    r"c10_hip|torch_hip|cudnn|cublas|cudart|nvrtc|amdhip64|hiprtc)[^\"\n]*\.dll\"",
    # the HIP runtime's own log at its error level (":1:", amd::LOG_ERROR in ROCm clr's
    # rocclr/utils/debug.hpp): ":1:hip_memory.cpp:3354: IPC memory creation failed"
    r"^:1:\w+\.(?:cpp|hpp)\s*:\s*\d+\s*:",
    # A GPU target or a GPU library named with a refusal: the library's own words.
    r"\bgfx[0-9a-f]{3,4}\b[^\n]*\b(?:not supported|unsupported|invalid)\b",
    r"(?i:flash[-_ ]?attn|flash[-_ ]?attention|xformers|bitsandbytes|triton)[^\n]*"
    r"(?i:error|failed|not supported|only supports|can't|cannot)",
    r"\bonly supports [^\n]*\bGPUs?\b", r"can't load C\+\+/CUDA extensions",
    r"\blib\w*(?:cuda|hip|rocm|nccl|rccl|cudnn|cublas|amdhip)\w*\.so[.\d]*: cannot open",
    # torch's own GPU warnings (torch/cuda/__init__.py), a framework refusing a GPU for its
    # capability (TensorFlow's "Ignoring visible gpu device ... minimum required Cuda
    # capability"), and a compile error in the source of a ROCm or CUDA library.
    r"torch[/\\]cuda[/\\]__init__\.py:\d+: UserWarning",
    r"\bIgnoring visible gpu device\b|\bminimum required Cuda capability\b",
    r"(?i:rocm|hip|miopen|rocblas|hipblas|rccl|amd_smi|rocm_smi|cuda)\w*[/\\][^\n]*\.(?:h|hpp|c|cc|cpp|cu)"
    r":\d+:\d+: (?:fatal )?error:",
    # Installing or running the stack itself: a package manager refusing a ROCm, CUDA or
    # NVIDIA package (apt's "pkg : Depends: dep (= v) but w is to be installed"), and one of
    # the stack's own programs not found where a script or hipcc looked for it.
    r"^\s*(?:rocm|hip|hsa|amdgpu|miopen|rocblas|rccl|rocminfo|cuda|libcudnn|nvidia|libnvidia)"
    r"[\w.+-]* : (?:Depends|Pre-Depends|Conflicts|Breaks): ",
    r"\b(?:hipcc|hipconfig|rocm_agent_enumerator|rocminfo|rocm-smi|amd-smi|nvcc|nvidia-smi)"
    r"(?:: not found|: command not found|: No such file or directory)",
    # CMake failing in a project's module that finds ROCm, HIP or CUDA (FindROCM.cmake)
    r"CMake Error at [^\n]*(?i:rocm|hip|cuda|miopen|rocblas)[^\n]*\.cmake\b",
)

# Entries whose cause is a family of causes (a kernel bug, a collective that failed, an
# argument a call rejected): the answer names the family, so it is only `possible` unless a
# fact in the text decides which member it is.
GENERIC_KEYS = frozenset({
    "nccl-error", "miopen-error", "hip-invalid-argument", "hip-launch-failure",
    "cuda-launch-failure", "hsa-exception", "memory-access-fault", "cuda-illegal-address",
    "hip-illegal-address", "nvidia-init-failed", "smi-driver-check",
    # a GPU job that hung (driver, firmware, clocks, an unsupported GPU), and rocminfo's own
    # check of the driver (missed under WSL and for an amdgpu built into the kernel)
    "amdgpu-ring-timeout", "rock-not-loaded",
    # hipBLASLt finding no kernel: an unsupported shape or type, a GPU without its kernels, a
    # library regression
    "hipblaslt-no-solution",
    # the Xids NVIDIA's catalog gives a program, a driver and a GPU cause alike
    *(f"nvidia-xid-{x.code}" for x in nvidia_xid.XIDS if x.fix == nvidia_xid.APP_FIX),
})

# Checks of things only a Linux machine has (/dev/kfd, the amdgpu module, the kernel log,
# PCIe link state as Linux reports it): an entry confirmed by one of them, in a log written on
# Windows, is a Linux message that cannot be this machine's cause as it stands.
LINUX_ONLY_CHECKS = frozenset({
    "kfd-access", "amdgpu-driver", "amdgpu-firmware", "kernel-version", "kernel-log",
    "gpu-agents", "pcie-atomics", "pcie-link", "rocm-permissions", "gfx-override",
})
