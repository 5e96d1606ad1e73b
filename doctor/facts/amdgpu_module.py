"""The amdgpu kernel module: loaded or not, live or not, its version, and what DKMS built.

/sys/module/amdgpu/version exists only for AMD's out-of-tree (DKMS) module; the kernel's own
amdgpu carries no version of its own.

By hand: `cat /sys/module/amdgpu/initstate` prints `live`; `cat /sys/module/amdgpu/version`;
`grep amdgpu /proc/modules`; `dkms status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host

MODULE_DIR = "/sys/module/amdgpu"
VERSION_FILE = "/sys/module/amdgpu/version"
INITSTATE_FILE = "/sys/module/amdgpu/initstate"


def parse_proc_modules(text: str) -> dict[str, str]:
    """Module name -> state (Live, Loading, Unloading) from /proc/modules lines
    `name size refcount deps state address [(taints)]`."""
    return {p[0]: p[4] for p in (line.split() for line in text.splitlines()) if len(p) >= 5}


@dataclass(frozen=True)
class DkmsEntry:
    module: str
    version: str
    kernel: Optional[str]
    status: str  # installed, built or added, possibly with a note after it


def parse_dkms_status(text: str) -> list[DkmsEntry]:
    """Old `amdgpu, 3.3-19, 5.0.0-23-generic, x86_64: installed` lines and new
    `amdgpu/6.12.12-2133686.22.04, 6.8.0-52-generic, x86_64: installed` ones."""
    entries = []
    for line in text.splitlines():
        head, sep, status = line.strip().rpartition(": ")
        fields = [f.strip() for f in head.split(",")]
        if not sep:
            continue
        if "/" in fields[0]:
            module, version = fields[0].split("/", 1)
            rest = fields[1:]
        elif len(fields) >= 2:
            module, version, rest = fields[0], fields[1], fields[2:]
        else:
            continue
        if module and version and " " not in module:
            entries.append(DkmsEntry(module, version, rest[0] if rest else None, status.strip()))
    return entries


@dataclass(frozen=True)
class AmdgpuModule:
    """What the kernel says about amdgpu right now."""

    present: bool  # /sys/module/amdgpu exists (loaded, or built into the kernel)
    proc_state: Optional[str]  # its /proc/modules state (Live, Loading, ...); None: not listed
    initstate: Optional[str]  # /sys/module/amdgpu/initstate, lower case
    version: Optional[str]  # AMD's DKMS driver version; None for the kernel's own driver

    @property
    def loaded(self) -> bool:
        return self.present or self.proc_state is not None

    @property
    def state(self) -> Optional[str]:
        """"live", "coming", "going", ...: the initstate, else the /proc/modules state."""
        return self.initstate or (self.proc_state.lower() if self.proc_state else None)


def dkms_version(host: Host) -> Optional[str]:
    """AMD's DKMS driver version (/sys/module/amdgpu/version); None for the kernel's own
    driver or none loaded."""
    return (host.read_file(VERSION_FILE) or "").strip() or None


def module_present(host: Host) -> bool:
    return host.exists(MODULE_DIR)


def amdgpu_module(host: Host) -> AmdgpuModule:
    """The amdgpu module's facts, read once per host."""

    def compute() -> AmdgpuModule:
        modules = host.read_file("/proc/modules")
        state = parse_proc_modules(modules).get("amdgpu") if modules else None
        return AmdgpuModule(
            present=module_present(host),
            proc_state=state,
            initstate=(host.read_file(INITSTATE_FILE) or "").strip().lower() or None,
            version=dkms_version(host),
        )

    return host.memo("amdgpu:module", compute)


def dkms_entries(host: Host) -> list[DkmsEntry]:
    """The amdgpu lines of `dkms status` (none when DKMS is not installed)."""
    return host.memo("amdgpu:dkms", lambda: [
        e for e in parse_dkms_status(host.run(["dkms", "status"]).stdout) if e.module == "amdgpu"])


def describe_driver(host: Host) -> str:
    """'6.8.5 (AMD DKMS)', 'inbox driver of kernel X' or 'not loaded'."""
    if not module_present(host):
        return "not loaded"
    version = dkms_version(host)
    if version:
        return f"{version} (AMD DKMS)"
    return f"inbox driver of kernel {host.platform.kernel_release}"
