"""Where ROCm is: one discovery for every command (check, report, torch-rocm-match, ...).

The candidates are tried in this order; the first that holds ROCm is the *ROCm root*, and
each one tried before it is named with the reason it was passed over:

1. `--rocm-root`;
2. `$ROCM_PATH`, `$ROCM_HOME`, `$ROCM_DIR`: a value that is not absolute, does not exist or
   holds no ROCm is passed over; when it holds no ROCm but its `install/` folder does, that
   folder is the root (a TheRock tarball unpacks its ROCm there: ROCm/ROCm#5773);
3. the pip-installed ROCm SDK the training Python imports (`rocm-sdk path --root`);
4. `/opt/rocm`; the newest `/opt/rocm/core-X.Y`; the newest `/opt/rocm-X.Y.Z`;
5. a distribution's packages under `/usr`, when they record a release (rocm-core's header,
   HIP's or rocm-core's CMake version file): a library or a tool alone under /usr (Debian's
   rocminfo, a stray libamdhip64) is no ROCm install and is passed over, saying what it holds;
   Fedora's compatibility installs `/usr/lib64/rocm/rocm-X.Y`;
6. with no system ROCm, the ROCm a torch wheel carries in `torch/lib`.

The install kind follows from where the root is and decides how a fix installs anything.

By hand: `echo "$ROCM_PATH" "$ROCM_HOME" "$ROCM_DIR"; rocm-sdk path --root; ls -ld /opt/rocm*
/opt/rocm/core-*; cat /opt/rocm/.info/version; ls /usr/include/rocm_version.h
/usr/include/rocm-core/rocm_version.h /usr/lib*/cmake/hip/hip-config-version.cmake`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.rocm_version import (
    CORE_DIR,
    KIND_DISTRO,
    KIND_NEWER,
    KIND_PYTHON,
    KIND_STANDALONE,
    KIND_SYSTEM,
    KIND_TARBALL,
    KIND_TORCH,
    OPT_ROCM,
    OPT_ROCM_DISTROS,
    ROOT_VARIABLES,
    RocmInstall,
    all_rocm_installs,
    from_folder_name,
    parse_cmake_version,
    parse_version_header,
    read_install,
    real_path,
    release_of_package,
)
from rocmdoctor.host import Host

# The release a distribution's ROCm packages record under /usr, in the order they are read:
# rocm-core's header where upstream installs it; where Fedora's and openSUSE's rocm-core spec
# moves it ("Use the system include path": /usr/include/rocm_version.h, no /usr/.info); the
# CMake version files of rocm-core (%{_libdir}/cmake/rocm-core) and of HIP (Fedora /usr/lib64,
# Debian/Ubuntu multiarch /usr/lib/<triplet>), which CMake's write_basic_package_version_file
# writes as `set(PACKAGE_VERSION "6.0.0")`.
DISTRO_VERSION_FILES = (
    "/usr/include/rocm-core/rocm_version.h",
    "/usr/include/rocm_version.h",
    "/usr/lib64/cmake/rocm-core/rocm-core-config-version.cmake",
    "/usr/lib64/cmake/hip/hip-config-version.cmake",
    "/usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/aarch64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/cmake/hip/hip-config-version.cmake",
)
FEDORA_ROCM_CORE_SPEC = ("https://github.com/r0x0d/fedora-rpm-specs/blob/"
                         "029b14f8e287c3f1589ed49db253e3c7ae58b1e4/specs/rocm-core.spec")
# Fedora's `--with compat` builds install an older release under its own prefix.
FEDORA_COMPAT_GLOB = "/usr/lib64/rocm/rocm-*"
# Files a distribution's ROCm packages leave under /usr: evidence of ROCm files there, which
# without a release record above is no install.
DISTRO_ROCM_PATTERNS = (
    "/usr/lib/x86_64-linux-gnu/libamdhip64.so*",
    "/usr/lib64/libamdhip64.so*",
    "/usr/share/doc/rocminfo",
    "/usr/bin/rocminfo",  # a distribution's rocminfo (koboldcpp-rocm#37)
    "/usr/bin/hipcc",  # Fedora's hipcc rpm (ROCm/HIP-Examples#42)
)
# ROCm/ROCm#5773: "ROCM_PATH set to wherever the actual install is located
# (therock-tarball/install) and not just at therock-tarball".
TARBALL_INSTALL = "https://github.com/ROCm/ROCm/issues/5773"
# TheRock's trees carry share/therock/dist_info.json (`rocm-sdk targets` reads it).
THEROCK_MARK = "share/therock/dist_info.json"

WHY = {
    "--rocm-root": "given with --rocm-root, which comes before every other way",
    "rocm-sdk path --root": "the Python that trains imports this pip-installed ROCm SDK, which "
                            "comes before the system folders",
    OPT_ROCM: "the system's default ROCm folder",
    "the newest /opt/rocm/core-X.Y": "no /opt/rocm holds a release; the newest of AMD's "
                                     "/opt/rocm/core-X.Y packages",
    "the newest ROCm install (no /opt/rocm)": "no /opt/rocm holds a release; the newest "
                                              "/opt/rocm-X.Y.Z",
    "the distribution's ROCm version files": "no ROCm under /opt; the distribution's packages "
                                             "record this release under /usr",
    "Fedora's compatibility install": "no ROCm under /opt or /usr; a Fedora compatibility "
                                      "install",
    "torch's own libraries (torch/lib)": "no system ROCm; torch carries its own in torch/lib",
}


@dataclass(frozen=True)
class RocmRoot:
    """Where ROCm is, how that was decided, and how it was installed."""

    path: str
    found_by: str  # "--rocm-root", "ROCM_PATH", "rocm-sdk path --root", "/opt/rocm" ...
    kind: str  # KIND_SYSTEM, KIND_NEWER, KIND_PYTHON, KIND_DISTRO, KIND_TARBALL ...
    install: Optional[RocmInstall]
    passed_over: tuple[str, ...] = ()  # every candidate tried before it, and why it lost
    # The variable that should name the root instead of what it names now (a tarball's
    # install/ folder): (variable, value).
    should_be: Optional[tuple[str, str]] = None

    @property
    def version(self) -> Optional[str]:
        return self.install.version if self.install else None

    @property
    def why(self) -> str:
        """Why this candidate won: the first of the order that holds ROCm."""
        if self.found_by in ROOT_VARIABLES:
            return (f"${self.found_by} names it, and the environment comes before the "
                    "installed folders")
        if self.found_by.endswith("'s install/ folder"):
            var = self.found_by.split("'", 1)[0]
            return (f"${var} names the folder above it; ROCm is in its install/ folder, "
                    "where a TheRock tarball unpacks")
        return WHY.get(self.found_by, "the first candidate that holds ROCm")


@dataclass(frozen=True)
class Discovery:
    """The chosen root (None: no ROCm anywhere) and every candidate passed over."""

    root: Optional[RocmRoot]
    passed_over: tuple[str, ...]


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


def distro_rocm_evidence(host: Host) -> list[str]:
    """ROCm files under /usr (Debian's rocminfo, a libamdhip64): not an install by themselves."""
    return host.memo(
        "rocm:distro_evidence",
        lambda: sorted({p for pattern in DISTRO_ROCM_PATTERNS for p in host.glob(pattern)}),
    )


def install_kind(host: Host, path: str) -> str:
    """The install kind of a ROCm folder, from where it is."""
    real = real_path(host, path)
    for p in (path.rstrip("/") or "/", real):
        if "/site-packages/" in p + "/" or "/_rocm_sdk_" in p or "/dist-packages/" in p + "/":
            return KIND_PYTHON
    if real == "/usr" or real.startswith("/usr/lib") or path.rstrip("/") == "/usr":
        return KIND_DISTRO
    if CORE_DIR.match(real):
        return KIND_NEWER
    if real == OPT_ROCM or real.startswith("/opt/rocm-") or real.startswith(OPT_ROCM + "/"):
        from rocmdoctor.facts.os_release import read_os_release

        osr = read_os_release(host)
        if osr is not None and any(f in OPT_ROCM_DISTROS for f in osr.families):
            return KIND_DISTRO
        return KIND_SYSTEM
    if host.exists(posixpath.join(real, THEROCK_MARK)):
        return KIND_TARBALL
    return KIND_STANDALONE


def _sdk_install(host: Host, root: str) -> Optional[RocmInstall]:
    from rocmdoctor.facts.torch import torch_info

    package = torch_info(host).packages.get("rocm-sdk-core") or ""
    version = release_of_package(package)
    if version is None:
        return None
    return RocmInstall(version, None, root, f"the pip package rocm-sdk-core {package}")


def torch_rocm_install(host: Host) -> Optional[RocmInstall]:
    """The ROCm a torch wheel carries in torch/lib: its release from the +rocmX.Y tag, else
    from torch.version.hip (kb.hip_builds); None when torch bundles none."""
    from rocmdoctor.facts.torch import torch_info
    from rocmdoctor.kb import hip_builds

    torch = torch_info(host)
    if torch.bundles_rocm is not True or not torch.location:
        return None
    local = (torch.any_version or "").partition("+")[2]
    lib = posixpath.join(torch.location, "lib")
    if local.startswith("rocm") and local[4:5].isdigit():
        version = release_of_package(local[4:])
        if version:
            return RocmInstall(version, None, lib, f"torch {torch.any_version}'s +{local} tag")
    series = hip_builds.rocm_of_hip(torch.hip or "")
    if series is None:
        return RocmInstall("unknown", None, lib, f"torch.version.hip {torch.hip}")
    return RocmInstall(series, None, lib, f"torch.version.hip {torch.hip}")


def _usable(host: Host, value: str) -> Optional[RocmInstall]:
    install = read_install(host, value) or from_folder_name(host, value)
    if install is None and value.rstrip("/") == "/usr":
        install = distro_install(host)
    return install


@dataclass(frozen=True)
class _Choice:
    path: str
    how: str
    install: Optional[RocmInstall]
    should_be: Optional[tuple[str, str]]
    kind: Optional[str]  # forced (a tarball's install/, torch's own), else from the path


def _choose(host: Host, with_python: bool) -> tuple[Optional[_Choice], tuple[str, ...]]:
    """The first candidate that holds ROCm, and the candidates passed over before it."""
    passed: list[str] = []

    def found(path: str, how: str, install: Optional[RocmInstall],
              should_be: Optional[tuple[str, str]] = None,
              kind: Optional[str] = None) -> tuple[Optional[_Choice], tuple[str, ...]]:
        return _Choice(path, how, install, should_be, kind), tuple(passed)

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
        root = value.rstrip("/") or "/"
        install = _usable(host, value)
        # A tree that records no release still counts when it holds a HIP runtime.
        if install is not None or how == "--rocm-root" or host.glob(
                root + "/lib/libamdhip64.so*"):
            return found(root, how, install)
        inner = read_install(host, posixpath.join(root, "install"))
        if inner is not None:
            passed.append(f"{how}={value} holds no ROCm; its install/ folder does "
                          f"(ROCm {inner.version}, where a TheRock tarball unpacks)")
            target = posixpath.join(root, "install")
            return found(target, f"{how}'s install/ folder", inner, (how, target),
                         KIND_TARBALL)
        passed.append(f"{how}={value} holds no ROCm (no .info/version, rocm_version.h or "
                      "lib/libamdhip64.so)")
    if with_python:
        from rocmdoctor.facts.torch import torch_info

        sdk = torch_info(host).rocm_sdk_root
        if sdk:
            return found(sdk, "rocm-sdk path --root", _sdk_install(host, sdk))
    install = read_install(host, OPT_ROCM)
    if install is not None:
        return found(OPT_ROCM, OPT_ROCM, install)
    if host.exists(OPT_ROCM):
        target = real_path(host, OPT_ROCM)
        passed.append(f"{OPT_ROCM} links to {target}, which does not exist"
                      if target != OPT_ROCM and not host.exists(target) else
                      f"{OPT_ROCM} records no ROCm release")
    installs = all_rocm_installs(host)
    cores = [i for i in installs if CORE_DIR.match(i.root)]
    if cores:
        return found(cores[0].root, "the newest /opt/rocm/core-X.Y", cores[0])
    if installs:
        return found(installs[0].root, "the newest ROCm install (no /opt/rocm)", installs[0])
    distro = distro_install(host)
    if distro is not None:
        return found("/usr", "the distribution's ROCm version files", distro)
    evidence = distro_rocm_evidence(host)
    if evidence:
        passed.append(f"/usr holds {', '.join(evidence)} but no ROCm release record "
                      "(rocm_version.h, HIP's CMake version file): without one a library or "
                      "tool is not counted as a ROCm install")
    for compat in sorted(host.glob(FEDORA_COMPAT_GLOB), reverse=True):
        install = read_install(host, compat)
        if install is not None:
            return found(compat, "Fedora's compatibility install", install)
    if with_python:
        bundled = torch_rocm_install(host)
        if bundled is not None:
            return found(bundled.root, "torch's own libraries (torch/lib)", bundled,
                             kind=KIND_TORCH)
    return None, tuple(passed)


def _chosen(host: Host, with_python: bool) -> tuple[Optional[_Choice], tuple[str, ...]]:
    return host.memo(f"rocm:choice:{with_python}", lambda: _choose(host, with_python))


def discover_rocm(host: Host, with_python: bool = True) -> Discovery:
    """Every candidate in the module docstring's order: the chosen root, with its install
    kind, and those passed over. `with_python` asks the Python probe (the pip SDK, torch's own
    ROCm)."""

    def compute() -> Discovery:
        choice, passed = _chosen(host, with_python)
        if choice is None:
            return Discovery(None, passed)
        kind = choice.kind or install_kind(
            host, choice.install.root if choice.install is not None else choice.path)
        return Discovery(RocmRoot(choice.path, choice.how, kind, choice.install, passed,
                                  choice.should_be), passed)

    return host.memo(f"rocm:discovery:{with_python}", compute)


def rocm_root(host: Host, with_python: bool = True) -> Optional[RocmRoot]:
    """Where ROCm is (see the module docstring for the order), and its install kind."""
    return discover_rocm(host, with_python).root


def installed_rocm(host: Host) -> Optional[RocmInstall]:
    """The system's ROCm release: the install at the root discovery finds without the Python
    probe, else /opt/rocm's, else the newest install."""

    def compute() -> Optional[RocmInstall]:
        chosen, _ = _chosen(host, with_python=False)
        if chosen is not None and chosen.install is not None:
            return chosen.install
        install = read_install(host, OPT_ROCM)
        if install is not None:
            return install
        installs = all_rocm_installs(host)
        return installs[0] if installs else None

    return host.memo("rocm:installed", compute)
