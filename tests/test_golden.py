"""The golden-file guard (tests/golden.py): an update never passes, CI refuses the update
switch, and a golden file that is not committed fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import golden


def test_a_matching_golden_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(golden.UPDATE_SWITCH, raising=False)
    path = tmp_path / "g.txt"
    path.write_text("same\n")
    golden.assert_golden(path, "same\n")
    with pytest.raises(AssertionError):
        golden.assert_golden(path, "changed\n")


def test_the_update_writes_the_file_and_fails(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(golden.UPDATE_SWITCH, "1")
    monkeypatch.delenv("CI", raising=False)
    path = tmp_path / "g.txt"
    path.write_text("old\n")
    with pytest.raises(pytest.fail.Exception, match="golden updated: review and commit"):
        golden.assert_golden(path, "new\n")
    assert path.read_text() == "new\n"
    golden.assert_golden(path, "new\n")  # nothing to update: it compares


def test_the_update_switch_is_refused_in_ci(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(golden.UPDATE_SWITCH, "1")
    monkeypatch.setenv("CI", "true")
    path = tmp_path / "g.txt"
    path.write_text("old\n")
    with pytest.raises(pytest.fail.Exception, match="refused when CI is set"):
        golden.assert_golden(path, "new\n")
    assert path.read_text() == "old\n"


def test_a_missing_golden_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(golden.UPDATE_SWITCH, raising=False)
    with pytest.raises(pytest.fail.Exception, match="no golden file"):
        golden.assert_golden(tmp_path / "absent.txt", "x\n")


@pytest.mark.skipif(not (golden.ROOT / ".git").exists(), reason="not a git checkout")
def test_a_golden_that_is_not_committed_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(golden.UPDATE_SWITCH, raising=False)
    path = golden.ROOT / "tests" / "golden" / f"uncommitted-{os.getpid()}.txt"
    path.write_text("fresh\n")
    try:
        golden._uncommitted.cache_clear()
        with pytest.raises(pytest.fail.Exception, match="is not committed"):
            golden.assert_golden(path, "fresh\n")
    finally:
        path.unlink()
        golden._uncommitted.cache_clear()
