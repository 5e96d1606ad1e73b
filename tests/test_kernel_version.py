"""kernel-version: the running kernel against the installed ROCm's supported kernels."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.kernel_version import KernelVersion, parse_kernel_release
from rocmdoctor.facts.rocm_root import DISTRO_VERSION_FILES
from rocmdoctor.host import Host
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import rocm_support as kb
from rocmdoctor.kb.rocm_support import (
    DOCS,
    HISTORICAL_60,
    KERNEL_FLOOR_SOURCE,
    MATRIX_LATEST,
    OS_SUPPORT_YAML,
)
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, host_of, make_snapshot
from tests.test_os_release import RHEL_9_4, UBUNTU_18_04_4, UBUNTU_22_04_4

AMDGPU = {"/sys/module/amdgpu": {"type": "dir", "mode": "0755"}}
CLASSIC_VERSION = fixture_text("rocm-info-version-6.3.4-76-classic-layout.txt").strip()
THEROCK_VERSION = fixture_text("rocm-info-version-7.14.0-therock-core-layout.txt").strip()
M631 = DOCS.format(v="6.3.1")
TOO_OLD_FIX = Fix("Move to a supported distribution release and kernel (for Ubuntu 22.04, the "
                  "5.15 GA or HWE kernel), then reboot.", needs_root=True)


def proc_version() -> str:
    """The real /proc/version line of an Ubuntu 18.04 box with amdgpu 3.3 DKMS."""
    body = fixture_text("proc-version-and-dkms-status-vega20-ubuntu18.04-amdgpu3.3.txt")
    return next(line for line in body.splitlines() if line.startswith("Linux version")) + "\n"


def machine(os_release: Optional[str], kernel: str, version_file: Optional[str] = None,
            path: str = "/opt/rocm/.info/version", proc: Optional[str] = None) -> Host:
    files = {}
    if os_release is not None:
        files["/etc/os-release"] = os_release
    if version_file is not None:
        files[path] = version_file
    if proc is not None:
        files["/proc/version"] = proc
    return host_of(files=files, paths=AMDGPU, kernel=kernel)


def check(host: Host) -> CheckResult:
    return replace(run_one(KernelVersion(), host), duration_ms=0)


def expected(status: Status, summary: str, findings: list[Finding], fix: Fix | None = None,
             source: Optional[str] = MATRIX_LATEST) -> CheckResult:
    return CheckResult("kernel-version", "Kernel supported by the installed ROCm", status,
                       summary, tuple(findings), fix, source)


def test_parse_kernel_release_forms() -> None:
    assert parse_kernel_release("6.8.0-45-generic") == (6, 8)
    assert parse_kernel_release("5.14.0-427.el9.x86_64") == (5, 14)
    assert parse_kernel_release(proc_version()) == (5, 0)
    assert parse_kernel_release("") is None
    assert parse_kernel_release("generic") is None


@given(st.text())
def test_parser_never_raises(text: str) -> None:
    parse_kernel_release(text)


def test_real_ubuntu_18_04_kernel_5_0_fails_the_floor() -> None:
    # The capture's box: Ubuntu 18.04.4, 5.0.0-23-generic, amdgpu DKMS, no ROCm version file.
    host = machine(UBUNTU_18_04_4, "5.0.0-23-generic", proc=proc_version())
    assert check(host) == expected(
        Status.FAIL, "kernel 5.0.0-23-generic is too old for current ROCm (6.0-10.1)",
        [Finding.error("kernel 5.0 is older than 5.15, the oldest kernel current ROCm "
                       "(6.0-10.1) supports on a distribution with mainline kernels")],
        TOO_OLD_FIX, source=KERNEL_FLOOR_SOURCE)


def test_kernel_read_from_proc_version_when_uname_is_empty() -> None:
    host = machine(UBUNTU_18_04_4, "", proc=proc_version())
    result = check(host)
    assert (result.status, result.summary) == (
        Status.FAIL, "kernel 5.0.0-23-generic is too old for current ROCm (6.0-10.1)")


def test_validated_hwe_kernel_passes() -> None:
    # Ubuntu 22.04.4 with 6.8.0-52-generic: a real os-release/uname pair; ROCm 6.3.4.
    host = machine(UBUNTU_22_04_4, "6.8.0-52-generic", CLASSIC_VERSION)
    assert check(host) == expected(
        Status.PASS, "kernel 6.8.0-52-generic is validated for ROCm 6.3.4 on Ubuntu 22.04 "
        "(5.15, 6.8)", [], source=M631)


def test_unlisted_kernel_warns_not_validated() -> None:
    # 6.5.0-45-generic on Ubuntu 22.04.4 (an older HWE kernel), ROCm 6.3.4 lists 5.15 and 6.8.
    host = machine(UBUNTU_22_04_4, "6.5.0-45-generic", CLASSIC_VERSION)
    assert check(host) == expected(
        Status.WARN, "kernel 6.5.0-45-generic is not validated for ROCm 6.3.4 on Ubuntu 22.04",
        [Finding.hint("AMD lists 5.15, 6.8 for ROCm 6.3.4 on Ubuntu 22.04")], source=M631)


def test_newer_kernel_than_listed_warns_not_fails() -> None:
    # The real gfx1150 box runs 6.17.0-1012-oem on Ubuntu 24.04.3 (os-release synthetic).
    ubuntu_24_04_3 = UBUNTU_22_04_4.replace("22.04.4", "24.04.3").replace("22.04", "24.04")
    host = machine(ubuntu_24_04_3, "6.17.0-1012-oem", "7.2.3\n")
    assert check(host) == expected(
        Status.WARN, "kernel 6.17.0-1012-oem is not validated for ROCm 7.2.3 on Ubuntu 24.04",
        [Finding.hint("AMD lists 6.8, 6.14 for ROCm 7.2.3 on Ubuntu 24.04")],
        source=DOCS.format(v="7.0.0"))


def test_enterprise_kernel_in_its_series_passes() -> None:
    host = machine(RHEL_9_4, "5.14.0-427.13.1.el9_4.x86_64", "6.4.3\n")
    assert check(host) == expected(
        Status.PASS, "kernel 5.14.0-427.13.1.el9_4.x86_64 is validated for ROCm 6.4.3 on "
        "RHEL 9.4 (5.14)", [], source=M631)


def test_enterprise_clone_is_not_failed_on_its_number() -> None:
    alma = ('NAME="AlmaLinux"\nVERSION="9.4 (Seafoam Ocelot)"\nID="almalinux"\n'
            'ID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n')  # synthetic
    host = machine(alma, "5.14.0-427.13.1.el9_4.x86_64", CLASSIC_VERSION)
    assert check(host) == expected(
        Status.WARN, "kernel 5.14.0-427.13.1.el9_4.x86_64 is not validated for ROCm 6.3.4",
        [Finding.hint("AlmaLinux 9.4 (Seafoam Ocelot) is not in ROCm 6.3.4's list, so its "
                      "kernel is not validated")], source=HISTORICAL_60)


def test_therock_7_14_validates_the_24_04_oem_kernel() -> None:
    # AMD's 7.14/10.0 OS table: Ubuntu 24.04.4 with GA 6.8, HWE 6.17 and OEM 6.17.
    ubuntu_24 = UBUNTU_22_04_4.replace("22.04", "24.04")
    host = machine(ubuntu_24, "6.17.0-1012-oem", THEROCK_VERSION,
                   path="/opt/rocm/core/.info/version")
    assert check(host) == expected(
        Status.PASS, "kernel 6.17.0-1012-oem is validated for ROCm 7.14.0 on Ubuntu 24.04 (6.8, "
        "6.17)", [], source=OS_SUPPORT_YAML)


def test_rocm_newer_than_the_tables_checks_only_the_floor() -> None:
    ubuntu_24 = UBUNTU_22_04_4.replace("22.04", "24.04")
    host = machine(ubuntu_24, "6.17.0-1012-oem", "10.2.0",  # synthetic version file
                   path="/opt/rocm/core/.info/version")
    assert check(host) == expected(
        Status.PASS, "kernel 6.17.0-1012-oem meets the 5.15 floor for ROCm 10.2.0",
        [Finding.info(f"ROCm 10.2.0 is newer than what this rocmdoctor knows, tables dated "
                      f"{KB_DATE}; only the 5.15 floor is checked")], source=KERNEL_FLOOR_SOURCE)


def test_a_kernel_at_the_floor_meets_it() -> None:
    # 5.15 itself (Ubuntu 22.04's GA kernel) is the floor, not below it.
    host = machine(UBUNTU_22_04_4, "5.15.0-91-generic", "10.2.0",  # synthetic version file
                   path="/opt/rocm/core/.info/version")
    assert check(host) == expected(
        Status.PASS, "kernel 5.15.0-91-generic meets the 5.15 floor for ROCm 10.2.0",
        [Finding.info(f"ROCm 10.2.0 is newer than what this rocmdoctor knows, tables dated "
                      f"{KB_DATE}; only the 5.15 floor is checked")], source=KERNEL_FLOOR_SOURCE)


def test_no_rocm_and_enterprise_passes_with_a_note() -> None:
    host = machine(RHEL_9_4, "5.14.0-427.13.1.el9_4.x86_64")
    assert check(host) == expected(
        Status.PASS, "kernel 5.14.0-427.13.1.el9_4.x86_64 meets the 5.15 floor for current "
        "ROCm (6.0-10.1)",
        [Finding.info("enterprise kernels carry backported drivers; the version alone says "
                      "little")], source=KERNEL_FLOOR_SOURCE)


def test_wsl_kernel_passes_with_a_note() -> None:
    host = machine(UBUNTU_22_04_4, "5.15.153.1-microsoft-standard-WSL2", CLASSIC_VERSION)
    assert check(host) == expected(
        Status.PASS, "WSL kernel 5.15.153.1-microsoft-standard-WSL2",
        [Finding.info("under WSL the GPU is reached through the Windows driver (/dev/dxg), so "
                      "the Linux kernel table does not apply")])


def test_unreadable_kernel_warns() -> None:
    assert check(machine(UBUNTU_22_04_4, "")) == expected(
        Status.WARN, "cannot read the running kernel's version",
        [Finding.hint("uname -r and /proc/version gave no version")])


def test_skipped_on_a_machine_without_amd() -> None:
    host = host_of(files={"/etc/os-release": UBUNTU_22_04_4})
    assert check(host) == expected(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found",
                                   [])


# --- the kernel table -----------------------------------------------------------------------

def test_kernel_rows_are_sourced_and_well_formed() -> None:
    seen = set()
    for row in kb.KERNELS:
        assert row.source.startswith("https://"), row
        assert row.distro in kb.DISTRO_NAMES, row
        assert row.kernels and all(re.fullmatch(r"\d+\.\d+", k) for k in row.kernels), row
        assert (row.distro, row.version) not in seen, row
        seen.add((row.distro, row.version))


def test_every_listed_system_has_kernels_except_known_gaps() -> None:
    listed = {s for r in kb.RELEASES for s in r.systems}
    have = {(row.distro, row.version) for row in kb.KERNELS}
    # AMD's tables read for this module give no kernel for these two point releases.
    assert listed - have == {("ubuntu", "22.04.2"), ("ubuntu", "24.04.1")}
    assert have - listed == set()


def test_floor_is_the_oldest_mainline_kernel_listed() -> None:
    mainline = [tuple(int(x) for x in k.split(".")) for row in kb.KERNELS
                if row.distro not in kb.ENTERPRISE_FAMILIES for k in row.kernels]
    assert min(mainline) == kb.KERNEL_FLOOR


def test_reads_only_what_it_should() -> None:
    data = make_snapshot(files={"/etc/os-release": UBUNTU_18_04_4, "/proc/version": proc_version()},
                         paths=AMDGPU, kernel="5.0.0-23-generic")
    absent = ["/dev/kfd"] + [f"/opt/rocm/{rel}" for rel in (
        ".info/version", "core/.info/version", "include/rocm-core/rocm_version.h",
        "include/rocm_version.h")] + ["/opt/rocm"]
    absent += list(DISTRO_VERSION_FILES)  # a distribution's ROCm under /usr records it there
    assert check(SnapshotHost(data, strict=True, absent=absent)).status is Status.FAIL
