"""Plain-text answers of `rocmdoctor explain` (no colour: they are pasted into bug reports):
one block per recognised message, the not-known block, and the note on a long text's
reading."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from rocmdoctor.explain import Explanation
    from rocmdoctor.explain.reading import Scan
    from rocmdoctor.explain.unknown import NotKnown


def render_explanations(explanations: list[Explanation], width: int = 100,
                        scan: Optional[Scan] = None) -> str:
    blocks = [_render_one(e, width) for e in explanations]
    if scan is not None:
        blocks.append(_scan_note(scan, width))
    return "\n\n".join(blocks) + "\n"


def _wrap(lines: list[str], label: str, body: str, width: int) -> None:
    lines.extend(textwrap.wrap(body, width, initial_indent=f"  {label:<9}",
                               subsequent_indent=" " * 11, break_on_hyphens=False,
                               break_long_words=False) or [f"  {label}"])


def _render_one(e: Explanation, width: int) -> str:
    lines = [f"{e.title}  [{e.kind}, {e.confidence}]"]
    _wrap(lines, "seen:", f"line {e.line}: {e.matched}" if e.line else e.matched, width)
    _wrap(lines, "cause:", e.cause, width)
    for note in e.notes:
        _wrap(lines, "here:", note, width)
    _wrap(lines, "fix:", e.fix.text, width)
    lines.extend(f"           $ {c}" for c in e.fix.commands)
    needs = [w for w, on in (("root", e.fix.needs_root), ("a new login", e.fix.needs_relogin))
             if on]
    if needs:
        lines.append(f"           (needs {' and '.join(needs)})")
    no_check = ("no check: no tool reads this setting" if e.kind == "not-a-setting" else
                "no check: nothing on the machine to confirm")
    _wrap(lines, "confirm:", f"rocmdoctor check --only {e.check}" if e.check else no_check,
          width)
    _wrap(lines, "source:", e.source, width)
    return "\n".join(lines)


def render_not_known(unknown: NotKnown, width: int = 100, scan: Optional[Scan] = None) -> str:
    """The answer for a GPU-stack error rocmdoctor does not know: no cause, the facts, the
    checks, and the searches."""
    lines = ["not known to rocmdoctor  [unknown]"]
    _wrap(lines, "seen:", f"line {unknown.line_number}: {unknown.line}", width)
    _wrap(lines, "cause:", "not known: rocmdoctor has no entry for this message and guesses "
                           "no cause.", width)
    for fact in unknown.facts or ("none the text states (no target, library or version)",):
        _wrap(lines, "fact:", fact, width)
    for check in unknown.checks:
        _wrap(lines, "confirm:", check, width)
    _wrap(lines, "search:", f'"{unknown.query}"', width)
    lines.extend(f"           {name}: {url}" for name, url in unknown.searches)
    text = "\n".join(lines)
    if scan is not None:
        text += "\n\n" + _scan_note(scan, width)
    return text + "\n"


def _scan_note(scan: Scan, width: int) -> str:
    lines: list[str] = []
    _wrap(lines, "note:", f"a long text: {scan.summary()}.", width)
    return "\n".join(lines)
