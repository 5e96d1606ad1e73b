"""Running one configuration of a tune: the benchmark child (rocmdoctor.tuners.bench.child)
with the trial's environment over the tune's, on the GPU a trial is given, never past the
budget's end, TunableOp's tuning run first where it has not run yet, and the child's own
events forwarded as progress (a long quiet phase, torch's import or a compile, is then
reported while it lasts)."""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Any, Callable, Optional

from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners.bench.child import TrialOutcome, run_bench_child
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.context import Context
from rocmdoctor.tuners.events import Phase, phase_of
from rocmdoctor.tuners.model import Plan, Trial

WindowCheck = Callable[[int, float], bool]


class TrialRunner:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def gpu_env(self, gpu: Optional[int]) -> dict[str, str]:
        """The variable that gives a child GPU `gpu` (torch's numbering here) alone."""
        if gpu is None:
            return {}
        rocm = self.ctx.platform.kind == "rocm"
        var = "HIP_VISIBLE_DEVICES" if rocm else "CUDA_VISIBLE_DEVICES"
        current = self.ctx.env.get(var) or (self.ctx.env.get("CUDA_VISIBLE_DEVICES")
                                            if rocm else None)
        visible = [v.strip() for v in current.split(",") if v.strip()] if current else []
        return {var: visible[gpu] if gpu < len(visible) else str(gpu)}

    def timeout(self, plan: Plan, baseline: Optional[Trial]) -> float:
        """A trial's time limit: --trial-timeout, else 15 minutes before your settings have
        run, then six times their run (2 to 20 minutes), doubled to compile or tune."""
        if self.ctx.options.trial_timeout_s:
            return self.ctx.options.trial_timeout_s
        limit = 900.0 if baseline is None else \
            min(1200.0, max(120.0, 6 * (baseline.wall_s or 60)))
        return limit * (2 if plan.tunableop or plan.spec.compile else 1)

    def phases(self, who: str) -> Callable[[dict[str, Any]], None]:
        """The child's protocol events as Phase events; says at once that `who` starts."""
        self.ctx.emit(Phase(who=who, compile=self.ctx.options.spec.compile))

        def forward(event: dict[str, Any]) -> None:
            self.ctx.emit(phase_of(who, event, self.ctx.options.spec.compile))
        return forward

    def child(self, spec: BenchSpec, env_patch: dict[str, str], timeout: float, who: str,
              on_window: Optional[WindowCheck] = None) -> TrialOutcome:
        """One benchmark child, cut at the budget's end."""
        return run_bench_child(spec, env_patch, self.ctx.budget.child_timeout(timeout),
                               on_window=on_window, base_env=self.ctx.env,
                               python=self.ctx.options.python, cancel=self.ctx.cancel,
                               on_event=self.phases(who))

    def run(self, plan: Plan, timeout: float, on_window: Optional[WindowCheck] = None,
            gpu: Optional[int] = None, who: str = "a trial"
            ) -> tuple[TrialOutcome, Optional[float]]:
        """Run one configuration; returns how it ended and its TunableOp tuning time (None
        when none ran)."""
        for path in plan.dirs.values():
            os.makedirs(path if not path.endswith(".csv") else os.path.dirname(path),
                        exist_ok=True)
        device = self.gpu_env(gpu)
        env = {**plan.env, **device}
        one_time: Optional[float] = None
        if plan.tunableop:
            pattern = plan.dirs["PYTORCH_TUNABLEOP_FILENAME"].replace("%d", "*")
            if not glob.glob(pattern):
                tuning = self.child(dataclasses.replace(plan.spec, steps=1, warmup=1),
                                    {**sp.tunableop_env(plan, True), **device}, timeout,
                                    f"{who} (TunableOp tuning)")
                one_time = tuning.wall_s
                if tuning.state != "ok":
                    return tuning, one_time
            env = {**sp.tunableop_env(plan, False), **device}
        return self.child(plan.spec, env, timeout, who, on_window), one_time
