"""Every real capture in tests/fixtures/real is read by some test: a capture no test reads
holds nothing up, so it is used or removed.

A top-level capture counts as read when its file name is a string in a test module's code
(comments and docstrings do not count); the pasted errors of tests/fixtures/real/errors/ are
read as a folder, each one a case of tests/explain_replay.py that test_explain_fixtures runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import explain_replay
from tests.helpers import REAL

TESTS = Path(__file__).parent


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constant nodes that are docstrings (or other bare string statements)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def strings_in_code() -> list[str]:
    """Every string constant in the tests' code (f-string parts included), but this module's."""
    out = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name == Path(__file__).name:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        out.extend(node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and id(node) not in skip)
    return out


def test_every_top_level_capture_is_named_by_a_test() -> None:
    strings = "\n".join(strings_in_code())
    captures = sorted(p.name for p in REAL.iterdir() if p.is_file() and p.name != "INDEX.md")
    assert captures, "no captures found: the folder moved?"
    unread = [name for name in captures if name not in strings]
    assert not unread, f"{len(unread)} captures no test reads: {unread}"


def test_every_pasted_error_is_a_case_that_explain_replays() -> None:
    folder = sorted(p.name for p in (REAL / "errors").iterdir() if p.is_file())
    assert folder
    assert [c.name for c in explain_replay.cases()] == folder
    from tests import test_explain_fixtures

    assert [c.name for c in test_explain_fixtures.CASES] == folder


def test_the_index_lists_every_capture_and_nothing_else() -> None:
    rows = {line.split(" | ", 1)[0] for line in
            (REAL / "INDEX.md").read_text(encoding="utf-8").splitlines() if " | " in line}
    captures = {p.name for p in REAL.iterdir() if p.is_file() and p.name != "INDEX.md"}
    assert captures - rows == set(), "captures without an INDEX.md row"
    assert {r for r in rows if r.endswith(".txt")} - captures == set(), "rows without a capture"
