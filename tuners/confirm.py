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
from dataclasses import dataclass
from typing import Any, Callable, Optional

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


def knob_effects(trials: Sequence[Mapping[str, Any]], knobs: Sequence[Mapping[str, Any]]
                 ) -> list[dict[str, Any]]:
    """For each knob value: geometric-mean throughput of the finished trials with it against
    those without it (a marginal effect: it mixes in whatever else those trials changed)."""
    done = [t for t in trials if t.get("state") == "ok" and (t.get("throughput") or 0) > 0]
    out: list[dict[str, Any]] = []
    for knob in knobs:
        name = knob["name"]
        for label in knob["choices"]:
            with_ = [t["throughput"] for t in done
                     if t["params"].get(name, knob["baseline"]) == label]
            without = [t["throughput"] for t in done
                       if t["params"].get(name, knob["baseline"]) != label]
            if not with_ or not without:
                continue
            mean_with, mean_without = _geomean(with_), _geomean(without)
            out.append({"knob": name, "value": label, "baseline": label == knob["baseline"],
                        "n_with": len(with_), "n_without": len(without),
                        "mean_with": mean_with, "mean_without": mean_without,
                        "effect": mean_with / mean_without - 1.0})
    out.sort(key=lambda e: (-abs(e["effect"]), e["knob"], e["value"]))
    return out


# An effect smaller than this is not called a contradiction of the verdict: noise alone.
CONTRADICTION_FLOOR = 0.02


def mark_effects(effects: Sequence[Mapping[str, Any]], knobs: Sequence[Mapping[str, Any]],
                 winner: Optional[Mapping[str, str]], noise_cv: Optional[float],
                 confirmed: bool = True) -> list[dict[str, Any]]:
    """Say which effects are thin (one trial with the value against one without) and which
    contradict the confirmed verdict: a value the effects favour that the confirmed best does
    not use (or no configuration won), or one they disfavour that it uses. `winner` is the
    confirmed best's changes from your settings, None when none won; `confirmed` False when
    no re-measurement ran (then there is no verdict to contradict)."""
    baseline = {k["name"]: k["baseline"] for k in knobs}
    floor = max(CONTRADICTION_FLOOR, 2 * (noise_cv or 0.0))
    out = []
    for e in effects:
        mark = dict(e, thin=e["n_with"] == 1 and e["n_without"] == 1, contradicts=False,
                    note="")
        chosen = (winner or {}).get(e["knob"], baseline.get(e["knob"]))
        if not confirmed:
            pass
        elif winner is None:  # your settings stay: a large gain of another value is unconfirmed
            if e["value"] != chosen and e["effect"] > floor:
                mark.update(contradicts=True,
                            note="not borne out: no configuration beat your settings when "
                                 "re-measured")
        elif e["value"] == chosen and e["effect"] < -floor:
            mark.update(contradicts=True, note="the confirmed best uses it all the same")
        elif e["value"] != chosen and e["effect"] > floor:
            mark.update(contradicts=True, note=f"the confirmed best uses {chosen} instead")
        if mark["thin"]:
            thin = "one trial against one"
            mark["note"] = f"{thin}; {mark['note']}" if mark["note"] else thin
        out.append(mark)
    return out


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def pick_candidates(base: Mapping[str, Any], ok_trials: Sequence[Mapping[str, Any]], top: int,
                    precision: str, batch_size: Optional[int] = None
                    ) -> list[Mapping[str, Any]]:
    """The `top` fastest distinct configurations other than the baseline, plus the fastest
    that keeps the user's precision and the fastest that keeps their batch size when those
    do not include one (the result names the best that changes neither)."""
    ranked: dict[str, Mapping[str, Any]] = {}
    base_key = json.dumps(dict(sorted(base["params"].items())))
    for t in sorted(ok_trials, key=lambda t: -(t.get("throughput") or 0.0)):
        key = json.dumps(dict(sorted(t["params"].items())))
        if key != base_key:
            ranked.setdefault(key, t)
    order = list(ranked.values())
    picked = order[:top]
    keeps = [lambda t: t.get("precision") == precision]
    if batch_size is not None:
        keeps.append(lambda t: str(t["params"].get("batch_size", batch_size)) == str(batch_size))
    for keep in keeps:
        same = [t for t in order if keep(t)]
        if same and same[0] not in picked:
            picked.append(same[0])
    return picked


def pick_best(candidates: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]],
              noise: Optional[float]) -> tuple[Optional[Mapping[str, Any]],
                                               Optional[dict[str, Any]]]:
    """The fastest of the confirmed `candidates`; or, where it is not measurably faster than
    one with fewer changes (the test a candidate passes against your settings, applied
    between the two over the same interleaved rounds), that simpler one: a change that buys
    nothing measurable is not worth making. Also the note on the one passed over, or None."""
    if not candidates:
        return None, None
    fastest = max(candidates, key=lambda c: c["speedup"])
    results = {(r["trial"], r["round"]): r["throughput"] for r in runs}
    equal = []
    for c in candidates:
        if c is fastest or len(c["changes"]) >= len(fastest["changes"]):
            continue
        try:
            s = paired_speedup(by_round(results, c["trial"]), by_round(results,
                                                                         fastest["trial"]))
        except ValueError:
            continue
        win, why = significant(s, noise)
        if not win:
            equal.append((c, s, why))
    if not equal:
        return fastest, None
    chosen, s, why = min(equal, key=lambda e: (len(e[0]["changes"]), -e[0]["speedup"]))
    return chosen, {"trial": fastest["trial"], "ratio": s.ratio, "low": s.low, "high": s.high,
                    "why": why, "changes": len(chosen["changes"]),
                    "its_changes": len(fastest["changes"])}


def confirm(base: Optional[Mapping[str, Any]], picked: Sequence[Mapping[str, Any]],
            stored: Sequence[Mapping[str, Any]],
            measure: Callable[[Any, int], Optional[float]], min_rounds: int, max_rounds: int,
            time_for_round: Callable[[int], bool]) -> dict[str, Any]:
    """Re-measure `base` and `picked` interleaved (reusing `stored` runs of a resumed tune),
    then judge each candidate against the baseline."""
    if base is None:
        return {"status": "no-baseline", "candidates": [], "runs": [], "noise_cv": None,
                "rounds": 0, "reason": "your current settings did not finish a run, so there "
                                       "is nothing to compare against"}
    if not picked:
        return {"status": "nothing-to-confirm", "candidates": [], "runs": [], "noise_cv": None,
                "rounds": 0, "baseline_trial": base["number"],
                "reason": "no other configuration finished a run"}
    by_number = {t["number"]: t for t in [base, *picked]}
    keys = list(by_number)
    done = {(r["trial"], r["round"]): r["throughput"] for r in stored if r["trial"] in keys}

    def speedups(results: Mapping[tuple[int, int], Optional[float]]) -> dict[int, Speedup]:
        out = {}
        for t in picked:
            try:
                out[t["number"]] = paired_speedup(by_round(results, base["number"]),
                                                  by_round(results, t["number"]))
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
    verdicts = []
    for t in picked:
        s = found.get(t["number"])
        win, why = significant(s, noise) if s else (False, "no round measured both")
        verdicts.append({"trial": t["number"], "params": dict(t["params"]),
                         "precision": t.get("precision"),
                         "search_throughput": t.get("throughput"),
                         "speedup": s.ratio if s else None, "low": s.low if s else None,
                         "high": s.high if s else None, "pairs": s.pairs if s else 0,
                         "winner": win, "why": why})
    return {"status": "done", "baseline_trial": base["number"], "candidates": verdicts,
            "runs": [{"trial": k, "round": r, "throughput": v}
                     for (k, r), v in sorted(results.items())],
            "noise_cv": noise, "rounds": 1 + max((r for _, r in results), default=-1)}
