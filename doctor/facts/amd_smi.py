"""AMD GPUs as `amd-smi static --json`, `amd-smi metric --json` and `amd-smi firmware --json`
report them: RAS features, compute and memory partition, ECC counters, violation (throttle)
status and the firmware the driver loaded.

The keys are amd-smi's own (ROCm/amdsmi, amdsmi_cli/amdsmi_commands.py at 0ceca28f): static
`asic.market_name`, `bus.bdf`, `ras.{eeprom_version, parity_schema, ..., ecc_block_state}`,
`partition.{compute_partition, memory_partition}`; metric `ecc.{total_correctable_count,
total_uncorrectable_count, total_deferred_count}`, `ecc_blocks.<BLOCK>.{correctable_count,
uncorrectable_count, deferred_count}`, `throttle.<name>_violation_status` ("ACTIVE" / "NOT
ACTIVE"); firmware `fw_list[].{fw_id, fw_version}`. A value amd-smi cannot read is "N/A".
Builds differ in the envelope: a bare list of GPUs, or `{"gpu_data": [...]}`; Python warnings
may come before the JSON. Truncated or non-JSON output gives no GPUs and says why.

By hand: `amd-smi static --json`, `amd-smi metric --json`, `amd-smi firmware --json`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.host import CommandResult, Host

AMDSMI_COMMANDS = ("https://github.com/ROCm/amdsmi/blob/0ceca28f4139dced5e9b5739a3f393780d7add48/"
                   "amdsmi_cli/amdsmi_commands.py")
MAX_JSON_CHARS = 8 * 1024 * 1024


def _na(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().upper() in ("N/A", ""))


def number(value: Any) -> Optional[int]:
    """An integer count from a JSON value (int, "12", {"value": 12}); None for N/A."""
    if isinstance(value, Mapping):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if (isinstance(value, str) and value.strip().isascii() and value.strip().isdigit()
            and len(value.strip()) < 19):
        return int(value.strip())
    return None


def text(value: Any) -> Optional[str]:
    return None if _na(value) or not isinstance(value, (str, int, float)) else str(value)


def parse_amd_smi_json(out: str) -> tuple[list[Mapping[str, Any]], Optional[str]]:
    """(the per-GPU objects, why there are none) from an amd-smi --json output."""
    out = out[:MAX_JSON_CHARS]
    starts = [i for i in (out.find("["), out.find("{")) if i >= 0]
    if not starts:
        return [], "printed no JSON"
    try:
        data = json.loads(out[min(starts):])
    except (ValueError, RecursionError):  # JSONDecodeError, or a number of 4,300+ digits
        return [], "printed JSON that does not parse (cut off?)"
    if isinstance(data, Mapping):
        data = data.get("gpu_data", [data] if "gpu" in data else [])
    if not isinstance(data, list):
        return [], "printed JSON of an unknown shape"
    return [d for d in data if isinstance(d, Mapping)], None


@dataclass(frozen=True)
class AmdSmiGpu:
    gpu: int
    static: Mapping[str, Any] = field(default_factory=dict)
    metric: Mapping[str, Any] = field(default_factory=dict)
    firmware: Mapping[str, Any] = field(default_factory=dict)

    def _get(self, where: Mapping[str, Any], *path: str) -> Any:
        node: Any = where
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node

    @property
    def name(self) -> str:
        return text(self._get(self.static, "asic", "market_name")) or f"GPU {self.gpu}"

    @property
    def bdf(self) -> Optional[str]:
        return text(self._get(self.static, "bus", "bdf"))

    @property
    def partition(self) -> tuple[Optional[str], Optional[str]]:
        """(compute partition "SPX"/"CPX"/..., memory partition "NPS1"/"NPS4")."""
        return (text(self._get(self.static, "partition", "compute_partition")),
                text(self._get(self.static, "partition", "memory_partition")))

    @property
    def ras(self) -> Mapping[str, Any]:
        ras = self._get(self.static, "ras")
        return ras if isinstance(ras, Mapping) else {}

    def ecc(self, kind: str) -> Optional[int]:
        """Total ECC count of `kind` (correctable, uncorrectable, deferred)."""
        return number(self._get(self.metric, "ecc", f"total_{kind}_count"))

    @property
    def ecc_blocks(self) -> dict[str, dict[str, Optional[int]]]:
        blocks = self._get(self.metric, "ecc_blocks")
        if not isinstance(blocks, Mapping):
            return {}
        return {str(b): {k: number(v.get(f"{k}_count")) for k in
                         ("correctable", "uncorrectable", "deferred")}
                for b, v in blocks.items() if isinstance(v, Mapping)}

    @property
    def active_violations(self) -> list[str]:
        throttle = self._get(self.metric, "throttle")
        if not isinstance(throttle, Mapping):
            return []
        return [str(k)[:-len("_violation_status")] for k, v in throttle.items()
                if str(k).endswith("_violation_status") and isinstance(v, str)
                and v.strip().upper() == "ACTIVE"]

    @property
    def firmware_versions(self) -> dict[str, str]:
        fws = self._get(self.firmware, "fw_list")
        found: dict[str, str] = {}
        for fw in fws if isinstance(fws, list) else []:
            if isinstance(fw, Mapping) and len(fw) == 1 and isinstance(
                    next(iter(fw.values())), Mapping):
                fw = next(iter(fw.values()))  # {"FW 0": {...}} in some builds
            if isinstance(fw, Mapping) and text(fw.get("fw_id")) and text(fw.get("fw_version")):
                found[str(fw["fw_id"])] = str(fw["fw_version"])
        return found


@dataclass(frozen=True)
class AmdSmiReport:
    gpus: tuple[AmdSmiGpu, ...]
    installed: bool
    problems: tuple[str, ...]  # "`amd-smi metric --json` printed JSON that does not parse"


def _said(key: str, result: CommandResult) -> str:
    if result.timed_out:
        return f"`{key}` did not finish"
    first = next((ln.strip() for ln in (result.stderr + "\n" + result.stdout).splitlines()
                  if ln.strip()), "")
    return f"`{key}` failed: {first[:200]}" if first else f"`{key}` exited {result.returncode}"


def amd_smi(host: Host, parts: tuple[str, ...] = ("static", "metric", "firmware")) -> AmdSmiReport:
    """What amd-smi reports per GPU (memoised per set of subcommands)."""

    def compute() -> AmdSmiReport:
        by_gpu: dict[int, dict[str, Mapping[str, Any]]] = {}
        problems: list[str] = []
        for part in parts:
            argv = ["amd-smi", part, "--json"]
            result = host.run(argv)
            key = " ".join(argv)
            if result.not_found and not by_gpu and not problems:
                return AmdSmiReport((), False, ("amd-smi is not installed",))
            if not result.ok:
                problems.append(_said(key, result))
                continue
            entries, why = parse_amd_smi_json(result.stdout)
            if why:
                problems.append(f"`{key}` {why}")
            for position, entry in enumerate(entries):
                index = number(entry.get("gpu"))
                by_gpu.setdefault(position if index is None else index, {})[part] = entry
        gpus = tuple(AmdSmiGpu(i, d.get("static", {}), d.get("metric", {}), d.get("firmware", {}))
                     for i, d in sorted(by_gpu.items()))
        return AmdSmiReport(gpus, True, tuple(problems))

    return host.memo("amd-smi:" + ",".join(parts), compute)
