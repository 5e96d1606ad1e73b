"""The run-time environment of a benchmark: settings applied, device facts, knob variables.

Runs in the benchmark worker (functions take the imported torch module as an argument, so
importing this module does not import torch).
"""

from __future__ import annotations

import os
import platform
from typing import Any, Callable, Optional

from rocmdoctor.facts.amdgpu_module import dkms_version
from rocmdoctor.facts.cpu import cpu_info
from rocmdoctor.facts.nvidia_gpus import proc_driver_version
from rocmdoctor.host.live import LiveHost
from rocmdoctor.redact import looks_secret
from rocmdoctor.tuners.bench.spec import BenchSpec

# Environment variables recorded with every result: the GPU runtime's knobs.
KNOB_PREFIXES = (
    "PYTORCH_", "MIOPEN_", "HIP_", "HSA_", "ROCR_", "ROCBLAS_", "HIPBLASLT_", "TORCH_",
    "TORCHINDUCTOR_", "TRITON_", "CUDA_", "CUBLAS", "CUDNN_", "NVIDIA_TF32", "NCCL_", "AMD_",
    "OMP_", "MKL_", "KMP_", "GPU_MAX_HW_QUEUES",
)


def apply_settings(torch: Any, spec: BenchSpec) -> tuple[dict[str, Any], dict[str, str]]:
    """Apply precision-implied TF32 and then spec.settings; return applied and unsupported."""
    applied: dict[str, Any] = {}
    unsupported: dict[str, str] = {}
    # fp32 keeps PyTorch's defaults, which is what a user's script gets (matmul TF32 off,
    # cuDNN convolutions allowed TF32: docs.pytorch.org/docs/stable/notes/cuda.html
    # "TensorFloat-32 (TF32) on Ampere (and later) devices").
    if spec.precision in ("fp32-strict", "tf32"):
        tf32 = spec.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    for key, value in spec.settings.items():
        if key == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = value
            torch.backends.cudnn.allow_tf32 = value
        elif key == "cudnn_benchmark":
            torch.backends.cudnn.benchmark = value
        elif key == "cudnn_enabled":
            torch.backends.cudnn.enabled = value
        elif key == "deterministic":
            torch.backends.cudnn.deterministic = value
        elif key == "miopen_immediate":
            if not hasattr(getattr(torch.backends, "miopen", None), "immediate"):
                unsupported[key] = f"torch {torch.__version__} has no backends.miopen.immediate"
                continue
            torch.backends.miopen.immediate = value
        elif key == "matmul_precision":
            torch.set_float32_matmul_precision(value)
        elif key == "preferred_blas":
            try:
                torch.backends.cuda.preferred_blas_library(value)
            except (RuntimeError, AttributeError) as exc:
                unsupported[key] = str(exc).strip().splitlines()[0][:200]
                continue
        elif key == "num_threads":
            torch.set_num_threads(value)
        elif key == "rocm_fa_library":
            chooser = getattr(torch.backends.cuda, "preferred_rocm_fa_library", None)
            if chooser is None or not torch.version.hip:
                unsupported[key] = (f"torch {torch.__version__} has no "
                                    "backends.cuda.preferred_rocm_fa_library on this build")
                continue
            try:
                chooser(value)
            except (RuntimeError, ValueError) as exc:
                unsupported[key] = str(exc).strip().splitlines()[0][:200]
                continue
        # compile_mode and seed are read where they are used
        applied[key] = value
    return applied, unsupported


def effective_flags(torch: Any) -> dict[str, Any]:
    miopen = getattr(torch.backends, "miopen", None)
    return {
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.enabled": torch.backends.cudnn.enabled,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "miopen.immediate": getattr(miopen, "immediate", None) if miopen else None,
        "num_threads": torch.get_num_threads(),
    }


def knob_env() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(KNOB_PREFIXES) and not looks_secret(k, v)}


def device_info(torch: Any, device: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "device": device.type, "torch": torch.__version__, "hip": torch.version.hip,
        "cuda": torch.version.cuda, "python": platform.python_version(),
        "cpu": _cpu_name(), "cpu_count": os.cpu_count(), "vendor": "cpu", "name": _cpu_name(),
        "arch": None, "total_memory_bytes": None, "driver": None, "dnn_library": None,
    }
    try:
        import torchvision

        info["torchvision"] = torchvision.__version__
    except Exception:  # noqa: BLE001
        info["torchvision"] = None
    if device.type != "cuda":
        return info
    props = torch.cuda.get_device_properties(device)
    rocm = bool(torch.version.hip)
    info.update(
        vendor="amd" if rocm else "nvidia", name=props.name,
        arch=getattr(props, "gcnArchName", None) if rocm else f"sm_{props.major}{props.minor}",
        total_memory_bytes=props.total_memory, uuid=str(getattr(props, "uuid", "") or "") or None,
        compute_units=props.multi_processor_count,
        dnn_library=(("MIOpen " if rocm else "cuDNN ") + str(torch.backends.cudnn.version())),
    )
    bus = [getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device")]
    if all(isinstance(v, int) for v in bus):
        info["pci_bus"] = f"{bus[0]:04x}:{bus[1]:02x}:{bus[2]:02x}.0"
    info["driver"] = _driver_version(rocm)
    return info


def _cpu_name() -> str:
    return cpu_info(_host()).model or platform.processor() or platform.machine()


def _driver_version(rocm: bool) -> Optional[str]:
    if not rocm:
        return proc_driver_version(_host())
    return dkms_version(_host()) or f"in-kernel amdgpu ({platform.release()})"


_HOST: Optional[LiveHost] = None


def _host() -> LiveHost:
    """The worker's view of its machine, through rocmdoctor's readers (one per process)."""
    global _HOST
    if _HOST is None:
        _HOST = LiveHost()
    return _HOST


def amdsmi_handle(torch: Any, device: Any) -> Optional[Callable[[], Any]]:
    getter = getattr(torch.cuda, "_get_amdsmi_handler", None)  # maps HIP index -> amdsmi
    return (lambda: getter(device)) if getter is not None and torch.version.hip else None


def implemented_optimizer(torch: Any, optimizer: Any, impl: Optional[str]
                          ) -> tuple[Any, Optional[str]]:
    """The workload's optimizer built again with the implementation `impl` (for-loop, foreach
    or fused: torch.optim's `foreach=` and `fused=`,
    https://docs.pytorch.org/docs/stable/optim.html#algorithms), and why not when this torch
    or device refuses it (the optimizer is then kept as it was)."""
    if impl is None:
        return optimizer, None
    cls = type(optimizer)
    flags = {"for-loop": {"foreach": False, "fused": False},
             "foreach": {"foreach": True, "fused": False},
             "fused": {"foreach": False, "fused": True}}[impl]
    import inspect

    accepted = inspect.signature(cls).parameters
    missing = [name for name, on in flags.items() if on and name not in accepted]
    if missing:
        return optimizer, f"{cls.__name__} in torch {torch.__version__} has no {missing[0]}="
    defaults = {k: v for k, v in optimizer.defaults.items() if k in accepted}
    defaults.update({k: v for k, v in flags.items() if k in accepted})
    params = [p for group in optimizer.param_groups for p in group["params"]]
    try:
        return cls(params, **defaults), None
    except (RuntimeError, ValueError, TypeError) as exc:
        return optimizer, str(exc).strip().splitlines()[0][:200]
