"""Which ROCm is installed: the shared fact behind the OS, kernel and install checks.

ROCm records its release in several places, depending on age and layout:

- `<root>/.info/version`, written by rocm-core (classic `/opt/rocm-X.Y.Z`): "6.3.4-76" in
  older releases (release, then build number), "X.Y.Z" in newer ones
  (https://github.com/ROCm/rocm-core/blob/master/CMakeLists.txt);
- `/opt/rocm/core/.info/version` in the TheRock "Core SDK" layout (ROCm 7.14 and later),
  where `/opt/rocm/core` links to `/opt/rocm/core-X.Y`;
- `<root>/include/rocm-core/rocm_version.h` (older: `include/rocm_version.h`), whose
  `ROCM_VERSION_MAJOR/MINOR/PATCH` defines and `ROCM_BUILD_INFO` string come from
  https://github.com/ROCm/rocm-core/blob/master/rocm_version.h.in.

Distributions that package ROCm under /usr record no `.info/version`; their version files
are read by facts/rocm_root.py, which also decides where ROCm is and its install kind.

By hand: `cat /opt/rocm/.info/version /opt/rocm/core/.info/version; ls -d /opt/rocm*;
rocm-sdk path --root`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host
from rocmdoctor.kb.rocm_support import version_key

OPT_ROCM = "/opt/rocm"
ALTERNATIVES_ROCM = "/etc/alternatives/rocm"

_VERSION_LINE = re.compile(
    r"^(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?(?:\.\d+)?(?:-([0-9A-Za-z][0-9A-Za-z._~+]*))?$")
# Numbers are bounded ({1,9}): a longer one is no version, and int() refuses 4,300+ digits.
_HEADER_DEFINE = re.compile(r"^\s*#\s*define\s+ROCM_VERSION_(MAJOR|MINOR|PATCH)\s+(\d{1,9})\b",
                            re.MULTILINE)
_HEADER_BUILD = re.compile(r'^\s*#\s*define\s+ROCM_BUILD_INFO\s+"[^"-]*-(\d+)\b', re.MULTILINE)
_DIR_VERSION = re.compile(r"^(?:rocm|core)-(\d+\.\d+(?:\.\d+)?)$")

CMAKE_VERSION_FILE = ("https://github.com/Kitware/CMake/blob/master/Modules/"
                      "BasicConfigVersion-SameMajorVersion.cmake.in")
_CMAKE_VERSION = re.compile(r'^\s*set\s*\(\s*PACKAGE_VERSION\s+"?(\d{1,4})\.(\d{1,4})'
                            r'(?:\.(\d{1,6}))?', re.MULTILINE)
_PEP440_RELEASE = re.compile(r"^\s*v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?")
# Install kinds: how ROCm got onto the machine, which decides how a fix installs anything.
KIND_SYSTEM = "system packages"  # AMD's repository: /opt/rocm-X.Y.Z, /opt/rocm
KIND_NEWER = "newer system packages"  # AMD's TheRock-built packages: /opt/rocm/core-X.Y
KIND_PYTHON = "Python packages"  # pip-installed ROCm SDK (site-packages/_rocm_sdk_*)
KIND_DISTRO = "distribution packages"  # the distribution's own (/usr; Arch's /opt/rocm)
KIND_STANDALONE = "standalone"  # a tree built or unpacked by hand
KIND_TARBALL = "TheRock tarball"  # a TheRock tarball's install/ folder (ROCm/ROCm#5773)
KIND_TORCH = "bundled with torch"  # the ROCm libraries a torch wheel carries in torch/lib
# Arch Linux's and Frugalware's own rocm-core keep AMD's layout under /opt/rocm
# (https://archlinux.org/packages/extra/x86_64/rocm-core/files; Frugalware's rocm-core 6.4.1
# file list: /opt/rocm/.info/version, /opt/rocm/include/rocm-core/rocm_version.h).
OPT_ROCM_DISTROS = ("arch", "frugalware")
ROOT_VARIABLES = ("ROCM_PATH", "ROCM_HOME", "ROCM_DIR")
CORE_DIR = re.compile(r"^/opt/rocm/core(?:-\d+(?:\.\d+)*)?(?:/|$)")


@dataclass(frozen=True)
class RocmInstall:
    version: str            # "6.3.4" (release, without the build suffix "-76")
    build: Optional[str]    # "76"
    root: str               # "/opt/rocm-6.3.4" or "/opt/rocm"
    source: str             # the file it was read from

    @property
    def key(self) -> tuple[int, int, int]:
        return version_key(self.version)

    @property
    def series(self) -> str:
        """'6.3' for 6.3.4."""
        return ".".join(self.version.split(".")[:2])


def parse_version_file(text: str) -> Optional[tuple[str, Optional[str]]]:
    """(release, build) from a `.info/version` text, or None. Never raises."""
    for line in text.splitlines():
        m = _VERSION_LINE.match(line.strip())
        if m:
            major, minor, patch, build = m.groups()
            return f"{int(major)}.{int(minor)}.{int(patch or 0)}", build
    return None


def parse_version_header(text: str) -> Optional[tuple[str, Optional[str]]]:
    """(release, build) from rocm_version.h's defines, or None. Never raises."""
    parts = {name: int(value) for name, value in _HEADER_DEFINE.findall(text)}
    if "MAJOR" not in parts or "MINOR" not in parts:
        return None
    build = _HEADER_BUILD.search(text)
    version = f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', 0)}"
    return version, build.group(1) if build else None


def parse_cmake_version(text: str) -> Optional[str]:
    """"6.0.0" from a CMake package version file's `set(PACKAGE_VERSION "6.0.0")`. Never
    raises."""
    m = _CMAKE_VERSION.search(text)
    if m is None:
        return None
    major, minor, patch = m.groups()
    return f"{int(major)}.{int(minor)}.{int(patch or 0)}"


def release_of_package(version: str) -> Optional[str]:
    """"7.0.0" from a pip version such as 7.0.0rc20250731 or 7.15.0a20260630. Never raises."""
    m = _PEP440_RELEASE.match(version or "")
    if m is None:
        return None
    major, minor, patch = m.groups()
    return f"{int(major)}.{int(minor)}.{int(patch or 0)}"


def real_path(host: Host, path: str, _depth: int = 0) -> str:
    """`path` with every symlink resolved through host.stat (a path that is absent stays)."""
    path = posixpath.normpath(path)
    if path == "/" or _depth > 32:
        return path
    parent, name = posixpath.split(path)
    parent = real_path(host, parent, _depth + 1)
    here = posixpath.join(parent, name)
    info = host.stat(here)
    if info is not None and info.type == "symlink" and info.target:
        target = posixpath.join(parent, info.target)  # an absolute target replaces parent
        return real_path(host, target, _depth + 1)
    return here


def read_install(host: Host, root: str) -> Optional[RocmInstall]:
    """The ROCm release installed at `root`, from the first place that records it."""
    root = root.rstrip("/") or "/"
    for rel, base in ((".info/version", root), ("core/.info/version", root + "/core")):
        path = f"{root}/{rel}"
        text = host.read_file(path)
        parsed = parse_version_file(text) if text else None
        if parsed:
            return RocmInstall(parsed[0], parsed[1], real_path(host, base), path)
    for rel in ("include/rocm-core/rocm_version.h", "include/rocm_version.h"):
        path = f"{root}/{rel}"
        text = host.read_file(path)
        parsed = parse_version_header(text) if text else None
        if parsed:
            return RocmInstall(parsed[0], parsed[1], real_path(host, root), path)
    return None


def _candidate_roots(host: Host) -> list[str]:
    roots = [OPT_ROCM, *host.glob("/opt/rocm-*"), *host.glob("/opt/rocm/core-*")]
    for var in ("ROCM_PATH", "ROCM_HOME"):
        value = (host.env.get(var) or "").strip()
        if value.startswith("/"):
            roots.append(value.rstrip("/") or "/")
    return list(dict.fromkeys(roots))


def all_rocm_installs(host: Host) -> list[RocmInstall]:
    """Every ROCm install found (one per real folder), newest first."""

    def compute() -> list[RocmInstall]:
        found: dict[str, RocmInstall] = {}
        for root in _candidate_roots(host):
            install = read_install(host, root)
            if install is None:
                install = from_folder_name(host, root)
            if install is not None and install.root not in found:
                found[install.root] = install
        return sorted(found.values(), key=lambda i: (i.key, i.root), reverse=True)

    return host.memo("rocm:all_installs", compute)


def from_folder_name(host: Host, root: str) -> Optional[RocmInstall]:
    """A versioned folder (/opt/rocm-6.2.0) that records its release nowhere else."""
    m = _DIR_VERSION.match(posixpath.basename(root))
    info = host.stat(root) if m else None
    if m is None or info is None or info.type != "dir":
        return None
    version = ".".join((m.group(1).split(".") + ["0"])[:3])
    return RocmInstall(version, None, real_path(host, root), "the folder name " + root)


def installed_rocm(host: Host) -> Optional[RocmInstall]:
    """The system's ROCm release (facts/rocm_root.py, where ROCm is discovered)."""
    from rocmdoctor.facts.rocm_root import installed_rocm as discovered

    return discovered(host)
