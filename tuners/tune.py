"""`rocmdoctor tune`: search the knobs for the fastest training settings, then prove it.

Flow: probe the platform once in a child (torch is never imported here) -> the batch sizes
to search -> plan the space (rocmdoctor.tuners.space) -> an Optuna study with one benchmark
child per trial (rocmdoctor.tuners.search) -> after a break, your settings once more; the
baseline and the best candidates measured again, interleaved (rocmdoctor.tuners.proof) ->
one TuneResult (rocmdoctor.tuners.model), which the renderers read and the codec writes as
rocmdoctor.tune/1.

The same proof by hand: run `rocmdoctor bench` with and without the winning settings a few
times, alternating, and compare the medians.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Callable, Optional

from rocmdoctor.tuners import batch
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.bench.child import TrialOutcome, run_bench_child
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.budget import BATCH_SEARCH_SHARE
from rocmdoctor.tuners.context import Context, TuneError, TuneOptions
from rocmdoctor.tuners.events import (
    BatchProbed,
    BatchSearchStarted,
    BatchSizesChosen,
    Finished,
    Listener,
    Planned,
    Probing,
)
from rocmdoctor.tuners.model import BatchSearch, Confirmation, Platform, Study, TuneResult
from rocmdoctor.tuners.platform import ProbeError, probe_platform
from rocmdoctor.tuners.proof import Proof
from rocmdoctor.tuners.result import build
from rocmdoctor.tuners.rules import environment_warnings
from rocmdoctor.tuners.runner import TrialRunner
from rocmdoctor.tuners.search import STOP_SIGNALS, STOPPED, Search

if TYPE_CHECKING:
    import optuna

__all__ = ["STOP_SIGNALS", "TuneError", "TuneOptions", "Tuner", "run_tune"]

PROBE_TIMEOUT_S = 180.0
Probe = Callable[[str, Optional[str], Mapping[str, str]], Platform]


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
                 on_event: Optional[Listener] = None, probe: Optional[Probe] = None) -> None:
        self.ctx = Context.of(options, env, on_event)
        self.probe = probe or self._probe
        self.runner = TrialRunner(self.ctx)
        self.search = Search(self.ctx, self.runner)
        self.proof = Proof(self.ctx, self.runner, self.search)
        self.host = socket.gethostname()
        self.search.owner = sd.owner_id(self.host, os.getpid())
        self.batch_search = BatchSearch(sizes=(), how="not planned")

    @property
    def o(self) -> TuneOptions:
        return self.ctx.options

    def _probe(self, device: str, python: Optional[str], env: Mapping[str, str]) -> Platform:
        return probe_platform(device, python, env,
                              self.ctx.budget.child_timeout(PROBE_TIMEOUT_S))

    # --- the run ---------------------------------------------------------------------------
    def run(self) -> TuneResult:
        self._prepare()
        space = self.ctx.the_space()
        name = self.o.study or sd.study_name(self.o.spec, space, self.ctx.platform,
                                             self.o.keep_precision)
        self.ctx.study_dir = os.path.join(sd.cache_dir(self.ctx.env), name)
        storage = self.o.storage or sd.default_storage(self.ctx.env, name)
        with _study_lock(self.ctx.study_dir, name):
            requeued = self._open_study(name, storage)
            self.search.run()
            if self.search.failure is not None and self.search.failure.kind == "environment":
                self.proof.recovery_run()
            confirmation = self.proof.confirm(self.search.failure)
            result = self._result(name, storage, confirmation, requeued)
            self._clean(result)
        self.ctx.emit(Finished(result=result))
        return result

    def _prepare(self) -> None:
        """The platform, the batch sizes and the space: refused with one line when any is
        wrong, before a study is opened."""
        spec = self.o.spec
        problems = spec.problems()
        if problems:
            raise TuneError("; ".join(problems))
        try:
            sp.space_names(self.o.space, self.o.allow_test_knobs)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
        self.ctx.emit(Probing(python=self.o.python or sys.executable,
                              timeout_s=self.ctx.budget.child_timeout(PROBE_TIMEOUT_S)))
        try:
            self.ctx.platform = self.probe(spec.device, self.o.python, self.ctx.env)
        except ProbeError as exc:
            raise TuneError(str(exc)) from None
        self._check_gpus()
        self.batch_search = self._batch_sizes()
        try:
            self.ctx.space = sp.plan_space(self.ctx.platform, spec, self.ctx.env, self.o.space,
                                           self.o.keep_precision, self.batch_search.sizes,
                                           self.o.allow_test_knobs, self.o.keep_batch_size)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
        if not self.ctx.space.knobs:
            raise TuneError("nothing to search here: " + "; ".join(
                f"{k}: {r}" for k, r in self.ctx.space.skipped))

    def _open_study(self, name: str, storage: str) -> list[int]:
        """Open (or resume) the study; returns the trials queued again."""
        space = self.ctx.the_space()
        sampler = sd.make_sampler(space, self.o.max_trials, self.o.seed)
        self._lock_sampler(sampler)
        try:
            study = sd.open_study(name, storage, space, self.o.spec.to_dict(), sampler)
        except sd.StudyMismatch as exc:
            raise TuneError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a storage URL is outside input
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise TuneError(f"cannot open the study storage {storage}: {first}") from None
        self.ctx.study = study
        requeued = sd.recover(study, self.host, space.baseline_params())
        self.ctx.emit(Planned(study=name, storage=storage, knobs=len(space.knobs),
                              size=space.size(), sampler=type(sampler).__name__,
                              requeued=tuple(requeued), finished=len(self.search.done()),
                              total=self.search.total()))
        return requeued

    def _lock_sampler(self, sampler: optuna.samplers.BaseSampler) -> None:
        """The grid sampler's after_trial reads every trial, the running ones too: with one
        loop per GPU it must not run while another GPU's trial is being given its parameters
        (half a point breaks its tree: "param_name mismatch"). Suggesting holds the lock."""
        after_trial = sampler.after_trial
        lock = self.search.lock

        def locked(*args: object, **kwargs: object) -> None:
            with lock:
                after_trial(*args, **kwargs)  # type: ignore[arg-type]

        sampler.after_trial = locked  # type: ignore[method-assign]

    def _check_gpus(self) -> None:
        gpus = self.o.gpus
        if not gpus:
            return
        if len(set(gpus)) != len(gpus):
            raise TuneError(f"--gpus names a GPU twice: {','.join(map(str, gpus))}")
        platform = self.ctx.platform
        if platform.kind == "cpu" and not self.o.allow_test_knobs:
            raise TuneError("--gpus needs a GPU: this tune runs on the CPU")
        count = platform.device_count
        if platform.kind != "cpu" and any(g < 0 or g >= count for g in gpus):
            raise TuneError(f"--gpus {','.join(map(str, gpus))}: torch sees {count} GPU(s), "
                            f"numbered 0 to {count - 1}")

    # --- batch sizes -----------------------------------------------------------------------
    def _searches(self, name: str) -> bool:
        """Whether the requested space could hold the knob `name` (before planning it)."""
        from rocmdoctor.tuners import knobs as kb

        if self.o.space in kb.SPACES:
            return any(self.o.space in k.spaces for k in kb.knobs_named(name))
        return name in [n.strip() for n in self.o.space.split(",")]

    def _batch_sizes(self) -> BatchSearch:
        """The batch sizes to search: the user's list, none with --keep-batch-size, else the
        user's batch and its doublings up to the largest that fits (tuners/batch.py)."""
        spec = self.o.spec
        if self.o.batch_sizes or self.o.keep_batch_size or not self._searches("batch_size"):
            return BatchSearch(sizes=tuple(self.o.batch_sizes),
                               how="given" if self.o.batch_sizes else "kept")
        if self.ctx.platform.kind == "cpu":
            return BatchSearch(sizes=tuple(batch.cpu_choices(spec.batch_size)),
                               how="cpu-doublings")
        from rocmdoctor.tuners.codec import batch_search_dict, batch_search_from, platform_dict

        path = batch.cache_path(os.path.join(sd.cache_dir(self.ctx.env), "batch"),
                                spec.to_dict(), platform_dict(self.ctx.platform))
        cached = batch.load(path)
        if cached is not None:
            found = batch_search_from({**cached, "cached": True})
            self.ctx.emit(BatchSizesChosen(sizes=found.sizes, cached=True,
                                           message=found.message))
            return found
        found = self._find_max_batch()
        if found.failure is None:
            batch.save(path, batch_search_dict(found))
        self.ctx.emit(BatchSizesChosen(sizes=found.sizes, cached=False, message=found.message,
                                       stopped_early=found.failure is not None))
        return found

    def _find_max_batch(self) -> BatchSearch:
        from rocmdoctor.tuners.bench.maxbatch import find_max_batch

        spec = self.o.spec
        device = self.runner.gpu_env(self.o.gpus[0] if self.o.gpus else None)
        started = time.monotonic()
        search_end = self.ctx.budget.batch_search_end()  # its share, from the command's start

        def runner(probe: BenchSpec) -> TrialOutcome:
            room = min(search_end - time.monotonic(), self.ctx.budget.hard_left())
            if room < 10.0:
                return TrialOutcome("budget", None, "not run: the max-batch search may take "
                                    f"{BATCH_SEARCH_SHARE:.0%} of the budget", "", None, 0.0)
            return run_bench_child(probe, device, min(300.0, room), base_env=self.ctx.env,
                                   python=self.o.python, cancel=self.ctx.cancel,
                                   on_event=self.runner.phases(f"batch {probe.batch_size}"))

        def on_probe(size: int, outcome: TrialOutcome) -> None:
            self.ctx.emit(BatchProbed(batch=size, state=outcome.state, wall_s=outcome.wall_s,
                                      time_left=self.ctx.budget.left()))

        self.ctx.emit(BatchSearchStarted(start=spec.batch_size,
                                         limit=spec.batch_size * batch.LIMIT_FACTOR))
        found = find_max_batch(spec, runner, limit=spec.batch_size * batch.LIMIT_FACTOR,
                               on_probe=on_probe)
        sizes = batch.choices(spec.batch_size, found.largest_fit,
                              limit_reached=found.first_oom is None)
        return BatchSearch(sizes=tuple(sizes), how="max-batch search",
                           largest_fit=found.largest_fit, first_oom=found.first_oom,
                           probes=tuple(found.probes), message=found.message(),
                           failure=found.failure.state if found.failure else None,
                           seconds=round(time.monotonic() - started, 1))

    # --- result ----------------------------------------------------------------------------
    def _result(self, name: str, storage: str, confirmation: Confirmation,
                requeued: list[int]) -> TuneResult:
        warnings = environment_warnings(self.ctx.env)
        if requeued:
            warnings.append(f"trial(s) {', '.join(map(str, requeued))} were interrupted last "
                            "time and ran again")
        study = self.ctx.the_study()
        return build(
            study=Study(name=name, storage=storage, dir=self.ctx.study_dir,
                        sampler=type(study.sampler).__name__, seed=self.o.seed),
            spec=self.o.spec, platform=self.ctx.platform, space=self.ctx.the_space().info(),
            budget_s=self.o.budget_s, elapsed_s=self.ctx.budget.elapsed(),
            trials=self.search.trials(), baseline=self.search.baseline(),
            confirmation=confirmation, stopped=self.search.stopped,
            stopped_why=STOPPED.get(self.search.stopped or "", ""),
            batch_search=self.batch_search, failure=self.search.failure,
            recovery=self.proof.recovery, warnings=warnings)

    def _clean(self, result: TuneResult) -> None:
        """Keep the tuned databases of the baseline and the confirmed candidates only."""
        conf = result.confirmation
        keep = {conf.baseline_trial} | {c.trial for c in conf.candidates}
        for t in result.trials:
            path = t.dir
            if t.number in keep or not path or not os.path.isdir(path):
                continue
            if os.path.dirname(os.path.dirname(path)) == self.ctx.study_dir:
                shutil.rmtree(path, ignore_errors=True)


def run_tune(options: TuneOptions, env: Mapping[str, str],
             on_event: Optional[Listener] = None) -> TuneResult:
    """Tune and return the result; TuneError for a one-line failure, KeyboardInterrupt passes
    through (the study keeps every finished trial)."""
    return Tuner(options, env, on_event).run()
