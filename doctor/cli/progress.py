"""Progress on stderr while a command waits: after `delay` seconds with nothing printed, a
live line "waiting for <what> (N s)" on a terminal, or plain lines when stderr is a file or
a pipe (a job's log): one when something has been waited for `delay` seconds, then at most
one every `interval` seconds while it lasts.

What is waited for comes from the host (`Host.waiting_on`: a command, the Python probe);
between two of them it says the checks are running.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Callable, Optional, TextIO

WaitingOn = Callable[[], "list[tuple[str, float]]"]


def describe(waits: list[tuple[str, float]], now: float, started: float,
             idle: Optional[str] = "the checks") -> str:
    """ "waiting for rocm-smi (12 s)", "... and 2 more" when several are running; "" when
    nothing is waited for and there is no `idle` text (nothing to say)."""
    if not waits:
        return f"waiting for {idle} ({now - started:.0f} s)" if idle else ""
    what, since = waits[0]
    more = f" and {len(waits) - 1} more" if len(waits) > 1 else ""
    return f"waiting for {what} ({now - since:.0f} s){more}"


class Progress:
    """A context manager that reports on `stream` from a daemon thread until it exits."""

    def __init__(self, waiting_on: WaitingOn, stream: TextIO, delay: float = 2.0,
                 interval: float = 5.0, tick: float = 0.5, live: Optional[bool] = None,
                 idle: Optional[str] = "the checks") -> None:
        self.waiting_on = waiting_on
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.tick = tick
        self.idle = idle
        isatty = getattr(stream, "isatty", None)
        self.live = bool(isatty and isatty()) if live is None else live
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._shown = False
        self.lines = 0  # how many reports were written

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="rocmdoctor-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.live and self._shown:
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: stop quietly
            self._stop.set()

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        last = float("-inf")
        last_key: object = None
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                waits = self.waiting_on()
            except Exception:
                waits = []
            if self.live:
                text = describe(waits, now, self._started, self.idle)
                if text:
                    self._write(f"\r\x1b[K{text}")
                    self._shown = True
                    self.lines += 1
            else:
                # A log names what has been slow (waited for `delay` s or more): at once when
                # that changes, then at most one line every `interval` seconds.
                slow = [w for w in waits if now - w[1] >= self.delay]
                key: object = slow[0] if slow else ("idle" if not waits else None)
                text = describe(slow, now, self._started, self.idle) if key else ""
                if text and (key != last_key or now - last >= self.interval):
                    self._write(f"rocmdoctor: {text}\n")
                    self.lines += 1
                    last, last_key = now, key
            self._stop.wait(self.tick)
