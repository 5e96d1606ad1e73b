"""Replaying the pasted error texts of tests/fixtures/real/errors/ through `explain`.

Each fixture's header says, besides its source and the thread's answer:
  # host: <kind>        the machine the text came from, as explain would see it (default none):
                        amd, nvidia, cpu, plus -container or -wsl (amd-container, nvidia-wsl...)
  # host-env: K=V       a variable the thread shows set on that machine (repeatable)
  # expect: k1, k2 | s  the entries explain must answer with, and a substring of the fix
                        (its text or a command) of the first; `unknown` for a GPU error no
                        entry knows (the text lacks the message), `none` for unrelated text
Used by tests/test_explain_fixtures.py and scripts/explain_score.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from rocmdoctor.explain import Diagnosis, diagnose, explain_text
from rocmdoctor.host.snapshot import SnapshotHost
from tests.helpers import REAL, char_dev, fixture_header, fixture_text, make_snapshot

ERRORS = REAL / "errors"
WSL_KERNEL = "5.15.153.1-microsoft-standard-WSL2"
# a WSL machine's `uname -a` line, as a paste shows it
WSL_UNAME = f"\nLinux DESKTOP-1 {WSL_KERNEL} #1 SMP x86_64\n"


def paste(name: str) -> str:
    """The text of a real paste of tests/fixtures/real/errors/, without its header."""
    return fixture_text("errors/" + name)


def keys(text: str) -> list[tuple[str, str]]:
    """The entries explain answers a text with, alone (no machine), and their confidence."""
    return [(e.key, e.confidence) for e in explain_text(text, None)]


@dataclass(frozen=True)
class Case:
    name: str
    category: str
    host: str
    env: dict[str, str]
    expect: tuple[str, ...]  # entry keys; ("unknown",) or ("none",) for the verdicts
    fix: str
    answer: str
    gpu_related: bool = field(default=True)


def cases() -> list[Case]:
    return [case(p.name) for p in sorted(ERRORS.glob("*.txt"))]


def case(name: str) -> Case:
    header = fixture_header("errors/" + name)
    fields: dict[str, list[str]] = {}
    for line in header.splitlines():
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            fields.setdefault(key.strip(), []).append(value.strip())
    expect, _, fix = fields.get("expect", ["none"])[0].partition("|")
    env = dict(v.split("=", 1) for v in fields.get("host-env", []) if "=" in v)
    category = fields.get("category", ["?"])[0]
    return Case(name, category, fields.get("host", ["none"])[0], env,
                tuple(k.strip() for k in expect.split(",") if k.strip()), fix.strip(),
                fields.get("answer", [""])[0], not category.startswith("unrelated-"))


def host_for(kind: str, env: Optional[dict[str, str]] = None) -> Optional[SnapshotHost]:
    """A snapshot of the machine kind a fixture names: its vendor's device nodes and driver
    files, a container's marker file, a WSL kernel; nothing else is known about it."""
    if kind == "none":
        return None
    vendor, _, where = kind.partition("-")
    files: dict[str, str] = {}
    paths: dict[str, dict[str, Any]] = {}
    kernel = "6.8.0-45-generic"
    if vendor == "amd" and where != "wsl":
        files["/sys/module/amdgpu/initstate"] = "live\n"
        paths["/dev/kfd"] = char_dev()
    if vendor == "amd" and where == "wsl":
        paths["/dev/dxg"] = char_dev(group="root", mode="0666")
        files["/opt/rocm/.info/version"] = "6.4.2-120\n"
    if vendor == "nvidia" and where != "wsl":
        files["/proc/driver/nvidia/version"] = "NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"
        paths["/dev/nvidiactl"] = char_dev(group="root", mode="0666")
    if vendor == "nvidia" and where == "wsl":
        files["/usr/lib/wsl/lib/libcuda.so.1"] = ""
    if where == "container":
        files["/.dockerenv"] = ""
    if where == "wsl":
        kernel = WSL_KERNEL
    return SnapshotHost(make_snapshot(env=env or {}, files=files, paths=paths, kernel=kernel))


def replay(c: Case) -> Diagnosis:
    return diagnose(fixture_text("errors/" + c.name), host_for(c.host, c.env))


def fixture_path(name: str) -> Path:
    return ERRORS / name
