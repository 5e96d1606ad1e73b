"""A study written by an earlier version resumes with this one: the same command against a
copy of a study that rocmdoctor at e1d1672 wrote and Ctrl-C cut (tests/fixtures/studies)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

FIXTURE = Path(__file__).parent / "fixtures" / "studies" / "written-by-e1d1672.db"


def test_a_study_written_by_an_earlier_version_resumes(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    shutil.copy(FIXTURE, db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMDOCTOR_TEST")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    args = [sys.executable, "-m", "rocmdoctor", "tune", "--model", "tinycnn", "--device", "cpu",
            "--batch-size", "8", "--image-size", "32", "--steps", "2", "--warmup", "1",
            "--space", "channels_last,optimizer_impl", "--budget", "5m", "--confirm-top", "1",
            "--trial-timeout", "90", "--study", "written-by-e1d1672",
            "--storage", f"sqlite:///{db}", "--output", "r.json"]
    done = subprocess.run(args, cwd=tmp_path, env=env, text=True, capture_output=True,
                          timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert "tune: 2 knobs, 6 configurations, BruteForceSampler, study written-by-e1d1672, 2 "\
           "already done" in lines
    assert "tune: trial(s) 2 were interrupted last time; they run again" in lines
    started = [ln for ln in lines if ln.startswith("[")]
    assert not any(" trial 0:" in ln or " trial 1:" in ln for ln in started)  # not run again
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    by_number = {t["number"]: t for t in result["trials"]}
    assert by_number[0]["baseline"] and by_number[0]["state"] == "ok"
    assert by_number[0]["throughput"] == pytest.approx(2034.3, abs=0.1)  # measured back then
    assert by_number[2]["state"] == "interrupted"
    assert [t["retry_of"] for t in result["trials"] if t["retry_of"] is not None] == [2]
    measured = {json.dumps(t["params"], sort_keys=True) for t in result["trials"]
                if t["state"] in ("ok", "pruned")}
    assert len(measured) == 6  # the whole space, each point once
    assert result["confirmation"]["status"] == "done"
