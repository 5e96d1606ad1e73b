"""A tune's result (schema rocmdoctor.tune/1) built from what the search and the proof
found: the verdict (the best overall, at your precision, at your batch size, and the one
passed over for a simpler one), how to apply the best (environment variables, the Python
lines and the notes a training script needs), the knob effects and the warnings."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor import __version__, schemas
from rocmdoctor.host import process
from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners import knobs as kb
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import (
    Apply,
    BatchSearch,
    Candidate,
    Confirmation,
    Failure,
    Platform,
    Recovery,
    Search,
    SpaceInfo,
    Study,
    Trial,
    TuneResult,
    Verdict,
)

SCHEMA = schemas.TUNE


def changes_text(changes: Mapping[str, str]) -> str:
    """What a trial changes from your settings, as key=value pairs (tune's progress too)."""
    return ", ".join(f"{k}={v}" for k, v in changes.items()) or "your settings"


NOT_EXPORTED = ("ROCMDOCTOR_TEST_FAULT",)

# Code-level knobs: the lines a training script needs ({device} is "cuda" on ROCm too: the
# HIP build reuses the torch.cuda interfaces, https://docs.pytorch.org/docs/stable/notes/hip.html).
CODE_LINES: dict[tuple[str, str], tuple[str, ...]] = {
    ("precision", "bf16"): ("with torch.autocast('{device}', dtype=torch.bfloat16):"
                           "  # around forward + loss",),
    ("precision", "fp16"): ("scaler = torch.amp.GradScaler('{device}')",
                           "with torch.autocast('{device}', dtype=torch.float16):"
                           "  # around forward + loss",
                           "scaler.scale(loss).backward(); scaler.step(optimizer); "
                           "scaler.update()"),
    ("precision", "tf32"): ("torch.backends.cuda.matmul.allow_tf32 = True",
                           "torch.backends.cudnn.allow_tf32 = True"),
    ("precision", "fp32"): ("# no autocast; PyTorch's default TF32 settings",),
    ("precision", "fp32-strict"): ("# no autocast, and TF32 off:",
                                  "torch.backends.cuda.matmul.allow_tf32 = False",
                                  "torch.backends.cudnn.allow_tf32 = False"),
    ("channels_last", "on"): ("model = model.to(memory_format=torch.channels_last)",
                              "images = images.to(memory_format=torch.channels_last)"
                              "  # every batch"),
    ("channels_last", "off"): ("# keep the default (contiguous NCHW) memory format",),
    ("compile", "on"): ("model = torch.compile(model)",),
    ("compile", "off"): ("# train without torch.compile",),
    ("cudnn_benchmark", "on"): ("torch.backends.cudnn.benchmark = True",),
    ("cudnn_benchmark", "off"): ("torch.backends.cudnn.benchmark = False",),
    ("miopen_immediate", "on"): ("torch.backends.miopen.immediate = True  # torch >= 2.9",),
    # the optimizer the script builds, with the implementation measured ({optimizer}: the
    # class the trial ran, or torch.optim.SGD where the result does not say)
    ("optimizer_impl", "fused"): ("optimizer = {optimizer}(..., fused=True)  # the optimizer "
                                  "you use, with fused=True",),
    ("optimizer_impl", "foreach"): ("optimizer = {optimizer}(..., foreach=True)  # the "
                                    "optimizer you use, with foreach=True",),
    ("optimizer_impl", "for-loop"): ("optimizer = {optimizer}(..., foreach=False)  # the "
                                     "optimizer you use, with foreach=False",),
    ("sdpa_backend", "flash"): ("from torch.nn.attention import SDPBackend, sdpa_kernel",
                                "with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # around "
                                "forward + loss"),
    ("sdpa_backend", "efficient"): ("from torch.nn.attention import SDPBackend, sdpa_kernel",
                                    "with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):  # "
                                    "around forward + loss"),
    ("sdpa_backend", "math"): ("from torch.nn.attention import SDPBackend, sdpa_kernel",
                               "with sdpa_kernel(SDPBackend.MATH):  # around forward + loss"),
    ("rocm_fa_library", "aotriton"): ('torch.backends.cuda.preferred_rocm_fa_library('
                                      '"aotriton")',),
    ("rocm_fa_library", "ck"): ('torch.backends.cuda.preferred_rocm_fa_library("ck")',),
}


# The knobs of the input pipeline (--data): one DataLoader line says them all.
LOADER_KNOBS = frozenset(k.name for k in kb.KNOBS if "data" in k.uses)
# DistributedDataParallel's own arguments (--nproc): one constructor line says them.
DDP_KNOBS = tuple(dict.fromkeys(k.name for k in kb.KNOBS
                                if "ddp" in k.uses and k.kind == kb.SETTING))
GPU_DECODE_LINES = (
    "# the dataset returns each file's bytes (torchvision.io.read_file(path)); per batch:",
    "images = torchvision.io.decode_jpeg(list_of_bytes, device='{device}')  # then the "
    "transforms, on the GPU",)
LOADER_CHANNELS_LAST = ("image = image.contiguous(memory_format=torch.channels_last)  # last "
                        "step of the dataset's transform",)


def _baseline(space: SpaceInfo, name: str) -> Optional[str]:
    knob = space.knob(name)
    return None if knob is None else knob.baseline


def _loader_apply(space: SpaceInfo, params: Mapping[str, str], spec: BenchSpec,
                  platform_kind: str, loader: Optional[Mapping[str, Any]]) -> list[str]:
    """The DataLoader lines of a point that changes the input pipeline ([] otherwise)."""
    changed = [name for name, label in params.items()
               if name in LOADER_KNOBS and label != _baseline(space, name)]
    if not changed or loader is None:
        return []
    batch = params.get("batch_size", "")
    return loader_lines(int(batch) if batch.isdigit() else spec.batch_size, loader, changed,
                        "cpu" if platform_kind == "cpu" else "cuda")


def loader_lines(batch_size: int, loader: Mapping[str, Any], changed: Sequence[str],
                 device: str) -> list[str]:
    """The DataLoader a trial ran, as a training script writes it, and what decoding on the
    GPU or channels_last in the loader add."""
    args = "".join(f", {k}={v!r}" for k, v in loader.items())
    lines = [f"loader = torch.utils.data.DataLoader(dataset, batch_size={batch_size}, "
             f"shuffle=True, drop_last=True{args})"]
    if "gpu_decode" in changed:
        lines += [line.format(device=device) for line in GPU_DECODE_LINES]
    if "loader_channels_last" in changed:
        lines += list(LOADER_CHANNELS_LAST)
    return lines


def ddp_lines(space: SpaceInfo, params: Mapping[str, str], platform_kind: str) -> list[str]:
    """The DistributedDataParallel a point constructs, where it changes DDP's arguments."""
    args = {name: kb.knobs_named(name)[0].value(params[name]) for name in DDP_KNOBS
            if name in params and params[name] != _baseline(space, name)}
    if not args:
        return []
    ids = "None" if platform_kind == "cpu" else "[local_rank]"
    given = "".join(f", {k}={v!r}" for k, v in args.items())
    return [f"model = torch.nn.parallel.DistributedDataParallel(model, device_ids={ids}{given})"]


def how_to_apply(space: SpaceInfo, params: Mapping[str, str], trial_env: Mapping[str, str],
                 platform_kind: str, spec: BenchSpec, optimizer: Optional[str] = None,
                 loader: Optional[Mapping[str, Any]] = None) -> Apply:
    """Environment variables, Python lines and notes that reproduce a trial's settings;
    `optimizer` is the optimizer class the trial ran (`torch.optim.AdamW`), `loader` the
    DataLoader arguments it ran with --data."""
    env = {k: v for k, v in trial_env.items() if k not in NOT_EXPORTED}
    python: list[str] = []
    notes: list[str] = []
    python += _loader_apply(space, params, spec, platform_kind, loader)
    python += ddp_lines(space, params, platform_kind)
    for name, label in params.items():
        knob = space.knob(name)
        if knob is None or label == knob.baseline or name in LOADER_KNOBS or name in DDP_KNOBS:
            continue
        if name == "tunableop" and label == "on":
            env["PYTORCH_TUNABLEOP_ENABLED"] = "1"
            notes.append("TunableOp replays the tuned GEMMs in PYTORCH_TUNABLEOP_FILENAME; new "
                         "shapes are tuned on first use")
        python += _code_lines(space, params, name, label, platform_kind, optimizer)
        if name == "batch_size":
            notes.append(f"batch size {label} instead of {spec.batch_size}: scale the learning "
                         "rate with it")
        if knob.changes_numerics:
            notes.append(f"{name} {knob.baseline} -> {label} changes numerics: check that "
                         "the model still converges")
    if any(k.startswith("MIOPEN_") and k.endswith(("_PATH", "_DIR")) for k in env):
        notes.append("MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR point at the databases "
                     "this trial tuned; they stay valid for this MIOpen version and GPU")
    return Apply(env=env, python=tuple(python), notes=tuple(notes))


def _code_lines(space: SpaceInfo, params: Mapping[str, str], name: str, label: str,
                platform_kind: str, optimizer: Optional[str]) -> list[str]:
    """The Python lines of one changed knob; compile and its mode make one line."""
    mode = params.get("compile_mode")
    if name == "compile" and label == "on" and mode not in (None, "default"):
        return [f'model = torch.compile(model, mode="{mode}")']
    if name == "compile_mode":  # written with compile, unless you compile already
        compile_knob = space.knob("compile")
        if params.get("compile") == (compile_knob.baseline if compile_knob else "on"):
            return [f'model = torch.compile(model, mode="{label}")']
        return []
    device = "cpu" if platform_kind == "cpu" else "cuda"
    return [line.format(device=device, optimizer=optimizer or "torch.optim.SGD")
            for line in CODE_LINES.get((name, label), ())]


def build(study: Study, spec: BenchSpec, platform: Platform, space: SpaceInfo, budget_s: float,
          elapsed_s: float, trials: Sequence[Trial], baseline: Optional[Trial],
          confirmation: Confirmation, stopped: Optional[str], stopped_why: str,
          batch_search: BatchSearch, failure: Optional[Failure], recovery: Optional[Recovery],
          warnings: Sequence[str]) -> TuneResult:
    """The result of a tune from what its search and its proof found."""
    verdict = _verdict(confirmation, spec)
    best = verdict.best_overall
    apply = None
    if best is not None:
        t = next(t for t in trials if t.number == best.trial)
        apply = how_to_apply(space, best.params, t.env, platform.kind, spec, t.optimizer_class,
                             t.loader)
    effects = cf.mark_effects(cf.knob_effects(trials, space), space,
                              best.changes if best else None, confirmation.noise_cv,
                              confirmation.status == "done")
    return TuneResult(
        schema=SCHEMA, tool_version=__version__,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        study=study, workload=spec, platform=platform, space=space, budget_s=budget_s,
        elapsed_s=elapsed_s, warnings=tuple(_warnings(warnings, trials)), trials=tuple(trials),
        baseline=baseline, confirmation=confirmation, verdict=verdict,
        search=Search(stopped=stopped, why=stopped_why,
                      queued=sum(t.state == "waiting" for t in trials)),
        batch_search=batch_search, effects=tuple(effects), apply=apply, failure=failure,
        recovery=recovery)


def _verdict(confirmation: Confirmation, spec: BenchSpec) -> Verdict:
    winners = [c for c in confirmation.candidates if c.winner]
    runs, noise = confirmation.runs, confirmation.noise_cv

    def best_of(keep: Sequence[Candidate]) -> Optional[Candidate]:
        return cf.pick_best(keep, runs, noise)[0]

    best, passed_over = cf.pick_best(winners, runs, noise)
    if best is not None:
        summary = (f"trial {best.trial} ({changes_text(best.changes)}) is faster than your "
                   f"settings: {best.why}")
    else:
        summary = confirmation.reason or \
            "no configuration beat your current settings beyond the measured noise"
    return Verdict(winner=best is not None, summary=summary, best_overall=best,
                   best_same_precision=best_of([c for c in winners
                                                if c.precision == spec.precision]),
                   best_same_batch=best_of([c for c in winners
                                            if c.batch_size == spec.batch_size]),
                   passed_over=passed_over, precision=spec.precision,
                   batch_size=spec.batch_size)


def _warnings(given: Sequence[str], trials: Sequence[Trial]) -> list[str]:
    """The warnings of the environment and the resume, what the child processes' working
    folder needed, and each crash with a known cause outside rocmdoctor."""
    out = list(given) + process.cwd_notes()
    causes = {t.known_cause["key"]: t.known_cause for t in trials if t.known_cause}
    for cause in causes.values():
        avoided = f"; {cause['avoided']}" if cause.get("avoided") else ""
        out.append(f"a crash with a known cause outside rocmdoctor: {cause['what']} "
                   f"({cause['source']}){avoided}")
    return out
