"""What every job of one tune shares: the options, the environment the trials inherit, the
budget, where progress goes, Ctrl-C, and, once known, the platform, the search space and the
study."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.budget import Budget
from rocmdoctor.tuners.events import Event, Listener
from rocmdoctor.tuners.model import Platform

if TYPE_CHECKING:
    import optuna

    from rocmdoctor.tuners.space import SearchSpace


class TuneError(Exception):
    """The tune cannot start or go on: one line for the user (exit 2)."""


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


def _quiet(event: Event) -> None:
    pass


@dataclass
class Context:
    options: TuneOptions
    env: Mapping[str, str]
    emit: Listener = _quiet
    budget: Budget = field(default_factory=lambda: Budget(900.0))
    cancel: threading.Event = field(default_factory=threading.Event)  # Ctrl-C: stop now
    platform: Platform = field(default_factory=lambda: Platform(kind="cpu"))
    space: Optional[SearchSpace] = None
    study: Optional[optuna.Study] = None
    study_dir: str = ""

    @classmethod
    def of(cls, options: TuneOptions, env: Mapping[str, str],
           emit: Optional[Listener] = None) -> Context:
        return cls(options=options, env=dict(env), emit=emit or _quiet,
                   budget=Budget(options.budget_s, options.started_at))

    def the_space(self) -> SearchSpace:
        assert self.space is not None, "the space is planned before it is searched"
        return self.space

    def the_study(self) -> optuna.Study:
        assert self.study is not None, "the study is open before it is searched"
        return self.study

    def confirm_runs(self) -> list[dict[str, Any]]:
        """The confirmation's runs so far, as the study keeps them."""
        return list(self.the_study().user_attrs.get("confirm_runs", []))
