"""`rocmdoctor check --deep` and `--stress` as users run them, in a subprocess: on this machine
(no GPU: one line, exit 0), on CPU test devices (the real child), from a snapshot with a
recorded GPU run, and Ctrl-C during a stress run."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deep_runs import command, recorded
from tests.helpers import ctrl_c_default

pytestmark = pytest.mark.e2e
MEASURED = ("gemm-rate", "conv-rate", "memory-bandwidth", "host-link", "clocks-under-load",
            "kernel-launch", "gpu-links", "stress")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMDOCTOR_")}
    env.pop("CUDA_LAUNCH_BLOCKING", None)
    env.update(extra)
    return env


def rocmdoctor(*args: str, env: dict[str, str] | None = None,
               timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                          text=True, timeout=timeout, env=env or _env(),
                          stdin=subprocess.DEVNULL)


def _cpu(**extra: str) -> dict[str, str]:
    return _env(ROCMDOCTOR_TESTING="1", ROCMDOCTOR_DEEP_CPU="1", **extra)


def test_deep_on_a_machine_without_a_gpu_says_so_in_one_line_and_exits_0() -> None:
    import torch

    r = rocmdoctor("check", "--deep")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("[")]
    deep = [ln for ln in lines if " deep " in ln]
    assert deep == [f"[-] deep                no GPU here (torch {torch.__version__} sees none): "
                    "nothing to measure"]
    assert not [ln for ln in lines if any(f" {cid} " in ln for cid in MEASURED)]


def test_deep_json_carries_the_figures_of_a_real_run() -> None:
    r = rocmdoctor("check", "--deep", "--json", "--only", "gemm-rate,memory-bandwidth",
                   env=_cpu())
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    ids = [c["id"] for c in data["checks"]]
    assert ids == ["deep", "gemm-rate", "memory-bandwidth"]
    gemm = next(c for c in data["checks"] if c["id"] == "gemm-rate")
    assert [f["key"] for f in gemm["figures"]] == ["gemm:bf16", "gemm:fp32"]
    assert all(f["unit"] == "TFLOP/s" and f["value"] > 0 and f["runs"] >= 2
               and f["reference"] is None and f["verdict"] is None for f in gemm["figures"])
    assert gemm["status"] == "skip" and gemm["summary"].endswith(
        "no reference for this card: no verdict")


def test_a_run_over_two_seconds_shows_progress_on_stderr() -> None:
    """A stress loop of 3 s makes the run last past the 2 s after which progress shows, on a
    fast machine too (the quick run alone takes 2 to 3 s here)."""
    r = rocmdoctor("check", "--stress", "3s", "--only", "deep", env=_cpu())
    assert r.returncode == 0
    assert "rocmdoctor: waiting for the measured checks: " in r.stderr


def test_a_recorded_gpu_run_replays_from_a_snapshot(tmp_path: Path) -> None:
    with gzip.open("tests/fixtures/h200-snapshot.json.gz", "rt", encoding="utf-8") as fh:
        snap = json.load(fh)
    snap["commands"]["rocmdoctor-deep"] = command(recorded("h200-quick.json"))
    path = tmp_path / "h200-deep.json"
    path.write_text(json.dumps(snap), encoding="utf-8")
    r = rocmdoctor("check", "--from", str(path), "--deep", "--only", "gemm-rate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("[✓] gemm-rate  GPU 0 NVIDIA H200: bf16 781.9 TFLOP/s, 98 % of 794.5 TFLOP/s"
            in r.stdout.splitlines())
    r = rocmdoctor("check", "--from", str(path), "--only", "gemm-rate")  # no --deep: asked by id
    assert "gemm-rate" in r.stdout
    plain = rocmdoctor("check", "--from", str(path), "--json")
    assert "gemm-rate" not in plain.stdout  # without --deep the measured checks do not run


def test_a_snapshot_records_the_run_and_replays_it(tmp_path: Path) -> None:
    path = tmp_path / "snap.json.gz"
    r = rocmdoctor("snapshot", "--deep", "-o", str(path), env=_cpu())
    assert r.returncode == 0, r.stderr
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        recorded_run = json.loads(json.load(fh)["commands"]["rocmdoctor-deep"]["stdout"])
    assert recorded_run["schema"] == "rocmdoctor.deep/1" and recorded_run["gpus"]
    live = recorded_run["gpus"][0]["gemm"][0]["tflops"]["median"]
    replay = rocmdoctor("check", "--from", str(path), "--deep", "--json", env=_cpu())
    gemm = next(c for c in json.loads(replay.stdout)["checks"] if c["id"] == "gemm-rate")
    assert gemm["figures"][1]["value"] == live  # fp32 is measured first, listed after bf16


@pytest.mark.parametrize("duration", ["1x", "0", "-5m", "soon"])
def test_a_bad_duration_is_one_line_and_exit_2(duration: str) -> None:
    r = rocmdoctor("check", "--stress", duration)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"rocmdoctor: error: --stress {duration!r}: give a duration such as 90s, 10m or 1h")


def test_the_stress_check_needs_a_duration() -> None:
    r = rocmdoctor("check", "--only", "stress")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        "rocmdoctor: error: the stress check runs with --stress DURATION (for example --stress "
        "10m)")


def test_ctrl_c_ends_the_stress_run_with_the_figures_so_far() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "rocmdoctor", "check", "--stress", "5m",
                             "--only", "stress,gemm-rate"], env=_cpu(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, preexec_fn=ctrl_c_default)
    time.sleep(12)  # the quick measurements, then the stress loop
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert "stopping the measurements; the figures so far follow" in err
    lines = out.splitlines()
    stress = " ".join(out[out.index("[✓] stress"):].split("\n\n")[0].split())
    assert stress.startswith("[✓] stress 1 GPU(s), ")
    assert stress.endswith("s: no errors, no throttling, no slow window (interrupted: the "
                           "figures so far)")
    assert any(ln.startswith("[✓] deep") for ln in lines)
    assert proc.returncode == 0


def test_the_first_real_h200_run_replays_whole() -> None:
    """`rocmdoctor snapshot --deep` on an NVIDIA H200 (KVM guest, driver 580.159.04, torch
    2.11.0+cu130, 2026-12-02; docs/benchmarks.md, "check --deep on an NVIDIA H200"): a
    healthy card whose one-shape bf16 GEMM falls under the MAMF, the best of a sweep."""
    r = rocmdoctor("check", "--from", "tests/fixtures/h200-deep-snapshot-2026-12-02.json.gz",
                   "--deep", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    measured = {"deep", "gemm-rate", "conv-rate", "memory-bandwidth", "host-link",
                "clocks-under-load", "kernel-launch", "gpu-links"}
    got = [(c["id"], c["status"], c["summary"]) for c in data["checks"] if c["id"] in measured]
    assert got == [
        ("deep", "pass", "1 GPU(s) measured in 13 s: GPU 0 NVIDIA H200 (torch 2.11.0+cu130)"),
        ("gemm-rate", "warn", "GPU 0 NVIDIA H200: bf16 659.7 TFLOP/s, 83 % of 794.5 TFLOP/s "
         "(the MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126)"),
        ("conv-rate", "pass", "1 GPU(s): bf16 channels_last convolution 668.1 TFLOP/s, 99 % of "
         "the same-sized GEMM"),
        ("memory-bandwidth", "pass", "GPU 0 NVIDIA H200: device-to-device copy 4,258 GB/s, "
         "112 % of what is expected"),
        ("host-link", "pass", "1 GPU(s): host-to-device 55.23 GB/s at the lowest, 115 % of what "
         "the link is expected to carry"),
        ("clocks-under-load", "pass", "1 GPU(s) held their clocks under load: 1,455 MHz median "
         "of 1,980 MHz"),
        ("kernel-launch", "pass", "1 GPU(s): 6.35 us a queued launch"),
        ("gpu-links", "skip", "needs 2 or more GPUs; 1 measured"),
    ]
    gemm = next(c for c in data["checks"] if c["id"] == "gemm-rate")
    assert gemm["fix"]["commands"] == ["rocmdoctor check --deep --only gemm-rate -v"]
    assert data["summary"] == {"pass": 17, "warn": 1, "fail": 0, "skip": 17, "error": 0}
