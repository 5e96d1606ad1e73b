"""What a tune reports while it runs: one frozen dataclass per kind of event, in the order a
tune sends them. The command line (rocmdoctor.cli.tune Progress) turns each into a line on
stderr; a test or another front end may take them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union


@dataclass(frozen=True)
class Probing:
    """The platform probe starts: the Python that will train is asked what it runs on."""

    python: str
    timeout_s: float


@dataclass(frozen=True)
class BatchSearchStarted:
    start: int  # your batch size
    limit: int


@dataclass(frozen=True)
class BatchProbed:
    batch: int
    state: str
    wall_s: float
    time_left: float


@dataclass(frozen=True)
class BatchSizesChosen:
    sizes: tuple[int, ...]
    cached: bool
    message: Optional[str] = None
    stopped_early: bool = False  # a probe ended the search before its end


@dataclass(frozen=True)
class Planned:
    """The study is open: what is searched, with which sampler."""

    study: str
    storage: str
    knobs: int
    size: int
    sampler: str
    requeued: tuple[int, ...]
    finished: int
    total: Optional[int]


@dataclass(frozen=True)
class Phase:
    """What a benchmark child is doing now: `event` is the worker's last protocol event (None:
    it is starting), with its step and window numbers."""

    who: str
    event: Optional[str] = None
    step: Optional[int] = None
    of: Optional[int] = None
    index: Optional[int] = None
    compile: bool = False


@dataclass(frozen=True)
class TrialStarted:
    number: int
    params: Mapping[str, str]
    changes: Mapping[str, str]
    gpu: Optional[int]
    finished: int  # trials finished or started before it
    total: Optional[int]
    time_left: float


@dataclass(frozen=True)
class TrialEnded:
    number: int
    params: Mapping[str, str]
    changes: Mapping[str, str]
    gpu: Optional[int]
    state: str
    message: str
    throughput: Optional[float]
    unit: Optional[str]
    best: Optional[float]
    finished: int
    total: Optional[int]
    time_left: float
    survivors: int = 0
    known_cause: Optional[str] = None
    input_share: Optional[float] = None  # with --data: the device's wait for input
    input_verdict: Optional[str] = None


@dataclass(frozen=True)
class TrialRetried:
    number: int
    message: str
    why: str


@dataclass(frozen=True)
class TrialNotStarted:
    number: int
    message: str
    gpu: Optional[int]
    changes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentBroke:
    message: str
    trials: tuple[int, ...]


@dataclass(frozen=True)
class RecoveryStarted:
    trial: int
    time_left: float


@dataclass(frozen=True)
class RecoveryEnded:
    state: str
    message: str
    throughput: Optional[float]
    time_left: float


@dataclass(frozen=True)
class ConfirmStarted:
    trials: tuple[int, ...]  # your settings first
    rounds: int


@dataclass(frozen=True)
class ConfirmRan:
    trial: int
    round: int
    state: str
    throughput: Optional[float]
    message: str
    baseline: bool
    time_left: float


@dataclass(frozen=True)
class Finished:
    result: Any  # the TuneResult


Event = Union[Probing, BatchSearchStarted, BatchProbed, BatchSizesChosen, Planned, Phase,
              TrialStarted, TrialEnded, TrialRetried, TrialNotStarted, EnvironmentBroke,
              RecoveryStarted, RecoveryEnded, ConfirmStarted, ConfirmRan, Finished]
Listener = Callable[[Event], None]


def phase_of(who: str, event: Mapping[str, Any], compile_: bool) -> Phase:
    """A worker's protocol event (rocmdoctor.tuners.bench.child) as a Phase."""
    def number(key: str) -> Optional[int]:
        value = event.get(key)
        return int(value) if isinstance(value, (int, float)) else None

    return Phase(who=who, event=str(event.get("event")) if event.get("event") else None,
                 step=number("step"), of=number("of"), index=number("index"), compile=compile_)
