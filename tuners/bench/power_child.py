"""Power sampling from a separate process, so that the measured process runs no sampling thread.

A sampling thread in the benchmark process shares its interpreter lock: on an H200, ResNet-50
compiled at batch 128 (a host-bound step) ran 1.4-17 % slower with the thread than without it
in four interleaved pairs (docs/benchmarks.md, sessions 5 and 6). Here a child process
(`python -m rocmdoctor.tuners.bench.power_child KIND ...`) opens the same source, prints `ready`,
samples until it is sent SIGTERM, then prints every sample as one JSON line and exits. The
parent reads the hardware energy counter itself at start and stop (two calls).

Kinds: `nvml --uuid U --index N`, `hwmon --power-file F --busy-file B`, and `fake --watts W
[--util U]` (constant readings, for tests only).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, Optional

from rocmdoctor.host import process
from rocmdoctor.tuners.bench import power

READY = "ready"
START_TIMEOUT_S = 15.0


def _open(argv: Sequence[str]) -> tuple[power.PowerSource, float]:
    parser = argparse.ArgumentParser(prog="power_child")
    parser.add_argument("kind", choices=("nvml", "hwmon", "fake"))
    parser.add_argument("--hz", type=float, default=20.0)
    parser.add_argument("--uuid", default="")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--power-file", default="")
    parser.add_argument("--busy-file", default="")
    parser.add_argument("--watts", type=float, default=0.0)
    parser.add_argument("--util", type=float, default=None)
    args = parser.parse_args(list(argv))
    source: power.PowerSource
    if args.kind == "nvml":
        source = power.NvmlSource(args.uuid or None, args.index)
    elif args.kind == "hwmon":
        source = power.HwmonSource(args.power_file, args.busy_file or None)
    else:
        source = power.FakeSource(args.watts, args.util)
    return source, args.hz


def main(argv: Sequence[str]) -> int:
    process.die_with_parent(process.parent_pid_from(os.environ))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    source, hz = _open(argv)
    samples: list[tuple[float, Optional[float], Optional[float]]] = []
    print(READY, flush=True)
    interval = 1.0 / hz
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            watts, util = source.read()
        except Exception:  # noqa: BLE001 - a failed read is a gap, not a crash
            watts, util = None, None
        samples.append((time.monotonic(), watts, util))  # CLOCK_MONOTONIC: one clock per host
        next_at += interval
        stop.wait(max(0.0, next_at - time.monotonic()))
    source.close()
    print(json.dumps(samples), flush=True)
    return 0


class ProcessSampler:
    """PowerSampler's interface (start, stop), sampling in a child process."""

    def __init__(self, source: power.PowerSource, hz: float = 20.0,
                 python: Optional[str] = None) -> None:
        args = source.spawn_args()
        if args is None:
            raise ValueError(f"the {source.name} source cannot be opened in another process")
        self.source = source
        self.argv = [python or sys.executable, "-m", "rocmdoctor.tuners.bench.power_child", *args,
                     "--hz", str(hz)]
        self._proc: Optional[process.Popen[str]] = None
        self._energy0: Optional[float] = None
        self._t0 = 0.0

    def start(self) -> None:
        """Start the child and wait until it samples; raises RuntimeError if it cannot."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1", process.PARENT_ENV: str(os.getpid())}
        self._proc = process.spawn(self.argv, env=env, own_session=False)
        assert self._proc.stdout is not None
        readable, _, _ = select.select([self._proc.stdout], [], [], START_TIMEOUT_S)
        line = self._proc.stdout.readline() if readable else ""
        if line.strip() != READY:
            err = self._kill()
            raise RuntimeError(f"the power-sampling process did not start: {err or 'no output'}")
        self._energy0 = self.source.energy_j()
        self._t0 = time.monotonic()

    def _kill(self) -> str:
        assert self._proc is not None
        self._proc.kill()
        try:
            _, err = self._proc.communicate(timeout=5)
        except process.TimeoutExpired:
            err = ""
        lines = [ln for ln in (err or "").splitlines() if ln.strip()]
        return lines[-1][:200] if lines else ""

    def stop(self, samples_measured: float) -> dict[str, Any]:
        assert self._proc is not None
        t1 = time.monotonic()
        energy1 = self.source.energy_j()
        self._proc.send_signal(signal.SIGTERM)
        try:
            out, err = self._proc.communicate(timeout=10)
        except process.TimeoutExpired:
            out, err = "", self._kill()
        self.source.close()
        samples: list[tuple[float, Optional[float], Optional[float]]] = []
        reason = None
        try:
            lines = [ln for ln in out.splitlines() if ln.strip() and ln.strip() != READY]
            samples = [(float(t), w, u) for t, w, u in json.loads(lines[-1])
                       if self._t0 <= float(t) <= t1]
        except (ValueError, IndexError, TypeError):
            reason = f"the power-sampling process returned no samples: {err.strip()[-200:]}"
        counter = (energy1 - self._energy0 if energy1 is not None and self._energy0 is not None
                   else None)
        summary = power.summarize(samples, counter, t1 - self._t0, samples_measured,
                                  self.source.name, reason)
        summary["sampler"] = "process"
        return summary


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
