"""The search of a tune: one Optuna optimize loop per GPU over one study, one benchmark child
per trial, and what each trial's end means for the search: the next point, a stop (the
budget, --max-trials, the space measured, the sampler converged), or a failure that leaves
nothing to search for (your settings did not run, the environment broke).

The figures a trial keeps are recorded in the study as it ends; a trial that ends with Ctrl-C
is recorded as interrupted and runs again on a resume.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn, Optional

from rocmdoctor.tuners import budget as bd
from rocmdoctor.tuners import crashes
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.bench.child import TrialOutcome
from rocmdoctor.tuners.codec import confirm_run_from
from rocmdoctor.tuners.context import Context
from rocmdoctor.tuners.events import (
    EnvironmentBroke,
    TrialEnded,
    TrialNotStarted,
    TrialRetried,
    TrialStarted,
)
from rocmdoctor.tuners.interrupt import STOP_SIGNALS, ctrl_c_deferred, join, wait_all
from rocmdoctor.tuners.model import Failure, Plan, Trial
from rocmdoctor.tuners.runner import TrialRunner

if TYPE_CHECKING:
    import optuna

MAX_DUPLICATES = 20  # consecutive repeats of measured points: the sampler has converged
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


class TrialFailed(Exception):
    pass


class TrialSkipped(Exception):
    pass


class Search:
    """The search loop of one tune. `failure` says why it stopped early, if it did."""

    def __init__(self, ctx: Context, runner: TrialRunner) -> None:
        self.ctx = ctx
        self.runner = runner
        self.duplicates = 0
        self.lock = threading.Lock()  # suggesting a point and claiming it are one step
        self.running: set[str] = set()
        self.streak = crashes.CrashStreak()
        self.failure: Optional[Failure] = None
        self.stopped: Optional[str] = None  # why the search ended (STOPPED)
        self.owner = ""  # "host:pid", set by the tune

    # --- what the study holds -------------------------------------------------------------
    def trials(self) -> list[Trial]:
        return sd.read_trials(self.ctx.the_study())

    def done(self) -> list[Trial]:
        return [t for t in self.trials() if t.state in sd.DONE_STATES]

    def baseline(self) -> Optional[Trial]:
        return next((t for t in self.trials() if t.baseline and t.state == "ok"), None)

    def total(self) -> Optional[int]:
        """Trials this tune will run at most, when known (TPE without --max-trials stops on
        the budget)."""
        import optuna

        size = self.ctx.the_space().size()
        if self.ctx.options.max_trials:
            return min(size, self.ctx.options.max_trials)
        sampler = self.ctx.the_study().sampler
        return size if isinstance(sampler, optuna.samplers.BruteForceSampler) else None

    def claimed(self, done: list[Trial]) -> int:
        """Trials finished or running. A trial records its end (in the study) a moment before
        its thread takes it off self.running: counted once, not twice."""
        return len(done) + len(self.running - sd.done_keys(done))

    def changes(self, params: Mapping[str, str]) -> dict[str, str]:
        base = self.ctx.the_space().baseline_params()
        return {k: v for k, v in params.items() if base.get(k) != v}

    # --- when to stop ---------------------------------------------------------------------
    def stop_reason(self) -> Optional[str]:
        """Why the search ends now: a failure, max-trials, space, converged or budget; None to
        go on."""
        if self.failure is not None:
            return self.failure.stop
        trials = self.trials()
        done = [t for t in trials if t.state in sd.DONE_STATES]
        # trials running on other GPUs count towards --max-trials: they will finish
        limit = self.ctx.options.max_trials
        if limit and self.claimed(done) >= limit:
            return "max-trials"
        if len(sd.done_keys(done)) >= self.ctx.the_space().size():
            return "space"
        if self.duplicates >= MAX_DUPLICATES:
            return "converged"
        return "budget" if self._out_of_budget(trials, done) else None

    def _out_of_budget(self, trials: list[Trial], done: list[Trial]) -> bool:
        """The budget binds once your settings have run (ok or not): there is always a
        baseline; or once another tune sharing the study is running them. Another trial
        starts while it and the confirmation of the candidates that exist still fit. Until a
        configuration other than yours has finished, one more trial starts while it fits at
        all: without a candidate the tune has nothing to show (a short budget on a slow
        machine spent a quarter of itself on your settings and stopped)."""
        started = any(t.baseline and t.state in (*sd.DONE_STATES, "running") for t in trials)
        if not started:
            return False
        o = self.ctx.options
        candidate = any(t.state == "ok" and not t.baseline for t in done)
        reserve = bd.confirm_reserve(done, self.stored_runs(), o.confirm_rounds, o.confirm_top,
                                     o.spec.precision, o.spec.batch_size) if candidate else 0.0
        return self.ctx.budget.left() < bd.typical_wall(done) + reserve

    def stored_runs(self) -> list[Any]:
        return [confirm_run_from(r) for r in self.ctx.confirm_runs()]

    # --- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        self.stopped = self.stop_reason()
        if self.stopped is not None:
            return
        ended: list[threading.Event] = []  # one per search thread, set as it ends
        try:
            self._threads(ended)
            self.stopped = self.stop_reason() or "space"  # the sampler ran out of points
        except KeyboardInterrupt:
            with ctrl_c_deferred():  # a second Ctrl-C would leave the cut trials RUNNING
                self.ctx.cancel.set()  # each thread kills its child, records it interrupted
                join(ended)
                sd.release(self.ctx.the_study(), self.owner)
            raise

    def _threads(self, ended: list[threading.Event]) -> None:
        # One optimize loop per GPU on the one study (Optuna keeps its loop state per
        # thread); the children do the work, the threads only wait for them. With one GPU
        # too: Ctrl-C then reaches only this (main) thread, never Optuna's bookkeeping in
        # the middle of a trial (a second Ctrl-C there broke Optuna's own error handling).
        errors: list[BaseException] = []

        def loop(gpu: Optional[int], end: threading.Event) -> None:
            try:
                self._optimize(gpu)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                errors.append(exc)
                self.ctx.cancel.set()  # the other GPUs stop too: they run again on resume
            finally:
                end.set()

        study = self.ctx.the_study()
        # Optuna pops a queued trial by reading it WAITING, then marking it RUNNING; on SQLite,
        # which has no row locks, two threads can pop the same trial. One pop at a time.
        pop = study._pop_waiting_trial_id
        pop_lock = threading.Lock()

        def pop_one() -> Optional[int]:
            with pop_lock:
                return pop()

        study._pop_waiting_trial_id = pop_one  # type: ignore[method-assign]
        gpus: tuple[Optional[int], ...] = self.ctx.options.gpus or (None,)
        for gpu in gpus:
            ended.append(threading.Event())
            threading.Thread(target=loop, args=(gpu, ended[-1]), daemon=True,
                             name=f"tune-gpu{'' if gpu is None else gpu}").start()
        wait_all(ended)
        if errors:  # one thread failed and cancelled the others: raise the failure itself
            join(ended)
            raise next((e for e in errors if not isinstance(e, KeyboardInterrupt)), errors[0])

    def _optimize(self, gpu: Optional[int]) -> None:
        def after(study: optuna.Study, _trial: optuna.trial.FrozenTrial) -> None:
            with self.lock:
                over = self.stop_reason() is not None
            if over:
                study.stop()

        def objective(trial: optuna.Trial) -> float:
            return self.objective(trial, gpu)

        self.ctx.the_study().optimize(objective, callbacks=[after],
                                      catch=(TrialFailed, TrialSkipped))

    def objective(self, trial: optuna.Trial, gpu: Optional[int] = None) -> float:
        if self.ctx.cancel.is_set():  # Ctrl-C while this loop was asking for a trial
            with self.lock:
                sp.suggest(trial, self.ctx.the_space())  # a trial without parameters
            trial.set_user_attr("state", "interrupted")  # confuses samplers
            trial.set_user_attr("message", "not started: the tune was interrupted")
            raise KeyboardInterrupt
        try:
            return self._claim(trial, gpu)
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                trial.set_user_attr("state", "interrupted")
                trial.set_user_attr("message", "interrupted (Ctrl-C); it runs again on resume")
            raise

    def _claim(self, trial: optuna.Trial, gpu: Optional[int]) -> float:
        """Take a point from the sampler: not one measured or running already, not past
        --max-trials."""
        with self.lock:
            params = sp.suggest(trial, self.ctx.the_space())
            key = sd.params_key(params)
            done = self.done()
            limit = self.ctx.options.max_trials
            if limit and self.claimed(done) >= limit:
                # another GPU runs the last trial allowed: this one never starts (a later
                # tune with a higher --max-trials runs it: search.recover queues it again)
                trial.set_user_attr("state", "not-run")
                trial.set_user_attr("message", f"--max-trials {limit} reached")
                trial.study.stop()
                raise TrialSkipped("limit")
            if key in self.running or key in sd.done_keys(done):
                self.duplicates += 1
                trial.set_user_attr("state", "duplicate")
                trial.set_user_attr("message", "already measured; not run again")
                raise TrialSkipped("duplicate")
            self.duplicates = 0
            self.running.add(key)
            trial.set_user_attr("owner", self.owner)
            before = self.claimed(done) - 1  # finished or started earlier
            best = max((t.throughput or 0.0 for t in done if t.state == "ok"), default=None)
        try:
            return self.measure(trial, params, gpu, before, best or None)
        finally:
            with self.lock:
                self.running.discard(key)

    # --- one trial ------------------------------------------------------------------------
    def measure(self, trial: optuna.Trial, params: dict[str, str], gpu: Optional[int],
                before: int, best: Optional[float]) -> float:
        import optuna

        baseline = bool(trial.user_attrs.get("baseline"))
        trial_dir = os.path.join(self.ctx.study_dir, "trials", str(trial.number))
        plan = sp.materialize(self.ctx.the_space(), params, self.ctx.options.spec,
                              self.ctx.platform, self.ctx.env, trial_dir,
                              self.ctx.options.compile_cache)
        pruner = None if baseline else sd.WindowPruner(best, report=trial.report)
        wanted = self.runner.timeout(plan, self.baseline())
        self._record_start(trial, plan, trial_dir, gpu, self.ctx.budget.child_timeout(wanted))
        estimate = self._estimate(baseline)
        if estimate is not None and estimate > self.ctx.budget.hard_left():
            self._not_started(trial, params, gpu, baseline, estimate)
        self.ctx.emit(TrialStarted(number=trial.number, params=params, gpu=gpu,
                                   changes=self.changes(params), finished=before,
                                   total=self.total(), time_left=self.ctx.budget.left()))
        outcome, one_time = self._run_once_more_if_transient(trial, plan, wanted, pruner, gpu)
        metrics = self._record_end(trial, outcome, one_time, pruner)
        cause = crashes.known_cause(outcome.message, outcome.stderr_tail) \
            if outcome.state in crashes.CRASH_STATES else None
        if cause is not None:
            trial.set_user_attr("known_cause", {"key": cause.key, "what": cause.what,
                                                "source": cause.source,
                                                "avoided": cause.avoided})
        with self.lock:
            self._judge(trial, params, plan, baseline, outcome, gpu)
        # last: a trial with a state is finished to the other GPUs' threads, figures and all
        trial.set_user_attr("state", outcome.state)
        throughput = metrics.get("throughput")
        self.ctx.emit(TrialEnded(
            number=trial.number, params=params, changes=self.changes(params), gpu=gpu,
            state=outcome.state, message=outcome.message, throughput=throughput,
            unit=metrics.get("unit"), best=max(best or 0.0, throughput or 0.0) or None,
            finished=len(self.done()), total=self.total(), time_left=self.ctx.budget.left(),
            survivors=outcome.survivors, known_cause=cause.what if cause else None,
            input_share=metrics.get("input_share"), input_verdict=metrics.get("input_verdict")))
        if outcome.state == "ok":
            return float(throughput or 0.0)
        if outcome.state == "pruned":
            raise optuna.TrialPruned(outcome.message)
        raise TrialFailed(outcome.message)

    @staticmethod
    def _record_start(trial: optuna.Trial, plan: Plan, trial_dir: str, gpu: Optional[int],
                      timeout: float) -> None:
        started = time.time()
        for key, value in {"started_at": started, "dir": trial_dir, "env": plan.env,
                           "spec": plan.spec.to_dict(), "gpu": gpu,
                           # past this, no tune can still be running it (search.recover)
                           "deadline_at": started + timeout * (2 if plan.tunableop else 1)
                           + 60}.items():
            trial.set_user_attr(key, value)

    def _run_once_more_if_transient(self, trial: optuna.Trial, plan: Plan, wanted: float,
                                    pruner: Optional[sd.WindowPruner], gpu: Optional[int]
                                    ) -> tuple[TrialOutcome, Optional[float]]:
        """Run the plan; once more, never twice, when it crashed in a way that may not happen
        again (kb/trial_crashes.py). A run the budget's end cut short is interrupted."""
        who = f"trial {trial.number}"
        timeout = self.ctx.budget.child_timeout(wanted)
        outcome, one_time = self.runner.run(plan, timeout, pruner, gpu, who)
        again = crashes.transient(outcome.message, outcome.stderr_tail) \
            if outcome.state in crashes.CRASH_STATES else None
        if again is not None and self.ctx.budget.hard_left() > outcome.wall_s + 10.0:
            self.ctx.emit(TrialRetried(number=trial.number, message=outcome.message,
                                       why=again.what))
            trial.set_user_attr("retried", {"message": outcome.message, "why": again.what,
                                            "source": again.source})
            if pruner is not None:
                pruner.windows.clear()
            timeout = self.ctx.budget.child_timeout(wanted)
            outcome, one_time = self.runner.run(plan, timeout, pruner, gpu, who)
        if outcome.state == "timeout" and timeout < wanted:
            outcome = dataclasses.replace(
                outcome, state="interrupted",
                message=f"stopped when the budget ended ({timeout:.0f} s in); the same command "
                        "with a longer --budget runs it again")
        return outcome, one_time

    @staticmethod
    def _record_end(trial: optuna.Trial, outcome: TrialOutcome, one_time: Optional[float],
                    pruner: Optional[sd.WindowPruner]) -> dict[str, Any]:
        metrics: dict[str, Any] = sd.metrics_of(outcome.result) if outcome.result else \
            {"windows": pruner.windows if pruner else []}
        trial.set_user_attr("metrics", metrics)
        trial.set_user_attr("one_time_s", one_time if one_time is not None
                            else metrics.get("first_step_s"))
        trial.set_user_attr("message", outcome.message)
        trial.set_user_attr("wall_s", outcome.wall_s)
        trial.set_user_attr("survivors", outcome.survivors)
        if outcome.state != "ok":
            trial.set_user_attr("stderr_tail", sd.trimmed_tail(outcome.stderr_tail))
        return metrics

    def _estimate(self, baseline: bool) -> Optional[float]:
        """What a run of your settings takes, from the runs of this study (None before any):
        it is not started when it cannot end before the promised end of the command. (Other
        trials are not started once the budget has no room for them: stop_reason.)"""
        if not baseline:
            return None
        walls = [t.wall_s for t in self.done() if t.state == "ok" and t.wall_s]
        return min(walls) if walls else None

    def _not_started(self, trial: optuna.Trial, params: dict[str, str], gpu: Optional[int],
                     baseline: bool, estimate: float) -> NoReturn:
        """Say, before starting it, that one run cannot fit in what is left of the budget."""
        left = max(0.0, self.ctx.budget.hard_left())
        message = (f"not started: one run takes about {estimate:.0f} s and {left:.0f} s are "
                   "left of the budget; a longer --budget runs it")
        trial.set_user_attr("message", message)
        if baseline and self.failure is None:
            self.failure = Failure(kind="too-short", stop="too-short", message=message)
        trial.set_user_attr("state", "interrupted")
        self.ctx.emit(TrialNotStarted(number=trial.number, message=message, gpu=gpu,
                                      changes=self.changes(params)))
        raise TrialSkipped("budget")

    def _judge(self, trial: optuna.Trial, params: dict[str, str], plan: Plan,
               baseline: bool, outcome: TrialOutcome, gpu: Optional[int]) -> None:
        """What this trial's end says about the tune (called holding self.lock): your settings
        failing, or the last trials crashing alike whatever their settings, stop the search."""
        if self.failure is not None or outcome.state in ("pruned", "duplicate"):
            return
        reproduce = crashes.reproduce_command(plan.spec, {**plan.env, **self.runner.gpu_env(gpu)},
                                              self.ctx.options.python)
        if baseline:
            self.failure = _baseline_failure(trial.number, outcome, reproduce)
            if self.failure is not None or outcome.state != "ok":
                return
        self.streak.record(sd.params_key(params), outcome.state, outcome.message)
        broken = self.streak.broken()
        if broken is None:
            return
        alike = crashes.signature(outcome.state, outcome.message)
        numbers = [t.number for t in trial.study.get_trials(deepcopy=False)
                   if t.user_attrs.get("state") in crashes.CRASH_STATES
                   and crashes.signature(t.user_attrs["state"], t.user_attrs.get("message", ""))
                   == alike]
        numbers = sorted({*numbers[-(crashes.STREAK - 1):], trial.number})
        self.failure = Failure(kind="environment", stop="environment", message=broken,
                               trials=tuple(numbers), stderr_tail=outcome.stderr_tail,
                               reproduce=reproduce)
        # not the configurations' fault: they are not counted, and run again on a resume (a
        # finished trial's own attributes can no longer be set: the study keeps the list)
        study = trial.study
        flagged = set(study.user_attrs.get(sd.ENVIRONMENT_CRASHES, []))
        study.set_user_attr(sd.ENVIRONMENT_CRASHES, sorted(flagged | set(numbers)))
        self.ctx.emit(EnvironmentBroke(message=broken, trials=tuple(numbers)))


def _baseline_failure(number: int, outcome: TrialOutcome, reproduce: str) -> Optional[Failure]:
    """Your settings' run ending other than ok: nothing to compare against."""
    if outcome.state == "ok":
        return None
    if outcome.state == "interrupted":
        if not outcome.message.startswith("stopped when the budget ended"):
            return None  # Ctrl-C: it runs again on resume
        return Failure(kind="too-short", stop="too-short",
                       message="your settings did not finish within the budget "
                               f"({outcome.wall_s:.0f} s in); a longer --budget measures them",
                       reproduce=reproduce)
    return Failure(kind="baseline", stop="baseline-failed", message=outcome.message,
                   state=outcome.state, trial=number, stderr_tail=outcome.stderr_tail,
                   reproduce=reproduce)


__all__ = ["STOP_SIGNALS", "STOPPED", "Search", "TrialFailed", "TrialSkipped",
           "ctrl_c_deferred", "join", "wait_all"]
