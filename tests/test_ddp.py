"""--nproc: data-parallel bench and tune, with gloo and two CPU ranks.

The runs are the real commands in subprocesses; a rank is killed from outside mid-run, and the
test-only faults strike the last rank of a data-parallel run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.tuners import knobs as kb
from rocmdoctor.tuners import space as sp
from rocmdoctor.tuners.bench import ddp
from rocmdoctor.tuners.bench.ddp_launch import merged
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import Platform
from rocmdoctor.tuners.result import ddp_lines, how_to_apply
from tests.helpers import ctrl_c_default, processes_with

BENCH = [sys.executable, "-m", "rocmdoctor", "bench"]
TUNE = [sys.executable, "-m", "rocmdoctor", "tune"]
TINY = ["--model", "tinycnn", "--device", "cpu", "--image-size", "32", "--batch-size", "8",
        "--warmup", "1"]
CPU = Platform(kind="cpu", torch="2.13.0", cpu_count=4)
CUDA = Platform(kind="cuda", torch="2.13.0", cuda="12.8", device="H200", arch="sm_90",
                cpu_count=16, device_count=8)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROCMDOCTOR_TESTING"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1", COLUMNS="200", **extra)
    return env


# --- the pieces ---------------------------------------------------------------------------

def test_a_rank_is_read_from_torchruns_variables() -> None:
    assert ddp.rank_of({}) is None
    assert ddp.rank_of({"WORLD_SIZE": "1", "RANK": "0"}) is None
    assert ddp.rank_of({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}) == ddp.Rank(3, 1, 4)
    assert ddp.rank_of({"WORLD_SIZE": "2", "RANK": "x"}) is None
    assert ddp.ddp_args({"bucket_cap_mb": 50, "static_graph": True, "seed": 1}) == {
        "bucket_cap_mb": 50, "static_graph": True}


def test_the_spec_carries_nproc_only_when_it_is_more_than_one() -> None:
    assert "nproc" not in BenchSpec().to_dict()
    assert BenchSpec(nproc=4).to_dict()["nproc"] == 4
    assert BenchSpec.from_dict(BenchSpec(nproc=2).to_dict()) == BenchSpec(nproc=2)
    assert BenchSpec(nproc=0).problems() == ["nproc must be a positive integer, not 0"]


def _rank_result(rate: float, windows: list[float], p50: float) -> dict[str, Any]:
    return {"metrics": {"throughput": {"median": rate, "p10": rate * 0.9, "p90": rate * 1.1,
                                       "mean": rate, "cv": 0.01},
                        "step_time_s": {"p50": p50}, "memory": {"peak_reserved_bytes": 7}},
            "workload": {"samples_per_step": 8},
            "windows": [{"index": i, "samples_per_s": w} for i, w in enumerate(windows)],
            "ddp": {"rank": 0, "local_rank": 0, "world_size": 2, "backend": "gloo",
                    "args": {}}}


def test_the_run_goes_at_the_slowest_ranks_pace_times_the_ranks() -> None:
    fast, slow = _rank_result(100.0, [90.0, 110.0], 0.08), _rank_result(80.0, [95.0, 70.0], 0.1)
    out = merged([fast, slow])
    assert out["metrics"]["throughput"] == {"median": 160.0, "p10": 144.0, "p90": 176.0,
                                            "mean": 160.0, "cv": 0.01}
    assert [w["samples_per_s"] for w in out["windows"]] == [180.0, 140.0]
    assert out["workload"]["samples_per_step"] == 16
    assert out["ddp"]["slowest_rank"] == 1 and out["ddp"]["throughput_sum"] == 180.0
    assert out["ddp"]["ranks"] == [
        {"rank": 0, "throughput": 100.0, "step_p50_s": 0.08, "memory_bytes": 7},
        {"rank": 1, "throughput": 80.0, "step_p50_s": 0.1, "memory_bytes": 7}]
    assert "rank" not in out["ddp"] and fast["metrics"]["throughput"]["median"] == 100.0


def test_the_ddp_knobs_are_searched_only_with_several_ranks() -> None:
    one = sp.plan_space(CPU, BenchSpec(model="resnet50"), {})
    names = {pk.name for pk in one.knobs} | set(dict(one.skipped))
    assert not names & {"bucket_cap_mb", "static_graph", "nccl_min_nchannels"}
    asked = sp.plan_space(CPU, BenchSpec(model="resnet50"), {}, space="bucket_cap_mb")
    assert dict(asked.skipped) == {
        "bucket_cap_mb": "only with --nproc 2 or more (DistributedDataParallel)"}
    two = sp.plan_space(CPU, BenchSpec(model="resnet50", nproc=2), {})
    assert [pk.name for pk in two.knobs if "ddp" in pk.knob.uses] == [
        "bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "broadcast_buffers"]
    assert dict(two.skipped)["nccl_min_nchannels"] == "only on ROCm, CUDA"
    gpus = sp.plan_space(CUDA, BenchSpec(model="resnet50", nproc=8), {})
    assert {"nccl_min_nchannels", "torch_nccl_high_priority"} <= {pk.name for pk in gpus.knobs}


def test_nvlink_multicast_is_never_searched() -> None:
    never = {var for var, _, _ in kb.NEVER_SEARCHED}
    assert {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS"} <= never
    searched = {var for k in kb.KNOBS if k.kind == kb.ENV for _, patch in k.choices
                for var in patch}
    assert not searched & never


def test_the_apply_lines_give_one_ddp_constructor() -> None:
    spec = BenchSpec(model="resnet50", nproc=8)
    space = sp.plan_space(CUDA, spec, {}).info()
    params = {"bucket_cap_mb": "100", "gradient_as_bucket_view": "on",
              "static_graph": "default", "broadcast_buffers": "off",
              "torch_nccl_high_priority": "1"}
    assert ddp_lines(space, params, "cuda") == [
        "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank], "
        "bucket_cap_mb=100, gradient_as_bucket_view=True, broadcast_buffers=False)"]
    apply = how_to_apply(space, params, {"TORCH_NCCL_HIGH_PRIORITY": "1"}, "cuda", spec)
    assert apply.python == tuple(ddp_lines(space, params, "cuda"))
    assert dict(apply.env) == {"TORCH_NCCL_HIGH_PRIORITY": "1"}
    assert ddp_lines(space, {"bucket_cap_mb": "default"}, "cuda") == []


def _run_of(stages: list[tuple[str, int]], results: dict[int, Any]) -> Any:
    """A launcher's Run that follows ranks at these stages (no processes: what it says of
    them is what is tested)."""
    from types import SimpleNamespace

    from rocmdoctor.tuners.bench.ddp_launch import Run

    run = Run.__new__(Run)
    from rocmdoctor.tuners.bench.stacks import StackWatch

    run.ranks = [SimpleNamespace(rank=i, stage=stage, steps=steps,  # type: ignore[misc]
                                 stacks=StackWatch()) for i, (stage, steps) in enumerate(stages)]
    run.results = results
    return run


def test_a_timeout_names_the_rank_without_a_result_and_the_ranks_that_gave_one() -> None:
    last = "after its last measured window (4 of 4)"
    assert _run_of([("gave its result", 5), (last, 5)], {0: {}})._behind() == (
        "no result in time; furthest behind: rank 1 (after its last measured window (4 of 4)); "
        "rank 0 has given a result: every rank was killed")
    assert _run_of([(last, 5), (last, 5)], {})._behind() == (
        "no result in time; every rank was at 'after its last measured window (4 of 4)' (one "
        "of them holds the others in a collective): every rank was killed")
    assert _run_of([("measured window 2", 3), ("warm-up step 1", 1), ("warm-up step 1", 1)],
                   {})._behind() == (
        "no result in time; furthest behind: rank 1 (warm-up step 1), rank 2 (warm-up step 1): "
        "every rank was killed")


PEER = "import time\n\n\ndef wait_for_peer():\n    time.sleep(60)\n"  # line 5: the wait
HUNG = """\
import faulthandler, sys, threading, time
faulthandler.enable()
sys.path.insert(0, sys.argv[1])
from peer import wait_for_peer
def agreed(depth=0):
    if depth < 60:  # a stack deeper than the stderr tail the launcher keeps
        return agreed(depth + 1)
    wait_for_peer()
threading.Thread(target=lambda: time.sleep(60), daemon=True).start()
print("ready", flush=True)
agreed()
"""


def test_where_a_rank_hung_is_read_from_the_stacks_faulthandler_writes_on_sigabrt(
        tmp_path: Path) -> None:
    from rocmdoctor.tuners.bench.stacks import StackWatch

    def where_it_hung(lines: list[str]) -> str:
        watch = StackWatch()
        for line in lines:
            watch(line)
        return watch.where()

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "peer.py").write_text(PEER, encoding="utf-8")
    script = tmp_path / "tuners" / "hung.py"  # our own code, as the worker's path reads
    script.parent.mkdir()
    script.write_text(HUNG, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "lib")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGABRT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGABRT
    assert err.count("(most recent call first)") == 2  # the main thread is listed last
    # the innermost frame, and the frame of our own code it was called from
    assert where_it_hung(err.splitlines()) == "wait_for_peer (peer.py:5), from agreed " \
        "(hung.py:8)"
    assert len(err.splitlines()) > 60  # more than a 40-line tail holds; the header was kept
    assert where_it_hung(["Traceback (most recent call last):", "  oops"]) == ""


# --- end to end ---------------------------------------------------------------------------

@pytest.mark.e2e
def test_bench_with_two_gloo_ranks_reports_every_rank_and_the_scaling(tmp_path: Path) -> None:
    done = subprocess.run(BENCH + TINY + ["--steps", "6", "--nproc", "2", "--set",
                                          "bucket_cap_mb=50", "--json", "r.json"],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    info = result["ddp"]
    assert (info["world_size"], info["backend"], info["args"]) == (2, "gloo",
                                                                   {"bucket_cap_mb": 50})
    assert [r["rank"] for r in info["ranks"]] == [0, 1]
    slowest = min(r["throughput"] for r in info["ranks"])
    assert result["metrics"]["throughput"]["median"] == pytest.approx(2 * slowest)
    assert info["ranks"][info["slowest_rank"]]["throughput"] == slowest
    one = info["one_process"]
    assert one["scaling_efficiency"] == pytest.approx(
        result["metrics"]["throughput"]["median"] / (2 * one["throughput"]))
    assert result["spec"]["nproc"] == 2
    assert "\nranks       2 processes (gloo), DDP(bucket_cap_mb=50); the slowest, rank " \
        in done.stdout
    assert "\nscaling     " in done.stdout
    assert "first the same settings in one process" in done.stderr


def _ranks_with(marker: str) -> dict[int, int]:
    """pid of each benchmark rank whose environment holds `marker`."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in b"\0".join(environ) and b"bench.worker" in cmdline:
            rank = next((int(v.split(b"=", 1)[1]) for v in environ if v.startswith(b"RANK=")),
                        None)
            if rank is not None:
                found[rank] = int(entry)
    return found


@pytest.mark.e2e
def test_a_rank_killed_mid_run_ends_the_run_with_its_rank_named(tmp_path: Path) -> None:
    marker = f"rocmdoctor-test-{uuid.uuid4().hex}"
    run = subprocess.Popen(BENCH + TINY + ["--steps", "3000", "--nproc", "2",
                                           "--no-scaling", "--timeout", "200"],
                           cwd=tmp_path, env=_env(tmp_path, ROCMDOCTOR_TEST_MARK=marker),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stderr is not None
    seen = []
    for line in run.stderr:  # rank 0's first measured window: both ranks are training
        seen.append(line)
        if line.startswith("window 1/"):
            break
    ranks = _ranks_with(marker)
    assert sorted(ranks) == [0, 1], "".join(seen)
    os.kill(ranks[1], signal.SIGKILL)
    rest_out, rest_err = run.communicate(timeout=120)
    assert run.returncode == 1
    assert rest_err.splitlines()[-1].startswith(
        "rocmdoctor: error: the benchmark crashed: rank 1 was killed by SIGKILL (measured "
        "window "), rest_err[-2000:]
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(marker) == []  # rank 0 and the launcher ended with it


@pytest.mark.e2e
def test_a_rank_that_hangs_after_its_result_is_killed_and_the_result_stands(tmp_path: Path
                                                                           ) -> None:
    marker = f"rocmdoctor-test-{uuid.uuid4().hex}"
    started = time.monotonic()
    done = subprocess.run(BENCH + TINY + ["--steps", "4", "--nproc", "2", "--no-scaling",
                                          "--timeout", "200", "--json", "r.json"],
                          cwd=tmp_path, env=_env(tmp_path, ROCMDOCTOR_TEST_FAULT="linger",
                                                 ROCMDOCTOR_TEST_MARK=marker),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 150  # the grace, not the timeout
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [r["rank"] for r in result["ddp"]["ranks"]] == [0, 1]
    assert "rank 1 did not exit within 10 s of giving its result (it hung leaving the process " \
        "group) and was killed; the measurement stands" in result["warnings"]
    assert processes_with(marker) == []


@pytest.mark.e2e
def test_tune_over_two_ranks_records_each_failure_with_its_rank(tmp_path: Path) -> None:
    args = TUNE + TINY + ["--steps", "4", "--nproc", "2", "--space", "test_fault",
                          "--trial-timeout", "30", "--budget", "5m", "--output", "r.json"]
    done = subprocess.run(args, cwd=tmp_path, env=_env(tmp_path, ROCMDOCTOR_TESTING="1"),
                          text=True, capture_output=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    states = {t["params"]["test_fault"]: t for t in result["trials"]}
    assert states["none"]["state"] == "ok" and states["none"]["baseline"]
    assert (states["crash"]["state"], states["crash"]["message"]) == (
        "crashed", "rank 1 was killed by SIGSEGV (started)")
    assert (states["oom"]["state"], states["oom"]["message"]) == (
        "oom", "out of memory at batch 8 on rank 1")
    assert states["hang"]["state"] == "timeout"
    assert states["hang"]["message"].startswith("no result in time; ")
    # where each rank's Python was, from its stacks: the last rank in the injected hang,
    # the first one waiting for it in a collective
    assert re.search(r"; rank 1 was in _inject \(worker\.py:\d+\)$",
                     states["hang"]["message"]), states["hang"]["message"]
    assert re.search(r"rank 0 was in \w+ \([\w.]+:\d+\)", states["hang"]["message"])
    assert result["workload"]["nproc"] == 2
    assert "rocmdoctor tune: tinycnn, batch 8, fp32, 2 ranks (DDP) on cpu" in done.stdout


@pytest.mark.e2e
def test_a_ddp_tune_resumes_where_it_was_interrupted(tmp_path: Path) -> None:
    args = TUNE + TINY + ["--steps", "4", "--nproc", "2", "--space",
                          "static_graph,gradient_as_bucket_view", "--budget", "6m",
                          "--confirm-top", "1", "--confirm-rounds", "2",
                          "--confirm-max-rounds", "2"]
    env = _env(tmp_path)
    first = subprocess.Popen(args, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=ctrl_c_default)
    assert first.stderr is not None
    for line in first.stderr:
        if line.startswith("[2/"):
            first.send_signal(signal.SIGINT)
            break
    first.communicate(timeout=120)
    assert first.returncode == 130
    second = subprocess.run(args + ["--output", "r.json"], cwd=tmp_path, env=env, text=True,
                            capture_output=True, timeout=500)
    assert second.returncode == 0, second.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    baselines = [t for t in result["trials"] if t["baseline"]]
    assert len(baselines) == 1 and baselines[0]["number"] == 0  # measured once, kept
    assert "      trial 0: " not in second.stderr  # not run again on resume
    assert [t["number"] for t in result["trials"] if t["state"] == "interrupted"] == [1]
    measured = [t for t in result["trials"] if t["state"] == "ok"]
    assert len(measured) >= 2
    assert result["confirmation"]["status"] in ("done", "budget")
