"""Proof for a tuning result: interleaved re-measurement, noise, a confidence interval for the
speed-up, and the effect of each knob value over the search.

The search measured each configuration once, at different times; a one-off difference can be
noise (clocks, other processes, thermal drift). So the baseline and the best candidates are
measured again, interleaved and rotated (ABC, BCA, CAB, ...), as PyTorch's benchmark harness
interleaves eager and compiled runs "to handle frequency scaling and load changes"
(pytorch/pytorch benchmarks/dynamo/common.py). Speed-up is the ratio of a candidate to the
baseline *in the same round*; the interval is Student's t on the log ratios. A candidate
wins only when the interval's low end is above 1, the gain is at least MIN_GAIN and the gain
exceeds the measured run-to-run noise.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Callable, Optional

from rocmdoctor.tuners.model import Candidate, Confirmation, Effect, PassedOver, SpaceInfo, Trial

MIN_GAIN = 0.01  # a winner must be at least 1 % faster (perf-anchors: declare wins > 1 %)
# Two-sided 95 % Student t quantiles t(0.975, df), df = 1..30: NIST/SEMATECH e-Handbook of
# Statistical Methods, table 1.3.6.7.2, https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """t(0.975, df); beyond the table, the Cornish-Fisher expansion around z = 1.96."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= len(T975):
        return T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Speedup:
    ratio: float  # geometric mean of paired ratios
    low: Optional[float]  # 95 % interval; None with fewer than two pairs
    high: Optional[float]
    pairs: int


def paired_speedup(baseline: Mapping[int, float], candidate: Mapping[int, float]) -> Speedup:
    """Speed-up of `candidate` over `baseline`, both keyed by round, paired by round."""
    rounds = sorted(r for r in candidate if r in baseline and baseline[r] > 0
                    and candidate[r] > 0)
    if not rounds:
        raise ValueError("no round measured both configurations")
    logs = [math.log(candidate[r] / baseline[r]) for r in rounds]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Speedup(math.exp(mean), None, None, 1)
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Speedup(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


def run_to_run_cv(series: Sequence[Sequence[float]]) -> Optional[float]:
    """Pooled coefficient of variation of repeated measurements of the same configuration."""
    variances = []
    for values in series:
        if len(values) >= 2 and statistics.fmean(values) > 0:
            variances.append((statistics.stdev(values) / statistics.fmean(values)) ** 2)
    return math.sqrt(statistics.fmean(variances)) if variances else None


def significant(speedup: Speedup, noise: Optional[float]) -> tuple[bool, str]:
    """Whether a speed-up is a real win, and why (one sentence)."""
    gain = speedup.ratio - 1.0
    if speedup.low is None or speedup.high is None:
        return False, "measured in one round only: no interval, no verdict"
    if speedup.low <= 1.0:
        return False, (f"the 95 % interval {speedup.low - 1:+.1%} to {speedup.high - 1:+.1%} "
                       "includes no gain")
    if gain < MIN_GAIN:
        return False, f"a gain of {gain:.1%} is below the {MIN_GAIN:.0%} worth changing for"
    if noise is not None and gain <= noise:
        return False, f"a gain of {gain:.1%} is within the run-to-run noise ({noise:.1%})"
    why = f"{gain:+.1%}, 95 % interval {speedup.low - 1:+.1%} to {speedup.high - 1:+.1%}"
    return True, why + (f", above the run-to-run noise ({noise:.1%})" if noise is not None
                        else "")


def unsettled(speedup: Speedup) -> bool:
    """More rounds could still turn this into a win: the interval reaches past MIN_GAIN but
    does not exclude no gain."""
    if speedup.low is None or speedup.high is None:
        return True
    return speedup.low <= 1.0 < 1.0 + MIN_GAIN < speedup.high


def rotation(keys: Sequence[int], round_index: int) -> list[int]:
    """ABC, BCA, CAB, ...: each configuration takes each position in turn."""
    if not keys:
        return []
    shift = round_index % len(keys)
    return list(keys[shift:]) + list(keys[:shift])


Measure = Callable[[int, int], Optional[float]]  # (trial number, round) -> samples/s or None


def measure_rounds(keys: Sequence[int], done: Mapping[tuple[int, int], Optional[float]],
                   measure: Measure, min_rounds: int, max_rounds: int,
                   keep_going: Callable[[dict[tuple[int, int], Optional[float]]], bool]
                   ) -> dict[tuple[int, int], Optional[float]]:
    """Measure every key once per round, rotated, skipping (key, round) pairs already in
    `done` (a resumed confirmation). Past `min_rounds`, continue while `keep_going` says so."""
    results: dict[tuple[int, int], Optional[float]] = dict(done)
    for round_index in range(max_rounds):
        if round_index >= min_rounds and not keep_going(results):
            break
        for key in rotation(keys, round_index):
            if (key, round_index) not in results:
                results[(key, round_index)] = measure(key, round_index)
    return results


def by_round(results: Mapping[tuple[int, int], Optional[float]], key: int) -> dict[int, float]:
    return {r: v for (k, r), v in results.items() if k == key and v is not None}


def knob_effects(trials: Sequence[Trial], space: SpaceInfo) -> list[Effect]:
    """For each knob value: geometric-mean throughput of the finished trials with it against
    those without it (a marginal effect: it mixes in whatever else those trials changed)."""
    done = [t for t in trials if t.state == "ok" and (t.throughput or 0) > 0]
    out: list[Effect] = []
    for knob in space.knobs:
        for label in knob.choices:
            with_ = [float(t.throughput or 0) for t in done
                     if t.params.get(knob.name, knob.baseline) == label]
            without = [float(t.throughput or 0) for t in done
                       if t.params.get(knob.name, knob.baseline) != label]
            if not with_ or not without:
                continue
            mean_with, mean_without = _geomean(with_), _geomean(without)
            out.append(Effect(knob=knob.name, value=label, baseline=label == knob.baseline,
                              n_with=len(with_), n_without=len(without), mean_with=mean_with,
                              mean_without=mean_without, effect=mean_with / mean_without - 1.0))
    out.sort(key=lambda e: (-abs(e.effect), e.knob, e.value))
    return out


# An effect smaller than this is not called a contradiction of the verdict: noise alone.
CONTRADICTION_FLOOR = 0.02


def mark_effects(effects: Sequence[Effect], space: SpaceInfo,
                 winner: Optional[Mapping[str, str]], noise_cv: Optional[float],
                 confirmed: bool = True) -> list[Effect]:
    """Say which effects are thin (one trial with the value against one without) and which
    contradict the confirmed verdict: a value the effects favour that the confirmed best does
    not use (or no configuration won), or one they disfavour that it uses. `winner` is the
    confirmed best's changes from your settings, None when none won; `confirmed` False when
    no re-measurement ran (then there is no verdict to contradict)."""
    floor = max(CONTRADICTION_FLOOR, 2 * (noise_cv or 0.0))
    return [_marked(e, space, winner, floor, confirmed) for e in effects]


def _marked(e: Effect, space: SpaceInfo, winner: Optional[Mapping[str, str]], floor: float,
            confirmed: bool) -> Effect:
    knob = space.knob(e.knob)
    chosen = (winner or {}).get(e.knob, knob.baseline if knob else None)
    contradicts, note = False, ""
    if not confirmed:
        pass
    elif winner is None:  # your settings stay: a large gain of another value is unconfirmed
        if e.value != chosen and e.effect > floor:
            contradicts, note = True, ("not borne out: no configuration beat your settings "
                                       "when re-measured")
    elif e.value == chosen and e.effect < -floor:
        contradicts, note = True, "the confirmed best uses it all the same"
    elif e.value != chosen and e.effect > floor:
        contradicts, note = True, f"the confirmed best uses {chosen} instead"
    thin = e.n_with == 1 and e.n_without == 1
    if thin:
        note = f"one trial against one; {note}" if note else "one trial against one"
    return replace(e, thin=thin, contradicts=contradicts, note=note)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _key(params: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(params.items())))


def pick_candidates(base: Trial, ok_trials: Sequence[Trial], top: int, precision: str,
                    batch_size: Optional[int] = None) -> list[Trial]:
    """The `top` fastest distinct configurations other than the baseline, plus the fastest
    that keeps the user's precision and the fastest that keeps their batch size when those
    do not include one (the result names the best that changes neither)."""
    ranked: dict[str, Trial] = {}
    for t in sorted(ok_trials, key=lambda t: -(t.throughput or 0.0)):
        if _key(t.params) != _key(base.params):
            ranked.setdefault(_key(t.params), t)
    order = list(ranked.values())
    picked = order[:top]
    keeps: list[Callable[[Trial], bool]] = [lambda t: t.precision == precision]
    if batch_size is not None:
        keeps.append(lambda t: str(t.params.get("batch_size", batch_size)) == str(batch_size))
    for keep in keeps:
        same = [t for t in order if keep(t)]
        if same and same[0] not in picked:
            picked.append(same[0])
    return picked


def pick_best(candidates: Sequence[Candidate], runs: Sequence[tuple[int, int, Optional[float]]],
              noise: Optional[float]) -> tuple[Optional[Candidate], Optional[PassedOver]]:
    """The fastest of the confirmed `candidates`; or, where it is not measurably faster than
    one with fewer changes (the test a candidate passes against your settings, applied
    between the two over the same interleaved rounds), that simpler one: a change that buys
    nothing measurable is not worth making. Also the note on the one passed over, or None."""
    if not candidates:
        return None, None
    fastest = max(candidates, key=lambda c: c.speedup or 0.0)
    results = {(k, r): v for k, r, v in runs}
    equal = []
    for c in candidates:
        if c is fastest or len(c.changes) >= len(fastest.changes):
            continue
        try:
            s = paired_speedup(by_round(results, c.trial), by_round(results, fastest.trial))
        except ValueError:
            continue
        win, why = significant(s, noise)
        if not win:
            equal.append((c, s, why))
    if not equal:
        return fastest, None
    chosen, s, why = min(equal, key=lambda e: (len(e[0].changes), -(e[0].speedup or 0.0)))
    return chosen, PassedOver(trial=fastest.trial, ratio=s.ratio, low=s.low, high=s.high,
                              why=why, changes=len(chosen.changes),
                              its_changes=len(fastest.changes))


def confirm(base: Optional[Trial], picked: Sequence[Trial],
            stored: Sequence[tuple[int, int, Optional[float]]],
            measure: Callable[[Trial, int], Optional[float]], min_rounds: int, max_rounds: int,
            time_for_round: Callable[[int], bool]) -> Confirmation:
    """Re-measure `base` and `picked` interleaved (reusing the (trial, round, throughput)
    runs `stored` by a resumed tune), then judge each candidate against the baseline."""
    if base is None:
        return Confirmation("no-baseline", reason="your current settings did not finish a "
                            "run, so there is nothing to compare against")
    if not picked:
        return Confirmation("nothing-to-confirm", baseline_trial=base.number,
                            reason="no other configuration finished a run")
    by_number = {t.number: t for t in [base, *picked]}
    keys = list(by_number)
    done = {(k, r): v for k, r, v in stored if k in keys}

    def speedups(results: Mapping[tuple[int, int], Optional[float]]) -> dict[int, Speedup]:
        out = {}
        for t in picked:
            try:
                out[t.number] = paired_speedup(by_round(results, base.number),
                                               by_round(results, t.number))
            except ValueError:
                continue
        return out

    def keep_going(results: dict[tuple[int, int], Optional[float]]) -> bool:
        return time_for_round(len(keys)) and any(unsettled(s) for s in
                                                 speedups(results).values())

    results = measure_rounds(keys, done, lambda k, r: measure(by_number[k], r), min_rounds,
                             max(min_rounds, max_rounds), keep_going)
    noise = run_to_run_cv([list(by_round(results, k).values()) for k in keys])
    found = speedups(results)
    return Confirmation(
        "done", candidates=tuple(_judged(t, found.get(t.number), noise) for t in picked),
        runs=tuple((k, r, v) for (k, r), v in sorted(results.items())), noise_cv=noise,
        rounds=1 + max((r for _, r in results), default=-1), baseline_trial=base.number)


def _judged(t: Trial, s: Optional[Speedup], noise: Optional[float]) -> Candidate:
    win, why = significant(s, noise) if s else (False, "no round measured both")
    return Candidate(trial=t.number, params=dict(t.params), precision=t.precision,
                     search_throughput=t.throughput, speedup=s.ratio if s else None,
                     low=s.low if s else None, high=s.high if s else None,
                     pairs=s.pairs if s else 0, winner=win, why=why)
