"""The CPU: its model name and logical CPU count, from /proc/cpuinfo.

By hand: `grep -m1 'model name' /proc/cpuinfo; grep -c ^processor /proc/cpuinfo`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host


@dataclass(frozen=True)
class CpuInfo:
    model: Optional[str]
    logical: int  # processor entries (0 when unknown)

    def describe(self) -> Optional[str]:
        """'AMD EPYC 9474F 48-Core Processor (192 logical CPUs)'."""
        if self.model is None:
            return None
        return f"{self.model} ({self.logical} logical CPUs)" if self.logical else self.model


def parse_cpuinfo(text: str) -> CpuInfo:
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return CpuInfo(match.group(1).strip() if match else None,
                   len(re.findall(r"^processor\s*:", text, re.MULTILINE)))


def cpu_info(host: Host) -> CpuInfo:
    return host.memo("cpu:info", lambda: parse_cpuinfo(host.read_file("/proc/cpuinfo") or ""))


def numa_balancing(host: Host) -> Optional[bool]:
    """Whether the kernel's automatic NUMA balancing is on (/proc/sys/kernel/numa_balancing:
    1 on, 0 off); None where the file cannot be read."""
    def read() -> Optional[bool]:
        value = (host.read_file("/proc/sys/kernel/numa_balancing") or "").strip()
        return {"1": True, "0": False}.get(value)
    return host.memo("cpu:numa_balancing", read)
