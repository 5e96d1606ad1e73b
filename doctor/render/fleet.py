"""The renderings of a Fleet (rocmdoctor.fleet): text, GitHub Markdown, JSON
(`rocmdoctor.fleet/1`). Pure functions; the marks are those of `check` and `report`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Optional

from rocmdoctor.fleet import (
    SCHEMA,
    VERSION_FIELDS,
    Fleet,
    Group,
    counts,
    natural_key,
    reference_label,
)
from rocmdoctor.model import Fix, Status
from rocmdoctor.render.marks import MARK, MARKS

LABELS = {"gpus": "GPUs", "rocm": "ROCm", "amdgpu_driver": "amdgpu",
          "nvidia_driver": "NVIDIA driver", "torch": "torch", "torchvision": "torchvision"}
TEXT_MARK = {s.value: MARKS[s][0].strip("[]") for s in Status}  # ✓ ! ✗ - E, as `check`
MD_MARK = {s.value: MARK[s] for s in Status}  # as `report`
NOT_RUN = "·"


def _n(count: int, word: str, plural: Optional[str] = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def summary_line(fleet: Fleet) -> str:
    c = counts(fleet)
    odd = f" ({_n(c['odd_ones_out'], 'odd one out', 'odd ones out')})" if c["odd_ones_out"] else ""
    line = (f"{_n(c['nodes'], 'node')}, {_n(c['groups'], 'version group')}{odd}; "
            f"{c['failed']} with failures, {c['warned']} with warnings only, {c['clean']} clean")
    if c["unusable"]:
        line += f"; {_n(c['unusable'], 'file')} unusable"
    return line


def _value(field: str, value: Any) -> str:
    if field != "gpus":
        return str(value) if value else "none"
    if not value:
        return "none"
    runs: dict[str, int] = {}
    for g in value:
        runs[g] = runs.get(g, 0) + 1
    return ", ".join(f"{k}× {g}" if k > 1 else g for g, k in runs.items())


def _versions_line(g: Group) -> str:
    return " · ".join(f"{LABELS[f]} {_value(f, g.versions[f])}" for f in VERSION_FIELDS
                      if g.versions[f] or f in ("gpus", "torch"))


def _differs(g: Group, ref: str) -> list[str]:
    return [f"{LABELS[f]} {_value(f, v)} ({ref}: {_value(f, r)})" for f, v, r in g.differs]


def _needs(fix: Fix) -> str:
    needs = [w for w, on in (("needs root", fix.needs_root),
                             ("then log in again", fix.needs_relogin)) if on]
    return f" ({', '.join(needs)})" if needs else ""


def hostlist(names: Sequence[str]) -> str:
    """Slurm's compact notation: node01,node02,node03,node07 -> node[01-03,07]."""
    runs: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None or not m.group(2).isascii():
            plain.append(name)
        else:
            digits = m.group(2)  # zero-padded numbers keep their width; others have none
            width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
            runs.setdefault((m.group(1), width), []).append(int(digits))
    parts: list[tuple[list[Any], str]] = [(natural_key(p), p) for p in plain]
    for (prefix, width), numbers in runs.items():
        numbers = sorted(set(numbers))
        spans: list[list[int]] = []
        for k in numbers:
            if spans and k == spans[-1][1] + 1:
                spans[-1][1] = k
            else:
                spans.append([k, k])
        text = ",".join(f"{a:0{width}d}" + (f"-{b:0{width}d}" if b > a else "")
                        for a, b in spans)
        one = len(numbers) == 1
        parts.append((natural_key(prefix + str(numbers[0])),
                      f"{prefix}{text}" if one else f"{prefix}[{text}]"))
    return ", ".join(text for _, text in sorted(parts))


def _who(nodes: Sequence[str]) -> str:
    return f"{_n(len(nodes), 'node')} ({hostlist(nodes)})"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _problem_lines(fleet: Fleet, md: bool) -> list[str]:
    mark, esc = (MD_MARK, _md) if md else (TEXT_MARK, str)
    head, item, cmd = ("- ", "  - ", "    ") if md else ("  ", "    ", "      $ ")
    out: list[str] = []
    for kind in ("failures", "warnings"):
        problems = [p for p in fleet.problems if p.kind == kind]
        if problems:
            out += ["", f"### {kind.capitalize()}", ""] if md else ["", kind.capitalize()]
        for p in problems:
            name = f"**{p.id}**" if md else p.id
            out.append(f"{head}{name} ({esc(p.title)}): {esc(_who(p.nodes))}")
            for status, summary, nodes in p.summaries:
                out.append(f"{item}{mark[status]} {_n(len(nodes), 'node')}: {esc(summary)}")
            for fix, nodes in p.fixes:
                out.append(f"{item}fix, {_n(len(nodes), 'node')}: {esc(fix.text)}{_needs(fix)}")
                block = [f"{cmd}{c}" for c in fix.commands]
                out += ["    ```sh", *block, "    ```"] if md and block else block
    return out


def _figure(value: float, unit: str) -> str:
    return (f"{value:,.0f}" if value >= 1000 else f"{value:.1f}" if value >= 10 else
            f"{value:.2f}") + f" {unit}"


def _measured_lines(fleet: Fleet, md: bool) -> list[str]:
    """Each measured figure's median node, and the nodes well below it (`check --deep`)."""
    if not fleet.measured:
        return []
    out = ["", "### Measured (check --deep)", ""] if md else ["", "Measured (check --deep)"]
    head, esc = ("- ", _md) if md else ("  ", str)
    for m in fleet.measured:
        name = f"**{m.check}**" if md else m.check
        line = (f"{head}{name} {esc(m.name)}: median {_figure(m.median, m.unit)} over "
                f"{_n(len(m.values), 'node')}")
        if m.slow:
            line += "; slow: " + ", ".join(
                f"{esc(node)} {_figure(dict(m.values)[node], m.unit)} ({share * 100:.0f} %)"
                for node, share in m.slow)
        out.append(line)
    return out


def render_text(fleet: Fleet) -> str:
    ref = reference_label(fleet)
    out = [f"rocmdoctor fleet · {_n(len(fleet.nodes), 'node')}", "", "Versions"]
    for i, g in enumerate(fleet.groups):
        out.append(f"  [{i + 1}] {'odd one out' if i else ref}, {_who(g.nodes)}")
        out.extend(f"      {line}" for line in (_differs(g, ref) if i else [_versions_line(g)]))
    width = max([len(n.name) for n in fleet.nodes] + [4])
    out += ["", "Checks (" + "  ".join(f"{m} {s}" for s, m in TEXT_MARK.items())
            + f"  {NOT_RUN} not run)",
            f"  {'node':<{width}}  " + " ".join(f"{i + 1:>2}" for i in range(len(fleet.columns)))]
    for n in fleet.nodes:
        marks = [TEXT_MARK.get(n.status(c) or "", NOT_RUN) for c in fleet.columns]
        out.append(f"  {n.name:<{width}}  " + " ".join(f"{m:>2}" for m in marks))
    out.extend(f"  {i + 1:>2} {c}" for i, c in enumerate(fleet.columns))
    out += _problem_lines(fleet, md=False)
    out += _measured_lines(fleet, md=False)
    if fleet.unusable:
        out += ["", "Unusable files"] + [f"  {f}: {why}" for f, why in fleet.unusable]
    return "\n".join(out + ["", summary_line(fleet)]) + "\n"


def render_markdown(fleet: Fleet) -> str:
    ref = reference_label(fleet)
    out = [f"## rocmdoctor fleet: {_n(len(fleet.nodes), 'node')}", "", summary_line(fleet), "",
           "### Versions", "", "| group | nodes | versions |", "|---|---|---|"]
    for i, g in enumerate(fleet.groups):
        what = "<br>".join(_md(d) for d in _differs(g, ref)) if i else _md(_versions_line(g))
        out.append(f"| {'odd one out' if i else ref} | {_md(hostlist(g.nodes))} | {what} |")
    out += ["", "### Checks", "", "| node | " + " | ".join(fleet.columns) + " |",
            "|---|" + "---|" * len(fleet.columns)]
    for n in fleet.nodes:
        marks = [MD_MARK.get(n.status(c) or "", NOT_RUN) for c in fleet.columns]
        out.append(f"| {_md(n.name)} | " + " | ".join(marks) + " |")
    out += _problem_lines(fleet, md=True)
    out += _measured_lines(fleet, md=True)
    if fleet.unusable:
        out += ["", "### Unusable files", ""] + [f"- `{f}`: {_md(w)}" for f, w in fleet.unusable]
    return "\n".join(out) + "\n"


def fleet_to_dict(fleet: Fleet) -> dict[str, Any]:
    def fix(f: Fix, nodes: Sequence[str]) -> dict[str, Any]:
        return {"text": f.text, "commands": list(f.commands), "needs_root": f.needs_root,
                "needs_relogin": f.needs_relogin, "nodes": list(nodes)}

    return {
        "schema": SCHEMA,
        "summary": counts(fleet),
        "line": summary_line(fleet),
        "version_fields": list(VERSION_FIELDS),
        "reference": reference_label(fleet),
        "groups": [{"nodes": list(g.nodes), "reference": i == 0,
                    "versions": {k: list(v) if k == "gpus" else v for k, v in g.versions.items()},
                    "differs": {f: {"value": list(v) if f == "gpus" else v,
                                    "reference": list(r) if f == "gpus" else r}
                                for f, v, r in g.differs}}
                   for i, g in enumerate(fleet.groups)],
        "checks": list(fleet.columns),
        "nodes": [{"node": n.name, "file": n.file, "platform": n.platform,
                   "machine": dict(n.machine),
                   "status": {c.id: c.status for c in n.checks}} for n in fleet.nodes],
        "problems": [{"kind": p.kind, "id": p.id, "title": p.title, "nodes": list(p.nodes),
                      "summaries": [{"status": s, "summary": t, "nodes": list(v)}
                                    for s, t, v in p.summaries],
                      "fixes": [fix(f, v) for f, v in p.fixes]} for p in fleet.problems],
        "unusable": [{"file": f, "error": why} for f, why in fleet.unusable],
        **({"measured": [{"check": m.check, "key": m.key, "name": m.name, "unit": m.unit,
                          "median": m.median, "nodes": dict(m.values),
                          "slow": [{"node": n, "share": round(s, 4)} for n, s in m.slow]}
                         for m in fleet.measured]} if fleet.measured else {}),
    }


def render_json(fleet: Fleet) -> str:
    return json.dumps(fleet_to_dict(fleet), indent=2, ensure_ascii=False) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
