"""NVIDIA compute capabilities against PyTorch's official CUDA wheels: which wheels last
carried code for an old GPU, and which carry it now. Each row has its sources.

Sources:
- TORCH_CUDA_CODE: torch/cuda/__init__.py of torch 2.13 (PYTORCH_RELEASES_CODE_CC, "kept in
  sync with .ci/manywheel/build_cuda.sh"): the CUDA 12.6 wheels carry sm_50, sm_60, sm_70,
  sm_75, sm_80, sm_86, sm_90; the 12.9, 13.0 and 13.2 wheels sm_75 to sm_120. Its
  DEVICE_REQUIREMENT says which device capabilities run which code (sm_50 code runs on 5.2,
  not on 5.3; sm_120 code runs on 12.1).
- RELEASE_28: torch 2.8's release notes: "support for sm50 - sm70 architectures with CUDA
  12.8 and 12.9 has been dropped for the 2.8.0 release ... please utilize CUDA 12.6".
- VOLTA_211: PyTorch's developer forum, "Dropping Volta support from CUDA-12.8 binaries for
  release 2.11"; pytorch#182250 shows 2.10.0+cu128 with sm_70 and 2.11.0+cu128 without.
- KEPLER_37: pytorch#95648 lists "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" for the
  torch 2.0 CUDA 11.8 build; CUDA 12 has no Kepler (pytorch#101187).
- K40_35: pytorch#24205 (after 1.2.0 the builds went "from 3.5 to only 3.7"), pytorch#30532
  and pytorch#31319 (1.3 and 1.3.1 binaries fail on K40 cards); community builds for sm_35:
  nelson-liu/pytorch-manylinux-binaries.
- CC30: pytorch#4841 (3.0 removed from the binaries for 0.3.1; 3.0 "misses some cuda
  instructions that we heavily rely on, for example __shfl", so source builds fail too).
- FERMI: pytorch.github.io#72 (cards below 3.0 get "invalid device function"; not supported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

TORCH_CUDA_CODE = "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py"
RELEASE_28 = "https://github.com/pytorch/pytorch/releases/tag/v2.8.0"
VOLTA_211 = "https://github.com/pytorch/pytorch/issues/182250"
KEPLER_37 = "https://github.com/pytorch/pytorch/issues/95648"
K40_35 = "https://github.com/pytorch/pytorch/issues/30532"
CC30 = "https://github.com/pytorch/pytorch/issues/4841"
FERMI = "https://github.com/pytorch/pytorch.github.io/issues/72"
COMMUNITY_SM35 = "https://github.com/nelson-liu/pytorch-manylinux-binaries"
WHL = "https://download.pytorch.org/whl/"


@dataclass(frozen=True)
class ArchSupport:
    """Where PyTorch's official wheels stand for GPUs of some compute capabilities."""

    capabilities: tuple[str, ...]  # "3.5", "3.7" ...
    family: str
    wheels: str  # which official wheels carry code for them, as a sentence
    index: Optional[str]  # the wheel index that has them today (cu126), None when none does
    release: Optional[str]  # the newest torch release with such wheels, when it is not today's
    source: str


ARCH_SUPPORT: tuple[ArchSupport, ...] = (
    ArchSupport(("2.0", "2.1"), "Fermi",
                "no PyTorch binary runs on compute capability 2.x, below 3.0, the minimum of "
                "every release: run on the CPU or use a newer GPU", None, None, FERMI),
    ArchSupport(("3.0", "3.2"), "Kepler",
                "torch 0.3.0 was the last release whose binaries carried sm_30; from 0.3.1 on "
                "they do not, and newer torch cannot be built for 3.0 (it lacks instructions "
                "torch relies on, such as __shfl)", None, "0.3.0", CC30),
    ArchSupport(("3.5",), "Kepler",
                "torch 1.2.0 is the last release whose official binaries carry sm_35 (from 1.3 "
                "their minimum is 3.7); community builds for sm_35 exist up to torch 2.0 "
                f"({COMMUNITY_SM35}), or build torch from source with TORCH_CUDA_ARCH_LIST=3.5",
                None, "1.2.0", K40_35),
    ArchSupport(("3.7",), "Kepler (K80)",
                "the torch 2.0 wheels for CUDA 11.8 still carry sm_37; CUDA 12 builds carry no "
                "Kepler code", "cu118", "2.0.1", KEPLER_37),
    ArchSupport(("5.0", "5.2", "6.0", "6.1"), "Maxwell/Pascal",
                "PyTorch's CUDA 12.6 wheels carry sm_50 and sm_60 code (Maxwell and Pascal "
                "cards run it); the CUDA 12.8 and newer wheels do not, from torch 2.8 on",
                "cu126", None, TORCH_CUDA_CODE),
    ArchSupport(("7.0",), "Volta",
                "PyTorch's CUDA 12.6 wheels carry sm_70 (as did the CUDA 12.8 wheels up to "
                "torch 2.10); the 12.8 wheels from 2.11 and the CUDA 13 wheels do not",
                "cu126", None, VOLTA_211),
    ArchSupport(("12.0", "12.1"), "Blackwell (RTX 50, GB10)",
                "PyTorch's CUDA 12.8 and newer wheels carry sm_120 code, which compute "
                "capability 12.1 runs as well", "cu128", None, TORCH_CUDA_CODE),
)


def arch_support(capability: str) -> Optional[ArchSupport]:
    """The row for a compute capability ("3.5"), or None when the current wheels carry it."""
    return next((row for row in ARCH_SUPPORT if capability in row.capabilities), None)


def runs_code_of(device: str, code: str) -> bool:
    """Whether a GPU of capability `device` runs code built for `code`: the same major
    version, not older than the code (DEVICE_REQUIREMENT in torch/cuda); 5.3, 6.2, 7.2 and 8.7
    are embedded parts that run only their own."""
    if device == code:
        return True
    if device in ("5.3", "6.2", "7.2", "8.7"):
        return False
    try:
        d_major, d_minor = (int(p) for p in device.split("."))
        c_major, c_minor = (int(p) for p in code.split("."))
    except ValueError:
        return False
    return d_major == c_major and d_minor >= c_minor
