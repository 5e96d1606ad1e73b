"""A tune counts what its workload counts: tokens for GPT-2, images for ResNet-50. The payback
of a one-time cost is in steps of batch x tokens per sequence, energy is per token where
throughput is, and the apply lines name the optimizer the trials ran. Replayed from the plain
`rocmdoctor tune --model gpt2` and `--model resnet50 --budget 7m` on an H200
(docs/benchmarks.md; their --output files in docs/data/)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Optional

import pytest

from rocmdoctor.tuners.bench.render import joules, result_rows, unit_name
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.codec import confirm_run_from, from_dict, space_from, trial_from
from rocmdoctor.tuners.export import energy_line, render_summary
from rocmdoctor.tuners.html import render_html
from rocmdoctor.tuners.model import Apply, energy_per_unit
from rocmdoctor.tuners.proof import payback
from rocmdoctor.tuners.result import how_to_apply
from rocmdoctor.tuners.study import metrics_of

DATA = os.path.join(os.path.dirname(__file__), "..", "docs", "data")


def _run(name: str) -> dict[str, Any]:
    with open(os.path.join(DATA, name), encoding="utf-8") as fh:
        return json.load(fh)


def confirmed_energy(trial: dict[str, Any], runs: list[dict[str, Any]]) -> Any:
    from rocmdoctor.tuners.proof import confirmed_energy as of

    return of(trial_from(trial), [confirm_run_from(r) for r in runs])


def _payback(base: dict[str, Any], trial: dict[str, Any], *args: Any) -> Any:
    back = payback(trial_from(base), trial_from(trial), *args)
    return None if back is None else {"one_time_s": back.one_time_s, "steps": back.steps,
                                      "minutes": back.minutes}


def _energy(record: dict[str, Any]) -> Any:
    return energy_per_unit(record.get("energy_per_sample_j"), record.get("units_per_sample"),
                           record.get("unit"))


def _as_recorded_now(tune: dict[str, Any]) -> dict[str, Any]:
    """The gpt2 run as this version records it: each trial keeps the units per sample and the
    optimizer class its bench result reports (GPT-2's workload: 512 tokens a sequence, the
    --seq-len default, and AdamW), and the confirmation its energy figures."""
    for t in [*tune["trials"], tune["baseline"]]:
        t["units_per_sample"] = tune["workload"]["seq_len"]
        t["optimizer_class"] = "torch.optim.AdamW"
    by_number = {t["number"]: t for t in tune["trials"]}
    runs = tune["confirmation"]["timed_runs"]
    tune["confirmation"]["baseline_energy_per_unit_j"] = confirmed_energy(tune["baseline"], runs)
    for cand in tune["confirmation"]["candidates"]:
        t = by_number[cand["trial"]]
        cand["energy_per_unit_j"] = confirmed_energy(t, runs)
        cand["payback"] = _payback(tune["baseline"], t, cand["speedup"], cand["batch_size"],
                                   t["units_per_sample"])
    return tune


def test_a_gpt2_payback_counts_steps_of_batch_times_tokens() -> None:
    """Trial 1 (bf16, compile reduce-overhead, fused AdamW, batch 176) costs 24.06 s more
    than your settings once and is 7.349 x faster: each token saves 1/58,309.6 - 1/428,518 s,
    so 1.62 million tokens pay it back: 18.02 steps of 176 x 512 tokens, that is 19 steps
    (the run printed 9,225: tokens over sequences), 3.8 s of training."""
    tune = _run("tune-gpt2-h200-plain-15m.json")
    by_number = {t["number"]: t for t in tune["trials"]}
    base = tune["baseline"]
    cands = {c["trial"]: c for c in tune["confirmation"]["candidates"]}
    assert _payback(base, by_number[1], cands[1]["speedup"], 176, 512) == {
        "one_time_s": 24.1, "steps": 19, "minutes": 0.06}
    # trial 6: batch 128, 23.39 s more at 7.331 x: 1.58 million tokens, 24.09 steps of 65,536
    assert _payback(base, by_number[6], cands[6]["speedup"], 128, 512) == {
        "one_time_s": 23.4, "steps": 25, "minutes": 0.06}
    # trial 8 (fp16, fused, no compile) starts faster than your settings: nothing to pay back
    assert _payback(base, by_number[8], cands[8]["speedup"], 64, 512) == {
        "one_time_s": 0.0, "steps": 0, "minutes": 0.0}
    # images: one unit a sample, as before
    assert _payback(base, by_number[1], cands[1]["speedup"], 176) == {
        "one_time_s": 24.1, "steps": 9225, "minutes": 0.06}


def test_energy_per_token_from_the_confirmation_runs() -> None:
    """Your settings' two re-runs used 6.0096 and 6.0203 J a sequence of 512 tokens (median
    6.0149: 0.011748 J a token); trial 1's 0.8116 and 0.8200 (median 0.8158: 0.0015934 J a
    token), 86 % less."""
    tune = _run("tune-gpt2-h200-plain-15m.json")
    runs = tune["confirmation"]["timed_runs"]
    base = {**tune["baseline"], "units_per_sample": 512}
    trial1 = {**next(t for t in tune["trials"] if t["number"] == 1), "units_per_sample": 512}
    assert confirmed_energy(base, runs) == pytest.approx(6.0149258 / 512, rel=1e-6)
    assert confirmed_energy(trial1, runs) == pytest.approx(0.8157932 / 512, rel=1e-6)
    # without re-runs, the search run's figure; a failed re-run does not count
    assert confirmed_energy(trial1, []) == pytest.approx(0.8153989 / 512, rel=1e-6)
    failed = [{**r, "state": "crash", "energy_per_sample_j": 99.0} for r in runs]
    assert confirmed_energy(trial1, failed + runs) == pytest.approx(0.8157932 / 512, rel=1e-6)
    # a result from before units were kept: per image where the unit is images, else unknown
    assert energy_per_unit(0.08, None, "images") == 0.08
    assert energy_per_unit(6.0, None, "tokens") is None
    assert energy_per_unit(None, 512, None) is None
    assert energy_per_unit(float("nan"), None, "images") is None


def test_the_gpt2_summary_and_page_speak_of_tokens_and_adamw() -> None:
    tune = _as_recorded_now(_run("tune-gpt2-h200-plain-15m.json"))
    best = tune["verdict"]["best_overall"]
    t = next(t for t in tune["trials"] if t["number"] == best["trial"])
    applied = how_to_apply(space_from(tune["space"]), best["params"], t["env"], "cuda",
                           BenchSpec(model="gpt2"), t["optimizer_class"])
    tune["apply"] = {"env": dict(applied.env), "python": list(applied.python),
                     "notes": list(applied.notes)}
    tune["verdict"]["best_overall"] = next(c for c in tune["confirmation"]["candidates"]
                                           if c["trial"] == best["trial"])
    result = from_dict(tune)
    text = render_summary(result)
    lines = text.splitlines()
    table = lines[lines.index("") + 1:lines.index("") + 6]
    assert table == [
        "                 throughput          energy           memory     one-time  "
        "speed-up (95 % interval)",
        "  your settings  58,309.6 tokens/s   0.0117 J/token   43.3 GiB   0.8 s     1.000",
        "  trial 1 *      427,687.9 tokens/s  0.00159 J/token  113.8 GiB  24.9 s    7.349 "
        "(+617.2% .. +653.1%)",
        "  trial 6 *      426,751.8 tokens/s  0.00160 J/token  70.7 GiB   24.2 s    7.331 "
        "(+615.8% .. +650.8%)",
        "  trial 8 *      240,465.4 tokens/s  0.00254 J/token  35.7 GiB   0.4 s     4.129 "
        "(+307.1% .. +318.7%)",
    ]
    assert ("    its 24.1 s of one-time cost (compile, tuning) is paid back after 19 steps "
            "(0.06 min of training)") in lines
    assert "  energy per token: 0.00159 J against 0.0117 J with your settings (-86%)" in lines
    assert ("  optimizer = torch.optim.AdamW(..., fused=True)  # the optimizer you use, with "
            "fused=True") in lines
    assert "SGD" not in text
    page = render_html(result)
    assert "energy per token: 0.00159 J against 0.0117 J with your settings (-86%)" in page
    assert "<td class=n>0.0117 J/token</td>" in page
    assert "torch.optim.AdamW(..., fused=True)" in page


def test_the_resnet50_7m_run_reports_energy_per_image() -> None:
    """The 7-minute ResNet-50 run: trial 2 (fp16, batch 1024) against your settings, each
    re-measured twice: 0.0871 J an image against 0.2889 J (median of each pair)."""
    tune = _run("tune-resnet50-h200-plain-7m.json")
    runs = tune["confirmation"]["timed_runs"]
    mine = [r["energy_per_sample_j"] for r in runs if r["trial"] == 0]
    pick = [r["energy_per_sample_j"] for r in runs if r["trial"] == 2]
    assert len(mine) == len(pick) == 2
    tune["confirmation"]["baseline_energy_per_unit_j"] = confirmed_energy(tune["baseline"], runs)
    best = tune["verdict"]["best_overall"]
    best["energy_per_unit_j"] = confirmed_energy(
        next(t for t in tune["trials"] if t["number"] == 2), runs)
    assert best["energy_per_unit_j"] == pytest.approx(sum(pick) / 2)
    assert tune["confirmation"]["baseline_energy_per_unit_j"] == pytest.approx(sum(mine) / 2)
    # 0.086934 / 0.286463 - 1 = -69.7 %
    assert energy_line(from_dict(tune)) == ("energy per image: 0.0869 J against 0.286 J "
                                            "with your settings (-70%)")


def test_no_energy_column_without_power_readings() -> None:
    tune = _run("tune-resnet50-h200-plain-7m.json")
    for t in [*tune["trials"], tune["baseline"]]:
        t["energy_per_sample_j"] = None
    header = next(x for x in render_summary(from_dict(tune)).splitlines() if "throughput" in x)
    assert header.split() == ["throughput", "memory", "one-time", "speed-up", "(95", "%",
                              "interval)"]
    assert energy_line(from_dict(tune)) is None


def test_metrics_keep_units_and_the_optimizer_class() -> None:
    bench = {"metrics": {"unit": "tokens", "throughput": {"median": 1000.0},
                         "power": {"energy_per_sample_j": 5.12}},
             "workload": {"units_per_sample": 512, "optimizer": "AdamW(lr=1e-4)",
                          "optimizer_class": "torch.optim.AdamW"}}
    kept = metrics_of(bench)
    assert (kept["units_per_sample"], kept["optimizer_class"]) == (512, "torch.optim.AdamW")
    assert _energy(kept) == pytest.approx(0.01)


def test_bench_prints_energy_per_token_not_per_sequence() -> None:
    result = {"metrics": {"unit": "tokens", "power": {
        "avg_w": 700.0, "peak_w": 720.0, "energy_per_sample_j": 6.0149, "source": "nvml",
        "sample_hz": 10.0}}, "workload": {"units_per_sample": 512}}
    rows = dict(result_rows(result))
    assert rows["power"] == "700 W average, 720 W peak, 0.0117 J/token (nvml, 10 Hz)"
    result["metrics"]["unit"] = "images"
    result["workload"]["units_per_sample"] = 1
    result["metrics"]["power"]["energy_per_sample_j"] = 0.0871
    assert dict(result_rows(result))["power"] == ("700 W average, 720 W peak, 0.0871 J/image "
                                                  "(nvml, 10 Hz)")


@pytest.mark.parametrize(("impl", "optimizer", "line"), [
    ("fused", "torch.optim.AdamW",
     "optimizer = torch.optim.AdamW(..., fused=True)  # the optimizer you use, with fused=True"),
    ("foreach", "mylib.optim.Lion",
     "optimizer = mylib.optim.Lion(..., foreach=True)  # the optimizer you use, with "
     "foreach=True"),
    ("for-loop", None,  # a trial recorded before the class was kept: torch.optim.SGD
     "optimizer = torch.optim.SGD(..., foreach=False)  # the optimizer you use, with "
     "foreach=False"),
])
def test_the_apply_line_names_the_optimizer_the_trial_ran(impl: str, optimizer: Any,
                                                          line: str) -> None:
    space = space_from({"knobs": [{"name": "optimizer_impl", "choices": ["default", impl],
                                   "baseline": "default", "changes_numerics": False}]})
    applied = how_to_apply(space, {"optimizer_impl": impl}, {}, "cuda", BenchSpec(), optimizer)
    assert applied == Apply(env={}, python=(line,), notes=())


@pytest.mark.parametrize(("value", "unit", "text"), [
    (0.002, "tokens", "0.00200 J/token"), (0.41, "images", "0.410 J/image"),
    (6.0149, "samples", "6.01 J/sample"), (1234.5, "samples", "1,234 J/sample"),
    (None, "images", "-"),
])
def test_energy_is_shown_to_three_significant_digits(value: Any, unit: str, text: str) -> None:
    assert joules(value, unit_name(unit)) == text


@pytest.mark.parametrize(("failure", "confirmation", "concluded"), [
    (None, "done", True),
    ("baseline", "done", False),
    ("too-short", "nothing-to-confirm", False),
    ("environment", "done", True),
    (None, "failed", False),
    (None, "not-run", False),
])
def test_a_tune_concludes_only_from_measurements(failure: Optional[str], confirmation: str,
                                                  concluded: bool) -> None:
    # TuneResult.concluded reads these two fields alone (the command's exit code rests on it).
    from types import SimpleNamespace

    from rocmdoctor.tuners.model import Confirmation, Failure, TuneResult

    fields = SimpleNamespace(
        failure=Failure(failure, "stopped", "why") if failure else None,
        confirmation=Confirmation(confirmation))
    assert TuneResult.concluded.fget(fields) is concluded  # type: ignore[attr-defined]


def test_a_trial_keeps_every_figure_of_a_real_bench_result() -> None:
    """`rocmdoctor bench --json` of ResNet-50 with a 16-worker loader on an H200
    (docs/data/bench-data-resnet50-h200-2026-12-02-w16.json), kept whole."""
    result = json.loads(Path("docs/data/bench-data-resnet50-h200-2026-12-02-w16.json")
                        .read_text(encoding="utf-8"))
    assert metrics_of(result) == {
        "loader": {"num_workers": 16, "persistent_workers": True, "pin_memory": True},
        "input_share": 0.050312214731712754, "input_verdict": "compute-bound",
        "throughput": 4015.2746196204444, "p10": 2733.8728509512366, "p90": 4169.263023223431,
        "cv": 0.16479695697215938, "unit": "images", "memory_bytes": 6912212992,
        "memory_kind": "device peak reserved", "energy_per_sample_j": 0.14327625000000807,
        "units_per_sample": 1, "optimizer_class": "torch.optim.SGD",
        "first_step_s": 3.7363257800000156,
        "windows": [3927.1852534207965, 3936.2984565970587, 3026.3809142897953,
                    3546.3939409211707, 3401.5867619092614],
        "unsupported": {}, "visible_devices": {}}
    # without a device's memory figure, the host's peak RSS is kept and named so
    del result["metrics"]["memory"]["peak_reserved_bytes"]
    kept = metrics_of(result)
    assert (kept["memory_bytes"], kept["memory_kind"]) == (5783068672, "host peak RSS")
    # that result was written before the basis was: judged by its median. A run that reads
    # data now says "mean", and its trial keeps all its images over all its time.
    result["metrics"]["throughput"]["basis"] = "mean"
    assert metrics_of(result)["throughput"] == result["metrics"]["throughput"]["mean"] == \
        pytest.approx(3533.4, abs=0.05)


def test_a_confirmation_cut_after_one_round_is_no_verdict_either_way() -> None:
    """The H200 tune of ResNet-50 on 20,000 JPEGs with a 10-minute budget (docs/data,
    2026-12-03): the budget ended in the second confirmation round, so each candidate had
    one round. Its verdict then said "no configuration beat your current settings" and its
    effects "not borne out", against a 24x lead. Its confirmation, judged again from its own
    runs, is the budget's: no verdict, what the one round saw, how to finish."""
    from rocmdoctor.tuners import result as rs
    from rocmdoctor.tuners.proof import judge_runs

    tune = from_dict(json.loads(Path("docs/data/tune-data-resnet50-h200-10m-2026-12-03.json")
                                .read_text(encoding="utf-8")))
    recorded = tune.confirmation
    assert [(c.trial, c.pairs, c.low) for c in recorded.candidates] == [
        (2, 1, None), (1, 1, None)]
    skipped = [r.message or "" for r in recorded.timed_runs if r.state == "not-run"]
    judged = judge_runs(recorded, recorded.timed_runs, skipped)
    assert (judged.status, judged.reason) == ("budget", (
        "the confirmation did not finish: the budget ended before the confirmation did after "
        "one round (trial 2: 27.23x your settings in it); the search figures are unconfirmed: "
        "the same command with a longer --budget confirms them"))
    assert [c.why for c in judged.candidates] == [
        "not confirmed: its re-measurements did not finish (not-run: the budget ended before "
        "the confirmation did)"] * 2
    verdict = rs._verdict(judged, tune.workload)
    assert (verdict.winner, verdict.best_overall, verdict.summary) == (False, None,
                                                                       judged.reason)
    # and the effects contradict no verdict: there is none
    rebuilt = rs.build(tune.study, tune.workload, tune.platform, tune.space, tune.budget_s,
                       tune.elapsed_s, tune.trials, tune.baseline, judged,
                       tune.search.stopped, tune.search.why, tune.batch_search, tune.failure,
                       tune.recovery, ())
    assert rebuilt.verdict.summary == judged.reason
    assert not any(e.contradicts or "not borne out" in e.note for e in rebuilt.effects)
    # one candidate decided beside one left open: the decided one's verdict stands, and the
    # open one says it was not confirmed
    beaten = dataclasses.replace(recorded.candidates[1], low=0.9, high=1.1, pairs=2)
    mixed = judge_runs(dataclasses.replace(recorded, candidates=(recorded.candidates[0],
                                                                 beaten)),
                       recorded.timed_runs, skipped)
    assert mixed.status == "done" and mixed.candidates[0].why.startswith("not confirmed")
