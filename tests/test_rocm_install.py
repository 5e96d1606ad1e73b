"""rocm-install and the shared fact behind it (rocmdoctor.facts.rocm_version)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.rocm_install import POST_INSTALL, RocmInstallCheck, link_chain
from rocmdoctor.facts.rocm_version import (
    RocmInstall,
    all_rocm_installs,
    distro_rocm_evidence,
    installed_rocm,
    parse_version_file,
    parse_version_header,
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
        Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4")])


def test_therock_install_passes() -> None:
    env = {"PATH": "/opt/rocm/core/bin:/opt/rocm/core-7.14/lib/llvm/bin:/usr/bin"}
    assert check(therock_host(env)) == expected(
        Status.PASS, "ROCm 7.14.0 at /opt/rocm/core-7.14", [])


def side_by_side(env: dict[str, str]) -> SnapshotHost:
    files = classic_files()
    files["/opt/rocm-6.2.4/.info/version"] = "6.2.4\n"  # second install (synthetic)
    paths = {**CLASSIC_PATHS}
    paths["/etc/alternatives/rocm"] = link("/opt/rocm-6.3.4")
    return host_of(files=files, paths=paths, env=env)


def test_two_installs_side_by_side_are_information() -> None:
    host = side_by_side({"PATH": "/opt/rocm/bin:/usr/bin"})
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4 (2 installs)", [
        Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
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
        [Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
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


def test_rocm_path_that_does_not_exist_warns_and_stale_path_entry_is_a_hint() -> None:
    host = host_of(files=classic_files(), paths=CLASSIC_PATHS,
                   env={"ROCM_PATH": "/opt/rocm-5.7.1", "PATH": "/opt/rocm-5.7.1/bin:/usr/bin"})
    assert check(host) == expected(
        Status.WARN, "ROCm 6.3.4 at /opt/rocm-6.3.4: ROCM_PATH=/opt/rocm-5.7.1 does not exist",
        [Finding.info("/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.4"),
         Finding.error("ROCM_PATH=/opt/rocm-5.7.1 does not exist"),
         Finding.hint("PATH names /opt/rocm-5.7.1/bin, which does not exist")],
        Fix("Point the environment at one ROCm install (put these lines in your shell "
            "profile to keep them); to switch /opt/rocm itself run "
            "`sudo update-alternatives --config rocm` (needs root).",
            commands=("export ROCM_PATH=/opt/rocm-6.3.4",)),
    )


def test_no_opt_rocm_is_a_hint() -> None:
    host = host_of(files={"/opt/rocm-6.3.4/.info/version": version_value(CLASSIC)},
                   paths=AMDGPU)
    assert check(host) == expected(Status.PASS, "ROCm 6.3.4 at /opt/rocm-6.3.4", [
        Finding.hint("/opt/rocm does not exist; tools that assume it will not find ROCm")])


def test_none_installed_on_an_amd_machine_warns_with_the_install_command() -> None:
    probe = {"executable": "/usr/bin/python3", "version": "3.10.12",
             "torch": {"imported": True, "version": "2.1.2+rocm6.1.3",
                       "hip": "6.1.40093-bd86f1708", "cuda": None}}
    host = host_of(paths=AMDGPU, python=probe)
    assert check(host) == expected(
        Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH)",
        [Finding.hint("PyTorch's ROCm wheels bundle their own ROCm user-space libraries, so "
                      "training can work without a system ROCm; rocminfo, rocm-smi and hipcc "
                      "need one"),
         Finding.info("torch 2.1.2+rocm6.1.3 carries HIP 6.1.40093-bd86f1708")],
        Fix("Install the amdgpu-install package for your distribution as the quick-start "
            "guide shows, then install ROCm with it.",
            commands=("sudo amdgpu-install --usecase=rocm",), needs_root=True),
        source=QUICK_START)


def test_distro_packaged_rocm_passes() -> None:
    host = host_of(paths={**AMDGPU, "/usr/share/doc/rocminfo": {"type": "dir"}})
    assert check(host) == expected(
        Status.PASS, "ROCm from the distribution's packages (under /usr), no /opt/rocm",
        [Finding.info("found /usr/share/doc/rocminfo"),
         Finding.info("AMD's compatibility tables cover its own /opt/rocm packages, not "
                      "distribution builds")])


def test_skipped_without_amd_hardware_or_rocm() -> None:
    result = check(host_of(paths={"/usr/share/doc/rocminfo": {"type": "dir"}}))
    assert result == expected(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found",
                              [])


def test_reads_only_what_it_should() -> None:
    """A strict snapshot: every path outside the capture the check asks for is listed here."""
    data = make_snapshot(files=classic_files(), paths=CLASSIC_PATHS,
                         env={"PATH": "/opt/rocm/bin:/usr/bin"})
    absent = ["/dev/kfd"] + [f"{root}/{rel}" for root in ("/opt/rocm/core",
                                                          "/etc/alternatives/rocm")
                             for rel in (".info/version", "core/.info/version",
                                         "include/rocm-core/rocm_version.h",
                                         "include/rocm_version.h")]
    host = SnapshotHost(data, strict=True, absent=absent)
    assert check(host).summary == "ROCm 6.3.4 at /opt/rocm-6.3.4"


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
