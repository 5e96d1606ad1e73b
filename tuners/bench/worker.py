"""The benchmark child process: `python -m rocmdoctor.tuners.bench.worker` reads a BenchSpec as JSON
on stdin, trains on synthetic data and prints JSON-line events on stdout (protocol in
rocmdoctor.tuners.bench.child). Exit codes: 0 result, 2 bad spec / no GPU, 3 out of memory,
1 anything else (traceback on stderr).

Method: warm-up steps are timed one by one with a sync after each (the first includes MIOpen
find / cuDNN benchmark / torch.compile cost) and excluded. Measured steps run in windows; on
a GPU each step is bracketed by device events and the host waits only at the end of a window,
so the measurement adds no host syncs. On the CPU, time.perf_counter per step.

Test-only fault injection, never for users: ROCMDOCTOR_TEST_FAULT=crash (SIGSEGV when warm-up
starts), hang (sleep forever when warm-up starts), oom (an out-of-memory error in a step),
linger (sleep forever after the result is given, as a rank that hangs leaving its process
group).
"""

from __future__ import annotations

import datetime
import faulthandler
import json
import os
import resource
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from rocmdoctor import __version__, schemas
from rocmdoctor.host import child_setup, process
from rocmdoctor.kb.peaks import peak_for
from rocmdoctor.tuners.bench import training
from rocmdoctor.tuners.bench.environment import (
    amdsmi_handle,
    device_info,
    effective_flags,
    knob_env,
)
from rocmdoctor.tuners.bench.host_memory import bound_host_memory
from rocmdoctor.tuners.bench.metrics import noise_warning, step_stats
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.bench.training import SetupError

if TYPE_CHECKING:
    from rocmdoctor.tuners.bench import power
    from rocmdoctor.tuners.bench.power_child import ProcessSampler

SCHEMA = schemas.BENCH
EXIT_ERROR, EXIT_OOM = 2, 3
OOM_TEXT = ("out of memory", "hipErrorOutOfMemory", "can't allocate memory",
            "CUDNN_STATUS_ALLOC_FAILED")


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError / MemoryError, or an error whose text says memory ran out."""
    if isinstance(exc, MemoryError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "OutOfMemoryError" in names or is_oom_text(str(exc))


def is_oom_text(text: str) -> bool:
    return any(marker.lower() in text.lower() for marker in OOM_TEXT)


def main() -> int:
    # a crash or a SIGABRT (a data-parallel launcher's, at a hung rank) writes every
    # thread's stack to stderr before the process dies: where it hung, in the trial's tail
    faulthandler.enable()
    process.die_with_parent(process.parent_pid_from(os.environ))
    _test_break(os.environ.get("ROCMDOCTOR_TEST_BREAK", ""))
    proto = child_setup.protocol_stream()  # stray prints (user code) go to stderr

    def emit(event: dict[str, Any]) -> None:
        proto.write(json.dumps(event, default=str) + "\n")
        proto.flush()

    try:
        spec = BenchSpec.from_dict(json.loads(sys.stdin.read() or "{}"))
    except (ValueError, TypeError) as exc:
        emit({"event": "error", "message": f"bad spec: {exc}"})
        return EXIT_ERROR
    problems = spec.problems()
    if problems:
        emit({"event": "error", "message": "; ".join(problems)})
        return EXIT_ERROR
    try:
        run(spec, emit, os.environ.get("ROCMDOCTOR_TEST_FAULT", ""))
    except SetupError as exc:
        emit({"event": "error", "message": str(exc)})
        return EXIT_ERROR
    except BaseException as exc:  # noqa: BLE001 - classify, then re-raise the rest
        unreadable = data_problem(exc)
        if unreadable is not None:  # an image a DataLoader worker could not decode
            emit({"event": "error", "message": unreadable})
            return EXIT_ERROR
        if not is_oom(exc):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        emit({"event": "oom", "batch_size": spec.batch_size, "message": first[:500]})
        print(f"rocmdoctor bench: out of memory at batch {spec.batch_size}: {first[:300]}",
              file=sys.stderr)
        return EXIT_OOM
    return 0


def data_problem(exc: BaseException) -> Optional[str]:
    """The one line of a --data problem raised in the loader (in a DataLoader worker it comes
    back wrapped, its own message on the last line), or None."""
    from rocmdoctor.tuners.bench.data import DataError

    text = str(exc).strip()
    if not isinstance(exc, DataError) and "DataError: " not in text:
        return None
    last = text.splitlines()[-1] if text else ""
    return last.split("DataError: ", 1)[-1] or type(exc).__name__


def _power_sampler(t: training.Training, spec: BenchSpec, info: dict[str, Any]) -> Any:
    """Power sampled during the measurement. 10 Hz by default: every NVML read costs the
    driver a little, which a host-bound training step feels (docs/benchmarks.md, bench
    overhead); energy comes from the device's counter where it has one, not the samples."""
    from rocmdoctor.tuners.bench import power

    if not spec.settings.get("extras", True):
        source, reasons = None, ["not measured (settings: extras=false)"]
    elif t.cuda:
        source, reasons = power.open_source(info["vendor"], t.device.index or 0,
                                            info.get("uuid"), info.get("pci_bus"),
                                            amdsmi_handle(t.torch, t.device))
    else:
        source, reasons = None, ["power is measured on GPUs only"]
    return _start_sampler(source, reasons, float(spec.settings.get("power_hz", 10.0)))


def _flops_and_peak(t: training.Training, spec: BenchSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The FLOPs of a step and the device's GEMM rate, unless the settings skip them."""
    from rocmdoctor.tuners.bench import flops

    extras = bool(spec.settings.get("extras", True))
    if extras and spec.settings.get("mfu", True):
        return (_count_flops(flops, t.model, t.inputs, t.targets, t.work.loss_fn, t.autocast,
                             spec.batch_size),
                _gemm(flops, t.torch, t.device, spec.precision))
    skipped = "not measured (settings: " + ("extras=false)" if not extras else "mfu=false)")
    return ({"per_sample_forward": None, "per_sample_train": None, "reason": skipped},
            {"tflops": None, "reason": skipped})


def _ddp_figures(t: training.Training, spec: BenchSpec) -> dict[str, Any]:
    """This rank of a data-parallel run: its place, the backend and DDP's arguments."""
    from rocmdoctor.tuners.bench.ddp import ddp_args

    assert t.rank is not None
    return {"rank": t.rank.rank, "local_rank": t.rank.local_rank,
            "world_size": t.rank.world_size, "backend": t.backend,
            "args": ddp_args(spec.settings)}


def _data_figures(t: training.Training, spec: BenchSpec, warmed: int, wall_s: float
                  ) -> dict[str, Any]:
    """The input pipeline of a --data run: the folder, the loader, and the measured steps'
    split between waiting for data and computing."""
    from rocmdoctor.tuners.bench.data import LoaderSettings

    feed = t.feed
    assert feed is not None
    return {"path": spec.data, "images": len(feed.loader.dataset),
            "classes": len(feed.loader.dataset.classes),
            "loader": LoaderSettings.of(spec.settings).dataloader_args(),
            "gpu_decode": feed.settings.gpu_decode, "split": feed.split(warmed, wall_s)}


def _run_warnings(stats: dict[str, Any], steps: int, spec: BenchSpec, held: Optional[float],
                  power_summary: dict[str, Any]) -> list[str]:
    warnings = [w for w in (noise_warning(stats),) if w]
    if steps < spec.steps:
        warnings.append(f"measured {steps} of {spec.steps} steps: on the CPU a run is held to "
                        f"about {held:g} s; give --steps to measure a set number")
    if power_summary["samples"] and power_summary["samples"] < 10:
        warnings.append(f"only {power_summary['samples']} power samples: the measured run is "
                        "too short for a steady power figure; use more --steps")
    return warnings


def run(spec: BenchSpec, emit: Callable[[dict[str, Any]], None], fault: str) -> None:
    """Measure, and emit the result; a rank of a data-parallel run leaves its process group
    after that, so a rank that hangs on its way out has given its result first
    (destroy_process_group can hang: pytorch issue 75097, open; the launcher then kills it)."""
    started = time.monotonic()
    import torch

    t = training.prepare(torch, spec)
    try:
        emit({"event": "result", "result": _run_prepared(torch, t, spec, emit, fault, started)})
        if fault == "linger" and (t.rank is None or t.rank.rank == t.rank.world_size - 1):
            _inject("hang")
    finally:
        if t.rank is not None:
            from rocmdoctor.tuners.bench import ddp

            ddp.leave(torch)


def _run_prepared(torch: Any, t: training.Training, spec: BenchSpec,
                  emit: Callable[[dict[str, Any]], None], fault: str, started: float
                  ) -> dict[str, Any]:
    if t.rank is not None and t.rank.rank != t.rank.world_size - 1:
        fault = ""  # in a data-parallel run a test's fault strikes the last rank alone
    host_limit = bound_host_memory() if not t.cuda else None
    step = training.step_of(t, fault)
    unit_per_step = spec.batch_size * t.work.units_per_sample
    emit({"event": "start", "pid": os.getpid(), "device": str(t.device), "model": spec.model,
          "source": t.work.source, "unit": t.work.unit, "warmup": spec.warmup,
          "steps": spec.steps})
    _inject(fault)
    # On the CPU a run may be held to about `cpu_time_s` (bench and tune set it unless
    # --steps is given): a large model there takes seconds a step.
    held = None if t.cuda else float(spec.settings.get("cpu_time_s", 0.0)) or None
    warm = training.warm_up(t, spec, step, emit, held)
    steps = spec.steps if held is None else \
        t.agree_count(training.held_steps(spec.steps, warm, held))
    info = device_info(torch, t.device)
    sampler = _power_sampler(t, spec, info)
    step_s, windows = training.measure(t, steps, step, emit, unit_per_step)
    data = None if t.feed is None else _data_figures(t, spec, len(warm), sum(step_s))
    power_summary = sampler.stop(samples_measured=spec.batch_size * steps)
    stats = step_stats(step_s, unit_per_step, "mean" if t.feed is not None else "median")
    flop_info, gemm = _flops_and_peak(t, spec)
    return {
        "schema": SCHEMA, "tool_version": __version__,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "spec": spec.to_dict(),
        "environment": {**info, "knobs": {"env": knob_env(), "settings": t.applied,
                                          "unsupported": t.unsupported,
                                          "effective": effective_flags(torch)}},
        "workload": {"model": spec.model, "source": t.work.source, "notes": t.work.notes,
                     "parameters": sum(p.numel() for p in t.model.parameters()),
                     "unit": t.work.unit, "samples_per_step": unit_per_step,
                     "units_per_sample": t.work.units_per_sample,
                     "optimizer": t.work.optimizer_name,
                     "optimizer_class": _class_path(torch, t.optimizer),
                     "amp_dtype": spec.precision if t.amp is not None else None,
                     "grad_scaler": t.scaler is not None},
        "warmup": {"steps": len(warm), "requested_steps": spec.warmup, "first_step_s": warm[0],
                   "step_s": warm, "total_s": sum(warm)},
        "windows": windows,
        **({"data": data} if data is not None else {}),
        **({"ddp": _ddp_figures(t, spec)} if t.rank is not None else {}),
        "metrics": {"unit": t.work.unit, "timing": "device events" if t.cuda else "perf_counter",
                    **stats, "memory": _memory(torch, t.device, info, host_limit),
                    "power": power_summary, "flops": flop_info,
                    "mfu": _mfu(stats, flop_info, gemm, info["name"], spec.precision,
                                t.work.units_per_sample)},
        "warnings": _run_warnings(stats, steps, spec, held, power_summary),
        "wall_s": time.monotonic() - started,
    }


def _test_break(value: str) -> None:
    """Tests only: a machine that breaks for a while. ROCMDOCTOR_TEST_BREAK="FROM:TO:FILE[:TEXT]"
    counts the workers started in FILE; the ones numbered FROM+1 to TO (TO empty: all after
    FROM) print TEXT and exit 2 at once, as a worker does that cannot import torch."""
    if not value:
        return
    import fcntl

    first, last, path, *text = value.split(":", 3)
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        count = len(fh.read().splitlines()) + 1
        fh.write(f"{os.getpid()}\n")
    if count > int(first) and (not last or count <= int(last)):
        print(text[0] if text else "rocmdoctor test: injected break", file=sys.stderr)
        sys.exit(2)


def _inject(fault: str) -> None:
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "hang":
        while True:
            time.sleep(3600)


def _start_sampler(source: Optional[power.PowerSource], reasons: list[str],
                   hz: float = 10.0) -> Union[power.PowerSampler, ProcessSampler]:
    """Sample power from a separate process where the source can be opened there, so this
    process runs no sampling thread during the measurement (tuners/power_child.py says why);
    otherwise (amdsmi, nvidia-smi, or a child that does not start) from a thread here."""
    from rocmdoctor.tuners.bench import power
    from rocmdoctor.tuners.bench.power_child import ProcessSampler

    if source is not None and source.spawn_args() is not None:
        sampler = ProcessSampler(source, hz=hz)
        try:
            sampler.start()
            return sampler
        except (OSError, RuntimeError) as exc:
            reasons = [*reasons, f"process sampling: {exc}"]
    thread_sampler = power.PowerSampler(source, hz=hz, reasons=reasons)
    thread_sampler.start()
    return thread_sampler


def _class_path(torch: Any, optimizer: Any) -> str:
    """The optimizer's class as a training script names it: `torch.optim.AdamW` for torch's
    own (exported there), else its module and name."""
    cls = type(optimizer)
    if getattr(torch.optim, cls.__name__, None) is cls:
        return f"torch.optim.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _memory(torch: Any, device: Any, info: dict[str, Any],
            host_limit: Optional[int] = None) -> dict[str, Any]:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    if device.type != "cuda":
        return {"peak_allocated_bytes": None, "peak_reserved_bytes": None,
                "device_total_bytes": None, "host_peak_rss_bytes": rss,
                "host_limit_bytes": host_limit,
                "reason": "device memory is measured on GPUs only"}
    return {"peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "peak_reserved_bytes": torch.cuda.max_memory_reserved(device),
            "device_total_bytes": info["total_memory_bytes"], "host_peak_rss_bytes": rss,
            "reason": None}


def _count_flops(flops: Any, model: Any, inputs: Any, targets: Any, loss_fn: Any,
                 autocast: Any, batch: int) -> dict[str, Any]:
    out: dict[str, Any] = {"method": "torch.utils.flop_counter.FlopCounterMode, eager model",
                           "per_sample_forward": None, "per_sample_train": None, "reason": None}
    try:
        forward, total = flops.training_step_flops(model, inputs, targets, loss_fn, autocast)
    except Exception as exc:  # noqa: BLE001 - MFU is optional, the throughput is not
        out["reason"] = f"FLOP counting failed: {type(exc).__name__}: {str(exc)[:200]}"
        return out
    out["per_sample_forward"] = forward / batch
    out["per_sample_train"] = total / batch
    return out


def _gemm(flops: Any, torch: Any, device: Any, precision: str) -> dict[str, Any]:
    cuda = device.type == "cuda"
    try:
        return {**flops.measure_gemm_tflops(device, precision, 8192 if cuda else 1024,
                                            seconds=0.5 if cuda else 0.2), "reason": None}
    except Exception as exc:  # noqa: BLE001
        return {"tflops": None, "reason": f"GEMM measurement failed: {type(exc).__name__}: "
                                          f"{str(exc)[:200]}"}
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _mfu(stats: dict[str, Any], flop_info: dict[str, Any], gemm: dict[str, Any],
         device_name: str, precision: str, units_per_sample: int) -> dict[str, Any]:
    per_sample = flop_info.get("per_sample_train")
    # FLOP/s over the whole measured run: all samples over all measured time (the mean),
    # not the median step, which a noisy machine can push above any sustained rate.
    samples_per_s = stats["throughput"]["mean"] / units_per_sample
    achieved = per_sample * samples_per_s / 1e12 if per_sample else None
    spec_peak = peak_for(device_name, precision)
    out: dict[str, Any] = {
        "achieved_tflops": achieved, "throughput_basis": "mean",
        "spec_peak_tflops": spec_peak.tflops, "spec_dtype": spec_peak.dtype,
        "spec_source": spec_peak.peak.source if spec_peak.peak else None,
        "spec_note": spec_peak.reason,
        "vs_spec": achieved / spec_peak.tflops if achieved and spec_peak.tflops else None,
        "gemm": gemm,
        "vs_measured_gemm": (achieved / gemm["tflops"] if achieved and gemm.get("tflops")
                             else None),
        "reason": flop_info.get("reason"),
    }
    return out


if __name__ == "__main__":
    sys.exit(main())
