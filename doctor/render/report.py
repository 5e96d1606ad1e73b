"""`rocmdoctor report`: an issue-ready Markdown (or text / JSON) report, safe to publish.

A pure function of the Report and the gathered ReportFacts (render/report_facts.py):
it never sees the machine. Redaction is applied to the whole rendered text, so nothing
personal slips through a section that forgot it.
"""

from __future__ import annotations

import json
from typing import Optional

from rocmdoctor import schemas
from rocmdoctor.model import RawSection, Report, ReportFacts, Status
from rocmdoctor.redact import Redactor, redact_tree
from rocmdoctor.render.check_json import report_to_dict
from rocmdoctor.render.marks import MARK

GITHUB_BODY_LIMIT = 65536  # characters in a GitHub issue body


def _details(title: str, body: str, lang: str = "") -> str:
    return f"<details><summary>{title}</summary>\n\n```{lang}\n{body}\n```\n\n</details>\n"


def _problem_lines(report: Report) -> list[str]:
    out = []
    problems = [r for r in report.results if r.status in (Status.FAIL, Status.ERROR, Status.WARN)]
    if not problems:
        return ["No check failed or warned.", ""]
    for r in problems:
        out.append(f"- {MARK[r.status]} **{r.id}** ({r.status.value}): {r.summary}")
        for f in r.findings:
            out.append(f"  - {f.severity.value}: {f.text}")
        if r.fix is not None:
            needs = [w for w, on in (("needs root", r.fix.needs_root),
                                     ("then log in again", r.fix.needs_relogin)) if on]
            out.append(f"  - fix: {r.fix.text}" + (f" ({', '.join(needs)})" if needs else ""))
            if r.fix.commands:
                out.append("    ```sh")
                out.extend(f"    {c}" for c in r.fix.commands)
                out.append("    ```")
        if r.source:
            out.append(f"  - source: {r.source}")
    out.append("")
    return out


def _measured_lines(report: Report) -> list[str]:
    """The figures of `check --deep`, when it ran: value, spread, reference (linked) and the
    verdict of each."""
    rows = [(r, f) for r in report.results for f in r.figures]
    if not rows:
        return []
    out = ["### Measured (check --deep)", "",
           "| GPU | check | figure | value | spread | reference | share | verdict |",
           "|---|---|---|---|---|---|---|---|"]
    for r, f in rows:
        value = "not measured" if f.value is None else f"{f.value:,.4g} {f.unit}"
        spread = f"{f.spread_pct:.1f} %" if f.spread_pct is not None else ""
        ref = (f"[{f.reference.value:,.4g} {f.reference.unit}]({f.reference.source})"
               if f.reference else "no reference for this card")
        ratio = f"{f.ratio * 100:.0f} %" if f.ratio is not None else ""
        out.append(f"| {'' if f.gpu is None else f.gpu} | {r.id} | {f.name.replace('|', '/')} | "
                   f"{value} | {spread} | {ref} | {ratio} | {f.verdict or 'no verdict'} |")
    return out + [""]


def raw_sections(facts: ReportFacts, redactor: Redactor) -> list[RawSection]:
    sections = list(facts.sections)
    env_text = "\n".join(f"{k}={redactor.env_value(k, v)}" for k, v in facts.env)
    sections.append(RawSection("Environment variables", env_text or "(none of HIP_, HSA_, "
                               "ROCR_, ROCM, AMD_, MIOPEN_, PYTORCH_, TORCH_, CUDA_, NCCL_, "
                               "RCCL_, OMP_ are set)"))
    sections.append(RawSection(
        "Python packages",
        "\n".join(f"{k}=={v}" for k, v in facts.packages if v) or "(none found)"))
    collect = "\n".join(f"{k}: {v}" for k, v in facts.collect_env)
    sections.append(RawSection("collect_env fields", collect))
    return sections


def render_markdown(
    report: Report,
    facts: ReportFacts,
    redactor: Redactor,
    snapshot_name: Optional[str] = None,
    limit: int = GITHUB_BODY_LIMIT,
) -> str:
    head = ["## Environment (rocmdoctor report)", "", "| | |", "|---|---|"]
    head += [f"| {k} | {v} |" for k, v in facts.header]
    head.append("| GPUs | " + ("<br>".join(facts.gpus) if facts.gpus else "none found") + " |")
    head.append("")
    summary = ", ".join(f"{n} {s}" for s, n in report.summary().items())
    head += [f"### Checks: {summary}", ""]
    head += _problem_lines(report)
    head += _measured_lines(report)
    table = ["<details><summary>All checks</summary>", "", "| check | status | summary |",
             "|---|---|---|"]
    table += [f"| {r.id} | {MARK[r.status]} {r.status.value} | {r.summary.replace('|', '/')} |"
              for r in report.results]
    table += ["", "</details>", ""]
    if snapshot_name:
        tail = ["Reproduce this diagnosis elsewhere: attach the snapshot and run "
                f"`rocmdoctor check --from {snapshot_name}`", ""]
    else:
        tail = ["Reproduce this diagnosis elsewhere: `rocmdoctor snapshot -o snap.json.gz`, "
                "then `rocmdoctor check --from snap.json.gz`", ""]
    sections = raw_sections(facts, redactor)
    bodies = [s.text for s in sections]

    def assemble(cut_note: str = "") -> str:
        parts = ["\n".join(head), "\n".join(table)]
        parts += [_details(s.title, b) for s, b in zip(sections, bodies)]
        if cut_note:
            parts.append(cut_note + "\n")
        parts.append("\n".join(tail))
        return redactor("\n".join(parts))

    text = assemble()
    cut: dict[str, int] = {}
    while len(text) > limit:
        i = max(range(len(bodies)), key=lambda j: len(bodies[j]))
        lines = bodies[i].splitlines()
        title = sections[i].title
        if title in cut:  # cut before: its last line is the note, no line of the section
            lines = lines[:-1]
        if len(lines) <= 1 and len(bodies[i]) < 200:
            break
        keep = max(len(lines) // 2, 0) if len(lines) > 1 else 0
        dropped = len(lines) - keep
        cut[sections[i].title] = cut.get(sections[i].title, 0) + dropped
        bodies[i] = "\n".join(lines[:keep] + [f"... ({cut[sections[i].title]} lines cut)"])
        note = ("_Cut to fit GitHub's 65,536-character limit: " + ", ".join(
            f"{n} lines of {t}" for t, n in cut.items()) + "._")
        text = assemble(note)
    if len(text) > limit:
        text = text[: limit - 60] + "\n\n_(report truncated at GitHub's size limit)_\n"
    return text


def render_text(report: Report, facts: ReportFacts, redactor: Redactor) -> str:
    lines = [f"{k}: {v}" for k, v in facts.header]
    lines += ["GPUs:"] + [f"  {g}" for g in facts.gpus or ("none found",)]
    lines.append("")
    for r in report.results:
        lines.append(f"[{r.status.value}] {r.id}: {r.summary}")
        if r.fix is not None and r.status in (Status.FAIL, Status.WARN):
            lines.append(f"    fix: {r.fix.text}")
            lines.extend(f"      $ {c}" for c in r.fix.commands)
    lines.append("")
    for s in raw_sections(facts, redactor):
        lines += [f"== {s.title}", s.text, ""]
    return redactor("\n".join(lines) + "\n")


def render_report_json(report: Report, facts: ReportFacts, redactor: Redactor) -> str:
    data = {
        "schema": schemas.REPORT,
        "environment": dict(facts.header),
        "gpus": list(facts.gpus),
        "check": report_to_dict(report),
        "collect_env": dict(facts.collect_env),
        "raw": {s.title: s.text for s in raw_sections(facts, redactor)},
    }
    return json.dumps(redact_tree(data, redactor), indent=2, ensure_ascii=False) + "\n"

