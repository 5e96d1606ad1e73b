"""The tune's renderers against committed golden files: each recorded result (the H200 runs
in docs/data, and CPU runs of every way a tune can end in tests/golden/tune/inputs: the
environment broken, broken then recovered, your settings crashing, the confirmation
crashing, a budget too short, a plain run) rendered as the summary, the export file and the
HTML page. A change to any renderer that changes a byte of them fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmdoctor.tuners.codec import from_dict
from rocmdoctor.tuners.export import env_file_text, render_summary
from rocmdoctor.tuners.html import render_html
from rocmdoctor.tuners.model import TuneResult
from tests.golden import assert_golden
from tests.helpers import repo_root

ROOT = Path(repo_root())
GOLDEN = ROOT / "tests" / "golden" / "tune"
RESULTS = sorted((ROOT / "docs" / "data").glob("tune-*.json")) + \
    sorted((GOLDEN / "inputs").glob("tune-*.json"))


def _result(path: Path) -> TuneResult:
    """The recorded tune/1 JSON as the renderers take it (read by the codec, the one edge)."""
    return from_dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_the_summary_of_a_recorded_result(path: Path) -> None:
    assert_golden(GOLDEN / f"{path.stem}.summary.txt",
                  render_summary(_result(path), ["tune.json"]))


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_the_export_file_of_a_recorded_result(path: Path) -> None:
    assert_golden(GOLDEN / f"{path.stem}.env", env_file_text(_result(path)))


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_the_page_of_a_recorded_result(path: Path) -> None:
    assert_golden(GOLDEN / f"{path.stem}.html", render_html(_result(path)))


def test_every_recorded_result_is_rendered() -> None:
    assert len(RESULTS) >= 15
