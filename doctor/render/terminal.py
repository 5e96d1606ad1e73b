"""The terminal rendering of a Report: one line per check, then "How to fix".

Prose is wrapped to the width with a hanging indent; a command is never broken: it stands
on a line of its own, whole, however long, so that it can be copied (piped output too).
The fixes come after the checks, prerequisites first: a fix for a check that others depend
on (its `depends`, or the `root_cause` of the checks skipped for it) comes before theirs.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence

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
PROBLEMS = (Status.FAIL, Status.ERROR, Status.WARN)
FIX_HEADING = "How to fix (in this order):"


_KEEP = "\x00"  # stands for a space that must not break (inside a `command` span)
_SPAN = re.compile(r"`[^`]*`")
# An option of a command named in prose ("update-initramfs -u", "--device /dev/kfd") stays
# with the word before it and the value after it.
_OPTION = re.compile(r"\S+(?: --?[A-Za-z][\w=.,:/-]*(?: [^\s(-][^\s]*)?)+")


def wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """`text` after `first`, wrapped to `width` with later lines indented by `rest`. Words
    are never split (a long path or URL overflows rather than breaks), nor is a `command`
    quoted in backticks."""
    kept = _SPAN.sub(lambda m: m.group(0).replace(" ", _KEEP), text.replace(_KEEP, " "))
    kept = _OPTION.sub(lambda m: m.group(0).replace(" ", _KEEP), kept)
    lines = textwrap.wrap(kept, width=max(width, len(first) + 20), initial_indent=first,
                          subsequent_indent=rest, break_long_words=False,
                          break_on_hyphens=False)
    return [line.replace(_KEEP, " ") for line in lines] or [first.rstrip()]


def summary_line(report: Report) -> str:
    parts = []
    for status in Status:
        n = report.count(status)
        word = PLURAL[status][0 if n == 1 else 1]
        parts.append(f"{n} {word}")
    return ", ".join(parts)


def root_cause_lines(report: Report) -> list[str]:
    """One line per failed check that others were skipped for."""
    followers: dict[str, list[str]] = {}
    for r in report.results:
        if r.root_cause:
            followers.setdefault(r.root_cause, []).append(r.id)
    return [f"not run because {root} failed: {', '.join(ids)} (fix {root} first)"
            for root, ids in followers.items()]


def needs_fixing(r: CheckResult) -> bool:
    """A failure or an error always; a warning when it comes with something to do."""
    return r.status in (Status.FAIL, Status.ERROR) or (r.status is Status.WARN
                                                       and r.fix is not None)


def fix_order(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The results to fix, prerequisites first.

    A check's prerequisites are its `depends`, followed through checks that are not in the
    list; among those free to go next, a check that others were skipped for (a `root_cause`)
    comes first, then registry order.
    """
    by_id = {r.id: r for r in results}
    wanted = [r for r in results if needs_fixing(r)]
    ids = {r.id for r in wanted}
    roots = {r.root_cause for r in results if r.root_cause}

    def prerequisites(r: CheckResult) -> set[str]:
        found: set[str] = set()
        todo, seen = list(r.depends), set(r.depends)
        while todo:
            dep = todo.pop()
            if dep in ids:
                found.add(dep)
            for nxt in by_id[dep].depends if dep in by_id else ():
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        found.discard(r.id)
        return found

    before = {r.id: prerequisites(r) for r in wanted}
    position = {r.id: i for i, r in enumerate(results)}
    done: list[CheckResult] = []
    left = list(wanted)
    while left:
        ready = [r for r in left if not (before[r.id] - {d.id for d in done})] or left  # a cycle
        ready.sort(key=lambda r: (r.id not in roots, position[r.id]))
        done.append(ready[0])
        left.remove(ready[0])
    return done


def _needs(r: CheckResult) -> str:
    if r.fix is None:
        return ""
    needs = [w for w, on in (("needs root", r.fix.needs_root),
                             ("then log in again", r.fix.needs_relogin)) if on]
    return f" ({', '.join(needs)})" if needs else ""


def fix_lines(report: Report, width: int) -> list[Text]:
    """The "How to fix" section: every failure and actionable warning, numbered."""
    todo = fix_order(report.results)
    if not todo:
        return []
    out = [Text(FIX_HEADING, style="bold")]
    for n, r in enumerate(todo, start=1):
        first = f"  {n}. {r.id}: "
        rest = " " * (len(f"  {n}. "))
        commands: tuple[str, ...]
        if r.fix is None:
            text, commands = ("no fix is known; this shows what it found:",
                              (f"rocmdoctor check -v --only {r.id}",))
        else:
            text, commands = r.fix.text + _needs(r), r.fix.commands
        for i, line in enumerate(wrap(text, width, first, rest)):
            out.append(Text(line, style="bold" if i == 0 else ""))
        for cmd in commands:
            out.append(Text(f"{rest}  $ {cmd}", style="cyan"))
    return out


def render_lines(report: Report, verbose: bool = False, width: int = 100,
                 quiet: bool = False) -> list[Text]:
    """The lines of `rocmdoctor check`; `quiet`: only the problems and how to fix them."""
    shown = [r for r in report.results if not quiet or r.status in PROBLEMS]
    id_width = max((len(r.id) for r in shown), default=10)
    indent = " " * (4 + id_width + 2)
    out: list[Text] = []
    if not quiet:
        out.append(Text(f"rocmdoctor {report.tool_version} · platform: {report.platform}",
                        style="bold"))
        out.append(Text(""))
    for r in shown:
        mark, style = MARKS[r.status]
        summary = r.summary + (f"  ({r.duration_ms} ms)" if verbose else "")
        for i, text in enumerate(wrap(summary, width, f"{mark} {r.id:<{id_width}}  ", indent)):
            line = Text()
            if i == 0:
                line.append(mark, style=style)
                line.append(text[len(mark):])
            else:
                line.append(text)
            out.append(line)
        if verbose:
            for f in r.findings:
                label = f"{f.severity.value}: "
                out.extend(Text(t, style="dim") for t in wrap(
                    f.text, width, indent + label, indent + " " * len(label)))
            if r.source and r.status in PROBLEMS:
                out.append(Text(f"{indent}source: {r.source}", style="dim"))
    fixes = fix_lines(report, width)
    causes = root_cause_lines(report)
    if not quiet or (shown and (fixes or causes)):
        out.append(Text(""))
    for cause in causes:
        out.extend(Text(t, style="bold") for t in wrap(cause, width, "", "  "))
    if fixes:
        if causes:
            out.append(Text(""))
        out.extend(fixes)
        if not quiet:
            out.append(Text(""))
    if not quiet:
        out.append(Text(summary_line(report), style="bold"))
    return out


def render_terminal(
    report: Report, verbose: bool = False, width: int = 100, color: bool = False,
    quiet: bool = False,
) -> str:
    """Render to a string, as a console of this width would show it (no wrapping by the
    console: the lines are already wrapped, and commands must stay whole)."""
    buf = io.StringIO()
    console = Console(
        file=buf, width=max(width, 20), color_system="standard" if color else None,
        force_terminal=color, no_color=not color, highlight=False, soft_wrap=True,
    )
    for line in render_lines(report, verbose, width, quiet):
        console.print(line, soft_wrap=True)
    return buf.getvalue()
