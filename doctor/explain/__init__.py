"""`rocmdoctor explain`: recognise known messages in pasted text and say what they mean.

`diagnose(text, host)` first reads the facts the text states about itself (.paste: GPU
targets, libraries, versions, the system it was written on, the raising frame), then matches
it as a whole against the table in `rocmdoctor.kb.errors`: every entry whose patterns match
(and whose conditions hold) is found, then the entries that merely follow from a more precise
one step aside (`yields_to`), so the root-cause line wins over the lines after it and two
independent causes give two answers. Each answer carries its cause, the fix for the situation
the text or the machine shows (Windows, a container, WSL, or the host itself), the check that
confirms it, how sure it is (`likely`, or `possible` when the text lacks or contradicts a
fact the answer needs, or the entry names only a family of causes) and the line it rests on.

A GPU-stack error nothing matches gets the honest answer (.unknown): not known to
rocmdoctor, the facts found, the checks that confirm them and a ready search of the trackers.
A text without a GPU-stack error gets no GPU advice. A long text is read streaming (.reading)
and the answer says what was left out. Secrets never reach the output (.secrets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor.explain.context import CONDITIONS, Context, Situation
from rocmdoctor.explain.paste import PasteFacts, is_amd_paste, is_nvidia_paste
from rocmdoctor.explain.reading import Paste, Scan, read_text
from rocmdoctor.explain.render import render_explanations, render_not_known
from rocmdoctor.explain.secrets import REDACTED, redact
from rocmdoctor.explain.unknown import NotKnown, gpu_library_frame, not_known
from rocmdoctor.kb.errors import (
    GENERIC_KEYS,
    GPU_ERROR_SHAPES,
    KERNEL_FALLBACK_KEYS,
    KNOWN_MESSAGES,
    LINUX_ONLY_CHECKS,
    KnownMessage,
)
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.model import Fix

if TYPE_CHECKING:
    from rocmdoctor.host import Host

__all__ = ["NOT_GPU", "RECOGNIZED", "REDACTED", "UNKNOWN_GPU", "Diagnosis", "Explanation",
           "diagnose", "diagnose_paste", "explain_text", "redact", "render_explanations",
           "render_not_known"]

_FLAGS = re.IGNORECASE | re.MULTILINE
_KERNEL_KEYS = frozenset(m.key for m in KERNEL_MESSAGES)
RECOGNIZED, UNKNOWN_GPU, NOT_GPU = "recognized", "unknown-gpu-error", "not-gpu"
LIKELY, POSSIBLE = "likely", "possible"


@dataclass(frozen=True)
class Explanation:
    key: str
    title: str
    kind: str  # error, kernel-log, not-a-setting, harmful, harmless
    matched: str  # the line of the text that was recognised (secrets redacted)
    cause: str
    fix: Fix
    check: Optional[str]  # the `rocmdoctor check` id that confirms it
    source: str
    notes: tuple[str, ...] = ()  # facts from the message itself or from this machine
    environment: str = "host"  # whose fix this is: host, container, wsl or windows
    confidence: str = LIKELY  # likely, or possible (the notes say why)
    line: int = 0  # the line number of `matched` in the text

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "kind": self.kind,
                "matched": self.matched, "line": self.line, "confidence": self.confidence,
                "cause": self.cause, "notes": list(self.notes),
                "fix": {"text": self.fix.text, "commands": list(self.fix.commands),
                        "needs_root": self.fix.needs_root,
                        "needs_relogin": self.fix.needs_relogin},
                "check": self.check, "source": self.source, "environment": self.environment}


@dataclass(frozen=True)
class Diagnosis:
    """What the text is: recognised messages, or why there are none."""

    explanations: list[Explanation]
    verdict: str  # recognized, unknown-gpu-error, not-gpu
    error_line: Optional[str] = None  # the unknown GPU error, or the program's own error
    unknown: Optional[NotKnown] = None  # the not-known answer for an unknown GPU error
    scan: Optional[Scan] = None  # how a long text was read; None when read whole

    def to_dict(self) -> dict[str, Any]:
        return {"recognized": bool(self.explanations), "verdict": self.verdict,
                "error_line": self.error_line,
                "not_known": self.unknown.to_dict() if self.unknown else None,
                "scan": None if self.scan is None else {
                    "characters": self.scan.chars, "lines": self.scan.lines,
                    "lines_read": self.scan.kept,
                    "left_out": self.scan.quiet + self.scan.capped,
                    "summary": self.scan.summary()},
                "explanations": [e.to_dict() for e in self.explanations]}


def explain_text(text: str, host: Optional[Host] = None) -> list[Explanation]:
    """Every known message in `text` that is not a consequence of another, in text order."""
    return diagnose(text, host).explanations


def diagnose(text: str, host: Optional[Host] = None) -> Diagnosis:
    return diagnose_paste(read_text(text), host)


# Python's adjacent string literals, as a pasted `raise` line shows them ("have NCCL " "built
# in"): one message to the catalogue, as the program printed it. Only between two words, on one
# line, so the text keeps its lines.
_ADJACENT_LITERALS = re.compile(r"(?:(?<=\w)|(?<=\w ))([\"'])[ \t]+\1(?=\w)")


def diagnose_paste(paste: Paste, host: Optional[Host] = None) -> Diagnosis:
    text = _ADJACENT_LITERALS.sub("", paste.text)
    situation = Situation(text, host, paste.numbers)
    found: list[tuple[int, KnownMessage, str]] = []
    for entry in KNOWN_MESSAGES:
        if any(re.search(u, text, _FLAGS) for u in entry.unless_text):
            continue
        hit = _first_match(entry, text)
        if hit is None or not all(situation.holds(r) for r in entry.requires):
            continue
        found.append((hit[0], entry, hit[1]))
    found = _debugging_runs(_roots(found), text)
    found.sort(key=lambda f: f[0])
    explanations = [_explain(entry, line, paste.line_number(text.count("\n", 0, start) + 1),
                             situation) for start, entry, line in found]
    if explanations:
        return Diagnosis(explanations, RECOGNIZED, scan=paste.scan)
    program = _program_error_line(text)
    gpu_line = _gpu_error_line(text)
    if gpu_line is None and gpu_library_frame(situation.facts):
        gpu_line = program
    if gpu_line is None and program is None:
        gpu_line = _gpu_failure_told(text, situation.facts)
    if gpu_line is not None:
        line, index = gpu_line
        number = paste.line_number(index)
        return Diagnosis([], UNKNOWN_GPU, redact(line),
                         not_known(redact(line), number, situation.facts), paste.scan)
    return Diagnosis([], NOT_GPU, redact(program[0]) if program else None, scan=paste.scan)


def _roots(found: list[tuple[int, KnownMessage, str]]) -> list[tuple[int, KnownMessage, str]]:
    """Drop what follows from another entry found in the same text, and the explain-only
    kernel entries on a line the kernel-log catalogue answers."""
    keys = {entry.key for _, entry, _ in found}
    specific = {entry.key for _, entry, _ in found if "*" not in entry.yields_to}
    kernel_lines = {start for start, entry, _ in found if entry.key in _KERNEL_KEYS}
    first: dict[str, int] = {}
    for start, entry, _ in found:
        first.setdefault(entry.key, start)
    kept = []
    for start, entry, line in found:
        if keys.intersection(entry.yields_to):
            continue
        if any(first.get(key, start) < start for key in entry.follows):
            continue
        if "*" in entry.yields_to and specific - {entry.key}:
            continue
        if entry.key in KERNEL_FALLBACK_KEYS and start in kernel_lines:
            continue
        kept.append((start, entry, line))
    return kept


# A variable made to stay: exported, set for Windows, in a Dockerfile, compose file or Python.
_PERSISTED = r"(?:\bexport\s+|\bsetx?\s+|\bENV\s+|os\.environ\W{{1,3}}|^\s*-\s*){var}\b"


def _debugging_runs(found: list[tuple[int, KnownMessage, str]],
                    text: str) -> list[tuple[int, KnownMessage, str]]:
    """A debugging variable (HIP_LAUNCH_BLOCKING, AMD_LOG_LEVEL) set only for the command
    that reproduces an error, or named as how to get the log, is that debugging run: where
    the text shows the error, it is not a setting left on, and not the answer. One exported
    or set to stay is answered as before."""
    if not any(entry.kind == "harmful" and entry.variable for _, entry, _ in found):
        return found
    failing = any(entry.kind != "harmful" for _, entry, _ in found) or \
        _gpu_error_line(text) is not None
    if not failing:
        return found
    kept = []
    for start, entry, line in found:
        if entry.kind == "harmful" and entry.variable and not re.search(
                _PERSISTED.format(var=re.escape(entry.variable)), text, re.MULTILINE):
            continue
        kept.append((start, entry, line))
    return kept


def _first_match(entry: KnownMessage, text: str) -> Optional[tuple[int, str]]:
    best: Optional[tuple[int, str]] = None
    for pattern in entry.patterns:
        for m in re.finditer(pattern, text, _FLAGS):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start:end if end >= 0 else len(text)]
            if any(re.search(u, line, re.IGNORECASE) for u in entry.unless):
                continue
            if best is None or start < best[0]:
                line = redact(line.strip().splitlines()[0] if line.strip() else line)
                best = (start, line if len(line) <= 200 else line[:197] + "...")
            break
    return best


def _fix_for(entry: KnownMessage, situation: Situation,
             context: Context) -> tuple[str, tuple[str, ...], str]:
    """(fix text, commands, whose fix): a variant whose condition holds, else the container's
    or WSL's where the environment is one, else the entry's own."""
    for variant in entry.variants:
        test = CONDITIONS.get(variant.when)
        if test is not None and test(situation):
            if variant.note:
                context.notes.append(variant.note)
            return variant.fix, variant.commands or entry.commands, variant.when
    environment, why = situation.environment()
    choice = {"container": (entry.container_fix, entry.container_commands),
              "wsl": (entry.wsl_fix, entry.wsl_commands)}.get(environment)
    if choice is not None and choice[0]:
        context.notes.append(f"{'This is WSL' if environment == 'wsl' else 'This runs in a'}"
                             f"{'' if environment == 'wsl' else ' container'} ({why}): the fix "
                             f"is the {environment}'s.")
        return choice[0], choice[1] or entry.commands, environment
    return entry.fix, entry.commands, "host"


def _explain(entry: KnownMessage, line: str, number: int, situation: Situation) -> Explanation:
    from rocmdoctor.explain.resolvers import RESOLVERS

    context = Context()
    fix_text, commands, used = _fix_for(entry, situation, context)
    if situation.written_on_windows() and entry.check in LINUX_ONLY_CHECKS and used != "windows":
        context.doubts.append("the log was written on Windows and this is a Linux message "
                              "(Linux only): it cannot be the cause there as it stands")
    resolver = RESOLVERS.get(entry.context or "")
    if resolver is not None:
        try:
            resolver(entry, situation, context)
        except Exception:  # noqa: BLE001 - facts are a bonus; keep the generic fix
            context.commands.clear()
    if context.fix:
        fix_text = context.fix
    if context.commands:
        commands = tuple(dict.fromkeys(context.commands))
        needs_root = any(c.startswith("sudo ") for c in commands)
    else:
        needs_root = entry.needs_root
    sure = LIKELY
    generic = entry.key in GENERIC_KEYS and not context.settled
    if context.doubts or generic:
        sure = POSSIBLE
        if generic and not context.doubts:
            context.notes.append("Possible: this message has more than one cause and the "
                                 "text does not say which.")
        context.notes.extend(f"Possible: {d}." for d in context.doubts)
    fix = Fix(fix_text, tuple(commands), needs_root, entry.needs_relogin)
    return Explanation(entry.key, entry.title, entry.kind, line, entry.cause, fix,
                       entry.check, entry.source, tuple(redact(n) for n in context.notes),
                       used, sure, number)


def _gpu_error_line(text: str) -> Optional[tuple[str, int]]:
    """The last line that looks like a GPU-stack error, or the last traceback frame when a
    traceback stops inside torch's GPU initialisation (the error line itself cut off); with
    its line number in `text`."""
    lines = text.splitlines()
    first = max(0, len(lines) - 5000)
    for index in range(len(lines) - 1, first - 1, -1):
        if any(re.search(p, lines[index]) for p in GPU_ERROR_SHAPES):
            return _clip(lines[index].strip()), index + 1
    frames = [(i, ln) for i, ln in enumerate(lines[first:], start=first)
              if ln.lstrip().startswith('File "')]
    if frames and lines and lines[-1].strip() and re.search(
            r"torch[/\\](?:cuda|distributed)[/\\]", frames[-1][1]) \
            and not _program_error_line(text):
        return _clip(frames[-1][1].strip()), frames[-1][0] + 1
    return None


_FAILURE_TOLD = re.compile(r"\b(?:crash(?:es|ed)?|hangs?|hung|freez(?:es|ing)|froze|"
                           r"time[ds]? ?out|timeout|fault)\b", re.IGNORECASE)


def _gpu_failure_told(text: str, facts: PasteFacts) -> Optional[tuple[str, int]]:
    """A report that tells of a GPU failing in words (a crash, a hang, a timeout) with no
    error line of its own, where the text is about a GPU stack (a gfx or sm target, a GPU's
    name, ROCm or CUDA): an unknown GPU error, not a program's; the last line telling it."""
    if not (is_amd_paste(facts) or is_nvidia_paste(facts)):
        return None
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if _FAILURE_TOLD.search(lines[index]):
            return _clip(lines[index].strip()), index + 1
    return None


_PROGRAM_ERROR = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception)|Traceback|error)\b[:\s]")


def _program_error_line(text: str) -> Optional[tuple[str, int]]:
    lines = text.splitlines()
    first = max(0, len(lines) - 5000)
    for index in range(len(lines) - 1, first - 1, -1):
        line = lines[index]
        if _PROGRAM_ERROR.search(line) and not line.lstrip().startswith("Traceback"):
            return _clip(line.strip()), index + 1
    return None


def _clip(line: str) -> str:
    return line if len(line) <= 200 else line[:197] + "..."
