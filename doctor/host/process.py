"""Every child process rocmdoctor starts goes through here: commands with captured output
(`run_command`) and long-running children with pipes (`spawn`). Each child runs in a session
of its own, so a timeout or Ctrl-C kills its whole process group (`kill_group`), and
`kill_tree` also reaches descendants that started sessions of their own.

This is the one module that imports subprocess (a test holds the rule).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor.host.base import CommandResult

MAX_OUTPUT_CHARS = 2 * 1024 * 1024
PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
TimeoutExpired = subprocess.TimeoutExpired
Popen = subprocess.Popen


def run_command(
    argv: Sequence[str], timeout: float, env: Optional[Mapping[str, str]] = None
) -> CommandResult:
    """Run argv with a timeout. A missing executable is 127; a hang is killed and timed_out.

    The child runs in its own session so that a timeout kills its whole process group; a
    process stuck in the kernel (D state) is abandoned after a short grace period.
    """
    path = (env or os.environ).get("PATH")
    if not argv or shutil.which(argv[0], path=path) is None:
        name = argv[0] if argv else ""
        return CommandResult(returncode=127, stderr=f"{name}: command not found")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return CommandResult(returncode=126, stderr=f"{argv[0]}: {exc.strerror or exc}")
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
        returncode = proc.returncode
    except subprocess.TimeoutExpired:
        timed_out = True
        returncode = 124
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
    return CommandResult(
        returncode=returncode,
        stdout=out.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
        stderr=err.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


def spawn(argv: Sequence[str], env: Optional[Mapping[str, str]] = None,
          cwd: Optional[str] = None, stdin: Any = DEVNULL, stdout: Any = PIPE,
          stderr: Any = PIPE, text: bool = True, own_session: bool = True) -> Popen[Any]:
    """Start argv (OSError when it cannot start) in a session of its own, so that
    kill_group ends it with everything it started. `own_session=False` keeps it in this
    process's group instead: a helper of a child that must die when that child's group is
    killed. With `text`, its pipes are UTF-8 text with undecodable bytes replaced."""
    options: dict[str, Any] = {"encoding": "utf-8", "errors": "replace"} if text else {}
    return subprocess.Popen(list(argv), stdin=stdin, stdout=stdout, stderr=stderr,
                            env=dict(env) if env is not None else None, cwd=cwd,
                            start_new_session=own_session, **options)


PARENT_ENV = "ROCMDOCTOR_PARENT_PID"  # set for a child that must not outlive its parent
PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: Optional[int]) -> None:
    """In a child: have Linux kill this process when its parent dies (PR_SET_PDEATHSIG), so that
    even a `kill -9` of rocmdoctor leaves no benchmark running on the GPU; exit at once if the
    parent is already gone. Elsewhere (no prctl) the parent's own clean-up still applies."""
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


def parent_pid_from(environ: Mapping[str, str]) -> Optional[int]:
    value = environ.get(PARENT_ENV, "")
    return int(value) if value.isdigit() else None


def kill_group(proc: Popen[Any]) -> None:
    """SIGKILL the child, everything it started (those that left its session too) and its
    whole session: a hung GPU process may ignore SIGTERM."""
    kill_tree(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant it has, sessions of their own included."""
    import psutil

    try:
        parent = psutil.Process(pid)
        family = [parent, *parent.children(recursive=True)]
    except psutil.Error:
        return
    for member in family:
        try:
            member.kill()
        except psutil.Error:
            pass

