"""amdgpu-firmware through a strict SnapshotHost: real amdgpu_firmware_info dumps, a real
missing-firmware kernel log, MES 0x84 on gfx12, and the firmware packages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.amdgpu_firmware import READ_DEBUGFS, AmdgpuFirmware
from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.facts.amdgpu_firmware import parse_firmware_info, parse_package_list
from rocmdoctor.facts.kernel_log import RESTRICT_FILE
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import firmware as kb
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from tests.helpers import fixture_text, make_snapshot

CHECK = AmdgpuFirmware()
ENTRY = {e.key: e for e in KERNEL_MESSAGES}
DPKG = "dpkg-query -W linux-firmware linux-firmware-amdgpu amdgpu-dkms-firmware"
ABSENT = ("dmesg", "journalctl -k -b --no-pager", RESTRICT_FILE, DPKG,
          "rpm -q linux-firmware linux-firmware-amdgpu amdgpu-dkms-firmware",
          "pacman -Q linux-firmware linux-firmware-amdgpu amdgpu-dkms-firmware",
          "amd-smi firmware --json", "amd-smi static --json", "/sys/module/amdgpu", "/dev/kfd",
          "/proc/driver/nvidia/version", "/dev/nvidiactl", KFD_NODES,
          "/sys/kernel/debug/dri/0/name", "/sys/kernel/debug/dri/1/name")
GFX1100 = "debugfs-amdgpu-firmware-info-gfx1100-rx7900xtx-mes-0x34-mec-0x1fe-smc-78.85.0.txt"
GFX1201 = "debugfs-amdgpu-firmware-info-gfx1201-r9700-mes-0x84-known-mes-issue-linux-firmware-20251125.txt"


def host(files: Optional[dict[str, str]] = None,
         commands: Optional[dict[str, Any]] = None) -> SnapshotHost:
    snap = make_snapshot(files={"/opt/rocm/.info/version": "6.4.0\n", **(files or {})},
                         commands=commands)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    reason = CHECK.applies(h)
    return replace(CHECK.skipped(reason) if reason else CHECK.run(h), duration_ms=0)


def debugfs(name: str, card: int = 0) -> dict[str, str]:
    body = fixture_text(name)
    lines = [ln for ln in body.splitlines() if "#" not in ln and "❯" not in ln]
    return {f"/sys/kernel/debug/dri/{card}/amdgpu_firmware_info": "\n".join(lines) + "\n"}


def test_rx7900xtx_firmware_and_the_package_version() -> None:
    dpkg = {"returncode": 1, "stdout": "linux-firmware\t20220329.git681281e4-0ubuntu3.36\n",
            "stderr": "dpkg-query: no packages found matching amdgpu-dkms-firmware\n"}
    h = host(debugfs(GFX1100), {"dmesg": "[    1.000000] Linux version 6.5.0\n", DPKG: dpkg})
    assert run(h) == CHECK.passed("firmware of 1 GPU(s) loaded; no load failure in the kernel log", (
        Finding.info("/sys/kernel/debug/dri/0/amdgpu_firmware_info: MEC 0x000001fe, MES "
                     "0x00000034, MES_KIQ 0x0000006a, RLC 0x00000074, SMC 78.85.0, SOS "
                     "0x00310025, VBIOS 113-D7020100-102"),
        Finding.info("firmware packages: linux-firmware 20220329.git681281e4-0ubuntu3.36")))


def test_mes_0x84_on_gfx12_warns() -> None:
    kfd = {f"{KFD_NODES}/1/properties": "simd_count 128\ngfx_target_version 120001\n",
           f"{KFD_NODES}/1/name": "\n"}
    got = run(host({**debugfs(GFX1201, 1), **kfd}))
    bad = kb.FAULTY[0]
    assert got == CHECK.result(
        Status.WARN, "MES firmware 0x84 is a build AMD names as faulty", (
            Finding.info("/sys/kernel/debug/dri/1/amdgpu_firmware_info: MEC 0x00000c80, MES "
                         "0x00000084, MES_KIQ 0x00000084, RLC 0x00be7da0, SMC 104.75.0, SOS "
                         "0x003a1014, VBIOS 113-APM107573-101"),
            Finding.hint("/sys/kernel/debug/dri/1/amdgpu_firmware_info: MES firmware 0x00000084: "
                         "AMD: 'FW 0x84 is affected by a known MES issue' (random GPU page faults "
                         "and memory access faults on gfx12)")),
        Fix("Update the distribution's firmware package (linux-firmware, or amdgpu-dkms-firmware "
            "with AMD's driver) to a release with a newer MES firmware, rebuild the initramfs and "
            "reboot; ROCm issue 5814 tracks it.", (READ_DEBUGFS,), needs_root=True), bad.source)


def test_mes_0x84_on_an_rdna3_card_is_not_flagged() -> None:
    kfd = {f"{KFD_NODES}/1/properties": "simd_count 96\ngfx_target_version 110000\n",
           f"{KFD_NODES}/1/name": "\n"}
    assert run(host({**debugfs(GFX1201, 1), **kfd})).status is Status.PASS


def test_missing_firmware_in_the_kernel_log_fails() -> None:
    dmesg = fixture_text(
        "dmesg-direct-firmware-load-polaris12-mc-failed-error-2-fatal-gpu-init-wx2100-raspberrypi-TRUNCATED.txt")
    entry = ENTRY["amdgpu-firmware-missing"]
    assert run(host(commands={"dmesg": dmesg})) == CHECK.result(
        Status.FAIL, "amdgpu firmware file missing: amdgpu 0000:01:00.0: Direct firmware load "
        "for amdgpu/polaris12_mc.bin failed with error -2", (
            Finding.error("amdgpu firmware file missing (2 lines, last at 4.825152): amdgpu "
                          "0000:01:00.0: Direct firmware load for amdgpu/polaris12_mc.bin failed "
                          "with error -2 [files: amdgpu/polaris12_mc.bin]"),),
        Fix(entry.fix, ("ls -l /lib/firmware/amdgpu/polaris12_mc.bin*",), True), entry.source)


def test_nothing_readable_skips_with_the_root_command() -> None:
    assert run(host()) == CHECK.skipped(
        "neither the firmware versions (debugfs, amd-smi) nor the kernel log is readable here; "
        f"as root: {READ_DEBUGFS}")


def test_a_readable_log_without_versions_passes_and_says_root_is_needed() -> None:
    assert run(host(commands={"dmesg": "[    1.0] Linux version 6.8.0\n"})) == CHECK.passed(
        "no firmware load failure in the kernel log (versions not readable without root)",
        (Finding.hint(f"firmware versions need root: {READ_DEBUGFS}"),))


def test_firmware_info_parser() -> None:
    versions, shown = parse_firmware_info(fixture_text(GFX1100))
    assert versions["MEC"] == 0x1FE and versions["TA XGMI"] == 0 and shown["SMC"] == "78.85.0"
    assert shown["VBIOS"] == "113-D7020100-102"


def test_package_lists_of_each_tool() -> None:
    assert parse_package_list("linux-firmware\t20240318.git3b128b60-0ubuntu2.1\n"
                              "amdgpu-dkms-firmware\t1:6.8.5.60200-2009582.22.04\n") == {
        "linux-firmware": "20240318.git3b128b60-0ubuntu2.1",
        "amdgpu-dkms-firmware": "1:6.8.5.60200-2009582.22.04"}
    assert parse_package_list("linux-firmware-20240905-1.fc40.noarch\n"
                              "package amdgpu-dkms-firmware is not installed\n") == {
        "linux-firmware": "20240905-1.fc40.noarch"}
    assert parse_package_list("linux-firmware-amdgpu 20251125-2\n"
                              "error: package 'amdgpu-dkms-firmware' was not found\n") == {
        "linux-firmware-amdgpu": "20251125-2"}


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_firmware_info(text)
    parse_package_list(text)


def test_amd_smi_firmware_and_the_instinct_bundle_rocm_lists() -> None:
    """`amd-smi firmware --json` in the keys of amd-smi's source (fw_list, fw_id, fw_version:
    decimal for CP engines, dotted for PM/SMC), on an MI300X."""
    import json

    firmware = [{"gpu": 0, "fw_list": [{"fw_id": "CP_MEC1", "fw_version": "177"},
                                       {"fw_id": "PM", "fw_version": "85.101.0"}]}]
    static = {"gpu_data": [{"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X"},
                            "bus": {"bdf": "0000:05:00.0"}}]}
    h = host(commands={"dmesg": "[    1.0] Linux version 5.15.0\n",
                       "amd-smi firmware --json": json.dumps(firmware),
                       "amd-smi static --json": json.dumps(static)})
    assert run(h) == CHECK.passed("firmware of 1 GPU(s) loaded; no load failure in the kernel log", (
        Finding.info("0000:05:00.0: MEC 177, SMC 85.101.0"),
        Finding.info("ROCm 10.1 lists PLDM bundle 01.26.00.04 (or later) or 01.25.06.05 for the "
                     "MI300X; amd-smi does not report the bundle version, so compare it with your "
                     f"server vendor's firmware ({kb.FIRMWARE_YAML})")))


def test_amd_smi_firmware_versions_no_int_can_hold_are_shown_not_compared() -> None:
    """A CP version of thousands of digits, or a superscript digit that str.isdigit() takes
    but int() refuses, is shown as amd-smi printed it and never compared (it crashed the
    check before)."""
    import json

    big = "9" * 4301
    firmware = [{"gpu": 0, "fw_list": [{"fw_id": "CP_MEC1", "fw_version": big},
                                       {"fw_id": "CP_MEC2", "fw_version": "²"}]}]
    static = {"gpu_data": [{"gpu": 0, "asic": {"market_name": "AMD Radeon RX 7900 XTX"},
                            "bus": {"bdf": "0000:03:00.0"}}]}
    h = host(commands={"dmesg": "[    1.0] Linux version 6.8.0\n",
                       "amd-smi firmware --json": json.dumps(firmware),
                       "amd-smi static --json": json.dumps(static)})
    result = run(h)
    assert result.status is Status.PASS, result.summary
    assert result.findings[0] == Finding.info(f"0000:03:00.0: MEC {big}")
