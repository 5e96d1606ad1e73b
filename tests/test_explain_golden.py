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
    logs = {Path(n).stem for n in KERNEL_LOGS}
    assert sorted(p.stem for p in (GOLDEN / "kernel-logs").glob("*.json")
                  if p.stem not in logs) == []


KERNEL_LOGS = sorted(p.name for p in (ROOT / "tests" / "fixtures" / "real").glob("*.txt")
                     if p.name.startswith(("dmesg", "journalctl", "errors-dmesg")))


@pytest.mark.parametrize("name", KERNEL_LOGS)
def test_the_whole_answer_to_each_real_kernel_log(name: str) -> None:
    """`rocmdoctor explain` of each captured kernel log (dmesg, journalctl -k), whole: the
    kernel-log catalogue's causes and fixes as a user reads them."""
    from rocmdoctor.explain import diagnose
    from tests.helpers import fixture_text
    answer = json.dumps(diagnose(fixture_text(name)).to_dict(), indent=1, sort_keys=True,
                        ensure_ascii=False)
    assert_golden(GOLDEN / "kernel-logs" / (Path(name).stem + ".json"), answer + "\n")
