"""The Optuna study behind `rocmdoctor tune`: baseline first, resume after an interruption
without losing or repeating a finished trial, refusal of a study made for something else,
early stopping of clearly slower trials. Real optuna with SQLite files in tmp_path."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import Platform

CPU = Platform(kind="cpu", torch="2.13.0+cpu", device="cpu", cpu_count=4, torch_threads=4)
SPEC = BenchSpec(model="tinycnn", device="cpu")


def _space(names: str = "channels_last,threads") -> sp.SearchSpace:
    return sp.plan_space(CPU, SPEC, {}, space=names)


def _study(tmp_path: Path, space: sp.SearchSpace, name: str = "s") -> optuna.Study:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    return sd.open_study(name, storage, space, SPEC.to_dict(),
                         sd.make_sampler(space, None, seed=0))


def _finish(study: optuna.Study, space: sp.SearchSpace, state: str,
            value: float = 1.0) -> optuna.Trial:
    trial = study.ask()
    params = sp.suggest(trial, space)
    trial.set_user_attr("state", state)
    if state == "ok":
        study.tell(trial, value)
    elif state == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, state=TrialState.FAIL)
    assert params
    return trial


def test_new_study_measures_the_baseline_first(tmp_path: Path) -> None:
    space = _space()
    study = _study(tmp_path, space)
    trial = study.ask()
    assert trial.user_attrs == {"baseline": True}
    assert sp.suggest(trial, space) == {"channels_last": "off", "threads": "default"}
    assert space.size() == 6  # 2 layouts x 3 thread counts (yours: 4, then 2 and 1)


def test_a_study_for_another_space_is_refused(tmp_path: Path) -> None:
    _study(tmp_path, _space())
    with pytest.raises(sd.StudyMismatch, match="made for another workload or search space"):
        _study(tmp_path, _space("channels_last"))


def test_recover_requeues_an_interrupted_trial_once(tmp_path: Path) -> None:
    space = _space()
    study = _study(tmp_path, space)
    _finish(study, space, "ok", 100.0)  # the baseline
    running = study.ask()  # a tune killed while this trial ran leaves it RUNNING
    params = sp.suggest(running, space)
    reopened = _study(tmp_path, space)
    assert sd.recover(reopened) == [running.number]
    frozen = reopened.trials[running.number]
    assert frozen.state == TrialState.FAIL
    assert frozen.user_attrs["state"] == "interrupted"
    assert sd.recover(reopened) == []  # queued once, not twice
    retry = reopened.ask()
    assert retry.user_attrs == {"retry_of": running.number}
    assert sp.suggest(retry, space) == params
    reopened.tell(retry, 90.0)
    # A failure that recorded no outcome (Ctrl-C between two statements) counts the same.
    lost = reopened.ask()
    sp.suggest(lost, space)
    reopened.tell(lost, state=TrialState.FAIL)
    assert sd.recover(reopened) == [lost.number]


def test_done_keys_count_finished_trials_only(tmp_path: Path) -> None:
    space = _space()
    study = _study(tmp_path, space)
    _finish(study, space, "ok")
    _finish(study, space, "crashed")
    _finish(study, space, "interrupted")
    _finish(study, space, "duplicate")
    finished = [t for t in study.trials if t.user_attrs["state"] in ("ok", "crashed")]
    assert sd.done_keys([sd.read_trial(t) for t in study.trials]) == {
        sd.params_key(t.params) for t in finished}


def test_small_spaces_are_searched_exhaustively_large_ones_with_tpe() -> None:
    small = sd.make_sampler(_space(), max_trials=None, seed=0)
    assert isinstance(small, optuna.samplers.BruteForceSampler)
    big = sp.plan_space(Platform(kind="rocm", torch="2.13.0+rocm7.2", hip="7.2.53211"),
                        BenchSpec(), {}, space="full")
    assert big.size() > 1000
    assert isinstance(sd.make_sampler(big, max_trials=40, seed=0), optuna.samplers.TPESampler)


def test_study_name_is_stable_and_follows_the_space() -> None:
    one = sd.study_name(SPEC, _space(), CPU, keep_precision=False)
    assert one == sd.study_name(SPEC, _space(), CPU, keep_precision=False)
    assert one.startswith("tinycnn-") and len(one) == len("tinycnn-") + 10
    assert one != sd.study_name(SPEC, _space("channels_last"), CPU, keep_precision=False)
    assert sd.study_name(BenchSpec(model="my.pkg:make model"), _space(), CPU, False) \
        .startswith("my.pkg-make-model-")


def test_cache_dir_respects_xdg() -> None:
    assert sd.cache_dir({"XDG_CACHE_HOME": "/x"}) == "/x/rocmdoctor/tune"
    assert sd.cache_dir({"HOME": "/home/u"}) == "/home/u/.cache/rocmdoctor/tune"
    assert sd.default_storage({"HOME": "/home/u"}, "s") == \
        "sqlite:////home/u/.cache/rocmdoctor/tune/s.db"


def test_window_pruner_stops_only_clearly_slower_trials() -> None:
    reported: list[tuple[float, int]] = []
    pruner = sd.WindowPruner(100.0, report=lambda v, i: reported.append((v, i)))
    assert [pruner(i, v) for i, v in enumerate([30.0, 40.0, 45.0])] == [True, True, False]
    assert reported == [(30.0, 0), (40.0, 1), (45.0, 2)]
    steady = sd.WindowPruner(100.0)
    assert [steady(i, v) for i, v in enumerate([30.0, 55.0, 40.0, 20.0])] == [True] * 4
    assert sd.WindowPruner(None)(5, 1.0) is True  # nothing to compare with yet


def test_seeds_put_every_fast_choice_together_half_precisions_first() -> None:
    h200 = Platform(kind="cuda", torch="2.11.0+cu130", cuda="13.0", device="NVIDIA H200",
                    arch="sm_90", cpu_count=16, device_count=1)
    space = sp.plan_space(h200, BenchSpec(model="resnet50", device="cuda"), {},
                          batch_sizes=(128, 256))
    fast = {"channels_last": "on", "compile": "on", "compile_mode": "reduce-overhead",
            "optimizer_impl": "fused", "batch_size": "256", "cudnn_benchmark": "default",
            "alloc": "default"}
    # in the order of their expected gain: bf16, fp16, then your precision
    assert sp.seed_params(space) == [{"precision": "bf16", **fast},
                                     {"precision": "fp16", **fast},
                                     {"precision": "fp32", **fast}]
    # a space with no knob that has a fast choice seeds nothing
    assert sp.seed_params(_space("threads")) == []


def test_a_new_study_queues_the_seeds_after_the_baseline(tmp_path: Path) -> None:
    space = _space("channels_last")
    study = sd.open_study("s", f"sqlite:///{tmp_path}/s.db", space, {"model": "tinycnn"},
                          sd.make_sampler(space, None, 0))
    waiting = [(t.system_attrs["fixed_params"], t.user_attrs)
               for t in study.get_trials(deepcopy=False)]
    assert waiting == [({"channels_last": "off"}, {"baseline": True}),
                       ({"channels_last": "on"}, {"seed": True})]


def test_recover_leaves_trials_that_another_live_tune_runs(tmp_path: Path) -> None:
    """Machines sharing a study (--storage): a tune starting on one must not take over the
    trials another machine is running, nor those of a live tune on this machine; a dead
    process's trial and one abandoned long ago elsewhere are recovered."""
    import os
    import subprocess

    space = _space()
    study = _study(tmp_path, space)
    _finish(study, space, "ok", 100.0)
    dead = subprocess.Popen(["true"])
    dead.wait()
    owners = {"elsewhere": sd.owner_id("node-b", 4242),
              "live here": sd.owner_id("node-a", os.getppid()),
              "dead here": sd.owner_id("node-a", dead.pid)}
    numbers = {}
    import time

    now = time.time()
    for what, owner in owners.items():
        trial = study.ask()
        sp.suggest(trial, space)
        trial.set_user_attr("owner", owner)
        trial.set_user_attr("started_at", now)
        trial.set_user_attr("deadline_at", now + 100)
        numbers[what] = trial.number
    reopened = _study(tmp_path, space)
    assert sd.recover(reopened, "node-a") == [numbers["dead here"]]
    states = {what: reopened.trials[n].state for what, n in numbers.items()}
    assert states == {"elsewhere": TrialState.RUNNING, "live here": TrialState.RUNNING,
                      "dead here": TrialState.FAIL}
    # long after it started, another machine's trial counts as abandoned
    from rocmdoctor.tuners.study import _abandoned

    frozen = reopened.trials[numbers["elsewhere"]]
    assert not _abandoned(frozen, "node-a", now + 60)
    assert _abandoned(frozen, "node-a", now + 101)  # past the deadline it recorded
    # here too: a live process with the recorded pid is not that tune once the deadline passed
    live = reopened.trials[numbers["live here"]]
    assert not _abandoned(live, "node-a", now + 60)
    assert _abandoned(live, "node-a", now + 101)


def test_recover_gives_a_cut_off_baseline_its_parameters_back(tmp_path: Path) -> None:
    space = _space()
    study = _study(tmp_path, space)
    cut = study.ask()  # the baseline, popped, then the tune died before it had a point
    assert cut.user_attrs == {"baseline": True}
    reopened = _study(tmp_path, space)
    baseline = space.baseline_params()
    assert sd.recover(reopened, "node-a", baseline) == [cut.number]
    (retry,) = [t for t in reopened.get_trials(states=(TrialState.WAITING,))
                if t.user_attrs.get("retry_of") == cut.number]
    assert retry.user_attrs == {"retry_of": cut.number, "baseline": True}
    assert retry.system_attrs["fixed_params"] == baseline


def test_a_trial_not_run_for_the_limit_is_not_requeued(tmp_path: Path) -> None:
    space = _space()
    study = _study(tmp_path, space)
    _finish(study, space, "ok", 100.0)
    skipped = study.ask()
    sp.suggest(skipped, space)
    skipped.set_user_attr("state", "not-run")
    study.tell(skipped, state=TrialState.FAIL)
    assert sd.recover(_study(tmp_path, space), "node-a") == []
