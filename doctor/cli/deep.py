"""What `check --deep` and `--stress DURATION` add to the check command: the duration, which
checks they bring, one line instead of a column of skips on a machine with no GPU, and Ctrl-C
that ends the stress run with the figures so far.

Imported by rocmdoctor.cli.check only when --deep, --stress or a measured check's id is
given; nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import signal
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from rocmdoctor.model import Report, Status

UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}
DEEP_IDS = ("deep", "gemm-rate", "conv-rate", "memory-bandwidth", "host-link",
            "clocks-under-load", "kernel-launch", "gpu-links")
STRESS_IDS = ("stress",)


def parse_duration(text: str) -> float:
    """Seconds in '90', '90s', '10m', '1.5h'; ValueError with the accepted forms otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*", text or "")
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"--stress {text!r}: give a duration such as 90s, 10m or 1h")
    return float(m.group(1)) * UNITS[m.group(2) or ""]


def named(only: list[str], ids: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(i, word) or i == word for i in ids for word in only)


def collapse_skips(report: Report) -> Report:
    """When nothing can be measured here (no GPU, a snapshot without a measured run), the
    measured checks say so once: the `deep` skip stays, the others' same skips go."""
    gate = next((r for r in report.results if r.id == "deep"), None)
    if gate is None or gate.status is not Status.SKIP:
        return report
    kept = tuple(r for r in report.results if r.id == "deep" or not (
        r.id in DEEP_IDS + STRESS_IDS and r.status is Status.SKIP and r.summary == gate.summary))
    return replace(report, results=kept)


@contextlib.contextmanager
def interrupts_end_the_run(stream: Any = None) -> Iterator[None]:
    """The first Ctrl-C asks the measuring child to stop and report what it has (the checks
    then judge the figures so far); a second one stops rocmdoctor as usual."""
    from rocmdoctor.host.deep import interrupt_running

    out = stream or sys.stderr
    asked = [False]

    def handler(signum: int, frame: Any) -> None:
        if asked[0] or not interrupt_running():
            raise KeyboardInterrupt
        asked[0] = True
        try:
            out.write("\nrocmdoctor: stopping the measurements; the figures so far follow "
                      "(Ctrl-C again to quit)\n")
            out.flush()
        except (OSError, ValueError):
            pass

    try:
        before = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave Ctrl-C alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
