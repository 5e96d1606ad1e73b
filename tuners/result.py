"""A tune's result (schema rocmdoctor.tune/1): the figures kept from each trial, each trial
as the tune reads it back, what a trial changes, and how to apply the winner (environment
variables, the Python lines and the notes a training script needs)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from rocmdoctor import schemas
from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.bench.spec import BenchSpec

if TYPE_CHECKING:
    import optuna

SCHEMA = schemas.TUNE


def metrics_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a tune keeps from a bench result (schema rocmdoctor.bench/1)."""
    metrics = result.get("metrics") or {}
    tput = metrics.get("throughput") or {}
    memory = metrics.get("memory") or {}
    device_mem = memory.get("peak_reserved_bytes")
    workload = result.get("workload") or {}
    return {
        "throughput": tput.get("median"), "p10": tput.get("p10"), "p90": tput.get("p90"),
        "cv": tput.get("cv"), "unit": metrics.get("unit", "samples"),
        "memory_bytes": device_mem if device_mem is not None else
        memory.get("host_peak_rss_bytes"),
        "memory_kind": "device peak reserved" if device_mem is not None else "host peak RSS",
        "energy_per_sample_j": (metrics.get("power") or {}).get("energy_per_sample_j"),
        # what the throughput counts per sample (tokens per sequence) and the optimizer run
        "units_per_sample": workload.get("units_per_sample"),
        "optimizer_class": workload.get("optimizer_class"),
        "first_step_s": (result.get("warmup") or {}).get("first_step_s"),
        "windows": [w.get("samples_per_s") for w in result.get("windows") or []],
        "unsupported": ((result.get("environment") or {}).get("knobs") or {}).get(
            "unsupported") or {},
        # which GPU the child was given, as it saw it (tune --gpus)
        "visible_devices": {k: v for k, v in (((result.get("environment") or {}).get("knobs")
                                               or {}).get("env") or {}).items()
                            if k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")},
    }


def trial_dict(trial: optuna.trial.FrozenTrial, environment: bool = False) -> dict[str, Any]:
    """A trial as the tune reads it; `environment`: it crashed because the environment broke
    (the study's ENVIRONMENT_CRASHES), not because of its settings."""
    attrs = trial.user_attrs
    metrics = attrs.get("metrics") or {}
    return {
        "number": trial.number, "params": dict(trial.params),
        "state": attrs.get("state") or sd.unrecorded_state(trial),
        "message": attrs.get("message", ""), "stderr_tail": attrs.get("stderr_tail", ""),
        "baseline": bool(attrs.get("baseline")), "retry_of": attrs.get("retry_of"),
        "seed": bool(attrs.get("seed")), "gpu": attrs.get("gpu"),
        "started_at": attrs.get("started_at"), "wall_s": attrs.get("wall_s"),
        "one_time_s": attrs.get("one_time_s"), "dir": attrs.get("dir"),
        "env": attrs.get("env") or {}, "precision": (attrs.get("spec") or {}).get("precision"),
        "throughput": metrics.get("throughput"), "p10": metrics.get("p10"),
        "p90": metrics.get("p90"), "cv": metrics.get("cv"), "unit": metrics.get("unit"),
        "memory_bytes": metrics.get("memory_bytes"), "memory_kind": metrics.get("memory_kind"),
        "energy_per_sample_j": metrics.get("energy_per_sample_j"),
        "units_per_sample": metrics.get("units_per_sample"),
        "optimizer_class": metrics.get("optimizer_class"),
        "first_step_s": metrics.get("first_step_s"), "windows": metrics.get("windows") or [],
        "unsupported": metrics.get("unsupported") or {},
        "visible_devices": metrics.get("visible_devices") or {},
        "survivors": attrs.get("survivors"), "retried": attrs.get("retried"),
        "known_cause": attrs.get("known_cause"), "environment": environment,
    }


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


def how_to_apply(space: Mapping[str, Any], params: Mapping[str, str],
                 trial_env: Mapping[str, str], platform_kind: str, spec: BenchSpec,
                 optimizer: Optional[str] = None) -> dict[str, Any]:
    """Environment variables, Python lines and notes that reproduce a trial's settings;
    `optimizer` is the optimizer class the trial ran (`torch.optim.AdamW`)."""
    knobs = {k["name"]: k for k in space.get("knobs", [])}
    env = {k: v for k, v in trial_env.items() if k not in NOT_EXPORTED}
    python: list[str] = []
    notes: list[str] = []
    device = "cpu" if platform_kind == "cpu" else "cuda"
    for name, label in params.items():
        knob = knobs.get(name)
        if knob is None or label == knob["baseline"]:
            continue
        if name == "tunableop" and label == "on":
            env["PYTORCH_TUNABLEOP_ENABLED"] = "1"
            notes.append("TunableOp replays the tuned GEMMs in PYTORCH_TUNABLEOP_FILENAME; new "
                         "shapes are tuned on first use")
        if name == "compile" and label == "on" and params.get("compile_mode") not in (
                None, "default"):
            python.append(f'model = torch.compile(model, mode="{params["compile_mode"]}")')
            continue
        if name == "compile_mode":  # written with compile, unless you compile already
            if params.get("compile") == knobs.get("compile", {}).get("baseline", "on"):
                python.append(f'model = torch.compile(model, mode="{label}")')
            continue
        for line in CODE_LINES.get((name, label), ()):
            python.append(line.format(device=device, optimizer=optimizer or "torch.optim.SGD"))
        if name == "batch_size":
            notes.append(f"batch size {label} instead of {spec.batch_size}: scale the learning "
                         "rate with it")
        if knob.get("changes_numerics"):
            notes.append(f"{name} {knob['baseline']} -> {label} changes numerics: check that "
                         "the model still converges")
    if any(k.startswith("MIOPEN_") and k.endswith(("_PATH", "_DIR")) for k in env):
        notes.append("MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR point at the databases "
                     "this trial tuned; they stay valid for this MIOpen version and GPU")
    return {"env": env, "python": python, "notes": notes}


def payback(base: Mapping[str, Any], trial: Mapping[str, Any], speedup: Optional[float],
            batch_size: int, units_per_sample: int = 1) -> Optional[dict[str, Any]]:
    """After how many steps (and minutes of training at the faster speed) a candidate's
    one-time cost (compile, tuning) beyond yours is paid back by its faster steps; None when
    it is not faster or its throughput is unknown. Throughput counts units (images, tokens):
    a step trains `batch_size` samples of `units_per_sample` units each."""
    rate = base.get("throughput")
    if not speedup or speedup <= 1.0 or not rate:
        return None
    extra = max(0.0, float(trial.get("one_time_s") or 0.0) - float(base.get("one_time_s")
                                                                   or 0.0))
    faster = rate * speedup
    saved = 1.0 / rate - 1.0 / faster  # seconds saved per unit
    units = extra / saved
    per_step = batch_size * max(1, units_per_sample)
    return {"one_time_s": round(extra, 1), "steps": int(math.ceil(units / per_step)),
            "minutes": round(units / faster / 60.0, 2)}


def energy_per_unit(record: Mapping[str, Any]) -> Optional[float]:
    """Joules per unit of throughput (per image, per token) from a trial or a re-run that
    kept `energy_per_sample_j` (per sample: per sequence for a language model)."""
    energy, units = record.get("energy_per_sample_j"), record.get("units_per_sample")
    if energy is None or not math.isfinite(float(energy)):
        return None
    if units is None:  # a result from before units were kept: a sample is an image
        if record.get("unit") not in (None, "images", "samples"):
            return None
        units = 1
    return float(energy) / max(1, int(units))


def confirmed_energy(trial: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
                     ) -> Optional[float]:
    """Joules per unit of a trial over its confirmation re-runs (their median), else from its
    search run; None where no power was measured."""
    same = {"units_per_sample": trial.get("units_per_sample"), "unit": trial.get("unit")}
    mine = [r for r in runs if r.get("trial") == trial.get("number")
            and r.get("state", "ok") == "ok"]
    measured = [e for e in (energy_per_unit({**r, **same}) for r in mine) if e is not None]
    if measured:
        return statistics.median(measured)
    return energy_per_unit(trial)

