"""CUDA runtime -> minimum Linux x86_64 NVIDIA driver.

Source: NVIDIA CUDA Toolkit release notes, Table 2 ("Minimum Required Driver Version for
CUDA Minor Version Compatibility") and Table 3 ("CUDA Toolkit and Corresponding Driver
Versions", the GA release of each minor version). PyTorch wheels bundle the CUDA runtime, so
the driver must satisfy the runtime torch was built with (`torch.version.cuda`): at least
the Table 3 version for everything to work, at least the Table 2 version for minor version
compatibility (PTX JIT and some newer features need the Table 3 driver).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.kb.torch_wheels import version_tuple

RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
COMPAT_GUIDE = "https://docs.nvidia.com/deploy/cuda-compatibility/index.html"


@dataclass(frozen=True)
class CudaDriverRow:
    cuda: str  # "12.4" (major.minor, GA release)
    min_driver: str  # Table 3, Linux x86_64
    source: str
    # False: the number is quoted from NVIDIA's table by others, not read in a stored copy of
    # it; such a row never makes a driver fail (only Table 2 does).
    verified: bool = True


RELEASE_NOTES_133 = "https://docs.nvidia.com/cuda/archive/13.3.0/cuda-toolkit-release-notes/"

# Table 3, GA rows (Linux x86_64), from the 13.1 edition of the notes unless marked.
CUDA_GA_DRIVERS: tuple[CudaDriverRow, ...] = (
    CudaDriverRow("13.3", "610.43.02", RELEASE_NOTES_133, verified=False),
    CudaDriverRow("13.2", "595.45.04",
                  "https://docs.nvidia.com/cuda/archive/13.2.0/cuda-toolkit-release-notes/",
                  verified=False),
    CudaDriverRow("13.1", "590.44.01", RELEASE_NOTES),
    CudaDriverRow("13.0", "580.65.06", RELEASE_NOTES),
    CudaDriverRow("12.9", "575.51.03", RELEASE_NOTES),
    CudaDriverRow("12.8", "570.26", RELEASE_NOTES),
    CudaDriverRow("12.6", "560.28.03", RELEASE_NOTES),
    CudaDriverRow("12.5", "555.42.02", RELEASE_NOTES),
    CudaDriverRow("12.4", "550.54.14", RELEASE_NOTES),
    CudaDriverRow("12.3", "545.23.06", RELEASE_NOTES),
    CudaDriverRow("12.2", "535.54.03", RELEASE_NOTES),
    CudaDriverRow("12.1", "530.30.02", RELEASE_NOTES),
    CudaDriverRow("12.0", "525.60.13", RELEASE_NOTES),
    CudaDriverRow("11.8", "520.61.05", RELEASE_NOTES),
    CudaDriverRow("11.7", "515.43.04", RELEASE_NOTES),
    CudaDriverRow("11.6", "510.39.01", RELEASE_NOTES),
    CudaDriverRow("11.5", "495.29.05", RELEASE_NOTES),
    CudaDriverRow("11.4", "470.42.01", RELEASE_NOTES),
    CudaDriverRow("11.3", "465.19.01", RELEASE_NOTES),
    CudaDriverRow("11.2", "460.27.03", RELEASE_NOTES),
    CudaDriverRow("11.1", "455.23", RELEASE_NOTES),
    # "CUDA 11.0.2 GA >= 450.51.05"; 450.36.06 is the 11.0.1 RC's.
    CudaDriverRow("11.0", "450.51.05", RELEASE_NOTES),
    CudaDriverRow("10.2", "440.33", RELEASE_NOTES),
)


# Released after the newest row above, with no minimum driver in the stored sources: 13.4 (GA
# versioned 13.4.1, "supersedes the 13.4.0 developer preview"; the Linux driver is no longer
# bundled, R615 is named) and 13.5.
KNOWN_WITHOUT_DRIVER: tuple[tuple[str, str], ...] = (
    ("13.4", "https://docs.nvidia.com/cuda/archive/13.4.1/cuda-toolkit-release-notes/index.html"),
    ("13.5", RELEASE_NOTES),
)


@dataclass(frozen=True)
class MinorCompatRow:
    cuda_major: int
    min_driver: str  # Table 2 minimum; 11.x needs the 450.80.02 "Tesla Recommended" driver
    source: str


MINOR_COMPAT: tuple[MinorCompatRow, ...] = (
    MinorCompatRow(13, "580", RELEASE_NOTES),
    MinorCompatRow(12, "525.60.13", RELEASE_NOTES),
    MinorCompatRow(11, "450.80.02", RELEASE_NOTES),
)


def ga_driver(cuda: str) -> Optional[CudaDriverRow]:
    """Table 3's minimum driver for a CUDA major.minor ("12.4" or "12.4.1")."""
    want = version_tuple(cuda)[:2]
    for row in CUDA_GA_DRIVERS:
        if version_tuple(row.cuda) == want:
            return row
    return None


def cuda_newer_than_table(cuda: str) -> bool:
    """A CUDA major.minor with no Table 3 row here: released after it, or not known at all."""
    want = version_tuple(cuda)[:2]
    return len(want) == 2 and want > max(version_tuple(r.cuda) for r in CUDA_GA_DRIVERS)


def minor_compat_driver(cuda: str) -> Optional[MinorCompatRow]:
    """Table 2's minimum driver for the CUDA major version."""
    v = version_tuple(cuda)
    if not v:
        return None
    for row in MINOR_COMPAT:
        if row.cuda_major == v[0]:
            return row
    return None


def driver_at_least(driver: str, minimum: str) -> bool:
    """Compare NVIDIA driver versions ("550.127.08" >= "550.54.14")."""
    return version_tuple(driver) >= version_tuple(minimum)


def newest_cuda_for_driver(driver: str, candidates: tuple[str, ...]) -> Optional[str]:
    """The newest CUDA version from `candidates` whose minor-compat minimum the driver meets."""
    usable = []
    for cuda in candidates:
        row = minor_compat_driver(cuda)
        if row is not None and driver_at_least(driver, row.min_driver):
            usable.append(cuda)
    return max(usable, key=version_tuple) if usable else None
