"""Each fact is read in one place, once: every check, the report and the `machine` object ask
the readers in facts/, which read through the Host once per host (docs/architecture.md, "Where
a fact is read"). Here a replay counts what is asked of it."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from rocmdoctor.checks.registry import all_checks
from rocmdoctor.facts.machine import machine_facts
from rocmdoctor.host import PathInfo
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.runner import run_checks
from tests.helpers import char_dev, make_snapshot

PROC_VERSION = "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP\n"


class CountingHost(SnapshotHost):
    """A replay that counts every file read and every stat (exists() is a stat)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.reads: Counter[str] = Counter()

    def read_file(self, path: str) -> Optional[str]:
        self.reads["file " + path] += 1
        return super().read_file(path)

    def stat(self, path: str) -> Optional[PathInfo]:
        self.reads["stat " + path] += 1
        return super().stat(path)


def amd_machine() -> dict[str, Any]:
    """An AMD machine whose uname gives no release, so /proc/version is wanted too, with a
    ppfeaturemask to judge (the ppfeaturemask check then reads the command line as well)."""
    return make_snapshot(
        kernel="",
        files={"/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro quiet amdgpu.ppfeaturemask=0xffffffff\n",
               "/proc/version": PROC_VERSION,
               "/sys/module/amdgpu/parameters/ppfeaturemask": "0xffffffff\n",
               "/sys/module/amdgpu/initstate": "live\n",
               "/etc/group": "render:x:110:alice\nvideo:x:44:alice\n"},
        paths={"/sys/module/amdgpu": {"type": "dir"}, "/dev/kfd": char_dev(),
               "/dev/dri/renderD128": char_dev()})


def test_the_kernel_command_line_version_and_kfd_are_read_once() -> None:
    host = CountingHost(amd_machine())
    report = run_checks(host, all_checks())
    machine_facts(host, report.platform)
    ran = {r.id: r.status.value for r in report.results}
    # the readers' callers ran: the driver and mask checks (command line), kernel-version and
    # the machine object (/proc/version), the platform and kfd-access (/dev/kfd)
    assert ran["amdgpu-driver"] != "skip" and ran["ppfeaturemask"] == "warn"
    assert ran["kernel-version"] != "skip" and ran["kfd-access"] == "pass"
    for read in ("file /proc/cmdline", "file /proc/version", "stat /dev/kfd",
                 "stat /sys/module/amdgpu"):
        assert host.reads[read] == 1, (read, host.reads[read])
