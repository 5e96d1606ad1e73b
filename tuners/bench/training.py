"""One workload trained for measurement, in the benchmark worker (imports torch): the
model, a batch and the optimizer on their device with the spec's settings, one training
step, the warm-up and the measured windows timed with device events.
"""

from __future__ import annotations

import contextlib
import importlib
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rocmdoctor.tuners.bench.environment import apply_settings, implemented_optimizer
from rocmdoctor.tuners.bench.metrics import window_sizes
from rocmdoctor.tuners.bench.spec import BenchSpec


class SetupError(Exception):
    """The benchmark cannot run as asked (no GPU, bad workload): exit 2, one line."""


@dataclass
class Training:
    """One workload on its device, ready to train a step."""

    torch: Any
    device: Any
    work: Any  # rocmdoctor.tuners.bench.workloads.Workload
    model: Any
    inputs: Any
    targets: Any
    optimizer: Any
    runner: Callable[..., Any]  # the model, compiled when asked
    amp: Any  # the autocast dtype, None for none
    scaler: Any  # a GradScaler for fp16
    attention: Callable[[], contextlib.AbstractContextManager[Any]]
    applied: dict[str, Any]
    unsupported: dict[str, str]
    channels_last: bool = False
    feed: Optional[Any] = None  # rocmdoctor.tuners.bench.feed.Feed with --data
    rank: Optional[Any] = None  # rocmdoctor.tuners.bench.ddp.Rank of a data-parallel run
    backend: Optional[str] = None  # its process group's backend (nccl, gloo)

    @property
    def cuda(self) -> bool:
        return bool(self.device.type == "cuda")

    def agree(self, flag: bool) -> bool:
        """True where any rank says so (a data-parallel run's ranks decide together)."""
        if self.rank is None:
            return flag
        from rocmdoctor.tuners.bench import ddp

        return bool(ddp.agreed(self.torch, int(flag), self.device))

    def agree_count(self, count: int) -> int:
        """The smallest of the ranks' counts (all ranks then take as many steps)."""
        if self.rank is None:
            return count
        from rocmdoctor.tuners.bench import ddp

        return ddp.agreed(self.torch, count, self.device, most=False)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.amp is None:
            return contextlib.nullcontext()
        return self.torch.autocast(self.device.type, dtype=self.amp)


def prepare(torch: Any, spec: BenchSpec) -> Training:
    """The model, a batch, the optimizer and the settings, on the device the spec asks for."""
    import os

    from rocmdoctor.tuners.bench import ddp
    from rocmdoctor.tuners.bench.workloads import WorkloadError, build_workload

    rank = ddp.rank_of(os.environ)
    if rank is not None:
        too_few = ddp.set_device(torch, rank, spec.device)
        if too_few:
            raise SetupError(too_few)
    device = pick_device(torch, spec.device)
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
    optimizer, refused = implemented_optimizer(torch, work.optimizer(list(model.parameters())),
                                               spec.settings.get("optimizer_impl"))
    if refused:
        unsupported["optimizer_impl"] = refused
        applied.pop("optimizer_impl", None)
    runner: Callable[..., Any] = model
    backend = None
    if rank is not None:  # DDP around the model, then compile (torch's order for DDP)
        backend = ddp.join(torch, rank, device)
        runner = ddp.wrap(torch, model, device, spec.settings)
    if spec.compile:
        runner = torch.compile(runner, mode=spec.settings.get("compile_mode", "default"))
    feed = _feed(torch, device, spec, work.classes, rank.rank if rank else 0) \
        if spec.data else None
    return Training(
        torch=torch, device=device, work=work, model=model, inputs=inputs, targets=targets,
        optimizer=optimizer, runner=runner,
        amp={"bf16": torch.bfloat16, "fp16": torch.float16}.get(spec.precision),
        scaler=torch.amp.GradScaler(device.type) if spec.precision == "fp16" else None,
        attention=sdpa_context(torch, spec.settings.get("sdpa_backend"), unsupported),
        applied=applied, unsupported=unsupported, channels_last=spec.channels_last, feed=feed,
        rank=rank, backend=backend)


def _feed(torch: Any, device: Any, spec: BenchSpec, classes: int, rank: int = 0) -> Any:
    """Batches from the --data folder with the spec's loader settings (each rank of a
    data-parallel run shuffles with its own seed)."""
    from rocmdoctor.tuners.bench.data import DataError, LoaderSettings
    from rocmdoctor.tuners.bench.feed import Feed

    try:
        return Feed.of(torch, device, spec.data, spec.batch_size, spec.image_size,
                       LoaderSettings.of(spec.settings), classes or 1000,
                       int(spec.settings.get("seed", 0)) + rank)
    except DataError as exc:
        raise SetupError(str(exc)) from None


def step_of(t: Training, fault: str) -> Callable[[], None]:
    def step() -> None:
        if fault == "oom":
            raise getattr(t.torch, "OutOfMemoryError", MemoryError)(
                "injected out of memory (ROCMDOCTOR_TEST_FAULT=oom)")
        inputs, targets, begun = t.inputs, t.targets, None
        if t.feed is not None:  # a real batch each step, its wait and compute timed apart
            inputs, targets = t.feed.next()
            if t.channels_last and inputs.dim() == 4:
                inputs = inputs.contiguous(memory_format=t.torch.channels_last)
            begun = t.feed.start()
        t.optimizer.zero_grad(set_to_none=True)
        with t.autocast(), t.attention():
            loss = t.work.loss_fn(t.runner(inputs), targets)
        if t.scaler is not None:  # GradScaler.step syncs the host once per step (found_inf)
            t.scaler.scale(loss).backward()
            t.scaler.step(t.optimizer)
            t.scaler.update()
        else:
            loss.backward()
            t.optimizer.step()
        if t.feed is not None:
            t.feed.end(begun)
    return step


def warm_up(t: Training, spec: BenchSpec, step: Callable[[], None],
             emit: Callable[[dict[str, Any]], None], held: Optional[float]) -> list[float]:
    """Warm-up steps, timed on the host after a sync. A GPU idle through a long compile or
    MIOpen find runs at low clocks for a while; a count of warm-up steps alone then measures
    the ramp (seen on an H200: compiled ResNet-50 windows rose from 4,491 to 5,684 images/s
    over 50 steps after 10 warm-up), so a GPU warms up for min_warmup_s too. On the CPU a run
    may be held to about `held` seconds."""
    warm: list[float] = []
    min_warm_s = float(spec.settings.get("min_warmup_s", 2.0 if t.cuda else 0.0))
    cap = max(spec.warmup, 1) * 50
    while t.agree(len(warm) < spec.warmup or (len(warm) < cap and sum(warm[1:]) < min_warm_s)):
        if t.agree(held is not None and len(warm) >= 2 and sum(warm) >= held / 4):
            break
        t0 = time.perf_counter()
        step()
        if t.cuda:
            t.torch.cuda.synchronize(t.device)
        warm.append(time.perf_counter() - t0)
        emit({"event": "warmup", "step": len(warm), "of": spec.warmup, "step_s": warm[-1]})
    return warm


def measure(t: Training, steps: int, step: Callable[[], None],
             emit: Callable[[dict[str, Any]], None], unit_per_step: int
             ) -> tuple[list[float], list[dict[str, Any]]]:
    """The measured steps in windows, each timed with device events."""
    step_s: list[float] = []
    windows: list[dict[str, Any]] = []
    sizes = window_sizes(steps)
    for index, size in enumerate(sizes):
        times = timed_window(t.torch, step, size, t.cuda)
        step_s.extend(times)
        rate = unit_per_step * size / sum(times)
        windows.append({"index": index, "steps": size, "seconds": sum(times),
                        "samples_per_s": rate})
        emit({"event": "window", "index": index, "of": len(sizes), "steps": size,
              "seconds": sum(times), "samples_per_s": rate, "unit": t.work.unit})
    return step_s, windows


def held_steps(wanted: int, warm: list[float], held_s: float, least: int = 3) -> int:
    """How many steps to measure so that warm-up and measurement take about `held_s`: the
    time left over the typical warm-up step (the first, with its one-time cost, aside)."""
    typical = statistics.median(warm[1:]) if len(warm) > 1 else warm[-1]
    if typical <= 0:
        return wanted
    fit = int(max(0.0, held_s - sum(warm)) / typical)
    return max(min(wanted, fit), min(wanted, least))


def timed_window(torch: Any, step: Callable[[], None], size: int, cuda: bool) -> list[float]:
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


def sdpa_context(torch: Any, backend: Optional[str], unsupported: dict[str, str]
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


def pick_device(torch: Any, wanted: str) -> Any:
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
