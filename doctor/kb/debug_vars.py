"""Environment variables that serialize or slow GPU work: debugging only."""

from __future__ import annotations

from dataclasses import dataclass

# HIP_LAUNCH_BLOCKING is in the current flags.hpp (rocm-systems), not in ROCm/clr's older copy.
CLR_FLAGS = ("https://github.com/ROCm/rocm-systems/blob/develop/projects/clr/rocclr/utils/"
             "flags.hpp")
MIOPEN_DEBUG = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/DebugAndLogging.html"
TORCH_CUDA_ENV = "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html"
TORCH_HIP_NOTE = "https://docs.pytorch.org/docs/stable/notes/hip.html"


@dataclass(frozen=True)
class DebugVar:
    name: str
    # The variable hurts when its value, read as an integer, is at least this
    # (values that are not integers count as "set" when min_level is 1).
    min_level: int
    cost: str
    source: str


DEBUG_VARS: tuple[DebugVar, ...] = (
    DebugVar("HIP_LAUNCH_BLOCKING", 1,
             "waits for every kernel to finish before the next launch (same as "
             "AMD_SERIALIZE_KERNEL=2)", CLR_FLAGS),
    DebugVar("AMD_SERIALIZE_KERNEL", 1, "serializes every kernel launch", CLR_FLAGS),
    DebugVar("AMD_SERIALIZE_COPY", 1, "serializes every memory copy", CLR_FLAGS),
    DebugVar("CUDA_LAUNCH_BLOCKING", 1,
             "makes every CUDA call synchronous, so the CPU waits for each kernel",
             TORCH_CUDA_ENV),
    DebugVar("AMD_LOG_LEVEL", 1, "logs HIP runtime activity, more with each level", CLR_FLAGS),
    DebugVar("MIOPEN_LOG_LEVEL", 5, "logs every MIOpen call at info level or more",
             MIOPEN_DEBUG),
    DebugVar("MIOPEN_CHECK_NUMERICS", 1,
             "checks every MIOpen layer's inputs and outputs for NaN/Inf", MIOPEN_DEBUG),
    DebugVar("MIOPEN_ENABLE_LOGGING", 1, "traces every MIOpen API call", MIOPEN_DEBUG),
    DebugVar("PYTORCH_NO_CUDA_MEMORY_CACHING", 1,
             "turns off PyTorch's caching allocator: every tensor is a driver allocation",
             TORCH_CUDA_ENV),
    DebugVar("PYTORCH_NO_HIP_MEMORY_CACHING", 1,
             "turns off PyTorch's caching allocator: every tensor is a driver allocation",
             TORCH_HIP_NOTE),
)


def level(value: str) -> int:
    """The numeric level of a variable's value; a non-numeric, non-empty value counts as 1."""
    v = value.strip()
    if not v:
        return 0
    try:
        return int(v, 0)
    except ValueError:
        return 0 if v.lower() in ("false", "off", "no") else 1
