"""What the mutation run of seed 30 (docs/testing.md) found no test for: each test below
fails on the change that survived, and passes on the code as it is."""

from __future__ import annotations

import os
from typing import Any

import pytest

from rocmdoctor.host.base import CommandResult


def test_a_slow_window_under_stress_says_to_look_at_clocks_and_temperature() -> None:
    from tests.test_deep_verdicts import _stress, _stressed

    windows = [780.0] * 300 + [612.0] + [775.0] * 299
    result = _stress(_stressed(windows, reasons={"SW Power Cap": 0.7}))
    assert result.fix is not None
    assert result.fix.text == ("Look at clocks-under-load and the temperature over the run: a "
                               "card that slows as it heats needs cooling.")
    assert result.fix.commands == ("rocmdoctor check --stress 10m --only stress -v",)


def test_torch_rocm_match_gives_up_soon_after_both_children_would_have() -> None:
    # the probe's limit, then the library-load child's, then a margin: not their product
    from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch
    from rocmdoctor.facts.libload import LIBLOAD_TIMEOUT_S
    from rocmdoctor.host.probe import PROBE_TIMEOUT_S

    assert TorchRocmMatch.deadline_s is not None
    assert PROBE_TIMEOUT_S + LIBLOAD_TIMEOUT_S < TorchRocmMatch.deadline_s <= \
        PROBE_TIMEOUT_S + LIBLOAD_TIMEOUT_S + 60


def test_a_dkms_line_whose_module_has_a_space_is_no_module() -> None:
    from rocmdoctor.facts.amdgpu_module import parse_dkms_status

    assert parse_dkms_status("Error! bad conf, here: installed\n") == []


def test_a_virtual_environment_is_a_prefix_other_than_the_base() -> None:
    from rocmdoctor.host.probe_child import _in_venv

    # whichever sorts first: a venv under /a beside a base in /usr, and the other way round
    assert _in_venv("/a/venv", "/usr") and _in_venv("/usr/venv", "/opt/python")
    assert not _in_venv("/usr", "/usr")


def test_a_python_that_printed_only_a_traceback_header_is_a_python() -> None:
    from rocmdoctor.host.probe import _not_python

    said = CommandResult(returncode=1, stdout="", stderr="Traceback (most recent call last):\n")
    assert _not_python(said, None) is False
    assert _not_python(CommandResult(returncode=1, stdout="", stderr="nope\n"), None) is True


def test_the_evidence_keeps_300_characters_of_the_last_line() -> None:
    from rocmdoctor.host.probe import _output_line

    assert _output_line(CommandResult(returncode=1, stdout="", stderr="x" * 400 + "\n")) == \
        "x" * 300


def test_the_deep_child_script_is_where_the_deep_check_starts_it() -> None:
    from rocmdoctor.host.deep import DEEP_SCRIPT

    assert os.path.basename(DEEP_SCRIPT) == "deep_child.py" and os.path.isfile(DEEP_SCRIPT)


def _check(id_: str, depends: tuple[str, ...] = ()) -> Any:
    from rocmdoctor.model import Check

    return type(f"C_{id_.replace('-', '_')}", (Check,), {
        "id": id_, "title": id_, "depends": depends, "run": lambda self, host: None})()


def test_a_prerequisite_no_check_provides_is_not_selected() -> None:
    from rocmdoctor.runner import with_prerequisites

    checks = [_check("a", ("b", "gone")), _check("b")]
    assert with_prerequisites(checks, {"a"}) == {"a", "b"}


def test_an_unknown_check_id_names_the_known_ones() -> None:
    from rocmdoctor.runner import UnknownCheckError, select_checks

    with pytest.raises(UnknownCheckError) as raised:
        select_checks([_check("a"), _check("b")], only=["zz"], skip=["yy"])
    assert str(raised.value) == "unknown check id: zz, yy (no check matches it; known: a, b)"


def test_a_programs_error_line_is_numbered_from_one() -> None:
    from rocmdoctor.explain import _program_error_line

    assert _program_error_line("one\ntwo\nValueError: boom\nthree") == ("ValueError: boom", 3)


def test_a_capability_below_the_builds_newest_of_its_major_is_not_above_it() -> None:
    from rocmdoctor.explain.context import CONDITIONS, Situation

    def above(text: str) -> bool:
        return CONDITIONS["capability_above_build"](Situation(text, None))

    build = "Minimum and Maximum cuda capability supported by this version of PyTorch is (7.0) - " \
            "(8.9)\n"
    assert above(build + "Found GPU0 NVIDIA X which is of cuda capability 8.6.\n") is False
    assert above(build.replace("(8.9)", "(8.0)") +
                 "Found GPU0 NVIDIA X which is of cuda capability 8.6.\n") is True


def test_a_last_line_ending_in_a_carriage_return_loses_only_that() -> None:
    from rocmdoctor.explain.reading import lines_of

    assert list(lines_of(["one\r\ntwo\r"])) == ["one", "two"]


def test_an_option_in_prose_stays_with_its_command_when_wrapped() -> None:
    from rocmdoctor.render.terminal import wrap

    lines = wrap("then run sudo update-initramfs -u and reboot the machine once more", 30,
                 "", "")
    assert any("update-initramfs -u" in ln for ln in lines), lines


def test_a_trials_time_limit_is_six_times_your_settings_run() -> None:
    from rocmdoctor.tuners.bench.spec import BenchSpec
    from rocmdoctor.tuners.model import Plan, Trial
    from tests.test_tune_parallel import _platform, _tuner

    tuner = _tuner((), {}, _platform())
    plan = Plan(spec=BenchSpec(model="tinycnn"), env={}, tunableop=False, dirs={})
    ran = Trial(number=0, params={}, state="ok", wall_s=100.0)
    assert tuner.runner.timeout(plan, ran) == 600.0
    assert tuner.runner.timeout(plan, Trial(number=0, params={}, state="ok", wall_s=1.0)) == 120.0
    assert tuner.runner.timeout(plan, None) == 900.0


def test_the_compile_line_to_apply_is_a_whole_call() -> None:
    from rocmdoctor.tuners.result import CODE_LINES

    assert CODE_LINES[("compile", "on")] == ("model = torch.compile(model)",)


def test_a_trials_wall_time_is_recorded_for_the_next_time_limit() -> None:
    import optuna

    from rocmdoctor.tuners.bench.child import TrialOutcome
    from rocmdoctor.tuners.search import Search
    from rocmdoctor.tuners.study import read_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    trial = study.ask()
    Search._record_end(trial, TrialOutcome("crashed", None, "boom", "", 1, 12.5), None, None)
    assert read_trial(study.trials[0]).wall_s == 12.5


def test_a_trials_end_carries_the_unit_of_its_throughput(tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from rocmdoctor.tuners import space as sp
    from rocmdoctor.tuners.bench.child import TrialOutcome
    from rocmdoctor.tuners.bench.spec import BenchSpec
    from rocmdoctor.tuners.events import TrialEnded
    from tests.test_tune_budget import _FakeTrial, _search, _trial

    search = _search([], budget_s=3600.0)
    search.ctx.study_dir = str(tmp_path)
    search.changes = lambda params: {}  # type: ignore[method-assign]
    search.total = lambda: 10  # type: ignore[method-assign]
    search.baseline = lambda: _trial(0, 30.0, 0.0, 1000.0, baseline=True)  # type: ignore
    plan = sp.Plan(spec=BenchSpec(), env={}, tunableop=False, dirs={})
    monkeypatch.setattr(sp, "materialize", lambda *a, **k: plan)
    result = json.loads((_recorded_bench()).read_text(encoding="utf-8"))
    search.runner.run = lambda *a, **k: (  # type: ignore[method-assign]
        TrialOutcome("ok", result, "done", "", 0, 10.0), None)
    seen: list[Any] = []
    search.ctx.emit = seen.append  # type: ignore[method-assign]
    try:
        search.measure(_FakeTrial(3, False), {}, None, 1, 100.0)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - what the judging makes of it is not this test's
        pass
    ended = [e for e in seen if isinstance(e, TrialEnded)]
    assert ended and ended[0].unit == result["metrics"]["unit"]


def _recorded_bench() -> Any:
    from pathlib import Path

    # a real result, measured on the H200 (docs/benchmarks.md)
    return Path(__file__).parent.parent / "docs" / "data" / \
        "bench-resnet50-h200-tune-data-pick-tensors-2026-12-03.json"


def test_mfu_says_why_the_gemm_was_not_measured() -> None:
    from rocmdoctor.tuners.bench.render import mfu_text

    assert mfu_text({"gemm": {"tflops": None, "reason": "not measured (settings: mfu=false)"}}) \
        == "not measured (settings: mfu=false)"
    assert mfu_text({}) == "-"


def test_no_gpu_is_counted_in_the_plural() -> None:
    from rocmdoctor.render.fleet import _n

    assert (_n(0, "GPU"), _n(1, "GPU"), _n(2, "GPU")) == ("0 GPUs", "1 GPU", "2 GPUs")


def test_a_report_without_problems_says_so() -> None:
    from types import SimpleNamespace

    from rocmdoctor.render.report import _problem_lines

    assert _problem_lines(SimpleNamespace(results=[])) == [  # type: ignore[arg-type]
        "No check failed or warned.", ""]


def test_every_matmul_precision_choice_is_one_torch_takes() -> None:
    torch = pytest.importorskip("torch")
    from rocmdoctor.tuners.bench.spec import _CHOICES

    before = torch.get_float32_matmul_precision()
    try:
        for choice in _CHOICES["matmul_precision"]:
            torch.set_float32_matmul_precision(choice)
            assert torch.get_float32_matmul_precision() == choice
    finally:
        torch.set_float32_matmul_precision(before)


def test_a_child_followed_past_its_deadline_has_timed_out() -> None:
    import queue
    import time

    from rocmdoctor.tuners.bench.child import _follow

    lines: queue.Queue[Any] = queue.Queue()
    assert _follow(lines, time.monotonic() - 0.5, None, None) == (None, "timeout")


def test_step_times_exactly_at_the_noise_limit_are_not_noisy() -> None:
    from rocmdoctor.tuners.bench.metrics import IQR_WARN, noise_warning

    assert noise_warning({"step_time_s": {"iqr_over_median": IQR_WARN}}) is None
    assert noise_warning({"step_time_s": {"iqr_over_median": IQR_WARN + 0.01}}) is not None


def test_the_gpus_busy_share_is_shown_beside_its_power() -> None:
    from rocmdoctor.tuners.bench.render import _power_rows

    rows = _power_rows({"avg_w": 500.0, "peak_w": 600.0, "energy_per_sample_j": 1.0,
                        "source": "nvml", "sample_hz": 10.0, "util_avg_pct": 97.0}, 1, "image")
    assert ("GPU busy", "97 % average") in rows
    assert all(r[0] != "GPU busy" for r in _power_rows({"avg_w": 500.0}, 1, "image"))


def test_energy_is_the_average_power_over_the_whole_measured_span() -> None:
    from rocmdoctor.tuners.bench.power import summarize

    # 100 W sampled over 1 s of a 4 s measurement: 400 J, not the 100 J between the samples
    out = summarize([(0.0, 100.0, None), (1.0, 100.0, None)], None, 4.0, 10, "x", None)
    assert out["energy_j"] == pytest.approx(400.0)
    assert out["energy_per_sample_j"] == pytest.approx(40.0)
