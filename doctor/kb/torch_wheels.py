"""Official PyTorch wheels: ROCm/CUDA variants, torchvision pins, HIP builds, compiled targets.

Every row carries the URL of the document it was read from. Helper functions below answer
the questions the checks ask (which index for this ROCm, which torchvision for this torch,
which ROCm release a `torch.version.hip` string belongs to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

PREVIOUS_VERSIONS = "https://pytorch.org/get-started/previous-versions/"
RELEASE_MATRIX = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix"
VISION_README = "https://github.com/pytorch/vision#installation"
WHEEL_VARIANTS_210 = (
    "https://dev-discuss.pytorch.org/t/wheel-variants-for-pytorch-release-2-10-published/3305"
)
HF_KERNEL_VARIANTS = "https://huggingface.co/docs/kernels/builder/build-variants"
UV_TORCH_BACKENDS = "https://github.com/astral-sh/uv/blob/main/crates/uv-torch/src/backend.rs"
ROCM_MATRIX = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"
ROCM_MATRIX_HISTORICAL = (
    "https://github.com/ROCm/ROCm/blob/develop/docs/compatibility/"
    "compatibility-matrix-historical-6.0.csv"
)
KMD_MATRIX = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/"
    "user-kernel-space-compat-matrix.html"
)
WHEEL_BUNDLES_ROCM = "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_rocm.sh"
INDEX_BASE = "https://download.pytorch.org/whl/"


def _radeon_pool(release: str) -> str:
    return f"https://repo.radeon.com/rocm/apt/{release}/pool/main/h/hip-runtime-amd/"


@dataclass(frozen=True)
class WheelRelease:
    """One torch release: its torchvision partner and the wheel indexes that carry it."""

    torch: str
    torchvision: str
    rocm: tuple[str, ...]  # index suffixes after "rocm": "6.2", "6.2.4"
    cuda: tuple[str, ...]  # CUDA versions: "12.6" -> index cu126
    source: str


_C118_121 = ("11.8", "12.1")
_C118_121_124 = ("11.8", "12.1", "12.4")

# torchvision pins: previous-versions page (exact patch pairs); ROCm variants per release from
# the same page, RELEASE.md's matrix, the 2.10 wheel-variants post and HF kernel build variants.
WHEELS: tuple[WheelRelease, ...] = (
    WheelRelease("2.0.0", "0.15.1", ("5.4.2",), ("11.7", "11.8"), PREVIOUS_VERSIONS),
    WheelRelease("2.0.1", "0.15.2", ("5.4.2",), ("11.7", "11.8"), PREVIOUS_VERSIONS),
    WheelRelease("2.1.0", "0.16.0", ("5.6",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.1.1", "0.16.1", ("5.6",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.1.2", "0.16.2", ("5.6",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.2.0", "0.17.0", ("5.6",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.2.1", "0.17.1", ("5.7",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.2.2", "0.17.2", ("5.7",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.3.0", "0.18.0", ("6.0",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.3.1", "0.18.1", ("6.0",), _C118_121, PREVIOUS_VERSIONS),
    WheelRelease("2.4.0", "0.19.0", ("6.1",), _C118_121_124, PREVIOUS_VERSIONS),
    WheelRelease("2.4.1", "0.19.1", ("6.1",), _C118_121_124, PREVIOUS_VERSIONS),
    WheelRelease("2.5.0", "0.20.0", ("6.1", "6.2"), _C118_121_124, PREVIOUS_VERSIONS),
    WheelRelease("2.5.1", "0.20.1", ("6.1", "6.2"), _C118_121_124, PREVIOUS_VERSIONS),
    WheelRelease("2.6.0", "0.21.0", ("6.1", "6.2.4"), ("11.8", "12.4", "12.6"),
                 PREVIOUS_VERSIONS),
    WheelRelease("2.7.0", "0.22.0", ("6.2.4", "6.3"), ("11.8", "12.6", "12.8"),
                 PREVIOUS_VERSIONS),
    WheelRelease("2.7.1", "0.22.1", ("6.2.4", "6.3"), ("11.8", "12.6", "12.8"),
                 PREVIOUS_VERSIONS),
    WheelRelease("2.8.0", "0.23.0", ("6.3", "6.4"), ("12.6", "12.8", "12.9"),
                 HF_KERNEL_VARIANTS),
    WheelRelease("2.9.0", "0.24.0", ("6.4",), ("12.6", "12.8", "13.0"), PREVIOUS_VERSIONS),
    WheelRelease("2.9.1", "0.24.1", ("6.4",), ("12.6", "12.8", "13.0"), PREVIOUS_VERSIONS),
    WheelRelease("2.10.0", "0.25.0", ("7.0", "7.1"), ("12.6", "12.8", "13.0"),
                 WHEEL_VARIANTS_210),
    WheelRelease("2.11.0", "0.26.0", ("7.1", "7.2"), ("12.6", "12.8", "13.0"),
                 HF_KERNEL_VARIANTS),
    WheelRelease("2.12.0", "0.27.0", ("7.1", "7.2"), ("12.6", "13.0", "13.2"),
                 HF_KERNEL_VARIANTS),
    WheelRelease("2.13.0", "0.28.0", ("7.2",), ("12.6", "13.0", "13.2"), RELEASE_MATRIX),
    WheelRelease("2.14.0", "0.29.0", ("7.14",), ("12.6", "13.0", "13.2"), RELEASE_MATRIX),
    WheelRelease("2.14.1", "0.29.1", ("7.14",), ("12.6", "13.0", "13.2"), RELEASE_MATRIX),
)


@dataclass(frozen=True)
class HipBuild:
    """A `torch.version.hip` / HIP runtime version and the ROCm releases that shipped it."""

    hip: str  # "6.2.41133" (major.minor.build, without the git hash)
    releases: tuple[str, ...]
    source: str


HIP_BUILDS: tuple[HipBuild, ...] = (
    HipBuild("6.0.32830", ("6.0.0",), _radeon_pool("6.0")),
    HipBuild("6.0.32831", ("6.0.1", "6.0.2"), _radeon_pool("6.0.2")),
    HipBuild("6.1.40091", ("6.1.0",), _radeon_pool("6.1")),
    HipBuild("6.1.40092", ("6.1.1",), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.1.40093", ("6.1.2",), ROCM_MATRIX_HISTORICAL),
    # AMD's Radeon/WSL release 6.1.3 kept HIP 6.1.40093 (torch 2.1.2+rocm6.1.3 reports it).
    HipBuild("6.1.40093", ("6.1.3",), "https://github.com/ROCm/ROCm/issues/3581"),
    HipBuild("6.2.41133", ("6.2.0",), _radeon_pool("6.2")),
    HipBuild("6.2.41134", ("6.2.1", "6.2.2", "6.2.4"), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.3.42131", ("6.3.0",), _radeon_pool("6.3")),
    HipBuild("6.3.42133", ("6.3.1",), ROCM_MATRIX_HISTORICAL),
    HipBuild("6.4.43482", ("6.4.0",), ROCM_MATRIX),
    HipBuild("6.4.43484", ("6.4.2", "6.4.3"), _radeon_pool("6.4.2")),
    HipBuild("7.0.51830", ("7.0.0",), ROCM_MATRIX),
    HipBuild("7.0.51831", ("7.0.1",), _radeon_pool("7.0.1")),
    HipBuild("7.1.25424", ("7.1.0",), _radeon_pool("7.1")),
    HipBuild("7.1.52802", ("7.1.1",), ROCM_MATRIX),
    HipBuild("7.2.26015", ("7.2.0",), _radeon_pool("7.2")),
    HipBuild("7.2.53211", ("7.2.1", "7.2.2", "7.2.3", "7.2.4"), ROCM_MATRIX),
)


@dataclass(frozen=True)
class IndexTargets:
    """The gfx targets compiled into the newest torch wheels of one ROCm index."""

    rocm: str  # index suffix
    targets: tuple[str, ...]
    source: str


_GFX_BASE = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100")
_GFX_RDNA3 = _GFX_BASE + ("gfx1101", "gfx1102")
_GFX_RDNA4 = _GFX_RDNA3 + ("gfx1200", "gfx1201")

# uv read these with torch.cuda.get_arch_list() from each index; PyTorch's own build script
# (.ci/docker/manywheel/build.sh, PYTORCH_ROCM_ARCH) lists the same targets for current builds.
INDEX_TARGETS: tuple[IndexTargets, ...] = (
    IndexTargets("6.0", _GFX_BASE, UV_TORCH_BACKENDS),
    IndexTargets("6.1", _GFX_BASE + ("gfx1101",), UV_TORCH_BACKENDS),
    IndexTargets("6.2", _GFX_BASE, UV_TORCH_BACKENDS),
    IndexTargets("6.2.4", _GFX_RDNA4, UV_TORCH_BACKENDS),
    IndexTargets("6.3", _GFX_RDNA4, UV_TORCH_BACKENDS),
    IndexTargets("6.4", _GFX_RDNA4, UV_TORCH_BACKENDS),
    IndexTargets("7.0", _GFX_RDNA4 + ("gfx950",), UV_TORCH_BACKENDS),
    IndexTargets("7.1", _GFX_RDNA4 + ("gfx950",), UV_TORCH_BACKENDS),
    IndexTargets("7.2", _GFX_RDNA4 + ("gfx950", "gfx1150", "gfx1151"), UV_TORCH_BACKENDS),
)


@dataclass(frozen=True)
class KmdSupport:
    """AMD's tested pairs of kernel driver (KMD, by ROCm release) and user-space releases."""

    kmd: str  # "6.2" for the 6.2.x driver
    user_space: tuple[str, ...]
    source: str


# From ROCm 6.4 on, AMD supports driver and user space "up to a year apart" instead of a table.
KMD_ONE_YEAR_RULE_FROM = (6, 4)
KMD_SUPPORT: tuple[KmdSupport, ...] = (
    KmdSupport("6.4", ("6.1", "6.2", "6.3", "6.4"), KMD_MATRIX),
    KmdSupport("6.3", ("6.1", "6.2", "6.3", "6.4"), KMD_MATRIX),
    KmdSupport("6.2", ("6.0", "6.1", "6.2", "6.3", "6.4"), KMD_MATRIX),
    KmdSupport("6.1", ("5.7", "6.0", "6.1", "6.2", "6.3", "6.4"), KMD_MATRIX),
    KmdSupport("6.0", ("5.6", "5.7", "6.0", "6.1", "6.2"), KMD_MATRIX),
    KmdSupport("5.7", ("5.5", "5.6", "5.7", "6.0", "6.1"), KMD_MATRIX),
    KmdSupport("5.6", ("5.4", "5.5", "5.6", "5.7", "6.0"), KMD_MATRIX),
    KmdSupport("5.5", ("5.3", "5.4", "5.5", "5.6", "5.7"), KMD_MATRIX),
)

# --- version helpers -----------------------------------------------------------------------

_NUM = re.compile(r"\d+")


def version_tuple(text: str) -> tuple[int, ...]:
    """Leading dotted integers: "2.5.1+rocm6.2" -> (2, 5, 1); "0.19.1a0+6194369" -> (0, 19, 1)."""
    parts: list[int] = []
    for piece in text.strip().split("+", 1)[0].split("."):
        match = _NUM.match(piece)
        if match is None:
            break
        parts.append(int(match.group()))
        if match.end() != len(piece):
            break
    return tuple(parts)


def split_local(version: str) -> tuple[str, str]:
    """("2.9.1", "rocm7.2.0.git7e1940d4") from "2.9.1+rocm7.2.0.git7e1940d4"."""
    public, _, local = version.strip().partition("+")
    return public, local


def wheel_release(torch_version: str) -> Optional[WheelRelease]:
    public = version_tuple(torch_version)[:3]
    for row in WHEELS:
        if version_tuple(row.torch) == public:
            return row
    return None


def expected_torchvision_minor(torch_version: str) -> Optional[tuple[int, int]]:
    """torchvision 0.(minor+15) for torch 2.minor (the pytorch/vision README table)."""
    v = version_tuple(torch_version)
    if len(v) < 2 or v[0] != 2:
        return None
    return (0, v[1] + 15)


def torch_for_torchvision(torchvision_version: str) -> Optional[str]:
    """The torch release a torchvision release pins (exact, from the table)."""
    want = version_tuple(torchvision_version)[:3]
    for row in WHEELS:
        if version_tuple(row.torchvision) == want:
            return row.torch
    return None


def hip_build(hip: str) -> Optional[HipBuild]:
    """The ROCm releases of a torch.version.hip string like "6.2.41133-dd7f95766"."""
    key = ".".join(str(p) for p in version_tuple(hip.split("-", 1)[0])[:3])
    rows = [row for row in HIP_BUILDS if row.hip == key]
    if not rows:
        return None
    releases = tuple(r for row in rows for r in row.releases)
    return HipBuild(key, releases, rows[0].source)


def rocm_of_hip(hip: str) -> Optional[str]:
    """ROCm major.minor of a HIP version string ("7.2.26015-fc0010cf6a" -> "7.2")."""
    v = version_tuple(hip.split("-", 1)[0])
    if len(v) < 2:
        return None
    return f"{v[0]}.{v[1]}"


def rocm_indexes() -> list[str]:
    """Every ROCm wheel index suffix in the table, oldest first."""
    seen = {r for row in WHEELS for r in row.rocm}
    return sorted(seen, key=version_tuple)


def rocm_index_for(system_rocm: Optional[str]) -> str:
    """The wheel index suffix that fits a system ROCm release best.

    The newest index not newer than the system release, preferring the same major.minor;
    with no system ROCm (the wheel brings its own user space) the newest index.
    """
    indexes = rocm_indexes()
    if not system_rocm:
        return indexes[-1]
    have = version_tuple(system_rocm)
    fitting = [i for i in indexes if version_tuple(i) <= have]
    same_minor = [i for i in fitting if version_tuple(i)[:2] == have[:2]]
    if same_minor:
        return same_minor[-1]
    if fitting:
        return fitting[-1]
    return indexes[0]


def cuda_index(cuda: str) -> str:
    """"12.6" -> "cu126"."""
    v = version_tuple(cuda)
    return f"cu{v[0]}{v[1]}" if len(v) >= 2 else f"cu{cuda}"


def index_url(suffix: str) -> str:
    """Full index URL for "rocm6.2", "cu126" or "cpu"."""
    return INDEX_BASE + suffix


def pip_line(index: str, force: bool) -> str:
    """The pip command that installs torch and torchvision from one wheel index."""
    flag = "--force-reinstall " if force else ""
    return f"pip install {flag}torch torchvision --index-url {index_url(index)}"


def targets_of_index(rocm: str) -> Optional[IndexTargets]:
    for row in INDEX_TARGETS:
        if row.rocm == rocm:
            return row
    return None


def first_index_with(gfx: str) -> Optional[IndexTargets]:
    """The oldest ROCm index whose wheels include a gfx target."""
    for row in sorted(INDEX_TARGETS, key=lambda r: version_tuple(r.rocm)):
        if gfx in row.targets:
            return row
    return None


def kmd_supports(kmd_rocm: str, user_space_rocm: str) -> Optional[bool]:
    """Whether AMD tested a driver release with a user-space release (None: not in the table)."""
    kmd = version_tuple(kmd_rocm)[:2]
    user = version_tuple(user_space_rocm)[:2]
    for row in KMD_SUPPORT:
        if version_tuple(row.kmd) == kmd:
            return any(version_tuple(u) == user for u in row.user_space)
    return None
