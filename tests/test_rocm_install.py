"""rocm-install and the shared fact behind it (rocmdoctor.facts.rocm_version)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.rocm_install import POST_INSTALL, RocmInstallCheck, link_chain
from rocmdoctor.facts.rocm_root import distro_rocm_evidence, installed_rocm
from rocmdoctor.facts.rocm_version import (
    RocmInstall,
    all_rocm_installs,
    parse_cmake_version,
    parse_version_file,
    parse_version_header,
    release_of_package,
)
from rocmdoctor.host import Host
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.rocm_support import QUICK_START
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, host_of, make_snapshot

CLASSIC = "rocm-info-version-6.3.4-76-classic-layout.txt"
THEROCK = "rocm-info-version-7.14.0-therock-core-layout.txt"
AMDGPU = {"/sys/module/amdgpu": {"type": "dir", "mode": "0755", "readable": True,
                                 "executable": True}}


def version_value(name: str) -> str:
    """The file content a capture shows: its last line (the lines before are the command)."""
    return fixture_text(name).strip().splitlines()[-1] + "\n"


def link(target: str) -> dict[str, Any]:
    return {"type": "symlink", "mode": "0777", "owner": "root", "group": "root", "uid": 0,
            "gid": 0, "readable": True, "writable": False, "executable": True,
            "target": target}


def classic_files() -> dict[str, str]:
    # A live capture records the file under both names it was read by.
    value = version_value(CLASSIC)
    return {"/opt/rocm/.info/version": value, "/opt/rocm-6.3.4/.info/version": value}


CLASSIC_PATHS = {"/opt/rocm": link("/etc/alternatives/rocm"),
                 "/etc/alternatives/rocm": link("/opt/rocm-6.3.4"), **AMDGPU}


def therock_host(env: dict[str, str] | None = None) -> SnapshotHost:
    value = version_value(THEROCK)
    return host_of(files={"/opt/rocm/core/.info/version": value,
                          "/opt/rocm/core-7.14/.info/version": value},
                   paths={"/opt/rocm/core": link("core-7.14"), **AMDGPU}, env=env)


def root(path: str, version: str, how: str = "/opt/rocm",
         kind: str = "system packages") -> Finding:
    """The finding that says where ROCm is (rocmdoctor.facts.rocm_version.rocm_root)."""
    return Finding.info(f"ROCm root: {path} (ROCm {version}; found by {how}; {kind})")


OPT_634 = root("/opt/rocm", "6.3.4")


def check(host: Host) -> CheckResult:
    return replace(run_one(RocmInstallCheck(), host), duration_ms=0)


def expected(status: Status, summary: str, findings: list[Finding], fix: Fix | None = None,
             source: str = POST_INSTALL) -> CheckResult:
    return CheckResult("rocm-install", "ROCm installation", status, summary, tuple(findings),
                       fix, source)


# --- the version files ----------------------------------------------------------------------

def test_real_classic_version_file_parses_release_and_build() -> None:
    assert version_value(CLASSIC) == "6.3.4-76\n"
    assert parse_version_file(version_value(CLASSIC)) == ("6.3.4", "76")
    # The whole capture (with its `$ cat` line and blank line) still yields the value.
    assert parse_version_file(fixture_text(CLASSIC)) == ("6.3.4", "76")


def test_real_therock_version_file_has_no_build() -> None:
    assert parse_version_file(fixture_text(THEROCK)) == ("7.14.0", None)


def test_version_file_forms() -> None:
    assert parse_version_file("6.4.1.1\n") == ("6.4.1", None)  # VERSION_POINT form
    assert parse_version_file("7.2\n") == ("7.2.0", None)
    assert parse_version_file("") is None
    assert parse_version_file("not a version\n/opt/rocm-6.3.4\n") is None


def test_version_header_defines() -> None:
    # rocm_version.h as rocm-core's rocm_version.h.in renders it (values for 6.1.2).
    header = ('#define ROCM_VERSION_MAJOR   6\n#define ROCM_VERSION_MINOR   1\n'
              '#define ROCM_VERSION_PATCH   2\n'
              '#define ROCM_BUILD_INFO\t     "6.1.2.60102-119-abcdef"\n')
    assert parse_version_header(header) == ("6.1.2", "119")
    assert parse_version_header('#include "rocm-core/rocm_version.h"\n') is None


@given(st.text())
def test_version_parsers_never_raise(text: str) -> None:
    parse_version_file(text)
    parse_version_header(text)


# --- the shared fact ------------------------------------------------------------------------

def test_classic_layout_resolves_through_alternatives() -> None:
    host = host_of(files=classic_files(), paths=CLASSIC_PATHS)
    rocm = RocmInstall("6.3.4", "76", "/opt/rocm-6.3.4", "/opt/rocm/.info/version")
    assert installed_rocm(host) == rocm
    assert all_rocm_installs(host) == [rocm]
    assert link_chain(host, "/opt/rocm") == ["/opt/rocm", "/etc/alternatives/rocm",
                                             "/opt/rocm-6.3.4"]


def test_therock_core_layout() -> None:
    rocm = RocmInstall("7.14.0", None, "/opt/rocm/core-7.14", "/opt/rocm/core/.info/version")
    host = therock_host()
    assert installed_rocm(host) == rocm
    assert all_rocm_installs(host) == [rocm]
    assert rocm.series == "7.14"


def test_header_and_folder_name_fallbacks() -> None:
    header = "#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 1\n"
    host = host_of(files={"/opt/rocm-6.1.0/include/rocm-core/rocm_version.h": header},
                   dirs={"/opt/rocm-5.7.1": ["bin", "lib"]})
    assert all_rocm_installs(host) == [
        RocmInstall("6.1.0", None, "/opt/rocm-6.1.0",
                    "/opt/rocm-6.1.0/include/rocm-core/rocm_version.h"),
        RocmInstall("5.7.1", None, "/opt/rocm-5.7.1", "the folder name /opt/rocm-5.7.1"),
    ]
    assert installed_rocm(host) == all_rocm_installs(host)[0]  # no /opt/rocm: the newest


def test_distro_rocm_evidence() -> None:
    host = host_of(paths={"/usr/share/doc/rocminfo": {"type": "dir"},
                          "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5": {"type": "file"}})
    assert distro_rocm_evidence(host) == ["/usr/lib/x86_64-linux-gnu/libamdhip64.so.5",
                                          "/usr/share/doc/rocminfo"]
    assert installed_rocm(host) is None


# --- the check ------------------------------------------------------------------------------

def test_classic_install_passes() -> None:
    host = host_of(files=classic_files(), paths=CLASSIC_PATHS,
                   env={"PATH": "/opt/rocm/bin:/usr/bin",
                        "LD_LIBRARY_PATH": "/opt/rocm/lib"})
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4", [
        OPT_634, Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4")])


def test_therock_install_passes() -> None:
    env = {"PATH": "/opt/rocm/core/bin:/opt/rocm/core-7.14/lib/llvm/bin:/usr/bin"}
    assert check(therock_host(env)) == expected(
        Status.PASS, "ROCm 7.14.0 at /opt/rocm/core-7.14",
        [root("/opt/rocm", "7.14.0", kind="newer system packages")])


def side_by_side(env: dict[str, str]) -> SnapshotHost:
    files = classic_files()
    files["/opt/rocm-6.2.4/.info/version"] = "6.2.4\n"  # second install (synthetic)
    paths = {**CLASSIC_PATHS}
    paths["/etc/alternatives/rocm"] = link("/opt/rocm-6.3.4")
    return host_of(files=files, paths=paths, env=env)


def test_two_installs_side_by_side_are_information() -> None:
    host = side_by_side({"PATH": "/opt/rocm/bin:/usr/bin"})
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4 (2 installs)", [
        OPT_634, Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
        Finding.info("2 ROCm installs side by side: 6.3.4 (/opt/rocm-6.3.4), "
                     "6.2.4 (/opt/rocm-6.2.4)"),
    ])


def test_rocm_path_and_search_paths_naming_another_install_warn() -> None:
    host = side_by_side({"ROCM_PATH": "/opt/rocm-6.2.4",
                         "PATH": "/opt/rocm-6.2.4/bin:/opt/rocm/bin:/usr/local/bin:/usr/bin",
                         "LD_LIBRARY_PATH": "/opt/rocm-6.2.4/lib"})
    assert check(host) == expected(
        Status.WARN,
        "ROCm 6.2.4 at /opt/rocm-6.2.4 (2 installs): ROCM_PATH names a different install "
        "than /opt/rocm; PATH mixes ROCm installs; LD_LIBRARY_PATH points at another ROCm "
        "install",
        [root("/opt/rocm-6.2.4", "6.2.4", "ROCM_PATH"),
         Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
         Finding.info("2 ROCm installs side by side: 6.3.4 (/opt/rocm-6.3.4), "
                      "6.2.4 (/opt/rocm-6.2.4)"),
         Finding.error("ROCM_PATH=/opt/rocm-6.2.4 is ROCm 6.2.4 but /opt/rocm is ROCm 6.3.4 "
                       "(/opt/rocm-6.3.4)"),
         Finding.error("PATH holds ROCm 6.3.4 (/opt/rocm-6.3.4), 6.2.4 (/opt/rocm-6.2.4); "
                       "/opt/rocm is ROCm 6.3.4 (/opt/rocm-6.3.4)"),
         Finding.error("LD_LIBRARY_PATH holds ROCm 6.2.4 (/opt/rocm-6.2.4); /opt/rocm is "
                       "ROCm 6.3.4 (/opt/rocm-6.3.4)")],
        Fix("Point the environment at one ROCm install (put these lines in your shell "
            "profile to keep them); to switch /opt/rocm itself run "
            "`sudo update-alternatives --config rocm` (needs root).",
            commands=("export ROCM_PATH=/opt/rocm-6.3.4",
                      "export PATH=/opt/rocm-6.3.4/bin:/usr/local/bin:/usr/bin",
                      "export LD_LIBRARY_PATH=/opt/rocm-6.3.4/lib")),
    )


def test_rocm_path_and_path_naming_a_removed_release_warn() -> None:
    host = host_of(files=classic_files(), paths=CLASSIC_PATHS,
                   env={"ROCM_PATH": "/opt/rocm-5.7.1", "PATH": "/opt/rocm-5.7.1/bin:/usr/bin"})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.3.4 at /opt/rocm-6.3.4: ROCM_PATH=/opt/rocm-5.7.1 does not exist; "
        "PATH names a ROCm release that is not installed",
        [Finding.info("ROCm root: /opt/rocm (ROCm 6.3.4; found by /opt/rocm; system packages)"),
         Finding.info("/opt/rocm was chosen: the system's default ROCm folder"),
         Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
         Finding.error("ROCM_PATH=/opt/rocm-5.7.1 does not exist"),
         Finding.error("PATH names /opt/rocm-5.7.1/bin: ROCm 5.7.1 is not installed")],
        Fix("Point the environment at one ROCm install (put these lines in your shell "
            "profile to keep them); to switch /opt/rocm itself run "
            "`sudo update-alternatives --config rocm` (needs root).",
            commands=("export ROCM_PATH=/opt/rocm-6.3.4", "export PATH=/usr/bin")),
    )


def test_no_opt_rocm_is_a_hint() -> None:
    host = host_of(files={"/opt/rocm-6.3.4/.info/version": version_value(CLASSIC)},
                   paths=AMDGPU)
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4", [
        root("/opt/rocm-6.3.4", "6.3.4", "the newest ROCm install (no /opt/rocm)"),
        Finding.hint("/opt/rocm does not exist; tools that assume it will not find ROCm")])


def test_none_installed_on_an_amd_machine_warns_with_the_install_command() -> None:
    probe = {"executable": "/usr/bin/python3", "version": "3.10.12",
             "torch": {"imported": True, "version": "2.1.2+rocm6.1.3",
                       "hip": "6.1.40093-bd86f1708", "cuda": None}}
    host = host_of(paths=AMDGPU, python=probe)
    assert check(host) == expected(
        Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH, the "
        "distribution's release files under /usr)",
        [Finding.hint("PyTorch's ROCm wheels bundle their own ROCm user-space libraries, so "
                      "training can work without a system ROCm; rocminfo, rocm-smi and hipcc "
                      "need one"),
         Finding.info("torch 2.1.2+rocm6.1.3 carries HIP 6.1.40093-bd86f1708")],
        Fix("Install the amdgpu-install package for your distribution as the quick-start "
            "guide shows, then install ROCm with it.",
            commands=("sudo amdgpu-install --usecase=rocm",), needs_root=True),
        source=QUICK_START)


def test_a_stray_doc_folder_under_usr_is_no_rocm_install() -> None:
    # Debian's rocminfo package alone (/usr/share/doc/rocminfo) records no ROCm release.
    host = host_of(paths={**AMDGPU, "/usr/share/doc/rocminfo": {"type": "dir"}})
    assert check(host) == expected(
        Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH, the "
        "distribution's release files under /usr)",
        [Finding.hint("PyTorch's ROCm wheels bundle their own ROCm user-space libraries, so "
                      "training can work without a system ROCm; rocminfo, rocm-smi and hipcc "
                      "need one"),
         Finding.error("/usr holds /usr/share/doc/rocminfo but no ROCm release record "
                       "(rocm_version.h, HIP's CMake version file): without one a library or "
                       "tool is not counted as a ROCm install")],
        Fix("Install the amdgpu-install package for your distribution as the quick-start "
            "guide shows, then install ROCm with it.",
            commands=("sudo amdgpu-install --usecase=rocm",), needs_root=True),
        source=QUICK_START)


def test_skipped_without_amd_hardware_or_rocm() -> None:
    result = check(host_of(paths={"/usr/share/doc/rocminfo": {"type": "dir"}}))
    assert result == expected(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found",
                              [])


def test_reads_only_what_it_should() -> None:
    """A strict snapshot: every path outside the capture the check asks for is listed here."""
    data = make_snapshot(files=classic_files(), paths=CLASSIC_PATHS,
                         env={"PATH": "/opt/rocm/bin:/usr/bin"})
    absent = ["/dev/kfd"] + [f"{r}/{rel}" for r in ("/opt/rocm/core", "/etc/alternatives/rocm")
                             for rel in (".info/version", "core/.info/version",
                                         "include/rocm-core/rocm_version.h",
                                         "include/rocm_version.h")]
    # The install kind (Arch's own packages keep /opt/rocm) and the loader's configuration.
    absent += ["/etc/os-release", "/usr/lib/os-release", "/etc/ld.so.conf"]
    host = SnapshotHost(data, strict=True, absent=absent)
    assert check(host).summary == "ROCm 6.3.4 at /opt/rocm-6.3.4"


# --- leftovers of other installs, and where ROCm is -----------------------------------------

def test_real_stale_hip_path_without_an_opt_rocm_link() -> None:
    # ROCm#6285: HIP_PATH=/opt/rocm-7.2.3/hip from an earlier install; no /opt/rocm link.
    text = fixture_text("hipconfig-stale-hip-path-warning-hip-version-file-not-found-opt-rocm-7.2.3-no-opt-rocm-link-gfx1102.txt")
    hip_path = re.search(r'"(/opt/rocm-7\.2\.3/hip)/share/hip/version" not found', text).group(1)  # type: ignore[union-attr]
    host = host_of(files={"/opt/rocm-7.2.3/.info/version": "7.2.3\n"}, paths=AMDGPU,
                   env={"HIP_PATH": hip_path})
    assert check(host) == expected(
        Status.WARN, "ROCm 7.2.3 at /opt/rocm-7.2.3: HIP_PATH=/opt/rocm-7.2.3/hip does not exist",
        [root("/opt/rocm-7.2.3", "7.2.3", "the newest ROCm install (no /opt/rocm)"),
         Finding.hint("/opt/rocm does not exist; tools that assume it will not find ROCm"),
         Finding.error("HIP_PATH=/opt/rocm-7.2.3/hip does not exist: a leftover of an earlier "
                       "install (hipconfig and clang look for HIP there)")],
        Fix("Point the environment at one ROCm install (put these lines in your shell profile "
            "to keep them); to switch /opt/rocm itself run `sudo update-alternatives --config "
            "rocm` (needs root).", ("unset HIP_PATH",)))


def test_real_hip_platform_of_an_old_release_is_a_hint() -> None:
    # ROCm#1140: ROCm 3.5's hipconfig printed "HIP_PLATFORM : hcc".
    text = fixture_text("hipconfig-rocm-path-points-to-nonexistent-opt-rocm-versioned-hip-base-rocm3.5.txt")
    value = re.search(r"^HIP_PLATFORM : (\S+)$", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    host = host_of(files=classic_files(), paths=CLASSIC_PATHS, env={"HIP_PLATFORM": value})
    result = check(host)
    assert result.status is Status.PASS
    assert result.findings[-1] == Finding.hint(
        "HIP_PLATFORM=hcc is a value of old HIP releases; current HIP knows amd and nvidia")
    nvidia = check(host_of(files=classic_files(), paths=CLASSIC_PATHS,
                           env={"HIP_PLATFORM": "nvidia"}))
    assert (nvidia.status, nvidia.fix.commands if nvidia.fix else ()) == (
        Status.WARN, ("unset HIP_PLATFORM",))


def test_real_stale_ld_so_conf_entry_is_a_hint() -> None:
    # ROCm#1156: /etc/ld.so.conf.d/hsa-rocr-dev.conf names /opt/rocm/hsa/lib; only
    # /opt/rocm-3.5.1 exists.
    body = fixture_text("ld-so-conf-d-hsa-rocr-dev-conf-stale-opt-rocm-path-versioned-install-rocm3.5.txt")
    conf = body.split("\n", 1)[1]
    host = host_of(files={"/opt/rocm-3.5.1/.info/version": "3.5.1\n",
                          "/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n",
                          "/etc/ld.so.conf.d/hsa-rocr-dev.conf": conf}, paths=AMDGPU)
    assert check(host).findings[-1] == Finding.hint(
        "/etc/ld.so.conf.d/hsa-rocr-dev.conf names /opt/rocm/hsa/lib, which does not exist "
        "(left by an install that is gone)")


def test_dangling_opt_rocm_link_with_installs_left() -> None:
    host = host_of(files={"/opt/rocm-6.3.4/.info/version": "6.3.4\n"},
                   paths={**AMDGPU, "/opt/rocm": link("/opt/rocm-6.2.0")})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.3.4 at /opt/rocm-6.3.4: /opt/rocm points at /opt/rocm-6.2.0, which "
        "does not exist",
        [root("/opt/rocm-6.3.4", "6.3.4", "the newest ROCm install (no /opt/rocm)"),
         Finding.info("passed over: /opt/rocm links to /opt/rocm-6.2.0, which does not exist"),
         Finding.info("/opt/rocm-6.3.4 was chosen: no /opt/rocm holds a release; the newest "
                      "/opt/rocm-X.Y.Z"),
         Finding.info("/opt/rocm -> /opt/rocm-6.2.0"),
         Finding.error("/opt/rocm points at /opt/rocm-6.2.0, which does not exist")],
        Fix("Point /opt/rocm at an installed release with update-alternatives (needs root), then "
            "the environment at it.", ("sudo update-alternatives --config rocm",),
            needs_root=True))


def test_opt_rocm_on_an_older_release_is_a_hint() -> None:
    files = {"/opt/rocm/.info/version": "6.2.4\n", "/opt/rocm-6.2.4/.info/version": "6.2.4\n",
             "/opt/rocm-6.3.4/.info/version": "6.3.4\n"}
    host = host_of(files=files, paths={**AMDGPU, "/opt/rocm": link("/opt/rocm-6.2.4")})
    assert Finding.hint("/opt/rocm is ROCm 6.2.4, not the newest installed (6.3.4): builds and "
                        "tools that use /opt/rocm get the older one") in check(host).findings


def test_real_core_layout_with_alternatives_is_newer_system_packages() -> None:
    # TheRock PR #4160: /opt/rocm holds core-8.1, core -> /etc/alternatives/core.
    listing = fixture_text("ls-l-opt-rocm-core-8.1-alternatives-symlinks-therock-native-packages.txt")
    assert "core -> /etc/alternatives/core" in listing and " core-8.1" in listing
    host = host_of(files={"/opt/rocm/core/.info/version": "8.1.0\n",
                          "/opt/rocm/core-8.1/.info/version": "8.1.0\n"},
                   paths={**AMDGPU, "/opt/rocm/core": link("/etc/alternatives/core"),
                          "/etc/alternatives/core": link("/opt/rocm/core-8.1")})
    result = check(host)
    assert result.summary == "ROCm 8.1.0 at /opt/rocm/core-8.1"
    assert result.findings[0] == root("/opt/rocm", "8.1.0", kind="newer system packages")


def test_real_core_layout_without_the_alternatives_links() -> None:
    # TheRock#7156: without update-alternatives no /opt/rocm/core link is made.
    text = fixture_text("update-alternatives-post-install-opt-rocm-core-10.0-symlinks-amdrocm-core-sdk-TRUNCATED.txt")
    assert "using /opt/rocm/core-10.0 to provide /opt/rocm/core (core)" in text
    host = host_of(files={"/opt/rocm/core-10.0/.info/version": "10.0.0\n"}, paths=AMDGPU)
    result = check(host)
    assert result.findings[0] == root("/opt/rocm/core-10.0", "10.0.0",
                                      "the newest /opt/rocm/core-X.Y", "newer system packages")


def test_real_fedora_distro_rocm_gives_its_version() -> None:
    # ROCm/hip#3520: Fedora 40's /usr/lib64/cmake/hip/hip-config.cmake, version 6.0.0; the
    # version file beside it is written by CMake's write_basic_package_version_file.
    text = fixture_text("rpm-qa-rocm-fedora40-mixed-el9-packages-and-cmake-hip-config-version-6.0.0-usr-lib64-cmake-hip.txt")
    version = re.search(r"/usr/lib64/cmake/hip/hip-config.cmake, version: (\S+)", text).group(1)  # type: ignore[union-attr]
    cmake = f'set(PACKAGE_VERSION "{version}")\n\nif(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)\n'
    assert parse_cmake_version(cmake) == "6.0.0"
    host = host_of(files={"/usr/lib64/cmake/hip/hip-config-version.cmake": cmake},
                   paths={**AMDGPU, "/usr/lib64/libamdhip64.so.6": {"type": "file"}})
    assert installed_rocm(host) == RocmInstall("6.0.0", None, "/usr",
                                               "/usr/lib64/cmake/hip/hip-config-version.cmake")
    result = check(host)
    assert (result.status, result.summary, result.findings) == (
        Status.PASS, "ROCm 6.0.0 at /usr",
        (root("/usr", "6.0.0", "the distribution's ROCm version files", "distribution packages"),))


def test_pip_installed_sdk_is_the_root_and_python_packages() -> None:
    # TheRock#6534: `rocm-sdk path --root` needs rocm[devel]; without it the core's folder.
    assert "rocm[devel]" in fixture_text("rocm-sdk-path-root-error-devel-not-installed-libraries-only-rocm7.14.txt")
    core = "/home/u/.venv/lib/python3.12/site-packages/_rocm_sdk_core"
    probe = {"executable": "/home/u/.venv/bin/python", "packages": {"rocm-sdk-core": "7.14.0"},
             "rocm_sdk": {"_rocm_sdk_core": core, "_rocm_sdk_devel": None},
             "torch": {"imported": False, "error": "No module named 'torch'"}}
    host = host_of(paths={**AMDGPU, core: {"type": "dir"}}, python=probe)
    assert check(host) == expected(Status.PASS, f"ROCm 7.14.0 from Python packages at {core}", [
        root(core, "7.14.0", "rocm-sdk path --root", "Python packages")])


def test_a_stale_hip_path_beside_a_pip_installed_root_is_fixed_in_the_environment() -> None:
    # The pip-installed SDK is the root (found before /opt/rocm); ROCm#6285's leftover HIP_PATH.
    core = "/home/u/.venv/lib/python3.12/site-packages/_rocm_sdk_core"
    probe = {"executable": "/home/u/.venv/bin/python", "packages": {"rocm-sdk-core": "7.14.0"},
             "rocm_sdk": {"_rocm_sdk_core": core, "_rocm_sdk_devel": None},
             "torch": {"imported": False, "error": "No module named 'torch'"}}
    host = host_of(files=classic_files(), paths={**CLASSIC_PATHS, core: {"type": "dir"}},
                   python=probe, env={"HIP_PATH": "/opt/rocm-7.2.3/hip"})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.3.4 at /opt/rocm-6.3.4: HIP_PATH=/opt/rocm-7.2.3/hip does not exist",
        [root(core, "7.14.0", "rocm-sdk path --root", "Python packages"),
         Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
         Finding.error("HIP_PATH=/opt/rocm-7.2.3/hip does not exist: a leftover of an earlier "
                       "install (hipconfig and clang look for HIP there)")],
        Fix("Point the environment at one ROCm (put these lines in your shell profile to keep "
            "them); the pip-installed ROCm's folder is what `rocm-sdk path --root` prints.",
            ("unset HIP_PATH",)))


def test_a_hip_path_inside_the_installed_rocm_passes() -> None:
    host = host_of(files=classic_files(), paths={**CLASSIC_PATHS, "/opt/rocm/hip": {"type": "dir"}},
                   env={"HIP_PATH": "/opt/rocm/hip", "PATH": "/opt/rocm/bin:/usr/bin"})
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4", [
        OPT_634, Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4")])


def test_a_hip_path_inside_another_install_warns() -> None:
    files = classic_files()
    files["/opt/rocm-6.2.4/.info/version"] = "6.2.4\n"  # second install (synthetic)
    host = host_of(files=files, paths={**CLASSIC_PATHS, "/opt/rocm-6.2.4": {"type": "dir"}},
                   env={"HIP_PATH": "/opt/rocm-6.2.4"})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.3.4 at /opt/rocm-6.3.4 (2 installs): HIP_PATH names another ROCm "
        "install",
        [OPT_634, Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
         Finding.info("2 ROCm installs side by side: 6.3.4 (/opt/rocm-6.3.4), "
                      "6.2.4 (/opt/rocm-6.2.4)"),
         Finding.error("HIP_PATH=/opt/rocm-6.2.4 is inside /opt/rocm-6.2.4, not ROCm 6.3.4 "
                       "(/opt/rocm-6.3.4)")],
        Fix("Point the environment at one ROCm install (put these lines in your shell profile "
            "to keep them); to switch /opt/rocm itself run `sudo update-alternatives --config "
            "rocm` (needs root).", ("unset HIP_PATH",)))


def test_hip_platform_nvidia_on_a_distribution_rocm_is_fixed_in_the_environment() -> None:
    # Fedora 40's ROCm 6.0.0 under /usr (ROCm/hip#3520's version file), HIP_PLATFORM=nvidia.
    cmake = 'set(PACKAGE_VERSION "6.0.0")\n'
    host = host_of(files={"/usr/lib64/cmake/hip/hip-config-version.cmake": cmake},
                   paths={**AMDGPU, "/usr/lib64/libamdhip64.so.6": {"type": "file"}},
                   env={"HIP_PLATFORM": "nvidia"})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.0.0 at /usr: HIP_PLATFORM=nvidia on an AMD machine",
        [root("/usr", "6.0.0", "the distribution's ROCm version files", "distribution packages"),
         Finding.error("HIP_PLATFORM=nvidia makes hipcc and hipconfig build for NVIDIA GPUs")],
        Fix("Point the environment at the distribution's ROCm (put these lines in your shell "
            "profile to keep them).", ("unset HIP_PLATFORM",)))


def test_rocm_root_option_comes_first() -> None:
    data = make_snapshot(files={**classic_files(), "/opt/rocm-6.2.4/.info/version": "6.2.4\n"},
                         paths=CLASSIC_PATHS, env={"ROCM_PATH": "/opt/rocm-6.3.4"})
    data["rocm_root"] = "/opt/rocm-6.2.4"
    host = SnapshotHost(data)
    assert check(host).findings[0] == root("/opt/rocm-6.2.4", "6.2.4", "--rocm-root")
    data["rocm_root"] = "/nowhere"
    assert check(SnapshotHost(data)).findings[0] == root("/opt/rocm-6.3.4", "6.3.4",
                                                        "ROCM_PATH")
    data["rocm_root"] = 5  # wrong-typed: ignored
    assert check(SnapshotHost(data)).findings[0] == root("/opt/rocm-6.3.4", "6.3.4",
                                                        "ROCM_PATH")


@given(st.text())
def test_version_text_parsers_never_raise(text: str) -> None:
    parse_cmake_version(text)
    release_of_package(text)


def test_pip_release_versions() -> None:
    assert [release_of_package(v) for v in ("7.0.0rc20250731", "7.15.0a20260630", "6.5",
                                             "x")] == ["7.0.0", "7.15.0", "6.5.0", None]


def test_real_debian_distro_rocm_root_is_usr() -> None:
    # CMake#24562: Ubuntu's packages: --rocm-path=/usr, HIP's CMake files under the multiarch
    # /usr/lib/x86_64-linux-gnu.
    text = fixture_text("cmake-hip-lang-config-not-found-debian-ubuntu23.04-libamdhip64-dev-multiarch-usr-lib-x86_64-linux-gnu.txt")
    assert "--rocm-path=/usr" in text
    cmake = 'set(PACKAGE_VERSION "5.2.3")\n'
    data = make_snapshot(files={"/usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake":
                                cmake}, paths={**AMDGPU, "/usr": {"type": "dir"}})
    data["rocm_root"] = "/usr"
    result = check(SnapshotHost(data))
    assert (result.summary, result.findings[0]) == (
        "ROCm 5.2.3 at /usr", root("/usr", "5.2.3", "--rocm-root", "distribution packages"))


@pytest.mark.parametrize("value", ["", " ", "\t", "/", "//", " / ", "opt/rocm"])
def test_a_blank_or_root_rocm_path_does_not_make_a_rocm_machine(
        tmp_path: Path, value: str) -> None:
    """Through `rocmdoctor check --from`: a machine with no GPU and no ROCm, where a job
    script left ROCM_PATH empty (or /, or relative), is a CPU machine with nothing failed."""
    from typer.testing import CliRunner

    from rocmdoctor.cli.app import app
    from rocmdoctor.host.snapshot import save_snapshot

    snap = make_snapshot(env={"ROCM_PATH": value, "PATH": "/usr/bin:/bin"},
                         files={"/etc/os-release": 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\n',
                                "/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro quiet\n"},
                         paths={"/usr/bin": {"type": "dir", "mode": "0755"}})
    path = tmp_path / "snap.json"
    save_snapshot(snap, str(path))
    result = CliRunner().invoke(app, ["check", "--json", "--from", str(path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["platform"] == "cpu"
    assert (data["summary"]["fail"], data["summary"]["error"]) == (0, 0)
