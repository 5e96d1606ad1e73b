"""The largest batch that fits in memory, found with short probe runs in child processes.

Doubling from the requested batch until a probe runs out of memory (or halving until one
fits), then bisecting between the last fit and the first failure to within about 6 %.
Each probe is a fresh process (one warm-up step, one measured step, extras off), because an
out-of-memory error can leave the allocator fragmented for the rest of a process. This finds
the largest batch that fits, not the fastest (Lightning's BatchSizeFinder and Accelerate's
find_executable_batch_size make the same distinction).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Optional

from rocmdoctor.tuners.bench.child import TrialOutcome, run_bench_child
from rocmdoctor.tuners.bench.spec import BenchSpec

Runner = Callable[[BenchSpec], TrialOutcome]


@dataclass
class MaxBatch:
    largest_fit: Optional[int]  # None when even batch 1 does not fit
    first_oom: Optional[int]  # None when the limit was reached without running out
    probes: list[tuple[int, str]] = field(default_factory=list)  # (batch, state) in order
    failure: Optional[TrialOutcome] = None  # a probe that ended other than ok/oom
    too_slow: Optional[int] = None  # the smallest batch whose probe ran out of time (find_below)

    def message(self) -> str:
        if self.failure is not None:
            batch = self.probes[-1][0] if self.probes else "?"
            return f"probe at batch {batch} {self.failure.state}: {self.failure.message}"
        if self.largest_fit is None:
            return "even batch 1 does not fit in memory"
        if self.first_oom is None:
            return f"batch {self.largest_fit} fits (the search limit; no out-of-memory seen)"
        return (f"largest batch that fits: {self.largest_fit} "
                f"(batch {self.first_oom} runs out of memory)")


def probe_spec(spec: BenchSpec, batch: int) -> BenchSpec:
    settings = {**spec.settings, "extras": False}
    return dataclasses.replace(spec, batch_size=batch, steps=1, warmup=1, settings=settings)


def child_runner(env_patch: Mapping[str, str], timeout_s: float, python: Optional[str] = None,
                 cwd: Optional[str] = None) -> Runner:
    def run(spec: BenchSpec) -> TrialOutcome:
        return run_bench_child(spec, env_patch, timeout_s, python=python, cwd=cwd)

    return run


def find_max_batch(spec: BenchSpec, runner: Runner, limit: int = 1 << 16,
                   on_probe: Optional[Callable[[int, TrialOutcome], None]] = None,
                   only_down: bool = False) -> MaxBatch:
    """Search the largest fitting batch; `only_down` halves from spec.batch_size only."""
    found = MaxBatch(None, None)

    def fits(batch: int) -> Optional[bool]:
        outcome = runner(probe_spec(spec, batch))
        found.probes.append((batch, outcome.state))
        if on_probe is not None:
            on_probe(batch, outcome)
        if outcome.state == "ok":
            return True
        if outcome.state == "oom":
            return False
        found.failure = outcome
        return None

    batch = max(1, spec.batch_size)
    first = fits(batch)
    if first is None:
        return found
    if first:
        found.largest_fit = batch
        if only_down:
            return found
        while batch < limit:
            batch = min(batch * 2, limit)
            ok = fits(batch)
            if ok is None:
                return found
            if not ok:
                found.first_oom = batch
                break
            found.largest_fit = batch
        if found.first_oom is None:
            return found
    else:
        found.first_oom = batch
        while batch > 1:
            batch //= 2
            ok = fits(batch)
            if ok is None:
                return found
            if ok:
                found.largest_fit = batch
                break
            found.first_oom = batch
        if found.largest_fit is None or only_down:
            return found
    return _bisect(found, fits)


def _bisect(found: MaxBatch, fits: Callable[[int], Optional[bool]], within: int = 16
            ) -> MaxBatch:
    """Narrow found.largest_fit .. found.first_oom to within 1/`within` (about 6 %): by the
    geometric middle while the gap is more than a doubling (a batch of 10^12 against 64 that
    fits takes 6 probes, not 34), then by the middle."""
    lo, hi = found.largest_fit, found.first_oom
    assert lo is not None and hi is not None
    while hi - lo > max(1, lo // within):
        mid = math.isqrt(lo * hi) if hi > 2 * lo else (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        ok = fits(mid)
        if ok is None:
            break
        if ok:
            lo = mid
        else:
            hi = mid
    found.largest_fit, found.first_oom = lo, hi
    return found


def find_below(spec: BenchSpec, runner: Runner, oom_at: int,
               on_probe: Optional[Callable[[int, TrialOutcome], None]] = None,
               start: int = 64) -> MaxBatch:
    """The largest batch that fits below `oom_at`, which ran out of memory: from `start` (or
    half of oom_at, when smaller), halving until one fits, then bisecting up to oom_at. A
    probe that runs out of time counts as too large (on a CPU a batch that fits in memory can
    take minutes a step)."""
    found = MaxBatch(None, oom_at)

    def fits(batch: int) -> Optional[bool]:
        outcome = runner(probe_spec(spec, batch))
        found.probes.append((batch, outcome.state))
        if on_probe is not None:
            on_probe(batch, outcome)
        if outcome.state == "timeout":
            found.too_slow = min(batch, found.too_slow or batch)
            return False
        if outcome.state in ("ok", "oom"):
            return outcome.state == "ok"
        if outcome.state != "budget":  # "budget": the caller's time for the search is up
            found.failure = outcome
        return None

    batch = min(start, oom_at // 2)
    while batch >= 1:
        ok = fits(batch)
        if ok is None:
            return found
        if ok:
            found.largest_fit = batch
            break
        found.first_oom = batch
        batch //= 2
    if found.largest_fit is None:
        return found
    return _bisect(found, fits, within=8)
