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

Distributions that package ROCm under /usr record no `.info/version`; their HIP CMake
package's `hip-config-version.cmake` (written by CMake's write_basic_package_version_file:
`set(PACKAGE_VERSION "6.0.0")`) or rocm-core's header under /usr/include give the release.

Where ROCm is (`rocm_root`): the first of `--rocm-root`, `$ROCM_PATH` / `$ROCM_HOME` /
`$ROCM_DIR`, the pip-installed ROCm SDK the training Python imports (`rocm-sdk path --root`),
`/opt/rocm`, the newest `/opt/rocm/core-X.Y` (AMD's newer system packages, TheRock RFC0009),
the distribution's files under /usr, and the newest `/opt/rocm-X.Y.Z`.

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

# The release recorded by a distribution's packages under /usr: rocm-core's header, then HIP's
# CMake version file (Fedora /usr/lib64, Debian/Ubuntu multiarch /usr/lib/<triplet>).
DISTRO_VERSION_FILES = (
    "/usr/include/rocm-core/rocm_version.h",
    "/usr/lib64/cmake/hip/hip-config-version.cmake",
    "/usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/aarch64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/cmake/hip/hip-config-version.cmake",
)
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
# Arch Linux's own rocm-core keeps AMD's layout under /opt/rocm
# (https://archlinux.org/packages/extra/x86_64/rocm-core/files).
OPT_ROCM_DISTROS = ("arch",)
ROOT_VARIABLES = ("ROCM_PATH", "ROCM_HOME", "ROCM_DIR")
_CORE_DIR = re.compile(r"^/opt/rocm/core(?:-\d+(?:\.\d+)*)?(?:/|$)")

# Where a distribution's own ROCm packages put things (Debian/Ubuntu, Fedora/SUSE).
DISTRO_ROCM_PATTERNS = (
    "/usr/lib/x86_64-linux-gnu/libamdhip64.so*",
    "/usr/lib64/libamdhip64.so*",
    "/usr/share/doc/rocminfo",
)


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
                install = _from_folder_name(host, root)
            if install is not None and install.root not in found:
                found[install.root] = install
        return sorted(found.values(), key=lambda i: (i.key, i.root), reverse=True)

    return host.memo("rocm:all_installs", compute)


def _from_folder_name(host: Host, root: str) -> Optional[RocmInstall]:
    """A versioned folder (/opt/rocm-6.2.0) that records its release nowhere else."""
    m = _DIR_VERSION.match(posixpath.basename(root))
    info = host.stat(root) if m else None
    if m is None or info is None or info.type != "dir":
        return None
    version = ".".join((m.group(1).split(".") + ["0"])[:3])
    return RocmInstall(version, None, real_path(host, root), "the folder name " + root)


def installed_rocm(host: Host) -> Optional[RocmInstall]:
    """The system's ROCm release: the install at the root `rocm_root` finds without the
    Python probe (--rocm-root, $ROCM_PATH/$ROCM_HOME/$ROCM_DIR, /opt/rocm, the newest
    /opt/rocm/core-X.Y, the distribution's files under /usr), else the newest install."""

    def compute() -> Optional[RocmInstall]:
        chosen = _choose_root(host, with_python=False)
        if chosen is not None and chosen[2] is not None:
            return chosen[2]
        install = read_install(host, OPT_ROCM)
        if install is not None:
            return install
        installs = all_rocm_installs(host)
        return installs[0] if installs else None

    return host.memo("rocm:installed", compute)


def distro_install(host: Host) -> Optional[RocmInstall]:
    """The release of a distribution-packaged ROCm under /usr, from its version files."""

    def compute() -> Optional[RocmInstall]:
        for path in DISTRO_VERSION_FILES:
            text = host.read_file(path)
            if not text:
                continue
            if path.endswith(".h"):
                parsed = parse_version_header(text)
                version = parsed[0] if parsed else None
            else:
                version = parse_cmake_version(text)
            if version:
                return RocmInstall(version, None, "/usr", path)
        return None

    return host.memo("rocm:distro_install", compute)


@dataclass(frozen=True)
class RocmRoot:
    """Where ROCm is, how that was decided, and how it was installed."""

    path: str
    found_by: str  # "--rocm-root", "ROCM_PATH", "rocm-sdk path --root", "/opt/rocm" ...
    kind: str  # KIND_SYSTEM, KIND_NEWER, KIND_PYTHON, KIND_DISTRO, KIND_STANDALONE
    install: Optional[RocmInstall]
    passed_over: tuple[str, ...] = ()  # candidates before it that were not usable, and why

    @property
    def version(self) -> Optional[str]:
        return self.install.version if self.install else None


def install_kind(host: Host, path: str) -> str:
    """The install kind of a ROCm folder, from where it is."""
    real = real_path(host, path)
    for p in (path.rstrip("/") or "/", real):
        if "/site-packages/" in p + "/" or "/_rocm_sdk_" in p or "/dist-packages/" in p + "/":
            return KIND_PYTHON
    if real == "/usr" or real.startswith("/usr/lib") or path.rstrip("/") == "/usr":
        return KIND_DISTRO
    if _CORE_DIR.match(real):
        return KIND_NEWER
    if real == OPT_ROCM or real.startswith("/opt/rocm-") or real.startswith(OPT_ROCM + "/"):
        from rocmdoctor.facts.os_release import read_os_release

        osr = read_os_release(host)
        if osr is not None and any(f in OPT_ROCM_DISTROS for f in osr.families):
            return KIND_DISTRO
        return KIND_SYSTEM
    return KIND_STANDALONE


def _sdk_install(host: Host, root: str) -> Optional[RocmInstall]:
    from rocmdoctor.facts.torch import torch_info

    package = torch_info(host).packages.get("rocm-sdk-core") or ""
    version = release_of_package(package)
    if version is None:
        return None
    return RocmInstall(version, None, root, f"the pip package rocm-sdk-core {package}")


def _choose_root(host: Host, with_python: bool
                 ) -> Optional[tuple[str, str, Optional[RocmInstall], tuple[str, ...]]]:
    """(path, how it was found, its install, candidates passed over) in rocm_root's order."""

    def compute() -> Optional[tuple[str, str, Optional[RocmInstall], tuple[str, ...]]]:
        passed: list[str] = []
        explicit = [("--rocm-root", host.rocm_root or "")]
        explicit += [(var, (host.env.get(var) or "").strip()) for var in ROOT_VARIABLES]
        for how, value in explicit:
            if not value:
                continue
            if not value.startswith("/"):
                passed.append(f"{how}={value} is not an absolute path")
                continue
            if not host.exists(value):
                passed.append(f"{how}={value} does not exist")
                continue
            install = read_install(host, value) or _from_folder_name(host, value)
            if install is None and value.rstrip("/") == "/usr":
                install = distro_install(host)
            root = value.rstrip("/") or "/"
            # A tree that records no release still counts when it holds a HIP runtime.
            if install is None and how != "--rocm-root" and not host.glob(
                    root + "/lib/libamdhip64.so*"):
                passed.append(f"{how}={value} holds no ROCm")
                continue
            return root, how, install, tuple(passed)
        if with_python:
            from rocmdoctor.facts.torch import torch_info

            sdk = torch_info(host).rocm_sdk_root
            if sdk:
                return sdk, "rocm-sdk path --root", _sdk_install(host, sdk), tuple(passed)
        install = read_install(host, OPT_ROCM)
        if install is not None:
            return OPT_ROCM, OPT_ROCM, install, tuple(passed)
        installs = all_rocm_installs(host)
        cores = [i for i in installs if _CORE_DIR.match(i.root)]
        if cores:
            return cores[0].root, "the newest /opt/rocm/core-X.Y", cores[0], tuple(passed)
        if installs:
            return (installs[0].root, "the newest ROCm install (no /opt/rocm)", installs[0],
                    tuple(passed))
        distro = distro_install(host)
        if distro is not None:
            return "/usr", "the distribution's ROCm version files", distro, tuple(passed)
        if distro_rocm_evidence(host):
            return "/usr", "the distribution's ROCm files", None, tuple(passed)
        return None

    return host.memo(f"rocm:root-choice:{with_python}", compute)


def rocm_root(host: Host, with_python: bool = True) -> Optional[RocmRoot]:
    """Where ROCm is (see the module's docstring for the order), and its install kind.
    `with_python` asks the Python probe for a pip-installed ROCm SDK."""

    def compute() -> Optional[RocmRoot]:
        chosen = _choose_root(host, with_python)
        if chosen is None:
            return None
        path, how, install, passed = chosen
        kind = install_kind(host, install.root if install is not None else path)
        return RocmRoot(path, how, kind, install, passed)

    return host.memo(f"rocm:root:{with_python}", compute)


def distro_rocm_evidence(host: Host) -> list[str]:
    """Paths showing a distribution-packaged ROCm under /usr (Debian's rocminfo 5.2.3...)."""
    return host.memo(
        "rocm:distro_evidence",
        lambda: sorted({p for pattern in DISTRO_ROCM_PATTERNS for p in host.glob(pattern)}),
    )
