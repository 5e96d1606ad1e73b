"""rocm-permissions: the ROCm tree is readable by the user and not world-writable."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rocmdoctor.checks.rocm_permissions import CHMOD_DOCS, RocmPermissions
from rocmdoctor.host import Host
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, host_of, make_snapshot

ROOT = "/opt/rocm-6.3.4"
VERSION = fixture_text("rocm-info-version-6.3.4-76-classic-layout.txt").strip()
FIX_TEXT = ("Give everyone read (and enter/run) access to the ROCm tree and take write access "
            "away from others. Needs root.")


def entry(kind: str, mode: str, readable: bool = True, executable: bool = True,
          target: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"type": kind, "mode": mode, "owner": "root", "group": "root",
                         "uid": 0, "gid": 0, "readable": readable, "writable": False,
                         "executable": executable}
    if target:
        d["target"] = target
    return d


def tree(overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """A healthy ROCm 6.3.4 tree as `ls -l` shows one: 0755 folders, links to the libraries.

    `overrides` maps paths relative to the root ("" is the root) to other stat facts.
    """
    paths = {
        ROOT: entry("dir", "0755"),
        ROOT + "/bin": entry("dir", "0755"),
        ROOT + "/lib": entry("dir", "0755"),
        ROOT + "/bin/rocminfo": entry("file", "0755"),
        ROOT + "/lib/libamdhip64.so": entry("symlink", "0777", target="libamdhip64.so.6"),
        ROOT + "/lib/libhsa-runtime64.so": entry("symlink", "0777",
                                                 target="libhsa-runtime64.so.1"),
    }
    for rel, value in (overrides or {}).items():
        paths[ROOT + rel] = value
    return paths


def machine(paths: dict[str, dict[str, Any]]) -> Host:
    return host_of(files={ROOT + "/.info/version": VERSION}, paths=paths)


def check(host: Host) -> CheckResult:
    return replace(run_one(RocmPermissions(), host), duration_ms=0)


def expected(status: Status, summary: str, findings: list[Finding],
             fix: Fix | None = None) -> CheckResult:
    return CheckResult("rocm-permissions", "ROCm files readable and not world-writable",
                       status, summary, tuple(findings), fix, CHMOD_DOCS,
                       depends=("rocm-install",))


def test_healthy_tree_passes() -> None:
    assert check(machine(tree())) == expected(
        Status.PASS, "6 ROCm paths under /opt/rocm-6.3.4 are readable by alice and none is "
        "world-writable", [])


def test_world_writable_folder_fails() -> None:
    paths = tree({"/lib": entry("dir", "0777")})
    assert check(machine(paths)) == expected(
        Status.FAIL, "1 world-writable ROCm path(s) under /opt/rocm-6.3.4",
        [Finding.error("/opt/rocm-6.3.4/lib is world-writable (mode 0777, owner root): any "
                       "local user can change what GPU programs load")],
        Fix(FIX_TEXT, commands=("sudo chmod o-w /opt/rocm-6.3.4/lib",), needs_root=True))


def test_sticky_world_writable_folder_and_symlinks_are_not_flagged() -> None:
    paths = tree({"/bin": entry("dir", "1777")})
    assert check(machine(paths)).status is Status.PASS


def test_a_setgid_world_writable_folder_is_flagged() -> None:
    # Only the sticky bit (1777, as /tmp) keeps others from replacing files; setgid (2777) does not.
    paths = tree({"/lib": entry("dir", "2777")})
    assert check(machine(paths)) == expected(
        Status.FAIL, "1 world-writable ROCm path(s) under /opt/rocm-6.3.4",
        [Finding.error("/opt/rocm-6.3.4/lib is world-writable (mode 2777, owner root): any "
                       "local user can change what GPU programs load")],
        Fix(FIX_TEXT, commands=("sudo chmod o-w /opt/rocm-6.3.4/lib",), needs_root=True))


def test_a_tree_with_only_its_root_folder_counts_one_path() -> None:
    # rocm-core alone: the version file's folder, no bin or lib yet.
    assert check(machine({ROOT: entry("dir", "0755")})) == expected(
        Status.PASS, "1 ROCm path under /opt/rocm-6.3.4 is readable by alice and none is "
        "world-writable",
        [Finding.hint(f"{ROOT}{rel} does not exist") for rel in (
            "/bin", "/lib", "/bin/rocminfo", "/lib/libamdhip64.so", "/lib/libhsa-runtime64.so")])


def test_unreadable_root_fails_with_recursive_chmod() -> None:
    closed = entry("dir", "0750", readable=False, executable=False)
    paths = tree({
        "": closed, "/bin": closed, "/lib": closed,
        "/bin/rocminfo": entry("file", "0755", readable=False, executable=False),
        "/lib/libamdhip64.so": entry("symlink", "0777", readable=False,
                                     target="libamdhip64.so.6"),
        "/lib/libhsa-runtime64.so": entry("symlink", "0777", readable=False,
                                          target="libhsa-runtime64.so.1"),
    })
    assert check(machine(paths)) == expected(
        Status.FAIL, "alice cannot use 6 ROCm path(s) under /opt/rocm-6.3.4",
        [Finding.error("alice cannot read or enter /opt/rocm-6.3.4 (mode 0750, owner "
                       "root:root)"),
         Finding.error("alice cannot read or enter /opt/rocm-6.3.4/bin (mode 0750, owner "
                       "root:root)"),
         Finding.error("alice cannot read or enter /opt/rocm-6.3.4/lib (mode 0750, owner "
                       "root:root)"),
         Finding.error("alice cannot read or run /opt/rocm-6.3.4/bin/rocminfo (mode 0755, "
                       "owner root:root)"),
         Finding.error("alice cannot read /opt/rocm-6.3.4/lib/libamdhip64.so (mode 0777, "
                       "owner root:root)"),
         Finding.error("alice cannot read /opt/rocm-6.3.4/lib/libhsa-runtime64.so (mode 0777, "
                       "owner root:root)")],
        Fix(FIX_TEXT, commands=("sudo chmod -R a+rX /opt/rocm-6.3.4",), needs_root=True))


def test_both_problems_give_both_commands_and_missing_files_are_hints() -> None:
    paths = tree({"/bin/rocminfo": entry("file", "0757"),
                  "/lib": entry("dir", "0750", readable=False, executable=False)})
    del paths[ROOT + "/lib/libhsa-runtime64.so"]
    assert check(machine(paths)) == expected(
        Status.FAIL, "alice cannot use 1 ROCm path(s); 1 world-writable ROCm path(s) under "
        "/opt/rocm-6.3.4",
        [Finding.error("alice cannot read or enter /opt/rocm-6.3.4/lib (mode 0750, owner "
                       "root:root)"),
         Finding.error("/opt/rocm-6.3.4/bin/rocminfo is world-writable (mode 0757, owner "
                       "root): any local user can change what GPU programs load"),
         Finding.hint("/opt/rocm-6.3.4/lib/libhsa-runtime64.so does not exist")],
        Fix(FIX_TEXT, commands=("sudo chmod -R a+rX /opt/rocm-6.3.4",
                                "sudo chmod o-w /opt/rocm-6.3.4/bin/rocminfo"),
            needs_root=True))


def test_skipped_without_rocm() -> None:
    host = host_of(paths={"/sys/module/amdgpu": entry("dir", "0755")})
    assert check(host) == expected(Status.SKIP, "no ROCm install found", [])


def test_reads_only_what_it_should() -> None:
    data = make_snapshot(files={ROOT + "/.info/version": VERSION}, paths=tree())
    absent = [f"/opt/rocm/{rel}" for rel in (
        ".info/version", "core/.info/version", "include/rocm-core/rocm_version.h",
        "include/rocm_version.h")] + ["/opt/rocm"]
    assert check(SnapshotHost(data, strict=True, absent=absent)).status is Status.PASS
