"""The budget of a tune, as a promise: the whole command ends within the budget plus
SLACK_SHARE of it or SLACK_FLOOR_S, whichever is larger. No child runs past that end less
END_MARGIN_S (the result is shown and written then): one that would is stopped and recorded
as interrupted, and a resume runs it.

Also what the rest costs: a typical trial, a trial measured again, and the reserve the
confirmation of the candidates that exist will need.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Optional

from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners.model import ConfirmRun, Trial

SLACK_SHARE = 0.10
SLACK_FLOOR_S = 15.0
END_MARGIN_S = 5.0
# The max-batch search may take at most this share of the budget; past it, the sizes found.
BATCH_SEARCH_SHARE = 0.3
# A trial measured again keeps this share of its one-time cost (Dynamo still traces; the
# inductor, MIOpen and TunableOp results are cached in its folders), and costs at least this
# share of its first run (the process, torch's import and the measurement itself).
RERUN_ONE_TIME_LEFT = 0.8
RERUN_FLOOR = 0.25
TYPICAL_BEFORE_ANY_S = 60.0  # a trial's wall time before any trial has finished


class Budget:
    """`seconds` from `started` (time.monotonic() when the command started)."""

    def __init__(self, seconds: float, started: Optional[float] = None) -> None:
        self.seconds = seconds
        self.started = time.monotonic() if started is None else started

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        """Seconds left of the budget itself (negative past it)."""
        return self.seconds - self.elapsed()

    def slack(self) -> float:
        return max(SLACK_SHARE * self.seconds, SLACK_FLOOR_S)

    def hard_left(self) -> float:
        """Seconds a child may still run: to the promised end, less the time to report."""
        return self.left() + self.slack() - END_MARGIN_S

    def child_timeout(self, wanted: float) -> float:
        return max(1.0, min(wanted, self.hard_left()))

    def batch_search_end(self) -> float:
        """The monotonic time the max-batch search must end by."""
        return self.started + BATCH_SEARCH_SHARE * self.seconds


def typical_wall(done: Sequence[Trial]) -> float:
    """The median wall time of the trials that finished, TYPICAL_BEFORE_ANY_S before any."""
    walls = [t.wall_s for t in done if t.state == "ok" and t.wall_s]
    return float(statistics.median(walls)) if walls else TYPICAL_BEFORE_ANY_S


def rerun_s(t: Trial, typical: float, runs: Sequence[ConfirmRun]) -> float:
    """What measuring trial `t` again costs: its confirmation runs so far, else its first run
    less most of its one-time cost (the trial's compile, MIOpen and TunableOp caches are warm
    when it runs again)."""
    walls = [r.wall_s for r in runs if r.trial == t.number and r.wall_s]
    if walls:
        return float(statistics.median(walls))
    wall = float(t.wall_s or typical)
    return max(wall - RERUN_ONE_TIME_LEFT * float(t.one_time_s or 0.0), RERUN_FLOOR * wall)


def confirm_reserve(done: Sequence[Trial], runs: Sequence[ConfirmRun], rounds: int, top: int,
                    precision: str, batch_size: int) -> float:
    """Seconds the confirmation of the candidates that exist now will take: each round
    re-measures your settings and each candidate once."""
    typical = typical_wall(done)
    ok = [t for t in done if t.state == "ok"]
    base = next((t for t in ok if t.baseline), None)
    if base is None:  # your settings have not finished: one of them and one candidate
        return rounds * 2 * typical
    picked = cf.pick_candidates(base, ok, top, precision, batch_size)
    if not picked:  # a candidate will exist once another trial finishes
        others = [rerun_s(t, typical, runs) for t in ok if not t.baseline]
        picked_cost = [statistics.median(others) if others else typical]
    else:
        picked_cost = [rerun_s(t, typical, runs) for t in picked]
    return rounds * (rerun_s(base, typical, runs) + sum(picked_cost))
