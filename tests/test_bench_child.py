"""Real benchmark child processes on the CPU: results, every failure state, pruning.

The children of this module start together, two at a time (the machine has two cores), in a
module fixture; each test then asserts on its own child's outcome.
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest
import torch

from rocmdoctor.tuners.bench.child import run_bench_child, worker_argv
from rocmdoctor.tuners.bench.spec import BenchSpec
from tests.helpers import repo_root

TINY = BenchSpec(model="tinycnn", batch_size=8, image_size=16, steps=10, warmup=2, device="cpu")
RESNET = BenchSpec(model="resnet50", batch_size=2, image_size=32, steps=3, warmup=1,
                   device="cpu", settings={"num_threads": 1})
CUSTOM = BenchSpec(model="tests.bench_workload:make_workload", batch_size=4, steps=5,
                   warmup=1, device="cpu")
BROKEN = BenchSpec(model="tests.bench_workload:make_broken", device="cpu")
LONG = BenchSpec(model="tinycnn", batch_size=8, image_size=16, steps=50, warmup=1,
                 device="cpu")
WINDOWS: dict[str, list[tuple[int, float]]] = {"tiny": [], "prune": []}


def _recorder(name: str, keep_going: bool) -> Callable[[int, float], bool]:
    def on_window(index: int, rate: float) -> bool:
        WINDOWS[name].append((index, rate))
        return keep_going

    return on_window


def _raising_callback() -> Any:
    pids: list[int] = []

    def remember_then_fail(event: dict[str, Any]) -> None:
        if event["event"] == "start":
            pids.append(event["pid"])
        if event["event"] == "warmup":
            raise RuntimeError("the callback failed")

    endless = dataclasses.replace(LONG, steps=100_000)  # left alone it would run for minutes
    try:
        run_bench_child(endless, timeout_s=240, on_event=remember_then_fail)
    except RuntimeError as exc:
        return str(exc), pids
    return "no exception", pids


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Any]:
    jobs: dict[str, Callable[[], Any]] = {
        "resnet": lambda: run_bench_child(RESNET, timeout_s=240),
        "hang": lambda: run_bench_child(TINY, {"ROCMDOCTOR_TEST_FAULT": "hang"}, timeout_s=3),
        "tiny": lambda: run_bench_child(TINY, timeout_s=240,
                                        on_window=_recorder("tiny", True)),
        "custom": lambda: run_bench_child(CUSTOM, timeout_s=240, cwd=repo_root()),
        "crash": lambda: run_bench_child(TINY, {"ROCMDOCTOR_TEST_FAULT": "crash"},
                                         timeout_s=240),
        "oom": lambda: run_bench_child(TINY, {"ROCMDOCTOR_TEST_FAULT": "oom"}, timeout_s=240),
        "prune": lambda: run_bench_child(LONG, timeout_s=240,
                                         on_window=_recorder("prune", False)),
        "broken": lambda: run_bench_child(BROKEN, timeout_s=240, cwd=repo_root()),
        "raising": _raising_callback,
        "nomfu": lambda: run_bench_child(dataclasses.replace(TINY, settings={"mfu": False}),
                                         timeout_s=240),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def _available_bytes() -> int:
    with open("/proc/meminfo") as f:
        line = next(x for x in f if x.startswith("MemAvailable:"))
    return int(line.split()[1]) * 1024


def _check_sane(result: dict[str, Any], spec: BenchSpec, unit: str) -> None:
    assert result["schema"] == "rocmdoctor.bench/1"
    assert result["spec"] == spec.to_dict()
    m = result["metrics"]
    assert m["unit"] == unit and m["timing"] == "perf_counter"
    assert m["measured_steps"] == spec.steps
    t = m["throughput"]
    assert 0 < t["p10"] <= t["median"] <= t["p90"]
    s = m["step_time_s"]
    assert 0 < s["min"] <= s["p50"] <= s["p99"] <= s["max"]
    # the windows partition the measured steps, and their rates agree with the step times
    assert sum(w["steps"] for w in result["windows"]) == spec.steps
    assert sum(w["seconds"] for w in result["windows"]) == pytest.approx(m["measured_s"])
    assert t["mean"] == pytest.approx(spec.batch_size * spec.steps / m["measured_s"])
    assert result["warmup"]["steps"] == spec.warmup
    assert len(result["warmup"]["step_s"]) == spec.warmup
    assert result["warmup"]["first_step_s"] == result["warmup"]["step_s"][0] > 0
    assert m["memory"]["peak_allocated_bytes"] is None
    assert m["memory"]["reason"] == "device memory is measured on GPUs only"
    assert m["memory"]["host_peak_rss_bytes"] > 10 * 2**20
    # a CPU run is bounded at the memory free to it, not left to grow into the OOM killer
    free = _available_bytes()
    assert m["memory"]["host_peak_rss_bytes"] < m["memory"]["host_limit_bytes"]
    assert free * 0.5 < m["memory"]["host_limit_bytes"] < free * 1.5
    assert m["power"]["avg_w"] is None and m["power"]["energy_per_sample_j"] is None
    assert m["power"]["reason"] == "power is measured on GPUs only"
    env = result["environment"]
    assert env["device"] == "cpu" and env["torch"].startswith("2.")
    # fp32 keeps PyTorch's defaults: no TF32 for matmuls, TF32 allowed for cuDNN convolutions.
    assert env["knobs"]["effective"]["matmul.allow_tf32"] is False


def test_tinycnn_result_is_sane(outcomes: dict[str, Any]) -> None:
    windows = WINDOWS["tiny"]
    outcome = outcomes["tiny"]
    assert outcome.state == "ok", outcome.stderr_tail
    assert outcome.returncode == 0
    result = outcome.result
    assert result is not None
    _check_sane(result, TINY, "images")
    assert [i for i, _ in windows] == [0, 1, 2, 3, 4]
    assert [r for _, r in windows] == [w["samples_per_s"] for w in result["windows"]]
    assert outcome.message == f"{result['metrics']['throughput']['median']:,.1f} images/s"
    flops = result["metrics"]["flops"]
    # tinycnn at 16x16: conv1 3->16 (16x16 out) + conv2 16->32 (8x8 out) + fc 32->10, x2 FLOP
    forward = 2 * (16 * 16 * 16 * 3 * 9 + 8 * 8 * 32 * 16 * 9 + 32 * 10)
    assert flops["per_sample_forward"] == forward
    assert forward * 2 < flops["per_sample_train"] < forward * 3
    mfu = result["metrics"]["mfu"]
    assert mfu["gemm"]["tflops"] > 0 and mfu["gemm"]["n"] == 1024
    assert mfu["vs_measured_gemm"] == pytest.approx(
        flops["per_sample_train"] * result["metrics"]["throughput"]["mean"]
        / (mfu["gemm"]["tflops"] * 1e12))
    assert mfu["throughput_basis"] == "mean"
    assert mfu["vs_spec"] is None and "no peak figure" in mfu["spec_note"]


def test_mfu_false_skips_flops_and_gemm_but_not_the_rest(outcomes: dict[str, Any]) -> None:
    outcome = outcomes["nomfu"]
    assert outcome.state == "ok", outcome.stderr_tail
    result = outcome.result
    spec = dataclasses.replace(TINY, settings={"mfu": False})
    _check_sane(result, spec, "images")  # power, memory and timing as usual
    skipped = "not measured (settings: mfu=false)"
    assert result["metrics"]["flops"]["per_sample_train"] is None
    assert result["metrics"]["mfu"]["gemm"] == {"tflops": None, "reason": skipped}
    assert result["metrics"]["mfu"]["reason"] == skipped


def test_resnet50_tiny_image_on_cpu(outcomes: dict[str, Any]) -> None:
    spec = RESNET
    outcome = outcomes["resnet"]
    assert outcome.state == "ok", outcome.stderr_tail
    result = outcome.result
    assert result is not None
    _check_sane(result, spec, "images")
    workload = result["workload"]
    assert workload["parameters"] == 25_557_032
    assert workload["optimizer"] == "SGD(lr=0.01, momentum=0.9)"
    assert workload["optimizer_class"] == "torch.optim.SGD"  # what tune's apply lines name
    assert result["environment"]["knobs"]["settings"] == {"num_threads": 1}
    assert result["environment"]["knobs"]["effective"]["num_threads"] == 1
    # forward FLOPs scale with pixels: 8.18 GFLOP at 224 -> (32/224)^2 of the conv work
    per_sample = result["metrics"]["flops"]["per_sample_forward"]
    assert 0.15e9 < per_sample < 0.2e9


def test_custom_workload_and_stray_prints(outcomes: dict[str, Any]) -> None:
    spec = CUSTOM
    outcome = outcomes["custom"]
    assert outcome.state == "ok", outcome.stderr_tail
    assert outcome.result is not None
    _check_sane(outcome.result, spec, "samples")
    assert outcome.result["workload"]["source"] == "tests.bench_workload:make_workload"
    assert "a stray print from user code" in outcome.stderr_tail


def test_crash_is_a_recorded_state(outcomes: dict[str, Any]) -> None:
    outcome = outcomes["crash"]
    assert outcome.state == "crashed"
    assert outcome.returncode == -signal.SIGSEGV
    assert outcome.message == "the benchmark process was killed by SIGSEGV"
    assert outcome.result is None


def test_hang_times_out_and_is_killed(outcomes: dict[str, Any]) -> None:
    outcome = outcomes["hang"]
    assert outcome.state == "timeout"
    # SIGABRT first: the worker's faulthandler writes where it was, then it ends
    # (in the injected hang, or still importing torch on a slow machine)
    assert re.fullmatch(r"no result within 3 s; the child was killed; it was in \S+ "
                        r"\([\w.]+:\d+\)(, from \S+ \([\w.]+:\d+\))?", outcome.message), \
        outcome.message
    assert outcome.returncode == -signal.SIGABRT
    assert 3 <= outcome.wall_s < 10


def test_oom_is_a_recorded_state(outcomes: dict[str, Any]) -> None:
    outcome = outcomes["oom"]
    assert outcome.state == "oom"
    assert outcome.returncode == 3
    assert outcome.message == "out of memory at batch 8"
    assert "Traceback" not in outcome.stderr_tail
    assert outcome.stderr_tail.splitlines()[-1] == (
        "rocmdoctor bench: out of memory at batch 8: injected out of memory "
        "(ROCMDOCTOR_TEST_FAULT=oom)")


def test_on_window_false_prunes(outcomes: dict[str, Any]) -> None:
    outcome = outcomes["prune"]
    assert [index for index, _ in WINDOWS["prune"]] == [0]
    assert WINDOWS["prune"][0][1] > 0
    assert outcome.state == "pruned"
    assert outcome.message == "stopped by the caller after measured window 1"
    assert outcome.returncode == -signal.SIGKILL
    assert outcome.result is None


def test_an_exception_in_user_code_is_a_crash_with_its_last_line(
        outcomes: dict[str, Any]) -> None:
    outcome = outcomes["broken"]
    assert outcome.state == "crashed"
    assert outcome.returncode == 1
    assert outcome.message == ("the benchmark process exited with code 1: ValueError: the data "
                               "loader of this workload is broken")
    assert "Traceback (most recent call last):" in outcome.stderr_tail


def test_a_failing_callback_propagates_and_leaves_no_child(
        outcomes: dict[str, Any]) -> None:
    import psutil

    message, pids = outcomes["raising"]
    assert message == "the callback failed"
    assert len(pids) == 1 and not psutil.pid_exists(pids[0])  # killed and reaped


def test_bad_spec_is_an_error_without_a_child() -> None:
    spec = BenchSpec(model="tinycnn", precision="fp8", settings={"warp_speed": True})
    outcome = run_bench_child(spec)
    assert outcome.state == "error"
    assert outcome.returncode is None
    assert outcome.message == (
        "unknown precision 'fp8' (one of fp32, fp32-strict, tf32, bf16, fp16); unknown setting "
        "'warp_speed' (known: broadcast_buffers, bucket_cap_mb, compile_mode, cpu_time_s, "
        "cudnn_benchmark, cudnn_enabled, deterministic, extras, gpu_decode, "
        "gradient_as_bucket_view, loader_channels_last, matmul_precision, mfu, min_warmup_s, "
        "miopen_immediate, num_threads, num_workers, optimizer_impl, persistent_workers, "
        "pin_memory, power_hz, preferred_blas, prefetch_factor, rocm_fa_library, sdpa_backend, "
        "seed, static_graph, tf32)")


def test_worker_itself_rejects_unknown_settings() -> None:
    spec = {**TINY.to_dict(), "settings": {"warp_speed": True}}
    proc = subprocess.run(worker_argv(), input=json.dumps(spec), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    event = json.loads(proc.stdout)
    assert event["event"] == "error"
    assert event["message"].startswith("unknown setting 'warp_speed' (known: broadcast_buffers, "
                                       "bucket_cap_mb, compile_mode")


def test_missing_python_is_an_error() -> None:
    outcome = run_bench_child(TINY, python="/nonexistent/python3")
    assert outcome.state == "error"
    assert outcome.message == "cannot start /nonexistent/python3: No such file or directory"


def test_the_parent_never_imports_torch() -> None:
    code = ("import sys; import rocmdoctor.tuners.bench.child, rocmdoctor.tuners.bench.maxbatch, "
            "rocmdoctor.tuners.bench.compare, rocmdoctor.cli.bench; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


class ScaledAdamW(torch.optim.AdamW):
    """A user's own optimizer: the apply lines name it by its module, not torch.optim."""


def test_the_optimizer_class_is_named_as_a_script_imports_it() -> None:
    from rocmdoctor.tuners.bench.worker import _class_path

    params = [torch.nn.Parameter(torch.zeros(2))]
    assert _class_path(torch, torch.optim.AdamW(params)) == "torch.optim.AdamW"
    assert _class_path(torch, torch.optim.SGD(params, lr=0.1)) == "torch.optim.SGD"
    assert _class_path(torch, ScaledAdamW(params)) == "tests.test_bench_child.ScaledAdamW"


@pytest.mark.parametrize("timeout_s, said", [(17.5053, "17.5"), (3.0, "3"), (20.04, "20"),
                                             (0.25, "0.25"), (120.96, "121")])
def test_a_timeout_is_told_in_the_seconds_people_write(timeout_s: float, said: str) -> None:
    # an adaptive trial timeout is a computed float: the message once said "17.5053 s"
    from rocmdoctor.tuners.bench.child import _classify
    state, result, message = _classify(BenchSpec(), None, "timeout", -9, "", timeout_s)
    assert (state, result) == ("timeout", None)
    assert message == f"no result within {said} s; the child was killed"
