"""The search space: which knobs apply here, how Optuna's point becomes a trial (a BenchSpec
plus an environment patch), and the seed points tried first.

Data flows one way: `plan_space` reads the knob table (`rocmdoctor.tuners.knobs`) with the
platform probe, the user's spec and environment; `suggest` asks Optuna for one point;
`materialize` turns it into a BenchSpec plus an environment patch. Nothing here runs a
benchmark or touches the study's storage (rocmdoctor.tuners.study does).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor.tuners import knobs as kb
from rocmdoctor.tuners import rules
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import Knob, KnobInfo, Plan, Platform, SpaceInfo

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class PlannedKnob:
    knob: Knob
    labels: tuple[str, ...]
    baseline: str
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.knob.name

    def value(self, label: str) -> Any:
        return self.values[label] if label in self.values else self.knob.value(label)


@dataclass(frozen=True)
class SearchSpace:
    name: str
    knobs: tuple[PlannedKnob, ...]
    skipped: tuple[tuple[str, str], ...]

    def get(self, name: str) -> Optional[PlannedKnob]:
        return next((pk for pk in self.knobs if pk.name == name), None)

    def baseline_params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        for pk in self.knobs:
            if self._required_ok(pk, params):
                params[pk.name] = pk.baseline
        return params

    def _required_ok(self, pk: PlannedKnob, params: Mapping[str, str]) -> bool:
        return all(params.get(name, "") == label for name, label in pk.knob.requires
                   if self.get(name) is not None)

    def size(self) -> int:
        total = 1
        for pk in self.knobs:
            gate = next((self.get(n) for n, _ in pk.knob.requires if self.get(n)), None)
            if gate is None:
                total *= len(pk.labels)
            else:  # exactly 1/len(gate) of the points take the required label
                total = total // len(gate.labels) * (len(pk.labels) + len(gate.labels) - 1)
        return total

    def signature(self) -> str:
        data = [(pk.name, pk.labels, pk.baseline) for pk in self.knobs]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]

    def info(self) -> SpaceInfo:
        """The space as a result records it."""
        return SpaceInfo(
            name=self.name, size=self.size(),
            knobs=tuple(KnobInfo(name=pk.name, title=pk.knob.title, kind=pk.knob.kind,
                                 choices=pk.labels, baseline=pk.baseline,
                                 changes_numerics=pk.knob.changes_numerics,
                                 one_time_cost=pk.knob.one_time_cost, effect=pk.knob.effect,
                                 source=pk.knob.source) for pk in self.knobs),
            skipped=self.skipped, never_searched=kb.NEVER_SEARCHED)


def _in_space(knob: Knob, space: str, names: Sequence[str]) -> bool:
    if names:
        return knob.name in names
    return space in knob.spaces


def workload_parts(spec: BenchSpec) -> tuple[str, ...]:
    """The parts of the workload beside its model: reading data (--data), data parallelism
    (--nproc)."""
    return tuple(part for part, present in (("data", bool(spec.data)),
                                            ("ddp", spec.nproc > 1)) if present)


def _part_missing(knob: Knob, spec: BenchSpec) -> Optional[str]:
    """Why a knob of a workload part (kb.WORKLOAD_PARTS) cannot act: the part is missing."""
    parts = [use for use in knob.uses if use in kb.WORKLOAD_PARTS]
    if not parts or set(parts) & set(workload_parts(spec)):
        return None
    return kb.WORKLOAD_PARTS[parts[0]]


def workload_uses(spec: BenchSpec) -> Optional[tuple[str, ...]]:
    """What the workload spends its time in: its model's operations, and its parts; None for
    a model nobody knows (every knob may act on it)."""
    uses = kb.MODEL_USES.get(spec.model)
    if uses is None:
        return None
    return (*uses, *workload_parts(spec))


def _why_not(knob: Knob, platform: Platform, spec: BenchSpec,
             env: Mapping[str, str]) -> Optional[str]:
    if platform.kind not in knob.platforms:
        named = kb.knobs_named(knob.name)
        kinds = [p for p in kb.PLATFORMS if any(p in k.platforms for k in named)]
        return "only on " + ", ".join("ROCm" if p == "rocm" else p.upper() for p in kinds)
    gap = rules.version_gap(knob, platform)
    if gap:
        return gap
    missing = _part_missing(knob, spec)
    if missing:
        return missing
    uses = workload_uses(spec)
    if knob.uses and uses is not None and not set(knob.uses) & set(uses):
        return f"{spec.model} has no {'/'.join(knob.uses)} work for it to act on"
    if knob.kind == kb.TUNABLEOP and env.get("PYTORCH_TUNABLEOP_ENABLED"):
        return "your environment already sets PYTORCH_TUNABLEOP_ENABLED"
    if knob.kind == kb.ALLOC and "max_split_size_mb" in env.get(rules.alloc_var(platform, env),
                                                                 ""):
        return ("your allocator setting has max_split_size_mb, which misbehaves with "
                f"expandable_segments ({kb.ALLOC_SPLIT_GROWTH}, {kb.ALLOC_ROCM_ZEROS})")
    return None


Choices = tuple[tuple[str, ...], str, dict[str, Any], Optional[str]]  # labels, baseline,
# the value of each label, why it is not searched (None: it is)


def _batch_sizes(knob: Knob, spec: BenchSpec, platform: Platform, env: Mapping[str, str],
                 batch_sizes: Sequence[int]) -> Choices:
    """Yours and the sizes the tune searches (found by the max-batch search, or given)."""
    if not batch_sizes:
        return (), "", {}, f"no batch size but yours ({spec.batch_size}) to try here"
    sizes = sorted(set(batch_sizes) | {spec.batch_size})
    return tuple(str(b) for b in sizes), str(spec.batch_size), {str(b): b for b in sizes}, None


def _thread_counts(knob: Knob, spec: BenchSpec, platform: Platform, env: Mapping[str, str],
                   batch_sizes: Sequence[int]) -> Choices:
    """The count in effect, then halvings of the CPU count down to 1."""
    current = env.get("OMP_NUM_THREADS", "").strip()
    effective = int(current) if current.isdigit() else (platform.torch_threads or
                                                         platform.cpu_count)
    counts: list[int] = []
    n = platform.cpu_count
    while n >= 1 and len(counts) < 4:
        if n != effective and n not in counts:
            counts.append(n)
        n //= 2
    values: dict[str, Any] = {kb.DEFAULT: {}}
    values.update({str(c): {"OMP_NUM_THREADS": str(c)} for c in counts})
    return tuple(values), kb.DEFAULT, values, None if counts else "only one thread count here"


def _precisions(knob: Knob, spec: BenchSpec, platform: Platform, env: Mapping[str, str],
                batch_sizes: Sequence[int]) -> Choices:
    """The precisions this platform runs (and your own, first if it is not among them)."""
    labels = [p for p in knob.labels if p in kb.PRECISION_SUPPORT[platform.kind]
              and _sm_ok(p, platform)] or [spec.precision]
    if spec.precision not in labels:
        labels.insert(0, spec.precision)
    return tuple(labels), spec.precision, {}, None


def _worker_counts(knob: Knob, spec: BenchSpec, platform: Platform, env: Mapping[str, str],
                   batch_sizes: Sequence[int]) -> Choices:
    """Yours (0 unless --set num_workers), then 0 and doublings from 2 up to the CPUs this
    process may run on (its affinity mask, as the probe counted them), and that count."""
    current = int(spec.settings.get("num_workers", 0) or 0)
    counts = [0]
    n = 2
    while n < platform.cpu_count and len(counts) < 4:
        counts.append(n)
        n *= 2
    counts.append(platform.cpu_count)
    labels = [str(current)] + [str(c) for c in dict.fromkeys(counts) if c != current]
    values: dict[str, Any] = {label: int(label) for label in labels}
    return tuple(labels), str(current), values, None


def _gpu_decoders(knob: Knob, spec: BenchSpec, platform: Platform, env: Mapping[str, str],
                  batch_sizes: Sequence[int]) -> Choices:
    """The table's choices where the Python that trains has torchvision to decode with."""
    if not platform.torchvision:
        return (), "", {}, "needs torchvision (torchvision.io.decode_jpeg) in the Python " \
            "that trains"
    labels, baseline = _static_choices(knob, spec, platform, env)
    return labels, baseline, {}, None


CHOICES_FROM = {"batch_sizes": _batch_sizes, "thread_counts": _thread_counts,
                "precisions": _precisions, "worker_counts": _worker_counts,
                "gpu_decoders": _gpu_decoders}


def _static_choices(knob: Knob, spec: BenchSpec, platform: Platform,
                    env: Mapping[str, str]) -> tuple[tuple[str, ...], str]:
    """The table's choices that differ from what you run now, yours first."""
    labels = list(knob.labels)
    baseline = labels[0]
    if knob.kind == kb.SPEC:
        current = getattr(spec, knob.name)
        baseline = next(label for label, value in knob.choices if value == current)
        return tuple(labels), baseline
    if knob.kind == kb.SETTING:
        user = spec.settings.get(knob.name)
        effective = {label: (value if value is not None else
                             (user if user is not None else rules.setting_default(knob.name,
                                                                                  platform)))
                     for label, value in knob.choices}
        keep = [baseline] + [label for label in labels[1:]
                             if effective[label] != effective[baseline]]
        return tuple(keep), baseline
    if knob.kind == kb.ENV:
        keep = [baseline] + [label for label, value in knob.choices[1:]
                             if any(env.get(var) != v for var, v in value.items())]
        return tuple(keep), baseline
    if knob.kind == kb.ALLOC:
        current = env.get(rules.alloc_var(platform, env), "")
        keep = [baseline] + [label for label, value in knob.choices[1:]
                             if value not in current.replace(" ", "").split(",")]
        return tuple(keep), baseline
    return tuple(labels), baseline


def _sm_ok(precision: str, platform: Platform) -> bool:
    need = kb.CUDA_MIN_SM.get(precision)
    if platform.kind != "cuda" or need is None:
        return True
    match = re.match(r"sm_(\d+)", platform.arch or "")
    return match is None or int(match.group(1)) >= need


def space_names(space: str, allow_test_knobs: bool = False) -> list[str]:
    """The knob names `--space` lists ([] for default, env and full); ValueError for a name
    no knob has (said before anything runs)."""
    names = [] if space in kb.SPACES else [n.strip() for n in space.split(",") if n.strip()]
    known = set(kb.knob_names()) | ({"test_fault"} if allow_test_knobs else set())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown knob(s) {', '.join(unknown)}; known: "
                         f"{', '.join(kb.knob_names())}")
    return names


def _kept(knob: Knob, spec: BenchSpec, kept: Sequence[str]) -> Optional[str]:
    """Why an option the user gave keeps this knob at their value (--keep-precision)."""
    if knob.kept_by is None or knob.kept_by not in kept:
        return None
    return f"--{knob.kept_by.replace('_', '-')} keeps {getattr(spec, knob.name)}"


def _unmet(knob: Knob, spec: BenchSpec, planned: Sequence[PlannedKnob]) -> Optional[str]:
    """Why a knob that needs another's value cannot act: that one is neither searched nor
    set so by the user."""
    for req, label in knob.requires:
        if any(pk.name == req for pk in planned):
            continue
        if getattr(spec, req, None) != kb.knobs_named(req)[0].value(label):
            return f"needs {req} {label} (search it or pass --{req.replace('_', '-')})"
    return None


def plan_space(platform: Platform, spec: BenchSpec, env: Mapping[str, str],
               space: str = "default", keep_precision: bool = False,
               batch_sizes: Sequence[int] = (), allow_test_knobs: bool = False,
               keep_batch_size: bool = False) -> SearchSpace:
    """The knobs to search here, each with its choices and the user's current choice.

    `space` is default | env | full, or a comma-separated list of knob names. Raises
    ValueError for an unknown name.
    """
    names = space_names(space, allow_test_knobs)
    kept = [name for name, on in (("keep_precision", keep_precision),
                                  ("keep_batch_size", keep_batch_size)) if on]
    planned: list[PlannedKnob] = []
    skipped: dict[str, str] = {}
    for knob in kb.KNOBS:
        if not _in_space(knob, space, names) or (knob.test_only and not allow_test_knobs):
            continue
        if _part_missing(knob, spec) and not names:
            continue  # a part the workload lacks: its knobs are not even "not searched"
        if any(pk.name == knob.name for pk in planned):
            continue
        reason = _kept(knob, spec, kept) or _why_not(knob, platform, spec, env)
        if reason is None:
            reason = _unmet(knob, spec, planned)
        if reason is not None:
            skipped.setdefault(knob.name, reason)
            continue
        if knob.choices_from is not None:
            labels, baseline, values, reason = CHOICES_FROM[knob.choices_from](
                knob, spec, platform, env, batch_sizes)
        else:
            (labels, baseline), values = _static_choices(knob, spec, platform, env), {}
        if reason is None and len(labels) < 2:
            reason = "your current setting is its only choice here"
        if reason is not None:
            skipped.setdefault(knob.name, reason)
            continue
        skipped.pop(knob.name, None)
        planned.append(PlannedKnob(knob, labels, baseline, values))
    return SearchSpace(space, tuple(planned), tuple(sorted(skipped.items())))


def suggest(trial: optuna.Trial, space: SearchSpace) -> dict[str, str]:
    """Ask Optuna for one point, define-by-run: a knob whose requirement is not met this trial
    is not suggested (its baseline applies)."""
    params: dict[str, str] = {}
    for pk in space.knobs:
        if space._required_ok(pk, params):
            params[pk.name] = str(trial.suggest_categorical(pk.name, list(pk.labels)))
    return params


TrialPlan = Plan  # the name the tests and older callers know


def materialize(space: SearchSpace, params: Mapping[str, str], spec: BenchSpec,
                platform: Platform, env: Mapping[str, str], trial_dir: str,
                compile_cache: Optional[str] = None) -> Plan:
    """The BenchSpec and environment patch of one point; per-trial database folders keep
    MIOpen's and TunableOp's tuned state apart between trials. `compile_cache`, when given,
    is one TorchInductor/Triton cache shared by every trial (faster trials; their first
    step then understates the compile cost)."""
    fields: dict[str, Any] = {}
    settings = dict(spec.settings)
    patch: dict[str, str] = {}
    tunableop = False
    for pk in space.knobs:
        label = params.get(pk.name, pk.baseline)
        value = pk.value(label)
        kind = pk.knob.kind
        if kind == kb.SPEC:
            fields[pk.name] = value
        elif kind == kb.SETTING and value is not None:
            settings[pk.name] = value
        elif kind == kb.ENV:
            patch.update(value)
        elif kind == kb.ALLOC and value is not None:
            var = rules.alloc_var(platform, env)
            patch[var] = rules.merge_alloc(env.get(var, ""), value)
        elif kind == kb.TUNABLEOP:
            tunableop = bool(value)
    settings.setdefault("mfu", False)  # a trial's figures need no FLOP count or GEMM peak
    dirs: dict[str, str] = {}
    if platform.kind == "rocm":
        dirs["MIOPEN_USER_DB_PATH"] = os.path.join(trial_dir, "miopen-db")
        dirs["MIOPEN_CUSTOM_CACHE_DIR"] = os.path.join(trial_dir, "miopen-cache")
    if tunableop:
        dirs["PYTORCH_TUNABLEOP_FILENAME"] = os.path.join(trial_dir, "tunableop_results%d.csv")
    if fields.get("compile", spec.compile):
        cache = compile_cache or trial_dir
        dirs["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
        dirs["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    patch.update(dirs)
    new_spec = dataclasses.replace(spec, settings=settings, **fields)
    return Plan(new_spec, patch, tunableop, dirs)


def tunableop_env(plan: Plan, tuning: bool) -> dict[str, str]:
    """TunableOp's two runs (ROCm workload guide): tune once, then replay the results file."""
    return {**plan.env, "PYTORCH_TUNABLEOP_ENABLED": "1",
            "PYTORCH_TUNABLEOP_TUNING": "1" if tuning else "0"}


HALF_PRECISIONS = ("bf16", "fp16")


def seed_params(space: SearchSpace) -> list[dict[str, str]]:
    """The points tried right after your settings: every knob at the choice its source expects
    to be faster (`Knob.fast`), with each half precision in the space and then with your
    precision, in the order of their expected gain (a half precision halves the bytes every
    kernel moves and runs on the matrix units: docs.pytorch.org/docs/stable/amp.html; bf16
    before fp16, which needs a GradScaler and its synchronisation every step). Points equal to
    your settings, or to each other, are left out."""
    fast: dict[str, str] = {}
    for pk in space.knobs:
        if pk.knob.fast == "max":
            fast[pk.name] = max(pk.labels, key=lambda label: int(label) if label.isdigit() else 0)
        elif pk.knob.fast in pk.labels:
            fast[pk.name] = str(pk.knob.fast)
    precision = space.get("precision")
    choices: list[Optional[str]] = []
    if precision is not None:
        choices += [p for p in HALF_PRECISIONS if p in precision.labels and p != precision.baseline]
    choices.append(None)
    seeds: list[dict[str, str]] = []
    baseline = space.baseline_params()
    for half in choices:
        wanted = {**fast, **({"precision": half} if half else {})}
        params: dict[str, str] = {}
        for pk in space.knobs:
            if space._required_ok(pk, params):
                params[pk.name] = wanted.get(pk.name, pk.baseline)
        if params != baseline and params not in seeds:
            seeds.append(params)
    return seeds
