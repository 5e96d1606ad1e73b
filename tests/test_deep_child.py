"""The deep child for real on the CPU device (ROCMDOCTOR_DEEP_CPU, tiny sizes): what it
measures, how its crashes, hangs, failures and Ctrl-C become results, and that it dies with
rocmdoctor. The GPU verdicts are tested on recorded runs (test_deep_verdicts.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.checks.registry import DEEP_CHECKS, STRESS_CHECKS
from rocmdoctor.cli.deep import collapse_skips
from rocmdoctor.host.deep import DEEP_SCRIPT, interrupt_running, run_deep
from rocmdoctor.host.deep_child import TINY
from rocmdoctor.host.live import LiveHost
from rocmdoctor.model import Report, Status
from rocmdoctor.runner import run_checks

PY = sys.executable


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, ROCMDOCTOR_TESTING="1", ROCMDOCTOR_DEEP_CPU="1",
               PYTHONUNBUFFERED="1")
    env.pop("CUDA_LAUNCH_BLOCKING", None)
    env.update(extra)
    return env


def _child(*args: str, **extra: str) -> dict[str, Any]:
    done = run_deep([PY, DEEP_SCRIPT, "--parent-pid", str(os.getpid()), *args], 120,
                    _env(**extra))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result


def _report(stress_s: float = 0.0, **extra: str) -> Report:
    host = LiveHost(environ=_env(**extra))
    host.deep_stress_s = stress_s
    checks = [c() for c in (*DEEP_CHECKS, *(STRESS_CHECKS if stress_s else ()))]
    return collapse_skips(run_checks(host, checks, timeout_s=180))


def _by_id(report: Report) -> dict[str, Any]:
    return {r.id: r for r in report.results}


def _rate_ok(rate: dict[str, Any], unit: str) -> None:
    assert rate["unit"] == unit and rate["n"] == len(rate["samples"]) >= 2
    assert rate["min"] <= rate["median"] <= rate["max"]
    assert rate["spread_pct"] == pytest.approx(
        (rate["max"] - rate["min"]) / rate["median"] * 100, rel=0.02, abs=0.05)


@pytest.mark.e2e
def test_the_child_measures_every_figure_on_two_cpu_devices() -> None:
    result = _child(ROCMDOCTOR_DEEP_CPU="2")
    assert result["schema"] == "rocmdoctor.deep/1" and result["stage"] == "done"
    assert result["backend"] == "cpu" and result["errors"] == []
    assert [g["index"] for g in result["gpus"]] == [0, 1]
    gpu = result["gpus"][0]
    assert gpu["errors"] == {} and gpu["timer"] == "perf_counter (CPU device)"
    # The n x n x n products, each followed by its dtype's reference shapes (a 64th of each
    # dimension at the test's sizes): 3072^3 for fp32, the seven bf16 shapes of kb's table.
    assert [(g["dtype"], g["m"], g["n"], g["k"], g["library"], g.get("reference_shape"))
            for g in gpu["gemm"]] == [
        ("fp32", 128, 128, 128, None, None), ("fp32", 48, 48, 48, None, True),
        ("bf16", 128, 128, 128, None, None), ("bf16", 16, 160, 80, None, True),
        ("bf16", 16, 240, 64, None, True), ("bf16", 16, 312, 220, None, True),
        ("bf16", 32, 32, 208, None, True), ("bf16", 32, 80, 96, None, True),
        ("bf16", 76, 64, 128, None, True), ("bf16", 208, 160, 128, None, True)]
    for g in gpu["gemm"]:
        _rate_ok(g["tflops"], "TFLOP/s")
    assert [(c["dtype"], c["layout"]) for c in gpu["conv"]] == [
        ("bf16", "channels_last"), ("fp16", "channels_last"), ("fp32", "NCHW")]
    for c in gpu["conv"]:
        _rate_ok(c["tflops"], "TFLOP/s")
        # timed with the convolution's own plan, the GEMMs with theirs
        assert c["tflops"]["n"] == TINY["conv_plan"]["repeats"] != TINY["plan"]["repeats"]
        _rate_ok(c["gemm_equivalent"]["tflops"], "TFLOP/s")
        assert (c["gemm_equivalent"]["m"], c["gemm_equivalent"]["n"],
                c["gemm_equivalent"]["k"]) == (2 * 8 * 8, 16, 16 * 9)
    for key in ("copy", "triad"):
        _rate_ok(gpu["memory"][key], "GB/s")
    for key in ("h2d", "d2h"):
        _rate_ok(gpu["host_link"][key], "GB/s")
    assert gpu["host_link"]["pinned"] is False  # no pinned memory without a GPU
    _rate_ok(gpu["launch"]["queued_us"], "us")
    _rate_ok(gpu["launch"]["waited_us"], "us")
    assert gpu["telemetry"]["source"] == "none"
    assert gpu["telemetry"]["unavailable"] == ["no telemetry for a cpu device"]
    assert [(p["src"], p["dst"], p["access"]) for p in result["p2p"]] == [
        (0, 1, True), (1, 0, True)]


@pytest.mark.e2e
def test_a_crash_is_an_error_naming_the_stage_and_the_rest_is_skipped() -> None:
    by_id = _by_id(_report(ROCMDOCTOR_DEEP_FAULT="crash@gemm"))
    deep = by_id["deep"]
    assert deep.status is Status.ERROR
    assert deep.summary == ("the measuring process was killed by SIGABRT while GPU 0 (CPU "
                            "(test device)): fp32 GEMM 128x128x128")
    assert deep.fix is not None and deep.fix.commands == (
        "rocmdoctor check --deep --only deep -v",)
    for cid in ("gemm-rate", "conv-rate", "memory-bandwidth", "host-link",
                "clocks-under-load", "kernel-launch", "gpu-links"):
        assert by_id[cid].status is Status.SKIP
        assert by_id[cid].summary == "needs deep, which could not run"
        assert by_id[cid].root_cause == "deep"


def _deep_children() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if DEEP_SCRIPT.encode() in cmd and f"{os.getpid()}".encode() in cmd:
            found.append(int(entry))
    return found


@pytest.mark.e2e
def test_a_hang_is_cut_off_at_the_timeout_and_killed() -> None:
    start = time.monotonic()
    by_id = _by_id(_report(ROCMDOCTOR_DEEP_FAULT="hang@conv", ROCMDOCTOR_DEEP_TIMEOUT="10"))
    assert time.monotonic() - start < 40
    assert by_id["deep"].status is Status.ERROR
    assert by_id["deep"].summary == ("the measurements did not finish within 10 s (while GPU 0 "
                                     "(CPU (test device)): bf16 convolution)")
    assert _deep_children() == []


@pytest.mark.e2e
def test_a_failed_measurement_is_that_measurements_error_only() -> None:
    by_id = _by_id(_report(ROCMDOCTOR_DEEP_FAULT="raise@memory"))
    deep = by_id["deep"]
    assert deep.status is Status.PASS
    assert ("GPU 0 CPU (test device): memory not measured: RuntimeError: injected failure at "
            "memory") in [f.text for f in deep.findings]
    assert by_id["memory-bandwidth"].status is Status.SKIP
    assert by_id["memory-bandwidth"].summary == "device memory bandwidth was not measured"
    assert by_id["gemm-rate"].status is Status.SKIP  # measured: no reference for a CPU
    assert by_id["gemm-rate"].summary.endswith("no reference for this card: no verdict")
    assert by_id["kernel-launch"].summary == ("no verdict on the CPU test device (it runs each "
                                              "kernel as it is launched)")


@pytest.mark.e2e
def test_the_child_dies_with_rocmdoctor() -> None:
    code = ("import os, sys, time, subprocess\n"
            f"p = subprocess.Popen([{PY!r}, {DEEP_SCRIPT!r}, '--parent-pid', str(os.getpid())])\n"
            "print(p.pid, flush=True)\ntime.sleep(3)\nos._exit(0)\n")
    parent = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=_env(ROCMDOCTOR_DEEP_FAULT="hang@gemm"))
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.wait(timeout=30)
    deadline = time.monotonic() + 15
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        try:  # a zombie is reaped by init; /proc/<pid>/status then goes
            if "State:\tZ" in Path(f"/proc/{child}/status").read_text():
                break
        except OSError:
            break
        time.sleep(0.1)
    gone = not Path(f"/proc/{child}").exists() or "State:\tZ" in Path(
        f"/proc/{child}/status").read_text()
    assert gone, "the deep child outlived its parent"


@pytest.mark.e2e
def test_sigint_ends_the_stress_loop_with_the_figures_so_far() -> None:
    def stop_soon() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if interrupt_running():
                return

    # the stress loop starts after the quick measurements (a few seconds); stop it in it
    timer = threading.Timer(9.0, stop_soon)
    timer.start()
    start = time.monotonic()
    result = _child("--stress", "120")
    timer.join()
    assert time.monotonic() - start < 60
    assert result["interrupted"] is True and result["level"] == "stress"
    stress = result["gpus"][0]["stress"]
    assert stress["stopped_early"] is True and stress["windows"]
    assert stress["mismatches"] == 0 and stress["nonfinite"] == 0


@pytest.mark.e2e
@pytest.mark.parametrize(("fault", "summary"), [
    ("corrupt@stress", "GPU 0 CPU (test device): 1 product tile(s) disagreed with the CPU and 0 "
                       "product(s) held NaN or Inf (first in window 1, tile at row 0, column 0)"),
    ("nan@stress", "GPU 0 CPU (test device): 0 product tile(s) disagreed with the CPU and 1 "
                   "product(s) held NaN or Inf (first in window 1, tile at row 0, column 0)"),
])
def test_a_wrong_product_under_stress_fails_the_stress_check(fault: str, summary: str) -> None:
    stress = _by_id(_report(stress_s=3, ROCMDOCTOR_DEEP_FAULT=fault))["stress"]
    assert stress.status is Status.FAIL
    assert stress.summary == summary
    assert stress.fix is not None and stress.fix.commands == (
        "rvs -c /opt/rocm/share/rocm-validation-suite/conf/gst_single.conf",)


@pytest.mark.e2e
def test_a_clean_stress_run_passes() -> None:
    stress = _by_id(_report(stress_s=2))["stress"]
    assert stress.status is Status.PASS
    assert stress.summary.startswith("1 GPU(s), ") and stress.summary.endswith(
        " windows over 2 s: no errors, no throttling, no slow window")


@pytest.mark.e2e
def test_the_simulated_throttle_reaches_the_clocks_check() -> None:
    clocks = _by_id(_report(ROCMDOCTOR_DEEP_TELEMETRY="throttled"))["clocks-under-load"]
    assert clocks.status is Status.FAIL
    assert clocks.summary == ("GPU 0 CPU (test device) was held at 1,089 MHz of 1,980 MHz by HW "
                              "Thermal Slowdown: the hardware lowers the clocks because the GPU "
                              "is too hot")
    assert [f.text for f in clocks.findings][1:] == [
        "GPU 0 CPU (test device) was held at 1,089 MHz of 1,980 MHz by HW Thermal Slowdown: "
        "the hardware lowers the clocks because the GPU is too hot",
        "GPU 0 CPU (test device) was slowed at 1,089 MHz of 1,980 MHz by SW Thermal Slowdown: "
        "up to 91 °C, slowdown at 87 °C",
        "GPU 0 CPU (test device) was held at 1,089 MHz of 1,980 MHz by its power limit, "
        "450.0 W of the default 700.0 W",
    ]
    assert clocks.figures[0].value == 1089.0 and clocks.figures[0].unit == "MHz"


def test_the_interrupt_helper_reaches_no_one_when_nothing_runs() -> None:
    assert interrupt_running() == 0


def test_signal_module_is_left_as_it_was() -> None:
    from rocmdoctor.cli.deep import interrupts_end_the_run

    before = signal.getsignal(signal.SIGINT)
    with interrupts_end_the_run():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def test_the_tests_tiny_plan_has_every_setting_of_the_full_one() -> None:
    """The suite's tiny sizes (ROCMDOCTOR_DEEP_CPU) replace the full ones setting by setting:
    the same keys at every level, each a positive number."""
    from rocmdoctor.host.deep_child import FULL, TINY

    def shape(plan: dict[str, Any]) -> dict[str, Any]:
        return {k: shape(v) if isinstance(v, dict) else type(v).__name__
                for k, v in plan.items()}

    assert shape(TINY) == shape(FULL)
    for plan in (FULL, TINY):
        for key in ("plan", "slow", "host_plan", "launch"):
            assert set(plan[key]) == {"warmup", "repeats", "iters"}
            assert all(isinstance(v, int) and v > 0 for v in plan[key].values())
        assert plan["plan"]["repeats"] >= 3 and plan["slow"]["repeats"] >= 3
