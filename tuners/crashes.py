"""What crashed trials tell a tune.

- Your settings crashing leaves nothing to compare against: the tune stops and shows the
  child's stderr and the command that runs the same benchmark by hand (`reproduce_command`).
- Several trials in a row crashing alike, whatever their settings, means the environment
  broke, not the configurations (`CrashStreak`): the search stops, your settings run once to
  see whether the machine has recovered, and the rest of the budget is kept.
- A crash that looks transient (kb/trial_crashes.py) is run once more, never twice.
- A crash whose cause is known to lie outside rocmdoctor is named with its source.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.kb.trial_crashes import KNOWN_CAUSES, TRANSIENT, CrashPattern
from rocmdoctor.tuners.bench.spec import BenchSpec

# Trials in a row, of different settings, that crash with one signature: the environment broke.
STREAK = 3
# States that say the run itself broke (not the configuration's memory or speed).
CRASH_STATES = ("crashed", "error")

_NUMBER = re.compile(r"\b0x[0-9a-f]+\b|\d+(?:\.\d+)?", re.IGNORECASE)
_PATH = re.compile(r"(?:/[\w.+-]+){2,}/?")


def _match(table: Sequence[CrashPattern], text: str) -> Optional[CrashPattern]:
    for entry in table:
        if any(re.search(p, text, re.IGNORECASE) for p in entry.patterns):
            return entry
    return None


def transient(message: str, stderr_tail: str = "") -> Optional[CrashPattern]:
    """The TRANSIENT entry a crash matches: worth one more run. None otherwise."""
    return _match(TRANSIENT, f"{message}\n{stderr_tail}")


def known_cause(message: str, stderr_tail: str = "") -> Optional[CrashPattern]:
    """The KNOWN_CAUSES entry a crash matches (a library's or the machine's fault), or None."""
    return _match(KNOWN_CAUSES, f"{message}\n{stderr_tail}")


def signature(state: str, message: str) -> str:
    """A crash's message without the parts that differ between runs of the same fault
    (numbers, addresses, paths): two trials that crashed alike have the same signature."""
    text = _PATH.sub("PATH", message.strip())
    return f"{state}: {_NUMBER.sub('N', text)}"[:300]


@dataclass(frozen=True)
class Ended:
    key: str  # the trial's parameters (rocmdoctor.tuners.study.params_key)
    state: str
    message: str


class CrashStreak:
    """The trials that ended last, newest at the end; `broken()` says when the last STREAK
    of them, each of other settings, crashed with one signature."""

    def __init__(self, needed: int = STREAK) -> None:
        self.needed = needed
        self.ended: list[Ended] = []

    def record(self, key: str, state: str, message: str) -> None:
        if state in ("interrupted", "duplicate", "not-run", "waiting"):
            return  # not an end of a run
        self.ended.append(Ended(key, state, message))
        del self.ended[:-self.needed]

    def broken(self) -> Optional[str]:
        """The crash message the last `needed` trials share, or None."""
        last = self.ended[-self.needed:]
        if len(last) < self.needed or any(e.state not in CRASH_STATES for e in last):
            return None
        if len({signature(e.state, e.message) for e in last}) != 1:
            return None
        if len({e.key for e in last}) != len(last):
            return None  # one configuration crashing again says nothing of the others
        return last[-1].message

    def members(self) -> int:
        return len(self.ended[-self.needed:])


def reproduce_command(spec: BenchSpec, env: Mapping[str, str], python: Optional[str] = None,
                      timeout_s: Optional[float] = None) -> str:
    """One shell line that runs the same benchmark as a trial: its variables, then
    `rocmdoctor bench` with its spec (settings as --set)."""
    assigns = [f"{k}={shlex.quote(str(v))}" for k, v in sorted(env.items())]
    words = ["rocmdoctor", "bench", "--model", spec.model,
              "--batch-size", str(spec.batch_size), "--precision", spec.precision]
    if spec.channels_last:
        words.append("--channels-last")
    if spec.compile:
        words.append("--compile")
    words += ["--steps", str(spec.steps), "--warmup", str(spec.warmup), "--device", spec.device,
              "--image-size", str(spec.image_size), "--seq-len", str(spec.seq_len)]
    if spec.data:
        words += ["--data", spec.data]
    if spec.nproc != 1:
        words += ["--nproc", str(spec.nproc)]
    for key, value in sorted(spec.settings.items()):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        words += ["--set", f"{key}={text}"]
    if python:
        words += ["--python", python]
    if timeout_s:
        words += ["--timeout", f"{timeout_s:g}"]
    return " ".join([*assigns, *map(shlex.quote, words)])
