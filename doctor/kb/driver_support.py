"""AMD's kernel driver (amdgpu-dkms): the ROCm user space each driver release is supported with,
and which release a loaded module belongs to.

- KMD_SUPPORT is AMD's "AMD GPU Driver (amdgpu) / Supported ROCm versions" table, row for row.
  Drivers up to 6.4 are numbered after the ROCm release they came with; from ROCm 7.0 on the
  driver has its own numbers (30.10 with ROCm 7.0, 30.20 with 7.1, 30.30 with 7.2, 31.x after).
- MODULE_RELEASES maps what /sys/module/amdgpu/version shows (the module's own version, the
  first field of the amdgpu-dkms package version) to the driver release. AMD publishes no such
  table: the pairs come from the package names in AMD's repository, where the release is the
  version's suffix (amdgpu-dkms 6.16.6.30200100 is driver 30.20.1; 6.12.12.60404 is ROCm
  6.4.4's driver).
- PREVIEW_DRIVERS: the 7.9-7.13 technology previews are not in the table; their own release
  notes name the drivers they were tested with, where they do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

AMDGPU_DOCS_MATRIX = ("https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/"
                      "compatibility/compatibility-matrix.html")
# The older home of the same table ("This page has moved"), which stopped at the 6.4 driver.
INSTALL_ON_LINUX_MATRIX = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/"
                           "reference/user-kernel-space-compat-matrix.html")
RN_3120 = ("https://instinct.docs.amd.com/projects/amdgpu-docs/en/31.20.0-preview/"
           "documentation/release-notes.html")
OLLAMA_6685 = "https://github.com/ollama/ollama/issues/6685"
ROCM_6413 = "https://github.com/ROCm/ROCm/issues/6413"
RN_790 = "https://github.com/ROCm/ROCm/releases/tag/therock-7.9.0"
RN_710 = "https://rocm.docs.amd.com/en/docs-7.10.0/about/release-notes.html"

# "Starting from ROCm 6.4.0, forward and backward compatibility between the AMD GPU Driver
# (amdgpu) and ROCm is provided up to a year apart ... For earlier ROCm releases, the
# compatibility is provided for +/- 2 releases." (AMDGPU_DOCS_MATRIX)
KMD_ONE_YEAR_RULE_FROM = (6, 4)


def _pool(release: str) -> str:
    return f"https://repo.radeon.com/amdgpu/{release}/ubuntu/pool/main/a/amdgpu-dkms/"


@dataclass(frozen=True)
class KmdSupport:
    """One row of AMD's driver / user-space table."""

    kmd: str  # "6.2" for the 6.2.x driver, "30.20" for 30.20.x
    user_space: tuple[str, ...]  # ROCm major.minor releases
    source: str


def _row(kmd: str, user_space: str) -> KmdSupport:
    return KmdSupport(kmd, tuple(user_space.split()), AMDGPU_DOCS_MATRIX)


# Newest first, as AMD prints it ("31.50.x", "7.0.x, 7.1.x, 7.2.x, 7.14.x, 10.0.0" ...).
KMD_SUPPORT: tuple[KmdSupport, ...] = (
    _row("31.50", "7.0 7.1 7.2 7.14 10.0"),
    _row("31.40", "7.0 7.1 7.2 7.14 10.0"),
    _row("30.30", "6.3 6.4 7.0 7.1 7.2 7.14 10.0"),
    _row("30.20", "6.3 6.4 7.0 7.1 7.2 7.14 10.0"),
    _row("30.10", "6.2 6.3 6.4 7.0 7.1 7.2 7.14 10.0"),
    _row("6.4", "6.1 6.2 6.3 6.4 7.0 7.1 7.2"),
    _row("6.3", "6.1 6.2 6.3 6.4 7.0"),
    _row("6.2", "6.0 6.1 6.2 6.3 6.4 7.0"),
    _row("6.1", "5.7 6.0 6.1 6.2 6.3 6.4"),
    _row("6.0", "5.6 5.7 6.0 6.1 6.2"),
    _row("5.7", "5.5 5.6 5.7 6.0 6.1"),
    _row("5.6", "5.4 5.5 5.6 5.7 6.0"),
    _row("5.5", "5.3 5.4 5.5 5.6 5.7"),
    _row("5.4", "5.2 5.3 5.4 5.5 5.6"),
    _row("5.3", "5.1 5.2 5.3 5.4 5.5"),
)

# Driver releases AMD published that its table leaves out: 31.10, 31.20 and 31.30 are called
# preview releases ("31.20.0 is a preview release", 31.30.0 release notes).
UNLISTED_DRIVERS: tuple[str, ...] = ("31.10", "31.20", "31.30")


@dataclass(frozen=True)
class ModuleRelease:
    """A /sys/module/amdgpu/version value and the driver release whose package carries it."""

    module: str  # "6.16.6"
    driver: str  # "30.20"
    source: str
    verified: bool = True  # False: seen on a host, not in an AMD package name or document


MODULE_RELEASES: tuple[ModuleRelease, ...] = (
    ModuleRelease("6.0.5", "5.5", _pool("5.5")),  # amdgpu-dkms_6.0.5.50500, 5.5.1: .50501
    ModuleRelease("6.2.4", "5.7", _pool("5.7.1")),  # 6.2.4.50701; 5.7.3: 6.2.4.50703
    ModuleRelease("6.3.6", "6.0", _pool("6.0.2")),  # 6.3.6.60002-1718217
    ModuleRelease("6.7.0", "6.1", _pool("6.1.2")),  # 6.7.0.60102-1781449
    # "ROCk module version 6.8.5 is loaded" on a ROCm 6.2 host; no package name seen.
    ModuleRelease("6.8.5", "6.2", OLLAMA_6685, verified=False),
    ModuleRelease("6.10.5", "6.3", _pool("6.3.4")),  # 6.10.5.60304-2125197
    ModuleRelease("6.12.12", "6.4", _pool("6.4.4")),  # 6.4: .60400, 6.4.1: .60401, 6.4.4: .60404
    ModuleRelease("6.14.14", "30.10", _pool("30.10.2")),  # 30.10: .30100000, 30.10.2: .30100200
    ModuleRelease("6.16.6", "30.20", _pool("30.20.1")),  # 30.20.0: .30200000, 30.20.1: .30200100
    ModuleRelease("6.16.13", "30.30", _pool("30.30.4")),  # 30.30.3: .30300300, 30.30.4: .30300400
    # 31.20.0 notes: "the DKMS package version moves from 6.18.4 to 6.19.0".
    ModuleRelease("6.18.4", "31.10", RN_3120),
    ModuleRelease("6.19.0", "31.20", RN_3120),
    ModuleRelease("6.19.4", "31.30", _pool("31.30")),  # 6.19.4.31300000-2337710
    ModuleRelease("6.19.14", "31.40", _pool("31.40")),  # 6.19.14.31400000 (also ROCm#6413)
)

# The driver each ROCm release installs with amdgpu-install, for a module number the table
# above does not know: up to 6.4 the driver carries the ROCm number; 7.0.x came with 30.10.x,
# 7.1.x with 30.20.x, 7.2.x with 30.30.x (the newest driver each release's column of the ROCm
# compatibility matrix lists).
BUNDLED_DRIVERS: tuple[tuple[str, str, str], ...] = (
    ("7.0", "30.10", "https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/"
                     "compatibility-matrix.html"),
    ("7.1", "30.20", "https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/"
                     "compatibility-matrix.html"),
    ("7.2", "30.30", "https://rocm.docs.amd.com/en/docs-7.2.3/compatibility/"
                     "compatibility-matrix.html"),
)


@dataclass(frozen=True)
class PreviewDrivers:
    """The drivers a technology-preview release's notes list."""

    rocm: str  # "7.10"
    drivers: tuple[str, ...]
    source: str


PREVIEW_DRIVERS: tuple[PreviewDrivers, ...] = (
    PreviewDrivers("7.9", ("30.10",), RN_790),  # "30.10, 30.10.1, 30.10.2"
    PreviewDrivers("7.10", ("30.20", "30.10"), RN_710),  # "30.20.0, 30.10.2, 30.10.1, 30.10.0"
)
# The ROCm 10.0.0 and 10.1.0 release notes ("Kernel driver and firmware bundle support") render
# their driver table from ROCm/rocm-docs docs/data/driver-firmware-support.yaml; every stored
# revision of it lists, for Instinct and Radeon, AMD GPU Driver 31.50.0, 31.40.1, 31.40.0,
# 31.30.0, 31.20.0, 31.10.0, 30.30.3-30.30.0, 30.20.1, 30.20.0, 30.10.2-30.10.0. It names the
# 31.10-31.30 previews the compatibility-matrix rows leave out.
DRIVER_FIRMWARE_YAML = ("https://github.com/ROCm/rocm-docs/blob/"
                        "384a5ef4fd748dbc5494171e0021a3f8171f480e/docs/data/"
                        "driver-firmware-support.yaml")
_NOTES_10X = ("31.50", "31.40", "31.30", "31.20", "31.10", "30.30", "30.20", "30.10")
RELEASE_NOTE_DRIVERS: tuple[PreviewDrivers, ...] = (
    PreviewDrivers("10.0", _NOTES_10X, DRIVER_FIRMWARE_YAML),
    PreviewDrivers("10.1", _NOTES_10X, DRIVER_FIRMWARE_YAML),
)
# The 7.9-7.13 technology-preview stream ("versions 7.9 and later represent the technology
# preview release stream", ROCm 7.9.0 notes) up to 7.14, where TheRock releases took over.
PREVIEW_STREAM = ((7, 9), (7, 13))

# A component of at most 18 digits: a longer one is no version (and int() refuses 4,300+).
_NUM = re.compile(r"\d{1,18}(?!\d)")


def version_numbers(text: str) -> tuple[int, ...]:
    """Leading dotted integers of a version string; () when it has none. Never raises."""
    parts: list[int] = []
    for piece in text.strip().split("+", 1)[0].split("-", 1)[0].split("."):
        m = _NUM.match(piece)
        if m is None:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


_v = version_numbers


def module_release(module_version: str) -> Optional[ModuleRelease]:
    """The driver release of a /sys/module/amdgpu/version value, when the table knows it."""
    want = _v(module_version)[:3]
    return next((r for r in MODULE_RELEASES if _v(r.module) == want), None) if want else None


def module_newer_than_known(module_version: str) -> bool:
    want = _v(module_version)[:3]
    return bool(want) and want > max(_v(r.module) for r in MODULE_RELEASES)


def driver_of_rocm(rocm: str) -> Optional[str]:
    """The driver release amdgpu-install brings with a ROCm release ("6.2.4" -> "6.2")."""
    v = _v(rocm)[:2]
    if len(v) < 2:
        return None
    if (5, 3) <= v <= (6, 4):
        return f"{v[0]}.{v[1]}"
    return next((d for r, d, _ in BUNDLED_DRIVERS if _v(r) == v), None)


def kmd_row(driver: str) -> Optional[KmdSupport]:
    want = _v(driver)[:2]
    return next((r for r in KMD_SUPPORT if _v(r.kmd) == want), None)


def kmd_supports(driver: str, user_space: str) -> Optional[bool]:
    """Whether AMD supports a driver release with a user-space release (None: not in the table)."""
    return kmd_verdict(driver, user_space).tested


@dataclass(frozen=True)
class KmdVerdict:
    tested: Optional[bool]  # None: the tables cannot say
    # "table", "preview-notes", "driver-newer", "driver-unlisted", "driver-unknown",
    # "user-newer", "user-preview", "user-unknown"
    basis: str
    listed: tuple[str, ...]  # the user space (or, for a preview, the drivers) AMD lists
    source: str


def newest_user_space() -> tuple[int, ...]:
    return max([_v(u) for r in KMD_SUPPORT for u in r.user_space]
               + [_v(p.rocm) for p in RELEASE_NOTE_DRIVERS])


def kmd_verdict(driver: str, user_space: str) -> KmdVerdict:
    """AMD's word on a driver release with a ROCm user-space release, or why there is none."""
    drv, usr = _v(driver)[:2], _v(user_space)[:2]
    if len(usr) < 2:
        return KmdVerdict(None, "user-unknown", (), AMDGPU_DOCS_MATRIX)
    if len(drv) < 2:
        return KmdVerdict(None, "driver-unknown", (), AMDGPU_DOCS_MATRIX)
    if PREVIEW_STREAM[0] <= usr <= PREVIEW_STREAM[1]:
        notes = next((p for p in PREVIEW_DRIVERS if _v(p.rocm) == usr), None)
        if notes is None:
            return KmdVerdict(None, "user-preview", (), AMDGPU_DOCS_MATRIX)
        return KmdVerdict(any(_v(d) == drv for d in notes.drivers), "preview-notes",
                          notes.drivers, notes.source)
    notes = next((p for p in RELEASE_NOTE_DRIVERS if _v(p.rocm) == usr), None)
    if notes is not None:
        if drv > max(_v(d) for d in notes.drivers):
            return KmdVerdict(None, "driver-newer", (), notes.source)
        return KmdVerdict(any(_v(d) == drv for d in notes.drivers), "release-notes",
                          notes.drivers, notes.source)
    row = kmd_row(driver)
    if row is None:
        if drv > max(_v(r.kmd) for r in KMD_SUPPORT):
            return KmdVerdict(None, "driver-newer", (), AMDGPU_DOCS_MATRIX)
        if any(_v(d) == drv for d in UNLISTED_DRIVERS):
            return KmdVerdict(None, "driver-unlisted", (), AMDGPU_DOCS_MATRIX)
        return KmdVerdict(None, "driver-unknown", (), AMDGPU_DOCS_MATRIX)
    if usr > newest_user_space():
        return KmdVerdict(None, "user-newer", row.user_space, row.source)
    return KmdVerdict(any(_v(u) == usr for u in row.user_space), "table", row.user_space,
                      row.source)
