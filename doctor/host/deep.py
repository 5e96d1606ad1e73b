"""The parent side of `check --deep`: runs deep_child.py in the Python that trains, reads its
progress while it runs, and stops it on Ctrl-C with the figures so far.

The child runs in a session of its own (host/process.py `spawn`), so the terminal's Ctrl-C
does not reach it: `interrupt_running()` sends it SIGINT, on which it stops measuring and
prints what it has. A child still running at its timeout is killed with its whole group,
and the result says it timed out (with the last progress line it printed). The child also
dies with rocmdoctor (PR_SET_PDEATHSIG, set by the child).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from rocmdoctor.host.base import CommandResult
from rocmdoctor.host.process import TimeoutExpired, kill_group, spawn

DEEP_TOOL = "rocmdoctor-deep"  # the snapshot key's first word: the name, never a path
DEEP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deep_child.py")
PARTIAL_MARK = "ROCMDOCTOR_DEEP_PARTIAL "  # keep equal to deep_child.PARTIAL_MARK
STDERR_TAIL = 40
_running: dict[int, Any] = {}
_lock = threading.Lock()


def interrupt_running() -> int:
    """SIGINT to every deep child running now; how many there were."""
    with _lock:
        procs = list(_running.values())
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGINT)
        except OSError:
            pass
    return len(procs)


def partial_of(line: str) -> Optional[dict[str, Any]]:
    """The JSON of one progress line, or None when the line is not one (or is cut short)."""
    if not line.startswith(PARTIAL_MARK):
        return None
    try:
        value = json.loads(line[len(PARTIAL_MARK):])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def run_deep(argv: Sequence[str], timeout: float, env: Optional[Mapping[str, str]] = None,
             on_label: Optional[Callable[[str], None]] = None) -> CommandResult:
    """Run the child to its end or its timeout. stdout is kept whole; stderr keeps the last
    progress line only when the child printed no result (it then says how far it got), and
    the last STDERR_TAIL other lines."""
    start = time.monotonic()
    try:
        proc = spawn(list(argv), env=env)
    except OSError as exc:
        return CommandResult(returncode=126, stderr=f"{argv[0]}: {exc.strerror or exc}")
    with _lock:
        _running[proc.pid] = proc
    out: list[str] = []
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
    last_partial = [""]

    def read_out() -> None:
        assert proc.stdout is not None
        out.extend(proc.stdout)

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            value = partial_of(line)
            if value is None:
                tail.append(line.rstrip("\n")[:500])
                continue
            if "result" in value:
                last_partial[0] = line.rstrip("\n")
            label = value.get("label")
            if on_label is not None and isinstance(label, str):
                on_label(label)

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=read_err, daemon=True)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except TimeoutExpired:  # the child hangs
        timed_out = True
        kill_group(proc)
        proc.wait()
    finally:
        with _lock:
            _running.pop(proc.pid, None)
    for reader in readers:
        reader.join(timeout=5)
    stdout = "".join(out)
    keep = [] if stdout.strip() and not timed_out else [last_partial[0]]
    stderr = "\n".join([line for line in keep if line] + list(tail))
    return CommandResult(returncode=124 if timed_out else proc.returncode, stdout=stdout,
                         stderr=stderr, timed_out=timed_out,
                         duration_s=time.monotonic() - start)
