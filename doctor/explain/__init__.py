"""`rocmdoctor explain`: recognise known messages in pasted text and say what they mean.

`diagnose(text, host)` reads the text as a whole against the table in `rocmdoctor.kb.errors`:
every entry whose patterns match (and whose conditions hold) is found, then the entries that
merely follow from a more precise one step aside (`yields_to`), so the root-cause line wins
over the lines after it and two independent causes give two answers. Each answer carries its
cause, the fix for the environment the text or the machine shows (a container, WSL, or the
host itself) and the check that confirms it. When nothing is recognised, the verdict says
whether the text shows a GPU-stack error rocmdoctor does not know (then `rocmdoctor report`
is the way to an issue) or no GPU error at all (then there is no GPU advice to give).

Numbers in the message itself (an out-of-memory request against the GPU's capacity, the
targets a code object lacks) are always used; with a host, the answer also names this
machine's GPUs, the HSA_OVERRIDE_GFX_VERSION value for them and the pip line for its ROCm.
Secrets in the text (tokens, passwords, credentials in URLs) never reach the output.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor.explain.context import Context, Situation
from rocmdoctor.kb.errors import (
    GPU_ERROR_SHAPES,
    KERNEL_FALLBACK_KEYS,
    KNOWN_MESSAGES,
    KnownMessage,
)
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.model import Fix
from rocmdoctor.redact import Redactor, is_secret_name

if TYPE_CHECKING:
    from rocmdoctor.host import Host

_FLAGS = re.IGNORECASE | re.MULTILINE
# A pasted log past this size is read at its start and its end (where errors are).
MAX_TEXT = 1_000_000
_HEAD = 100_000
_KERNEL_KEYS = frozenset(m.key for m in KERNEL_MESSAGES)
RECOGNIZED, UNKNOWN_GPU, NOT_GPU = "recognized", "unknown-gpu-error", "not-gpu"


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
    environment: str = "host"  # whose fix this is: host, container or wsl

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "kind": self.kind,
                "matched": self.matched, "cause": self.cause, "notes": list(self.notes),
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

    def to_dict(self) -> dict[str, Any]:
        return {"recognized": bool(self.explanations), "verdict": self.verdict,
                "error_line": self.error_line,
                "explanations": [e.to_dict() for e in self.explanations]}


def explain_text(text: str, host: Optional[Host] = None) -> list[Explanation]:
    """Every known message in `text` that is not a consequence of another, in text order."""
    return diagnose(text, host).explanations


def diagnose(text: str, host: Optional[Host] = None) -> Diagnosis:
    text = bounded(text)
    situation = Situation(text, host)
    found: list[tuple[int, KnownMessage, str]] = []
    for entry in KNOWN_MESSAGES:
        if any(re.search(u, text, _FLAGS) for u in entry.unless_text):
            continue
        hit = _first_match(entry, text)
        if hit is None or not all(situation.holds(r) for r in entry.requires):
            continue
        found.append((hit[0], entry, hit[1]))
    found = _roots(found)
    found.sort(key=lambda f: f[0])
    explanations = [_explain(entry, line, situation) for _, entry, line in found]
    if explanations:
        return Diagnosis(explanations, RECOGNIZED)
    gpu_line = _gpu_error_line(text)
    if gpu_line is not None:
        return Diagnosis([], UNKNOWN_GPU, redact(gpu_line))
    program = _program_error_line(text)
    return Diagnosis([], NOT_GPU, redact(program) if program else None)


def bounded(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:_HEAD] + "\n" + text[-(MAX_TEXT - _HEAD):]


def _roots(found: list[tuple[int, KnownMessage, str]]) -> list[tuple[int, KnownMessage, str]]:
    """Drop what follows from another entry found in the same text, and the explain-only
    kernel entries on a line the kernel-log catalogue answers."""
    keys = {entry.key for _, entry, _ in found}
    specific = {entry.key for _, entry, _ in found if "*" not in entry.yields_to}
    kernel_lines = {start for start, entry, _ in found if entry.key in _KERNEL_KEYS}
    kept = []
    for start, entry, line in found:
        if keys.intersection(entry.yields_to):
            continue
        if "*" in entry.yields_to and specific - {entry.key}:
            continue
        if entry.key in KERNEL_FALLBACK_KEYS and start in kernel_lines:
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


def _explain(entry: KnownMessage, line: str, situation: Situation) -> Explanation:
    from rocmdoctor.explain.resolvers import RESOLVERS

    context = Context()
    environment, why = situation.environment()
    fix_text, commands = entry.fix, entry.commands
    variant = {"container": (entry.container_fix, entry.container_commands),
               "wsl": (entry.wsl_fix, entry.wsl_commands)}.get(environment)
    used = environment if variant is not None and variant[0] else "host"
    if variant is not None and variant[0]:
        fix_text, commands = variant[0], variant[1] or entry.commands
        context.notes.append(f"{'This is WSL' if used == 'wsl' else 'This runs in a container'}"
                             f" ({why}): the fix is the {used}'s.")
    resolver = RESOLVERS.get(entry.context or "")
    if resolver is not None:
        try:
            resolver(entry, situation, context)
        except Exception:  # noqa: BLE001 - machine facts are a bonus; keep the generic fix
            context.commands.clear()
    if context.commands:
        commands = tuple(dict.fromkeys(context.commands))
        needs_root = any(c.startswith("sudo ") for c in commands)
    else:
        needs_root = entry.needs_root
    fix = Fix(fix_text, tuple(commands), needs_root, entry.needs_relogin)
    return Explanation(entry.key, entry.title, entry.kind, line, entry.cause, fix,
                       entry.check, entry.source, tuple(redact(n) for n in context.notes),
                       used)


def _gpu_error_line(text: str) -> Optional[str]:
    """The last line that looks like a GPU-stack error, or the last traceback frame when a
    traceback stops inside torch's GPU initialisation (the error line itself cut off)."""
    lines = text.splitlines()[-5000:]
    for line in reversed(lines):
        if any(re.search(p, line) for p in GPU_ERROR_SHAPES):
            return _clip(line.strip())
    frames = [ln for ln in lines if ln.lstrip().startswith('File "')]
    if frames and lines and lines[-1].strip() and re.search(
            r"torch[/\\](?:cuda|distributed)[/\\]", frames[-1]) and not _program_error_line(text):
        return _clip(frames[-1].strip())
    return None


_PROGRAM_ERROR = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception)|Traceback|error)\b[:\s]")


def _program_error_line(text: str) -> Optional[str]:
    for line in reversed(text.splitlines()[-5000:]):
        if _PROGRAM_ERROR.search(line) and not line.lstrip().startswith("Traceback"):
            return _clip(line.strip())
    return None


def _clip(line: str) -> str:
    return line if len(line) <= 200 else line[:197] + "..."


# --- secrets --------------------------------------------------------------------------------

_REDACTOR = Redactor(homes=False)
REDACTED = "<redacted>"
_ASSIGNMENT = re.compile(r"\b([A-Za-z_][\w.-]*)(\s*[=:]\s*)([\"']?)([^\s\"',;]+)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)([= ])([\"']?)([^\s\"',;]+)")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with token-shaped strings, credentials in URLs and the values of secret-named
    settings (TOKEN=, --password ...) replaced; rocmdoctor.redact covers the token shapes
    and URL credentials, the Bearer and name=value forms are done here."""
    text = _REDACTOR(text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)

    def value(m: re.Match[str]) -> str:
        name, sep, quote, val = m.groups()
        if not is_secret_name(name) or val == REDACTED or val.startswith("-"):
            return m.group(0)
        return f"{name}{sep}{quote}{REDACTED}"

    return _ASSIGNMENT.sub(value, _FLAG.sub(value, text))


# --- rendering ------------------------------------------------------------------------------


def render_explanations(explanations: list[Explanation], width: int = 100) -> str:
    """Plain text, one block per explanation (no colour: it is pasted into bug reports)."""
    return "\n\n".join(_render_one(e, width) for e in explanations) + "\n"


def _wrap(lines: list[str], label: str, body: str, width: int) -> None:
    lines.extend(textwrap.wrap(body, width, initial_indent=f"  {label:<9}",
                               subsequent_indent=" " * 11, break_on_hyphens=False,
                               break_long_words=False) or [f"  {label}"])


def _render_one(e: Explanation, width: int) -> str:
    lines = [f"{e.title}  [{e.kind}]"]
    _wrap(lines, "seen:", e.matched, width)
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
