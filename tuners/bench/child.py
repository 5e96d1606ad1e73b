"""Parent side of a benchmark trial: run the worker in a child process and classify the end.

A trial is an environment patch plus a spec, run as `python -m rocmdoctor.tuners.bench.worker` with
its own `env=` (allocator, MIOpen and TunableOp variables are read once at process start, so a
fresh process per trial is the only honest way to vary them). The parent's os.environ is never
touched. A crash, hang, out-of-memory or prune is a recorded state with the tail of stderr,
never an exception (the pattern of optuna's `_run_trial`).

Wire protocol (worker -> parent): JSON objects, one per line, on the child's stdout:
  {"event": "start", ...}                       device and model chosen
  {"event": "warmup", "step": i, "of": n, "step_s": x}
  {"event": "window", "index": i, "of": n, "samples_per_s": x, "unit": "images"}
  {"event": "result", "result": {...}}           schema "rocmdoctor.bench/1", then exit 0
  {"event": "oom", "message": "...", "batch_size": b}       then exit 3
  {"event": "error", "message": "..."}           bad spec or no GPU, then exit 2
  {"event": "crash" | "timeout", "message": ...} a rank of a data-parallel run died or hung
Anything else on stdout is ignored; the worker sends stray prints to stderr.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Callable, Optional

from rocmdoctor.host import process
from rocmdoctor.tuners.bench.metrics import headline
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.bench.stacks import StackWatch, abort_for_stacks

STATES = ("ok", "oom", "crashed", "timeout", "pruned", "error")
# The events that end a run: the worker's, and those of the launcher of a data-parallel run
# (rocmdoctor.tuners.bench.ddp_launch): a rank that crashed, or one that hung.
FINAL_EVENTS = ("result", "oom", "error", "crash", "timeout")
STDERR_TAIL_LINES = 40
_EMPTY: Mapping[str, str] = {}
_LIVE: set[process.Popen[str]] = set()  # children running now (kill_all on Ctrl-C)
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every benchmark child still running (their own sessions do not see Ctrl-C)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        process.kill_group(proc)


@dataclass(frozen=True)
class TrialOutcome:
    """How one benchmark child ended. `result` is the bench result dict when state is "ok"."""

    state: str  # one of STATES
    result: Optional[dict[str, Any]]
    message: str  # one line for the user
    stderr_tail: str  # the last STDERR_TAIL_LINES lines of the child's stderr
    returncode: Optional[int]
    wall_s: float
    survivors: int = 0  # processes of the child still alive after it ended, then killed
    started: bool = True  # the worker said "start" (False: it died or hung before that)


def worker_argv(python: Optional[str] = None, spec: Optional[BenchSpec] = None) -> list[str]:
    """The benchmark worker; the launcher of N ranks for a data-parallel spec."""
    module = "ddp_launch" if spec is not None and spec.nproc > 1 else "worker"
    return [python or sys.executable, "-m", f"rocmdoctor.tuners.bench.{module}"]


# A data-parallel run's launcher names the rank that hangs when this is left of the timeout.
DDP_DEADLINE_MARGIN_S = 5.0


def run_bench_child(
    spec: BenchSpec,
    env_patch: Mapping[str, str] = _EMPTY,
    timeout_s: float = 600.0,
    on_window: Optional[Callable[[int, float], bool]] = None,
    python: Optional[str] = None,
    cwd: Optional[str] = None,
    on_event: Optional[Callable[[dict[str, Any]], None]] = None,
    cancel: Optional[threading.Event] = None,
    base_env: Optional[Mapping[str, str]] = None,
) -> TrialOutcome:
    """Run one benchmark in a child process and return how it ended.

    `on_window(index, samples_per_s)` is called live for each measured window; returning
    False kills the child (state "pruned"). `on_event` sees every protocol event (progress
    display). Past `timeout_s` the child's whole process group is killed (state "timeout").
    When `cancel` is set (Ctrl-C seen by another thread) the child is killed and
    KeyboardInterrupt raised here, as if Ctrl-C had reached this thread. The child's
    environment is `base_env` (default: this process's) with `env_patch` over it.
    """
    start = time.monotonic()
    problems = spec.problems()
    if problems:
        return TrialOutcome("error", None, "; ".join(problems), "", None, 0.0)
    env = {**(os.environ if base_env is None else base_env), **env_patch}
    env["PYTHONUNBUFFERED"] = "1"
    env[process.PARENT_ENV] = str(os.getpid())  # the worker dies with this process
    tag = env[process.TAG_ENV] = _new_tag()  # and everything it starts ends with it
    if spec.nproc > 1 and timeout_s > 2 * DDP_DEADLINE_MARGIN_S:
        from rocmdoctor.tuners.bench.ddp_launch import DEADLINE_ENV

        env[DEADLINE_ENV] = f"{timeout_s - DDP_DEADLINE_MARGIN_S:.1f}"
    try:
        proc = process.spawn(worker_argv(python, spec), env=env, cwd=cwd, stdin=process.PIPE)
    except OSError as exc:
        return TrialOutcome("error", None, f"cannot start {worker_argv(python)[0]}: "
                            f"{exc.strerror or exc}", "", None, time.monotonic() - start)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        outcome = _watch(proc, spec, start, timeout_s, on_window, on_event, cancel,
                         python or sys.executable)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        # compile workers, a power sampler or anything else the worker started must not
        # outlive its trial (they hold GPU memory and file descriptors, and add up)
        survivors = process.reap_tagged(tag, exclude=(proc.pid,))
    return dataclasses.replace(outcome, survivors=survivors)


_TAGS = itertools.count()


def _new_tag() -> str:
    return f"{os.getpid()}-{next(_TAGS)}-{time.monotonic_ns()}"


def _watch(proc: process.Popen[str], spec: BenchSpec, start: float, timeout_s: float,
           on_window: Optional[Callable[[int, float], bool]],
           on_event: Optional[Callable[[dict[str, Any]], None]],
           cancel: Optional[threading.Event], python: str) -> TrialOutcome:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    tail = _Tail(STDERR_TAIL_LINES)
    lines: queue.Queue[Optional[str]] = queue.Queue()
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, lines.put), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, tail), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        proc.stdin.write(json.dumps(spec.to_dict()))
        proc.stdin.close()
    except OSError:
        pass  # the child died before reading its spec; its exit status tells why

    began: list[bool] = []

    def seen(event: dict[str, Any]) -> None:
        if event.get("event") == "start":
            began.append(True)
        if on_event is not None:
            on_event(event)

    try:
        final, ended_by = _follow(lines, start + timeout_s, on_window, seen, cancel)
        if ended_by == "cancelled":
            raise KeyboardInterrupt
    except BaseException:  # Ctrl-C or a failing callback: never leave the child running
        process.kill_group(proc)
        proc.wait()
        raise
    if ended_by == "timeout" and spec.nproc == 1:  # (a launcher names its hung ranks itself)
        abort_for_stacks([proc])  # where it hung, in its stderr, before it is killed
    if ended_by:
        process.kill_group(proc)
    returncode, exit_hung = _reap(proc, start + timeout_s, cancel)
    if exit_hung and (final is None or final.get("event") != "result"):
        ended_by = ended_by or "timeout"
    for reader in readers:
        reader.join(timeout=2.0)
    wall = time.monotonic() - start
    stderr_tail = tail.text()
    state, result, message = _classify(spec, final, ended_by, returncode, stderr_tail, timeout_s,
                                       exit_hung, tail.stacks.where())
    if state == "crashed" and not began and not stderr_tail.strip():
        message = (f"{python} exited with code {returncode} before the benchmark started, "
                   "printing nothing: is it a Python with torch and rocmdoctor? (check: "
                   f"{python} -c 'import torch, rocmdoctor')")
    return TrialOutcome(state, result, message, stderr_tail, returncode, wall,
                        started=bool(began))


def _reap(proc: process.Popen[str], deadline: float, cancel: Optional[threading.Event]
          ) -> tuple[int, bool]:
    """Wait for the child to exit (its exit status, and whether it hung at exit): one that
    closed stdout but does not exit by the deadline (5 s at least) is killed."""
    wait_until = time.monotonic() + max(5.0, deadline - time.monotonic())
    while True:
        try:
            return proc.wait(timeout=0.25), False
        except process.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                process.kill_group(proc)
                proc.wait()
                raise KeyboardInterrupt from None
            if time.monotonic() >= wait_until:
                process.kill_group(proc)  # closed stdout but never exited
                return proc.wait(), True


def _follow(
    lines: queue.Queue[Optional[str]], deadline: float,
    on_window: Optional[Callable[[int, float], bool]],
    on_event: Optional[Callable[[dict[str, Any]], None]],
    cancel: Optional[threading.Event] = None,
) -> tuple[Optional[dict[str, Any]], str]:
    """Read events until stdout closes; returns the final event and "", "timeout",
    "pruned" or "cancelled"."""
    final: Optional[dict[str, Any]] = None
    while True:
        if cancel is not None and cancel.is_set():
            return final, "cancelled"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return final, "timeout"
        try:
            line = lines.get(timeout=min(remaining, 0.25) if cancel is not None else remaining)
        except queue.Empty:
            if cancel is None or time.monotonic() >= deadline:
                return final, "timeout"
            continue
        if line is None:  # stdout closed: the child is exiting
            return final, ""
        event = _parse_event(line)
        if event is None:
            continue
        if on_event is not None:
            on_event(event)
        kind = event.get("event")
        if kind == "window" and on_window is not None:
            index = int(event.get("index", 0))
            if not on_window(index, float(event.get("samples_per_s", 0.0))):
                return {"event": "pruned", "index": index}, "pruned"
        elif kind in FINAL_EVENTS:
            final = event


def _seconds(value: float) -> str:
    """A timeout as people write it: 3, 17.5, 0.25 (never 17.5053)."""
    return f"{value:.{2 if value < 1 else 1}f}".rstrip("0").rstrip(".")


def _classify(
    spec: BenchSpec, final: Optional[dict[str, Any]], ended_by: str,
    returncode: Optional[int], stderr_tail: str, timeout_s: float, exit_hung: bool = False,
    where: str = "",
) -> tuple[str, Optional[dict[str, Any]], str]:
    """The state, the result and the message; `where` is where a process that timed out was
    (rocmdoctor.tuners.bench.stacks)."""
    if ended_by == "pruned":
        window = int(final.get("index", 0)) + 1 if final else 0
        return "pruned", None, f"stopped by the caller after measured window {window}"
    if ended_by == "timeout":
        return "timeout", None, (f"no result within {_seconds(timeout_s)} s; the child was "
                                 "killed" + (f"; it was in {where}" if where else ""))
    said = _by_last_event(spec, final, returncode, exit_hung)
    return said if said is not None else _by_exit(returncode, stderr_tail)


def _by_last_event(spec: BenchSpec, final: Optional[dict[str, Any]],
                   returncode: Optional[int], exit_hung: bool
                   ) -> Optional[tuple[str, Optional[dict[str, Any]], str]]:
    """How the child ended by what it said last: its result, out of memory, an error."""
    kind = final.get("event") if final else None
    if final is None or kind not in FINAL_EVENTS:
        return None
    if kind == "result" and (returncode == 0 or exit_hung):
        result = final.get("result")
        if isinstance(result, dict):
            # A GPU process that hangs while exiting still measured correctly; say so.
            note = "; the process hung at exit and was killed" if exit_hung else ""
            return "ok", result, _ok_message(result) + note
    if kind == "oom":
        where = f" on rank {final['rank']}" if "rank" in final else ""
        return "oom", None, (f"out of memory at batch {final.get('batch_size', spec.batch_size)}"
                             f"{where}")
    if kind == "error":
        return "error", None, str(final.get("message", "the worker reported an error"))
    if kind in ("crash", "timeout"):  # a data-parallel run: which rank, and how
        return {"crash": "crashed"}.get(kind, kind), None, str(final.get("message", kind))
    return None


def _by_exit(returncode: Optional[int], stderr_tail: str
             ) -> tuple[str, Optional[dict[str, Any]], str]:
    """A child that said nothing conclusive: killed by a signal, or its exit code and its
    last line on stderr."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return "crashed", None, f"the benchmark process was killed by {name}"
    last = next((ln for ln in reversed(stderr_tail.splitlines()) if ln.strip()), "")
    detail = f": {last.strip()}" if last else ""
    return "crashed", None, f"the benchmark process exited with code {returncode}{detail}"


def _ok_message(result: Mapping[str, Any]) -> str:
    metrics = result.get("metrics") or {}
    tput = headline(metrics.get("throughput"))
    unit = metrics.get("unit", "samples")
    return f"{tput:,.1f} {unit}/s" if isinstance(tput, (int, float)) else "finished"


def _parse_event(line: str) -> Optional[dict[str, Any]]:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


def _pump(stream: IO[str], sink: Callable[[Optional[str]], Any]) -> None:
    try:
        for line in stream:
            sink(line)
    except (OSError, ValueError):
        pass
    sink(None)


TRACEBACK = "Traceback (most recent call last):"


class _Tail:
    """The last lines of the child's stderr, keeping the header of the last traceback even
    when a deep one scrolls it out: without it the cut frames read as unrelated noise."""

    def __init__(self, size: int) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=size)
        self.seen = 0
        self.header_at: Optional[int] = None  # line number of the last traceback header
        self.stacks = StackWatch()  # where it was, when faulthandler wrote its stacks

    def __call__(self, line: Optional[str]) -> None:
        if line is None:
            return
        text = line.rstrip("\n")[:2000]
        if text.startswith(TRACEBACK):
            self.header_at = self.seen
        self.stacks(text)
        self.lines.append(text)
        self.seen += 1

    def text(self) -> str:
        first = self.seen - len(self.lines)  # line number of the oldest line kept
        if self.header_at is None or self.header_at >= first:
            return "\n".join(self.lines)
        cut = first - self.header_at - 1
        return "\n".join([TRACEBACK, f"  ... ({cut} lines not kept)", *self.lines])


def excerpt(stderr_tail: str, limit: int = 15) -> str:
    """The last traceback in a stderr tail with its header and its end (the error), within
    `limit` lines; the last `limit` lines when there is none."""
    lines = stderr_tail.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if not starts:
        return "\n".join(lines[-limit:])
    block = lines[starts[-1]:]
    if len(block) <= limit:
        return "\n".join(block)
    keep = max(1, limit - 2)
    return "\n".join([block[0], f"  ... ({len(block) - 1 - keep} lines)", *block[-keep:]])
