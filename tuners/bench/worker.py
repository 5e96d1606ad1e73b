"""The benchmark child process: `python -m rocmdoctor.tuners.bench.worker` reads a BenchSpec as JSON
on stdin, trains on synthetic data and prints JSON-line events on stdout (protocol in
rocmdoctor.tuners.bench.child). Exit codes: 0 result, 2 bad spec / no GPU, 3 out of memory,
1 anything else (traceback on stderr).

Method: warm-up steps are timed one by one with a sync after each (the first includes MIOpen
find / cuDNN benchmark / torch.compile cost) and excluded. Measured steps run in windows; on
a GPU each step is bracketed by device events and the host waits only at the end of a window,
so the measurement adds no host syncs. On the CPU, time.perf_counter per step.

Test-only fault injection, never for users: ROCMDOCTOR_TEST_FAULT=crash (SIGSEGV when warm-up
starts), hang (sleep forever when warm-up starts), oom (an out-of-memory error in a step).
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import json
import os
import resource
import signal
import statistics
import sys
import time
from typing import IO, TYPE_CHECKING, Any, Callable, Optional, Union

from rocmdoctor import __version__, schemas
from rocmdoctor.host import process
from rocmdoctor.kb.peaks import peak_for
from rocmdoctor.tuners.bench.environment import (
    amdsmi_handle,
    apply_settings,
    device_info,
    effective_flags,
    implemented_optimizer,
    knob_env,
)
from rocmdoctor.tuners.bench.metrics import noise_warning, step_stats, window_sizes
from rocmdoctor.tuners.bench.spec import BenchSpec

if TYPE_CHECKING:
    from rocmdoctor.tuners.bench import power
    from rocmdoctor.tuners.bench.power_child import ProcessSampler

SCHEMA = schemas.BENCH
EXIT_ERROR, EXIT_OOM = 2, 3
OOM_TEXT = ("out of memory", "hipErrorOutOfMemory", "can't allocate memory",
            "CUDNN_STATUS_ALLOC_FAILED")


class SetupError(Exception):
    """The benchmark cannot run as asked (no GPU, bad workload): exit 2, one line."""


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError / MemoryError, or an error whose text says memory ran out."""
    if isinstance(exc, MemoryError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "OutOfMemoryError" in names or is_oom_text(str(exc))


def is_oom_text(text: str) -> bool:
    return any(marker.lower() in text.lower() for marker in OOM_TEXT)


def main() -> int:
    process.die_with_parent(process.parent_pid_from(os.environ))
    _test_break(os.environ.get("ROCMDOCTOR_TEST_BREAK", ""))
    proto = _protocol_stream()

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
        result = run(spec, emit, os.environ.get("ROCMDOCTOR_TEST_FAULT", ""))
    except SetupError as exc:
        emit({"event": "error", "message": str(exc)})
        return EXIT_ERROR
    except BaseException as exc:  # noqa: BLE001 - classify, then re-raise the rest
        if not is_oom(exc):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        emit({"event": "oom", "batch_size": spec.batch_size, "message": first[:500]})
        print(f"rocmdoctor bench: out of memory at batch {spec.batch_size}: {first[:300]}",
              file=sys.stderr)
        return EXIT_OOM
    emit({"event": "result", "result": result})
    return 0


def _protocol_stream() -> IO[str]:
    """Keep the real stdout for protocol lines; send stray prints (user code) to stderr."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def run(spec: BenchSpec, emit: Callable[[dict[str, Any]], None], fault: str) -> dict[str, Any]:
    started = time.monotonic()
    import torch

    from rocmdoctor.tuners.bench import flops, power
    from rocmdoctor.tuners.bench.workloads import WorkloadError, build_workload

    device = _pick_device(torch, spec.device)
    host_limit = bound_host_memory() if device.type == "cpu" else None
    applied, unsupported = apply_settings(torch, spec)
    torch.manual_seed(int(spec.settings.get("seed", 0)))
    try:
        work = build_workload(spec)
    except WorkloadError as exc:
        raise SetupError(str(exc)) from None
    model = work.model.to(device)
    inputs, targets = work.make_batch(spec.batch_size, device)
    if spec.channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        if isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
    optimizer = work.optimizer(list(model.parameters()))
    optimizer, refused = implemented_optimizer(torch, optimizer,
                                               spec.settings.get("optimizer_impl"))
    if refused:
        unsupported["optimizer_impl"] = refused
        applied.pop("optimizer_impl", None)
    attention = _sdpa_context(torch, spec.settings.get("sdpa_backend"), unsupported)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(spec.precision)
    scaler = torch.amp.GradScaler(device.type) if spec.precision == "fp16" else None
    runner: Callable[..., Any] = model
    if spec.compile:
        runner = torch.compile(model, mode=spec.settings.get("compile_mode", "default"))

    def autocast() -> contextlib.AbstractContextManager[Any]:
        if amp is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=amp)

    def step() -> None:
        if fault == "oom":
            raise getattr(torch, "OutOfMemoryError", MemoryError)(
                "injected out of memory (ROCMDOCTOR_TEST_FAULT=oom)")
        optimizer.zero_grad(set_to_none=True)
        with autocast(), attention():
            loss = work.loss_fn(runner(inputs), targets)
        if scaler is not None:  # GradScaler.step syncs the host once per step (found_inf)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    unit_per_step = spec.batch_size * work.units_per_sample
    emit({"event": "start", "pid": os.getpid(), "device": str(device), "model": spec.model,
          "source": work.source,
          "unit": work.unit, "warmup": spec.warmup, "steps": spec.steps})
    _inject(fault)
    warm: list[float] = []
    # A GPU idle through a long compile or MIOpen find runs at low clocks for a while; a
    # count of warm-up steps alone then measures the ramp (seen on an H200: compiled
    # ResNet-50 windows rose from 4,491 to 5,684 images/s over 50 steps after 10 warm-up).
    min_warm_s = float(spec.settings.get("min_warmup_s", 2.0 if cuda else 0.0))
    cap = max(spec.warmup, 1) * 50
    # On the CPU a run may be held to about `cpu_time_s` (bench and tune set it unless
    # --steps is given): a large model there takes seconds a step.
    held = None if cuda else float(spec.settings.get("cpu_time_s", 0.0)) or None
    while len(warm) < spec.warmup or (len(warm) < cap and sum(warm[1:]) < min_warm_s):
        if held is not None and len(warm) >= 2 and sum(warm) >= held / 4:
            break
        t0 = time.perf_counter()
        step()
        sync()
        warm.append(time.perf_counter() - t0)
        emit({"event": "warmup", "step": len(warm), "of": spec.warmup, "step_s": warm[-1]})
    steps = spec.steps if held is None else held_steps(spec.steps, warm, held)

    info = device_info(torch, device)
    extras = bool(spec.settings.get("extras", True))
    if not extras:
        source, reasons = None, ["not measured (settings: extras=false)"]
    elif cuda:
        source, reasons = power.open_source(info["vendor"], device.index or 0, info.get("uuid"),
                                            info.get("pci_bus"), amdsmi_handle(torch, device))
    else:
        source, reasons = None, ["power is measured on GPUs only"]
    # 10 Hz by default: every NVML read costs the driver a little, which a host-bound
    # training step feels (docs/benchmarks.md, bench overhead); energy comes from the
    # device's counter where it has one, not from the samples.
    sampler = _start_sampler(source, reasons, float(spec.settings.get("power_hz", 10.0)))
    step_s: list[float] = []
    windows: list[dict[str, Any]] = []
    sizes = window_sizes(steps)
    for index, size in enumerate(sizes):
        times = _timed_window(torch, step, size, cuda)
        step_s.extend(times)
        rate = unit_per_step * size / sum(times)
        windows.append({"index": index, "steps": size, "seconds": sum(times),
                        "samples_per_s": rate})
        emit({"event": "window", "index": index, "of": len(sizes), "steps": size,
              "seconds": sum(times), "samples_per_s": rate, "unit": work.unit})
    power_summary = sampler.stop(samples_measured=spec.batch_size * steps)

    stats = step_stats(step_s, unit_per_step)
    memory = _memory(torch, device, info, host_limit)
    if extras and spec.settings.get("mfu", True):
        flop_info = _count_flops(flops, model, inputs, targets, work.loss_fn, autocast,
                                 spec.batch_size)
        gemm = _gemm(flops, torch, device, spec.precision)
    else:
        skipped = "not measured (settings: " + ("extras=false)" if not extras else "mfu=false)")
        flop_info = {"per_sample_forward": None, "per_sample_train": None, "reason": skipped}
        gemm = {"tflops": None, "reason": skipped}
    mfu = _mfu(stats, flop_info, gemm, info["name"], spec.precision, work.units_per_sample)
    warnings = [w for w in (noise_warning(stats),) if w]
    if steps < spec.steps:
        warnings.append(f"measured {steps} of {spec.steps} steps: on the CPU a run is held to "
                        f"about {held:g} s; give --steps to measure a set number")
    if power_summary["samples"] and power_summary["samples"] < 10:
        warnings.append(f"only {power_summary['samples']} power samples: the measured run is "
                        "too short for a steady power figure; use more --steps")
    return {
        "schema": SCHEMA, "tool_version": __version__,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "spec": spec.to_dict(),
        "environment": {**info, "knobs": {"env": knob_env(), "settings": applied,
                                          "unsupported": unsupported,
                                          "effective": effective_flags(torch)}},
        "workload": {"model": spec.model, "source": work.source, "notes": work.notes,
                     "parameters": sum(p.numel() for p in model.parameters()),
                     "unit": work.unit, "samples_per_step": unit_per_step,
                     "units_per_sample": work.units_per_sample,
                     "optimizer": work.optimizer_name,
                     "optimizer_class": _class_path(torch, optimizer), "amp_dtype": spec.precision
                     if amp is not None else None, "grad_scaler": scaler is not None},
        "warmup": {"steps": len(warm), "requested_steps": spec.warmup, "first_step_s": warm[0],
                   "step_s": warm, "total_s": sum(warm)},
        "windows": windows,
        "metrics": {"unit": work.unit, "timing": "device events" if cuda else "perf_counter",
                    **stats, "memory": memory, "power": power_summary, "flops": flop_info,
                    "mfu": mfu},
        "warnings": warnings,
        "wall_s": time.monotonic() - started,
    }


def held_steps(wanted: int, warm: list[float], held_s: float, least: int = 3) -> int:
    """How many steps to measure so that warm-up and measurement take about `held_s`: the
    time left over the typical warm-up step (the first, with its one-time cost, aside)."""
    typical = statistics.median(warm[1:]) if len(warm) > 1 else warm[-1]
    if typical <= 0:
        return wanted
    fit = int(max(0.0, held_s - sum(warm)) / typical)
    return max(min(wanted, fit), min(wanted, least))


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


def _timed_window(torch: Any, step: Callable[[], None], size: int, cuda: bool) -> list[float]:
    if not cuda:
        times = []
        for _ in range(size):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return times
    events = [torch.cuda.Event(enable_timing=True) for _ in range(size + 1)]
    events[0].record()
    for k in range(size):
        step()
        events[k + 1].record()
    events[-1].synchronize()  # the only host wait of the window
    return [events[k].elapsed_time(events[k + 1]) / 1000.0 for k in range(size)]


def _class_path(torch: Any, optimizer: Any) -> str:
    """The optimizer's class as a training script names it: `torch.optim.AdamW` for torch's
    own (exported there), else its module and name."""
    cls = type(optimizer)
    if getattr(torch.optim, cls.__name__, None) is cls:
        return f"torch.optim.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _sdpa_context(torch: Any, backend: Optional[str], unsupported: dict[str, str]
                  ) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A context manager factory that restricts scaled_dot_product_attention to `backend`
    (torch.nn.attention.sdpa_kernel, torch >= 2.3), or does nothing."""
    if backend is None:
        return contextlib.nullcontext
    try:
        attention = importlib.import_module("torch.nn.attention")
        chosen = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                  "math": "MATH", "cudnn": "CUDNN_ATTENTION"}[backend]
        kind = getattr(attention.SDPBackend, chosen)
    except (ImportError, AttributeError) as exc:
        unsupported["sdpa_backend"] = f"torch {torch.__version__}: {exc}"[:200]
        return contextlib.nullcontext
    return lambda: attention.sdpa_kernel([kind])


def _pick_device(torch: Any, wanted: str) -> Any:
    if wanted == "cpu" or (wanted == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        build = (f"ROCm {torch.version.hip}" if torch.version.hip else
                 f"CUDA {torch.version.cuda}" if torch.version.cuda else None)
        why = (f"torch {torch.__version__} is a CPU-only build" if build is None else
               f"torch {torch.__version__} ({build}) sees no GPU; `rocmdoctor check` says why")
        raise SetupError(f"--device cuda: no GPU: {why}")
    return torch.device("cuda", torch.cuda.current_device())


# What a CPU run may take of the memory it finds free: the rest is left to the system.
HOST_SHARE = 0.9


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(1 << 16)
    except OSError:
        return None


def _count(text: str) -> Optional[int]:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 30:
        return None
    return int(text)


def _kib_field(text: Optional[str], name: str) -> Optional[int]:
    """`name:   123 kB` from /proc/meminfo or /proc/self/status, in bytes."""
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        if key == name:
            kib = _count((rest.split() or [""])[0])
            return None if kib is None else kib * 1024
    return None


def host_memory_limit(meminfo: Optional[str], cgroup_max: Optional[str],
                      cgroup_current: Optional[str], vm_data: Optional[int]) -> Optional[int]:
    """The data size a CPU run may reach: what it uses now plus HOST_SHARE of the memory
    free to it (MemAvailable, or less when its cgroup v2 limit leaves less)."""
    free = _kib_field(meminfo, "MemAvailable")
    limit, used = _count(cgroup_max or ""), _count(cgroup_current or "")
    if limit is not None and used is not None:
        left = max(0, limit - used)
        free = left if free is None else min(free, left)
    if free is None:
        return None
    return (vm_data or 0) + int(free * HOST_SHARE)


def bound_host_memory() -> Optional[int]:
    """On the CPU a batch lives in host memory. Past what is free Linux overcommits: the
    process grows into swap until the OOM killer ends it (a batch of 10^12 grew one to
    18 GB). A data limit (RLIMIT_DATA, which counts malloc's heap and anonymous mappings)
    at what is free makes such a batch fail at once with an out-of-memory error, which the
    max-batch search and the bench's halving read as "does not fit". Returns the limit."""
    limit = host_memory_limit(_read("/proc/meminfo"), _read("/sys/fs/cgroup/memory.max"),
                              _read("/sys/fs/cgroup/memory.current"),
                              _kib_field(_read("/proc/self/status"), "VmData"))
    if limit is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        return soft  # the user's own limit is tighter
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):
        return None
    return limit


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
