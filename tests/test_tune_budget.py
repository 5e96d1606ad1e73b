"""How a tune spends its time: the batch sizes it tries by default, the reserve it keeps for
the confirmation of the candidates that exist, when a one-time cost pays back, and the time
axis of its HTML page."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rocmdoctor.tuners import batch
from rocmdoctor.tuners import budget as bd
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.context import Context, TuneOptions
from rocmdoctor.tuners.html import time_ticks
from rocmdoctor.tuners.model import ConfirmRun, Payback, Platform, Trial
from rocmdoctor.tuners.proof import payback
from rocmdoctor.tuners.runner import TrialRunner
from rocmdoctor.tuners.search import Search


@pytest.mark.parametrize(("user", "largest", "reached", "sizes"), [
    (64, 1024, True, (64, 128, 256, 512, 1024)),  # the limit fits: no headroom needed
    (64, 900, False, (64, 128, 256, 512, 808)),  # 90 % of 900, to a multiple of 8
    (64, 600, False, (64, 128, 256, 512)),  # 536 is not well past 512
    (64, 64, False, (64,)),
    (64, None, False, (64,)),  # even the user's batch ran out of memory
    (96, 400, False, (96, 192, 360)),
])
def test_batch_choices_double_up_to_what_fits_with_headroom(
        user: int, largest: int | None, reached: bool, sizes: tuple[int, ...]) -> None:
    assert batch.choices(user, largest, reached) == sizes


def test_the_batch_search_is_kept_for_a_resumed_tune(tmp_path: Any) -> None:
    path = batch.cache_path(str(tmp_path), {"model": "resnet50"}, {"kind": "cuda"})
    assert batch.load(path) is None
    batch.save(path, {"sizes": [64, 128], "how": "max-batch search"})
    assert batch.load(path) == {"sizes": [64, 128], "how": "max-batch search"}
    assert batch.cache_path(str(tmp_path), {"model": "gpt2"}, {"kind": "cuda"}) != path
    (tmp_path / "bad.json").write_text('{"sizes": ["x"]}')
    assert batch.load(str(tmp_path / "bad.json")) is None


def test_payback_of_a_compile_cost() -> None:
    base = Trial(number=0, params={}, state="ok", throughput=2000.0, one_time_s=2.0)
    compiled = Trial(number=1, params={}, state="ok", one_time_s=62.0)
    # 60 s more, at 3x: each sample saves 1/2000 - 1/6000 s; 180,000 samples, 704 steps
    # of 256, 0.5 min at 6000 samples/s
    assert payback(base, compiled, 3.0, 256) == Payback(one_time_s=60.0, steps=704, minutes=0.5)
    assert payback(base, compiled, 0.9, 256) is None
    quick = Trial(number=2, params={}, state="ok", one_time_s=1.0)
    assert payback(base, quick, 2.0, 64) == Payback(one_time_s=0.0, steps=0, minutes=0.0)


@pytest.mark.parametrize(("x_max", "labels"), [
    (0.3, ["0:00", "0:05", "0:10", "0:15"]),
    (3.4, ["0:00", "1:00", "2:00", "3:00"]),
    (47.0, ["0", "10", "20", "30", "40"]),
])
def test_time_axis_labels_are_distinct_and_round(x_max: float, labels: list[str]) -> None:
    ticks = time_ticks(x_max)
    assert [label for _, label in ticks] == labels
    assert len({label for _, label in ticks}) == len(ticks)


class _Study:
    def __init__(self, runs: list[dict[str, Any]]) -> None:
        self.user_attrs = {"confirm_runs": runs}


def _trial(number: int, wall: float, one_time: float, tput: float, baseline: bool = False,
           precision: str = "fp32", state: str = "ok") -> Trial:
    return Trial(number=number, state=state, wall_s=wall, one_time_s=one_time, throughput=tput,
                 baseline=baseline, params={"precision": precision}, precision=precision)


def _runs(*runs: dict[str, Any]) -> list[ConfirmRun]:
    return [ConfirmRun(trial=r["trial"], round=r["round"], throughput=None,
                       wall_s=r.get("wall_s")) for r in runs]


def test_the_reserve_is_the_confirmation_of_the_candidates_that_exist() -> None:
    """Two rounds, each re-measuring your settings and each candidate once; a compiled
    trial's re-run costs its first run less most of its compile."""
    base = _trial(0, wall=30.0, one_time=2.0, tput=2000.0, baseline=True)
    compiled = _trial(1, wall=100.0, one_time=60.0, tput=6000.0, precision="bf16")

    def reserve(done: list[Trial], runs: list[ConfirmRun]) -> float:
        return bd.confirm_reserve(done, runs, 2, 2, "fp32", 64)

    # one candidate: 2 x ((30 - 1.6) + (100 - 48)) = 160.8 s, not 3 x 3 x the median wall
    assert reserve([base, compiled], []) == pytest.approx(160.8)
    # a measured re-run replaces the estimate
    assert reserve([base, compiled], _runs({"trial": 1, "round": 0, "wall_s": 40.0})) == \
        pytest.approx(2 * (28.4 + 40.0))
    # before any candidate: room for your settings and a typical candidate
    assert reserve([base], []) == pytest.approx(2 * (28.4 + 30.0))


class _Space:
    def size(self) -> int:
        return 10


def _search(trials: list[Trial], **options: Any) -> Search:
    """A search whose study holds `trials` (and no confirmation runs) over a 10-point space."""
    ctx = Context.of(TuneOptions(spec=BenchSpec(), **options), {})
    ctx.platform = Platform(kind="cpu", torch="2.13.0+cpu")
    ctx.space = _Space()  # type: ignore[assignment]
    ctx.study = _Study([])  # type: ignore[assignment]
    search = Search(ctx, TrialRunner(ctx))
    search.trials = lambda: trials  # type: ignore[method-assign]
    return search


def test_the_stop_reason_names_the_budget_only_when_it_binds() -> None:
    trials = [_trial(0, 30.0, 2.0, 2000.0, baseline=True)]
    search = _search(trials, budget_s=600.0)
    search.ctx.budget.started -= 100  # 500 s left: a 30 s trial and 117 s of confirmation fit
    assert search.stop_reason() is None
    search.ctx.budget.started -= 400  # 100 s left: not enough for a trial and its
    assert search.stop_reason() is None  # confirmation, but no candidate exists yet
    trials.append(_trial(1, 30.0, 2.0, 3000.0))
    assert search.stop_reason() == "budget"  # now the confirmation needs the rest
    trials.pop()
    search.ctx.budget.started -= 75  # 25 s left: not even a trial fits
    assert search.stop_reason() == "budget"


class _FakeTrial:
    def __init__(self, number: int, baseline: bool) -> None:
        self.number = number
        self.user_attrs: dict[str, Any] = {"baseline": True} if baseline else {}

    def set_user_attr(self, key: str, value: Any) -> None:
        self.user_attrs[key] = value

    def report(self, value: float, step: int) -> None:
        pass


@pytest.mark.parametrize("baseline", [False, True], ids=["candidate", "your-settings"])
def test_no_trial_runs_past_the_promised_end(baseline: bool, tmp_path: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled CPU trial started with 92 s left ran 5 minutes past a 150 s budget: now no
    trial, yours neither, runs past the promised end (the budget plus 10 % or 15 s, less the
    time to report). It is stopped there and recorded as interrupted (a resumed tune runs
    it); your settings cut short leave nothing to compare against, and the tune says the
    budget is too short for them."""
    from rocmdoctor.tuners import space as sp
    from rocmdoctor.tuners.bench.child import TrialOutcome
    from rocmdoctor.tuners.search import TrialFailed

    search = _search([], budget_s=150.0)
    search.ctx.study_dir = str(tmp_path)
    search.changes = lambda params: {}  # type: ignore[method-assign]
    search.total = lambda: 10  # type: ignore[method-assign]
    search.baseline = lambda: _trial(0, 30.0, 0.0, 1000.0, baseline=True)  # type: ignore
    search.ctx.budget.started -= 57.5  # 92.5 s left
    plan = sp.Plan(spec=BenchSpec(compile=True), env={}, tunableop=False, dirs={})
    monkeypatch.setattr(sp, "materialize", lambda *a, **k: plan)
    given: list[float] = []

    def run_plan(plan: Any, timeout: float, pruner: Any, gpu: Any, who: str) -> Any:
        given.append(timeout)
        return TrialOutcome("timeout", None, f"no result within {timeout:g} s; the child was "
                            "killed", "", -9, timeout), None

    search.runner.run = run_plan  # type: ignore[method-assign]
    trial = _FakeTrial(3, baseline)
    with pytest.raises(TrialFailed):
        search.measure(trial, {}, None, 1, 100.0)  # type: ignore[arg-type]
    # 92.5 s left + 15 s (10 % of 150 s is less) - 5 s to report; not the adaptive 360 s
    assert given == [pytest.approx(102.5, abs=1.0)]
    assert trial.user_attrs["state"] == "interrupted"
    assert trial.user_attrs["message"] == (
        "stopped when the budget ended (102 s in); the same command with a longer --budget "
        "runs it again")
    if baseline:
        assert search.failure is not None and search.failure.kind == "too-short"
        assert search.stop_reason() == "too-short"
    else:
        assert search.failure is None


# --- held by mutation testing (scripts/mutation.sh) ----------------------------------------------

def test_the_reserve_before_your_settings_finish_is_two_runs_a_round() -> None:
    """No finished baseline (it crashed, or has not run): room for your settings and one
    candidate per round, at the typical trial's wall time (60 s before any trial)."""
    assert bd.confirm_reserve([], [], 3, 2, "fp32", 64) == pytest.approx(3 * 2 * 60.0)
    crashed = _trial(0, 30.0, 2.0, 0.0, baseline=True, state="crashed")
    other = _trial(1, wall=20.0, one_time=1.0, tput=1000.0)
    assert bd.confirm_reserve([crashed, other], [], 3, 2, "fp32", 64) == \
        pytest.approx(3 * 2 * 20.0)


def test_max_trials_counts_the_running_ones_once() -> None:
    done = [_trial(0, 30.0, 2.0, 2000.0, baseline=True),
            dataclasses.replace(_trial(1, 30.0, 2.0, 2100.0), params={"precision": "bf16"})]
    search = _search(done, max_trials=3, budget_s=3600.0)
    assert search.stop_reason() is None
    search.running = {"a trial still running"}
    assert search.claimed(done) == 3
    assert search.stop_reason() == "max-trials"
    # a trial that has recorded its end but is still in `running` counts once
    from rocmdoctor.tuners import study as sd

    search.running = set(sd.done_keys(done))
    assert search.claimed(done) == 2
    assert search.stop_reason() is None


def test_the_budget_binds_only_once_your_settings_have_run() -> None:
    """Another configuration finished but your settings did not start: the search goes on
    whatever the time, so that there is a baseline to compare against."""
    waiting = _trial(0, 30.0, 2.0, 0.0, baseline=True, state="waiting")
    search = _search([waiting, _trial(1, 30.0, 2.0, 2000.0)], budget_s=600.0)
    search.ctx.budget.started -= 590  # 10 s left
    assert search.stop_reason() is None
