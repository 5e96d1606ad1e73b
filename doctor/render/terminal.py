"""The terminal rendering of a Report: one line per check, fixes under problems."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from rocmdoctor.model import CheckResult, Report, Status
from rocmdoctor.render.marks import MARKS

PLURAL = {
    Status.PASS: ("passed", "passed"),
    Status.WARN: ("warning", "warnings"),
    Status.FAIL: ("failed", "failed"),
    Status.SKIP: ("skipped", "skipped"),
    Status.ERROR: ("error", "errors"),
}


def _fix_lines(r: CheckResult, indent: str) -> list[Text]:
    lines: list[Text] = []
    if r.fix is None:
        return lines
    lines.append(Text(f"{indent}fix: {r.fix.text}", style="bold"))
    needs = []
    if r.fix.needs_root:
        needs.append("needs root")
    if r.fix.needs_relogin:
        needs.append("then log in again")
    for i, cmd in enumerate(r.fix.commands):
        line = Text(f"{indent}  $ {cmd}", style="cyan")
        if needs and i == len(r.fix.commands) - 1:
            line.append(f"   ({', '.join(needs)})", style="dim")
        lines.append(line)
    return lines


def summary_line(report: Report) -> str:
    parts = []
    for status in Status:
        n = report.count(status)
        word = PLURAL[status][0 if n == 1 else 1]
        parts.append(f"{n} {word}")
    return ", ".join(parts)


def render_lines(report: Report, verbose: bool = False) -> list[Text]:
    width = max((len(r.id) for r in report.results), default=10)
    indent = " " * (4 + width + 2)
    out: list[Text] = []
    header = f"rocmdoctor {report.tool_version} · platform: {report.platform}"
    out.append(Text(header, style="bold"))
    out.append(Text(""))
    for r in report.results:
        mark, style = MARKS[r.status]
        line = Text()
        line.append(mark, style=style)
        line.append(f" {r.id:<{width}}  ")
        line.append(r.summary)
        if verbose:
            line.append(f"  ({r.duration_ms} ms)", style="dim")
        out.append(line)
        if verbose:
            for f in r.findings:
                out.append(Text(f"{indent}{f.severity.value}: {f.text}", style="dim"))
            if r.source and r.status in (Status.WARN, Status.FAIL):
                out.append(Text(f"{indent}source: {r.source}", style="dim"))
        if r.status in (Status.WARN, Status.FAIL):
            out.extend(_fix_lines(r, indent))
    out.append(Text(""))
    out.extend(Text(line, style="bold") for line in root_cause_lines(report))
    out.append(Text(summary_line(report), style="bold"))
    return out


def root_cause_lines(report: Report) -> list[str]:
    """One line per failed check that others were skipped for."""
    followers: dict[str, list[str]] = {}
    for r in report.results:
        if r.root_cause:
            followers.setdefault(r.root_cause, []).append(r.id)
    return [f"not run because {root} failed: {', '.join(ids)} (fix {root} first)"
            for root, ids in followers.items()]


def render_terminal(
    report: Report, verbose: bool = False, width: int = 100, color: bool = False
) -> str:
    """Render to a string, as a console of this width would show it."""
    buf = io.StringIO()
    console = Console(
        file=buf, width=width, color_system="standard" if color else None,
        force_terminal=color, no_color=not color, highlight=False, soft_wrap=False,
    )
    for line in render_lines(report, verbose):
        console.print(line)
    return buf.getvalue()
