"""The kernel, PCIe and health checks on a real NVIDIA H200 machine: its whole `dmesg`, its
sysfs PCI devices and its `nvidia-smi -q`, replayed through a strict SnapshotHost."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from rocmdoctor.checks.gpu_health import GpuHealth
from rocmdoctor.checks.kernel_log import KernelLogCheck
from rocmdoctor.checks.pcie_link import PcieLink
from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import Check, CheckResult, Finding
from tests.helpers import char_dev, fixture_text, make_snapshot

DMESG = "dmesg-h200-kvm-guest-nvrm-580.159.04-clean-boot-lockdown-from-kernel-configuration.txt"
SMI = "nvidia-smi-q-h200-kvm-guest-gen5-x16-host-max-na-ecc-enabled-driver580.159.txt"
SYSFS = "sysfs-pci-devices-h200-kvm-guest-gpu-32gt-x16-virtio-devices-without-link-files.txt"
_ROW = re.compile(r"^(\S+) -> (\S+) class=(\S+) vendor=(\S+) device=(\S+) cur=(.*?) max=(.*?) "
                  r"driver=(\S*)$")


def sysfs() -> tuple[dict[str, str], dict[str, Any]]:
    """The captured loop's lines back into sysfs files and symlinks."""
    files: dict[str, str] = {}
    paths: dict[str, Any] = {}
    for line in fixture_text(SYSFS).splitlines():
        m = _ROW.match(line)
        assert m, line
        path, target, cls, vendor, device, cur, top, driver = m.groups()
        paths[path] = {"type": "symlink", "mode": "0777", "target": target}
        files |= {f"{path}/class": cls + "\n", f"{path}/vendor": vendor + "\n",
                  f"{path}/device": device + "\n"}
        for which, value in (("current", cur), ("max", top)):
            if "No such file" not in value:
                speed, width = value.rsplit("/", 1)
                files[f"{path}/{which}_link_speed"] = speed + "\n"
                files[f"{path}/{which}_link_width"] = width + "\n"
        if driver:
            paths[f"{path}/driver"] = {"type": "symlink", "mode": "0777", "target": driver}
    return files, paths


def h200() -> SnapshotHost:
    files, paths = sysfs()
    paths["/dev/nvidiactl"] = char_dev("root", "0666")
    snap = make_snapshot(files=files, paths=paths, kernel="6.18.44-fc-v973-gpu",
                         commands={"dmesg": fixture_text(DMESG), "nvidia-smi -q": fixture_text(SMI),
                                   "lspci -nn": {"returncode": 127, "stdout": "",
                                                 "stderr": "lspci: command not found"}})
    absent = ["/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", KFD_NODES]
    return SnapshotHost(snap, strict=True, absent=absent)


def run(check: Check) -> CheckResult:
    h = h200()
    reason = check.applies(h)
    return replace(check.skipped(reason) if reason else check.run(h), duration_ms=0)


def test_a_healthy_boot_log_passes() -> None:
    assert "Kernel is locked down from Kernel configuration" in fixture_text(DMESG)
    assert run(KernelLogCheck()) == KernelLogCheck().passed(
        "no known GPU driver problem in the kernel log (dmesg: 359 lines)")


def test_the_h200_link_is_gen5_x16() -> None:
    assert run(PcieLink()) == PcieLink().passed("1 GPU link(s) at full width", (
        Finding.info("0000:00:06.0 [10de:2335]: Gen5 x16 (32 GT/s) of Gen5 x16 (32 GT/s); 63.02 "
                     "GB/s per direction at full speed"),))


def test_the_h200_is_healthy() -> None:
    assert run(GpuHealth()) == GpuHealth().passed(
        "1 GPU(s): no uncorrectable errors, nothing pending",
        (Finding.info("GPU 0000:00:06.0 NVIDIA H200: no uncorrectable ECC errors, nothing "
                      "pending"),))
