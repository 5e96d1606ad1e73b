"""Golden files that cannot pass vacuously.

`ROCMDOCTOR_UPDATE_GOLDEN=1` rewrites a golden file whose text changed and then FAILS the
test ("golden updated: review and commit"): an update is never a pass. The switch is refused
when `CI` is set. A golden file that differs from the committed one (or is not committed at
all) fails the test too, so that a regenerated file passes only once it is committed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

UPDATE_SWITCH = "ROCMDOCTOR_UPDATE_GOLDEN"
ROOT = Path(__file__).resolve().parent.parent


def updating() -> bool:
    """Whether the update switch is on; refused (the test fails) when CI is set."""
    if os.environ.get(UPDATE_SWITCH) != "1":
        return False
    if os.environ.get("CI"):
        pytest.fail(f"{UPDATE_SWITCH}=1 is refused when CI is set: golden files are updated "
                    "by a person, who reviews and commits them")
    return True


@functools.cache
def _uncommitted() -> frozenset[str]:
    """Files under tests/golden that differ from git's HEAD or are not tracked (empty when
    this is not a git checkout)."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return frozenset()
    done = subprocess.run([git, "status", "--porcelain", "--untracked-files=all", "--",
                           "tests/golden"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        return frozenset()
    return frozenset(line[3:].strip().strip('"') for line in done.stdout.splitlines() if line)


def uncommitted(path: Path) -> bool:
    return _name(path) in _uncommitted()


def _name(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def assert_golden(path: Path, text: str) -> None:
    """`text` equals the committed golden file at `path`."""
    if updating():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            _uncommitted.cache_clear()
            pytest.fail(f"golden updated: review and commit {_name(path)}")
    if not path.exists():
        pytest.fail(f"no golden file {_name(path)}: write it with "
                    f"{UPDATE_SWITCH}=1, review and commit it")
    assert text == path.read_text(encoding="utf-8")
    if uncommitted(path):
        pytest.fail(f"golden {_name(path)} is not committed: review and commit it")
