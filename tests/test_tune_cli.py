"""The tune command line: option parsing, usage errors, the missing-optuna hint and the
progress lines."""

from __future__ import annotations

import importlib.util
import io
from typing import Any, Optional

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from rocmdoctor.cli import tune as cli_tune
from rocmdoctor.cli.tune import parse_duration, parse_sizes
from rocmdoctor.cli.tune_progress import Progress


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command(name="tune")(cli_tune.tune_command)
    return app


def test_durations() -> None:
    assert parse_duration("900") == 900.0
    assert parse_duration("90s") == 90.0
    assert parse_duration("15m") == 900.0
    assert parse_duration("1.5h") == 5400.0
    assert parse_duration("1h30m") == 5400.0
    assert parse_duration(" 2M ") == 120.0
    for bad in ("", "m", "15 minutes", "-5m", "0", "1h-3m", "1e3"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_batch_sizes() -> None:
    assert parse_sizes("256,64, 128,64") == (64, 128, 256)
    assert parse_sizes(None) == () and parse_sizes("") == ()
    with pytest.raises(ValueError, match="positive integers, not '0'"):
        parse_sizes("64,0")
    with pytest.raises(ValueError, match="not 'x'"):
        parse_sizes("x")


@given(st.text(max_size=20))
def test_duration_parser_accepts_or_says_why(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert seconds > 0


def test_missing_optuna_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: Optional[str] = None) -> Any:
        return None if name == "optuna" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    result = CliRunner().invoke(_app(), ["--model", "tinycnn"])
    assert result.exit_code == 2
    assert result.output == ("rocmdoctor: error: rocmdoctor tune needs optuna: "
                             "pip install 'rocmdoctor[tune]'\n")


def test_usage_errors_exit_2_before_any_work() -> None:
    runner = CliRunner()
    bad_budget = runner.invoke(_app(), ["--budget", "soon"])
    assert bad_budget.exit_code == 2
    assert bad_budget.output == ("rocmdoctor: error: not a duration: 'soon' (examples: 900, "
                                 "90s, 15m, 1h30m)\n")
    bad_spec = runner.invoke(_app(), ["--precision", "fp8", "--model", "alexnet"])
    assert bad_spec.exit_code == 2
    assert bad_spec.output.startswith("rocmdoctor: error: unknown model 'alexnet' ")
    assert "unknown precision 'fp8' (one of fp32, fp32-strict, tf32, bf16, fp16)" in bad_spec.output


def test_progress_lines() -> None:
    from rocmdoctor.tuners import events as ev

    out = io.StringIO()
    progress = Progress(out)
    progress(ev.Planned(study="tinycnn-abc", storage="sqlite:///x.db", knobs=2, size=4,
                        sampler="BruteForceSampler", requeued=(1,), finished=1, total=4))
    progress(ev.TrialStarted(number=2, params={}, changes={"channels_last": "on"}, gpu=None,
                             finished=1, total=4, time_left=800.0))
    progress(ev.TrialEnded(number=2, params={}, changes={}, gpu=None, state="ok", message="",
                           throughput=2345.67, unit="images", best=2500.0, finished=2,
                           total=4, time_left=754.2))
    progress(ev.TrialStarted(number=3, params={}, changes={}, gpu=None, finished=2,
                             total=None, time_left=700.0))
    progress(ev.TrialEnded(number=3, params={}, changes={}, gpu=None, state="pruned",
                           message="pruned: throughput below the other trials",
                           throughput=None, unit=None, best=2500.0, finished=3, total=None,
                           time_left=-3.0))
    progress(ev.TrialEnded(number=4, params={}, changes={}, gpu=None, state="oom",
                           message="out of memory at batch 8", throughput=None, unit=None,
                           best=None, finished=4, total=None, time_left=61.0))
    progress(ev.ConfirmStarted(trials=(0, 2), rounds=3))
    progress(ev.ConfirmRan(trial=0, round=0, state="ok", throughput=2000.0, message="",
                           baseline=True, time_left=30.0))
    progress(ev.ConfirmRan(trial=2, round=0, state="crashed", throughput=None, message="",
                           baseline=False, time_left=20.0))
    assert out.getvalue() == (
        "tune: 2 knobs, 4 configurations, BruteForceSampler, study tinycnn-abc, 1 already "
        "done\n"
        "tune: trial(s) 1 were interrupted last time; they run again\n"
        "[2/4] trial 2: channels_last=on ...\n"
        "      trial 2: 2,345.7 images/s; best 2,500.0; 12m34s left\n"
        "[3] trial 3: your settings ...\n"
        "      trial 3: pruned: throughput below the other trials; best 2,500.0; over budget\n"
        "      trial 4: oom: out of memory at batch 8; 1m01s left\n"
        "confirm: re-measuring your settings and 1 candidate(s), interleaved, at least 3 "
        "rounds\n"
        "      round 1: your settings: 2,000.0 images/s; 0m30s left\n"
        "      round 1: trial 2: crashed; 0m20s left\n")
