"""Every child process rocmdoctor starts goes through here: commands with captured output
(`run_command`) and long-running children with pipes (`spawn`). Each child runs in a session
of its own, so a timeout or Ctrl-C kills its whole process group (`kill_group`), and
`kill_tree` also reaches descendants that started sessions of their own.

Every child starts in a folder that exists (`child_cwd`): a child inherits its parent's
working folder, and when that folder is deleted while rocmdoctor runs (a checkout replaced, a
job folder cleaned) a child cannot read it: torch's own import then dies at once ("Intel
oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so", exit code 2: the oneMKL linked into
libtorch_cpu calls getcwd() as it loads, docs/tune.md "Why trials crashed").

This is the one module that imports subprocess (a test holds the rule).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor.host.base import CommandResult

MAX_OUTPUT_CHARS = 2 * 1024 * 1024
PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
TimeoutExpired = subprocess.TimeoutExpired
Popen = subprocess.Popen


def _start_dir() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:  # started in a folder already gone: the shell's word for it, if any
        pwd = os.environ.get("PWD", "")
        return pwd if os.path.isabs(pwd) else None


START_DIR = _start_dir()  # where rocmdoctor was started, by name (resolved again when used)
_CWD_LOCK = threading.Lock()
_cwd_notes: list[str] = []  # what child_cwd had to do, once each, for the command to report


def cwd_alive() -> bool:
    """Whether this process's working folder still exists (getcwd fails once it is deleted,
    also when a new folder of the same name has replaced it)."""
    try:
        os.getcwd()
    except OSError:
        return False
    return True


def child_cwd(wanted: Optional[str] = None) -> Optional[str]:
    """The folder a child starts in: `wanted`, else this process's own (None: inherit it),
    else, when that folder was deleted, the folder of the same name if it exists again
    (a checkout replaced in place), else the temporary folder. Never a folder that is gone."""
    if wanted is not None:
        return wanted
    if cwd_alive():
        return None
    again = START_DIR if START_DIR and os.path.isdir(START_DIR) else None
    chosen = again or tempfile.gettempdir()
    note = (f"the folder rocmdoctor was started in ({START_DIR or '?'}) was deleted while it "
            f"ran; child processes start in {'the new folder of that name' if again else chosen}"
            " instead (a child started in a deleted folder cannot import torch)")
    with _CWD_LOCK:
        if note not in _cwd_notes:
            _cwd_notes.append(note)
    return chosen


def cwd_notes() -> list[str]:
    """What child_cwd did about a deleted working folder, one line each (may be empty)."""
    with _CWD_LOCK:
        return list(_cwd_notes)


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
            cwd=child_cwd(),
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
                            env=dict(env) if env is not None else None,
                            cwd=child_cwd(cwd), start_new_session=own_session, **options)


PARENT_ENV = "ROCMDOCTOR_PARENT_PID"  # set for a child that must not outlive its parent
# Set for a child whose every descendant must end with it (a benchmark trial): descendants
# inherit it, also those that leave its session (torch.compile's compile workers), so
# `reap_tagged` finds what outlived the child.
TAG_ENV = "ROCMDOCTOR_CHILD_TAG"


def die_with_parent(parent_pid: Optional[int]) -> None:
    """In a child: have Linux kill this process when its parent dies (PR_SET_PDEATHSIG), so that
    even a `kill -9` of rocmdoctor leaves no benchmark running on the GPU; exit at once if the
    parent is already gone (host/child_setup.py, which the child scripts share)."""
    from rocmdoctor.host.child_setup import die_with_parent as setup_die_with_parent

    setup_die_with_parent(parent_pid)


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



def tagged(tag: str, exclude: Sequence[int] = ()) -> list[Any]:
    """The live processes (psutil.Process) whose environment carries TAG_ENV=tag."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        if proc.pid in exclude or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TAG_ENV) == tag and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:  # gone, or another account's
            continue
    return found


def reap_tagged(tag: str, exclude: Sequence[int] = (), wait_s: float = 5.0) -> int:
    """SIGKILL every process that carries `tag` (what outlived a child: compile workers, a
    power sampler, a grandchild in a session of its own) and wait for them to end; returns
    how many there were. Their zombies that are this process's children are collected."""
    import psutil

    survivors = tagged(tag, exclude)
    for proc in survivors:
        try:
            proc.kill()
        except psutil.Error:
            pass
    # waiting also collects the zombie of one that is this process's child; one stuck in the
    # kernel (D state) cannot die and is left after wait_s
    psutil.wait_procs(survivors, timeout=wait_s)
    return len(survivors)
