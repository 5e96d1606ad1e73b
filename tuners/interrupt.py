"""Stopping a tune cleanly: the signals that stop it like Ctrl-C, waiting for the search
threads to record their trials, and holding a Ctrl-C until a step that must not be cut in
half is done."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

# Signals that stop a tune like Ctrl-C: Slurm's scancel and `timeout` send SIGTERM, a closed
# SSH session SIGHUP. Each is recorded, its trials requeued, and the exit code 128 + signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def wait_all(ended: list[threading.Event], until: Optional[float] = None) -> bool:
    """Wait until every search thread has set its event (or `until`, a monotonic time).
    Not Thread.join: up to CPython 3.12 a Ctrl-C landing in join() marks the thread as ended
    while it still runs (python/cpython#90882: the bpo-45274 handler releases the lock the
    running thread holds), and the tune then stopped without waiting for it to record its
    trial."""
    for end in ended:
        while not end.wait(0.2):
            if until is not None and time.monotonic() >= until:
                return False
    return True


def join(ended: list[threading.Event], within_s: float = 20.0) -> None:
    """Let the threads record their trials, then kill any child still running."""
    from rocmdoctor.tuners.bench.child import kill_all

    wait_all(ended, time.monotonic() + within_s)
    kill_all()


@contextlib.contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block is done, then raise it: for a step that a
    KeyboardInterrupt must not cut in half (a stop whose trials are half recorded leaves
    them RUNNING). Only the main thread receives signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []
    previous: dict[int, Any] = {
        int(sig): signal.signal(sig, lambda signum, _frame: seen.append(signum))
        for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if seen:  # delivered now, to the handler that was there (the CLI's, which says which)
        handler = previous[seen[0]]
        if callable(handler):
            handler(seen[0], None)
