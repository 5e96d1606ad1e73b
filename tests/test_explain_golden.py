"""Every real paste's whole answer, as `rocmdoctor explain --json` gives it with the machine
its header names: cause, fix, commands, notes, confidence and the line each rests on. A
change to any entry's words, a resolver's note or the order of answers shows here, text by
text (`ROCMDOCTOR_UPDATE_GOLDEN=1` rewrites them for review)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.explain_replay import Case, cases, replay
from tests.golden import ROOT, assert_golden

CASES = cases()
GOLDEN = ROOT / "tests" / "golden" / "explain"


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_the_whole_answer_to_each_real_paste(c: Case) -> None:
    answer = json.dumps(replay(c).to_dict(), indent=1, sort_keys=True, ensure_ascii=False)
    assert_golden(GOLDEN / (Path(c.name).stem + ".json"), answer + "\n")


def test_every_golden_answer_has_its_paste() -> None:
    names = {Path(c.name).stem for c in CASES}
    assert sorted(p.stem for p in GOLDEN.glob("*.json") if p.stem not in names) == []
