"""NVIDIA GPUs as `nvidia-smi -q` describes them: the PCIe link, ECC counters, retired pages,
remapped rows, clock event (throttle) reasons, MIG mode and the reset status.

The format is nvidia-smi's documented query output (https://docs.nvidia.com/deploy/nvidia-smi/):
a "GPU 00000000:01:00.0" line per GPU, then "Key : Value" lines and section headers, nested by
four-space indentation. "N/A" means the GPU or driver does not report it (consumer GPUs have
no ECC). Older drivers name the clock section "Clocks Throttle Reasons" instead of "Clocks
Event Reasons".

By hand: `nvidia-smi -q` (or `nvidia-smi -q -d ECC,PCIE,PERFORMANCE,ROW_REMAPPER,PAGE_RETIREMENT`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from rocmdoctor.host import CommandResult, Host

QUERY = ("nvidia-smi", "-q")
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_LINE = re.compile(r"^( *)([^:]+?)\s*(?::\s?(.*))?$")
# Reasons that lower the clocks on purpose, not because something is wrong.
_BENIGN_REASONS = ("Idle", "Applications Clocks Setting", "Display Clock Setting", "Sync Boost")

Tree = dict[str, Union[str, "Tree"]]


@dataclass(frozen=True)
class SmiGpu:
    bus_id: str  # "0000:01:00.0"
    tree: Tree = field(default_factory=dict)

    def get(self, *path: str) -> Optional[str]:
        node: Any = self.tree
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node if isinstance(node, str) else None

    def section(self, *path: str) -> Tree:
        node: Any = self.tree
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    @property
    def name(self) -> str:
        return self.get("Product Name") or "NVIDIA GPU"

    def number(self, *path: str) -> Optional[int]:
        return _int(self.get(*path))

    @property
    def link(self) -> tuple[Optional[int], Optional[int], Optional[int], Optional[int],
                            Optional[int]]:
        """(generation max, current, host max, width max, current) of the GPU's PCIe link."""
        base = ("PCI", "GPU Link Info")
        return (self.number(*base, "PCIe Generation", "Max"),
                self.number(*base, "PCIe Generation", "Current"),
                self.number(*base, "PCIe Generation", "Host Max"),
                self.number(*base, "Link Width", "Max"),
                self.number(*base, "Link Width", "Current"))

    @property
    def ecc_enabled(self) -> Optional[bool]:
        mode = (self.get("ECC Mode", "Current") or "").lower()
        return {"enabled": True, "disabled": False}.get(mode)

    def ecc_total(self, scope: str, uncorrectable: bool) -> Optional[int]:
        """Sum of the Volatile or Aggregate ECC counters of one kind; None when none is
        reported."""
        return _sum(self.section("ECC Errors", scope), uncorrectable)

    @property
    def throttle_reasons(self) -> list[str]:
        section = self.section("Clocks Event Reasons") or self.section("Clocks Throttle Reasons")
        return [k for k, v in _flatten(section) if v.strip().lower() == "active"
                and k not in _BENIGN_REASONS]


def _int(text: Optional[str]) -> Optional[int]:
    m = re.match(r"\s*(\d{1,12})", text or "")
    return int(m.group(1)) if m else None


def _flatten(tree: Tree) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out.extend(_flatten(value))
        else:
            out.append((key, value))
    return out


def _sum(tree: Tree, uncorrectable: bool) -> Optional[int]:
    total: Optional[int] = None
    for key, value in _flatten(tree):
        lowered = key.lower()
        bad = "uncorrectable" in lowered or "double bit" in lowered
        good = ("correctable" in lowered and not bad) or "single bit" in lowered
        if (bad if uncorrectable else good) and _int(value) is not None:
            total = (total or 0) + (_int(value) or 0)
    return total


def parse_nvidia_smi_q(text: str) -> list[SmiGpu]:
    """One SmiGpu per "GPU <bus id>" block; never raises on arbitrary text."""
    gpus: list[SmiGpu] = []
    stack: list[tuple[int, Tree]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        head = _GPU.match(raw)
        if head:
            bus = head.group(1)
            tree: Tree = {}
            gpus.append(SmiGpu(bus[-12:].lower(), tree))
            stack = [(0, tree)]
            continue
        if not stack:
            continue
        m = _LINE.match(raw.rstrip())
        if m is None:
            continue
        indent, key, value = len(m.group(1)), m.group(2).strip(), m.group(3)
        while len(stack) > 1 and indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        if value is None or value == "" and not raw.rstrip().endswith(":"):
            child: Tree = {}
            parent.setdefault(key, child)
            node = parent[key]
            if isinstance(node, dict):
                stack.append((indent, node))
        else:
            parent[key] = value.strip()[:200]
    return gpus


@dataclass(frozen=True)
class SmiReport:
    gpus: tuple[SmiGpu, ...]
    result: CommandResult


def nvidia_smi_q(host: Host) -> SmiReport:
    """`nvidia-smi -q`, parsed (memoised)."""

    def compute() -> SmiReport:
        result = host.run(list(QUERY))
        gpus = parse_nvidia_smi_q(result.stdout) if result.ok else []
        return SmiReport(tuple(gpus), result)

    return host.memo("nvidia:smi-q", compute)
