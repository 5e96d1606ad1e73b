"""What a child process rocmdoctor starts does first: die with its parent, and keep stdout
for what it reports.

The child scripts run by path in the Python that trains (probe_child.py, libload_child.py),
where rocmdoctor itself may not be importable, so they load this file by path from their own
folder; host/process.py and the benchmark worker import it as rocmdoctor.host.child_setup.
It imports nothing but the standard library, and runs on the oldest Python the probe does.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import IO, Optional

PR_SET_PDEATHSIG = 1  # prctl(2)
PARENT_FLAG = "--parent-pid"


def parent_pid_from_argv(argv: Sequence[str]) -> Optional[int]:
    """The number after --parent-pid, None without one (or with something else there)."""
    if PARENT_FLAG in argv:
        try:
            return int(argv[list(argv).index(PARENT_FLAG) + 1])
        except (IndexError, ValueError):
            return None
    return None


def die_with_parent(parent_pid: Optional[int]) -> None:
    """Have Linux kill this process when its parent dies (PR_SET_PDEATHSIG), so that even a
    `kill -9` of rocmdoctor leaves no probe or benchmark running on the GPU; exit at once if
    the parent is already gone. Elsewhere (no prctl) the parent's own clean-up still applies."""
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except Exception:  # noqa: BLE001 - no prctl: the parent's timeout still applies
        return
    # The parent may have died before prctl took effect. (Not `getppid() != parent_pid`: an
    # interpreter wrapper that does not exec sits between them.)
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        os._exit(0)
    except OSError:
        pass


def leave_own_folder(script: str) -> None:
    """Take the script's own folder off sys.path: its modules must not shadow those torch
    imports (a script run by path has its folder first on sys.path)."""
    here = os.path.dirname(os.path.abspath(script))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]


def keep_stdout() -> int:
    """Keep the real stdout for this process's report and send everything else there (what
    torch, a driver, a library's constructor or user code prints) to stderr. Returns the
    file descriptor of the real stdout."""
    if sys.stdout is not None:
        sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return real


def protocol_stream() -> IO[str]:
    """keep_stdout() as a text stream, for a child that reports line by line."""
    return os.fdopen(keep_stdout(), "w", encoding="utf-8")


def hand_over(fd: int, text: str) -> None:
    """Write the report whole to the real stdout (keep_stdout's descriptor) and close it."""
    data = text.encode("utf-8")
    while data:
        data = data[os.write(fd, data):]
    os.close(fd)
