"""`rocmdoctor fleet summarize`: many `check --json` reports, one view.

Pure logic: load reports (a bad file is a one-line reason, never a traceback), group nodes
by their versions (the `machine` object: facts/machine.py reads it, render/machine.py draws
it), name the odd ones out and what differs from
the largest group, and gather each check's failures and warnings with their fixes
deduplicated across nodes. rocmdoctor.render.fleet renders the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from rocmdoctor import schemas
from rocmdoctor.model import Fix

SCHEMA = schemas.FLEET
CHECK_SCHEMA = schemas.CHECK
STATUSES = ("pass", "warn", "fail", "skip", "error")
# The versions that make nodes "the same": a node differing in one is an odd one out.
VERSION_FIELDS = ("gpus", "rocm", "amdgpu_driver", "nvidia_driver", "torch", "torchvision")
UNNAMED = ("", "<redacted>")


class FleetInputError(Exception):
    """A report that cannot be used; the message is one line naming the file."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file, self.reason = file, reason


@dataclass(frozen=True)
class NodeFigure:
    """One measured figure of `check --deep` as a node's report carries it."""

    key: str
    name: str
    gpu: Optional[int]
    value: float
    unit: str


@dataclass(frozen=True)
class NodeCheck:
    id: str
    title: str
    status: str
    summary: str
    fix: Optional[Fix] = None
    figures: tuple[NodeFigure, ...] = ()


@dataclass(frozen=True)
class NodeReport:
    name: str
    file: str
    platform: str
    machine: Mapping[str, Any]
    checks: tuple[NodeCheck, ...]

    def status(self, check_id: str) -> Optional[str]:
        return next((c.status for c in self.checks if c.id == check_id), None)

    @property
    def failed(self) -> bool:
        return any(c.status in ("fail", "error") for c in self.checks)

    @property
    def warned(self) -> bool:
        return any(c.status == "warn" for c in self.checks)

    @property
    def versions(self) -> tuple[Any, ...]:
        return tuple(tuple(self.machine.get(f) or ()) if f == "gpus" else self.machine.get(f)
                     for f in VERSION_FIELDS)


@dataclass(frozen=True)
class Group:
    nodes: tuple[str, ...]
    versions: Mapping[str, Any]
    differs: tuple[tuple[str, Any, Any], ...]  # (field, this group's value, the largest's)


@dataclass(frozen=True)
class Problem:
    kind: str  # "failures" (fail, error) or "warnings"
    id: str
    title: str
    nodes: tuple[str, ...]
    summaries: tuple[tuple[str, str, tuple[str, ...]], ...]  # (status, summary, nodes)
    fixes: tuple[tuple[Fix, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Measured:
    """One measured figure across the nodes that have it: each node's slowest GPU, the median
    node, and the nodes well below it."""

    check: str
    key: str
    name: str
    unit: str
    values: tuple[tuple[str, float], ...]  # (node, its slowest GPU's value)
    median: float
    slow: tuple[tuple[str, float], ...]  # (node, value / median, as the better direction)


@dataclass(frozen=True)
class Fleet:
    nodes: tuple[NodeReport, ...]
    groups: tuple[Group, ...]
    columns: tuple[str, ...]
    problems: tuple[Problem, ...]
    unusable: tuple[tuple[str, str], ...] = ()
    measured: tuple[Measured, ...] = ()

    @property
    def exit_code(self) -> int:
        return 1 if any(n.failed for n in self.nodes) else 0


# --- loading ---------------------------------------------------------------------------------

def _clean(text: str) -> str:
    """Without lone surrogates (a JSON "\\ud800", an undecodable file name), so that the
    rendering can always be written out as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _str(value: Any, default: str = "") -> str:
    return _clean(value) if isinstance(value, str) else default


def _fix(value: Any) -> Optional[Fix]:
    if not isinstance(value, Mapping):
        return None
    commands = value.get("commands")
    return Fix(_str(value.get("text")),
                   tuple(c for c in commands if isinstance(c, str)) if isinstance(
                       commands, list) else (),
                   value.get("needs_root") is True, value.get("needs_relogin") is True)


def _figures(value: Any) -> tuple[NodeFigure, ...]:
    out = []
    for f in value if isinstance(value, list) else ():
        if not isinstance(f, Mapping) or not _str(f.get("key")):
            continue
        v = f.get("value")
        gpu = f.get("gpu")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v == v or v <= 0:
            continue
        out.append(NodeFigure(_str(f.get("key")), _str(f.get("name")) or _str(f.get("key")),
                              gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None,
                              float(v), _str(f.get("unit"))))
    return tuple(out)


def _machine(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, Any] = {_clean(k): _clean(v) for k, v in value.items()
                           if isinstance(k, str) and isinstance(v, str) and k != "gpus"}
    gpus = value.get("gpus")
    if isinstance(gpus, list):
        out["gpus"] = [_clean(g) for g in gpus if isinstance(g, str)]
    return out


def parse_report(data: Any, file: str) -> NodeReport:
    """A NodeReport from a decoded `check --json` document; FleetInputError when it is not one."""
    file = _clean(file)
    if not isinstance(data, Mapping):
        raise FleetInputError(file, "not a rocmdoctor check report (not a JSON object)")
    schema = data.get("schema")
    if data.get("format") == schemas.SNAPSHOT:
        raise FleetInputError(file, f"a snapshot, not a check report (turn it into one with: "
                              f"rocmdoctor check --from {file} --json)")
    if schema != CHECK_SCHEMA:
        raise FleetInputError(file, f"schema {schema!r}, expected {CHECK_SCHEMA!r} "
                              "(write it with: rocmdoctor check --json)")
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list):
        raise FleetInputError(file, "'checks' is not a list")
    checks = []
    for i, c in enumerate(raw_checks):
        if not isinstance(c, Mapping) or not _str(c.get("id")) or c.get("status") not in STATUSES:
            raise FleetInputError(file, f"checks[{i}] has no id or no known status")
        cid = _str(c["id"])
        checks.append(NodeCheck(cid, _str(c.get("title"), cid), c["status"],
                                " ".join(_str(c.get("summary")).split()), _fix(c.get("fix")),
                                _figures(c.get("figures"))))
    machine = _machine(data.get("machine"))
    node = machine.get("node", "").strip()
    return NodeReport(node if node not in UNNAMED else _stem(file), file,
                      _str(data.get("platform"), "?"), machine, tuple(checks))


def load_report(path: str) -> NodeReport:
    """Read and parse one file; any problem is a FleetInputError with one line."""
    shown = _clean(path)  # sys.argv may hold undecodable bytes
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise FleetInputError(shown, "no such file") from None
    except OSError as exc:
        raise FleetInputError(shown, f"cannot read it ({exc.strerror or exc})") from None
    if not raw.strip():
        raise FleetInputError(shown, "empty (did `rocmdoctor check --json` run there?)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FleetInputError(shown, f"not JSON ({detail})") from None
    return parse_report(data, path)


def natural_key(name: str) -> list[Any]:
    """Sorts node2 before node10."""
    return [(0, int(p), "") if p.isdecimal() else (1, 0, p) for p in re.split(r"(\d+)", name)
            if p]


def _stem(file: str) -> str:
    return re.sub(r"\.json$", "", file.replace("\\", "/").rsplit("/", 1)[-1])


def unique_names(nodes: Iterable[NodeReport]) -> list[NodeReport]:
    """Reports naming the same node (one snapshot replayed twice, a shared host name) are
    told apart by their file names when those differ, else by a #2, #3 suffix."""
    from dataclasses import replace

    nodes = list(nodes)
    by_name: dict[str, list[NodeReport]] = {}
    for n in nodes:
        by_name.setdefault(n.name, []).append(n)
    out: list[NodeReport] = []
    taken: set[str] = set()
    for name, same in by_name.items():
        stems = [_stem(n.file) for n in same]
        if len(same) > 1 and len(set(stems)) == len(stems) and not set(stems) & set(by_name):
            names = stems
        else:
            names = [name] + [f"{name}#{k}" for k in range(2, len(same) + 1)]
        for n, new in zip(same, names):
            while new in taken:
                new += "'"
            taken.add(new)
            out.append(replace(n, name=new))
    return sorted(out, key=lambda n: natural_key(n.name))


# --- the summary -----------------------------------------------------------------------------

def group_nodes(nodes: Sequence[NodeReport]) -> tuple[Group, ...]:
    """Nodes with identical versions, the largest group first (ties: by first node name);
    every other group lists the fields where it differs from the largest."""
    buckets: dict[tuple[Any, ...], list[NodeReport]] = {}
    for n in nodes:
        buckets.setdefault(n.versions, []).append(n)
    ordered = sorted(buckets.items(), key=lambda kv: (-len(kv[1]), natural_key(kv[1][0].name)))
    if not ordered:
        return ()
    ref = ordered[0][0]
    groups = []
    for key, members in ordered:
        versions = dict(zip(VERSION_FIELDS, key))
        differs = tuple((f, v, r) for f, v, r in zip(VERSION_FIELDS, key, ref) if v != r)
        groups.append(Group(tuple(n.name for n in members), versions, differs))
    return tuple(groups)


def _columns(nodes: Sequence[NodeReport]) -> tuple[str, ...]:
    order: dict[str, None] = {}
    for n in nodes:
        for c in n.checks:
            order.setdefault(c.id, None)
    return tuple(cid for cid in order
                 if any(n.status(cid) not in (None, "skip") for n in nodes))


def _problems(nodes: Sequence[NodeReport], ids: Sequence[str]) -> tuple[Problem, ...]:
    out = []
    for kind, wanted in (("failures", ("fail", "error")), ("warnings", ("warn",))):
        for cid in ids:
            hits = [(n.name, c) for n in nodes for c in n.checks
                    if c.id == cid and c.status in wanted]
            if not hits:
                continue
            summaries: dict[tuple[str, str], list[str]] = {}
            fixes: dict[Fix, list[str]] = {}
            for name, c in hits:
                summaries.setdefault((c.status, c.summary), []).append(name)
                if c.fix is not None:
                    fixes.setdefault(c.fix, []).append(name)
            out.append(Problem(kind, cid, hits[0][1].title, tuple(n for n, _ in hits),
                               tuple((s, t, tuple(v)) for (s, t), v in summaries.items()),
                               tuple((f, tuple(v)) for f, v in fixes.items())))
    return tuple(out)


# A node under 0.90 of the median node is slow: the pass line of the measured checks' own band
# (rocmdoctor.kb.deep_rules.MEASURED), cards of one model differing by 5 % and more.
SLOW_SHARE = 0.90
LOWER_IS_BETTER = ("us",)  # units where a smaller figure is the better one


def _measured(nodes: Sequence[NodeReport]) -> tuple[Measured, ...]:
    """Per measured figure, each node's slowest GPU against the median node."""
    import statistics

    order: dict[tuple[str, str], tuple[str, str]] = {}
    per_node: dict[tuple[str, str], dict[str, float]] = {}
    for n in nodes:
        for c in n.checks:
            for f in c.figures:
                key = (c.id, f.key)
                order.setdefault(key, (f.name, f.unit))
                lower = f.unit in LOWER_IS_BETTER
                old = per_node.setdefault(key, {}).get(n.name)
                worse = f.value if old is None else (max if lower else min)(old, f.value)
                per_node[key][n.name] = worse
    out = []
    for (check, fig), (name, unit) in order.items():
        values = per_node[(check, fig)]
        if not values:
            continue
        median = statistics.median(values.values())
        lower = unit in LOWER_IS_BETTER
        shares = {node: (median / v if lower else v / median) for node, v in values.items()}
        slow = tuple((node, shares[node]) for node in sorted(values, key=natural_key)
                     if len(values) > 1 and shares[node] < SLOW_SHARE)
        out.append(Measured(check, fig, name, unit,
                            tuple((node, values[node]) for node in sorted(values, key=natural_key)),
                            median, slow))
    return tuple(out)


def summarize(nodes: Iterable[NodeReport], unusable: Sequence[tuple[str, str]] = ()) -> Fleet:
    named = unique_names(nodes)
    columns = _columns(named)
    return Fleet(tuple(named), group_nodes(named), columns, _problems(named, columns),
                 tuple((_clean(f), _clean(why)) for f, why in unusable), _measured(named))


def counts(fleet: Fleet) -> dict[str, int]:
    failed = sum(1 for n in fleet.nodes if n.failed)
    warned = sum(1 for n in fleet.nodes if n.warned and not n.failed)
    largest = len(fleet.groups[0].nodes) if fleet.groups else 0
    return {"nodes": len(fleet.nodes), "groups": len(fleet.groups),
            "odd_ones_out": len(fleet.nodes) - largest, "failed": failed, "warned": warned,
            "clean": len(fleet.nodes) - failed - warned, "unusable": len(fleet.unusable)}


def reference_label(fleet: Fleet) -> str:
    """'largest group', or 'reference group' when another group is as large (then the first
    by node name is the reference the others are compared with)."""
    g = fleet.groups
    return "largest group" if len(g) < 2 or len(g[0].nodes) > len(g[1].nodes) else (
        "reference group")
