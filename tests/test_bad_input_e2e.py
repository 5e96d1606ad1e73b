"""Bad input to bench, tune and compare, tried as a new user would: one clear line and a
non-zero exit, found before anything is measured; and the plain CPU bench answering in well
under a minute."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROCMDOCTOR = [sys.executable, "-m", "rocmdoctor"]


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMDOCTOR_TEST")}
    env.update(XDG_CACHE_HOME=str(cwd / "cache"), PYTHONUNBUFFERED="1")
    return subprocess.run(ROCMDOCTOR + args, cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=timeout)


def test_a_function_that_is_no_workload_factory_is_one_line(tmp_path: Path) -> None:
    done = _run(["bench", "--model", "os:getcwd", "--device", "cpu"], tmp_path)
    assert (done.returncode, done.stderr) == (
        2, "rocmdoctor: error: os:getcwd is not a workload factory: too many positional "
           "arguments; expected factory(spec) returning a Workload or (model, make_batch, "
           "loss_fn)\n")


def test_a_program_that_is_not_python_is_named(tmp_path: Path) -> None:
    done = _run(["bench", "--model", "tinycnn", "--device", "cpu", "--python", "/bin/false"],
                tmp_path)
    assert (done.returncode, done.stderr) == (
        1, "rocmdoctor: error: the benchmark crashed: /bin/false exited with code 1 before the "
           "benchmark started, printing nothing: is it a Python with torch and rocmdoctor? "
           "(check: /bin/false -c 'import torch, rocmdoctor')\n")


def test_compare_needs_two_results(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"schema": "rocmdoctor.bench/1"}))
    done = _run(["compare", str(one)], tmp_path)
    assert (done.returncode, done.stderr) == (
        2, "rocmdoctor: error: compare needs two or more results, got 1 (rocmdoctor compare "
           "A.json B.json)\n")


@pytest.mark.parametrize("command", [
    ["bench", "--model", "tinycnn", "--device", "cpu", "--json"],
    ["tune", "--model", "tinycnn", "--device", "cpu", "--output"],
])
def test_a_file_no_one_can_create_is_refused_before_measuring(tmp_path: Path,
                                                              command: list[str]) -> None:
    """As root a permission check passes everywhere; /proc takes no new file all the same."""
    start = time.monotonic()
    done = _run([*command, "/proc/x.json"], tmp_path)
    assert (done.returncode, done.stderr) == (
        2, "rocmdoctor: error: cannot write /proc/x.json: /proc takes no new files\n")
    assert time.monotonic() - start < 15 and not (tmp_path / "cache").exists()


def test_a_read_only_file_system_is_named_so(tmp_path: Path) -> None:
    """A tmpfs mounted read-only in a mount namespace of our own (no root needed)."""
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare or "unshare", "-rm", "true"], capture_output=True) \
        if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no unshare -rm here to mount a read-only file system")
    ro = tmp_path / "ro"
    ro.mkdir()
    script = (f"mount -t tmpfs -o ro tmpfs {ro} && exec {sys.executable} -m rocmdoctor bench "
              f"--model tinycnn --device cpu --json {ro}/r.json")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, text=True,
                          capture_output=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        2, f"rocmdoctor: error: cannot write {ro}/r.json: read-only file system\n")


def test_the_plain_cpu_bench_answers_well_under_a_minute(tmp_path: Path) -> None:
    """It took 4 minutes: 10 warm-up and 50 measured steps of a vision model on a CPU. Now,
    unless --steps is given, warm-up and measurement are held to about 20 s, and the result
    says so."""
    start = time.monotonic()
    done = _run(["bench", "--model", "tinycnn", "--device", "cpu", "--json", "r.json"], tmp_path)
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-2000:]
    assert took < 45
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    measured = result["metrics"]["measured_steps"]
    assert 3 <= measured <= 50 and result["spec"]["settings"]["cpu_time_s"] == 20.0
    if measured < 50:
        note = (f"measured {measured} of 50 steps: on the CPU a run is held to about 20 s; "
                "give --steps to measure a set number")
        assert note in result["warnings"]
        assert "give --steps to measure" in done.stdout
