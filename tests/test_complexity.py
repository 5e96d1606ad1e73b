"""The shape of the code, held as a rule and printed as a report (scripts/complexity.py, radon's
cyclomatic complexity): no function of the tuner ranks D or worse, none of its renderers C or
worse, and no module is over 450 lines, the data tables aside."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("complexity", ROOT / "scripts" / "complexity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["complexity"] = module
    spec.loader.exec_module(module)
    return module


def test_the_code_keeps_its_shape(capsys: pytest.CaptureFixture[str]) -> None:
    complexity = _script()
    report, broken = complexity.problems()
    print("\n".join(report))  # the report, as CI shows it with -rA or on a failure
    assert broken == []


def test_the_rules_catch_what_they_are_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """A planted tuner function of complexity 21 (D), a renderer of 11 (C) and a module of
    451 lines are each named."""
    complexity = _script()
    tuners = tmp_path / "tuners"
    tuners.mkdir()
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(20))
    (tuners / "deep.py").write_text(f"def tangled(x):\n{branches}\n    return -1\n")
    ten = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(10))
    (tuners / "export.py").write_text(f"def render(x):\n{ten}\n    return -1\n")
    (tuners / "long.py").write_text("x = 1\n" * 451)
    monkeypatch.setattr(complexity, "ROOT", tmp_path)
    monkeypatch.setattr(complexity, "SOURCES", ("tuners",))
    _, broken = complexity.problems()
    assert broken == ["tuners/deep.py:1 tangled ranks D (21)",
                      "tuners/export.py:1 render, a renderer, ranks C (11)",
                      "tuners/long.py has 451 lines (over 450)"]
