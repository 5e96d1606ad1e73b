"""How `check --deep` grades a measured figure, and the causes it names when one is low.

Bands. Against an expected value E (a class reference, or a datasheet figure times the share
a published measurement reaches): pass at 0.90 E or more, warn below, fail below 0.75 E.
- 0.75: DCGM sets each card's diagnostic floors at 0.75 of what NVIDIA measured on that card
  ("dcgmproftester -t 1005 shows ~1400000 MiB/sec. Multiply by .75", nvvs/diag-skus.yaml.in).
- 0.90: cards of one model differ by "5% and higher ... on an 8-gpu node" (Bekman, "Not all
  accelerators are created equal"), and a shape that is not the reference's best shape loses
  a few percent more; 0.90 leaves room for both.
- Against a vendor's own pass mark (ROCm Validation Suite), pass at 0.95 of it: DCGM's
  targeted stress passes at target_perf_min_ratio 0.95 of its target.

Each rule below says what it detects from the run itself (a ratio of two measurements on the
same card), so it needs no reference for the card.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.kb.debug_vars import CLR_FLAGS, TORCH_CUDA_ENV, TORCH_HIP_NOTE

DCGM_SKUS = ("https://github.com/NVIDIA/DCGM/blob/0fb66990409818236a5fec5e9a795456351579b9/"
             "nvvs/diag-skus.yaml.in")
DCGM_TARGETED_STRESS = ("https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/"
                        "dcgm-diagnostics.html")
BEKMAN_SPREAD = ("https://github.com/stas00/ml-engineering/blob/"
                 "b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md"
                 "#not-all-accelerators-are-created-equal")
NVML_REASONS = ("https://docs.nvidia.com/deploy/nvml-api/"
                "group__nvmlClocksEventReasons.html")
NVIDIA_TF32_OVERRIDE = "https://github.com/alibaba/DeepRec/blob/main/docs/docs_en/NVIDIA-TF32.md"
TORCH_TF32 = "https://docs.pytorch.org/docs/stable/notes/cuda.html"
TORCH_BLAS_LIBRARY = ("https://docs.pytorch.org/docs/stable/backends.html"
                      "#torch.backends.cuda.preferred_blas_library")
MIOPEN_FIND = ("https://rocm.docs.amd.com/projects/MIOpen/en/latest/how-to/"
               "find-and-immediate.html")
RX9070_CONV = "https://github.com/ROCm/rocm-libraries/issues/2567"
GFX1201_BACKWARD = "https://github.com/ROCm/legacy-rocm-build/issues/6625"
AMD_NUMA_BALANCING = ("https://rocm.docs.amd.com/en/latest/how-to/system-optimization/"
                      "mi300x.html")
NUMACTL = "https://man7.org/linux/man-pages/man8/numactl.8.html"
AMDGPU_THERMAL = "https://docs.kernel.org/gpu/amdgpu/thermal.html"


@dataclass(frozen=True)
class Band:
    pass_at: float  # value / expected at or above this passes
    fail_below: float  # below this fails; between the two warns
    source: str


MEASURED = Band(0.90, 0.75, DCGM_SKUS)
VENDOR_TARGET = Band(0.95, 0.75, DCGM_TARGETED_STRESS)


def grade(ratio: float, band: Band) -> str:
    if ratio >= band.pass_at:
        return "pass"
    return "fail" if ratio < band.fail_below else "warn"


# --- rules from the run itself --------------------------------------------------------------
# TF32 runs FP32 products on the tensor cores: on an H100 the datasheet puts TF32 at 7.4x the
# FP32 rate (494.7 against 66.9 dense TFLOP/s, kb/peaks.py). A tf32 product under 1.5x the
# fp32 one on a card that has TF32 units did not use them.
TF32_MIN_GAIN = 1.5
# The other BLAS library faster by this much: worth choosing it.
BLAS_GAIN = 1.15
# A 3x3 convolution does the arithmetic of its implicit GEMM (M = N*H*W, N = C_out,
# K = C_in*9); at under a quarter of that GEMM's rate on the same card the convolution library
# chose a poor kernel (an RX 9070 ran such convolutions 4x slower than an RX 7800 XT:
# rocm-libraries issue 2567).
CONV_MIN_SHARE = 0.25
# Launches queued back to back take a few microseconds each; waiting for each kernel adds the
# round trip. Queued launches as slow as waited ones (0.8 of them or more) are serialized.
SERIALIZED_SHARE = 0.8
# A card under load that never reaches this share of its top clock, with no reason reported.
BOOST_SHARE = 0.90
# A reason counts when it was on in this share of the samples under load.
REASON_SHARE = 0.10
# Pinned copies from this process as it runs, against the best NUMA node: below this share the
# buffers sit on a node far from the GPU.
NUMA_SHARE = 0.85
# DCGM's PCIe and targeted stress tests allow 160 replays during a run (max_pcie_replays).
MAX_PCIE_REPLAYS = 160
# Stress: the slowest one-second window against the median window.
SLOW_WINDOW_SHARE = 0.85
# Peer copies on a link: the same band as everything else, against the link's nominal rate
# times the share RCCL reaches on xGMI (48 of 64 GB/s, ROCm/rccl issue 1210).
LINK_SHARE = 48.0 / 64.0
RCCL_XGMI = "https://github.com/ROCm/rccl/issues/1210"

# NVML's clocks event reasons, by what they mean for a measurement.
HW_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown")
THERMAL_REASONS = ("SW Thermal Slowdown",)
POWER_REASONS = ("SW Power Cap",)
BENIGN_REASONS = ("Idle", "Applications Clocks Setting", "Display Clock Setting", "Sync Boost")
REASON_MEANING = {
    "HW Slowdown": "the hardware halves the clocks or more: too hot, an external power brake, "
                   "or power draw too high",
    "HW Thermal Slowdown": "the hardware lowers the clocks because the GPU is too hot",
    "HW Power Brake Slowdown": "the system's power supply asserted the power brake",
    "SW Thermal Slowdown": "the driver lowers the clocks to keep the GPU under its maximum "
                           "operating temperature",
    "SW Power Cap": "the clocks are held to keep the board under its power limit",
}


@dataclass(frozen=True)
class EnvCause:
    """A variable that makes a measurement slower, and what it does."""

    name: str
    value: str  # the value that does it ("" = any non-empty value)
    effect: str
    source: str
    checks: tuple[str, ...]  # the measured checks it slows


ENV_CAUSES: tuple[EnvCause, ...] = (
    EnvCause("CUDA_LAUNCH_BLOCKING", "1", "makes every launch wait for the kernel before it",
             TORCH_CUDA_ENV, ("kernel-launch", "gemm-rate", "conv-rate")),
    EnvCause("HIP_LAUNCH_BLOCKING", "1", "makes every launch wait for the kernel before it",
             CLR_FLAGS, ("kernel-launch", "gemm-rate", "conv-rate")),
    EnvCause("AMD_SERIALIZE_KERNEL", "", "serializes every kernel launch", CLR_FLAGS,
             ("kernel-launch", "gemm-rate", "conv-rate")),
    EnvCause("AMD_SERIALIZE_COPY", "", "serializes every memory copy", CLR_FLAGS,
             ("host-link", "memory-bandwidth")),
    EnvCause("AMD_LOG_LEVEL", "", "logs HIP runtime activity", CLR_FLAGS,
             ("kernel-launch",)),
    EnvCause("NVIDIA_TF32_OVERRIDE", "0", "stops cuBLAS and cuDNN from using TF32, whatever "
             "torch asks", NVIDIA_TF32_OVERRIDE, ("gemm-rate", "conv-rate")),
)


# The variables among ENV_CAUSES that make every launch wait for its kernel (the others slow
# launches, as AMD_LOG_LEVEL's logging does, without serializing them).
SERIALIZING_VARS = ("CUDA_LAUNCH_BLOCKING", "HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL")


def _sets(value: str, wanted: str) -> bool:
    """Whether a variable's value does the harm: exactly `wanted`, or when any value does,
    anything but an off word."""
    if not value:
        return False
    if wanted:
        return value == wanted
    return value.lower() not in ("0", "false", "off", "no")


def env_causes(env: dict[str, str], check: str) -> list[EnvCause]:
    """The variables set in `env` (the measured process's) that slow this check."""
    return [c for c in ENV_CAUSES
            if check in c.checks and _sets(env.get(c.name, "").strip(), c.value)]


@dataclass(frozen=True)
class KnownSlow:
    """A published report of a slow operation on a GPU target, with its issue."""

    arch_prefix: str  # gfx target the report is about ("gfx120" covers gfx1200 and gfx1201)
    check: str
    text: str
    source: str


KNOWN_SLOW: tuple[KnownSlow, ...] = (
    KnownSlow("gfx120", "conv-rate", "RX 9070-class GPUs (gfx120x) ran convolutions 4x slower "
              "than an RX 7800 XT: MIOpen picks other algorithms there", RX9070_CONV),
    KnownSlow("gfx1201", "conv-rate", "on gfx1201 MIOpen's im2col kernel failed to compile "
              "(HIPRTC) and convolution backward fell back to slow paths", GFX1201_BACKWARD),
)


def known_slow(arch: str, check: str) -> list[KnownSlow]:
    return [k for k in KNOWN_SLOW if k.check == check and arch.startswith(k.arch_prefix)]


TF32_ON_ROCM = TORCH_HIP_NOTE


def blas_env(rocm: bool) -> Optional[str]:
    """The variable that makes torch prefer the Lt library (PyTorch's backends docs)."""
    return "TORCH_BLAS_PREFER_HIPBLASLT=1" if rocm else "TORCH_BLAS_PREFER_CUBLASLT=1"
