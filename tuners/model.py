"""The tuner's nouns, as frozen dataclasses: what the tune ran on, what it searched, each
trial and how it ended, what the confirmation measured and what it concluded.

The search, the confirmation and the renderers (summary, HTML, export) pass these, never dicts
read by string keys. They become the JSON of `--output` (schema rocmdoctor.tune/1) and are
read back from it in one place, rocmdoctor.tuners.codec, at the edge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.tuners.bench.spec import BenchSpec


@dataclass(frozen=True)
class Platform:
    """What the probe child found: the platform kind and the versions knobs depend on."""

    kind: str  # rocm | cuda | cpu
    torch: Optional[str] = None
    hip: Optional[str] = None
    cuda: Optional[str] = None
    device: str = ""
    arch: Optional[str] = None  # gfx942 (feature suffixes dropped) or sm_90
    cpu_count: int = 1
    torch_threads: Optional[int] = None
    device_count: int = 0  # GPUs torch sees (0 on the CPU)
    torchvision: Optional[str] = None  # its version in the Python that trains (not recorded)

    @property
    def versions(self) -> str:
        """"ROCm 6.4, torch 2.9.1" as the summary and the page head show them."""
        return ", ".join(x for x in (f"ROCm {self.hip}" if self.hip else "",
                                     f"CUDA {self.cuda}" if self.cuda else "",
                                     f"torch {self.torch}" if self.torch else "") if x)

    @property
    def shown(self) -> str:
        """The device a result names: the GPU, else the platform kind."""
        return self.device or self.kind


@dataclass(frozen=True)
class Knob:
    """One searchable setting (the table: rocmdoctor.tuners.knobs). `choices` are (label,
    value); the first is the default."""

    name: str
    title: str
    kind: str
    choices: tuple[tuple[str, Any], ...]
    platforms: tuple[str, ...]
    spaces: tuple[str, ...]
    source: str
    effect: str
    # platform -> (minimum torch, minimum ROCm/HIP of the torch build or None)
    min_versions: tuple[tuple[str, str, Optional[str]], ...] = ()
    uses: tuple[str, ...] = ()  # model operations it acts on; () = any model
    requires: tuple[tuple[str, str], ...] = ()  # (knob, label) that must hold in the trial
    changes_numerics: bool = False
    one_time_cost: bool = False  # first use tunes or compiles (reported apart)
    test_only: bool = False
    # The choice its source expects to be faster in most training workloads: the tune tries
    # it (with every other such choice) right after your settings, then searches. For the
    # batch size, "max" (the largest given); the precision is seeded per half precision.
    fast: Optional[str] = None
    # How its choices are found where the table cannot list them: "precisions" (those this
    # platform runs), "batch_sizes" (yours and the sizes to search), "thread_counts" (halvings
    # of the CPU count); None: the table's own choices.
    choices_from: Optional[str] = None
    kept_by: Optional[str] = None  # the tune option that keeps your value ("keep_precision")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.choices)

    def value(self, label: str) -> Any:
        for choice_label, value in self.choices:
            if choice_label == label:
                return value
        raise KeyError(f"{self.name} has no choice {label!r}")


@dataclass(frozen=True)
class KnobInfo:
    """A searched knob as a result records it."""

    name: str
    title: str
    kind: str
    choices: tuple[str, ...]
    baseline: str
    changes_numerics: bool
    one_time_cost: bool
    effect: str
    source: str


@dataclass(frozen=True)
class SpaceInfo:
    """The space a result searched: its knobs, and those not searched with the reason."""

    name: str
    size: int
    knobs: tuple[KnobInfo, ...]
    skipped: tuple[tuple[str, str], ...]  # (knob, reason)
    never_searched: tuple[tuple[str, str, str], ...]  # (variable, reason, source)

    def knob(self, name: str) -> Optional[KnobInfo]:
        return next((k for k in self.knobs if k.name == name), None)

    def changes(self, params: Mapping[str, str]) -> dict[str, str]:
        """What a point changes from your settings, knob by knob, in the point's order."""
        return {k: v for k, v in params.items()
                if (info := self.knob(k)) is not None and info.baseline != v}


@dataclass(frozen=True)
class Plan:
    """One configuration to run: a BenchSpec, the environment patch, whether TunableOp tunes
    first, and the trial's own database folders."""

    spec: BenchSpec
    env: dict[str, str]
    tunableop: bool
    dirs: dict[str, str]


@dataclass(frozen=True)
class Trial:
    """One trial of the study as the tune reads it back: its point, how it ended, its figures."""

    number: int
    params: Mapping[str, str]
    state: str  # ok oom crashed timeout pruned error interrupted duplicate not-run waiting
    message: str = ""
    stderr_tail: str = ""
    baseline: bool = False
    retry_of: Optional[int] = None
    seed: bool = False
    gpu: Optional[int] = None
    started_at: Optional[float] = None
    wall_s: Optional[float] = None
    one_time_s: Optional[float] = None
    dir: Optional[str] = None
    env: Mapping[str, str] = field(default_factory=dict)
    precision: Optional[str] = None
    throughput: Optional[float] = None
    p10: Optional[float] = None
    p90: Optional[float] = None
    cv: Optional[float] = None
    unit: Optional[str] = None
    memory_bytes: Optional[float] = None
    memory_kind: Optional[str] = None
    energy_per_sample_j: Optional[float] = None
    units_per_sample: Optional[int] = None
    optimizer_class: Optional[str] = None
    first_step_s: Optional[float] = None
    windows: tuple[float, ...] = ()
    unsupported: Mapping[str, str] = field(default_factory=dict)
    visible_devices: Mapping[str, str] = field(default_factory=dict)
    survivors: Optional[int] = None  # processes that outlived it (then killed)
    retried: Optional[Mapping[str, str]] = None  # the first crash, when it ran once more
    known_cause: Optional[Mapping[str, str]] = None  # a cause outside rocmdoctor, named
    environment: bool = False  # crashed because the environment broke, not its settings
    # With --data: the DataLoader arguments it ran, and the share of the measured time the
    # device waited for input, with its verdict (rocmdoctor.tuners.bench.feed)
    loader: Optional[Mapping[str, Any]] = None
    input_share: Optional[float] = None
    input_verdict: Optional[str] = None

    @property
    def measured(self) -> bool:
        return self.state == "ok" and bool(self.throughput)

    @property
    def energy_per_unit(self) -> Optional[float]:
        return energy_per_unit(self.energy_per_sample_j, self.units_per_sample, self.unit)


def energy_per_unit(energy_per_sample_j: Optional[float], units_per_sample: Optional[int],
                    unit: Optional[str]) -> Optional[float]:
    """Joules per unit of throughput (per image, per token) from energy per sample (per
    sequence for a language model)."""
    if energy_per_sample_j is None or not math.isfinite(float(energy_per_sample_j)):
        return None
    units = units_per_sample
    if units is None:  # a result from before units were kept: a sample is an image
        if unit not in (None, "images", "samples"):
            return None
        units = 1
    return float(energy_per_sample_j) / max(1, int(units))


@dataclass(frozen=True)
class ConfirmRun:
    """One re-measurement of the confirmation (or of a resumed tune's earlier one)."""

    trial: int
    round: int
    throughput: Optional[float]
    state: str = "ok"
    at: Optional[float] = None  # epoch seconds at its end
    wall_s: Optional[float] = None
    energy_per_sample_j: Optional[float] = None
    message: Optional[str] = None


@dataclass(frozen=True)
class Payback:
    one_time_s: float
    steps: int
    minutes: float


@dataclass(frozen=True)
class Candidate:
    """A configuration re-measured against your settings, and what that showed."""

    trial: int
    params: Mapping[str, str]
    precision: Optional[str]
    search_throughput: Optional[float]
    speedup: Optional[float]
    low: Optional[float]
    high: Optional[float]
    pairs: int
    winner: bool
    why: str
    changes: Mapping[str, str] = field(default_factory=dict)
    batch_size: Optional[int] = None
    energy_per_unit_j: Optional[float] = None
    payback: Optional[Payback] = None


@dataclass(frozen=True)
class Confirmation:
    # done | failed (its runs crashed) | budget (the budget ended first) | not-run (the
    # environment broke) | no-baseline | nothing-to-confirm
    status: str
    candidates: tuple[Candidate, ...] = ()
    runs: tuple[tuple[int, int, Optional[float]], ...] = ()  # (trial, round, throughput)
    noise_cv: Optional[float] = None
    rounds: int = 0
    baseline_trial: Optional[int] = None
    reason: Optional[str] = None
    timed_runs: tuple[ConfirmRun, ...] = ()
    baseline_energy_per_unit_j: Optional[float] = None


@dataclass(frozen=True)
class PassedOver:
    """The fastest winner, passed over for a simpler one that it is not measurably faster
    than."""

    trial: int
    ratio: float
    low: Optional[float]
    high: Optional[float]
    why: str
    changes: int
    its_changes: int


@dataclass(frozen=True)
class Verdict:
    winner: bool
    summary: str
    best_overall: Optional[Candidate]
    best_same_precision: Optional[Candidate]
    best_same_batch: Optional[Candidate]
    passed_over: Optional[PassedOver]
    precision: str
    batch_size: Optional[int]
    same_batch_known: bool = True  # False in results from before it was kept


@dataclass(frozen=True)
class Effect:
    """A knob value's marginal effect over the finished trials."""

    knob: str
    value: str
    baseline: bool
    n_with: int
    n_without: int
    mean_with: float
    mean_without: float
    effect: float
    thin: bool = False
    contradicts: bool = False
    note: str = ""


@dataclass(frozen=True)
class Apply:
    """How to apply a configuration: variables, Python lines, notes."""

    env: Mapping[str, str]
    python: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Study:
    name: str
    storage: str
    dir: str
    sampler: str
    seed: int


@dataclass(frozen=True)
class Search:
    stopped: Optional[str]  # why the search ended (rocmdoctor.tuners.search.STOPPED)
    why: str
    queued: int


@dataclass(frozen=True)
class BatchSearch:
    """How the batch sizes to search were found."""

    sizes: tuple[int, ...]
    how: str  # given | kept | cpu-doublings | max-batch search | not planned
    largest_fit: Optional[int] = None
    first_oom: Optional[int] = None
    probes: tuple[tuple[int, str], ...] = ()
    message: Optional[str] = None
    failure: Optional[str] = None  # the state of a probe that stopped the search early
    seconds: Optional[float] = None
    cached: Optional[bool] = None


@dataclass(frozen=True)
class Failure:
    """Why the tune could not reach a verdict."""

    kind: str  # baseline | environment | too-short
    stop: str
    message: str
    state: Optional[str] = None
    trial: Optional[int] = None
    trials: tuple[int, ...] = ()
    stderr_tail: str = ""
    reproduce: Optional[str] = None


@dataclass(frozen=True)
class Recovery:
    """Your settings run once more after the environment broke."""

    state: str
    message: str
    throughput: Optional[float] = None
    wall_s: Optional[float] = None
    survivors: Optional[int] = None


@dataclass(frozen=True)
class TuneResult:
    """Everything one `rocmdoctor tune` found (schema rocmdoctor.tune/1)."""

    schema: str
    tool_version: str
    created_at: str
    study: Study
    workload: BenchSpec
    platform: Platform
    space: SpaceInfo
    budget_s: float
    elapsed_s: float
    warnings: tuple[str, ...]
    trials: tuple[Trial, ...]
    baseline: Optional[Trial]
    confirmation: Confirmation
    verdict: Verdict
    search: Search
    batch_search: BatchSearch
    effects: tuple[Effect, ...]
    apply: Optional[Apply]
    failure: Optional[Failure] = None
    recovery: Optional[Recovery] = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know

    def trial(self, number: int) -> Trial:
        return next(t for t in self.trials if t.number == number)

    @property
    def unit(self) -> str:
        """What throughput counts (images, tokens, samples)."""
        if self.baseline is not None and self.baseline.unit:
            return self.baseline.unit
        return next((t.unit for t in self.trials if t.unit), "samples")

    @property
    def concluded(self) -> bool:
        """Whether the tune reached a verdict from measurements: not when your settings did
        not finish, or the confirmation could not run (the command exits 1 then)."""
        kind = self.failure.kind if self.failure else None
        return kind not in ("baseline", "too-short") and \
            self.confirmation.status not in ("failed", "not-run")
