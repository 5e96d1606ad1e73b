"""The host memory a CPU benchmark may use: what it uses now plus most of what is free to it
(MemAvailable, or less where its cgroup v2 limit leaves less), set as its data limit, so that
a batch too large for the machine fails at once as out of memory instead of growing into swap
until the kernel's out-of-memory killer ends it."""

from __future__ import annotations

import resource
from typing import Optional

HOST_SHARE = 0.9


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(1 << 16)
    except OSError:
        return None


def _count(text: str) -> Optional[int]:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 30:
        return None
    return int(text)


def _kib_field(text: Optional[str], name: str) -> Optional[int]:
    """`name:   123 kB` from /proc/meminfo or /proc/self/status, in bytes."""
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        if key == name:
            kib = _count((rest.split() or [""])[0])
            return None if kib is None else kib * 1024
    return None


def host_memory_limit(meminfo: Optional[str], cgroup_max: Optional[str],
                      cgroup_current: Optional[str], vm_data: Optional[int]) -> Optional[int]:
    """The data size a CPU run may reach: what it uses now plus HOST_SHARE of the memory
    free to it (MemAvailable, or less when its cgroup v2 limit leaves less)."""
    free = _kib_field(meminfo, "MemAvailable")
    limit, used = _count(cgroup_max or ""), _count(cgroup_current or "")
    if limit is not None and used is not None:
        left = max(0, limit - used)
        free = left if free is None else min(free, left)
    if free is None:
        return None
    return (vm_data or 0) + int(free * HOST_SHARE)


def bound_host_memory() -> Optional[int]:
    """On the CPU a batch lives in host memory. Past what is free Linux overcommits: the
    process grows into swap until the OOM killer ends it (a batch of 10^12 grew one to
    18 GB). A data limit (RLIMIT_DATA, which counts malloc's heap and anonymous mappings)
    at what is free makes such a batch fail at once with an out-of-memory error, which the
    max-batch search and the bench's halving read as "does not fit". Returns the limit."""
    limit = host_memory_limit(_read("/proc/meminfo"), _read("/sys/fs/cgroup/memory.max"),
                              _read("/sys/fs/cgroup/memory.current"),
                              _kib_field(_read("/proc/self/status"), "VmData"))
    if limit is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        return soft  # the user's own limit is tighter
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):
        return None
    return limit


