"""scripts/grid_report.py: the figures docs/benchmarks.md quotes for the exhaustive grid."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, "scripts", "grid_report.py")
SPACE = {"precision": CategoricalDistribution(["fp32", "bf16"]),
         "compile": CategoricalDistribution(["off", "on"])}


def _trial(params: dict[str, str], state: str, images: float | None, seconds: float,
           after: float = 0.0, timeout: float | None = None) -> optuna.trial.FrozenTrial:
    start = datetime.datetime(2026, 11, 30, 3, 0, 0) + datetime.timedelta(seconds=after)
    deadline = {} if timeout is None else {"started_at": 1e9, "deadline_at": 1e9 + timeout}
    optuna_state = {"ok": TrialState.COMPLETE, "pruned": TrialState.PRUNED,
                    "interrupted": TrialState.FAIL}[state]
    return FrozenTrial(
        number=0, trial_id=0, state=optuna_state, value=images if state == "ok" else None,
        params=params, distributions=SPACE, system_attrs={}, intermediate_values={},
        user_attrs={**deadline, "state": state, "wall_s": seconds, "gpu": 0, "message": state,
                    "metrics": {"throughput": images, "windows": [images] if images else []}},
        datetime_start=start, datetime_complete=start + datetime.timedelta(seconds=seconds))


def test_grid_report_counts_ranks_and_compares_the_tunes_pick(tmp_path: Path) -> None:
    db = tmp_path / "grid.db"
    study = optuna.create_study(study_name="grid", storage=f"sqlite:///{db}",
                                direction="maximize")
    study.add_trials([
        _trial({"precision": "fp32", "compile": "off"}, "ok", 1000.0, 20.0),
        _trial({"precision": "bf16", "compile": "on"}, "interrupted", None, 5.0),
        _trial({"precision": "bf16", "compile": "on"}, "ok", 3000.0, 60.0),
        _trial({"precision": "fp32", "compile": "on"}, "pruned", 400.0, 15.0),
        # left running when its part stopped (the last other trial ended 60 s after it
        # started), marked failed when the next part recovered it two hours later
        _trial({"precision": "fp32", "compile": "on"}, "interrupted", None, 7200.0, 0.0, 180.0),
    ])
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps({"elapsed_s": 40.0, "verdict": {"best_overall": {
        "params": {"precision": "fp32", "compile": "off"}, "search_throughput": 1010.0}}}))
    out = tmp_path / "raw.json"
    done = subprocess.run([sys.executable, SCRIPT, str(db), "--study", "grid", "--tune",
                           str(tune), "--json", str(out), "--what", "a test grid"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "space_size": 4, "measured": 3, "ok": 2, "pruned": 1,
        "not_measured": [{"compile": "off", "precision": "bf16"}],
        "trials_run": 5, "gpu_seconds": 160.0,
        "best": {"params": {"precision": "bf16", "compile": "on"}, "images_per_s": 3000.0},
        "fastest": [
            {"params": {"precision": "bf16", "compile": "on"}, "images_per_s": 3000.0},
            {"params": {"precision": "fp32", "compile": "off"}, "images_per_s": 1000.0}],
        "tune": {"params": {"precision": "fp32", "compile": "off"},
                 "tune_images_per_s": 1010.0, "elapsed_s": 40.0, "share_of_grid_time": 0.25,
                 "grid_images_per_s": 1000.0, "grid_rank": 2, "below_grid_best": 0.6667}}
    raw = json.loads(out.read_text())
    assert raw["what"] == "a test grid"
    assert [(t["number"], t["state"], t["duration_s"]) for t in raw["trials"]] == [
        (0, "ok", 20.0), (1, "interrupted", 5.0), (2, "ok", 60.0), (3, "pruned", 15.0),
        (4, "interrupted", 60.0)]
