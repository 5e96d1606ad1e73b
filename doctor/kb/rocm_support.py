"""Which Linux distributions and kernels each ROCm release supports (AMD's tables, as data).

Every ROCm release row names the compatibility-matrix column it was copied from. Kernel
series are a property of a distribution release (Ubuntu 22.04.5 ships 5.15 GA and 6.8 HWE
whichever ROCm runs on it), so they live in one table keyed by distribution release, each
with the ROCm document that lists them.

Distribution ids and versions are written the way `/etc/os-release` writes `ID` and
`VERSION_ID` (SLES 15 SP6 is `sles` `15.6`), so a machine matches by plain comparison.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

DOCS = "https://rocm.docs.amd.com/en/docs-{v}/compatibility/compatibility-matrix.html"
HISTORICAL_60 = ("https://github.com/ROCm/ROCm/blob/develop/docs/compatibility/"
                 "compatibility-matrix-historical-6.0.csv")
SYSREQ_602 = ("https://rocm.docs.amd.com/projects/install-on-linux/en/docs-6.0.2/reference/"
              "system-requirements.html")
RHEL_KERNELS = "https://access.redhat.com/articles/3078"
MATRIX_LATEST = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"
QUICK_START = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/"
               "quick-start.html")

# The oldest kernel AMD validates on a distribution that ships mainline-numbered kernels:
# every ROCm 6.0-7.2 matrix lists Ubuntu 22.04 (and 20.04.5/.6) with 5.15 as its oldest, and
# so do the OS tables of the 7.9-10.1 releases (Ubuntu 22.04.5, GA 5.15).
# Enterprise distributions (RHEL 8: 4.18, RHEL 9: 5.14, SLES) backport amdgpu, so their
# version numbers are not compared against this floor.
KERNEL_FLOOR = (5, 15)
KERNEL_FLOOR_SOURCE = DOCS.format(v="6.3.1")

# os-release IDs (or ID_LIKE entries) whose kernels carry backported drivers.
ENTERPRISE_FAMILIES = frozenset({"rhel", "centos", "ol", "rocky", "almalinux", "sles", "suse"})

DISTRO_NAMES = {
    "ubuntu": "Ubuntu", "debian": "Debian", "rhel": "RHEL", "sles": "SLES",
    "ol": "Oracle Linux", "rocky": "Rocky Linux", "centos": "CentOS",
    "azurelinux": "Azure Linux",
}


@dataclass(frozen=True)
class DistroKernels:
    """The kernel series AMD lists for one distribution release."""

    distro: str
    version: str
    kernels: tuple[str, ...]  # "5.15" (GA), "6.8" (HWE), ...
    source: str


@dataclass(frozen=True)
class RocmRelease:
    """One compatibility-matrix column: the ROCm versions it covers and their systems."""

    versions: tuple[str, ...]
    systems: tuple[tuple[str, str], ...]  # (os-release ID, VERSION_ID as AMD lists it)
    source: str
    # False: part of the list is inferred (a release note names only what changed); a system
    # missing from it is then not reported as unsupported.
    verified: bool = True


def _k(distro: str, version: str, kernels: str, source: str) -> DistroKernels:
    return DistroKernels(distro, version, tuple(kernels.split()), source)


NOTES = "https://rocm.docs.amd.com/en/docs-{v}/about/release-notes.html"
# AMD's documentation data for the TheRock releases: the revision before 10.1 (its Ubuntu
# entries are 26.04 and 24.04.4, which 10.1.0 replaced).
OS_SUPPORT_YAML = "https://github.com/ROCm/rocm-docs/blob/develop/docs/data/os-support.yaml"
HISTORICAL_615 = ("https://github.com/ROCm/ROCm/blob/1cc3d9fbf02729d697268e7c177a5e6a606ca19e/docs/"
                  "compatibility/compatibility-matrix-historical-6.0.csv")
_M631 = DOCS.format(v="6.3.1")
_M700 = DOCS.format(v="7.0.0")
_M710 = DOCS.format(v="7.1.0")

KERNELS: tuple[DistroKernels, ...] = (
    _k("ubuntu", "20.04.5", "5.15", SYSREQ_602),
    _k("ubuntu", "20.04.6", "5.15", SYSREQ_602),
    _k("ubuntu", "22.04.3", "6.2", SYSREQ_602),
    _k("ubuntu", "22.04.4", "5.15 6.5", _M631),
    _k("ubuntu", "22.04.5", "5.15 6.8", _M631),
    _k("ubuntu", "24.04", "6.8", _M631),
    _k("ubuntu", "24.04.2", "6.8 6.11", _M631),
    _k("ubuntu", "24.04.3", "6.8 6.14", _M700),
    _k("ubuntu", "24.04.4", "6.8 6.17", OS_SUPPORT_YAML),  # GA 6.8; HWE and OEM 6.17
    _k("ubuntu", "24.04.5", "6.8 7.0", NOTES.format(v="10.1.0")),  # GA 6.8; HWE 7.0
    _k("ubuntu", "26.04", "7.0", OS_SUPPORT_YAML),
    _k("ubuntu", "26.04.1", "7.0", NOTES.format(v="10.1.0")),
    _k("rhel", "8.8", "4.18", SYSREQ_602),
    _k("rhel", "8.9", "4.18", _M631),
    _k("rhel", "8.10", "4.18", _M631),
    _k("rhel", "9.2", "5.14", SYSREQ_602),
    _k("rhel", "9.3", "5.14", _M631),
    _k("rhel", "9.4", "5.14", _M631),
    _k("rhel", "9.5", "5.14", _M631),
    _k("rhel", "9.6", "5.14", _M700),
    _k("rhel", "9.7", "5.14", RHEL_KERNELS),
    _k("rhel", "10.0", "6.12", _M710),
    _k("rhel", "9.8", "5.14", OS_SUPPORT_YAML),  # 5.14.0-687
    _k("rhel", "10.1", "6.12", RHEL_KERNELS),
    _k("rhel", "10.2", "6.12", OS_SUPPORT_YAML),  # 6.12.0-211
    _k("centos", "7.9", "3.10", SYSREQ_602),
    _k("sles", "15.4", "5.14", SYSREQ_602),
    _k("sles", "15.5", "5.14", _M631),
    _k("sles", "15.6", "6.4 6.5", _M700),
    _k("sles", "15.7", "6.4", _M700),
    _k("sles", "16.0", "6.12", OS_SUPPORT_YAML),
    _k("ol", "8.9", "5.15", _M631),
    _k("ol", "8.10", "5.15", _M631),
    _k("ol", "8", "5.15", _M700),
    _k("ol", "9", "5.15 6.12", _M710),
    _k("ol", "10", "6.12", _M710),
    _k("rocky", "9", "5.14", _M700),
    _k("debian", "12", "6.1", _M631),
    _k("debian", "13", "6.12", _M710),
    _k("azurelinux", "3.0", "6.6", _M700),
)


def _systems(spec: str) -> tuple[tuple[str, str], ...]:
    """'ubuntu 24.04.2 22.04.5; rhel 9.5' -> (('ubuntu', '24.04.2'), ...)."""
    out: list[tuple[str, str]] = []
    for group in spec.split(";"):
        distro, *versions = group.split()
        out.extend((distro, v) for v in versions)
    return tuple(out)


def _r(versions: str, systems: str, source: str, verified: bool = True) -> RocmRelease:
    return RocmRelease(tuple(versions.split()), _systems(systems), source, verified)


_U22_20 = "ubuntu 22.04.4 22.04.3 20.04.6 20.04.5"
_R71 = ("ubuntu 24.04.3 22.04.5; rhel 10.1 10.0 9.7 9.6 9.4 8.10; sles 15.7; ol 10 9 8; "
        "debian 13 12; rocky 9")
_R63 = "ubuntu 24.04.2 22.04.5; rhel 9.5 9.4 8.10; sles 15.6 15.5; ol 8.10"
# The technology previews: each release's notes list its systems (7.11 adds Debian 13, RHEL 9.4
# and 8.10, SLES 16.0, Oracle Linux 10/9/8 and Rocky 9; 7.12 adds Debian 12; 7.13 adds Ubuntu
# 26.04 and validates 24.04.4 instead of 24.04.3).
_P711 = ("ubuntu 24.04.3 22.04.5; debian 13; rhel 10.1 10.0 9.7 9.6 9.4 8.10; ol 10 9 8; "
         "rocky 9; sles 16.0 15.7")
_P712 = _P711.replace("debian 13", "debian 13 12")
_P713 = _P712.replace("ubuntu 24.04.3 22.04.5", "ubuntu 26.04 24.04.4 22.04.5")
# 7.14 and 10.0 (10.0.0 notes: "Operating system support remains unchanged in this release").
_R714 = ("ubuntu 26.04 24.04.4 22.04.5; debian 13 12; rhel 10.2 10.0 9.8 9.6 9.4 8.10; "
         "ol 10 9 8; rocky 9; sles 16.0 15.7")
# 10.1.0 "adds support for Ubuntu 26.04.1 ... Ubuntu 24.04.5 ... replaces the support for
# Ubuntu 26.04 and Ubuntu 24.04.4"; the other systems are assumed unchanged.
_R101 = _R714.replace("ubuntu 26.04 24.04.4", "ubuntu 26.04.1 24.04.5")

RELEASES: tuple[RocmRelease, ...] = (
    _r("6.0.0 6.0.2",
       "ubuntu 22.04.4 22.04.3 22.04.2 20.04.6 20.04.5; rhel 9.3 9.2 8.9 8.8; sles 15.5 15.4; "
       "centos 7.9", HISTORICAL_60),
    _r("6.1.0", f"{_U22_20}; rhel 9.4 9.3 9.2 8.9 8.8; sles 15.5 15.4; centos 7.9",
       HISTORICAL_60),
    _r("6.1.1 6.1.2",
       f"{_U22_20}; rhel 9.4 9.3 9.2 8.9 8.8; sles 15.5 15.4; centos 7.9; ol 8.9",
       HISTORICAL_60),
    # "ROCm 6.1.5 no longer supports CentOS 7.9"; its CSV column adds Ubuntu 22.04.5.
    _r("6.1.5",
       "ubuntu 22.04.5 22.04.4 22.04.3 20.04.6 20.04.5; rhel 9.4 9.3 9.2 8.9 8.8; "
       "sles 15.5 15.4; ol 8.9", HISTORICAL_615),
    _r("6.2.0", "ubuntu 24.04 22.04.5 22.04.4; rhel 9.4 9.3 8.10 8.9; sles 15.6 15.5; ol 8.9",
       HISTORICAL_60),
    _r("6.2.1 6.2.2 6.2.4",
       "ubuntu 24.04.1 24.04 22.04.5 22.04.4; rhel 9.4 9.3 8.10 8.9; sles 15.6 15.5; ol 8.9",
       HISTORICAL_60),
    _r("6.3.0", _R63, HISTORICAL_60),
    _r("6.3.1", f"{_R63}; debian 12", HISTORICAL_60),
    # "ROCm 6.3.2 adds support for Azure Linux 3.0"; 6.3.3 keeps 6.3.2's column.
    _r("6.3.2 6.3.3", f"{_R63}; debian 12; azurelinux 3.0", HISTORICAL_60),
    _r("6.4.0",
       "ubuntu 24.04.2 22.04.5; rhel 9.5 9.4 8.10; sles 15.6; ol 9 8; debian 12; azurelinux 3.0",
       DOCS.format(v="7.1.1")),
    _r("6.4.2 6.4.3",
       "ubuntu 24.04.2 22.04.5; rhel 9.6 9.4 8.10; sles 15.7 15.6; ol 9 8; debian 12; "
       "azurelinux 3.0", DOCS.format(v="6.4.3")),
    # "There are no other significant changes or feature additions in ROCm 7.0.1 from ROCm
    # 7.0.0" than driver 30.10.1 (7.1.0 matrix footnote).
    _r("7.0.0 7.0.1",
       "ubuntu 24.04.3 22.04.5; rhel 9.6 9.4 8.10; sles 15.7; ol 9 8; debian 12; "
       "azurelinux 3.0; rocky 9", _M700),
    _r("7.0.2",
       "ubuntu 24.04.3 22.04.5; rhel 10.0 9.6 9.4 8.10; sles 15.7; ol 10 9 8; debian 13 12; "
       "azurelinux 3.0; rocky 9", _M710),
    _r("7.1.0",
       "ubuntu 24.04.3 22.04.5; rhel 10.0 9.6 9.4 8.10; sles 15.7; ol 10 9 8; debian 13 12; "
       "rocky 9", DOCS.format(v="7.2.3")),
    _r("7.1.1", _R71, DOCS.format(v="7.1.1")),
    _r("7.2.1 7.2.2 7.2.3", _R71, DOCS.format(v="7.2.3")),
    _r("7.9.0", "ubuntu 24.04.3 22.04.5; rhel 10.0 9.6",
       "https://github.com/ROCm/ROCm/releases/tag/therock-7.9.0"),
    _r("7.10.0", "ubuntu 24.04.3 22.04.5; rhel 10.1 10.0 9.7 9.6 8.10; sles 15.7",
       NOTES.format(v="7.10.0")),
    _r("7.11.0", _P711, NOTES.format(v="7.11.0")),
    _r("7.12.0", _P712, NOTES.format(v="7.12.0")),
    _r("7.13.0", _P713, NOTES.format(v="7.13.0"), verified=False),
    _r("7.14.0 7.14.1", _R714, OS_SUPPORT_YAML),
    _r("10.0.0", _R714, OS_SUPPORT_YAML),
    _r("10.1.0", _R101, NOTES.format(v="10.1.0"), verified=False),
)

# Releases with no matrix column of their own; they are judged by the nearest column of their
# series (release_for), and say so.
NO_COLUMN: dict[str, str] = {
    "6.0.1": "AMD's historical CSV has columns for 6.0.0 and 6.0.2 only",
    "6.1.3": "a Radeon/WSL release, outside the Linux matrix",
    "6.4.1": "AMD's matrix has no stored 6.4.1 column (6.4.1 added RDNA4 GPUs)",
    "6.4.4": "AMD's matrix never got a 6.4.4 column",
    "7.2.0": "no stored 7.2.0 column (the 7.2.3 matrix shows 7.2.3 and 7.2.2/7.2.1)",
    "7.2.4": "no stored 7.2.4 column",
}

# Components of at most 9 digits: a longer one is no version (and int() refuses 4,300+).
_VERSION = re.compile(r"^(\d{1,9})\.(\d{1,9})(?!\d)(?:\.(\d{1,9})(?!\d))?")


def version_key(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version string; (0, 0, 0) when it has none."""
    m = _VERSION.match(version.strip())
    if not m:
        return (0, 0, 0)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


@dataclass(frozen=True)
class ReleaseMatch:
    release: RocmRelease
    column: str  # the matrix column used, e.g. "6.3.1"
    exact: bool  # False when a neighbouring release of the same series stands in


def release_for(rocm_version: str) -> Optional[ReleaseMatch]:
    """The matrix column for a ROCm version: itself, else the nearest of its X.Y series."""
    key = version_key(rocm_version)
    series = [(version_key(v), v, r) for r in RELEASES for v in r.versions
              if version_key(v)[:2] == key[:2]]
    if not series:
        return None
    for k, v, r in series:
        if k == key:
            return ReleaseMatch(r, v, True)
    older = [s for s in series if s[0] < key]
    k, v, r = max(older) if older else min(series)
    return ReleaseMatch(r, v, False)


def newest_release() -> str:
    return max((v for r in RELEASES for v in r.versions), key=version_key)


def oldest_release() -> str:
    return min((v for r in RELEASES for v in r.versions), key=version_key)


def older_than_known(rocm_version: str) -> bool:
    """A ROCm release older than every release these tables list."""
    return version_key(rocm_version) < version_key(oldest_release())


def ever_listed(distro: str, os_version: str) -> bool:
    """Whether any ROCm release these tables list supports this distribution release."""
    return any(matching_systems(r, distro, os_version) for r in RELEASES)


_UBUNTU_LTS = re.compile(r"^\d{1,3}[02468]\.04(?:\.\d+)?$")


def never_listed_text(distro: str, os_version: str, pretty: str) -> Optional[str]:
    """Why a distribution release AMD lists the family of is in no OS list these tables hold:
    a non-LTS Ubuntu (every column lists Ubuntu LTS point releases only), else simply none."""
    if distro not in DISTRO_NAMES or ever_listed(distro, os_version):
        return None
    known = f"{oldest_release()} to {newest_release()}"
    if distro == "ubuntu" and not _UBUNTU_LTS.match(os_version):
        return (f"{pretty} is not an LTS release: no ROCm release this rocmdoctor knows "
                f"({known}) lists it; AMD lists Ubuntu LTS releases only")
    return f"{pretty} is in no OS list of the ROCm releases this rocmdoctor knows ({known})"


def newer_than_known(rocm_version: str) -> bool:
    """A ROCm release newer than every release these tables list."""
    return version_key(rocm_version) > version_key(newest_release())


def version_matches(os_version: str, listed: str) -> bool:
    """Whether an os-release VERSION_ID falls under a listed version.

    Ubuntu's VERSION_ID is "22.04" for every point release (listed "22.04.5"); Oracle and
    Rocky are listed by major ("9") while VERSION_ID is "9.5"; RHEL minors must match.
    """
    return (os_version == listed or os_version.startswith(listed + ".")
            or listed.startswith(os_version + "."))


def matching_systems(release: RocmRelease, distro: str, os_version: str) -> list[str]:
    """The listed versions of `distro` that this machine's VERSION_ID falls under."""
    return [v for d, v in release.systems if d == distro and version_matches(os_version, v)]


def kernels_for(distro: str, versions: Sequence[str]) -> list[DistroKernels]:
    return [k for k in KERNELS if k.distro == distro and k.version in versions]


def display_version(distro: str, version: str) -> str:
    if distro == "sles" and "." in version:
        major, sp = version.split(".", 1)
        return f"{major} SP{sp}"
    return version


def display(distro: str, version: str) -> str:
    return f"{DISTRO_NAMES.get(distro, distro)} {display_version(distro, version)}"


def describe_systems(release: RocmRelease) -> str:
    """'Ubuntu 24.04.2, 22.04.5; RHEL 9.5, 9.4, 8.10; ...' in the matrix's order."""
    groups: dict[str, list[str]] = {}
    for distro, version in release.systems:
        groups.setdefault(distro, []).append(display_version(distro, version))
    return "; ".join(f"{DISTRO_NAMES.get(d, d)} {', '.join(vs)}" for d, vs in groups.items())
