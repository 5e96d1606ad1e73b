"""kernel-log: real kernel logs replayed through a strict SnapshotHost, the catalogue shared with
`rocmdoctor explain`, unreadable logs, a 50 MB log and garbage."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmdoctor.checks.kernel_log import EXPLAIN, KernelLogCheck
from rocmdoctor.explain import explain_text
from rocmdoctor.facts.kernel_log import (
    MAX_LOG_CHARS,
    RESTRICT_FILE,
    known_causes,
    parse_kernel_log,
    split_line,
)
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.kb.messages import DMESG_AMDGPU
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from tests.helpers import REAL, char_dev, fixture_text, make_snapshot

CHECK = KernelLogCheck()
ENTRY = {e.key: e for e in KERNEL_MESSAGES}
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}
ABSENT = ("dmesg", "journalctl -k -b --no-pager", RESTRICT_FILE, "/sys/module/amdgpu",
          "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl")
EPERM = {"returncode": 1, "stdout": "",
         "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n"}
LOGS = sorted(p.name for p in REAL.glob("*.txt") if p.name.startswith(
    ("dmesg-", "journalctl-", "syslog-", "systemctl-", "errors-dmesg-")))


def host(commands: dict[str, Any], files: Optional[dict[str, str]] = None,
         nvidia: bool = False) -> SnapshotHost:
    paths = {"/dev/nvidiactl": char_dev("root", "0666")} if nvidia else {}
    snap = make_snapshot(files={**({} if nvidia else ROCM), **(files or {})}, paths=paths,
                         commands=commands)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    return replace(CHECK.run(h) if CHECK.applies(h) is None else CHECK.skipped(
        CHECK.applies(h) or ""), duration_ms=0)


def fix_of(key: str, *more: str) -> Fix:
    e = ENTRY[key]
    commands = tuple(dict.fromkeys((*e.commands, *more)))
    text = e.fix + (" For every cause's own fix, pass the log to rocmdoctor explain."
                    if more else "")
    return Fix(text, commands, e.needs_root or any(c.startswith("sudo ") for c in commands))


# --- whole results --------------------------------------------------------------------------


def test_pci_rejects_atomics_fails_with_the_line() -> None:
    body = fixture_text("dmesg-kfd-skipped-device-pci-rejects-atomics-rx580-gfx803-x58-xeon-rocm3.x.txt")
    assert run(host({"dmesg": body})) == CHECK.result(
        Status.FAIL, "the kernel log shows KFD skipped a GPU: PCI rejects atomics (dmesg: 1 line)",
        (Finding.error("KFD skipped a GPU: PCI rejects atomics (1 line, last at 7.026427): kfd "
                       "kfd: amdgpu: skipped device 1002:67df, PCI rejects atomics"),),
        fix_of("kfd-pci-rejects-atomics"), ENTRY["kfd-pci-rejects-atomics"].source)


def test_journal_is_read_when_dmesg_is_not_permitted() -> None:
    body = fixture_text(
        "journalctl-ring-gfx-timeout-kiq-test-failed-amd-vi-io-page-fault-navi21-pytorch-TRUNCATED.txt")
    got = run(host({"dmesg": EPERM, "journalctl -k -b --no-pager": body}))
    assert got == CHECK.result(
        Status.WARN, "the kernel log shows amdgpu ring timeout and GPU reset; IOMMU page fault "
        "from a device (journalctl -k -b --no-pager: 12 lines)", (
            Finding.hint("amdgpu ring timeout and GPU reset (3 lines, last at Apr 12 00:54:42): "
                         "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, "
                         "signaled seq=159760, emitted seq=159762"),
            Finding.hint("IOMMU page fault from a device (1 line, last at Apr 12 00:54:43): "
                         "amdgpu 0000:2f:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x001a "
                         "address=0xec68053da00 flags=0x0010]")),
        fix_of("amdgpu-ring-timeout", EXPLAIN), ENTRY["amdgpu-ring-timeout"].source)


def test_a_fail_level_cause_comes_first_and_an_info_one_does_not_count() -> None:
    body = fixture_text(
        "dmesg-amdkcl-module-verification-failed-tainting-amdgpu-unknown-symbol-devcgroup-rocm2.0.txt")
    got = run(host({"dmesg": body}))
    assert got == CHECK.result(
        Status.FAIL, "the kernel log shows amdgpu module will not load: unknown symbol (dmesg: "
        "13 lines)", (
            Finding.error("amdgpu module will not load: unknown symbol (4 lines, last at "
                          "100.206397): amdgpu: Unknown symbol __devcgroup_check_permission (err 0)"),
            Finding.info("AMD's DKMS module is unsigned (kernel tainted) (2 lines, last at "
                         "9.694704): amdkcl: module verification failed: signature and/or "
                         "required key missing - tainting kernel")),
        fix_of("amdgpu-unknown-symbol"), ENTRY["amdgpu-unknown-symbol"].source)


def test_nvidia_xids_each_once_with_count_and_last_time() -> None:
    body = fixture_text(
        "dmesg-ctime-nvrm-xid-13-sm-warp-exception-and-xid-109-ctx-switch-timeout-pt-main-thread.txt")
    got = run(host({"dmesg": body}, nvidia=True))
    assert got.status is Status.WARN
    assert got.summary == ("the kernel log shows NVIDIA Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION); "
                           "NVIDIA Xid 109 (CTX SWITCH TIMEOUT) (dmesg: 5 lines)")
    assert got.findings == (
        Finding.hint("NVIDIA Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION) (3 lines, last at Fri Aug 30 "
                     "11:43:09 2024): NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
                     "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal "
                     "Instruction Parameter"),
        Finding.hint("NVIDIA Xid 109 (CTX SWITCH TIMEOUT) (1 line, last at Fri Aug 30 11:43:14 "
                     "2024): NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
                     "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"))
    assert got.fix == fix_of("nvidia-xid-13", EXPLAIN)


def test_a_clean_log_passes() -> None:
    body = fixture_text(
        "dkms-status-new-format-installed-two-kernels-6.17.0-5-and-6.17.0-8-amdgpu6.16.6-rocm7.1.1-ubuntu25.10.txt")
    dmesg = "\n".join(ln for ln in body.splitlines() if ln.startswith("[")) + "\n"
    assert run(host({"dmesg": dmesg})) == CHECK.passed(
        "no known GPU driver problem in the kernel log (dmesg: 4 lines)")


def test_unreadable_log_names_dmesg_restrict_and_the_sudo_line() -> None:
    h = host({"dmesg": EPERM, "journalctl -k -b --no-pager": {
        "returncode": 0, "stdout": "-- No entries --\n", "stderr": ""}},
        files={RESTRICT_FILE: "1\n"})
    assert run(h) == CHECK.result(
        Status.SKIP, "the kernel log is not readable here: kernel.dmesg_restrict = 1 keeps the "
        "kernel log from this user (`dmesg` said 'dmesg: read kernel buffer failed: Operation not "
        "permitted'; `journalctl -k -b --no-pager` said '-- No entries --'); read it with `sudo dmesg | "
        "grep -iE 'amdgpu|kfd|nvrm'`",
        fix=Fix("Read the kernel log as root and paste it into rocmdoctor explain.", (EXPLAIN,),
                needs_root=True))


def test_skips_without_a_gpu() -> None:
    h = SnapshotHost(make_snapshot(), strict=True, absent=ABSENT)
    assert run(h) == CHECK.skipped("no AMD or NVIDIA GPU or driver found")


# --- every real log: the causes, counts and last timestamps ---------------------------------

EXPECTED: dict[str, list[tuple[str, int, Optional[str]]]] = {
    # a healthy H200 machine's whole boot: lockdown with no refused module, NVRM loading
    "dmesg-h200-kvm-guest-nvrm-580.159.04-clean-boot-lockdown-from-kernel-configuration.txt":
        [],
    "dmesg-H-gfxhub-page-fault-gcvm-l2-protection-fault-rx9070xt-gfx1201-rocm7.0-vllm.txt":
        [("amdgpu-gpu-page-fault", 6, "+0.000002")],
    "dmesg-T-ras-uncorrectable-athub-interrupt-gpu-reset-smu-failures-mi50-gfx906-TRUNCATED.txt":
        [("amdgpu-ras-uncorrectable", 1, "Sat Jan  7 14:25:56 2023")],
    "dmesg-amd-vi-io-page-fault-device-20-00.0-old-format-amdgpu-boot-gcn-dgpu-TRUNCATED.txt":
        [("iommu-page-fault", 4, "1.116856")],
    "dmesg-amdgpu-unknown-parameter-si-support-cik-support-ignored.txt":
        [("amdgpu-unknown-parameter", 2, "4.107960")],
    "dmesg-amdgpu-unknown-symbol-amd-iommu-err-2-missing-linux-modules-extra-ubuntu18.04-ec2.txt":
        [("amdgpu-unknown-symbol", 5, "7.668404")],
    "dmesg-amdkcl-module-verification-failed-tainting-amdgpu-unknown-symbol-devcgroup-rocm2.0.txt":
        [("amdgpu-module-unsigned", 2, "9.694704"), ("amdgpu-unknown-symbol", 4, "100.206397")],
    "dmesg-apei-hardware-error-pcie-corrected-aer-data-link-layer-mi100-am4-rocm6.0-TRUNCATED.txt":
        [("pcie-aer-errors", 2, "2484.374031")],
    "dmesg-boot-multi-polaris-kfd-skipped-pci-rejects-atomics-vfct-broken-rocm1.x-TRUNCATED.txt":
        [("kfd-pci-rejects-atomics", 1, "3.052902")],
    "dmesg-ctime-nvrm-xid-13-sm-warp-exception-and-xid-109-ctx-switch-timeout-pt-main-thread.txt":
        [("nvidia-xid-13", 3, "Fri Aug 30 11:43:09 2024"),
         ("nvidia-xid-109", 1, "Fri Aug 30 11:43:14 2024")],
    "dmesg-direct-firmware-load-polaris12-mc-failed-error-2-fatal-gpu-init-wx2100-raspberrypi-TRUNCATED.txt":
        [("amdgpu-firmware-missing", 2, "4.825152")],
    "dmesg-direct-firmware-load-psp-13-0-8-toc-failed-error-2-fatal-gpu-init-mendocino-chromeos.txt":
        [("amdgpu-firmware-missing", 2, "3.586367")],
    "dmesg-gfx9-failed-to-load-firmware-vega20-rlc-fatal-gpu-init-probe-failed-error-2.txt":
        [("amdgpu-firmware-missing", 1, "4.032801")],
    "dmesg-kfd-pci-rejects-atomics-730-lt-0-rx550-gfx803-thinkpad-e580.txt":
        [("kfd-pci-rejects-atomics", 1, "9.298192")],
    "dmesg-kfd-pci-rejects-atomics-730-lt-0-rx570-gfx803-ubuntu22.04-rocm5.4.3.txt":
        [("kfd-pci-rejects-atomics", 1, "3.091074")],
    # "123<145": the MEC firmware, not the slot (kfd_device.c's no_atomic_fw_version)
    "dmesg-kfd-skipped-device-pci-rejects-atomics-123-lt-145-navi14-w5500-mec-firmware-too-old.txt":
        [("kfd-atomics-mec-firmware-old", 1, None)],
    "dmesg-kfd-added-then-skipped-pci-rejects-atomics-2x-rx570-h270-pch-x4-slot-rocm1.7-TRUNCATED.txt":
        [("kfd-pci-rejects-atomics", 1, "3.394728")],
    "dmesg-kfd-did-missing-in-supported-devices-kgd2kfd-probe-failed-picasso-plus-rx560-fc29-TRUNCATED.txt":
        [("kfd-not-supported", 2, "2.510808")],
    "dmesg-kfd-skipped-device-pci-rejects-atomics-polaris12-699f-intel-nuc8.txt":
        [("kfd-pci-rejects-atomics", 1, "13.155802")],
    "dmesg-kfd-skipped-device-pci-rejects-atomics-rx580-gfx803-x58-xeon-rocm3.x.txt":
        [("kfd-pci-rejects-atomics", 1, "7.026427")],
    "dmesg-kfd2kgd-kfd-not-supported-on-this-asic-r9-270x-gcn1-ubuntu18.04-rocm1.9.txt":
        [("kfd-not-supported", 1, "1.172206")],
    "dmesg-lockdown-systemd-udevd-unsigned-module-loading-is-restricted-ubuntu20.04.txt":
        [("secure-boot-module-refused", 1, "608.093375")],
    "dmesg-nvrm-api-mismatch-570.153.02-vs-570.144-then-gsp-firmware-load-failed-rminitadapter-bazzite-TRUNCATED.txt":
        [("nvidia-api-mismatch", 3, "12.107719"), ("nvidia-gsp-firmware-missing", 2, "23.991667")],
    "dmesg-nvrm-api-mismatch-client-570.148.08-kernel-module-570.148.06-vgpu-guest.txt":
        [("nvidia-api-mismatch", 1, "8957.099615")],
    "dmesg-nvrm-api-mismatch-client-kwin-wayland-pid-new-format-595.84-vs-595.80.txt":
        [("nvidia-api-mismatch", 1, "9.424670")],
    "dmesg-nvrm-gpu-at-has-fallen-off-the-bus-os-pci-init-handle-old-format-bumblebee-2014.txt":
        [("nvidia-xid-79", 2, "49.261472")],
    "dmesg-nvrm-gpu-fallen-off-the-bus-multiline-probe-failed-no-xid-open-570.158.01.txt":
        [("nvidia-xid-79", 1, "1843.308145")],
    "dmesg-nvrm-gsp-heartbeat-timed-out-sysmembar-timeout-gsp-rpc-timeout-gh100-595.71-TRUNCATED.txt":
        [("nvidia-xid-119", 3, "84.300488")],
    "dmesg-nvrm-xid-13-pid-unknown-graphics-exception-esr-a800-driver535-vllm-TRUNCATED.txt":
        [("nvidia-xid-13", 6, "93297.043905")],
    "dmesg-nvrm-xid-31-mmu-fault-engine-ce0-fault-pte-chrome-gtx1660ti-515.65.txt":
        [("nvidia-xid-31", 2, None)],
    "dmesg-nvrm-xid-31-mmu-fault-fault-pde-then-xid-13-32-graphics-exception-driver418.txt":
        [("nvidia-xid-31", 1, "31543.449443"), ("nvidia-xid-13", 4, "31609.615374"),
         ("nvidia-xid-32", 1, "31609.615516")],
    "dmesg-psp-firmware-loading-failed-hw-init-psp-failed-22-fatal-gpu-init-v620-mxgpu-azure-dkms6.3.6-TRUNCATED.txt":
        [("amdgpu-psp-load-failed", 2, "603.029706")],
    "dmesg-ring-gfx-timeout-illegal-opcode-mes-reset-failed-mode1-reset-vram-lost-rdna3-no-timestamps.txt":
        [("amdgpu-mes-hang", 1, None)],
    "dmesg-ring-gfx-timeout-mes-failed-to-respond-reset-mode1-vram-lost-navi33-steamos-TRUNCATED.txt":
        [("amdgpu-mes-hang", 2, "Thu Sep 10 14:36:21 2026")],
    "dmesg-ring-page1-timeout-gpu-reset-baco-vram-lost-gfx900-xformers-TRUNCATED.txt":
        [("amdgpu-ring-timeout", 2, "2742.462662")],
    "errors-dmesg-amdgpu-ring-sdma0-timeout-gpu-reset-smu-gfx1030.txt":
        [("amdgpu-ring-timeout", 3, "May 11 13:59:53")],
    "errors-dmesg-mes-failed-to-respond-remove-queue-gfx1103-hsa-override.txt":
        [("amdgpu-mes-hang", 5, "40894.813029")],
    "journalctl-lockdown-modprobe-unsigned-module-loading-is-restricted-arch-secureboot.txt":
        [("secure-boot-module-refused", 1, None)],
    "journalctl-nvrm-xid-13-sm-warp-exception-illegal-instruction-encoding-relion-TRUNCATED.txt":
        [("nvidia-xid-13", 8, "Feb 15 17:37:45")],
    "journalctl-nvrm-xid-45-caused-by-previous-xid-149-145-nvlink-gb-driver590-TRUNCATED.txt":
        [("nvidia-xid-45", 7, None)],
    "journalctl-nvrm-xid-79-gpu-has-fallen-off-the-bus-rtx5080-bazzite-6.19-TRUNCATED.txt":
        [("nvidia-xid-79", 2, "May 18 19:02:39")],
    "journalctl-ring-gfx-timeout-evict-queue-remove-all-queues-mes-rx7900xt-rocm6.2-TRUNCATED.txt":
        [("amdgpu-ring-timeout", 2, "nov 07 01:36:56")],
    "journalctl-ring-gfx-timeout-kiq-test-failed-amd-vi-io-page-fault-navi21-pytorch-TRUNCATED.txt":
        [("amdgpu-ring-timeout", 3, "Apr 12 00:54:42"), ("iommu-page-fault", 1, "Apr 12 00:54:43")],
    "syslog-nvrm-api-mismatch-hash012-escaped-newlines-535.54.03-vs-530.30.02.txt":
        [("nvidia-api-mismatch", 1, "Jun 30 11:07:05")],
    "systemctl-status-modules-load-key-was-rejected-by-service-fedora38-secureboot.txt":
        [("secure-boot-module-refused", 2, "Apr 22 18:10:16")],
}


def test_every_kernel_log_capture_has_an_expectation() -> None:
    assert sorted(EXPECTED) == LOGS


@pytest.mark.parametrize("name", LOGS)
def test_causes_counts_and_last_timestamps(name: str) -> None:
    causes = known_causes(parse_kernel_log(fixture_text(name)))
    assert [(c.entry.key, c.count, c.last_stamp) for c in causes] == EXPECTED[name]


@pytest.mark.parametrize("name", LOGS)
def test_explain_recognises_the_same_causes(name: str) -> None:
    """The catalogue is shared: a pasted log gets the causes the check reports."""
    body = fixture_text(name)
    assert {e.key for e in explain_text(body)} == {k for k, _, _ in EXPECTED[name]}


def test_nvrm_continuation_lines_are_joined() -> None:
    body = fixture_text("dmesg-nvrm-api-mismatch-client-570.148.08-kernel-module-570.148.06-vgpu-guest.txt")
    mismatch = [ln for ln in parse_kernel_log(body) if "API mismatch" in ln.message]
    assert [ln.message for ln in mismatch] == [
        "NVRM: API mismatch: the client has the version 570.148.08, but this kernel module has "
        "the version 570.148.06.  Please make sure that this kernel module and all NVIDIA driver "
        "components have the same version."]
    syslog = fixture_text("syslog-nvrm-api-mismatch-hash012-escaped-newlines-535.54.03-vs-530.30.02.txt")
    assert "the version 530.30.02" in parse_kernel_log(syslog)[0].message


@pytest.mark.parametrize(("line", "stamp", "message"), [
    ("[    7.026427] kfd kfd: added device 1002:67df", "7.026427", "kfd kfd: added device 1002:67df"),
    ("[  +0.000012] amdgpu: x", "+0.000012", "amdgpu: x"),
    ("[12月25 19:09] amdgpu: x", "12月25 19:09", "amdgpu: x"),
    ("[Sat Jan  7 14:25:56 2023] amdgpu: x", "Sat Jan  7 14:25:56 2023", "amdgpu: x"),
    ("Feb 15 17:37:45 Gipfeli kernel: [82659.755847] NVRM: x", "Feb 15 17:37:45", "NVRM: x"),
    ("archlinux kernel: Lockdown: x", None, "Lockdown: x"),
    ("[drm:gfx_v11_0_bad_op_irq [amdgpu]] *ERROR* Illegal opcode", None,
     "[drm:gfx_v11_0_bad_op_irq [amdgpu]] *ERROR* Illegal opcode"),
])
def test_timestamps_of_each_format(line: str, stamp: Optional[str], message: str) -> None:
    got = split_line(line)
    assert (got.stamp, got.message) == (stamp, message)


# --- bad input --------------------------------------------------------------------------------


def test_a_50_mb_log_keeps_its_end_and_says_so() -> None:
    noise = "[    1.000000] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
    firmware = ("[    9.000000] amdgpu 0000:01:00.0: Direct firmware load for "
                "amdgpu/polaris12_mc.bin failed with error -2\n")
    log = noise * (50 * 2**20 // len(noise)) + firmware
    start = time.monotonic()
    got = run(host({"dmesg": log}))
    assert time.monotonic() - start < 30
    assert got.status is Status.FAIL
    assert got.findings[-1] == Finding.info(
        f"the kernel log is longer than {MAX_LOG_CHARS // 2**20} MiB: only its last "
        f"{MAX_LOG_CHARS // 2**20} MiB were read")
    assert got.findings[0].text.startswith("amdgpu firmware file missing (1 line, last at 9.000000)")


def test_binary_garbage_is_a_result() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 4000 + "\x00" * 100000
    got = run(host({"dmesg": garbage}))
    assert got.status is Status.PASS
    assert got.summary.startswith("no known GPU driver problem in the kernel log (dmesg: ")


def test_one_huge_line_is_cut() -> None:
    got = run(host({"dmesg": "x" * (8 * 2**20)}))
    assert got.status is Status.PASS


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsing_arbitrary_text_never_raises(text: str) -> None:
    lines = parse_kernel_log(text)
    known_causes(lines)
    for raw in text.splitlines()[:50]:
        split_line(raw)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([
    "[  1.0] NVRM: API mismatch: the client has the version 1, but", "               NVRM: x",
    "[ 2.0] kfd kfd: skipped device 1002:67df, PCI rejects atomics", "#012NVRM: y", "[ ] ",
    "nov 07 01:36:56 h kernel: amdgpu: ring gfx_0.0.0 timeout", "\x00\x01", "[12月25 19:09]"]),
    max_size=30))
def test_line_formats_mixed_never_raise(lines: list[str]) -> None:
    for cause in known_causes(parse_kernel_log("\n".join(lines))):
        assert cause.count >= 1 and cause.entry.key in ENTRY


def test_every_entry_is_sourced_and_has_a_known_level() -> None:
    for entry in KERNEL_MESSAGES:
        assert entry.source.startswith("https://"), entry.key
        assert entry.level in ("fail", "warn", "info"), entry.key
        assert entry.kind == "kernel-log", entry.key
    assert DMESG_AMDGPU in ENTRY["amdgpu-ring-timeout"].commands


# --- held by mutation testing ----------------------------------------------------------------


def test_three_problems_name_two_and_count_the_rest() -> None:
    body = fixture_text(
        "dmesg-nvrm-xid-31-mmu-fault-fault-pde-then-xid-13-32-graphics-exception-driver418.txt")
    assert run(host({"dmesg": body}, nvidia=True)) == CHECK.result(
        Status.WARN, "the kernel log shows NVIDIA Xid 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT); "
        "NVIDIA Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION) and 1 more (dmesg: 8 lines)", (
            Finding.hint("NVIDIA Xid 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT) (1 line, last at "
                         "31543.449443): NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr "
                         "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ "
                         "0x17_00592000. Fault is of type FAULT_PDE ACCESS_TYPE_READ"),
            Finding.hint("NVIDIA Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION) (4 lines, last at "
                         "31609.615374): NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: "
                         "Class 0x0 Subchannel 0x0 Mismatch"),
            Finding.hint("NVIDIA Xid 32 (ROBUST_CHANNEL_PBDMA_ERROR) (1 line, last at "
                         "31609.615516): NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 "
                         "intr 02000000")),
        fix_of("nvidia-xid-31", EXPLAIN), ENTRY["nvidia-xid-31"].source)


def test_a_first_line_over_220_characters_is_cut_to_217_and_an_ellipsis() -> None:
    # The NVRM API-mismatch message, its continuation lines joined, is 225 characters.
    body = fixture_text("dmesg-nvrm-api-mismatch-client-kwin-wayland-pid-new-format-595.84-vs-595.80.txt")
    cut = ("NVRM: API mismatch: the client 'kwin_wayland' (pid 1005) has the version 595.84, but "
           "this kernel module has the version 595.80.  Please make sure that this kernel module "
           "and all NVIDIA driver components have the same ")
    assert len(cut) == 217
    got = run(host({"dmesg": body}, nvidia=True))
    assert got.findings == (Finding.error(
        f"NVIDIA driver: user space and kernel module differ (1 line, last at 9.424670): {cut}..."),)
    assert got.summary == ("the kernel log shows NVIDIA driver: user space and kernel module "
                           "differ (dmesg: 2 lines)")
