"""Where a hung benchmark process was: SIGABRT makes the worker's faulthandler write every
thread's Python stack to stderr before it dies (faulthandler.enable in
rocmdoctor.tuners.bench.worker; https://docs.python.org/3/library/faulthandler.html), and the
stacks are read back from the stderr kept of it."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Sequence
from typing import Any

STACK_WAIT_S = 2.0  # how long hung processes get to write their stacks and end

_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')
_HEADER = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+")
KEPT_FRAMES = 40  # of each thread's stack, the innermost ones


class StackWatch:
    """Fed a process's stderr line by line, it keeps the innermost frames of each thread
    faulthandler lists (the stderr tail alone loses them: a deep stack scrolls its header and
    its first frames out)."""

    def __init__(self) -> None:
        self.blocks: list[list[re.Match[str]]] = []

    def __call__(self, line: str) -> None:
        if _HEADER.match(line.strip()):
            self.blocks = [*self.blocks[-7:], []]
        elif self.blocks and len(self.blocks[-1]) < KEPT_FRAMES and \
                (frame := _FRAME.match(line)):
            self.blocks[-1].append(frame)

    def where(self) -> str:
        """Where the main thread was (faulthandler lists it last, innermost frame first):
        "all_reduce (distributed_c10d.py:2950), from agreed (ddp.py:97)"; "" without it."""
        frames = self.blocks[-1] if self.blocks else []
        real = [m for m in frames if not m["path"].startswith("<")]  # not <frozen importlib>
        if not real:
            return ""

        def said(m: re.Match[str]) -> str:
            return f"{m['name']} ({os.path.basename(m['path'])}:{m['line']})"

        ours = next((m for m in real if "rocmdoctor" in m["path"] or "/tuners/" in m["path"]),
                    None)
        return said(real[0]) if ours is None or ours is real[0] else \
            f"{said(real[0])}, from {said(ours)}"


def abort_for_stacks(procs: Sequence[Any], wait_s: float = STACK_WAIT_S) -> None:
    """SIGABRT to each process (Popen), then wait up to `wait_s` for them to end and a moment
    for their stderr readers to reach the end of the pipe. One that ignores it (stuck in the
    kernel) is left to the caller's SIGKILL."""
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGABRT)
        except OSError:
            pass
    until = time.monotonic() + wait_s
    while time.monotonic() < until and any(p.poll() is None for p in procs):
        time.sleep(0.05)
    time.sleep(0.2)
