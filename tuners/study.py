"""The Optuna study that remembers every trial (SQLite by default, so a tune resumes): its
name and storage, the sampler, who owns a running trial, recovery of trials a stopped tune
left running, and the pruner that stops a trial far slower than the best.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor.tuners.bench.child import STATES as DONE_STATES
from rocmdoctor.tuners.bench.metrics import headline
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.codec import platform_dict
from rocmdoctor.tuners.model import Platform, Trial
from rocmdoctor.tuners.space import SearchSpace, seed_params

if TYPE_CHECKING:
    import optuna


# A trial whose throughput stays below this fraction of the best finished trial's median, over
# at least PRUNE_MIN_WINDOWS measured windows, is stopped early.
PRUNE_RATIO = 0.5


PRUNE_MIN_WINDOWS = 3


ATTR = "rocmdoctor"  # study user attribute holding the space signature and workload


STDERR_KEEP = 4000
# study user attribute: numbers of the trials that crashed because the environment broke
# (rocmdoctor.tuners.crashes), not because of their settings: they are not counted as
# measured, and a resumed tune runs them again (once)
ENVIRONMENT_CRASHES = "environment_crashes"


class StudyMismatch(Exception):
    """The named study was created for another workload or search space."""


# Settings that bound how long a run measures, not what it trains: left out of a study's
# identity, so a study made before they existed resumes.
NOT_THE_WORKLOAD = ("cpu_time_s",)


def workload_key(spec: BenchSpec) -> dict[str, Any]:
    """What a study is the study of: the spec, less the settings that only bound a run."""
    out = spec.to_dict()
    out["settings"] = {k: v for k, v in out["settings"].items() if k not in NOT_THE_WORKLOAD}
    return out


def study_name(spec: BenchSpec, space: SearchSpace, platform: Platform,
               keep_precision: bool) -> str:
    """A stable name per workload, search space and machine, so the same command resumes."""
    machine = {k: v for k, v in platform_dict(platform).items() if k != "device_count"}
    key = json.dumps([workload_key(spec), space.signature(), machine, keep_precision],
                     sort_keys=True, default=str)
    model = re.sub(r"[^A-Za-z0-9_.-]+", "-", spec.model)[:40]
    return f"{model}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def cache_dir(env: Mapping[str, str]) -> str:
    """$XDG_CACHE_HOME/rocmdoctor/tune (default ~/.cache/rocmdoctor/tune)."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rocmdoctor", "tune")


def default_storage(env: Mapping[str, str], name: str) -> str:
    return "sqlite:///" + os.path.join(cache_dir(env), f"{name}.db")


def make_sampler(space: SearchSpace, max_trials: Optional[int], seed: int
                 ) -> optuna.samplers.BaseSampler:
    """Exhaustive (in a seeded random order) when the space is small enough to finish;
    otherwise multivariate TPE, which models interactions such as precision x layout."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if space.size() <= max(2 * (max_trials or 24), 32):
            return optuna.samplers.BruteForceSampler(seed=seed)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                          n_startup_trials=min(10, max(4, space.size() // 8)))


def open_study(name: str, storage: str, space: SearchSpace, workload: Mapping[str, Any],
               sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """Create or load the study; a study made for another space or workload is refused."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(study_name=name, storage=storage, sampler=sampler,
                                direction="maximize", load_if_exists=True)
    mine = {"signature": space.signature(), "workload": dict(workload)}
    stored = study.user_attrs.get(ATTR)
    if stored is None:
        study.set_user_attr(ATTR, mine)
    elif stored.get("signature") != mine["signature"] or \
            stored.get("workload") != json.loads(json.dumps(mine["workload"])):
        raise StudyMismatch(f"study {name!r} in {storage} was made for another workload or "
                            "search space; pick another --study name")
    if not study.trials:
        study.enqueue_trial(space.baseline_params(), user_attrs={"baseline": True})
        for params in seed_params(space):
            study.enqueue_trial(params, user_attrs={"seed": True})
    return study


STALE_S = 3 * 3600.0  # a trial of another machine with no recorded deadline is dead after


def owner_id(host: str, pid: int) -> str:
    """Who runs a trial: "host:pid" (machines may share a study through --storage)."""
    return f"{host}:{pid}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _abandoned(trial: optuna.trial.FrozenTrial, host: str, now: float) -> bool:
    """A RUNNING trial nobody runs any more: started by a tune on this machine whose process
    is gone, or by another machine so long ago that it cannot still be running. A tune on
    another machine sharing the study keeps its running trials."""
    owner = str(trial.user_attrs.get("owner") or "")
    if not owner:
        return True
    # epoch seconds recorded by the tune itself: no time zone in them. Past it, no tune can
    # still run the trial, on this machine either (its pid may belong to another process now,
    # or to a machine of the same name).
    deadline = trial.user_attrs.get("deadline_at")
    if isinstance(deadline, (int, float)) and now > deadline:
        return True
    owner_host, _, pid = owner.rpartition(":")
    if owner_host == host:
        return not (pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)))
    if isinstance(deadline, (int, float)):
        return False
    started = trial.user_attrs.get("started_at")
    return not isinstance(started, (int, float)) or now - started > STALE_S


def recover(study: optuna.Study, host: str = "",
            baseline: Optional[Mapping[str, str]] = None) -> list[int]:
    """Mark trials left running by a killed tune as interrupted, and queue each interrupted
    trial again (once): it was not finished, so it is not counted and not lost. `host` is
    this machine's name: trials another live tune is running are left alone. `baseline`:
    your settings, for a baseline trial cut off before it had its parameters."""
    from optuna.trial import TrialState

    now = time.time()
    _mark_interrupted(study, [t for t in study.get_trials(deepcopy=False,
                                                           states=(TrialState.RUNNING,))
                              if _abandoned(t, host, now)])
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    broken = set(study.user_attrs.get(ENVIRONMENT_CRASHES, []))
    queued = []
    for trial in trials:
        state = trial.user_attrs.get("state") or unrecorded_state(trial)
        again = state == "interrupted" or (trial.number in broken and state != "ok")
        if again and trial.number not in retried:
            attrs = {"retry_of": trial.number}
            params = dict(trial.params or trial.system_attrs.get("fixed_params") or {})
            if trial.user_attrs.get("baseline"):
                attrs["baseline"] = True
                params = params or dict(baseline or {})
            if not params:  # cut off before it had a point: the sampler picks anew
                continue
            study.enqueue_trial(params, user_attrs=attrs)
            queued.append(trial.number)
    return queued


def release(study: optuna.Study, owner: str) -> list[int]:
    """Mark the trials `owner` (this tune, see owner_id) still has RUNNING as interrupted:
    after Ctrl-C, a trial whose thread could not record its end (a second Ctrl-C cut it
    short) must not look like one a live tune runs."""
    from optuna.trial import TrialState

    mine = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if t.user_attrs.get("owner") == owner]
    _mark_interrupted(study, mine)
    return [t.number for t in mine]


def _mark_interrupted(study: optuna.Study, trials: Sequence[optuna.trial.FrozenTrial]) -> None:
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    storage = study._storage
    for trial in trials:
        try:
            storage.set_trial_user_attr(trial._trial_id, "message",
                                        "the tune stopped while this trial ran")
            storage.set_trial_user_attr(trial._trial_id, "state", "interrupted")
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:
            pass  # its own tune recorded its end after all, since it was read as running


def unrecorded_state(trial: optuna.trial.FrozenTrial) -> str:
    """The state of a trial that recorded none: a failure without an outcome means the tune
    itself stopped inside it (Ctrl-C between two statements), so it did not finish."""
    from optuna.trial import TrialState

    return "interrupted" if trial.state == TrialState.FAIL else trial.state.name.lower()


class WindowPruner:
    """Stops a trial whose measured windows stay clearly below the best finished trial."""

    def __init__(self, best: Optional[float], report: Any = None) -> None:
        self.best = best
        self.report = report
        self.windows: list[float] = []

    def __call__(self, index: int, samples_per_s: float) -> bool:
        self.windows.append(samples_per_s)
        if self.report is not None:
            self.report(samples_per_s, index)
        if self.best is None or len(self.windows) < PRUNE_MIN_WINDOWS:
            return True
        return max(self.windows) >= PRUNE_RATIO * self.best


def trimmed_tail(text: str) -> str:
    return text[-STDERR_KEEP:]


def params_key(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(sorted(params.items())))


def done_keys(trials: Sequence[Trial]) -> set[str]:
    """Parameter sets already measured to an end (not interrupted, not skipped, not crashed by
    a broken environment)."""
    return {params_key(t.params) for t in trials
            if t.state in DONE_STATES and not t.environment}


def metrics_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a trial keeps from its bench result (schema rocmdoctor.bench/1)."""
    metrics = result.get("metrics") or {}
    tput = metrics.get("throughput") or {}
    memory = metrics.get("memory") or {}
    device_mem = memory.get("peak_reserved_bytes")
    workload = result.get("workload") or {}
    knobs = (result.get("environment") or {}).get("knobs") or {}
    data = result.get("data") or {}
    split = data.get("split") or {}
    loader = {"loader": data.get("loader"), "input_share": split.get("input_share"),
              "input_verdict": split.get("verdict")} if data else {}
    return {**loader,
        "throughput": headline(tput), "p10": tput.get("p10"), "p90": tput.get("p90"),
        "cv": tput.get("cv"), "unit": metrics.get("unit", "samples"),
        "memory_bytes": device_mem if device_mem is not None else
        memory.get("host_peak_rss_bytes"),
        "memory_kind": "device peak reserved" if device_mem is not None else "host peak RSS",
        "energy_per_sample_j": (metrics.get("power") or {}).get("energy_per_sample_j"),
        # what the throughput counts per sample (tokens per sequence) and the optimizer run
        "units_per_sample": workload.get("units_per_sample"),
        "optimizer_class": workload.get("optimizer_class"),
        "first_step_s": (result.get("warmup") or {}).get("first_step_s"),
        "windows": [w.get("samples_per_s") for w in result.get("windows") or []],
        "unsupported": knobs.get("unsupported") or {},
        # which GPU the child was given, as it saw it (tune --gpus)
        "visible_devices": {k: v for k, v in (knobs.get("env") or {}).items()
                            if k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")},
    }


METRICS = ("throughput", "p10", "p90", "cv", "unit", "memory_bytes", "memory_kind",
           "energy_per_sample_j", "units_per_sample", "optimizer_class", "first_step_s",
           "loader", "input_share", "input_verdict")


def read_trial(trial: optuna.trial.FrozenTrial, environment: bool = False) -> Trial:
    """A trial of the study as the tune reads it; `environment`: it crashed because the
    environment broke (the study's ENVIRONMENT_CRASHES), not because of its settings."""
    attrs = trial.user_attrs
    metrics = attrs.get("metrics") or {}
    return Trial(
        number=trial.number, params=dict(trial.params),
        state=attrs.get("state") or unrecorded_state(trial),
        message=attrs.get("message", ""), stderr_tail=attrs.get("stderr_tail", ""),
        baseline=bool(attrs.get("baseline")), retry_of=attrs.get("retry_of"),
        seed=bool(attrs.get("seed")), gpu=attrs.get("gpu"), started_at=attrs.get("started_at"),
        wall_s=attrs.get("wall_s"), one_time_s=attrs.get("one_time_s"), dir=attrs.get("dir"),
        env=attrs.get("env") or {}, precision=(attrs.get("spec") or {}).get("precision"),
        **{k: metrics.get(k) for k in METRICS},
        windows=tuple(metrics.get("windows") or ()), unsupported=metrics.get("unsupported") or {},
        visible_devices=metrics.get("visible_devices") or {},
        survivors=attrs.get("survivors"), retried=attrs.get("retried"),
        known_cause=attrs.get("known_cause"), environment=environment)


def read_trials(study: optuna.Study) -> list[Trial]:
    flagged = set(study.user_attrs.get(ENVIRONMENT_CRASHES, []))
    return [read_trial(t, t.number in flagged) for t in study.get_trials(deepcopy=False)]
