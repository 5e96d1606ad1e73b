"""Every table of `rocmdoctor.kb`, whole, against a committed golden file per module.

The knowledge base is data with sources: a gfx target's family, a release's target list, a
GPU name's pattern, a reference figure, an entry's fix. Most rows are read by some test, but
not every field of every row is; a careless edit (a digit dropped from a version, a pattern cut
short, a unit mistyped) then passes unseen. Each module's top-level constants are written out
as JSON (dataclass rows field by field, patterns as their text, sets sorted); a change shows
as a diff of its golden file, to review and commit with ROCMDOCTOR_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.golden import assert_golden
from tests.helpers import repo_root

ROOT = Path(repo_root())
KB = ROOT / "doctor" / "kb"
GOLDEN = ROOT / "tests" / "golden" / "kb"
MODULES = sorted(p.stem for p in KB.glob("*.py") if p.stem != "__init__")


def _own_names(path: Path) -> list[str]:
    """The module's own top-level assignments (imported names are another module's)."""
    names: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Name) and t.id.strip("_").isupper():
                names.append(t.id)
    return names


def plain(value: Any) -> Any:
    """`value` as JSON that says everything a row holds, the same on every run."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"@": type(value).__name__,
                **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, re.Pattern):
        return {"@": "pattern", "text": value.pattern, "flags": value.flags}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if callable(value):
        return {"@": "callable", "name": getattr(value, "__qualname__", repr(value))}
    return {"@": type(value).__name__, "repr": repr(value)}


def table_text(module: str, package: str = "rocmdoctor.kb", folder: Path = KB) -> str:
    mod = importlib.import_module(f"{package}.{module}")
    tables = {name: plain(getattr(mod, name)) for name in _own_names(folder / f"{module}.py")
              if hasattr(mod, name)}
    return json.dumps(tables, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


# The tuner's own data modules: the knobs table and the bench settings a spec takes (a
# knob's description, a setting's choices and help), held the same way.
TUNER_TABLES = {"knobs": ("rocmdoctor.tuners", ROOT / "tuners"),
                "spec": ("rocmdoctor.tuners.bench", ROOT / "tuners" / "bench")}


def test_every_kb_module_has_tables() -> None:
    assert len(MODULES) >= 40
    assert "GFX_TARGETS" in _own_names(KB / "gfx.py")
    assert "KNOWN_MESSAGES" in _own_names(KB / "errors.py")


@pytest.mark.parametrize("module", MODULES)
def test_the_tables_of_each_kb_module(module: str) -> None:
    assert_golden(GOLDEN / f"{module}.json", table_text(module))


@pytest.mark.parametrize("module", sorted(TUNER_TABLES))
def test_the_tables_of_the_tuners_data_modules(module: str) -> None:
    package, folder = TUNER_TABLES[module]
    assert_golden(GOLDEN / f"tuners-{module}.json", table_text(module, package, folder))


def test_a_changed_row_field_changes_the_golden_text() -> None:
    from rocmdoctor.kb import gfx

    row = gfx.GFX_TARGETS["gfx1150"]
    assert plain(row)["family"] == row.family and row.family in table_text("gfx")
    assert plain(dataclasses.replace(row, family=row.family[:-1])) != plain(row)
    assert plain(re.compile(r"\bH200\b", re.I)) == {"@": "pattern", "text": r"\bH200\b",
                                                     "flags": re.I | re.U}
