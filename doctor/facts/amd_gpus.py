"""The AMD GPU inventory every check shares: which GPU agents exist, in HIP's order.

`amd_gpus(host)` runs `rocminfo` once per host (Host.memo). When rocminfo is not installed,
hangs or fails, the GPUs come from the KFD topology in sysfs instead
(`/sys/class/kfd/kfd/topology/nodes/<n>/properties`, lines `<name> <value>` written by
the kernel's amdkfd kfd_topology.c node_show()), which no environment variable changes.

Two environment variables change what rocminfo reports, and the inventory accounts for them:
ROCR_VISIBLE_DEVICES hides GPUs from it (so `index` is the position among the GPUs ROCr
exposes), and HSA_OVERRIDE_GFX_VERSION[_<node>] makes it report another target (so `gfx` is
read from sysfs when an override is set, and `reported_gfx` keeps what rocminfo said).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Optional

from rocmdoctor.facts.rocminfo import RocmAgent, RocminfoReport, parse_rocminfo
from rocmdoctor.host import CommandResult, Host
from rocmdoctor.kb import gfx as kb
from rocmdoctor.kb.rocminfo_failures import diagnose
from rocmdoctor.model import Fix

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
OVERRIDE_VAR = "HSA_OVERRIDE_GFX_VERSION"


@dataclass(frozen=True)
class GpuAgent:
    index: int  # 0-based order among GPU agents as HIP enumerates them (before HIP_VISIBLE_DEVICES)
    node: Optional[int]  # KFD node id
    gfx: str  # base target of the hardware, e.g. "gfx90a"
    gfx_full: str  # e.g. "gfx90a:sramecc+:xnack-" when known, else == gfx
    name: str  # marketing name, e.g. "AMD Radeon RX 7900 XTX"
    compute_units: Optional[int]
    uuid: Optional[str]  # "GPU-<16 hex>"; None when the GPU has none ("GPU-XX")
    is_integrated: bool  # APU / iGPU
    vram_bytes: Optional[int]
    reported_gfx: Optional[str] = None  # what rocminfo reported when an override changed it
    gfx_known: bool = True  # False when an override hides the real target (no sysfs)


@dataclass(frozen=True)
class RocminfoProblem:
    """Why rocminfo failed: what it said, the cause, and the fix (kb.rocminfo_failures)."""

    key: str
    said: str
    cause: str
    fix: Fix
    source: str
    likelihood: str = "possible"  # "likely": the message has one known cause


@dataclass(frozen=True)
class GpuInventory:
    source: str  # "rocminfo", "kfd-sysfs" or "none"
    gpus: tuple[GpuAgent, ...]
    failure: Optional[RocminfoProblem]  # why rocminfo failed, None when it worked
    rocminfo: Optional[CommandResult] = None  # None when rocminfo is not installed
    report: Optional[RocminfoReport] = None

    @property
    def timed_out(self) -> bool:
        return self.rocminfo is not None and self.rocminfo.timed_out


def discrete(inv: GpuInventory) -> tuple[GpuAgent, ...]:
    return tuple(g for g in inv.gpus if not g.is_integrated)


def integrated(inv: GpuInventory) -> tuple[GpuAgent, ...]:
    return tuple(g for g in inv.gpus if g.is_integrated)


def override_vars(env: Mapping[str, str]) -> dict[str, str]:
    """HSA_OVERRIDE_GFX_VERSION and its per-node forms HSA_OVERRIDE_GFX_VERSION_<node>."""
    return {k: v for k, v in env.items()
            if k == OVERRIDE_VAR or re.fullmatch(OVERRIDE_VAR + r"_\d+", k)}


def override_for_node(env: Mapping[str, str], node: Optional[int]) -> Optional[tuple[str, str]]:
    """(variable, value) that libhsakmt applies to a KFD node: the per-node form wins."""
    if node is not None and f"{OVERRIDE_VAR}_{node}" in env:
        return f"{OVERRIDE_VAR}_{node}", env[f"{OVERRIDE_VAR}_{node}"]
    if OVERRIDE_VAR in env:
        return OVERRIDE_VAR, env[OVERRIDE_VAR]
    return None


def parse_kfd_properties(text: str) -> dict[str, int]:
    """`<name> <unsigned>` lines of a KFD node's properties file; other lines are skipped."""
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        # A property is a 64-bit unsigned number: at most 20 digits (so int() never meets
        # Python's 4,300-digit limit).
        if (len(parts) == 2 and parts[1].isdigit() and parts[1].isascii()
                and len(parts[1].lstrip("0")) <= 20):
            props.setdefault(parts[0], int(parts[1].lstrip("0") or "0"))
    return props


def kfd_node_names(host: Host) -> Optional[tuple[str, ...]]:
    """The entries of the KFD topology's nodes folder (None: it does not exist, amdkfd did
    not start), read once."""

    def compute() -> Optional[tuple[str, ...]]:
        names = host.listdir(KFD_NODES)
        return tuple(names) if names is not None else None

    return host.memo("facts:kfd-nodes", compute)


def kfd_gpus(host: Host) -> tuple[GpuAgent, ...]:
    """GPU nodes of the KFD topology, in node order (the order ROCr enumerates them)."""

    def compute() -> tuple[GpuAgent, ...]:
        entries = [e for e in kfd_node_names(host) or []
                   if e.isascii() and e.isdigit() and len(e) <= 9]
        gpus: list[GpuAgent] = []
        for node in sorted(entries, key=int):
            props = parse_kfd_properties(host.read_file(f"{KFD_NODES}/{node}/properties") or "")
            simd = props.get("simd_count", 0)
            if simd == 0:
                continue  # a CPU node
            gfx = kb.kfd_target_version(props.get("gfx_target_version", 0)) or "unknown"
            per_cu = props.get("simd_per_cu", 0)
            unique_id = props.get("unique_id", 0)
            info = kb.target_info(gfx)
            node_name = (host.read_file(f"{KFD_NODES}/{node}/name") or "").strip()
            gpus.append(GpuAgent(
                index=len(gpus), node=int(node), gfx=gfx, gfx_full=gfx,
                name=info.products if info else (node_name or gfx),
                compute_units=simd // per_cu if per_cu else None,
                uuid=f"GPU-{unique_id:016x}" if unique_id else None,
                # A CRAT "APU node" has CPU cores and SIMDs (kfd_debug_print_topology).
                is_integrated=props.get("cpu_cores_count", 0) > 0 or kb.is_apu(gfx),
                vram_bytes=None,
            ))
        return tuple(gpus)

    return host.memo("gpus:kfd", compute)


def _agent_gfx(agent: RocmAgent) -> tuple[str, str]:
    isas = [i for i in agent.isas if "generic" not in i]
    gfx = kb.base_target(agent.name) if kb.is_gfx_name(agent.name) else ""
    if not gfx and isas:
        gfx = kb.base_target(isas[0])
    full = next((i for i in isas if kb.base_target(i) == gfx), gfx)
    return gfx, full


def gpus_from_report(report: RocminfoReport) -> tuple[GpuAgent, ...]:
    gpus: list[GpuAgent] = []
    for agent in report.gpus:
        gfx, full = _agent_gfx(agent)
        uuid = agent.uuid if agent.uuid and agent.uuid.upper() != "GPU-XX" else None
        vram = agent.vram_kb
        gpus.append(GpuAgent(
            index=len(gpus), node=agent.node, gfx=gfx or agent.name, gfx_full=full or agent.name,
            name=agent.marketing_name, compute_units=agent.compute_units,
            uuid=uuid if uuid and uuid.upper().startswith("GPU-") else None,
            is_integrated="APU" in agent.memory_properties.upper() or kb.is_apu(gfx),
            vram_bytes=vram * 1024 if vram is not None else None,
        ))
    return tuple(gpus)


def _real_targets(host: Host, gpus: tuple[GpuAgent, ...]) -> tuple[GpuAgent, ...]:
    """With an override set, rocminfo reports the override: take the real target from sysfs.
    Without sysfs, a reported target other than the override's is still the real one."""
    if not override_vars(host.env):
        return gpus
    by_node = {g.node: g for g in kfd_gpus(host)}
    fixed = []
    for g in gpus:
        applied = override_for_node(host.env, g.node)
        real = by_node.get(g.node)
        if applied is None:
            fixed.append(g)
        elif real is not None and real.gfx != g.gfx:
            fixed.append(replace(g, gfx=real.gfx, gfx_full=real.gfx, reported_gfx=g.gfx,
                                 is_integrated=g.is_integrated or real.is_integrated))
        elif real is None and g.gfx == kb.override_value_target(applied[1]):
            fixed.append(replace(g, gfx_known=False))
        else:
            fixed.append(g)
    return tuple(fixed)


def _problem(report: RocminfoReport) -> Optional[RocminfoProblem]:
    found = diagnose(report.text)
    if found is None:
        return None
    rule, said = found
    return RocminfoProblem(rule.key, said, rule.cause, rule.fix, rule.source, rule.likelihood)


def amd_gpus(host: Host) -> GpuInventory:
    """The GPU agents of this machine (memoized once per host)."""

    def compute() -> GpuInventory:
        result = host.run(["rocminfo"])  # the host's command timeout (--timeout)
        if result.not_found or result.timed_out:
            nodes = kfd_gpus(host)
            return GpuInventory("kfd-sysfs" if nodes else "none", nodes, None,
                                None if result.not_found else result)
        report = parse_rocminfo(result.stdout + "\n" + result.stderr)
        gpus = _real_targets(host, gpus_from_report(report))
        failure = _problem(report) if result.returncode != 0 or not gpus else None
        if gpus:
            return GpuInventory("rocminfo", gpus, failure, result, report)
        nodes = kfd_gpus(host)
        return GpuInventory("kfd-sysfs" if nodes else "none", nodes, failure, result, report)

    return host.memo("gpus:amd", compute)


# --- *_VISIBLE_DEVICES ---------------------------------------------------------------------

ROCM_UUID = re.compile(r"GPU-[0-9a-fA-F]{1,16}")  # ROCr: "GPU-" and 1-16 hex digits


@dataclass(frozen=True)
class Selection:
    """What one *_VISIBLE_DEVICES value selects from a list of GPUs."""

    var: str
    value: str
    chosen: tuple[GpuAgent, ...]
    problems: tuple[str, ...]
    kept: tuple[str, ...] = ()  # the entries that named a GPU, in order, without repeats


def select(var: str, value: str, devices: Sequence[GpuAgent],
           uuid_re: Optional[re.Pattern[str]] = ROCM_UUID, *, uuids: bool = True) -> Selection:
    """Apply a comma list of indices (and UUID prefixes matching `uuid_re`, unless `uuids`
    is False) to devices."""
    if not uuids:
        uuid_re = None
    if not value.strip():
        return Selection(var, value, (), (f"{var} is set but empty: it selects no GPU",))
    chosen: list[GpuAgent] = []
    problems: list[str] = []
    kept: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        match: Optional[GpuAgent] = None
        if entry.isdigit() and entry.isascii():
            digits = entry.lstrip("0") or "0"  # int() counts leading zeros to its limit
            i = int(digits) if len(digits) <= 9 else len(devices)  # past any GPU
            if i < len(devices):
                match = devices[i]
            else:
                span = f"0-{len(devices) - 1}" if devices else "none"
                problems.append(f"{var} entry {entry} does not exist "
                                f"({len(devices)} GPU(s) to choose from: {span})")
        elif entry.upper() == "GPU-XX":
            problems.append(f"{var} entry {entry} names no GPU (rocminfo prints it for GPUs "
                            "without a unique id)")
        elif uuid_re is not None and uuid_re.fullmatch(entry):
            hits = [d for d in devices if d.uuid and d.uuid.lower().startswith(entry.lower())]
            if len(hits) == 1:
                match = hits[0]
            else:
                problems.append(f"{var} entry {entry} matches "
                                f"{'no GPU' if not hits else 'more than one GPU'}")
        else:
            kind = "an index or a GPU UUID" if uuid_re is not None else "an index"
            problems.append(f"{var} entry {entry!r} is not {kind}")
        if match is not None:
            if match in chosen:
                problems.append(f"{var} lists GPU {entry} twice")
            else:
                chosen.append(match)
                kept.append(entry)
    return Selection(var, value, tuple(chosen), tuple(problems), tuple(kept))


# HIP takes HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES (ROCm gpu-isolation), else
# GPU_DEVICE_ORDINAL (ROCclr, indices only); each indexes the GPUs ROCr left visible.
HIP_LEVEL_VARS: tuple[tuple[str, Optional[re.Pattern[str]]], ...] = (
    ("HIP_VISIBLE_DEVICES", ROCM_UUID), ("CUDA_VISIBLE_DEVICES", ROCM_UUID),
    ("GPU_DEVICE_ORDINAL", None))


def hip_selection(env: Mapping[str, str], devices: Sequence[GpuAgent]) -> Optional[Selection]:
    """The HIP-level selection in force, or None when no HIP-level variable is set."""
    for var, uuid_re in HIP_LEVEL_VARS:
        if var in env:
            return select(var, env[var], devices, uuid_re)
    return None


def describe(gpu: GpuAgent) -> str:
    """'gfx1030 AMD Radeon RX 6800 XT' for findings and summaries."""
    if not gpu.name or gpu.gfx in gpu.name:
        return gpu.name or gpu.gfx
    return f"{gpu.gfx} {gpu.name}"
