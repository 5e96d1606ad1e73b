"""`rocmdoctor tune`: search the knobs for the fastest training settings, then prove it.

Flow: probe the platform once in a child (torch is never imported here) -> plan the search
space (rocmdoctor.tuners.search) -> an Optuna study with one benchmark child per trial, each
with its own environment and database folders -> re-measure the baseline and the best
candidates interleaved (rocmdoctor.tuners.confirm) -> one result dict, schema
rocmdoctor.tune/1, that the terminal, JSON, HTML and export renderers read.

The same proof by hand: run `rocmdoctor bench` with and without the winning settings a few
times, alternating, and compare the medians.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import glob
import os
import shutil
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from rocmdoctor import __version__
from rocmdoctor.host import process
from rocmdoctor.tuners import batch, crashes
from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.bench.child import TrialOutcome, run_bench_child
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.knobs import Platform, ProbeError, environment_warnings, probe_platform
from rocmdoctor.tuners.result import (
    SCHEMA,
    changes_text,
    confirmed_energy,
    how_to_apply,
    metrics_of,
    payback,
    trial_dict,
)

if TYPE_CHECKING:
    import optuna

MAX_DUPLICATES = 20  # consecutive repeats of measured points: the sampler has converged
# A trial measured again keeps this share of its one-time cost (Dynamo still traces; the
# inductor, MIOpen and TunableOp results are cached in its folders), and costs at least this
# share of its first run (the process, torch's import and the measurement itself).
RERUN_ONE_TIME_LEFT = 0.8
RERUN_FLOOR = 0.25
# The budget is a promise: the whole command ends within SLACK_SHARE of it or SLACK_FLOOR_S,
# whichever is larger. No child runs past that end less END_MARGIN_S (the result is shown and
# written then); one that would is stopped, recorded as interrupted, and runs on a resume.
SLACK_SHARE = 0.10
SLACK_FLOOR_S = 15.0
END_MARGIN_S = 5.0
# The max-batch search may take at most this share of the budget; past it, the sizes found.
BATCH_SEARCH_SHARE = 0.3
PROBE_TIMEOUT_S = 180.0
# Why the search ended, as the summary says it.
STOPPED = {
    "budget": "the budget left no room for another trial and the confirmation",
    "max-trials": "--max-trials was reached",
    "space": "every configuration of the space was measured",
    "converged": "the sampler kept proposing configurations already measured",
    "baseline-failed": "your settings did not finish a run",
    "environment": "several trials in a row crashed the same way, whatever their settings: "
                   "the environment broke, not the configurations",
    "too-short": "the budget is too short for one run of your settings",
}
Event = Callable[[str, dict[str, Any]], None]
# Signals that stop a tune like Ctrl-C: Slurm's scancel and `timeout` send SIGTERM, a closed
# SSH session SIGHUP. Each is recorded, its trials requeued, and the exit code 128 + signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

class TuneError(Exception):
    """The tune cannot start or go on: one line for the user (exit 2)."""


class _TrialFailed(Exception):
    pass


class _TrialSkipped(Exception):
    pass


@dataclass(frozen=True)
class TuneOptions:
    spec: BenchSpec
    budget_s: float = 900.0
    max_trials: Optional[int] = None
    space: str = "default"
    keep_precision: bool = False
    batch_sizes: tuple[int, ...] = ()  # () with keep_batch_size False: search from yours up
    keep_batch_size: bool = False
    study: Optional[str] = None
    storage: Optional[str] = None
    trial_timeout_s: Optional[float] = None
    confirm_rounds: int = 2
    confirm_max_rounds: Optional[int] = None  # default: twice confirm_rounds
    confirm_top: int = 2
    python: Optional[str] = None
    seed: int = 0
    allow_test_knobs: bool = False
    # GPUs (as torch numbers them) that run trials concurrently, one trial per GPU; () runs
    # one trial at a time on the GPU the environment gives.
    gpus: tuple[int, ...] = ()
    compile_cache: Optional[str] = None  # one inductor cache for all trials (see materialize)
    started_at: Optional[float] = None  # time.monotonic() when the command started (the budget)


@contextlib.contextmanager
def _study_lock(folder: str, name: str) -> Iterator[None]:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "lock"), "w", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise TuneError(f"another rocmdoctor tune is running study {name!r}") from None
        yield


class Tuner:
    """One `rocmdoctor tune` run. `env` is the environment the trials inherit."""

    def __init__(self, options: TuneOptions, env: Mapping[str, str],
                 on_event: Optional[Event] = None,
                 probe: Optional[Callable[[str, Optional[str], Mapping[str, str]], Platform]]
                 = None) -> None:
        self.o = options
        self.env = dict(env)
        self.emit: Event = on_event or (lambda kind, data: None)
        self.probe = probe or self._probe
        self.started = options.started_at if options.started_at is not None else time.monotonic()
        self.duplicates = 0
        self.streak = crashes.CrashStreak()
        # why the tune cannot reach a verdict (your settings crashed, the environment broke):
        # kind, message, and what reproduces it; None while it can
        self.failure: Optional[dict[str, Any]] = None
        self.recovery: Optional[dict[str, Any]] = None  # your settings run once after a break
        self.lock = threading.Lock()  # suggesting a point and claiming it are one step
        self.running: set[str] = set()
        self.cancel = threading.Event()  # set on Ctrl-C: concurrent trials stop at once
        self.host = socket.gethostname()
        self.owner = sd.owner_id(self.host, os.getpid())
        self.stopped: Optional[str] = None  # why the search ended (STOPPED)
        self.batch_search: dict[str, Any] = {"sizes": [], "how": "not planned"}

    # --- the budget ------------------------------------------------------------------------
    def time_left(self) -> float:
        return self.o.budget_s - (time.monotonic() - self.started)

    def slack(self) -> float:
        return max(SLACK_SHARE * self.o.budget_s, SLACK_FLOOR_S)

    def hard_left(self) -> float:
        """Seconds a child may still run: to the promised end, less the time to report."""
        return self.time_left() + self.slack() - END_MARGIN_S

    def child_timeout(self, wanted: float) -> float:
        return max(1.0, min(wanted, self.hard_left()))

    def _probe(self, device: str, python: Optional[str], env: Mapping[str, str]) -> Platform:
        return probe_platform(device, python, env, self.child_timeout(PROBE_TIMEOUT_S))

    def _phases(self, who: str) -> Callable[[dict[str, Any]], None]:
        """The worker's own events as progress: a long quiet phase (torch's import, a compile,
        a MIOpen find) is then reported while it lasts. Says at once that `who` starts."""
        self.emit("phase", {"who": who, "event": None})

        def forward(event: dict[str, Any]) -> None:
            self.emit("phase", {"who": who, "event": event.get("event"),
                                "step": event.get("step"), "of": event.get("of"),
                                "index": event.get("index"), "compile": self.o.spec.compile})
        return forward

    # --- the run ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        spec = self.o.spec
        problems = spec.problems()
        if problems:
            raise TuneError("; ".join(problems))
        try:
            sp.space_names(self.o.space, self.o.allow_test_knobs)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
        self.emit("probe", {"python": self.o.python or sys.executable,
                            "timeout_s": self.child_timeout(PROBE_TIMEOUT_S)})
        try:
            self.platform = self.probe(spec.device, self.o.python, self.env)
        except ProbeError as exc:
            raise TuneError(str(exc)) from None
        self._check_gpus()
        self.batch_search = self._batch_sizes()
        try:
            self.space = sp.plan_space(self.platform, spec, self.env, self.o.space,
                                       self.o.keep_precision, self.batch_search["sizes"],
                                       self.o.allow_test_knobs, self.o.keep_batch_size)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
        if not self.space.knobs:
            raise TuneError("nothing to search here: " + "; ".join(
                f"{k}: {r}" for k, r in self.space.skipped))
        name = self.o.study or sd.study_name(spec, self.space, self.platform,
                                             self.o.keep_precision)
        self.study_dir = os.path.join(sd.cache_dir(self.env), name)
        storage = self.o.storage or sd.default_storage(self.env, name)
        with _study_lock(self.study_dir, name):
            self.sampler = sd.make_sampler(self.space, self.o.max_trials, self.o.seed)
            self._lock_sampler()
            try:
                self.study = sd.open_study(name, storage, self.space, spec.to_dict(),
                                           self.sampler)
            except sd.StudyMismatch as exc:
                raise TuneError(str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - a storage URL is outside input
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise TuneError(f"cannot open the study storage {storage}: {first}") from None
            requeued = sd.recover(self.study, self.host,
                                  self.space.baseline_params())
            self.emit("plan", {"platform": self.platform.to_dict(), "study": name,
                               "storage": storage, "space": self.space.to_dict(),
                               "sampler": type(self.sampler).__name__, "requeued": requeued,
                               "finished": len(self._done()), "total": self._total()})
            self._search()
            if self.failure is not None and self.failure["kind"] == "environment":
                self._recovery_run()
            confirmation = self._confirm()
            result = self._result(name, storage, confirmation, requeued)
            self._clean(result)
        self.emit("done", {"result": result})
        return result

    def _batch_sizes(self) -> dict[str, Any]:
        """The batch sizes to search: the user's list, none with --keep-batch-size, else the
        user's batch and its doublings up to the largest that fits (tuners/batch.py)."""
        spec = self.o.spec
        if self.o.batch_sizes or self.o.keep_batch_size or not self._searches("batch_size"):
            return {"sizes": list(self.o.batch_sizes), "how": "given" if self.o.batch_sizes
                    else "kept"}
        if self.platform.kind == "cpu":
            return {"sizes": list(batch.cpu_choices(spec.batch_size)), "how": "cpu-doublings"}
        path = batch.cache_path(os.path.join(sd.cache_dir(self.env), "batch"), spec.to_dict(),
                                self.platform.to_dict())
        cached = batch.load(path)
        if cached is not None:
            self.emit("batch-sizes", {**cached, "cached": True})
            return {**cached, "cached": True}
        from rocmdoctor.tuners.bench.maxbatch import find_max_batch

        device = self.gpu_env(self.o.gpus[0] if self.o.gpus else None)
        started = time.monotonic()

        # its share of the budget, counted from the start of the command
        search_end = self.started + BATCH_SEARCH_SHARE * self.o.budget_s

        def runner(probe: BenchSpec) -> TrialOutcome:
            room = min(search_end - time.monotonic(), self.hard_left())
            if room < 10.0:
                return TrialOutcome("budget", None, "not run: the max-batch search may take "
                                    f"{BATCH_SEARCH_SHARE:.0%} of the budget", "", None, 0.0)
            return run_bench_child(probe, device, min(300.0, room), base_env=self.env,
                                   python=self.o.python, cancel=self.cancel,
                                   on_event=self._phases(f"batch {probe.batch_size}"))

        def on_probe(size: int, outcome: TrialOutcome) -> None:
            self.emit("batch-probe", {"batch": size, "state": outcome.state,
                                      "wall_s": outcome.wall_s, "time_left": self.time_left()})

        self.emit("batch-search", {"from": spec.batch_size,
                                   "limit": spec.batch_size * batch.LIMIT_FACTOR})
        found = find_max_batch(spec, runner, limit=spec.batch_size * batch.LIMIT_FACTOR,
                               on_probe=on_probe)
        sizes = batch.choices(spec.batch_size, found.largest_fit,
                              limit_reached=found.first_oom is None)
        result = {"sizes": list(sizes), "how": "max-batch search",
                  "largest_fit": found.largest_fit, "first_oom": found.first_oom,
                  "probes": [list(p) for p in found.probes], "message": found.message(),
                  "failure": found.failure.state if found.failure else None,
                  "seconds": round(time.monotonic() - started, 1)}
        if found.failure is None:
            batch.save(path, result)
        self.emit("batch-sizes", {**result, "cached": False})
        return result

    def _searches(self, name: str) -> bool:
        """Whether the requested space could hold the knob `name` (before planning it)."""
        from rocmdoctor.tuners import knobs as kb

        if self.o.space in kb.SPACES:
            return any(self.o.space in k.spaces for k in kb.knobs_named(name))
        return name in [n.strip() for n in self.o.space.split(",")]

    def _lock_sampler(self) -> None:
        """The grid sampler's after_trial reads every trial, the running ones too: with one
        loop per GPU it must not run while another GPU's trial is being given its parameters
        (half a point breaks its tree: "param_name mismatch"). Suggesting holds self.lock."""
        after_trial = self.sampler.after_trial

        def locked(*args: Any, **kwargs: Any) -> None:
            with self.lock:
                after_trial(*args, **kwargs)

        self.sampler.after_trial = locked  # type: ignore[method-assign]

    def _check_gpus(self) -> None:
        gpus = self.o.gpus
        if not gpus:
            return
        if len(set(gpus)) != len(gpus):
            raise TuneError(f"--gpus names a GPU twice: {','.join(map(str, gpus))}")
        if self.platform.kind == "cpu" and not self.o.allow_test_knobs:
            raise TuneError("--gpus needs a GPU: this tune runs on the CPU")
        count = self.platform.device_count
        if self.platform.kind != "cpu" and any(g < 0 or g >= count for g in gpus):
            raise TuneError(f"--gpus {','.join(map(str, gpus))}: torch sees {count} GPU(s), "
                            f"numbered 0 to {count - 1}")

    def gpu_env(self, gpu: Optional[int]) -> dict[str, str]:
        """The variable that gives a trial's child GPU `gpu` (torch's numbering here) alone."""
        if gpu is None:
            return {}
        var = "HIP_VISIBLE_DEVICES" if self.platform.kind == "rocm" else "CUDA_VISIBLE_DEVICES"
        current = self.env.get(var) or (self.env.get("CUDA_VISIBLE_DEVICES")
                                        if self.platform.kind == "rocm" else None)
        visible = [v.strip() for v in current.split(",") if v.strip()] if current else []
        return {var: visible[gpu] if gpu < len(visible) else str(gpu)}

    # --- search ----------------------------------------------------------------------------
    def _trials(self) -> list[dict[str, Any]]:
        flagged = set(self.study.user_attrs.get(sd.ENVIRONMENT_CRASHES, []))
        return [trial_dict(t, t.number in flagged) for t in self.study.get_trials(deepcopy=False)]

    def _done(self) -> list[dict[str, Any]]:
        return [t for t in self._trials() if t["state"] in sd.DONE_STATES]

    def _total(self) -> Optional[int]:
        """Trials this tune will run at most, when known (TPE without --max-trials stops on
        the budget)."""
        import optuna

        size = self.space.size()
        if self.o.max_trials:
            return min(size, self.o.max_trials)
        return size if isinstance(self.sampler, optuna.samplers.BruteForceSampler) else None

    def _baseline(self) -> Optional[dict[str, Any]]:
        return next((t for t in self._trials() if t["baseline"] and t["state"] == "ok"), None)

    def _typical_wall(self, done: Optional[list[dict[str, Any]]] = None) -> float:
        walls = [t["wall_s"] for t in (self._done() if done is None else done)
                 if t["state"] == "ok" and t["wall_s"]]
        return statistics.median(walls) if walls else 60.0

    def _claimed(self, done: list[dict[str, Any]]) -> int:
        """Trials finished or running. A trial records its end (in the study) a moment before
        its thread takes it off self.running: counted once, not twice."""
        return len(done) + len(self.running - sd.done_keys(done))

    def _rerun_s(self, t: Mapping[str, Any], typical: float) -> float:
        """What measuring trial `t` again costs: its confirmation runs so far, else its first
        run less most of its one-time cost (the trial's compile, MIOpen and TunableOp caches
        are warm when it runs again)."""
        walls = [r["wall_s"] for r in self.study.user_attrs.get("confirm_runs", [])
                 if r.get("trial") == t["number"] and r.get("wall_s")]
        if walls:
            return float(statistics.median(walls))
        wall = float(t.get("wall_s") or typical)
        return max(wall - RERUN_ONE_TIME_LEFT * float(t.get("one_time_s") or 0.0),
                   RERUN_FLOOR * wall)

    def confirm_reserve(self, done: list[dict[str, Any]]) -> float:
        """Seconds the confirmation of the candidates that exist now will take: each round
        re-measures your settings and each candidate once."""
        typical = self._typical_wall(done)
        ok = [t for t in done if t["state"] == "ok"]
        base = next((t for t in ok if t["baseline"]), None)
        if base is None:  # your settings have not finished: one of them and one candidate
            return self.o.confirm_rounds * 2 * typical
        picked = cf.pick_candidates(base, ok, self.o.confirm_top, self.o.spec.precision,
                                    self.o.spec.batch_size)
        if not picked:  # a candidate will exist once another trial finishes
            others = [self._rerun_s(t, typical) for t in ok if not t["baseline"]]
            picked_cost = [statistics.median(others) if others else typical]
        else:
            picked_cost = [self._rerun_s(t, typical) for t in picked]
        return self.o.confirm_rounds * (self._rerun_s(base, typical) + sum(picked_cost))

    def _stop_reason(self) -> Optional[str]:
        """Why the search ends now: a failure, max-trials, space, converged or budget; None to
        go on."""
        if self.failure is not None:
            return str(self.failure["stop"])
        trials = self._trials()
        done = [t for t in trials if t["state"] in sd.DONE_STATES]
        # trials running on other GPUs count towards --max-trials: they will finish
        if self.o.max_trials and self._claimed(done) >= self.o.max_trials:
            return "max-trials"
        if len(sd.done_keys(done)) >= self.space.size():
            return "space"
        if self.duplicates >= MAX_DUPLICATES:
            return "converged"
        # The budget binds once your settings have run (ok or not): there is always a baseline;
        # or once another tune sharing the study is running them. Another trial starts while
        # it and the confirmation of the candidates that exist still fit.
        # Until a configuration other than yours has finished, one more trial starts while it
        # fits at all: without a candidate the tune has nothing to show, and the confirmation
        # minimum may then end past the budget (a short budget on a slow machine spent
        # a quarter of itself on your settings and stopped).
        started = any(t["baseline"] and t["state"] in (*sd.DONE_STATES, "running")
                      for t in trials)
        typical, left = self._typical_wall(done), self.time_left()
        candidate = any(t["state"] == "ok" and not t["baseline"] for t in done)
        if started and left < typical + (self.confirm_reserve(done) if candidate else 0.0):
            return "budget"
        return None

    def _search_over(self) -> bool:
        return self._stop_reason() is not None

    def _search(self) -> None:
        self.stopped = self._stop_reason()
        if self.stopped is not None:
            return
        ended: list[threading.Event] = []  # one per search thread, set as it ends
        try:
            self._search_threads(ended)
            self.stopped = self._stop_reason() or "space"  # the sampler ran out of points
        except KeyboardInterrupt:
            with _ctrl_c_deferred():  # a second Ctrl-C would leave the cut trials RUNNING
                self.cancel.set()  # each thread kills its child and records it as interrupted
                self._join(ended)
                sd.release(self.study, self.owner)
            raise

    def _search_threads(self, ended: list[threading.Event]) -> None:
        # One optimize loop per GPU on the one study (Optuna keeps its loop state per
        # thread); the children do the work, the threads only wait for them. With one GPU
        # too: Ctrl-C then reaches only this (main) thread, never Optuna's bookkeeping in
        # the middle of a trial (a second Ctrl-C there broke Optuna's own error handling).
        errors: list[BaseException] = []

        def loop(gpu: Optional[int], end: threading.Event) -> None:
            try:
                self._search_on(gpu)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                errors.append(exc)
                self.cancel.set()  # the other GPUs stop too: their trials run again on resume
            finally:
                end.set()

        # Optuna pops a queued trial by reading it WAITING, then marking it RUNNING; on SQLite,
        # which has no row locks, two threads can pop the same trial. One pop at a time.
        pop = self.study._pop_waiting_trial_id
        pop_lock = threading.Lock()

        def pop_one() -> Optional[int]:
            with pop_lock:
                return pop()

        self.study._pop_waiting_trial_id = pop_one  # type: ignore[method-assign]
        gpus: tuple[Optional[int], ...] = self.o.gpus or (None,)
        for gpu in gpus:
            ended.append(threading.Event())
            threading.Thread(target=loop, args=(gpu, ended[-1]), daemon=True,
                             name=f"tune-gpu{'' if gpu is None else gpu}").start()
        _wait_all(ended)
        if errors:  # one thread failed and cancelled the others: raise the failure itself
            self._join(ended)
            raise next((e for e in errors if not isinstance(e, KeyboardInterrupt)), errors[0])

    @staticmethod
    def _join(ended: list[threading.Event], within_s: float = 20.0) -> None:
        """Let the threads record their trials, then kill any child still running."""
        from rocmdoctor.tuners.bench.child import kill_all

        _wait_all(ended, time.monotonic() + within_s)
        kill_all()

    def _search_on(self, gpu: Optional[int]) -> None:
        def after(study: optuna.Study, _trial: optuna.trial.FrozenTrial) -> None:
            with self.lock:
                over = self._search_over()
            if over:
                study.stop()

        def objective(trial: optuna.Trial) -> float:
            return self._objective(trial, gpu)

        self.study.optimize(objective, callbacks=[after], catch=(_TrialFailed, _TrialSkipped))

    def _timeout(self, plan: sp.TrialPlan) -> float:
        if self.o.trial_timeout_s:
            return self.o.trial_timeout_s
        base = self._baseline()
        limit = 900.0 if base is None else min(1200.0, max(120.0, 6 * (base["wall_s"] or 60)))
        return limit * (2 if plan.tunableop or plan.spec.compile else 1)

    def _objective(self, trial: optuna.Trial, gpu: Optional[int] = None) -> float:
        if self.cancel.is_set():  # Ctrl-C while this loop was asking for a trial
            with self.lock:
                sp.suggest(trial, self.space)  # a trial without parameters confuses samplers
            trial.set_user_attr("state", "interrupted")
            trial.set_user_attr("message", "not started: the tune was interrupted")
            raise KeyboardInterrupt
        try:
            return self._trial(trial, gpu)
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                trial.set_user_attr("state", "interrupted")
                trial.set_user_attr("message", "interrupted (Ctrl-C); it runs again on resume")
            raise

    def _trial(self, trial: optuna.Trial, gpu: Optional[int]) -> float:
        with self.lock:
            params = sp.suggest(trial, self.space)
            key = sd.params_key(params)
            done = self._done()
            limit = self.o.max_trials
            if limit and self._claimed(done) >= limit:
                # another GPU runs the last trial allowed: this one never starts (a later
                # tune with a higher --max-trials runs it: search.recover queues it again)
                trial.set_user_attr("state", "not-run")
                trial.set_user_attr("message", f"--max-trials {limit} reached")
                trial.study.stop()
                raise _TrialSkipped("limit")
            if key in self.running or key in sd.done_keys(done):
                self.duplicates += 1
                trial.set_user_attr("state", "duplicate")
                trial.set_user_attr("message", "already measured; not run again")
                raise _TrialSkipped("duplicate")
            self.duplicates = 0
            self.running.add(key)
            trial.set_user_attr("owner", self.owner)
            before = self._claimed(done) - 1  # finished or started earlier
            best = max((t["throughput"] for t in done if t["state"] == "ok"), default=None)
        try:
            return self._measure_trial(trial, params, gpu, before, best)
        finally:
            with self.lock:
                self.running.discard(key)

    def _measure_trial(self, trial: optuna.Trial, params: dict[str, str],
                       gpu: Optional[int], before: int, best: Optional[float]) -> float:
        import optuna

        baseline = bool(trial.user_attrs.get("baseline"))
        trial_dir = os.path.join(self.study_dir, "trials", str(trial.number))
        plan = sp.materialize(self.space, params, self.o.spec, self.platform, self.env,
                              trial_dir, self.o.compile_cache)
        pruner = None if baseline else sd.WindowPruner(best, report=trial.report)
        wanted = self._timeout(plan)
        timeout = self.child_timeout(wanted)
        started = time.time()
        for key, value in {"started_at": started, "dir": trial_dir, "env": plan.env,
                           "spec": plan.spec.to_dict(), "gpu": gpu,
                           # past this, no tune can still be running it (search.recover)
                           "deadline_at": started + timeout * (2 if plan.tunableop else 1)
                           + 60}.items():
            trial.set_user_attr(key, value)
        estimate = self._estimate(baseline)
        if estimate is not None and estimate > self.hard_left():
            return self._not_started(trial, params, gpu, baseline, estimate)
        self.emit("trial-start", {"number": trial.number, "params": params, "gpu": gpu,
                                  "changes": self._changes(params), "finished": before,
                                  "total": self._total(), "time_left": self.time_left()})
        outcome, one_time = self._run_plan(plan, timeout, pruner, gpu, f"trial {trial.number}")
        again = crashes.transient(outcome.message, outcome.stderr_tail) \
            if outcome.state in crashes.CRASH_STATES else None
        if again is not None and self.hard_left() > outcome.wall_s + 10.0:
            # once, never twice: a crash that may not repeat (kb/trial_crashes.py)
            self.emit("trial-retry", {"number": trial.number, "message": outcome.message,
                                      "why": again.what})
            trial.set_user_attr("retried", {"message": outcome.message, "why": again.what,
                                            "source": again.source})
            if pruner is not None:
                pruner.windows.clear()
            outcome, one_time = self._run_plan(plan, self.child_timeout(wanted), pruner, gpu,
                                               f"trial {trial.number}")
        if outcome.state == "timeout" and timeout < wanted:
            outcome = dataclasses.replace(
                outcome, state="interrupted",
                message=f"stopped when the budget ended ({timeout:.0f} s in); the same command "
                        "with a longer --budget runs it again")
        metrics: dict[str, Any] = metrics_of(outcome.result) if outcome.result else \
            {"windows": pruner.windows if pruner else []}
        trial.set_user_attr("metrics", metrics)
        trial.set_user_attr("one_time_s", one_time if one_time is not None
                            else metrics.get("first_step_s"))
        trial.set_user_attr("message", outcome.message)
        trial.set_user_attr("wall_s", outcome.wall_s)
        trial.set_user_attr("survivors", outcome.survivors)
        if outcome.state != "ok":
            trial.set_user_attr("stderr_tail", sd.trimmed_tail(outcome.stderr_tail))
        cause = crashes.known_cause(outcome.message, outcome.stderr_tail) \
            if outcome.state in crashes.CRASH_STATES else None
        if cause is not None:
            trial.set_user_attr("known_cause", {"key": cause.key, "what": cause.what,
                                                "source": cause.source,
                                                "avoided": cause.avoided})
        with self.lock:
            self._judge_end(trial, params, plan, baseline, outcome, gpu)
        # last: a trial with a state is finished to the other GPUs' threads, figures and all
        trial.set_user_attr("state", outcome.state)
        self.emit("trial-end", {"number": trial.number, "params": params, "gpu": gpu,
                                "changes": self._changes(params), "state": outcome.state,
                                "message": outcome.message, "metrics": metrics,
                                "survivors": outcome.survivors,
                                "known_cause": cause.what if cause else None,
                                "best": max(best or 0.0, metrics.get("throughput") or 0.0) or None,
                                "finished": len(self._done()), "total": self._total(),
                                "time_left": self.time_left()})
        if outcome.state == "ok":
            return float(metrics["throughput"])
        if outcome.state == "pruned":
            raise optuna.TrialPruned(outcome.message)
        raise _TrialFailed(outcome.message)

    def _estimate(self, baseline: bool) -> Optional[float]:
        """What a run of your settings takes, from the runs of this study (None before any):
        it is not started when it cannot end before the promised end of the command. (Other
        trials are not started once the budget has no room for them: _stop_reason.)"""
        if not baseline:
            return None
        walls = [t["wall_s"] for t in self._done() if t["state"] == "ok" and t["wall_s"]]
        return min(walls) if walls else None

    def _not_started(self, trial: optuna.Trial, params: dict[str, str], gpu: Optional[int],
                     baseline: bool, estimate: float) -> float:
        """Say, before starting it, that one run cannot fit in what is left of the budget."""
        left = max(0.0, self.hard_left())
        message = (f"not started: one run takes about {estimate:.0f} s and {left:.0f} s are "
                   "left of the budget; a longer --budget runs it")
        trial.set_user_attr("message", message)
        if baseline and self.failure is None:
            self.failure = {"kind": "too-short", "stop": "too-short", "message": message}
        trial.set_user_attr("state", "interrupted")
        self.emit("trial-skip", {"number": trial.number, "message": message, "gpu": gpu,
                                 "changes": self._changes(params)})
        raise _TrialSkipped("budget")

    def _judge_end(self, trial: optuna.Trial, params: dict[str, str], plan: sp.TrialPlan,
                   baseline: bool, outcome: TrialOutcome, gpu: Optional[int]) -> None:
        """What this trial's end says about the tune (called holding self.lock): your settings
        failing, or the last trials crashing alike whatever their settings, stop the search."""
        if self.failure is not None or outcome.state in ("pruned", "duplicate"):
            return
        env = {**plan.env, **self.gpu_env(gpu)}
        reproduce = crashes.reproduce_command(plan.spec, env, self.o.python)
        if baseline and outcome.state == "interrupted":
            if outcome.message.startswith("stopped when the budget ended"):
                self.failure = {"kind": "too-short", "stop": "too-short",
                                "message": "your settings did not finish within the budget "
                                           f"({outcome.wall_s:.0f} s in); a longer --budget "
                                           "measures them",
                                "reproduce": reproduce}
            return
        if baseline and outcome.state != "ok":
            self.failure = {"kind": "baseline", "stop": "baseline-failed",
                            "message": outcome.message, "state": outcome.state,
                            "trial": trial.number, "stderr_tail": outcome.stderr_tail,
                            "reproduce": reproduce}
            return
        self.streak.record(sd.params_key(params), outcome.state, outcome.message)
        broken = self.streak.broken()
        if broken is None:
            return
        numbers = [t.number for t in trial.study.get_trials(deepcopy=False)
                   if t.user_attrs.get("state") in crashes.CRASH_STATES
                   and crashes.signature(t.user_attrs["state"], t.user_attrs.get("message", ""))
                   == crashes.signature(outcome.state, outcome.message)]
        numbers = sorted({*numbers[-(crashes.STREAK - 1):], trial.number})
        self.failure = {"kind": "environment", "stop": "environment", "message": broken,
                        "trials": numbers, "stderr_tail": outcome.stderr_tail,
                        "reproduce": reproduce}
        for number in numbers:  # not the configurations' fault: they run again on resume
            self._flag_environment(trial.study, number)
        self.emit("environment-broke", {"message": broken, "trials": numbers})

    @staticmethod
    def _flag_environment(study: optuna.Study, number: int) -> None:
        """Mark a trial as crashed by the environment (a finished trial's own attributes can
        no longer be set): not counted as measured, and queued again on a resume."""
        flagged = set(study.user_attrs.get(sd.ENVIRONMENT_CRASHES, []))
        study.set_user_attr(sd.ENVIRONMENT_CRASHES, sorted(flagged | {number}))

    def _run_plan(self, plan: sp.TrialPlan, timeout: float,
                  on_window: Optional[Callable[[int, float], bool]], gpu: Optional[int] = None,
                  who: str = "a trial") -> tuple[TrialOutcome, Optional[float]]:
        """Run one configuration; TunableOp first tunes (once per folder), then replays."""
        for path in plan.dirs.values():
            os.makedirs(path if not path.endswith(".csv") else os.path.dirname(path),
                        exist_ok=True)
        one_time: Optional[float] = None
        device = self.gpu_env(gpu)
        env = {**plan.env, **device}
        if plan.tunableop:
            pattern = plan.dirs["PYTORCH_TUNABLEOP_FILENAME"].replace("%d", "*")
            if not glob.glob(pattern):
                tuning = run_bench_child(dataclasses.replace(plan.spec, steps=1, warmup=1),
                                         {**sp.tunableop_env(plan, True), **device},
                                         self.child_timeout(timeout), base_env=self.env,
                                         python=self.o.python, cancel=self.cancel,
                                         on_event=self._phases(f"{who} (TunableOp tuning)"))
                one_time = tuning.wall_s
                if tuning.state != "ok":
                    return tuning, one_time
            env = {**sp.tunableop_env(plan, False), **device}
        outcome = run_bench_child(plan.spec, env, self.child_timeout(timeout), on_window=on_window,
                                  base_env=self.env, python=self.o.python, cancel=self.cancel,
                                  on_event=self._phases(who))
        return outcome, one_time

    def _changes(self, params: Mapping[str, str]) -> dict[str, str]:
        base = self.space.baseline_params()
        return {k: v for k, v in params.items() if base.get(k) != v}

    # --- confirmation ----------------------------------------------------------------------
    def _recovery_run(self) -> None:
        """After the environment broke: your settings once more, to see whether the machine
        has recovered (then the candidates found before the break are still confirmed)."""
        base = self._baseline()
        if base is None:
            self.recovery = {"state": "not-run", "message": "your settings have no finished "
                             "run to repeat", "throughput": None}
            return
        need = self._rerun_s(base, self._typical_wall())
        if self.hard_left() < need:
            self.recovery = {"state": "not-run", "throughput": None,
                             "message": f"not run: it takes about {need:.0f} s and the budget "
                                        "has no room left"}
            return
        plan = sp.materialize(self.space, base["params"], self.o.spec, self.platform, self.env,
                              base["dir"], self.o.compile_cache)
        self.emit("recovery-start", {"trial": base["number"], "time_left": self.time_left()})
        outcome, _ = self._run_plan(plan, self._timeout(plan), None,
                                    self.o.gpus[0] if self.o.gpus else None,
                                    "your settings (has the machine recovered?)")
        self.recovery = {"state": outcome.state, "message": outcome.message,
                         "wall_s": round(outcome.wall_s, 2), "survivors": outcome.survivors,
                         "throughput": metrics_of(outcome.result)["throughput"]
                         if outcome.result else None}
        self.emit("recovery-end", {**self.recovery, "time_left": self.time_left()})

    def _unconfirmed(self, picked: Sequence[Mapping[str, Any]], base: Optional[dict[str, Any]],
                     status: str, reason: str, why: str) -> dict[str, Any]:
        """A confirmation that could not run: the candidates with their search figures only."""
        return {"status": status, "reason": reason,
                "baseline_trial": base["number"] if base else None, "runs": [],
                "noise_cv": None, "rounds": 0,
                "candidates": [{"trial": t["number"], "params": dict(t["params"]),
                                "precision": t.get("precision"),
                                "search_throughput": t.get("throughput"), "speedup": None,
                                "low": None, "high": None, "pairs": 0, "winner": False,
                                "why": why} for t in picked]}

    def _confirm(self) -> dict[str, Any]:
        base = self._baseline()
        picked = [] if base is None else cf.pick_candidates(
            base, [t for t in self._done() if t["state"] == "ok"], self.o.confirm_top,
            self.o.spec.precision, self.o.spec.batch_size)
        failure = self.failure or {}
        if failure.get("kind") in ("baseline", "too-short"):
            confirmation = self._unconfirmed([], None, "no-baseline", _failure_text(failure), "")
            return self._finish_confirmation(confirmation, base, [])
        if failure.get("kind") == "environment" and (self.recovery or {}).get("state") != "ok":
            rec = self.recovery or {}
            reason = (f"{_failure_text(failure)}; your settings, run again to see whether the "
                      f"machine had recovered: {rec.get('message') or 'not run'}. The "
                      "confirmation did not run: the search figures are unconfirmed")
            confirmation = self._unconfirmed(picked, base, "not-run", reason,
                                             "not re-measured: the environment broke")
            return self._finish_confirmation(confirmation, base, [])
        stored: list[dict[str, Any]] = list(self.study.user_attrs.get("confirm_runs", []))
        if base is not None and picked:
            self.emit("confirm-start", {"keys": [base["number"]] + [t["number"] for t in picked],
                                        "rounds": self.o.confirm_rounds})
        streak = crashes.CrashStreak()
        skipped: list[str] = []

        def measure(t: dict[str, Any], round_index: int) -> Optional[float]:
            plan = sp.materialize(self.space, t["params"], self.o.spec, self.platform,
                                  self.env, t["dir"], self.o.compile_cache)
            need = self._rerun_s(t, self._typical_wall())
            broken = streak.broken()
            if broken is not None or self.hard_left() < need:
                # the environment broke, or the run cannot end before the promised end
                skipped.append(f"the re-measurements crashed alike ({broken})" if broken else
                               "the budget ended before the confirmation did")
                outcome = TrialOutcome("not-run", None, skipped[-1], "", None, 0.0)
            else:
                # Every re-measurement on one GPU: a ratio between two GPUs would measure GPUs.
                who = "your settings" if t is base else f"trial {t['number']}"
                outcome, _ = self._run_plan(plan, self._timeout(plan), None,
                                            self.o.gpus[0] if self.o.gpus else None,
                                            f"{who} (confirmation round {round_index + 1})")
                streak.record(f"{t['number']}/{round_index}", outcome.state, outcome.message)
            value = metrics_of(outcome.result)["throughput"] if outcome.result else None
            stored.append({"trial": t["number"], "round": round_index, "throughput": value,
                           "state": outcome.state, "at": time.time(),
                           "wall_s": round(outcome.wall_s, 2), "message": outcome.message,
                           "energy_per_sample_j": metrics_of(outcome.result)[
                               "energy_per_sample_j"] if outcome.result else None})
            self.study.set_user_attr("confirm_runs", stored)
            self.emit("confirm-run", {"trial": t["number"], "round": round_index,
                                      "state": outcome.state, "throughput": value,
                                      "message": outcome.message,
                                      "baseline": base is not None and t is base,
                                      "time_left": self.time_left()})
            return value

        def time_for_round(keys: int) -> bool:
            """Another round past the minimum, while it fits in the budget itself (the slack
            past it is for the minimum rounds)."""
            typical = self._typical_wall()
            return self.time_left() >= sum(self._rerun_s(t, typical) for t in [base, *picked]
                                           if t is not None) and streak.broken() is None

        # runs of an earlier tune that did not measure are measured again
        measured = [r for r in stored if r.get("throughput") is not None]
        confirmation = cf.confirm(base, picked, measured, measure, self.o.confirm_rounds,
                                  self.o.confirm_max_rounds or 2 * self.o.confirm_rounds,
                                  time_for_round)
        if confirmation["status"] == "done":
            confirmation = _judge_runs(confirmation, stored, skipped)
        return self._finish_confirmation(confirmation, base, stored)

    def _finish_confirmation(self, confirmation: dict[str, Any],
                             base: Optional[dict[str, Any]],
                             stored: list[dict[str, Any]]) -> dict[str, Any]:
        confirmation["timed_runs"] = [dict(r) for r in stored]  # for the HTML's time axis
        by_number = {t["number"]: t for t in self._trials()}
        if base is not None and confirmation["candidates"]:
            confirmation["baseline_energy_per_unit_j"] = confirmed_energy(base, stored)
        for cand in confirmation["candidates"]:
            t = by_number[cand["trial"]]
            cand["changes"] = self._changes(cand["params"])
            cand["batch_size"] = int(cand["params"].get("batch_size", self.o.spec.batch_size))
            cand["energy_per_unit_j"] = confirmed_energy(t, stored)
            if base is not None:
                cand["payback"] = payback(base, t, cand["speedup"], cand["batch_size"],
                                          int(t.get("units_per_sample") or 1))
        return confirmation

    # --- result ----------------------------------------------------------------------------
    def _result(self, name: str, storage: str, confirmation: dict[str, Any],
                requeued: list[int]) -> dict[str, Any]:

        trials = self._trials()
        winners = [c for c in confirmation["candidates"] if c["winner"]]
        runs, noise = confirmation.get("runs", []), confirmation.get("noise_cv")
        best, passed_over = cf.pick_best(winners, runs, noise)
        same, _ = cf.pick_best([c for c in winners if c["precision"] == self.o.spec.precision],
                               runs, noise)
        same_batch, _ = cf.pick_best([c for c in winners
                                      if c["batch_size"] == self.o.spec.batch_size], runs, noise)
        apply = None
        if best is not None:
            t = next(t for t in trials if t["number"] == best["trial"])
            apply = how_to_apply(self.space.to_dict(), best["params"], t["env"],
                                 self.platform.kind, self.o.spec, t.get("optimizer_class"))
        warnings = environment_warnings(self.env)
        if requeued:
            warnings.append(f"trial(s) {', '.join(map(str, requeued))} were interrupted last "
                            "time and ran again")
        warnings += process.cwd_notes()
        causes = {t["known_cause"]["key"]: t["known_cause"] for t in trials
                  if t.get("known_cause")}
        for cause in causes.values():
            avoided = f"; {cause['avoided']}" if cause["avoided"] else ""
            warnings.append(f"a crash with a known cause outside rocmdoctor: {cause['what']} "
                            f"({cause['source']}){avoided}")
        if best is not None:
            summary = (f"trial {best['trial']} ({changes_text(best['changes'])}) is faster than "
                       f"your settings: {best['why']}")
        else:
            summary = confirmation.get("reason") or \
                "no configuration beat your current settings beyond the measured noise"
        return {
            "schema": SCHEMA, "tool_version": __version__,
            "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "study": {"name": name, "storage": storage, "dir": self.study_dir,
                      "sampler": type(self.sampler).__name__, "seed": self.o.seed},
            "workload": self.o.spec.to_dict(), "platform": self.platform.to_dict(),
            "space": self.space.to_dict(), "budget_s": self.o.budget_s,
            "elapsed_s": time.monotonic() - self.started, "warnings": warnings,
            "trials": trials, "baseline": self._baseline(), "confirmation": confirmation,
            "verdict": {"winner": best is not None, "summary": summary, "best_overall": best,
                        "best_same_precision": same, "best_same_batch": same_batch,
                        "passed_over": passed_over,
                        "precision": self.o.spec.precision,
                        "batch_size": self.o.spec.batch_size},
            "search": {"stopped": self.stopped, "why": STOPPED.get(self.stopped or "", ""),
                       "queued": sum(t["state"] == "waiting" for t in trials)},
            "batch_search": self.batch_search,
            "effects": cf.mark_effects(
                cf.knob_effects(trials, self.space.to_dict()["knobs"]),
                self.space.to_dict()["knobs"], best["changes"] if best else None,
                confirmation.get("noise_cv"), confirmation.get("status") == "done"),
            "apply": apply,
            # added to tune/1: why no verdict could be reached (None when one could), and the
            # run of your settings after the environment broke
            "failure": self.failure, "recovery": self.recovery,
        }

    def _clean(self, result: dict[str, Any]) -> None:
        """Keep the tuned databases of the baseline and the confirmed candidates only."""
        conf = result["confirmation"]
        keep = {conf.get("baseline_trial")} | {c["trial"] for c in conf["candidates"]}
        for t in result["trials"]:
            path = t.get("dir")
            if t["number"] in keep or not path or not os.path.isdir(path):
                continue
            if os.path.dirname(os.path.dirname(path)) == self.study_dir:
                shutil.rmtree(path, ignore_errors=True)


def _failure_text(failure: Mapping[str, Any]) -> str:
    """One sentence on why the tune reached no verdict."""
    kind, message = failure.get("kind"), failure.get("message", "")
    if kind == "baseline":
        return (f"your settings {failure.get('state', 'crashed')}: {message}; there is nothing "
                "to compare against")
    if kind == "environment":
        count = len(failure.get("trials") or []) or crashes.STREAK
        return (f"the environment broke: {count} trials in a row, each with other settings, "
                f"crashed the same way ({message})")
    return str(message)


def _judge_runs(confirmation: dict[str, Any], stored: list[dict[str, Any]],
                skipped: list[str]) -> dict[str, Any]:
    """A confirmation whose re-measurements crashed (or did not run) proves nothing: it says
    so, and no candidate it could not measure is called a winner or a loser."""
    mine = {(r["trial"], r["round"]) for r in confirmation["runs"]}
    runs = [r for r in stored if (r["trial"], r["round"]) in mine]
    failed = [r for r in runs if r.get("throughput") is None]
    if not failed:
        return confirmation
    first = next((r for r in failed if r.get("state") != "not-run"), failed[0])
    what = f"{first.get('state')}: {first.get('message') or 'no result'}"
    for cand in confirmation["candidates"]:
        if cand["speedup"] is None:
            cand["why"] = f"not confirmed: its re-measurements did not finish ({what})"
    if any(c["speedup"] is not None for c in confirmation["candidates"]):
        return confirmation
    crashed = sum(r.get("state") not in ("not-run",) for r in failed)
    reason = (f"the confirmation could not run: {len(failed)} of {len(runs)} re-measurements "
              f"did not finish ({what})")
    if skipped and not crashed:
        reason = f"the confirmation could not run: {skipped[-1]}"
    return {**confirmation, "status": "failed",
            "reason": reason + "; the search figures are unconfirmed"}


def _wait_all(ended: list[threading.Event], until: Optional[float] = None) -> bool:
    """Wait until every search thread has set its event (or `until`, a monotonic time).
    Not Thread.join: up to CPython 3.12 a Ctrl-C landing in join() marks the thread as ended
    while it still runs (python/cpython#90882: the bpo-45274 handler releases the lock the
    running thread holds), and the tune then stopped without waiting for it to record its
    trial."""
    for end in ended:
        while not end.wait(0.2):
            if until is not None and time.monotonic() >= until:
                return False
    return True


@contextlib.contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block is done, then raise it: for a step that a
    KeyboardInterrupt must not cut in half (a stop whose trials are half recorded leaves
    them RUNNING). Only the main thread receives signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []
    previous: dict[int, Any] = {
        int(sig): signal.signal(sig, lambda signum, _frame: seen.append(signum))
        for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if seen:  # delivered now, to the handler that was there (the CLI's, which says which)
        handler = previous[seen[0]]
        if callable(handler):
            handler(seen[0], None)
        raise KeyboardInterrupt


def run_tune(options: TuneOptions, env: Mapping[str, str],
             on_event: Optional[Event] = None) -> dict[str, Any]:
    """Tune and return the result (schema rocmdoctor.tune/1); TuneError for a one-line
    failure, KeyboardInterrupt passes through (the study keeps every finished trial)."""
    return Tuner(options, env, on_event).run()
