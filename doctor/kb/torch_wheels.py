"""Official PyTorch wheels: ROCm/CUDA variants, torchvision pins, HIP builds, compiled targets.

Every row carries the URL of the document it was read from. Helper functions below answer
the questions the checks ask (which index for this ROCm, which torchvision for this torch,
which ROCm release a `torch.version.hip` string belongs to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.kb.driver_support import (  # noqa: F401  (read from here by the checks)
    AMDGPU_DOCS_MATRIX,
    KMD_ONE_YEAR_RULE_FROM,
    KMD_SUPPORT,
    KmdSupport,
    kmd_supports,
)
from rocmdoctor.kb.hip_builds import (  # noqa: F401
    HIP_BUILDS,
    HIP_UNKNOWN,
    HipBuild,
    hip_build,
    rocm_of_hip,
)

PREVIOUS_VERSIONS = "https://pytorch.org/get-started/previous-versions/"
RELEASE_MATRIX = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix"
VISION_README = "https://github.com/pytorch/vision#installation"
UV_TORCH_BACKENDS = "https://github.com/astral-sh/uv/blob/main/crates/uv-torch/src/backend.rs"
ROCM_MATRIX = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"
ROCM_MATRIX_HISTORICAL = (
    "https://github.com/ROCm/ROCm/blob/develop/docs/compatibility/"
    "compatibility-matrix-historical-6.0.csv"
)
# AMD's driver / user-space table (kb.driver_support); the names stay here for the checks
# that read them from this module.
KMD_MATRIX = AMDGPU_DOCS_MATRIX
WHEEL_BUNDLES_ROCM = "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_rocm.sh"
# AMD on a wheel that carries ROCm 6.0.0 beside a system ROCm 6.0.1: "you don't need to install
# ROCm 6.0.1 on your machine ... don't install ROCm yourself and let the wheel install ROCm for
# you" (hongxiayang).
WHEEL_NEEDS_NO_SYSTEM_ROCM = "https://github.com/pytorch/pytorch/issues/118457"
# "if LD_LIBRARY_PATH is set in the environment to point to the ROCm installation, it will
# override the RUNPATH setting for the PyTorch libraries (eg. libtorch_hip.so) in the wheel
# package, thus potentially linking to incompatible libraries" (jithunnair-amd).
LD_LIBRARY_PATH_OVER_RUNPATH = "https://github.com/pytorch/builder/pull/1468"
MANYWHEEL_BUILD = "https://github.com/pytorch/pytorch/blob/main/.ci/docker/manywheel/build.sh"
INDEX_BASE = "https://download.pytorch.org/whl/"


def _radeon_pool(release: str) -> str:
    return f"https://repo.radeon.com/rocm/apt/{release}/pool/main/h/hip-runtime-amd/"


def _matrix(branch: str) -> str:
    """PyTorch's binary build matrix on a release branch: its "test" channel lists the ROCm and
    CUDA variants the release candidate of that branch is built for."""
    return (f"https://github.com/pytorch/test-infra/blob/release/{branch}/tools/scripts/"
            "generate_binary_build_matrix.py")


def _builder(branch: str) -> str:
    return f"https://github.com/pytorch/builder/blob/release/{branch}/manywheel/build_docker.sh"


def _pr(number: int) -> str:
    return f"https://github.com/pytorch/pytorch/pull/{number}"


@dataclass(frozen=True)
class WheelRelease:
    """One torch release: its torchvision partner and the wheel indexes that carry it."""

    torch: str
    torchvision: str
    rocm: tuple[str, ...]  # index suffixes after "rocm": "6.2", "6.2.4"
    cuda: tuple[str, ...]  # CUDA versions: "12.6" -> index cu126
    source: str  # the ROCm and CUDA variants
    pins_source: str = PREVIOUS_VERSIONS  # the torchvision pin
    verified: bool = True  # False: the release is seen in install lines, not on a PyTorch page


_C118_121 = ("11.8", "12.1")
_C118_121_124 = ("11.8", "12.1", "12.4")
_C126_128_130 = ("12.6", "12.8", "13.0")
_C126_130_132 = ("12.6", "13.0", "13.2")
# torch 2.14.1 / torchvision 0.29.1: dozens of install lines against download.pytorch.org
# (cpu, cu126, rocm7.2, rocm7.14) and reports of "torch 2.14.1+rocm7.2" with HIP 7.2.53211;
# no stored PyTorch page lists it.
_INSTALL_LINES_2141 = "https://download.pytorch.org/whl/torch/"

# ROCm variants: the "test" channel of each release branch's build matrix (the "release"
# channel there is the previous release's). torch 2.0.x: only rocm5.4.2 is on the previous-
# versions page; release/2.1's "release" channel also names 5.3, but no 2.0.x+rocm5.3 wheel is
# documented, so it is left out. torchvision pins: the previous-versions page.
WHEELS: tuple[WheelRelease, ...] = (
    WheelRelease("2.0.0", "0.15.1", ("5.4.2",), ("11.7", "11.8"), PREVIOUS_VERSIONS),
    WheelRelease("2.0.1", "0.15.2", ("5.4.2",), ("11.7", "11.8"), PREVIOUS_VERSIONS),
    WheelRelease("2.1.0", "0.16.0", ("5.5", "5.6"), _C118_121, _matrix("2.1")),
    WheelRelease("2.1.1", "0.16.1", ("5.5", "5.6"), _C118_121, _matrix("2.1")),
    WheelRelease("2.1.2", "0.16.2", ("5.5", "5.6"), _C118_121, _matrix("2.1")),
    WheelRelease("2.2.0", "0.17.0", ("5.6", "5.7"), _C118_121, _matrix("2.2")),
    WheelRelease("2.2.1", "0.17.1", ("5.6", "5.7"), _C118_121, _matrix("2.2")),
    WheelRelease("2.2.2", "0.17.2", ("5.6", "5.7"), _C118_121, _matrix("2.2")),
    WheelRelease("2.3.0", "0.18.0", ("5.7", "6.0"), _C118_121, _matrix("2.3")),
    WheelRelease("2.3.1", "0.18.1", ("5.7", "6.0"), _C118_121, _matrix("2.3")),
    WheelRelease("2.4.0", "0.19.0", ("6.0", "6.1"), _C118_121_124, _matrix("2.4")),
    WheelRelease("2.4.1", "0.19.1", ("6.0", "6.1"), _C118_121_124, _matrix("2.4")),
    WheelRelease("2.5.0", "0.20.0", ("6.1", "6.2"), _C118_121_124, _matrix("2.5")),
    WheelRelease("2.5.1", "0.20.1", ("6.1", "6.2"), _C118_121_124, _matrix("2.5")),
    WheelRelease("2.6.0", "0.21.0", ("6.1", "6.2.4"), ("11.8", "12.4", "12.6"), _matrix("2.6")),
    WheelRelease("2.7.0", "0.22.0", ("6.2.4", "6.3"), ("11.8", "12.6", "12.8"), _matrix("2.7")),
    WheelRelease("2.7.1", "0.22.1", ("6.2.4", "6.3"), ("11.8", "12.6", "12.8"), _matrix("2.7")),
    WheelRelease("2.8.0", "0.23.0", ("6.3", "6.4"), ("12.6", "12.8", "12.9"), _matrix("2.8")),
    WheelRelease("2.9.0", "0.24.0", ("6.3", "6.4"), _C126_128_130, _matrix("2.9")),
    WheelRelease("2.9.1", "0.24.1", ("6.3", "6.4"), _C126_128_130, _matrix("2.9")),
    WheelRelease("2.10.0", "0.25.0", ("7.0", "7.1"), _C126_128_130, _matrix("2.10")),
    WheelRelease("2.11.0", "0.26.0", ("7.1", "7.2"), _C126_128_130, _matrix("2.11")),
    WheelRelease("2.12.0", "0.27.0", ("7.1", "7.2"), _C126_130_132, _matrix("2.12")),
    WheelRelease("2.12.1", "0.27.1", ("7.1", "7.2"), _C126_130_132, _matrix("2.12"),
                 pins_source=_matrix("2.12")),  # CURRENT_STABLE_VERSION = "2.12.1"
    WheelRelease("2.13.0", "0.28.0", ("7.1", "7.2"), _C126_130_132, _matrix("2.13"),
                 pins_source=RELEASE_MATRIX),
    WheelRelease("2.14.0", "0.29.0", ("7.2", "7.14"), _C126_130_132, _matrix("2.14"),
                 pins_source=RELEASE_MATRIX),
    WheelRelease("2.14.1", "0.29.1", ("7.2", "7.14"), _C126_130_132, _matrix("2.14"),
                 pins_source=_INSTALL_LINES_2141, verified=False),
)


@dataclass(frozen=True)
class WheelTargets:
    """The gfx targets compiled into the torch wheels of some releases on some indexes
    (PYTORCH_ROCM_ARCH of the wheel build)."""

    torch: tuple[str, ...]  # torch major.minor releases: ("2.7", "2.8", "2.9")
    rocm: tuple[str, ...]  # index suffixes
    targets: tuple[str, ...]
    source: str
    verified: bool = True  # False: read at a later commit than the release's own tag


def _w(torch: str, rocm: str, targets: str, source: str, verified: bool = True) -> WheelTargets:
    return WheelTargets(tuple(torch.split()), tuple(rocm.split()), tuple(targets.split()),
                        source, verified)


_T20 = "gfx900 gfx906 gfx908 gfx90a gfx1030"
_T21 = _T20 + " gfx1100"
_T23 = "gfx900 gfx906 gfx908 gfx90a gfx942 gfx1030 gfx1100"
_T26 = _T23 + " gfx1101"
_T27 = _T26 + " gfx1102 gfx1200 gfx1201"
_T210 = _T27 + " gfx950"
_T211 = _T210 + " gfx1150 gfx1151"
_T214_THEROCK = ("gfx908 gfx90a gfx942 gfx950 gfx1030 gfx1100 gfx1101 gfx1102 gfx1103 gfx1200 "
                 "gfx1201 gfx1150 gfx1151")

# The list depends on the torch release, not only on the index: rocm6.2.4 carries 2.6.0
# without RDNA4 and 2.7.x with it.
WHEEL_TARGETS: tuple[WheelTargets, ...] = (
    # PYTORCH_ROCM_ARCH="gfx900;gfx906;gfx908" + ";gfx90a;gfx1030" from ROCm 4.3 on.
    _w("2.0", "5.4.2", _T20, _builder("2.0")),
    _w("2.1 2.2", "5.5 5.6 5.7", _T21, _builder("2.2")),
    _w("2.3", "5.7", _T21, _builder("2.3")),
    # 'if [[ $ROCM_VERSION_INT -ge 60000 ]]; then PYTORCH_ROCM_ARCH+=";gfx942"'
    _w("2.3 2.4", "6.0 6.1", _T23, _builder("2.4")),
    _w("2.5", "6.1 6.2", _T23, UV_TORCH_BACKENDS),
    _w("2.6", "6.1 6.2.4", _T26, _pr(141667)),  # "[ROCm] add gfx1101 to wheels"
    # gfx1102 (#147761) and gfx1200/gfx1201 (#148562) entered the wheels after 2.6.
    _w("2.7 2.8 2.9", "6.2.4 6.3 6.4", _T27, _pr(148562)),
    # uv's lists for rocm7.0/7.1 (read from 2.10 wheels) have no gfx1150/gfx1151.
    _w("2.10", "7.0 7.1", _T210, UV_TORCH_BACKENDS),
    _w("2.11 2.12", "7.1", _T210, UV_TORCH_BACKENDS),
    _w("2.11 2.12", "7.2", _T211, UV_TORCH_BACKENDS),
    # "[ROCm] Add gfx1103 to wheel build arch list" (landed 2026-04, before the 2.13 branch).
    # rocm7.1 may carry gfx1150/gfx1151 too (the build script builds both with one list); not
    # seen in a wheel, so left out.
    _w("2.13", "7.1", _T210 + " gfx1103", _pr(179653)),
    _w("2.13", "7.2", _T211 + " gfx1103", _pr(179653)),
    _w("2.14", "7.2", _T211 + " gfx1103", MANYWHEEL_BUILD, verified=False),
    # The 7.14 wheels build on TheRock's multi-arch packages, without gfx900/gfx906.
    _w("2.14", "7.14", _T214_THEROCK, MANYWHEEL_BUILD, verified=False),
)


@dataclass(frozen=True)
class IndexTargets:
    """The gfx targets compiled into the newest torch wheels of one ROCm index."""

    rocm: str  # index suffix
    targets: tuple[str, ...]
    source: str
    verified: bool = True


# --- version helpers -----------------------------------------------------------------------

# A component of at most 18 digits: a longer one is no version (and int() refuses 4,300+).
_NUM = re.compile(r"\d{1,18}(?!\d)")


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


def newest_torch() -> WheelRelease:
    return max(WHEELS, key=lambda w: version_tuple(w.torch))


def torch_newer_than_known(torch_version: str) -> bool:
    """A torch release (major.minor.patch) newer than every row of WHEELS."""
    v = version_tuple(torch_version)[:3]
    return len(v) >= 2 and v > version_tuple(newest_torch().torch)


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


def wheel_targets(torch_version: str, rocm: str) -> Optional[WheelTargets]:
    """The target list of one torch release's wheels on one ROCm index."""
    minor = ".".join(str(p) for p in version_tuple(torch_version)[:2])
    return next((t for t in WHEEL_TARGETS if minor in t.torch and rocm in t.rocm), None)


def added_on_index(gfx: str, rocm: str) -> Optional[WheelRelease]:
    """The torch release from which one index's wheels include `gfx`, when earlier releases on
    that index lack it (rocm6.2.4: gfx1201 from 2.7.0); None otherwise."""
    on_index = sorted((w for w in WHEELS if rocm in w.rocm), key=lambda w: version_tuple(w.torch))
    having = [w for w in on_index
              if (row := wheel_targets(w.torch, rocm)) is not None and gfx in row.targets]
    return having[0] if having and having[0] is not on_index[0] else None


def first_wheel_with(gfx: str) -> Optional[tuple[WheelRelease, str, WheelTargets]]:
    """(torch release, index, target row) of the first official wheel compiled for `gfx`."""
    for wheel in sorted(WHEELS, key=lambda w: version_tuple(w.torch)):
        for rocm in sorted(wheel.rocm, key=version_tuple):
            row = wheel_targets(wheel.torch, rocm)
            if row is not None and gfx in row.targets:
                return wheel, rocm, row
    return None


def _newest_targets(rocm: str) -> IndexTargets:
    newest = max((w for w in WHEELS if rocm in w.rocm), key=lambda w: version_tuple(w.torch))
    minor = ".".join(str(p) for p in version_tuple(newest.torch)[:2])
    row = next(t for t in WHEEL_TARGETS if minor in t.torch and rocm in t.rocm)
    return IndexTargets(rocm, row.targets, row.source, row.verified)


# What `pip install torch --index-url .../rocmX.Y` gives today, from 6.0 on (older indexes:
# WHEEL_TARGETS).
INDEX_TARGETS: tuple[IndexTargets, ...] = tuple(
    _newest_targets(r) for r in ("6.0", "6.1", "6.2", "6.2.4", "6.3", "6.4", "7.0", "7.1", "7.2",
                                 "7.14"))
