"""The live host: answers from this machine, and records what it read for `snapshot`."""

from __future__ import annotations

import contextlib
import glob as _glob
import grp
import itertools
import os
import platform as _platform
import pwd
import stat as _stat
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable, Optional

from rocmdoctor.host import (
    DEFAULT_COMMAND_TIMEOUT_S,
    CommandResult,
    Host,
    PathInfo,
    PlatformInfo,
    StatfsInfo,
    UserInfo,
    command_key,
    natural_sorted,
)
from rocmdoctor.host.deep import DEEP_SCRIPT, DEEP_TOOL, run_deep
from rocmdoctor.host.process import run_command
from rocmdoctor.redact import Redactor

MAX_FILE_BYTES = 4 * 1024 * 1024
# `rocmdoctor check --collectives` launches its ranks through this name (checks/collectives.py)
COLLECTIVES_TOOL = "rocmdoctor-collectives"
COLLECTIVES_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "collectives_launch.py")
# `rocm-libraries` loads the ROCm libraries torch uses through this name (libload_child.py),
# in the Python that trains; the snapshot key stays the name, with no machine path in it.
LIBLOAD_TOOL = "rocmdoctor-libload"
LIBLOAD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libload_child.py")
ST_RDONLY = 1  # statvfs f_flag bit (os.ST_RDONLY)


def _path_type(mode: int) -> str:
    if _stat.S_ISLNK(mode):
        return "symlink"
    if _stat.S_ISDIR(mode):
        return "dir"
    if _stat.S_ISREG(mode):
        return "file"
    if _stat.S_ISCHR(mode):
        return "char"
    if _stat.S_ISBLK(mode):
        return "block"
    return "other"


def _owner(uid: int) -> Optional[str]:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _group(gid: int) -> Optional[str]:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None


class Recording:
    """What a live run read, in the snapshot contract's shapes. Thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files: dict[str, str] = {}
        self.paths: dict[str, dict[str, Any]] = {}
        self.dirs: dict[str, list[str]] = {}
        self.commands: dict[str, dict[str, Any]] = {}
        self.statfs: dict[str, dict[str, Any]] = {}


def _fs_magic(path: str) -> Optional[int]:
    """statfs(2)'s f_type for path (os.statvfs does not give it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        # struct statfs starts with `__fsword_t f_type` (a long on every Linux ABI); the
        # buffer is larger than the whole struct on any architecture.
        buf = ctypes.create_string_buffer(512)
        if libc.statfs(os.fsencode(path), buf) != 0:
            return None
        return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF
    except (OSError, AttributeError, ValueError, TypeError):
        return None


def live_statfs(path: str) -> Optional[StatfsInfo]:
    try:
        st = os.statvfs(path)
    except (OSError, ValueError):
        return None
    return StatfsInfo(f_type=_fs_magic(path), block_size=int(st.f_frsize or st.f_bsize),
                      blocks=int(st.f_blocks), available=int(st.f_bavail),
                      readonly=bool(st.f_flag & ST_RDONLY))


ProbeFn = Callable[[], Optional[dict[str, Any]]]


class LiveHost(Host):
    def __init__(
        self,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S,
        probe: Optional[ProbeFn] = None,
        environ: Optional[Mapping[str, str]] = None,
        rocm_root: Optional[str] = None,
        python_executable: Optional[str] = None,
    ) -> None:
        super().__init__(rocm_root=rocm_root)
        self.command_timeout = command_timeout
        # The Python that trains, when known before the probe answers (`--python`, else this
        # interpreter): our own children start in it without waiting for the probe.
        self._python_executable = python_executable
        self.recording = Recording()
        self._probe = probe
        self._environ = dict(os.environ if environ is None else environ)
        self._waits: dict[int, tuple[str, float]] = {}
        self._waits_lock = threading.Lock()
        self._wait_ids = itertools.count()

    @contextlib.contextmanager
    def _waiting(self, what: str) -> Iterator[int]:
        ticket = next(self._wait_ids)
        with self._waits_lock:
            self._waits[ticket] = (what, time.monotonic())
        try:
            yield ticket
        finally:
            with self._waits_lock:
                self._waits.pop(ticket, None)

    def _relabel(self, ticket: int, label: str) -> None:
        """What a running wait is waiting for now (the deep child's stage), same start."""
        with self._waits_lock:
            if ticket in self._waits:
                self._waits[ticket] = (f"the measured checks: {label}", self._waits[ticket][1])

    def waiting_on(self) -> list[tuple[str, float]]:
        with self._waits_lock:
            return sorted(self._waits.values(), key=lambda w: w[1])

    # --- facts -------------------------------------------------------------------------
    @property
    def env(self) -> Mapping[str, str]:
        return self._environ

    @property
    def user(self) -> UserInfo:
        return self.memo("live:user", _live_user)

    @property
    def platform(self) -> PlatformInfo:
        uname = _platform.uname()
        return PlatformInfo(
            system=uname.system, machine=uname.machine, kernel_release=uname.release,
            hostname=uname.node,
        )

    # --- the machine -------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        key = command_key(argv)
        limit = self.command_timeout if timeout is None else timeout

        def execute() -> CommandResult:
            with self._waiting(key) as ticket:
                if argv and argv[0] == DEEP_TOOL:  # progress from the child as it runs
                    result = run_deep(self._resolve(argv), limit, self._environ,
                                      lambda label: self._relabel(ticket, label))
                else:
                    result = run_command(self._resolve(argv), limit, self._environ)
            with self.recording.lock:
                self.recording.commands[key] = result.to_dict()
            return result

        # The memo is keyed by the argument list itself: ["sh", "-c", "a b"] and
        # ["sh", "-c", "a", "b"] share a snapshot key but are two commands (issue 28).
        return self.memo("cmd:" + "\0".join(argv), execute)

    def prefetch(self, argv: Sequence[str], timeout: Optional[float] = None) -> None:
        """Start a command now, in the background; run() with the same argv gets its result
        (the memo runs it once and makes later callers wait for it)."""
        threading.Thread(target=self.run, args=(list(argv), timeout), daemon=True,
                         name=f"prefetch:{command_key(argv)}").start()

    def _resolve(self, argv: Sequence[str]) -> list[str]:
        """Our own tools run in the Python that trains; their snapshot key stays the name."""
        if argv and argv[0] in (COLLECTIVES_TOOL, LIBLOAD_TOOL, DEEP_TOOL):
            python = self._python_executable or (self.python() or {}).get(
                "executable") or sys.executable
            if argv[0] == COLLECTIVES_TOOL:
                return [str(python), COLLECTIVES_SCRIPT, *argv[1:]]
            if argv[0] == DEEP_TOOL:  # dies with rocmdoctor too (deep_child.die_with_parent)
                return [str(python), DEEP_SCRIPT, "--parent-pid", str(os.getpid()), *argv[1:]]
            # the library-load child dies with rocmdoctor (PR_SET_PDEATHSIG), as the probe does
            return [str(python), LIBLOAD_SCRIPT, "--parent-pid", str(os.getpid()), *argv[1:]]
        return list(argv)

    def read_file(self, path: str) -> Optional[str]:
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES)
        except (OSError, ValueError):
            return None
        text = data.decode("utf-8", "replace")
        with self.recording.lock:
            self.recording.files[path] = text
        return text

    def stat(self, path: str) -> Optional[PathInfo]:
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            return None
        kind = _path_type(st.st_mode)
        info = PathInfo(
            type=kind,
            mode=format(_stat.S_IMODE(st.st_mode), "04o"),
            owner=_owner(st.st_uid),
            group=_group(st.st_gid),
            uid=st.st_uid,
            gid=st.st_gid,
            readable=os.access(path, os.R_OK),
            writable=os.access(path, os.W_OK),
            executable=os.access(path, os.X_OK),
            target=os.readlink(path) if kind == "symlink" else None,
        )
        with self.recording.lock:
            self.recording.paths[path] = info.to_dict()
        return info

    def listdir(self, path: str) -> Optional[list[str]]:
        try:
            names = natural_sorted(os.listdir(path))
        except (OSError, ValueError):
            return None
        with self.recording.lock:
            self.recording.dirs[path] = names
        return names

    def glob(self, pattern: str) -> list[str]:
        matches = natural_sorted(_glob.glob(pattern))
        for match in matches:
            self.stat(match)  # so that a replay answers the same glob
        return matches

    def statfs(self, path: str) -> Optional[StatfsInfo]:
        info = live_statfs(path)
        if info is not None:
            with self.recording.lock:
                self.recording.statfs[path] = info.to_dict()
        return info

    def python(self) -> Optional[dict[str, Any]]:
        probe = self._probe
        if probe is None:
            return None

        def wait() -> Optional[dict[str, Any]]:
            with self._waiting("the Python probe (importing torch)"):
                return probe()

        return self.memo("live:python", wait)


def _live_user() -> UserInfo:
    uid = os.getuid()
    name = _owner(uid) or os.environ.get("USER") or str(uid)
    groups = []
    for gid in sorted(set(os.getgroups()) | {os.getgid()}):
        groups.append(_group(gid) or str(gid))
    return UserInfo(name=name, uid=uid, groups=tuple(groups))


def account_redactor(environ: Optional[Mapping[str, str]] = None) -> Redactor:
    """The redactor for a file this process writes to be shared (`bench --json`, `tune
    --output`): this account's user name, $USER/$LOGNAME, the host name and home folder,
    with every secret shape."""
    env = os.environ if environ is None else environ
    return Redactor.for_account(_live_user().name, _platform.node(), env)
