"""`rocmdoctor bench` and `rocmdoctor compare` (registered by rocmdoctor.cli.app).

The measurement runs in a child process (rocmdoctor.tuners.bench.child), so environment settings
apply and a crash, hang or out-of-memory cannot take the CLI down. Progress goes to stderr,
the result table to stdout. Exit codes: 0 measured, 1 the run failed (crash, timeout, out of
memory), 2 bad usage or no GPU. Nothing here imports torch.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import typer

from rocmdoctor.cli.common import fail as _fail
from rocmdoctor.cli.common import unwritable
from rocmdoctor.tuners.bench.spec import DEFAULT_STEPS, SETTINGS, BenchSpec, held_on_cpu

if TYPE_CHECKING:
    from rocmdoctor.tuners.bench.child import TrialOutcome


def parse_settings(pairs: Optional[list[str]]) -> dict[str, Any]:
    """KEY=VALUE pairs; the value is converted to the setting's documented type."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or key not in SETTINGS:
            raise ValueError(f"--set {pair!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(sorted(SETTINGS))}")
        kind = SETTINGS[key][0]
        value: Any = raw.strip()
        if kind is bool:
            if value.lower() not in ("1", "0", "true", "false", "on", "off", "yes", "no"):
                raise ValueError(f"--set {key}: {raw!r} is not true or false")
            value = value.lower() in ("1", "true", "on", "yes")
        elif kind is int:
            try:
                value = int(value)
            except ValueError:
                raise ValueError(f"--set {key}: {raw!r} is not an integer") from None
        elif kind is float:
            try:
                value = float(value)
            except ValueError:
                raise ValueError(f"--set {key}: {raw!r} is not a number") from None
            if not math.isfinite(value):
                raise ValueError(f"--set {key}: {raw!r} is not a finite number")
        out[key] = value
    return out


def bench_command(
    model: str = typer.Option("resnet50", "--model",
                              help="resnet50, vit_b_16, gpt2, tinycnn, or pkg.module:factory."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Samples per step."),
    precision: str = typer.Option(
        "fp32", "--precision",
        help="fp32 (PyTorch defaults) | fp32-strict (no TF32) | tf32 | bf16 | fp16."),
    channels_last: bool = typer.Option(False, "--channels-last", help="NHWC memory format."),
    compile_model: bool = typer.Option(False, "--compile", help="torch.compile the model."),
    steps: Optional[int] = typer.Option(
        None, "--steps", min=1, help="Measured steps (default 50; on a CPU as many as fit in "
        "about 20 s with the warm-up unless given)."),
    warmup: int = typer.Option(10, "--warmup", min=1, help="Warm-up steps (not measured)."),
    device: str = typer.Option("auto", "--device", help="auto | cuda | cpu (cuda = ROCm too)."),
    image_size: int = typer.Option(224, "--image-size", min=1, help="Image side in pixels."),
    seq_len: int = typer.Option(512, "--seq-len", min=1, help="Tokens per sequence (gpt2)."),
    settings: Optional[list[str]] = typer.Option(
        None, "--set", metavar="KEY=VALUE", help="A run-time setting, e.g. cudnn_benchmark=true."),
    json_file: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                            help="Write the result JSON to FILE."),
    find_max_batch: bool = typer.Option(False, "--find-max-batch",
                                        help="Find the largest batch that fits, then stop."),
    timeout: float = typer.Option(600.0, "--timeout", min=1.0,
                                  help="Seconds the run may take (at least 1)."),
    python: Optional[str] = typer.Option(None, "--python", help="The Python to train with."),
    data: Optional[str] = typer.Option(
        None, "--data", metavar="PATH|synthetic-jpeg[:N]",
        help="Train on images: a folder PATH/<class>/<image>.jpg, or N JPEG files rocmdoctor "
        "writes once into its cache (default 10000); shows whether the GPU waits for them. "
        "Loader settings with --set: num_workers, pin_memory, persistent_workers, "
        "prefetch_factor, gpu_decode."),
    nproc: int = typer.Option(
        1, "--nproc", min=1, help="Train with DistributedDataParallel on N local processes, one "
        "a GPU (gloo on the CPU); the result is the slowest rank's pace times N, with the "
        "scaling efficiency against one process. DDP settings with --set: bucket_cap_mb, "
        "gradient_as_bucket_view, static_graph, broadcast_buffers."),
    scaling_run: bool = typer.Option(
        True, "--scaling/--no-scaling", help="With --nproc: measure the same settings in one "
        "process first, for the scaling efficiency."),
) -> None:
    """Measure training throughput honestly (warm-up excluded), on synthetic or real data.

    With --data, images are read and decoded as training does, and the result says how long
    the device waited for them."""
    from rocmdoctor.tuners.bench.child import run_bench_child

    try:
        spec = BenchSpec(model=model, batch_size=batch_size, precision=precision,
                         channels_last=channels_last, compile=compile_model,
                         steps=steps or DEFAULT_STEPS, warmup=warmup, device=device,
                         image_size=image_size, seq_len=seq_len,
                         settings=held_on_cpu(parse_settings(settings), steps),
                         data=data or "", nproc=nproc)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    problems = spec.problems()
    if problems:
        raise _fail("; ".join(problems))
    problem = unwritable(json_file) if json_file else None
    if problem:  # found before anything is measured
        raise _fail(problem)
    if data:
        from rocmdoctor.cli.data import resolve_data

        spec = resolve_data(data, spec, python, int(spec.settings.get("num_workers", 0) or 0))
    if find_max_batch:
        raise typer.Exit(_max_batch(spec, timeout, python))

    single = _one_process_reference(spec, timeout, python) \
        if spec.nproc > 1 and scaling_run else None
    progress = _Progress(spec)
    with progress:
        outcome = run_bench_child(spec, timeout_s=timeout, python=python,
                                  on_event=progress.update)
    if outcome.state == "ok" and outcome.result is not None and single is not None:
        outcome.result["ddp"]["one_process"] = scaling(outcome.result, single, spec.nproc)
    if outcome.state == "error":
        raise _fail(outcome.message)
    if outcome.state == "oom":
        raise _fail(_after_oom(spec, timeout, python), 1)
    if outcome.state != "ok" or outcome.result is None:
        from rocmdoctor.tuners.bench.child import excerpt

        tail = excerpt(outcome.stderr_tail)
        if tail:
            typer.echo(tail, err=True)
        how = {"timeout": "timed out", "error": "failed"}.get(outcome.state, outcome.state)
        raise _fail(f"the benchmark {how}: {outcome.message}", 1)
    from rocmdoctor.tuners.bench.render import render_result

    sys.stdout.write(render_result(outcome.result, width=_width(), color=sys.stdout.isatty()))
    if json_file:
        _write_json(outcome.result, json_file)


def _one_process_reference(spec: BenchSpec, timeout: float, python: Optional[str]
                           ) -> Optional[dict[str, Any]]:
    """The same settings in one process (no DDP): what N ranks are measured against. None,
    with a warning, when it does not finish."""
    import dataclasses

    from rocmdoctor.tuners.bench.child import run_bench_child

    typer.echo(f"rocmdoctor: first the same settings in one process, the reference of the "
               f"scaling efficiency; then {spec.nproc} ranks", err=True)
    one = dataclasses.replace(spec, nproc=1)
    # as one rank runs: with the thread count torchrun gives each rank
    from rocmdoctor.tuners.bench.ddp_launch import DEFAULT_OMP_THREADS

    patch = {} if "OMP_NUM_THREADS" in os.environ else {"OMP_NUM_THREADS": DEFAULT_OMP_THREADS}
    progress = _Progress(one)
    with progress:
        outcome = run_bench_child(one, patch, timeout_s=timeout, python=python,
                                  on_event=progress.update)
    if outcome.state != "ok" or outcome.result is None:
        typer.echo(f"rocmdoctor: warning: the one-process run {outcome.state}: "
                   f"{outcome.message}; no scaling efficiency", err=True)
        return None
    return outcome.result


def scaling(result: dict[str, Any], single: dict[str, Any], nproc: int) -> dict[str, Any]:
    """The one-process run's throughput and how close N ranks come to N times it."""
    from rocmdoctor.tuners.bench.metrics import headline

    one = headline(single["metrics"]["throughput"]) or 0.0
    many = headline(result["metrics"]["throughput"]) or 0.0
    return {"throughput": one, "scaling_efficiency": many / (nproc * one) if one else None,
            "how": f"the {nproc} ranks' throughput over {nproc} times one process's, same "
                   "settings"}


def _after_oom(spec: BenchSpec, timeout: float, python: Optional[str]) -> str:
    """Halve the batch in fresh processes until one fits; the message says which."""
    from rocmdoctor.tuners.bench.maxbatch import find_below

    head = f"out of memory at batch {spec.batch_size}"
    if spec.batch_size == 1:
        return f"{head}: even batch 1 does not fit"
    typer.echo(f"rocmdoctor: {head}; finding the largest batch that fits (short runs, from "
               f"batch {min(64, spec.batch_size // 2)})", err=True)
    from rocmdoctor.tuners.bench.child import TrialOutcome, run_bench_child

    first: list[float] = []  # the wall time of the first probe that fit
    search_end = time.monotonic() + SEARCH_S

    def run(probe: BenchSpec) -> TrialOutcome:
        # a probe far slower than one that fit is too large to train with, even where it fits
        # in memory (a CPU): it is cut and counts as too large
        limit = min(timeout, max(PROBE_FLOOR_S, PROBE_SLOWER * first[0]) if first else 300.0)
        if first:  # once a batch fits, the search has SEARCH_S in all
            limit = min(limit, search_end - time.monotonic())
            if limit < 5.0:
                return TrialOutcome("budget", None, "the search's time is up", "", None, 0.0)
        outcome = run_bench_child(probe, {}, limit, python=python)
        if outcome.state == "ok" and not first:
            first.append(outcome.wall_s)
        return outcome

    found = find_below(spec, run, spec.batch_size, on_probe=_report_probe)
    if found.probes and found.probes[-1][1] == "budget":
        found.probes.pop()
    if found.failure is not None:
        return f"{head}; then the {found.message()}"
    if found.largest_fit is None:
        return f"{head}: even batch 1 does not fit"
    slow = " or is too slow to probe" if found.too_slow == found.first_oom else ""
    return (f"{head}; the largest batch that fits is {found.largest_fit} (batch "
            f"{found.first_oom} does not{slow}): rerun with --batch-size {found.largest_fit}")


# A probe of the search after an out-of-memory may take PROBE_SLOWER times the first that fit
# (at least PROBE_FLOOR_S): one step of a batch of millions fits a CPU's memory but takes minutes.
PROBE_SLOWER = 4.0
PROBE_FLOOR_S = 30.0
SEARCH_S = 90.0  # the search after an out-of-memory, once a batch fits: then what it knows


def _report_probe(batch: int, outcome: TrialOutcome) -> None:
    if outcome.state != "budget":
        typer.echo(f"  batch {batch}: {outcome.state} ({outcome.wall_s:.0f} s)", err=True)


def _max_batch(spec: BenchSpec, timeout: float, python: Optional[str]) -> int:
    from rocmdoctor.tuners.bench.maxbatch import child_runner, find_max_batch

    typer.echo(f"searching the largest batch for {spec.model} ({spec.precision}) that fits",
               err=True)
    found = find_max_batch(spec, child_runner({}, timeout, python), on_probe=_report_probe)
    if found.failure is not None:
        code = 2 if found.failure.state == "error" else 1
        typer.echo(f"rocmdoctor: error: {found.message()}", err=True)
        return code
    typer.echo(found.message())
    return 0 if found.largest_fit else 1


def _write_json(result: dict[str, Any], path: str) -> None:
    from rocmdoctor.host.live import account_redactor
    from rocmdoctor.redact import redact_tree

    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(redact_tree(result, account_redactor()), fh, indent=2, sort_keys=True)
            fh.write("\n")
    except OSError as exc:
        raise _fail(f"cannot write {path}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {account_redactor()(path)}", err=True)  # no home or user name shown


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


class _Progress:
    """A rich progress bar on stderr with live throughput on a terminal; in a log or a pipe,
    one plain line per event and, when nothing has come for 2 s (importing torch, a
    torch.compile warm-up), a line saying what it waits for every 5 s with the time so far."""

    def __init__(self, spec: BenchSpec, quiet_s: float = 2.0) -> None:
        import time

        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from rocmdoctor.cli.progress import Progress as Waiting

        self.spec = spec
        self.total = spec.warmup + spec.steps
        console = Console(stderr=True)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.completed}/{task.total} steps"),
                                 TimeElapsedColumn(), console=console,
                                 disable=not console.is_terminal, transient=True)
        self.task = self.progress.add_task(f"{spec.model}: starting", total=self.total)
        self.lines = not console.is_terminal  # logs and pipes get one plain line per event
        self.quiet_s = quiet_s
        self._phase = ("the benchmark to start (importing torch)", time.monotonic())
        self._last = self._phase[1]
        self.waiting = Waiting(self._waiting_on, sys.stderr, delay=quiet_s, live=False,
                               idle=None)

    def _waiting_on(self) -> list[tuple[str, float]]:
        import time

        if time.monotonic() - self._last < self.quiet_s:
            return []
        return [self._phase]

    def _enter_phase(self, what: str) -> None:
        import time

        self._last = time.monotonic()
        self._phase = (what, self._last)

    def __enter__(self) -> _Progress:
        self.progress.start()
        if self.lines:
            self.waiting.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lines:
            self.waiting.__exit__(None, None, None)
        self.progress.stop()

    def update(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        compiling = f"{event.get('model', self.spec.model)} with torch.compile (first steps)"
        if kind == "start":
            self._enter_phase("torch.compile (first steps)" if self.spec.compile
                              else "warm-up step 1")
        elif kind == "warmup":
            self._enter_phase(f"warm-up step {int(event.get('step', 0)) + 1}")
        elif kind == "window":
            index = int(event.get("index", 0)) + 1
            self._enter_phase(f"measuring window {index + 1}/{event.get('of')}"
                              if index < int(event.get("of", 0)) else "the result")
        if self.lines:
            if kind == "start" and self.spec.compile:
                typer.echo(f"rocmdoctor: compiling {compiling}", err=True)
            self._line(event)
            return
        if kind == "start":
            self.progress.update(self.task, description=(
                f"compiling {compiling}" if self.spec.compile
                else f"{event.get('model')} on {event.get('device')}: warm-up"))
        elif kind == "warmup":
            self.progress.update(self.task, advance=1, description=(
                f"warm-up {event.get('step')}/{event.get('of')} "
                f"({float(event.get('step_s', 0.0)):.2f} s/step)"))
        elif kind == "window":
            self.progress.update(self.task, advance=int(event.get("steps", 0)), description=(
                f"measuring: {float(event.get('samples_per_s', 0.0)):,.1f} "
                f"{event.get('unit', 'samples')}/s"))

    @staticmethod
    def _line(event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "warmup" and event.get("step") == 1:
            typer.echo(f"first step {float(event.get('step_s', 0.0)):.2f} s", err=True)
        elif kind == "window":
            typer.echo(f"window {int(event.get('index', 0)) + 1}/{event.get('of')}: "
                       f"{float(event.get('samples_per_s', 0.0)):,.1f} "
                       f"{event.get('unit', 'samples')}/s", err=True)


def compare_command(
    files: list[str] = typer.Argument(..., metavar="RESULT.json...",
                                      help="Results of `rocmdoctor bench --json`."),
    markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table."),
    anchors: bool = typer.Option(False, "--anchors",
                                 help="Also show published figures for the same GPU and model."),
) -> None:
    """Compare bench results side by side, with differences against the first."""
    from rocmdoctor.tuners.bench.compare import (
        CompareError,
        label_of,
        load_result,
        render_compare_markdown,
        render_compare_text,
    )

    if len(files) < 2:
        raise _fail(f"compare needs two or more results, got {len(files)} (rocmdoctor compare "
                    "A.json B.json)")
    try:
        results = [(label_of(path), load_result(path)) for path in files]
    except CompareError as exc:
        raise _fail(str(exc)) from None
    if markdown:
        sys.stdout.write(render_compare_markdown(results, anchors=anchors))
    else:
        sys.stdout.write(render_compare_text(results, width=_width(),
                                             color=sys.stdout.isatty(), anchors=anchors))
