"""A data-parallel benchmark: N ranks of the benchmark worker started as torchrun starts a
training script's (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
https://docs.pytorch.org/docs/stable/elastic/run.html), run as
`python -m rocmdoctor.tuners.bench.ddp_launch` with the spec on stdin.

It speaks the worker's protocol (rocmdoctor.tuners.bench.child), so a trial of N ranks is
started, followed, cut off and reaped as a trial of one:
- progress is rank 0's; a measured window is relayed once every rank has measured it, at
  N times the slowest rank's rate (every rank waits for the slowest in each step's gradient
  all-reduce, so the slowest rank sets the pace);
- the result is the slowest rank's with its throughput times N, and `ddp` lists every rank;
- a rank that dies, runs out of memory or reports an error ends the run: the other ranks are
  killed and the first failure is reported with its rank (events "crash", "oom", "error");
- past ROCMDOCTOR_DDP_DEADLINE_S every rank is killed and the rank furthest behind is named
  (event "timeout"), with where each rank's Python was: the ranks are sent SIGABRT first,
  and the worker's faulthandler writes their stacks to stderr;
- a rank that has given its result and does not exit within EXIT_GRACE_S (it hangs leaving
  its process group) is killed, and the run's result stands with a warning that says so.
The ranks are in this process's group: killing the trial's group kills them all.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from typing import Any, Optional

from rocmdoctor.host import child_setup, process
from rocmdoctor.tuners.bench.metrics import headline
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.bench.stacks import StackWatch, abort_for_stacks

DEADLINE_ENV = "ROCMDOCTOR_DDP_DEADLINE_S"
GRACE_S = 1.0  # after the first failure, how long the others get before they are killed
EXIT_GRACE_S = 10.0  # once every rank has given its result, how long they get to exit
TAIL = 40
# torchrun gives every rank one intra-op thread when OMP_NUM_THREADS is unset, so N ranks on
# one machine do not each take every core (torch/distributed/run.py).
DEFAULT_OMP_THREADS = "1"


class RankProc:
    """One rank's process: its events in the shared queue, its stderr relayed and kept."""

    def __init__(self, rank: int, proc: Any, events: queue.Queue[tuple[int, Any]]) -> None:
        self.rank, self.proc, self.events = rank, proc, events
        self.stderr: collections.deque[str] = collections.deque(maxlen=TAIL)
        self.stacks = StackWatch()  # where it was, when faulthandler wrote its stacks
        self.stage = "starting"
        self.steps = 0
        self.ended: Optional[float] = None
        self.result_at: Optional[float] = None
        for target in (self._out, self._err, self._wait):
            threading.Thread(target=target, daemon=True).start()

    def _out(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.events.put((self.rank, json.loads(line)))
                except ValueError:
                    continue

    def _err(self) -> None:
        for line in self.proc.stderr:
            text = line.rstrip("\n")
            self.stderr.append(text[:500])
            self.stacks(text)
            sys.stderr.write(f"[rank {self.rank}] {line}")

    def _wait(self) -> None:
        self.proc.wait()
        self.ended = time.monotonic()
        self.events.put((self.rank, None))

    def how_it_died(self) -> str:
        code = self.proc.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"rank {self.rank} was killed by {name} ({self.stage})"
        last = next((s for s in reversed(self.stderr) if s.strip()), "")
        return f"rank {self.rank} exited with code {code} ({self.stage})" + \
            (f": {last.strip()}" if last else "")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(base: dict[str, str], rank: int, world: int, port: int) -> dict[str, str]:
    env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
               LOCAL_WORLD_SIZE=str(world), GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), PYTHONUNBUFFERED="1")
    env[process.PARENT_ENV] = str(os.getpid())
    env.setdefault("OMP_NUM_THREADS", DEFAULT_OMP_THREADS)
    return env


class Run:
    """The ranks of one benchmark, followed to their end."""

    def __init__(self, spec_text: str, world: int, emit: Any,
                 deadline: Optional[float]) -> None:
        self.world, self.emit, self.deadline = world, emit, deadline
        self.events: queue.Queue[tuple[int, Any]] = queue.Queue()
        port = free_port()
        self.ranks: list[RankProc] = []
        for rank in range(world):
            proc = process.spawn([sys.executable, "-m", "rocmdoctor.tuners.bench.worker"],
                                 env=rank_env(dict(os.environ), rank, world, port),
                                 stdin=process.PIPE, own_session=False)
            assert proc.stdin is not None
            try:
                proc.stdin.write(spec_text)
                proc.stdin.close()
            except OSError:
                pass  # it died at once: its exit says why
            self.ranks.append(RankProc(rank, proc, self.events))
        self.windows: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
        self.results: dict[int, dict[str, Any]] = {}
        self.failure: Optional[tuple[float, int, dict[str, Any]]] = None  # (when, rank, event)
        self.lingered: list[int] = []  # ranks killed after their result: they did not exit
        self.alive = world

    def follow(self) -> int:
        """Relay, merge and judge until every rank has ended; the exit status."""
        while self.alive:
            try:
                rank, event = self.events.get(timeout=0.2)
            except queue.Empty:
                self._check_time()
                continue
            if event is None:
                self.alive -= 1
                self._ended(rank)
            else:
                self._seen(rank, event)
            self._check_time()
        return self._finish()

    def _check_time(self) -> None:
        now = time.monotonic()
        if self.failure is not None and now > self.failure[0] + GRACE_S:
            self._kill_all()
        if self.failure is None and len(self.results) == self.world and not self.lingered \
                and now > max(r.result_at or now for r in self.ranks) + EXIT_GRACE_S:
            self.lingered = [r.rank for r in self.ranks if r.proc.poll() is None]
            self._kill_all()
            return
        if self.deadline is not None and now > self.deadline and self.failure is None:
            self._dump_stacks()
            self.failure = (now, -1, {"event": "timeout", "message": self._behind()})
            self._kill_all()

    def _dump_stacks(self) -> None:
        """Every live rank writes its stacks and dies (within STACK_WAIT_S together)."""
        abort_for_stacks([r.proc for r in self.ranks if r.proc.poll() is None])

    def _behind(self) -> str:
        """Which rank held the others up, as far as their progress tells: of the ranks
        without a result, those with the fewest steps."""
        waiting = [r for r in self.ranks if r.rank not in self.results]
        least = min(r.steps for r in waiting)
        behind = [r for r in waiting if r.steps == least]
        given = [r for r in self.ranks if r.rank in self.results]
        gave = ("; " + ", ".join(f"rank {r.rank}" for r in given) +
                (" has" if len(given) == 1 else " have") + " given a result") if given else ""
        where = "; ".join(f"rank {r.rank} was in {frame}" for r in waiting
                          for frame in [r.stacks.where()] if frame)
        where = f"; {where}" if where else ""
        if len(behind) == len(self.ranks):
            return (f"no result in time; every rank was at '{behind[0].stage}' (one of them "
                    f"holds the others in a collective): every rank was killed{where}")
        names = ", ".join(f"rank {r.rank} ({r.stage})" for r in behind)
        return f"no result in time; furthest behind: {names}{gave}: every rank was killed{where}"

    def _kill_all(self) -> None:
        for r in self.ranks:
            if r.proc.poll() is None:
                r.proc.kill()

    def _seen(self, rank: int, event: dict[str, Any]) -> None:
        kind = event.get("event")
        proc = self.ranks[rank]
        if kind == "start":
            proc.stage = "started"
        elif kind == "warmup":
            proc.stage, proc.steps = f"warm-up step {event.get('step')}", proc.steps + 1
        elif kind == "window":
            index, of = int(event.get("index", 0)) + 1, int(event.get("of", 0))
            proc.stage = f"measured window {index}" if index != of else \
                f"after its last measured window ({index} of {of})"
            proc.steps += int(event.get("steps", 0))
            self._window(rank, event)
            return
        elif kind == "result":
            self.results[rank] = event["result"]
            proc.stage, proc.result_at = "gave its result", time.monotonic()
            return
        elif kind in ("oom", "error"):
            self._fail(rank, {**event, "rank": rank,
                              "message": f"rank {rank}: {event.get('message', '')}"})
            return
        if rank == 0 and kind in ("start", "warmup"):
            self.emit({**event, "ranks": self.world} if kind == "start" else event)

    def _window(self, rank: int, event: dict[str, Any]) -> None:
        index = int(event.get("index", 0))
        self.windows[index][rank] = event
        if len(self.windows[index]) == self.world:
            seen = self.windows[index].values()
            slowest = min(float(e.get("samples_per_s", 0.0)) for e in seen)
            self.emit({**event, "samples_per_s": slowest * self.world,
                       "seconds": max(float(e.get("seconds", 0.0)) for e in seen)})

    def _ended(self, rank: int) -> None:
        proc = self.ranks[rank]
        if proc.proc.returncode != 0 and rank not in self.results:
            self._fail(rank, {"event": "crash", "message": proc.how_it_died()})

    def _fail(self, rank: int, event: dict[str, Any]) -> None:
        """The first failure is the cause; the others follow from it (a rank that loses its
        peer fails in its collective)."""
        when = self.ranks[rank].ended or time.monotonic()
        if self.failure is None or when < self.failure[0] - 0.05 or (
                abs(when - self.failure[0]) <= 0.05 and event.get("event") != "crash"
                and self.failure[2].get("event") == "crash"):
            self.failure = (when, rank, event)

    def _finish(self) -> int:
        if self.failure is not None:
            event = self.failure[2]
            self.emit(event)
            return {"oom": 3, "error": 2}.get(str(event.get("event")), 1)
        if len(self.results) < self.world:
            missing = sorted(set(range(self.world)) - set(self.results))
            self.emit({"event": "crash", "message": f"rank {missing[0]} ended without a "
                                                     "result"})
            return 1
        result = merged([self.results[r] for r in range(self.world)])
        if self.lingered:
            names = ", ".join(f"rank {r}" for r in self.lingered)
            result.setdefault("warnings", []).append(
                f"{names} did not exit within {EXIT_GRACE_S:g} s of giving its result (it hung "
                "leaving the process group) and was killed; the measurement stands")
        self.emit({"event": "result", "result": result})
        return 0


THROUGHPUT_FIGURES = ("median", "p10", "p90", "mean")


def merged(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One result for the whole run: the slowest rank's, its throughput times the ranks (the
    pace every rank keeps), with each rank's own figures in `ddp`."""
    world = len(results)
    rates = [headline(r["metrics"]["throughput"]) or 0.0 for r in results]
    slowest = min(range(world), key=lambda i: rates[i])
    out = copy.deepcopy(results[slowest])
    tput = out["metrics"]["throughput"]
    for name in THROUGHPUT_FIGURES:
        if isinstance(tput.get(name), (int, float)):
            tput[name] = tput[name] * world
    out["workload"]["samples_per_step"] = out["workload"]["samples_per_step"] * world
    for index, window in enumerate(out.get("windows") or []):
        rank_rates = [float(r["windows"][index]["samples_per_s"]) for r in results
                      if len(r.get("windows") or []) > index]
        window["samples_per_s"] = min(rank_rates) * world
    ddp = out.get("ddp") or {}
    ddp.pop("rank", None)
    ddp.pop("local_rank", None)
    ddp.update(
        slowest_rank=slowest, throughput_sum=sum(rates),
        how="the slowest rank's rate times the ranks: every rank waits for the slowest in "
            "each step's gradient all-reduce",
        ranks=[{"rank": i, "throughput": rates[i],
                "step_p50_s": r["metrics"]["step_time_s"]["p50"],
                "memory_bytes": (r["metrics"].get("memory") or {}).get("peak_reserved_bytes")}
               for i, r in enumerate(results)])
    out["ddp"] = ddp
    return out


def main() -> int:
    process.die_with_parent(process.parent_pid_from(os.environ))
    proto = child_setup.protocol_stream()

    def emit(event: dict[str, Any]) -> None:
        proto.write(json.dumps(event, default=str) + "\n")
        proto.flush()

    spec_text = sys.stdin.read() or "{}"
    try:
        spec = BenchSpec.from_dict(json.loads(spec_text))
    except (ValueError, TypeError) as exc:
        emit({"event": "error", "message": f"bad spec: {exc}"})
        return 2
    limit = float(os.environ.get(DEADLINE_ENV, "0") or 0)
    run = Run(spec_text, spec.nproc, emit, time.monotonic() + limit if limit > 0 else None)
    try:
        return run.follow()
    finally:
        run._kill_all()


if __name__ == "__main__":
    sys.exit(main())
