"""NVIDIA GPUs as `nvidia-smi --query-gpu ... --format=csv,noheader,nounits` reports them.

The format is NVIDIA's documented CSV query output (`nvidia-smi --help-query-gpu`,
https://docs.nvidia.com/deploy/nvidia-smi/index.html): one line per GPU, the fields in the
order asked for, separated by ", "; `nounits` drops " W"/" MiB"; a value the GPU or driver
cannot give reads "[N/A]" or "[Not Supported]". Older drivers (before `compute_cap` existed)
reject the field with 'Field "compute_cap" is not a valid field to query.', so the query is
repeated without it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import CommandResult, Host, command_key

NVIDIA_SMI_DOCS = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "driver_version", "compute_cap", "persistence_mode", "power.limit",
    "power.default_limit", "memory.total", "uuid", "pci.bus_id",
)
LEGACY_FIELDS: tuple[str, ...] = tuple(f for f in QUERY_FIELDS if f != "compute_cap")


def query_argv(fields: tuple[str, ...] = QUERY_FIELDS) -> list[str]:
    return ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]


QUERY_KEY = command_key(query_argv())
LEGACY_KEY = command_key(query_argv(LEGACY_FIELDS))
_MISSING = {"", "n/a", "[n/a]", "[not supported]", "[unknown error]",
            "[insufficient permissions]", "[gpu is lost]"}


@dataclass(frozen=True)
class NvidiaGpu:
    index: int
    name: str
    driver_version: Optional[str] = None
    compute_cap: Optional[str] = None  # "9.0"
    persistence_mode: Optional[bool] = None
    power_limit_w: Optional[float] = None
    power_default_limit_w: Optional[float] = None
    memory_total_mib: Optional[int] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None

    @property
    def sm(self) -> Optional[str]:
        """"sm_90" from compute capability "9.0"."""
        if not self.compute_cap:
            return None
        major, _, minor = self.compute_cap.partition(".")
        ok = major.isascii() and major.isdigit() and (minor or "0").isascii()
        return f"sm_{major}{minor or '0'}" if ok and (minor or "0").isdigit() else None


@dataclass(frozen=True)
class NvidiaInventory:
    gpus: tuple[NvidiaGpu, ...]
    result: CommandResult
    command: str
    error: Optional[str] = None  # why nvidia-smi gave no GPUs, in its own words

    @property
    def driver_version(self) -> Optional[str]:
        versions = [g.driver_version for g in self.gpus if g.driver_version]
        return versions[0] if versions else None


def _value(raw: str) -> Optional[str]:
    value = raw.strip()
    return None if value.lower() in _MISSING else value


def _number(raw: Optional[str]) -> Optional[float]:
    if raw is None:
        return None
    text = raw.split()[0] if raw.split() else ""  # tolerate " W" / " MiB" without nounits
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # 1e309 is inf, "nan" parses too


def _persistence(raw: Optional[str]) -> Optional[bool]:
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered in ("enabled", "on"):
        return True
    if lowered in ("disabled", "off"):
        return False
    return None


def parse_query_gpu(text: str, fields: tuple[str, ...] = QUERY_FIELDS) -> list[NvidiaGpu]:
    """GPUs from the CSV query output; lines that do not fit the field list are skipped."""
    gpus: list[NvidiaGpu] = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for row in csv.reader(lines, skipinitialspace=True):
        if len(row) != len(fields):
            continue
        values = {name: _value(raw) for name, raw in zip(fields, row)}
        index_text = values.get("index")
        name = values.get("name")
        if (index_text is None or not (index_text.isascii() and index_text.isdigit())
                or len(index_text) > 9 or not name):
            continue
        memory = _number(values.get("memory.total"))
        gpus.append(NvidiaGpu(
            index=int(index_text),
            name=name,
            driver_version=values.get("driver_version"),
            compute_cap=values.get("compute_cap"),
            persistence_mode=_persistence(values.get("persistence_mode")),
            power_limit_w=_number(values.get("power.limit")),
            power_default_limit_w=_number(values.get("power.default_limit")),
            memory_total_mib=int(memory) if memory is not None else None,
            uuid=values.get("uuid"),
            pci_bus_id=values.get("pci.bus_id"),
        ))
    return gpus


def _first_line(res: CommandResult) -> str:
    for text in (res.stdout, res.stderr):
        for line in text.splitlines():
            if line.strip():
                return line.strip()[:300]
    return f"exit status {res.returncode}"


PROC_VERSION = "/proc/driver/nvidia/version"


def proc_driver_version(host: Host) -> Optional[str]:
    """The loaded kernel module's version from /proc/driver/nvidia/version ("NVRM version:
    NVIDIA UNIX x86_64 Kernel Module  580.95.05 ..."), None when no NVIDIA module is loaded."""
    text = (host.read_file(PROC_VERSION) or "").strip()
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return text.splitlines()[0][:120] if text else None


def smi_list(host: Host) -> Optional[str]:
    """What `nvidia-smi -L` prints ("GPU 0: NVIDIA H200 (UUID: GPU-...)" per GPU); None when
    it did not answer."""
    result = host.run(["nvidia-smi", "-L"])
    return result.stdout if result.ok else None


def nvidia_driver_version(host: Host) -> Optional[str]:
    """The NVIDIA driver version nvidia-smi reports, None on machines without NVIDIA signs."""
    from rocmdoctor.facts.platform import nvidia_signals

    if not nvidia_signals(host):
        return None
    return nvidia_gpus(host).driver_version


def nvidia_gpus(host: Host) -> NvidiaInventory:
    """The NVIDIA GPUs on this host (memoized). `error` is set when nvidia-smi gave none."""

    def compute() -> NvidiaInventory:
        fields = QUERY_FIELDS
        res = host.run(query_argv(fields))
        if not res.ok and not res.timed_out and "not a valid field" in (res.stdout + res.stderr):
            fields = LEGACY_FIELDS
            res = host.run(query_argv(fields))
        key = command_key(query_argv(fields))
        if res.timed_out:
            return NvidiaInventory((), res, key, "nvidia-smi did not answer")
        if res.not_found:
            return NvidiaInventory((), res, key, "nvidia-smi is not installed")
        if not res.ok:
            return NvidiaInventory((), res, key, _first_line(res))
        gpus = tuple(parse_query_gpu(res.stdout, fields))
        error = None if gpus else f"nvidia-smi listed no GPUs ({_first_line(res)})"
        return NvidiaInventory(gpus, res, key, error)

    return host.memo("nvidia:gpus", compute)
