"""The proof behind a tune verdict: paired speed-ups with Student-t intervals, noise, the
interleaved re-measurement schedule and per-knob effects."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners.codec import from_dict, space_from, trial_from
from rocmdoctor.tuners.model import Effect, PassedOver, Trial


def test_t_quantiles_match_the_nist_table_and_the_normal_limit() -> None:
    assert cf.t975(1) == 12.706 and cf.t975(2) == 4.303 and cf.t975(30) == 2.042
    # t(0.975, 120) = 1.980 and t(0.975, 1000) = 1.962 (NIST table 1.3.6.7.2, df 100 = 1.984)
    assert cf.t975(120) == pytest.approx(1.980, abs=1e-3)
    assert cf.t975(100) == pytest.approx(1.984, abs=1e-3)
    assert cf.t975(1000) == pytest.approx(1.962, abs=1e-3)
    with pytest.raises(ValueError):
        cf.t975(0)


def test_constant_ratio_has_a_zero_width_interval() -> None:
    s = cf.paired_speedup({0: 100.0, 1: 102.0, 2: 98.0}, {0: 110.0, 1: 112.2, 2: 107.8})
    assert (s.ratio, s.low, s.high, s.pairs) == pytest.approx((1.1, 1.1, 1.1, 3))
    assert cf.significant(s, noise=0.02) == (
        True, "+10.0%, 95 % interval +10.0% to +10.0%, above the run-to-run noise (2.0%)")


def test_noisy_ratios_give_a_t_interval_that_includes_no_gain() -> None:
    s = cf.paired_speedup({0: 100.0, 1: 100.0, 2: 100.0}, {0: 102.0, 1: 110.0, 2: 106.0})
    # geometric mean of 1.02, 1.10, 1.06; sd of the logs 0.03776; t(0.975, 2) = 4.303
    assert s.ratio == pytest.approx(1.05950, abs=1e-5)
    assert s.low == pytest.approx(0.96464, abs=1e-5)
    assert s.high == pytest.approx(1.16369, abs=1e-5)
    assert cf.significant(s, noise=0.03) == (
        False, "the 95 % interval -3.5% to +16.4% includes no gain")
    assert cf.unsettled(s)


def test_verdict_rules() -> None:
    one_round = cf.paired_speedup({0: 100.0}, {0: 150.0})
    assert one_round.low is None
    assert cf.significant(one_round, None) == (
        False, "measured in one round only: no interval, no verdict")
    tiny = cf.Speedup(1.005, 1.002, 1.008, 4)
    assert cf.significant(tiny, 0.001) == (
        False, "a gain of 0.5% is below the 1% worth changing for")
    assert not cf.unsettled(tiny)
    noisy = cf.Speedup(1.04, 1.01, 1.07, 4)
    assert cf.significant(noisy, 0.05) == (
        False, "a gain of 4.0% is within the run-to-run noise (5.0%)")
    assert cf.significant(noisy, None)[0] is True
    with pytest.raises(ValueError):
        cf.paired_speedup({0: 1.0}, {1: 1.0})


def test_run_to_run_noise_is_the_pooled_coefficient_of_variation() -> None:
    # cv of (90, 110) = 14.142/100; cv of (200, 200) = 0; pooled = sqrt(mean of squares)
    assert cf.run_to_run_cv([[90.0, 110.0], [200.0, 200.0], [5.0]]) == pytest.approx(
        math.sqrt((0.1414214**2 + 0.0) / 2), rel=1e-6)
    assert cf.run_to_run_cv([[1.0]]) is None


def test_rounds_rotate_skip_what_was_measured_and_stop_when_settled() -> None:
    assert [cf.rotation([0, 5, 7], r) for r in range(4)] == [
        [0, 5, 7], [5, 7, 0], [7, 0, 5], [0, 5, 7]]
    calls: list[tuple[int, int]] = []

    def measure(key: int, round_index: int) -> Optional[float]:
        calls.append((key, round_index))
        return float(key + round_index)

    results = cf.measure_rounds([0, 5], {(0, 0): 1.0}, measure, min_rounds=2, max_rounds=5,
                                keep_going=lambda r: len(r) < 6)
    assert calls == [(5, 0), (5, 1), (0, 1), (0, 2), (5, 2)]
    assert results[(0, 0)] == 1.0 and len(results) == 6
    assert cf.by_round(results, 5) == {0: 5.0, 1: 6.0, 2: 7.0}


TRIALS: list[Trial] = [trial_from(t) for t in [
    {"number": 0, "params": {"cl": "off", "prec": "fp32"}, "state": "ok", "throughput": 100.0,
     "precision": "fp32"},
    {"number": 1, "params": {"cl": "on", "prec": "fp32"}, "state": "ok", "throughput": 150.0,
     "precision": "fp32"},
    {"number": 2, "params": {"cl": "on", "prec": "bf16"}, "state": "ok", "throughput": 400.0,
     "precision": "bf16"},
    {"number": 3, "params": {"cl": "off", "prec": "bf16"}, "state": "ok", "throughput": 200.0,
     "precision": "bf16"},
    {"number": 4, "params": {"cl": "off", "prec": "fp16"}, "state": "oom", "throughput": None,
     "precision": "fp16"},
]]
KNOBS = space_from({"knobs": [{"name": "cl", "choices": ["off", "on"], "baseline": "off"},
                              {"name": "prec", "choices": ["fp32", "bf16", "fp16"],
                               "baseline": "fp32"}]})


def test_knob_effects_are_geometric_means_with_against_without() -> None:
    effects = cf.knob_effects(TRIALS, KNOBS)
    gm = math.sqrt
    assert [(e.knob, e.value, e.n_with, e.n_without) for e in effects] == [
        ("prec", "bf16", 2, 2), ("cl", "on", 2, 2), ("prec", "fp32", 2, 2),
        ("cl", "off", 2, 2)]
    assert effects[0].effect == pytest.approx(gm(400 * 200) / gm(100 * 150) - 1)  # +131 %
    assert effects[1].effect == pytest.approx(gm(150 * 400) / gm(100 * 200) - 1)  # +73 %
    assert effects[2].effect == pytest.approx(gm(100 * 150) / gm(400 * 200) - 1)
    assert effects[0].baseline is False and effects[2].baseline is True


def test_candidates_are_the_fastest_plus_the_fastest_that_keeps_precision() -> None:
    ok = [t for t in TRIALS if t.state == "ok"]
    assert [t.number for t in cf.pick_candidates(TRIALS[0], ok, 1, "fp32")] == [2, 1]
    assert [t.number for t in cf.pick_candidates(TRIALS[0], ok, 2, "bf16")] == [2, 3]
    assert cf.pick_candidates(TRIALS[0], [TRIALS[0]], 2, "fp32") == []


def test_confirm_judges_each_candidate_against_the_interleaved_baseline() -> None:
    table = {0: [100.0, 101.0, 99.0, 100.0], 1: [80.0, 81.0, 79.0, 80.0],
             2: [150.0, 152.0, 149.0, 151.0]}
    order: list[tuple[int, int]] = []

    def measure(trial: Trial, round_index: int) -> Optional[float]:
        order.append((trial.number, round_index))
        return table[trial.number][round_index]

    stored = [(0, 0, 100.0)]  # from an interrupted run
    result = cf.confirm(TRIALS[0], [TRIALS[2], TRIALS[1]], stored, measure, 3, 4,
                        time_for_round=lambda n: True)
    assert order[:2] == [(2, 0), (1, 0)] and (0, 0) not in order
    assert result.rounds == 3  # both verdicts settled after the minimum
    by_trial = {c.trial: c for c in result.candidates}
    assert by_trial[2].winner is True and by_trial[2].pairs == 3
    assert by_trial[2].speedup == pytest.approx((150 * 152 * 149 / (100 * 101 * 99))
                                                ** (1 / 3))
    assert by_trial[1].winner is False
    assert by_trial[1].why.startswith("the 95 % interval -")
    # An open verdict (a 1 % gain inside a wide interval) earns rounds up to the maximum,
    # while time allows.
    table[1] = [101.0, 99.0, 102.0, 100.0]
    open_verdict = cf.confirm(TRIALS[0], [TRIALS[1]], [], measure, 3, 4, lambda n: True)
    assert open_verdict.rounds == 4
    no_time = cf.confirm(TRIALS[0], [TRIALS[1]], [], measure, 3, 4, lambda n: False)
    assert no_time.rounds == 3
    assert cf.confirm(None, [], [], measure, 3, 4, lambda n: True).status == "no-baseline"
    assert cf.confirm(TRIALS[0], [], [], measure, 3, 4, lambda n: True).status == \
        "nothing-to-confirm"


@given(st.dictionaries(st.integers(0, 5), st.floats(0.1, 1e6), min_size=1),
       st.dictionaries(st.integers(0, 5), st.floats(0.1, 1e6), min_size=1))
def test_speedup_interval_always_brackets_the_ratio(base: dict[int, float],
                                                    cand: dict[int, float]) -> None:
    try:
        s = cf.paired_speedup(base, cand)
    except ValueError:
        assert not set(base) & set(cand)
        return
    assert s.ratio > 0
    if s.low is not None and s.high is not None:
        assert s.low <= s.ratio * (1 + 1e-9) and s.ratio <= s.high * (1 + 1e-9)


def _effect(knob: str, value: str, effect: float, n: tuple[int, int] = (2, 2)) -> Effect:
    return Effect(knob=knob, value=value, effect=effect, n_with=n[0], n_without=n[1],
                  baseline=False, mean_with=1.0 + effect, mean_without=1.0)


def test_effects_that_contradict_the_verdict_or_rest_on_one_trial_are_marked() -> None:
    effects = [_effect("cl", "on", 0.30), _effect("prec", "bf16", -0.10),
               _effect("prec", "fp16", 0.01), _effect("cl", "off", 0.20, (1, 1))]
    # the confirmed best changes only prec to bf16 (so it keeps cl off)
    marked = cf.mark_effects(effects, KNOBS, {"prec": "bf16"}, noise_cv=0.005)
    assert [(e.knob, e.value, e.thin, e.contradicts, e.note) for e in marked] == [
        ("cl", "on", False, True, "the confirmed best uses off instead"),
        ("prec", "bf16", False, True, "the confirmed best uses it all the same"),
        ("prec", "fp16", False, False, ""),  # +1 %: under the floor, not a contradiction
        ("cl", "off", True, False, "one trial against one"),
    ]
    # no winner: a large gain of another value is not borne out; the noise raises the floor
    marked = cf.mark_effects(effects, KNOBS, None, noise_cv=0.12)
    assert [(e.value, e.contradicts) for e in marked] == [
        ("on", True), ("bf16", False), ("fp16", False), ("off", False)]
    assert marked[0].note == ("not borne out: no configuration beat your settings when "
                              "re-measured")
    # nothing was re-measured: no verdict to contradict, thin still said
    marked = cf.mark_effects(effects, KNOBS, None, noise_cv=None, confirmed=False)
    assert [e.note for e in marked] == ["", "", "", "one trial against one"]


# --- held by mutation testing (scripts/mutation.sh) ----------------------------------------------

def _t_cdf(t: float, df: int) -> float:
    """Student's t CDF for t > 0, from the regularized incomplete beta function:
    P(T <= t) = 1 - I_x(df/2, 1/2) / 2 with x = df / (df + t^2) (Abramowitz & Stegun 26.7.1);
    I_x by Lentz's continued fraction (Numerical Recipes 6.4, betacf)."""
    a, b, x = df / 2.0, 0.5, df / (df + t * t)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    frac = d
    for m in range(1, 400):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            frac *= c * d
    return 1.0 - front * frac / 2.0


@pytest.mark.parametrize("df", [*range(1, 31), 31, 35, 40, 60, 100, 200, 1000])
def test_every_t_quantile_is_the_975th_percentile(df: int) -> None:
    """Each table entry (and the expansion past the table) is where Student's t CDF, computed
    independently, reaches 0.975 (the table's three decimals move it by less than 1e-4)."""
    assert _t_cdf(cf.t975(df), df) == pytest.approx(0.975, abs=1e-4)


def test_the_fastest_of_the_users_precision_is_the_one_added() -> None:
    trials = [Trial(number=n, params={"k": str(n)}, state="ok", throughput=tp, precision=p)
              for n, tp, p in ((0, 100.0, "fp32"), (1, 300.0, "bf16"), (2, 200.0, "fp32"),
                               (3, 150.0, "fp32"))]
    assert [t.number for t in cf.pick_candidates(trials[0], trials, 1, "fp32")] == [1, 2]


def test_one_round_leaves_a_candidate_unsettled_and_unjudged() -> None:
    one = cf.paired_speedup({0: 100.0}, {0: 150.0})
    assert one.pairs == 1 and one.low is None
    assert cf.unsettled(one) is True
    assert cf.significant(one, None) == (False, "measured in one round only: no interval, "
                                                "no verdict")


def test_a_candidate_that_never_finishes_a_round_gets_no_verdict() -> None:
    base = Trial(number=0, params={}, state="ok", throughput=100.0)
    broken = Trial(number=1, params={"k": "1"}, state="ok", throughput=200.0, precision="fp32")
    out = cf.confirm(base, [broken], [], lambda t, r: 100.0 if t.number == 0 else None,
                     2, 4, lambda keys: True)
    (verdict,) = out.candidates
    assert (verdict.speedup, verdict.low, verdict.high, verdict.pairs, verdict.winner,
            verdict.why) == (None, None, None, 0, False, "no round measured both")
    assert out.rounds == 2


def _h200(name: str) -> Any:
    """A plain `rocmdoctor tune --model <name>` on an H200, its --output as written
    (docs/benchmarks.md, "The plain command, default budget")."""
    import json
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "docs", "data",
                        f"tune-{name}-h200-plain-15m.json")
    with open(path, encoding="utf-8") as fh:
        return from_dict(json.load(fh))


def test_a_change_that_buys_nothing_measurable_is_not_picked() -> None:
    """ResNet-50 on the H200: trial 10 is trial 2 plus expandable_segments, 0.05 % faster
    over the two interleaved rounds (the interval -0.3 % to +0.3 %): trial 2 is the pick,
    one change fewer, and the note says what it was preferred to and why."""
    conf = _h200("resnet50").confirmation
    winners = [c for c in conf.candidates if c.winner]
    assert [(c.trial, len(c.changes)) for c in winners] == [(2, 6), (10, 7), (3, 5)]
    best, over = cf.pick_best(winners, conf.runs, conf.noise_cv)
    assert best is not None and best.trial == 2
    assert over == PassedOver(trial=10, ratio=pytest.approx(1.000455, abs=1e-6),
                              low=pytest.approx(0.997425, abs=1e-6),
                              high=pytest.approx(1.003495, abs=1e-6),
                              why="the 95 % interval -0.3% to +0.3% includes no gain",
                              changes=6, its_changes=7)
    # the same runs, trial 10 3 % faster in each round: then its extra change is worth it
    faster = [(k, r, v * 1.03) if k == 10 else (k, r, v) for k, r, v in conf.runs]
    assert cf.pick_best(winners, faster, conf.noise_cv) == (winners[1], None)
    # fp32's best (trial 3, five changes) is 2 x slower: never "as fast"
    assert cf.pick_best([winners[0], winners[2]], conf.runs, conf.noise_cv) == (
        winners[0], None)
    assert cf.pick_best([], conf.runs, conf.noise_cv) == (None, None)


def test_the_best_at_your_batch_size_is_confirmed_too() -> None:
    """ViT-B/16 on the H200: trial 7 (bf16, compile, fused SGD at your batch of 64) finished
    at 3,022.7 images/s but was not re-measured, so the result could not name the best that
    keeps your batch size. It is a candidate now, beside the two fastest."""
    tune = _h200("vit_b_16")
    ok = [t for t in tune.trials if t.state == "ok"]
    assert [(t.number, t.params["batch_size"], round(t.throughput, 1)) for t in ok] == [
        (0, "64", 363.4), (1, "1024", 3536.4), (2, "1024", 3462.1), (7, "64", 3022.7)]
    picked = cf.pick_candidates(tune.baseline, ok, 2, "fp32", 64)
    assert [t.number for t in picked] == [1, 2, 7]
    assert [t.number for t in cf.pick_candidates(tune.baseline, ok, 2, "fp32")] == [1, 2]
    # one that is among the fastest already is not added twice
    assert [t.number for t in cf.pick_candidates(tune.baseline, ok, 3, "fp32", 64)] == [
        1, 2, 7]


def test_a_gain_equal_to_the_noise_is_within_it() -> None:
    assert cf.significant(cf.Speedup(1.5, 1.4, 1.6, 3), 0.5) == (
        False, "a gain of 50.0% is within the run-to-run noise (50.0%)")
    assert cf.significant(cf.Speedup(1.5, 1.4, 1.6, 3), 0.49)[0] is True


def test_of_two_simpler_equals_the_faster_is_picked() -> None:
    """Beside trial 2 a copy of it 0.1 % slower in each round (as many changes): both are as
    fast as trial 10 as far as the rounds tell; trial 2, the faster of the two, is picked."""
    conf = _h200("resnet50").confirmation
    winners = {c.trial: c for c in conf.candidates if c.winner}
    copy = dataclasses.replace(winners[2], trial=11, speedup=winners[2].speedup * 0.999)
    runs = list(conf.runs) + [(11, r, v * 0.999) for k, r, v in conf.runs if k == 2]
    best, over = cf.pick_best([copy, winners[10], winners[2]], runs, conf.noise_cv)
    assert best is winners[2] and over is not None and over.trial == 10
