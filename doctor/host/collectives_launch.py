"""Launch the ranks of `rocmdoctor check --collectives` and report how each ended, as JSON.

    python collectives_launch.py --nprocs 2 --backend nccl --timeout 60 [--sizes 1048576,...]

Each rank is its own process (`collectives_rank.py`) started with the variables torchrun
sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so it joins
the group the way a training script launched by torchrun does. Standalone: it runs in the
Python that trains, which need not have rocmdoctor installed.

A rank that dies is reported with its exit status and the tail of its stderr; the others are
then given a few seconds and stopped. A rank still running at the deadline is killed and
reported as hung, with the stage it was in. The output is always one JSON object
(schema rocmdoctor.collectives/1); the exit status is 0 whenever that object was written.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Optional

RANK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collectives_rank.py")
SCHEMA = "rocmdoctor.collectives/1"
DEFAULT_SIZES = (2**20, 8 * 2**20, 64 * 2**20, 256 * 2**20)
GRACE_S = 10.0  # after one rank fails, how long the others get to notice and exit
TAIL = 20


class Rank:
    def __init__(self, rank: int, proc: subprocess.Popen[str]) -> None:
        self.rank = rank
        self.proc = proc
        self.stage = "start"
        self.events: list[dict[str, Any]] = []
        self.stderr: collections.deque[str] = collections.deque(maxlen=TAIL)
        self.killed = ""  # "hung" or "stopped" when we killed it
        self.ended: Optional[float] = None  # when it exited, seconds after it started
        self.started = time.monotonic()
        self.readers = [threading.Thread(target=self._out, daemon=True),
                        threading.Thread(target=self._err, daemon=True),
                        threading.Thread(target=self._wait, daemon=True)]
        for reader in self.readers:
            reader.start()

    def _wait(self) -> None:
        self.proc.wait()
        self.ended = round(time.monotonic() - self.started, 3)

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "stage":
                self.stage = str(event.get("stage"))
            else:
                self.events.append(event)

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n")[:500])

    def report(self, timeout_s: float) -> dict[str, Any]:
        for reader in self.readers:
            reader.join(timeout=2.0)
        code = self.proc.returncode
        done = next((e for e in self.events if e.get("event") == "done"), None)
        if self.killed and done is not None:  # its work was done; only its exit hung
            state, message = "ok", "finished; the process hung at exit and was killed"
        elif self.killed == "hung":
            state, message = "hung", (f"no result within {timeout_s:g} s; it was in stage "
                                      f"'{self.stage}' and was killed")
        elif self.killed == "stopped":
            state, message = "stopped", (f"stopped after another rank failed; it was in stage "
                                         f"'{self.stage}'")
        elif code == 0 and done is not None:
            state, message = "ok", "finished"
        elif code is not None and code < 0:
            state, message = "crashed", f"killed by signal {-code} in stage '{self.stage}'"
        else:
            last = next((ln for ln in reversed(self.stderr) if ln.strip()), "")
            state = "crashed"
            message = f"exited with code {code} in stage '{self.stage}'" + \
                (f": {last.strip()}" if last else "")
        return {"rank": self.rank, "state": state, "message": message, "stage": self.stage,
                "returncode": code, "ended_s": self.ended,
                "stderr_tail": "\n".join(self.stderr)}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _supervise(procs: list[Rank], deadline: float, parent: int) -> None:
    """Wait for every process; past the deadline, or GRACE_S after one fails, kill the rest.
    If rocmdoctor itself goes away (Ctrl-C), kill them all at once."""
    failed_at: Optional[float] = None
    while any(r.proc.poll() is None for r in procs):
        now = time.monotonic()
        if failed_at is None and any(r.proc.returncode not in (None, 0) for r in procs):
            failed_at = now
        orphaned = os.getppid() != parent
        if orphaned or now >= deadline or (failed_at is not None and
                                            now >= failed_at + GRACE_S):
            for r in procs:
                if r.proc.poll() is None:
                    r.killed = "stopped" if failed_at is not None or orphaned else "hung"
                    r.proc.kill()
            break
        time.sleep(0.05)
    for r in procs:
        r.proc.wait()


def _p2p(python: Optional[str], deadline: float, parent: int) -> tuple[list[dict[str, Any]],
                                                                        Optional[str]]:
    """Peer access and copy speed between every ordered pair of GPUs, in one process started
    after the ranks have exited: no rank holds a GPU (exclusive-process mode) or spins in a
    collective on the destination while the copies are timed."""
    env = dict(os.environ, ROCMDOCTOR_COLL_MODE="p2p", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([python or sys.executable, RANK_SCRIPT], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
    runner = Rank(0, proc)
    _supervise([runner], deadline, parent)
    report = runner.report(max(0.0, deadline - runner.started))
    pairs = [{k: v for k, v in e.items() if k != "event"} for e in runner.events
             if e.get("event") == "p2p"]
    return pairs, None if report["state"] == "ok" else report["message"]


def launch(nprocs: int, backend: str, timeout_s: float, sizes: tuple[int, ...],
           python: Optional[str] = None) -> dict[str, Any]:
    parent = os.getppid()
    port = free_port()
    base = dict(os.environ)
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(nprocs),
                LOCAL_WORLD_SIZE=str(nprocs), GROUP_RANK="0", ROCMDOCTOR_COLL_BACKEND=backend,
                ROCMDOCTOR_COLL_SIZES=",".join(map(str, sizes)),
                # past our own deadline, so a stuck collective is ours to report, not torch's
                ROCMDOCTOR_COLL_TIMEOUT=str(timeout_s + 60.0), PYTHONUNBUFFERED="1")
    start = time.monotonic()
    ranks: list[Rank] = []
    for rank in range(nprocs):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        proc = subprocess.Popen([python or sys.executable, RANK_SCRIPT], env=env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
        ranks.append(Rank(rank, proc))
    deadline = start + timeout_s
    _supervise(ranks, deadline, parent)
    reports = [r.report(timeout_s) for r in ranks]
    pairs: list[dict[str, Any]] = []
    p2p_error = None
    testing = os.environ.get("ROCMDOCTOR_TESTING") == "1" and \
        os.environ.get("ROCMDOCTOR_COLL_P2P") == "1"  # the same path with gloo, for tests
    if (backend == "nccl" or testing) and all(rep["state"] == "ok" for rep in reports):
        pairs, p2p_error = _p2p(python, deadline, parent)
    events = ranks[0].events
    info = next((e for e in events if e.get("event") == "info"), {})
    done = [e for r in ranks for e in r.events if e.get("event") == "done"]
    return {
        "schema": SCHEMA, "backend": backend, "world_size": nprocs,
        "ok": all(rep["state"] == "ok" for rep in reports),
        "correct": bool(done) and len(done) == nprocs and all(e.get("correct") for e in done),
        "info": {k: v for k, v in info.items() if k != "event"},
        "ranks": reports,
        "allreduce": [{k: v for k, v in e.items() if k != "event"} for e in events
                      if e.get("event") == "allreduce"],
        "p2p": pairs, "p2p_error": p2p_error,
        "elapsed_s": round(time.monotonic() - start, 3),
    }


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, required=True)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    args = parser.parse_args(argv)
    if args.nprocs < 1:
        parser.error("--nprocs must be at least 1")
    try:
        sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    except ValueError:
        parser.error(f"--sizes takes byte counts separated by commas, not {args.sizes!r}")
    result = launch(args.nprocs, args.backend, args.timeout, sizes)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
