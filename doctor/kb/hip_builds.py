"""`torch.version.hip` / HIP runtime builds and the ROCm releases that shipped them.

HIP's major.minor was ROCm's up to 7.14; ROCm 10.0 ships HIP 7.15, so a HIP number is read
through this table before it is taken for a ROCm release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.kb.driver_support import version_numbers as version_tuple

ROCM_MATRIX_HISTORICAL = (
    "https://github.com/ROCm/ROCm/blob/develop/docs/compatibility/"
    "compatibility-matrix-historical-6.0.csv"
)

# The revision of the CSV with a 6.1.5 column.
HISTORICAL_615 = ("https://github.com/ROCm/ROCm/blob/1cc3d9fbf02729d697268e7c177a5e6a606ca19e/docs/"
                  "compatibility/compatibility-matrix-historical-6.0.csv")


def _radeon_pool(release: str) -> str:
    return f"https://repo.radeon.com/rocm/apt/{release}/pool/main/h/hip-runtime-amd/"


@dataclass(frozen=True)
class HipBuild:
    """A `torch.version.hip` / HIP runtime version and the ROCm releases that shipped it."""

    hip: str  # "6.2.41133" (major.minor.build, without the git hash)
    releases: tuple[str, ...]
    source: str
    verified: bool = True  # False: seen in hipconfig / torch.version.hip of hosts, not at AMD


_UNSLOTH_7280 = "https://github.com/unslothai/unsloth/issues/7280"


def _notes(release: str) -> str:
    return f"https://rocm.docs.amd.com/en/docs-{release}/about/release-notes.html"


HIP_BUILDS: tuple[HipBuild, ...] = (
    HipBuild("6.0.32830", ("6.0.0",), _radeon_pool("6.0")),
    HipBuild("6.0.32831", ("6.0.1", "6.0.2"), _radeon_pool("6.0.2")),
    HipBuild("6.1.40091", ("6.1.0",), _radeon_pool("6.1")),
    HipBuild("6.1.40092", ("6.1.1",), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.1.40093", ("6.1.2",), ROCM_MATRIX_HISTORICAL),
    # AMD's Radeon/WSL release 6.1.3 kept HIP 6.1.40093 (torch 2.1.2+rocm6.1.3 reports it).
    HipBuild("6.1.40093", ("6.1.3",), "https://github.com/ROCm/ROCm/issues/3581"),
    HipBuild("6.1.40093", ("6.1.5",), HISTORICAL_615),  # the CSV's " 6.1.5" column
    HipBuild("6.2.41133", ("6.2.0",), _radeon_pool("6.2")),
    HipBuild("6.2.41134", ("6.2.1", "6.2.2", "6.2.4"), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.3.42131", ("6.3.0",), _radeon_pool("6.3")),
    HipBuild("6.3.42133", ("6.3.1",), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.3.42134", ("6.3.2", "6.3.3"), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.4.43482", ("6.4.0",), "https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/"
             "compatibility-matrix.html"),
    # No 6.4.1 matrix column is stored; "HIP version: 6.4.43483-a187df25c" is what 6.4.1-era
    # hosts print. 6.4.43483 is also the hipother row of 6.4.2/6.4.3 (not their HIP).
    HipBuild("6.4.43483", ("6.4.1",), "https://rocm.docs.amd.com/en/docs-6.4.1/about/"
             "release-notes.html", verified=False),
    HipBuild("6.4.43484", ("6.4.2", "6.4.3"), _radeon_pool("6.4.2")),
    HipBuild("7.0.51830", ("7.0.0",), "https://rocm.docs.amd.com/en/docs-7.0.0/compatibility/"
             "compatibility-matrix.html"),
    HipBuild("7.0.51831", ("7.0.1",), _radeon_pool("7.0.1")),
    HipBuild("7.0.51831", ("7.0.2",), "https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/"
             "compatibility-matrix.html"),
    # AMD's matrix first printed 7.1.0 as 7.1.25414, later revisions and the package 7.1.25424.
    HipBuild("7.1.25424", ("7.1.0",), _radeon_pool("7.1")),
    HipBuild("7.1.52802", ("7.1.1",), "https://rocm.docs.amd.com/en/docs-7.1.1/compatibility/"
             "compatibility-matrix.html"),
    HipBuild("7.2.26015", ("7.2.0",), _radeon_pool("7.2")),
    HipBuild("7.2.53211", ("7.2.1", "7.2.2", "7.2.3"), "https://rocm.docs.amd.com/en/"
             "docs-7.2.3/compatibility/compatibility-matrix.html"),
    HipBuild("7.2.53211", ("7.2.4",), _radeon_pool("7.2.4"), verified=False),
    HipBuild("7.14.60850", ("7.14.0", "7.14.1"), _UNSLOTH_7280, verified=False),
    # From ROCm 10.0 the HIP number no longer follows ROCm's: 10.0.0 ships HIP 7.15, 10.1.0
    # HIP 7.16 ("HIP 7.16.0" in the 10.1.0 component changelog).
    HipBuild("7.15.26333", ("10.0.0",), _notes("10.0.0"), verified=False),
    HipBuild("7.16.26385", ("10.1.0",), _notes("10.1.0"), verified=False),
)

# ROCm releases whose HIP build no AMD document or user report in the sources shows.
HIP_UNKNOWN: dict[str, str] = {
    "6.4.4": "no 6.4.4 column in AMD's matrix; PyTorch's rocm6.4 images were moved to 6.4.4, "
             "its wheels still report 6.4.43484",
    "7.9.0": "technology preview; only nightly builds' numbers are reported",
    "7.10.0": "technology preview; only nightly builds' numbers are reported",
    "7.11.0": "technology preview; only nightly builds' numbers are reported",
    "7.12.0": "technology preview; nightlies report 7.12.60490 to 7.12.60610",
    "7.13.0": "technology preview; a 7.13.0a20260423 nightly reports 7.13.26162",
}


def hip_build(hip: str) -> Optional[HipBuild]:
    """The ROCm releases of a torch.version.hip string like "6.2.41133-dd7f95766"."""
    key = ".".join(str(p) for p in version_tuple(hip.split("-", 1)[0])[:3])
    rows = [row for row in HIP_BUILDS if row.hip == key]
    if not rows:
        return None
    releases = tuple(r for row in rows for r in row.releases)
    return HipBuild(key, releases, rows[0].source, all(row.verified for row in rows))


# Up to ROCm 7.14 HIP's major.minor is ROCm's; ROCm 10.0 ships HIP 7.15 (HIP_BUILDS).
_HIP_FOLLOWS_ROCM_TO = (7, 14)


def rocm_of_hip(hip: str) -> Optional[str]:
    """ROCm major.minor of a HIP version string ("7.2.26015-fc0010cf6a" -> "7.2",
    "7.15.26333" -> "10.0"); None for a HIP newer than the tables whose ROCm is unknown."""
    row = hip_build(hip)
    if row is not None:
        v = version_tuple(row.releases[0])
        return f"{v[0]}.{v[1]}"
    v = version_tuple(hip.split("-", 1)[0])
    if len(v) < 2 or v[:2] > _HIP_FOLLOWS_ROCM_TO:
        return None
    return f"{v[0]}.{v[1]}"
