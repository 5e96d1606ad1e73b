"""What one benchmark run measures: `BenchSpec`, shared by the CLI, the tuner and the worker.

The spec travels to the worker child process as JSON (`to_dict` / `from_dict`). Run-time knobs
that are not environment variables go in `settings`; `SETTINGS` documents each one. The
worker applies them before it builds the model; an unknown key is an error in the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

BUILTIN_MODELS = ("resnet50", "vit_b_16", "gpt2", "tinycnn")
IMAGE_MODELS = ("resnet50", "vit_b_16", "tinycnn")
# fp32 = PyTorch's defaults (cuDNN convolutions may use TF32, matmuls do not);
# fp32-strict = TF32 off everywhere; tf32 = TF32 on everywhere.
PRECISIONS = ("fp32", "fp32-strict", "tf32", "bf16", "fp16")
DEVICES = ("auto", "cuda", "cpu")

# name -> (python type, what the worker does with it). Keep in step with worker._apply_settings.
SETTINGS: dict[str, tuple[type, str]] = {
    "cudnn_benchmark": (bool, "torch.backends.cudnn.benchmark; on ROCm it makes MIOpen run an "
                              "exhaustive find for each new convolution shape"),
    "cudnn_enabled": (bool, "torch.backends.cudnn.enabled (False: native convolutions)"),
    "deterministic": (bool, "torch.backends.cudnn.deterministic"),
    "miopen_immediate": (bool, "torch.backends.miopen.immediate (torch >= 2.9, ROCm): MIOpen "
                               "immediate mode, no find step; recorded as unsupported when "
                               "this torch lacks the flag"),
    "tf32": (bool, "torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32; "
                   "overrides what `precision` implies for fp32 math"),
    "matmul_precision": (str, "torch.set_float32_matmul_precision: highest | high | medium"),
    "preferred_blas": (str, "torch.backends.cuda.preferred_blas_library: cublas | cublaslt | "
                            "hipblaslt | ck | default"),
    "num_threads": (int, "torch.set_num_threads (CPU intra-op threads)"),
    "compile_mode": (str, "torch.compile mode when compile is on: default | reduce-overhead | "
                          "max-autotune | max-autotune-no-cudagraphs"),
    "optimizer_impl": (str, "the optimizer's implementation: for-loop | foreach | fused (the "
                            "workload's optimizer built again with foreach= or fused=; "
                            "recorded as unsupported where this torch or device lacks it)"),
    "sdpa_backend": (str, "torch.nn.attention.sdpa_kernel around each step: flash | efficient "
                          "| math | cudnn (scaled_dot_product_attention's kernel)"),
    "rocm_fa_library": (str, "torch.backends.cuda.preferred_rocm_fa_library on ROCm: aotriton "
                             "| ck (which flash-attention library SDPA uses)"),
    "seed": (int, "torch.manual_seed for the weights and the synthetic data (default 0)"),
    "min_warmup_s": (float, "after `warmup` steps, keep warming up until the steps after the "
                            "first have run this long (default 2.0 on a GPU, 0 on the CPU): "
                            "clocks ramp up again after a long compile or find"),
    "extras": (bool, "False skips FLOP counting, the GEMM peak and power sampling: a fast "
                     "probe (--find-max-batch uses it); default True"),
    "num_workers": (int, "with --data: DataLoader(num_workers=): processes decoding images "
                         "(0: in the training process, PyTorch's default)"),
    "pin_memory": (bool, "with --data: DataLoader(pin_memory=): batches in page-locked memory, "
                         "copied to the GPU asynchronously"),
    "persistent_workers": (bool, "with --data: DataLoader(persistent_workers=): the workers "
                                 "live across epochs"),
    "prefetch_factor": (int, "with --data: DataLoader(prefetch_factor=): batches each worker "
                             "prepares ahead (default 2)"),
    "gpu_decode": (bool, "with --data: decode the JPEGs on the GPU "
                         "(torchvision.io.decode_jpeg(device=...)) instead of in the loader"),
    "loader_channels_last": (bool, "with --data: the loader hands channels_last batches"),
    "bucket_cap_mb": (int, "with --nproc: DistributedDataParallel(bucket_cap_mb=): the size of "
                           "the gradient buckets reduced together (torch's default 25)"),
    "gradient_as_bucket_view": (bool, "with --nproc: DDP(gradient_as_bucket_view=): gradients "
                                      "are views into the buckets (no copy)"),
    "static_graph": (bool, "with --nproc: DDP(static_graph=): the graph is the same every step"),
    "broadcast_buffers": (bool, "with --nproc: DDP(broadcast_buffers=): rank 0's buffers (batch "
                                "norm statistics) sent to every rank each step (default True)"),
    "cpu_time_s": (float, "on the CPU, hold warm-up and measurement to about this many seconds "
                          "(fewer measured steps than `steps`, at least 3; 0 or unset: all "
                          "steps); bench and tune set 20 unless --steps is given"),
    "power_hz": (float, "power samples per second during the measurement (default 10)"),
    "mfu": (bool, "False skips FLOP counting and the GEMM peak but keeps power (tune's "
                  "trials, which use neither); default True"),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "matmul_precision": ("highest", "high", "medium"),
    "preferred_blas": ("cublas", "cublaslt", "hipblaslt", "ck", "default"),
    "compile_mode": ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
    "optimizer_impl": ("for-loop", "foreach", "fused"),
    "sdpa_backend": ("flash", "efficient", "math", "cudnn"),
    "rocm_fa_library": ("aotriton", "ck"),
}


DEFAULT_STEPS = 50
# On the CPU, unless --steps is given, warm-up and measurement are held to about this long:
# a CPU takes seconds a step of a vision model, and 60 of them took minutes.
CPU_TIME_S = 20.0


def held_on_cpu(settings: Mapping[str, Any], steps: Any) -> dict[str, Any]:
    """`settings` with cpu_time_s set when the user gave no step count and no cpu_time_s."""
    out = dict(settings)
    if steps is None:
        out.setdefault("cpu_time_s", CPU_TIME_S)
    return out


@dataclass(frozen=True)
class BenchSpec:
    """One benchmark configuration. `model` is a built-in name or "pkg.module:factory"."""

    model: str = "resnet50"
    batch_size: int = 64
    precision: str = "fp32"  # fp16 uses a GradScaler
    channels_last: bool = False
    compile: bool = False
    steps: int = DEFAULT_STEPS  # measured steps, after warm-up
    warmup: int = 10
    device: str = "auto"  # "cuda" also means ROCm/HIP
    image_size: int = 224
    seq_len: int = 512
    settings: Mapping[str, Any] = field(default_factory=dict)
    # An ImageFolder-style folder of JPEG/PNG files to train on ("": synthetic tensors made
    # on the device); image models only
    data: str = ""
    # Processes (one per GPU) that train together with DistributedDataParallel; 1: no DDP
    nproc: int = 1

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["settings"] = dict(self.settings)
        if not self.data:  # tune/1 and bench/1 as they were before real data and DDP
            del out["data"]
        if self.nproc == 1:
            del out["nproc"]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BenchSpec:
        """Build from a dict; unknown top-level keys raise ValueError (settings are checked
        by `problems`, so that the worker can report them in the result)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown spec field(s): {', '.join(unknown)}")
        values = dict(d)
        if "settings" in values:
            values["settings"] = dict(values["settings"] or {})
        return cls(**values)

    def problems(self) -> list[str]:
        """Everything wrong with this spec, one sentence each; empty when it is valid."""
        out: list[str] = []
        if not isinstance(self.model, str) or not self.model:
            out.append("model must be a name or 'pkg.module:factory'")
        elif self.model not in BUILTIN_MODELS and ":" not in self.model:
            out.append(f"unknown model {self.model!r} (built-in: {', '.join(BUILTIN_MODELS)}; "
                       "or a workload factory as 'pkg.module:factory')")
        if self.precision not in PRECISIONS:
            out.append(f"unknown precision {self.precision!r} (one of {', '.join(PRECISIONS)})")
        if self.device not in DEVICES:
            out.append(f"unknown device {self.device!r} (one of {', '.join(DEVICES)})")
        for name in ("batch_size", "steps", "image_size", "seq_len", "nproc"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                out.append(f"{name} must be a positive integer, not {value!r}")
        if not _is_int(self.warmup) or self.warmup < 1:
            # At least one warm-up step: the first step (MIOpen find, compile) is never measured.
            out.append(f"warmup must be at least 1, not {self.warmup!r}")
        for name in ("channels_last", "compile"):
            if not isinstance(getattr(self, name), bool):
                out.append(f"{name} must be true or false")
        if not isinstance(self.data, str):
            out.append("data must be a folder's path")
        elif self.data and self.model not in IMAGE_MODELS:
            out.append(f"--data takes images: it works with the image models "
                       f"({', '.join(IMAGE_MODELS)}), not {self.model}")
        out.extend(settings_problems(self.settings))
        return out


def settings_problems(settings: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in settings.items():
        if key not in SETTINGS:
            out.append(f"unknown setting {key!r} (known: {', '.join(sorted(SETTINGS))})")
            continue
        kind = SETTINGS[key][0]
        if kind is int:
            ok = _is_int(value)
        elif kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        else:
            ok = isinstance(value, kind)
        if not ok:
            out.append(f"setting {key!r} must be {kind.__name__}, not {value!r}")
        elif key in _CHOICES and value not in _CHOICES[key]:
            out.append(f"setting {key!r} must be one of {', '.join(_CHOICES[key])}")
        elif key == "power_hz" and not 1 <= value <= 100:
            out.append(f"setting 'power_hz' must be between 1 and 100, not {value!r}")
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
