"""Test helpers: real captured fixtures and snapshot building."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, Optional

from rocmdoctor.host.snapshot import FORMAT, SnapshotHost

REAL = Path(__file__).parent / "fixtures" / "real"


def fixture_text(name: str) -> str:
    """The body of a real capture, without its `#--- source` header."""
    text = (REAL / name).read_text(encoding="utf-8")
    if text.startswith("#--- source"):
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines[1:], start=1):
            if line.rstrip() == "#---":
                return "".join(lines[i + 1:])
    return text


def fixture_header(name: str) -> str:
    text = (REAL / name).read_text(encoding="utf-8")
    return text.split("\n#---\n", 1)[0]


def make_snapshot(
    *,
    env: Optional[dict[str, str]] = None,
    files: Optional[dict[str, str]] = None,
    paths: Optional[dict[str, dict[str, Any]]] = None,
    dirs: Optional[dict[str, list[str]]] = None,
    commands: Optional[dict[str, Any]] = None,
    user: Optional[dict[str, Any]] = None,
    kernel: str = "6.8.0-45-generic",
    python: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """A snapshot dict. `commands` values may be a plain stdout string (exit 0) or a dict."""
    cmds = {}
    for key, value in (commands or {}).items():
        if isinstance(value, str):
            value = {"returncode": 0, "stdout": value, "stderr": "", "timed_out": False}
        cmds[key] = value
    data: dict[str, Any] = {
        "format": FORMAT,
        "captured_at": "2026-11-29T00:00:00+00:00",
        "tool_version": "0.1.0",
        "platform": {"system": "Linux", "machine": "x86_64", "kernel_release": kernel,
                     "hostname": "<redacted>"},
        "user": user or {"name": "alice", "uid": 1000, "groups": ["alice", "render", "video"]},
        "env": dict(env or {}),
        "files": dict(files or {}),
        "paths": dict(paths or {}),
        "dirs": dict(dirs or {}),
        "commands": cmds,
    }
    if python is not None:
        data["python"] = python
    return data


def host_of(**kwargs: Any) -> SnapshotHost:
    return SnapshotHost(make_snapshot(**kwargs))


def char_dev(group: str = "render", mode: str = "0660", readable: bool = True,
             writable: bool = True, gid: int = 110) -> dict[str, Any]:
    return {"type": "char", "mode": mode, "owner": "root", "group": group, "uid": 0,
            "gid": gid, "readable": readable, "writable": writable, "executable": False}


def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def processes_with(marker: str) -> list[int]:
    """Processes whose environment holds `marker`: what a run started and left behind (a
    test sets the marker in the command's environment; every descendant inherits it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def ctrl_c_default() -> None:
    """preexec_fn for a command a test stops with SIGINT: a shell's background job (`pytest
    &`, a mutation run) starts with SIGINT ignored, which its children inherit and Python
    then keeps; the command under test must see Ctrl-C as a terminal sends it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
