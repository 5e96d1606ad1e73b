"""Snapshots (contracts/snapshot-v1.md): write one from a live run, replay one anywhere."""

from __future__ import annotations

import datetime as _dt
import fnmatch
import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor import __version__, schemas
from rocmdoctor.host import (
    NOT_INSTALLED,
    CommandResult,
    Host,
    PathInfo,
    PlatformInfo,
    StatfsInfo,
    UserInfo,
    command_key,
    natural_sorted,
)
from rocmdoctor.host.live import LiveHost
from rocmdoctor.redact import REDACTED, capture_env, redact_snapshot

FORMAT = schemas.SNAPSHOT


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message is one line for the user."""


class UnexpectedAccess(AssertionError):
    """Raised by a strict SnapshotHost (tests) on anything the test did not provide."""


# A snapshot is refused past this size (decompressed): a real one is a few MiB, and a small
# gzip file can expand to gigabytes (a "gzip bomb") before json sees a byte of it.
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024


def _read_at_most(stream: Any, limit: int, path: str) -> bytes:
    """Up to `limit` bytes of a stream, read in chunks kept apart until the end (so a
    refused file never holds more than `limit` in memory, with no copy of it); a
    SnapshotError past that."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            chunks.clear()
            raise SnapshotError(
                f"{path} is larger than {_size(limit)} once decompressed; "
                f"a snapshot is a few MiB, so it is refused")


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def load_snapshot(path: str, limit: int = MAX_SNAPSHOT_BYTES) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            if gzipped:
                try:
                    with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                        raw = _read_at_most(gz, limit, path)
                except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                    raise SnapshotError(
                        f"{path} is a damaged or truncated gzip file ({exc})") from None
            else:
                raw = _read_at_most(fh, limit, path)
    except FileNotFoundError:
        raise SnapshotError(f"snapshot not found: {path}") from None
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path} is not a JSON snapshot ({exc})") from None
    except (ValueError, RecursionError) as exc:  # a number of 4,300+ digits, deep nesting
        raise SnapshotError(f"{path} is not a usable JSON snapshot "
                            f"({_first_line(exc) or type(exc).__name__})") from None
    return parse_snapshot(data, path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""


def parse_snapshot(data: Any, name: str = "snapshot") -> dict[str, Any]:
    """The snapshot, once its format and the type of every field the contract names are
    right; anything else is a SnapshotError ("malformed snapshot: <field> ...")."""
    if not isinstance(data, dict):
        raise SnapshotError(f"{name} is not a rocmdoctor snapshot (top level is not an object)")
    fmt = data.get("format")
    if fmt != FORMAT:
        shown = repr(fmt) if isinstance(fmt, str) else _describe(fmt)
        raise SnapshotError(f"{name} has format {shown}; this rocmdoctor reads {FORMAT!r}")
    try:
        _check(data, SNAPSHOT_FIELDS, "")
    except _Malformed as bad:
        raise SnapshotError(f"malformed snapshot: {bad.where} must be {bad.expected}, not "
                            f"{_describe(bad.value)} ({name})") from None
    return data


# --- the types of the fields snapshot-v1.md names ---------------------------------------------
# A spec is a (description, test) pair for a leaf, a dict of field -> spec for an object
# (fields it does not name are not checked: readers ignore them), ("map", spec) for an
# object of any keys, ("list", spec) for a list. None is allowed only where a capture writes
# null (stat facts it could not read, torch fields of another build, an unknown smoke result).
class _Malformed(Exception):
    def __init__(self, where: str, expected: str, value: Any) -> None:
        super().__init__(where)
        self.where, self.expected, self.value = where, expected, value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


_PATH_TYPES = ("file", "dir", "symlink", "char", "block", "other")
_MODE = re.compile(r"[0-7]{1,7}")
STR = ("a string", lambda v: isinstance(v, str))
STR_OR_NULL = ("a string or null", lambda v: v is None or isinstance(v, str))
INT = ("an integer", _is_int)
INT_OR_NULL = ("an integer or null", lambda v: v is None or _is_int(v))
BOOL = ("true or false", lambda v: isinstance(v, bool))
BOOL_OR_NULL = ("true, false or null", lambda v: v is None or isinstance(v, bool))
NUMBER = ("a finite number", _is_number)
PATH_TYPE = (f"one of {', '.join(_PATH_TYPES)}", lambda v: v in _PATH_TYPES)
MODE = ('an octal string such as "0660"',
        lambda v: isinstance(v, str) and _MODE.fullmatch(v) is not None)

SNAPSHOT_FIELDS: dict[str, Any] = {
    "captured_at": STR,
    "tool_version": STR,
    "platform": {"system": STR, "machine": STR, "kernel_release": STR, "hostname": STR},
    "user": {"name": STR, "uid": INT, "groups": ("list", STR)},
    "env": ("map", STR),
    "files": ("map", STR),
    "paths": ("map", {
        "type": PATH_TYPE, "mode": MODE, "owner": STR_OR_NULL, "group": STR_OR_NULL,
        "uid": INT_OR_NULL, "gid": INT_OR_NULL, "readable": BOOL, "writable": BOOL,
        "executable": BOOL, "target": STR_OR_NULL,
    }),
    "dirs": ("map", ("list", STR)),
    "commands": ("map", {
        "returncode": INT, "stdout": STR, "stderr": STR, "timed_out": BOOL,
        "duration_s": NUMBER,
    }),
    "python": ("null or", {
        "executable": STR, "version": STR, "packages": ("map", STR),
        "torch": {
            "imported": BOOL, "error": STR_OR_NULL, "version": STR_OR_NULL,
            "hip": STR_OR_NULL, "cuda": STR_OR_NULL, "available": BOOL_OR_NULL,
            "device_count": INT, "arch_list": ("list", STR),
            "devices": ("list", {"index": INT, "name": STR, "arch": STR_OR_NULL,
                                 "total_memory": INT_OR_NULL}),
            "smoke": {"ok": BOOL_OR_NULL, "error": STR_OR_NULL},
        },
    }),
}


def _key(key: str) -> str:
    shown = json.dumps(key if len(key) <= 80 else key[:77] + "...", ensure_ascii=True)
    return f"[{shown}]"


def _check(value: Any, spec: Any, where: str) -> None:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise _Malformed(where or "the snapshot", "an object", value)
        for field, sub in spec.items():
            if field in value:
                _check(value[field], sub, f"{where}.{field}" if where else field)
    elif spec[0] == "null or":
        if value is not None:
            _check(value, spec[1], where)
    elif spec[0] == "map":
        if not isinstance(value, dict):
            raise _Malformed(where, "an object", value)
        for key, item in value.items():
            _check(item, spec[1], where + _key(key))
    elif spec[0] == "list":
        if not isinstance(value, list):
            raise _Malformed(where, "a list", value)
        for i, item in enumerate(value):
            _check(item, spec[1], f"{where}[{i}]")
    elif not spec[1](value):
        raise _Malformed(where, spec[0], value)


def _describe(value: Any) -> str:
    """The wrong value in a few words: the string "abc", the number 777, a list."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            text = repr(value)
        except ValueError:  # an integer past Python's digit limit for str()
            return "a number of thousands of digits"
        return f"the number {text if len(text) <= 30 else text[:27] + '...'}"
    if isinstance(value, str):
        shown = json.dumps(value if len(value) <= 40 else value[:37] + "...",
                           ensure_ascii=True)
        return f"the string {shown}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def save_snapshot(data: Mapping[str, Any], path: str) -> None:
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False)
    payload = text.encode("utf-8")
    if path.endswith(".gz"):
        payload = gzip.compress(payload)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(payload)
    os.replace(tmp, path)


def build_snapshot(host: LiveHost, redact: bool = True) -> dict[str, Any]:
    """Everything the live run read, in the contract's shape."""
    plat = host.platform
    user = host.user
    rec = host.recording
    with rec.lock:
        files = dict(rec.files)
        paths = dict(rec.paths)
        dirs = dict(rec.dirs)
        commands = dict(rec.commands)
        statfs = dict(rec.statfs)
    data: dict[str, Any] = {
        "format": FORMAT,
        "captured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "platform": {
            "system": plat.system,
            "machine": plat.machine,
            "kernel_release": plat.kernel_release,
            "hostname": REDACTED if redact else plat.hostname,
        },
        "user": {"name": user.name, "uid": user.uid, "groups": list(user.groups)},
        "env": capture_env(host.env, redact=False) if not redact else {},
        "files": files,
        "paths": paths,
        "dirs": dirs,
        "commands": commands,
    }
    if statfs:  # added fields: older readers ignore them
        data["statfs"] = statfs
    if host.rocm_root is not None:
        data["rocm_root"] = host.rocm_root
    probe = host.python()
    if probe is not None:
        data["python"] = probe
    if redact:
        data["platform"]["hostname"] = plat.hostname
        data = redact_snapshot(data, host.env)
    return data


def _split(path: str) -> list[str]:
    return path.rstrip("/").split("/")


class SnapshotHost(Host):
    """Answers from a snapshot and nothing else: anything absent does not exist.

    With strict=True (for unit tests) an access to anything the test did not provide
    raises UnexpectedAccess instead, unless the path or command is listed in `absent`.
    """

    def __init__(
        self, data: Mapping[str, Any], strict: bool = False, absent: Sequence[str] = ()
    ) -> None:
        root = data.get("rocm_root")
        super().__init__(rocm_root=root if isinstance(root, str) and root else None)
        self.data = data
        self.strict = strict
        self.absent = frozenset(absent)
        self._files: Mapping[str, str] = data.get("files") or {}
        self._paths: Mapping[str, Mapping[str, Any]] = data.get("paths") or {}
        self._dirs: Mapping[str, Sequence[str]] = data.get("dirs") or {}
        self._commands: Mapping[str, Mapping[str, Any]] = data.get("commands") or {}
        statfs = data.get("statfs")
        self._statfs: Mapping[str, Any] = statfs if isinstance(statfs, Mapping) else {}
        self._env: dict[str, str] = {
            str(k): str(v) for k, v in (data.get("env") or {}).items()
        }

    def _missing(self, what: str) -> None:
        if self.strict and what not in self.absent:
            raise UnexpectedAccess(f"the test did not provide {what!r}")

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

    @property
    def user(self) -> UserInfo:
        u = self.data.get("user") or {}
        return UserInfo(
            name=str(u.get("name", "user")),
            uid=int(u.get("uid", 1000)),
            groups=tuple(str(g) for g in u.get("groups", ())),
        )

    @property
    def platform(self) -> PlatformInfo:
        p = self.data.get("platform") or {}
        return PlatformInfo(
            system=str(p.get("system", "Linux")),
            machine=str(p.get("machine", "x86_64")),
            kernel_release=str(p.get("kernel_release", "")),
            hostname=str(p.get("hostname", "")),
        )

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        key = command_key(argv)
        entry = self._commands.get(key)
        if entry is None:
            self._missing(key)
            return NOT_INSTALLED
        return CommandResult.from_dict(entry)

    def read_file(self, path: str) -> Optional[str]:
        text = self._files.get(path)
        if text is None:
            self._missing(path)
        return text

    def stat(self, path: str) -> Optional[PathInfo]:
        entry = self._paths.get(path)
        if entry is not None:
            return PathInfo.from_dict(entry)
        if path in self._files:
            return PathInfo(type="file")
        if path in self._dirs or any(p.startswith(path.rstrip("/") + "/") for p in self._keys()):
            return PathInfo(type="dir", mode="0755", executable=True)
        self._missing(path)
        return None

    def listdir(self, path: str) -> Optional[list[str]]:
        entries = self._dirs.get(path)
        if entries is not None:
            return natural_sorted(str(e) for e in entries)
        prefix = path.rstrip("/") + "/"
        children = {k[len(prefix):].split("/")[0] for k in self._keys() if k.startswith(prefix)}
        if children:
            return natural_sorted(children)
        self._missing(path)
        return None

    def _keys(self) -> set[str]:
        return set(self._files) | set(self._paths) | set(self._dirs)

    def glob(self, pattern: str) -> list[str]:
        want = _split(pattern)
        found: set[str] = set()
        for key in self._keys():
            parts = _split(key)
            # A key deeper than the pattern still proves that its ancestor exists.
            if len(parts) >= len(want) and all(
                fnmatch.fnmatchcase(p, w) for p, w in zip(parts, want)
            ):
                found.add("/".join(parts[: len(want)]))
        return natural_sorted(found)

    def statfs(self, path: str) -> Optional[StatfsInfo]:
        entry = self._statfs.get(path)
        if isinstance(entry, Mapping):
            return StatfsInfo.from_dict(entry)
        self._missing("statfs " + path)
        return None

    def python(self) -> Optional[dict[str, Any]]:
        probe = self.data.get("python")
        return probe if isinstance(probe, dict) else None
