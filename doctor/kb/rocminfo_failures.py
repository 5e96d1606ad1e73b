"""What rocminfo prints when it cannot reach the GPU: the message, its cause and the fix
the thread behind it arrived at.

rocminfo checks `/sys/module/amdgpu/initstate` ("ROCk module ... is loaded / is NOT loaded /
is NOT live"), then opens /dev/kfd read-write and prints `strerror(errno)` when that fails,
then starts the HSA runtime and prints "hsa api call failure at: ..." / "Call returned
<HSA_STATUS_...>" when a call fails (ROCm/rocminfo rocminfo.cc, CheckInitialState).
Entries are ordered: the first whose pattern matches explains the failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.model import Fix

ROCMINFO_SRC = "https://github.com/ROCm/rocminfo/blob/develop/rocminfo.cc"
PREREQUISITES = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/prerequisites.html"
)
DOCKER_DOC = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html"

DMESG_KFD = "sudo dmesg | grep -iE 'kfd|amdgpu'"


@dataclass(frozen=True)
class RocminfoFailure:
    key: str
    pattern: str  # regular expression searched in rocminfo's cleaned output
    cause: str
    fix: Fix
    source: str
    # "likely" when the message has one known cause, "possible" when it has several (or the
    # cause rests on one thread's case): what the finding says before the cause.
    likelihood: str = "possible"

    def search(self, text: str) -> Optional[str]:
        """The output line that matched, or None."""
        m = re.search(self.pattern, text, re.MULTILINE)
        if m is None:
            return None
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        return text[start:end if end >= 0 else len(text)].strip()


_KFD = r"Unable to open /dev/kfd read-write: "

ROCMINFO_FAILURES: tuple[RocminfoFailure, ...] = (
    RocminfoFailure(
        "rock-not-loaded", r"ROCk module is NOT loaded",
        "the amdgpu kernel driver is not loaded (/sys/module/amdgpu/initstate does not exist): "
        "no AMD GPU is attached to this machine or VM, the driver is blacklisted, or the "
        "amdgpu module failed to load; in ROCm#1498 an Azure NVv4 VM's fractional MI25 was "
        "never bound to amdgpu",
        Fix("Load the amdgpu driver, then read the kernel log for why it did not load.",
            commands=("sudo modprobe amdgpu", "sudo dmesg | grep -i amdgpu"), needs_root=True),
        "https://github.com/ROCm/ROCm/issues/1498"),
    RocminfoFailure(
        "rock-not-live", r"ROCk module is NOT live",
        "the amdgpu driver is loaded but did not finish initializing "
        "(/sys/module/amdgpu/initstate is not 'live')",
        Fix("Read the kernel log for the amdgpu initialization error.",
            commands=(DMESG_KFD,), needs_root=True),
        ROCMINFO_SRC, likelihood="likely"),
    RocminfoFailure(
        "kfd-einval", _KFD + r"Invalid argument",
        "/dev/kfd was not passed into this container properly: inside it the device belongs "
        "to nobody:nogroup (a user-namespace mapping), so the driver refuses it even for root; "
        "in ROCm#4043 a fresh container started with the device flags worked",
        Fix("Start a new container with the GPU devices passed in: "
            "`docker run --device /dev/kfd --device /dev/dri --group-add video "
            "--security-opt seccomp=unconfined <image>`. The thread also suggests a host udev "
            "rule `KERNEL==\"kfd\", MODE=\"0666\"`. Check the owner inside the container:",
            commands=("ls -ln /dev/kfd /dev/dri",)),
        "https://github.com/ROCm/ROCm/issues/4043", likelihood="likely"),
    RocminfoFailure(
        "kfd-eacces", _KFD + r"Permission denied",
        "your user may not open /dev/kfd: it is not in the group that owns it "
        "(render, or video on older systems)",
        Fix("Add your user to the render and video groups, then log out and in again.",
            commands=("sudo usermod -aG render,video $USER",), needs_root=True,
            needs_relogin=True),
        PREREQUISITES, likelihood="likely"),
    RocminfoFailure(
        "kfd-eperm", _KFD + r"Operation not permitted",
        "the KFD driver refused /dev/kfd although its permissions allow it; in ROCm#1176 the "
        "driver crashed (kernel Oops in set_trap_handler) on a Raven APU (gfx902) that this "
        "ROCm does not support",
        Fix("Read the kernel log: an Oops or 'not supported' line names the GPU the driver "
            "rejected. Use a GPU, kernel and ROCm release that support each other.",
            commands=(DMESG_KFD,), needs_root=True),
        "https://github.com/ROCm/ROCm/issues/1176"),
    RocminfoFailure(
        "kfd-enomem", _KFD + r"Cannot allocate memory",
        "the KFD driver did not take the GPU: in ROCm#1318 dmesg showed 'kfd: DID 7340 is "
        "missing in supported_devices' (a kernel whose KFD does not know the GPU); in ROCm#1174 "
        "the answer was to look for 'PCI rejects atomics' (GFX8 cards need PCIe atomics)",
        Fix("Read why the KFD skipped the GPU, then use a kernel (or amdgpu-dkms) that "
            "supports it, or a slot/CPU with PCIe atomics for GFX8 cards.",
            commands=("sudo dmesg | grep kfd",), needs_root=True),
        "https://github.com/ROCm/ROCm/issues/1318"),
    RocminfoFailure(
        "kfd-enoent", _KFD + r"No such file or directory",
        "/dev/kfd does not exist: the amdgpu/KFD driver is not loaded, or this container was "
        "started without the GPU devices",
        Fix("On the host, check that the driver is loaded; in a container, start it with "
            "--device /dev/kfd --device /dev/dri (Apptainer: --bind /dev/kfd,/dev/dri).",
            commands=("ls -l /dev/kfd", "lsmod | grep amdgpu")),
        "https://github.com/ROCm/ROCm/issues/1798"),
    RocminfoFailure(
        "kfd-other", _KFD + r"\S",
        "rocminfo could not open /dev/kfd",
        Fix("Read the kernel log for the KFD error.", commands=(DMESG_KFD,), needs_root=True),
        ROCMINFO_SRC),
    RocminfoFailure(
        "hsa-failure", r"hsa api call failure|Call returned HSA_STATUS_\w+",
        "the ROCm runtime (HSA) failed to start although /dev/kfd opened",
        Fix("Run rocminfo with the thunk's debug log to see the failing step, and read the "
            "kernel log.",
            commands=("HSAKMT_DEBUG_LEVEL=7 rocminfo", DMESG_KFD), needs_root=True),
        "https://github.com/ROCm/rocminfo/issues/41"),
)


def diagnose(text: str) -> Optional[tuple[RocminfoFailure, str]]:
    """The known failure in rocminfo's cleaned output and the line that shows it, if any."""
    for failure in ROCMINFO_FAILURES:
        line = failure.search(text)
        if line is not None:
            return failure, line
    return None
