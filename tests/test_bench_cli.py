"""`rocmdoctor bench` / `compare` end to end: the real commands in a subprocess, on the CPU.

The commands run from a Typer app built the way rocmdoctor.cli.app registers them, so these
tests do not depend on the registration line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import repo_root

pytestmark = pytest.mark.e2e

APP = ("import typer; from rocmdoctor.cli.bench import bench_command, compare_command; "
       "app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None); "
       "app.command('bench')(bench_command); app.command('compare')(compare_command); app()")
TINY = ["--model", "tinycnn", "--device", "cpu", "--image-size", "16", "--batch-size", "4",
        "--steps", "5", "--warmup", "1"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", APP, *args], capture_output=True, text=True,
                          timeout=240, cwd=repo_root(), env={**os.environ, **(env or {})})


LIMITED = ["--model", "tests.bench_workload:make_limited", "--device", "cpu"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The commands that start benchmark children, run two at a time (two cores here)."""
    out = tmp_path_factory.mktemp("bench") / "tiny.json"
    jobs = {
        "cuda": lambda: cli("bench", "--model", "tinycnn", "--device", "cuda"),
        "json": lambda: cli("bench", *TINY, "--json", str(out)),
        "oom": lambda: cli("bench", *LIMITED, "--batch-size", "2", "--steps", "2", "--warmup",
                           "1", env={"BENCH_TEST_MEMORY_LIMIT": "1"}),
        "max": lambda: cli("bench", *LIMITED, "--batch-size", "1", "--find-max-batch",
                           env={"BENCH_TEST_MEMORY_LIMIT": "1"}),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        done: dict[str, Any] = {name: f.result() for name, f in futures.items()}
    done["json_path"] = out
    return done


def test_device_cuda_without_gpu_is_one_line_and_exit_2(runs: dict[str, Any]) -> None:
    import torch

    proc = runs["cuda"]
    assert proc.returncode == 2
    *waiting, error = proc.stderr.splitlines()
    assert error == (f"rocmdoctor: error: --device cuda: no GPU: torch "
                     f"{torch.__version__} is a CPU-only build")
    # Before it, only progress while the child imports torch (a slow machine takes > 2 s).
    assert all(ln.startswith("rocmdoctor: waiting for the benchmark to start (importing torch) (")
               for ln in waiting), waiting
    assert proc.stdout == ""


def test_bad_usage_exits_2_before_any_child() -> None:
    proc = cli("bench", "--precision", "fp8", "--set", "num_threads=2")
    assert proc.returncode == 2
    assert proc.stderr == "rocmdoctor: error: unknown precision 'fp8' (one of fp32, " \
                          "fp32-strict, tf32, bf16, fp16)\n"
    proc = cli("bench", "--set", "turbo=1")
    assert proc.returncode == 2 and proc.stderr.startswith("rocmdoctor: error: --set 'turbo=1'")


def test_bench_writes_json_and_compare_reads_it(runs: dict[str, Any], tmp_path: Path) -> None:
    out: Path = runs["json_path"]
    proc = runs["json"]
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("tinycnn, batch 4, fp32 on ")
    assert [line.split()[0] for line in lines[1:8]] == [
        "throughput", "step", "warm-up", "memory", "power", "FLOPs", "MFU"]
    assert "images/s median (p10 " in lines[1]
    # progress on stderr when it is not a terminal: one plain line per window
    assert [ln.split(":")[0] for ln in proc.stderr.splitlines() if ln.startswith("window")] == [
        f"window {i}/5" for i in range(1, 6)]
    assert proc.stderr.splitlines()[-1] == f"wrote {out}"
    data = json.loads(out.read_text())
    assert data["schema"] == "rocmdoctor.bench/1" and data["spec"]["model"] == "tinycnn"

    compared = cli("compare", str(out), str(out), "--markdown")
    assert compared.returncode == 0, compared.stderr
    rows = {ln.split("|")[1].strip(): ln for ln in compared.stdout.splitlines()[2:]
            if ln.startswith("|")}
    assert rows["vs first"] == "| vs first | base | +0.0 % |"
    # the same file twice: no difference, and one run each says nothing beyond the noise
    assert compared.stdout.splitlines()[-1].startswith("- warning: tiny vs tiny: +0.0 % is "
                                                       "inside the step-to-step noise")
    assert rows["model"] == "| model | tinycnn bs 4 | tinycnn bs 4 |"

    missing = cli("compare", str(tmp_path / "none.json"), str(out))
    assert missing.returncode == 2
    assert missing.stderr.startswith("rocmdoctor: error: cannot read ")
    assert len(missing.stderr.splitlines()) == 1


def test_out_of_memory_says_which_batch_fits_without_a_traceback(
        runs: dict[str, Any]) -> None:
    proc = runs["oom"]
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()[-3:]
    assert lines[0] == ("rocmdoctor: out of memory at batch 2; finding the largest batch that "
                        "fits (short runs, from batch 1)")
    # each probe shown as it ends, with its time: a search on the CPU takes a while
    assert re.fullmatch(r"  batch 1: ok \(\d+ s\)", lines[1])
    assert lines[2] == ("rocmdoctor: error: out of memory at batch 2; the largest batch that "
                        "fits is 1 (batch 2 does not): rerun with --batch-size 1")


def test_find_max_batch(runs: dict[str, Any]) -> None:
    proc = runs["max"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "largest batch that fits: 1 (batch 2 runs out of memory)\n"
    assert [re.sub(r" \(\d+ s\)$", "", ln) for ln in proc.stderr.splitlines()[-2:]] == [
        "  batch 1: ok", "  batch 2: oom"]


def test_a_negative_timeout_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "rocmdoctor", "bench", "--model", "tinycnn",
                           "--device", "cpu", "--timeout", "-5"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--timeout" in done.stderr and "greater than or equal to 1" in done.stderr


def test_a_factory_error_is_shown_with_its_traceback_header_and_its_error() -> None:
    """A deep traceback from user code is longer than the stderr kept: the header stays, the
    middle is marked cut, and the error at the end is shown."""
    proc = cli("bench", "--model", "tests.bench_workload:make_deep", "--device", "cpu",
               "--timeout", "120")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    assert re.fullmatch(r"  \.\.\. \(\d+ lines\)", lines[start + 1]), lines[start + 1]
    assert lines[-2:] == [
        "LookupError: no such dataset split: 'validation'",
        "rocmdoctor: error: the benchmark crashed: the benchmark process exited with code 1: "
        "LookupError: no such dataset split: 'validation'"]
    assert len(lines) - start <= 16
