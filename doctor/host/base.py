"""The one boundary for side effects.

Everything a check learns about the machine comes through a `Host`: run a command (with a
timeout), read a file, stat a path, list a folder, glob, the environment, the user, platform
facts and the Python probe. `LiveHost` (in `rocmdoctor.host.live`) does it for real and
records what it read; `SnapshotHost` (in `rocmdoctor.host.snapshot`) answers from a snapshot and
from nothing else. Checks never call subprocess, open or os.environ themselves.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")

DEFAULT_COMMAND_TIMEOUT_S = 10.0  # rocminfo hangs on some broken drivers


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def not_found(self) -> bool:
        return self.returncode == 127 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        return {
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 3),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CommandResult:
        return cls(
            returncode=int(d.get("returncode", 0)),
            stdout=str(d.get("stdout") or ""),
            stderr=str(d.get("stderr") or ""),
            timed_out=bool(d.get("timed_out", False)),
            duration_s=float(d.get("duration_s") or 0.0),
        )


NOT_INSTALLED = CommandResult(returncode=127, stderr="command not found")


@dataclass(frozen=True)
class PathInfo:
    """Stat facts about a path, as the snapshot contract records them."""

    type: str  # file, dir, symlink, char, block, other
    mode: str = "0644"  # permission bits, octal string
    owner: Optional[str] = None
    group: Optional[str] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    readable: bool = True
    writable: bool = False
    executable: bool = False
    target: Optional[str] = None

    @property
    def mode_bits(self) -> int:
        try:
            return int(self.mode, 8)
        except ValueError:
            return 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": self.type, "mode": self.mode, "owner": self.owner, "group": self.group,
            "uid": self.uid, "gid": self.gid, "readable": self.readable,
            "writable": self.writable, "executable": self.executable,
        }
        if self.target is not None:
            d["target"] = self.target
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PathInfo:
        return cls(
            type=str(d.get("type", "file")),
            mode=str(d.get("mode", "0644")),
            owner=d.get("owner"),
            group=d.get("group"),
            uid=d.get("uid"),
            gid=d.get("gid"),
            readable=bool(d.get("readable", True)),
            writable=bool(d.get("writable", False)),
            executable=bool(d.get("executable", False)),
            target=d.get("target"),
        )


def _count(value: Any) -> int:
    """A non-negative int from a snapshot field (0 when it is not one)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 24:
        return int(value.strip())
    return 0


def _magic(value: Any) -> Optional[int]:
    """A file-system magic number from an int or a hex string ("0x6969")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value & 0xFFFFFFFF if value >= -(2**31) else None
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            number = int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:
            return None
        return number & 0xFFFFFFFF if 0 <= number < 2**64 else None
    return None


@dataclass(frozen=True)
class StatfsInfo:
    """What statfs(2)/statvfs(3) say about the file system holding a path.

    `f_type` is the file system's magic number (NFS 0x6969, Lustre 0x0BD00BD0, ...), None
    when it could not be read; sizes are bytes available to an unprivileged user.
    """

    f_type: Optional[int]
    block_size: int = 0  # f_frsize
    blocks: int = 0  # f_blocks, in block_size units
    available: int = 0  # f_bavail, in block_size units
    readonly: bool = False  # ST_RDONLY in f_flag

    @property
    def free_bytes(self) -> int:
        return self.block_size * self.available

    @property
    def total_bytes(self) -> int:
        return self.block_size * self.blocks

    def to_dict(self) -> dict[str, Any]:
        return {
            "f_type": None if self.f_type is None else f"0x{self.f_type:08x}",
            "block_size": self.block_size, "blocks": self.blocks,
            "available": self.available, "readonly": self.readonly,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StatfsInfo:
        return cls(
            f_type=_magic(d.get("f_type")),
            block_size=_count(d.get("block_size")),
            blocks=_count(d.get("blocks")),
            available=_count(d.get("available")),
            readonly=d.get("readonly") is True,
        )


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: int
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlatformInfo:
    system: str = "Linux"
    machine: str = "x86_64"
    kernel_release: str = ""
    hostname: str = ""


@dataclass
class _MemoEntry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False
    value: Any = None
    error: Optional[BaseException] = None


class Host(ABC):
    """What checks may ask of a machine. Subclasses answer for real or from a snapshot."""

    def __init__(self, rocm_root: Optional[str] = None) -> None:
        self._memo: dict[str, _MemoEntry] = {}
        self._memo_lock = threading.Lock()
        # `--rocm-root`: where the user says ROCm is (facts/rocm_version.py reads it first).
        self.rocm_root = rocm_root
        # `check --stress SECONDS`: how long the measured run's stress loop lasts (facts/deep.py).
        self.deep_stress_s = 0.0

    # --- facts -------------------------------------------------------------------------
    @property
    @abstractmethod
    def env(self) -> Mapping[str, str]: ...

    @property
    @abstractmethod
    def user(self) -> UserInfo: ...

    @property
    @abstractmethod
    def platform(self) -> PlatformInfo: ...

    # --- the machine -------------------------------------------------------------------
    @abstractmethod
    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        """Run a command; a missing executable is returncode 127, a hang is timed_out."""

    @abstractmethod
    def read_file(self, path: str) -> Optional[str]:
        """The file's text, or None when it does not exist or cannot be read."""

    @abstractmethod
    def stat(self, path: str) -> Optional[PathInfo]:
        """Stat facts (not following a final symlink), or None when the path is absent."""

    @abstractmethod
    def listdir(self, path: str) -> Optional[list[str]]:
        """Sorted entry names of a folder, or None when it is absent or unreadable."""

    @abstractmethod
    def glob(self, pattern: str) -> list[str]:
        """Sorted paths matching a shell pattern (each `*` stays within one path segment)."""

    @abstractmethod
    def python(self) -> Optional[dict[str, Any]]:
        """The Python/PyTorch probe (snapshot contract `python`), or None when not run."""

    def waiting_on(self) -> list[tuple[str, float]]:
        """What the host is waiting for now: (what, time.monotonic() when it started), oldest
        first. A snapshot answers at once: nothing."""
        return []

    def statfs(self, path: str) -> Optional[StatfsInfo]:
        """The file system holding `path` (statfs), or None when the path is absent."""
        return None

    # --- helpers -----------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def known(self, key: str) -> bool:
        """Whether the memoised fact `key` is already computed, without error: a caller that
        only wants facts the checks paid for never waits for one, never starts one."""
        with self._memo_lock:
            entry = self._memo.get(key)
        return entry is not None and entry.done and entry.error is None

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """Compute a derived fact once per host, even when checks ask concurrently."""
        with self._memo_lock:
            entry = self._memo.get(key)
            if entry is None:
                entry = self._memo[key] = _MemoEntry()
        with entry.lock:
            if not entry.done:
                try:
                    entry.value = compute()
                except BaseException as exc:  # re-raised to every caller
                    entry.error = exc
                entry.done = True
        if entry.error is not None:
            raise entry.error
        return entry.value


def natural_key(name: str) -> list[tuple[int, int, str, str]]:
    """Sorts card2 before card10, renderD999 before renderD1000, node 2 before node 10: the
    numbers in a name compare as numbers (issue 28), by their digits (no int(): a name of
    thousands of digits sorts too)."""
    key = []
    for part in re.split(r"([0-9]+)", name):
        if part.isascii() and part.isdigit():
            digits = part.lstrip("0")
            key.append((0, len(digits), digits, part))
        elif part:
            key.append((1, 0, part, ""))
    return key


def natural_sorted(names: Iterable[str]) -> list[str]:
    """Folder entries and glob matches in the order the Host gives them: numbers as numbers."""
    return sorted(names, key=natural_key)


def command_key(argv: Sequence[str]) -> str:
    """The snapshot key of a command line: arguments joined by single spaces."""
    return " ".join(argv)
