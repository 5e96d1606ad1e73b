"""Snapshots (contracts/snapshot-v1.md): write one from a live run, replay one anywhere."""

from __future__ import annotations

import datetime as _dt
import fnmatch
import gzip
import json
import os
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
    UserInfo,
    command_key,
)
from rocmdoctor.host.live import LiveHost
from rocmdoctor.redact import REDACTED, capture_env, redact_snapshot

FORMAT = schemas.SNAPSHOT


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message is one line for the user."""


class UnexpectedAccess(AssertionError):
    """Raised by a strict SnapshotHost (tests) on anything the test did not provide."""


def load_snapshot(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise SnapshotError(f"snapshot not found: {path}") from None
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise SnapshotError(f"{path} is a damaged or truncated gzip file ({exc})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path} is not a JSON snapshot ({exc})") from None
    return parse_snapshot(data, path)


def parse_snapshot(data: Any, name: str = "snapshot") -> dict[str, Any]:
    if not isinstance(data, dict):
        raise SnapshotError(f"{name} is not a rocmdoctor snapshot (top level is not an object)")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise SnapshotError(f"{name} has format {fmt!r}; this rocmdoctor reads {FORMAT!r}")
    for key in ("env", "files", "paths", "dirs", "commands", "platform", "user"):
        if key in data and not isinstance(data[key], dict):
            raise SnapshotError(f"{name}: '{key}' must be an object")
    return data


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
        super().__init__()
        self.data = data
        self.strict = strict
        self.absent = frozenset(absent)
        self._files: Mapping[str, str] = data.get("files") or {}
        self._paths: Mapping[str, Mapping[str, Any]] = data.get("paths") or {}
        self._dirs: Mapping[str, Sequence[str]] = data.get("dirs") or {}
        self._commands: Mapping[str, Mapping[str, Any]] = data.get("commands") or {}
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
            return sorted(str(e) for e in entries)
        prefix = path.rstrip("/") + "/"
        children = {k[len(prefix):].split("/")[0] for k in self._keys() if k.startswith(prefix)}
        if children:
            return sorted(children)
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
        return sorted(found)

    def python(self) -> Optional[dict[str, Any]]:
        probe = self.data.get("python")
        return probe if isinstance(probe, dict) else None
