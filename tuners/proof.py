"""The proof of a tune: your settings and the best candidates measured again, interleaved and
rotated (rocmdoctor.tuners.confirm holds the statistics), each run never past the budget's
end; after the environment broke, your settings once more to see whether the machine has
recovered; and a confirmation whose runs did not finish that says so instead of naming a gain.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any, Optional

from rocmdoctor.tuners import budget as bd
from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners import crashes
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners.bench.child import TrialOutcome
from rocmdoctor.tuners.codec import confirm_run_dict, confirm_run_from
from rocmdoctor.tuners.context import Context
from rocmdoctor.tuners.events import ConfirmRan, ConfirmStarted, RecoveryEnded, RecoveryStarted
from rocmdoctor.tuners.model import (
    Candidate,
    Confirmation,
    ConfirmRun,
    Failure,
    Payback,
    Recovery,
    Trial,
    energy_per_unit,
)
from rocmdoctor.tuners.runner import TrialRunner
from rocmdoctor.tuners.search import Search
from rocmdoctor.tuners.study import metrics_of


class Proof:
    def __init__(self, ctx: Context, runner: TrialRunner, search: Search) -> None:
        self.ctx = ctx
        self.runner = runner
        self.search = search
        self.recovery: Optional[Recovery] = None

    def _gpu(self) -> Optional[int]:
        # Every re-measurement on one GPU: a ratio between two GPUs would measure the GPUs.
        return self.ctx.options.gpus[0] if self.ctx.options.gpus else None

    def _rerun_s(self, t: Trial) -> float:
        return bd.rerun_s(t, bd.typical_wall(self.search.done()), self.search.stored_runs())

    def _run(self, t: Trial, who: str) -> TrialOutcome:
        plan = sp.materialize(self.ctx.the_space(), t.params, self.ctx.options.spec,
                              self.ctx.platform, self.ctx.env, t.dir or "",
                              self.ctx.options.compile_cache)
        outcome, _ = self.runner.run(plan, self.runner.timeout(plan, self.search.baseline()),
                                     None, self._gpu(), who)
        return outcome

    # --- after a break --------------------------------------------------------------------
    def recovery_run(self) -> Recovery:
        """Your settings once more, to see whether the machine has recovered (then the
        candidates found before the break are still confirmed)."""
        base = self.search.baseline()
        if base is None:
            self.recovery = Recovery("not-run", "your settings have no finished run to repeat")
            return self.recovery
        need = self._rerun_s(base)
        if self.ctx.budget.hard_left() < need:
            self.recovery = Recovery("not-run", f"not run: it takes about {need:.0f} s and the "
                                                "budget has no room left")
            return self.recovery
        self.ctx.emit(RecoveryStarted(trial=base.number, time_left=self.ctx.budget.left()))
        outcome = self._run(base, "your settings (has the machine recovered?)")
        result = metrics_of(outcome.result) if outcome.result else {}
        self.recovery = Recovery(outcome.state, outcome.message, result.get("throughput"),
                                 round(outcome.wall_s, 2), outcome.survivors)
        self.ctx.emit(RecoveryEnded(state=outcome.state, message=outcome.message,
                                    throughput=self.recovery.throughput,
                                    time_left=self.ctx.budget.left()))
        return self.recovery

    # --- the confirmation -----------------------------------------------------------------
    def confirm(self, failure: Optional[Failure]) -> Confirmation:
        base = self.search.baseline()
        o = self.ctx.options
        picked = [] if base is None else cf.pick_candidates(
            base, [t for t in self.search.done() if t.state == "ok"], o.confirm_top,
            o.spec.precision, o.spec.batch_size)
        if failure is not None and failure.kind in ("baseline", "too-short"):
            return self._finish(Confirmation("no-baseline", reason=failure_text(failure)),
                                base, [])
        if failure is not None and failure.kind == "environment" and \
                (self.recovery is None or self.recovery.state != "ok"):
            said = self.recovery.message if self.recovery else "not run"
            reason = (f"{failure_text(failure)}; your settings, run again to see whether the "
                      f"machine had recovered: {said}. The confirmation did not run: the "
                      "search figures are unconfirmed")
            return self._finish(_unconfirmed(picked, base, "not-run", reason,
                                             "not re-measured: the environment broke"),
                                base, [])
        stored: list[dict[str, Any]] = self.ctx.confirm_runs()
        if base is not None and picked:
            self.ctx.emit(ConfirmStarted(trials=(base.number, *(t.number for t in picked)),
                                         rounds=o.confirm_rounds))
        measuring = _Rounds(self, base, picked, stored)
        # runs of an earlier tune that did not measure are measured again
        earlier = [(int(r["trial"]), int(r["round"]), r["throughput"]) for r in stored
                   if r.get("throughput") is not None]
        confirmation = cf.confirm(base, picked, earlier, measuring.measure, o.confirm_rounds,
                                  o.confirm_max_rounds or 2 * o.confirm_rounds,
                                  measuring.time_for_round)
        if confirmation.status == "done":
            confirmation = judge_runs(confirmation, [confirm_run_from(r) for r in stored],
                                      measuring.skipped)
        return self._finish(confirmation, base, stored)

    def _finish(self, confirmation: Confirmation, base: Optional[Trial],
                stored: Sequence[dict[str, Any]]) -> Confirmation:
        runs = tuple(confirm_run_from(r) for r in stored)  # for the HTML's time axis
        trials = {t.number: t for t in self.search.trials()}
        candidates = tuple(self._completed(c, trials[c.trial], base, runs)
                           for c in confirmation.candidates)
        return dataclasses.replace(
            confirmation, timed_runs=runs, candidates=candidates,
            baseline_energy_per_unit_j=confirmed_energy(base, runs)
            if base is not None and candidates else None)

    def _completed(self, c: Candidate, t: Trial, base: Optional[Trial],
                   runs: Sequence[ConfirmRun]) -> Candidate:
        batch = int(c.params.get("batch_size", self.ctx.options.spec.batch_size))
        return dataclasses.replace(
            c, changes=self.search.changes(c.params), batch_size=batch,
            energy_per_unit_j=confirmed_energy(t, runs),
            payback=payback(base, t, c.speedup, batch, int(t.units_per_sample or 1))
            if base is not None else None)


class _Rounds:
    """The confirmation's runs, one at a time: each recorded in the study as it ends (a
    resumed tune reuses them); none started once three crashed alike, or when the budget
    has no room for it."""

    def __init__(self, proof: Proof, base: Optional[Trial], picked: Sequence[Trial],
                 stored: list[dict[str, Any]]) -> None:
        self.proof, self.base, self.picked, self.stored = proof, base, picked, stored
        self.streak = crashes.CrashStreak()
        self.skipped: list[str] = []

    def measure(self, t: Trial, round_index: int) -> Optional[float]:
        ctx = self.proof.ctx
        broken = self.streak.broken()
        if broken is not None or ctx.budget.hard_left() < self.proof._rerun_s(t):
            # the environment broke, or the run cannot end before the promised end
            self.skipped.append(f"the re-measurements crashed alike ({broken})" if broken else
                                "the budget ended before the confirmation did")
            outcome = TrialOutcome("not-run", None, self.skipped[-1], "", None, 0.0)
        else:
            who = "your settings" if t is self.base else f"trial {t.number}"
            outcome = self.proof._run(t, f"{who} (confirmation round {round_index + 1})")
            self.streak.record(f"{t.number}/{round_index}", outcome.state, outcome.message)
        figures = metrics_of(outcome.result) if outcome.result else {}
        value = figures.get("throughput")
        self.stored.append(confirm_run_dict(ConfirmRun(
            trial=t.number, round=round_index, throughput=value, state=outcome.state,
            at=time.time(), wall_s=round(outcome.wall_s, 2), message=outcome.message,
            energy_per_sample_j=figures.get("energy_per_sample_j"))))
        ctx.the_study().set_user_attr("confirm_runs", self.stored)
        ctx.emit(ConfirmRan(trial=t.number, round=round_index, state=outcome.state,
                            throughput=value, message=outcome.message,
                            baseline=t is self.base, time_left=ctx.budget.left()))
        return value

    def time_for_round(self, keys: int) -> bool:
        """Another round past the minimum, while it fits in the budget itself (the slack
        past it is for the minimum rounds)."""
        need = sum(self.proof._rerun_s(t) for t in [self.base, *self.picked] if t is not None)
        return self.proof.ctx.budget.left() >= need and self.streak.broken() is None


def failure_text(failure: Failure) -> str:
    """One sentence on why the tune reached no verdict."""
    if failure.kind == "baseline":
        return (f"your settings {failure.state or 'crashed'}: {failure.message}; there is "
                "nothing to compare against")
    if failure.kind == "environment":
        count = len(failure.trials) or crashes.STREAK
        return (f"the environment broke: {count} trials in a row, each with other settings, "
                f"crashed the same way ({failure.message})")
    return failure.message


def _unconfirmed(picked: Sequence[Trial], base: Optional[Trial], status: str, reason: str,
                 why: str) -> Confirmation:
    """A confirmation that could not run: the candidates with their search figures only."""
    return Confirmation(status, reason=reason,
                        baseline_trial=base.number if base else None,
                        candidates=tuple(Candidate(
                            trial=t.number, params=dict(t.params), precision=t.precision,
                            search_throughput=t.throughput, speedup=None, low=None,
                            high=None, pairs=0, winner=False, why=why) for t in picked))


def judge_runs(confirmation: Confirmation, stored: Sequence[ConfirmRun],
               skipped: Sequence[str]) -> Confirmation:
    """A confirmation whose re-measurements crashed (or did not run) proves nothing: it says
    so, and no candidate it could not measure is called a winner or a loser."""
    mine = {(k, r) for k, r, _ in confirmation.runs}
    runs = [r for r in stored if (r.trial, r.round) in mine]
    failed = [r for r in runs if r.throughput is None]
    if not failed:
        return confirmation
    first = next((r for r in failed if r.state != "not-run"), failed[0])
    what = f"{first.state}: {first.message or 'no result'}"
    # a candidate measured in one round only has a ratio but no interval: not decided either
    candidates = tuple(
        c if c.low is not None else dataclasses.replace(
            c, why=f"not confirmed: its re-measurements did not finish ({what})")
        for c in confirmation.candidates)
    confirmation = dataclasses.replace(confirmation, candidates=candidates)
    if any(c.low is not None for c in candidates):
        return confirmation
    crashed = sum(r.state != "not-run" for r in failed)
    if skipped and not crashed:  # the budget, not the machine: a longer one confirms them
        return dataclasses.replace(confirmation, status="budget",
                                   reason=_budget_reason(candidates, skipped[-1]))
    reason = (f"the confirmation could not run: {len(failed)} of {len(runs)} re-measurements "
              f"did not finish ({what})")
    return dataclasses.replace(confirmation, status="failed",
                               reason=reason + "; the search figures are unconfirmed")


def _budget_reason(candidates: Sequence[Candidate], skipped: str) -> str:
    """Why a confirmation the budget cut proves nothing; where it was cut after a round, what
    that round saw."""
    once = [c for c in candidates if c.speedup is not None]
    if not once:
        return (f"the confirmation could not run: {skipped}; the search figures are "
                "unconfirmed: the same command with a longer --budget confirms them")
    lead = max(once, key=lambda c: c.speedup or 0.0)
    return (f"the confirmation did not finish: {skipped} after one round (trial {lead.trial}: "
            f"{lead.speedup:.2f}x your settings in it); the search figures are unconfirmed: "
            "the same command with a longer --budget confirms them")


def payback(base: Trial, trial: Trial, speedup: Optional[float], batch_size: int,
            units_per_sample: int = 1) -> Optional[Payback]:
    """After how many steps (and minutes of training at the faster speed) a candidate's
    one-time cost (compile, tuning) beyond yours is paid back by its faster steps; None when
    it is not faster or its throughput is unknown. Throughput counts units (images, tokens):
    a step trains `batch_size` samples of `units_per_sample` units each."""
    rate = base.throughput
    if not speedup or speedup <= 1.0 or not rate:
        return None
    extra = max(0.0, float(trial.one_time_s or 0.0) - float(base.one_time_s or 0.0))
    faster = rate * speedup
    saved = 1.0 / rate - 1.0 / faster  # seconds saved per unit
    units = extra / saved
    per_step = batch_size * max(1, units_per_sample)
    return Payback(one_time_s=round(extra, 1), steps=int(math.ceil(units / per_step)),
                   minutes=round(units / faster / 60.0, 2))


def confirmed_energy(trial: Optional[Trial], runs: Sequence[ConfirmRun]) -> Optional[float]:
    """Joules per unit of a trial over its confirmation re-runs (their median), else from its
    search run; None where no power was measured."""
    if trial is None:
        return None
    mine = [r for r in runs if r.trial == trial.number and r.state == "ok"]
    measured = [e for e in (energy_per_unit(r.energy_per_sample_j, trial.units_per_sample,
                                            trial.unit) for r in mine) if e is not None]
    if measured:
        return float(statistics.median(measured))
    return trial.energy_per_unit
