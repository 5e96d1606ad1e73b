"""The pieces behind what crashes tell a tune, one by one: crash signatures and the streak
that says the environment broke, transient and known causes from kb/trial_crashes.py, the
command that reproduces a trial, children started from a deleted working folder, the
processes that outlive a trial, the search below an out-of-memory, and the progress lines of
a quiet phase."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.host import process
from rocmdoctor.tuners import crashes
from rocmdoctor.tuners.bench.child import TrialOutcome
from rocmdoctor.tuners.bench.maxbatch import find_below
from rocmdoctor.tuners.bench.spec import BenchSpec

MKL = ("the benchmark process exited with code 2: Intel oneMKL FATAL ERROR: Cannot load "
       "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so.")


def test_a_signature_leaves_out_what_differs_between_runs_of_one_fault() -> None:
    a = crashes.signature("crashed", "CUDA error at 0x7f3a2c00 in /home/a/x.py:12 after 3.5 s")
    b = crashes.signature("crashed", "CUDA error at 0x11 in /srv/b/y.py:99 after 17 s")
    assert a == b == "crashed: CUDA error at N in PATH:N after N s"
    assert crashes.signature("error", "CUDA error at 0x11") != \
        crashes.signature("crashed", "CUDA error at 0x11")


def test_three_configurations_in_a_row_crashing_alike_is_a_broken_environment() -> None:
    streak = crashes.CrashStreak()
    streak.record("a", "ok", "1,000 images/s")
    streak.record("b", "crashed", MKL)
    streak.record("c", "crashed", MKL)
    assert streak.broken() is None  # two are not yet three
    streak.record("d", "interrupted", "the tune stopped")  # not an end of a run
    streak.record("e", "crashed", MKL.replace("3.12", "3.11"))
    assert streak.broken() == MKL.replace("3.12", "3.11")


@pytest.mark.parametrize("ends, why", [
    ([("b", "crashed", MKL), ("c", "oom", "out of memory at batch 8"), ("d", "crashed", MKL)],
     "an out-of-memory between"),
    ([("b", "crashed", MKL), ("c", "crashed", "killed by SIGSEGV"), ("d", "crashed", MKL)],
     "another message between"),
    ([("b", "crashed", MKL), ("b", "crashed", MKL), ("b", "crashed", MKL)],
     "one configuration crashing again"),
    ([("b", "pruned", "stopped"), ("c", "crashed", MKL), ("d", "crashed", MKL)],
     "only two crashes"),
])
def test_what_is_not_a_broken_environment(ends: list[tuple[str, str, str]], why: str) -> None:
    streak = crashes.CrashStreak()
    for key, state, message in ends:
        streak.record(key, state, message)
    assert streak.broken() is None, why


def test_transient_and_known_causes_come_from_the_table() -> None:
    assert crashes.transient(MKL).key == "working-folder-gone"  # type: ignore[union-attr]
    assert crashes.transient("x", "OSError: [Errno 11] Resource temporarily unavailable"
                             ).key == "no-resources"  # type: ignore[union-attr]
    assert crashes.transient("the benchmark process was killed by SIGSEGV") is None
    cause = crashes.known_cause(MKL)
    assert cause is not None and cause.key == "onemkl-getcwd"
    assert cause.source == "https://github.com/InternLM/lmdeploy/issues/2258"
    assert crashes.known_cause("CUDA error: an illegal memory access") is None


def test_the_reproduce_command_is_one_shell_line_that_bench_takes() -> None:
    spec = BenchSpec(model="resnet50", batch_size=1024, precision="fp16", channels_last=True,
                     compile=True, settings={"compile_mode": "reduce-overhead", "mfu": False})
    line = crashes.reproduce_command(spec, {"MIOPEN_USER_DB_PATH": "/c/t 1/db",
                                            "PYTORCH_ALLOC_CONF": "expandable_segments:True"},
                                     "/opt/py/bin/python3")
    assert line == ("MIOPEN_USER_DB_PATH='/c/t 1/db' PYTORCH_ALLOC_CONF=expandable_segments:True "
                    "rocmdoctor bench --model resnet50 --batch-size 1024 --precision fp16 "
                    "--channels-last --compile --steps 50 --warmup 10 --device auto "
                    "--image-size 224 --seq-len 512 --set compile_mode=reduce-overhead "
                    "--set mfu=false --python /opt/py/bin/python3")
    words = shlex.split(line)
    assert words[0] == "MIOPEN_USER_DB_PATH=/c/t 1/db" and "\n" not in line
    from rocmdoctor.cli.bench import parse_settings

    sets = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
    assert parse_settings(sets) == {"compile_mode": "reduce-overhead", "mfu": False}


def test_the_reproduce_command_trains_on_the_trials_images_and_processes() -> None:
    # a trial of `tune --data ... --nproc 2` crashed: running its line by hand must read the
    # same image folder with the same number of processes, not synthetic tensors on one
    spec = BenchSpec(model="resnet50", data="/data/my images", nproc=2,
                     settings={"num_workers": 8, "pin_memory": True})
    words = shlex.split(crashes.reproduce_command(spec, {}))
    assert words[words.index("--data") + 1] == "/data/my images"
    assert words[words.index("--nproc") + 1] == "2"
    assert [words[i + 1] for i, w in enumerate(words) if w == "--set"] == [
        "num_workers=8", "pin_memory=true"]
    alone = shlex.split(crashes.reproduce_command(BenchSpec(model="resnet50"), {}))
    assert "--data" not in alone and "--nproc" not in alone


def _pwd_of_child() -> str:
    return process.run_command([sys.executable, "-c", "import os; print(os.getcwd())"],
                               30.0).stdout.strip()


def test_a_child_of_a_deleted_folder_starts_in_one_that_exists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What broke the H200 tunes: the folder replaced under a running process."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(process, "START_DIR", str(work))
    monkeypatch.setattr(process, "_cwd_notes", [])
    monkeypatch.chdir(work)
    assert process.child_cwd() is None and _pwd_of_child() == str(work)
    work.rmdir()
    work.mkdir()  # a new folder of the same name
    assert not process.cwd_alive()
    assert process.child_cwd() == str(work) and _pwd_of_child() == str(work)
    work.rmdir()  # gone for good
    import tempfile

    assert process.child_cwd() == tempfile.gettempdir()
    assert _pwd_of_child() == os.path.realpath(tempfile.gettempdir())
    assert process.cwd_notes() == [
        f"the folder rocmdoctor was started in ({work}) was deleted while it ran; child "
        "processes start in the new folder of that name instead (a child started in a deleted "
        "folder cannot import torch)",
        f"the folder rocmdoctor was started in ({work}) was deleted while it ran; child "
        f"processes start in {tempfile.gettempdir()} instead (a child started in a deleted "
        "folder cannot import torch)"]
    assert process.child_cwd(str(tmp_path)) == str(tmp_path)  # a folder asked for wins


def test_what_outlives_a_child_is_found_by_its_tag_and_killed(tmp_path: Path) -> None:
    """A grandchild in a session of its own, as torch.compile's workers are, outlives the
    child that started it."""
    script = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
              "'import time; time.sleep(600)'], start_new_session=True, "
              "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print('started')")
    tag = f"test-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, process.TAG_ENV: tag}
    try:
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=30)
        assert done.stdout.strip() == "started"
        time.sleep(0.5)
        survivors = process.tagged(tag)
        assert len(survivors) == 1
        pid = survivors[0].pid
        assert process.reap_tagged(tag) == 1
        assert process.tagged(tag) == []
        import psutil  # gone, or a zombie where the machine's first process reaps nothing

        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == \
            psutil.STATUS_ZOMBIE
        assert process.reap_tagged(tag) == 0
    finally:
        process.reap_tagged(tag)


def test_a_bench_child_reports_no_survivors_when_none_outlive_it() -> None:
    from rocmdoctor.tuners.bench.child import run_bench_child

    outcome = run_bench_child(BenchSpec(model="tinycnn", device="cpu", batch_size=2,
                                        image_size=8, steps=1, warmup=1), timeout_s=120)
    assert outcome.state == "ok" and outcome.survivors == 0 and outcome.started


def _memory_runner(limit: int, calls: list[int], slow_from: int = 0) -> Any:
    def run(spec: BenchSpec) -> TrialOutcome:
        calls.append(spec.batch_size)
        if slow_from and spec.batch_size >= slow_from:
            return TrialOutcome("timeout", None, "no result within 30 s", "", -9, 30.0)
        state = "ok" if spec.batch_size <= limit else "oom"
        return TrialOutcome(state, None, state, "", 0 if state == "ok" else 3, 1.0)
    return run


def test_the_search_below_an_absurd_batch_bisects_from_what_fits() -> None:
    """A batch of 10^12 was halved one out-of-memory at a time (40 fresh processes); from 64
    that fits, by the geometric middle, it takes a dozen."""
    calls: list[int] = []
    found = find_below(BenchSpec(batch_size=10**12), _memory_runner(3000, calls), 10**12)
    assert found.failure is None and found.first_oom is not None
    assert found.largest_fit is not None and found.largest_fit <= 3000 < found.first_oom
    assert found.first_oom - found.largest_fit <= found.largest_fit // 8
    assert calls[0] == 64 and len(calls) <= 14


def test_the_search_below_halves_when_even_its_start_does_not_fit() -> None:
    calls: list[int] = []
    found = find_below(BenchSpec(batch_size=100), _memory_runner(5, calls), 100)
    assert calls[:4] == [50, 25, 12, 6] and found.largest_fit == 5 and found.first_oom == 6


def test_a_probe_too_slow_to_finish_counts_as_too_large() -> None:
    calls: list[int] = []
    found = find_below(BenchSpec(batch_size=10**9), _memory_runner(10**8, calls,
                                                                    slow_from=5000), 10**9)
    assert found.failure is None and found.largest_fit is not None
    assert found.largest_fit < 5000 and found.too_slow is not None


def test_a_quiet_phase_is_reported_every_few_seconds() -> None:
    from rocmdoctor.cli.tune_progress import Progress
    from rocmdoctor.tuners import events as ev

    stream = io.StringIO()
    with Progress(stream, heartbeat_s=0.3) as progress:
        progress(ev.TrialStarted(number=3, params={}, changes={"compile": "on"}, gpu=None,
                                 finished=1, total=None, time_left=100.0))
        progress(ev.Phase(who="trial 3", event="start", compile=True))
        time.sleep(1.4)
        progress(ev.Phase(who="trial 3", event="warmup", step=1, of=10))
        time.sleep(0.8)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[2] trial 3: compile=on ..."
    beats = lines[1:]
    assert len(beats) >= 3
    assert beats[0].startswith("      ... trial 3: warm-up step 1 (torch.compile compiles now) (")
    assert beats[-1].startswith("      ... trial 3: warm-up step 2 of 10 (")
    assert all(b.endswith(" s in)") for b in beats)


def test_the_phase_of_a_child_in_words() -> None:
    from rocmdoctor.cli.tune_progress import phase_text
    from rocmdoctor.tuners.events import Phase, phase_of

    assert phase_text(Phase("t")) == "starting (importing torch)"
    assert phase_text(phase_of("t", {"event": "start"}, False)) == "warm-up step 1"
    assert phase_text(phase_of("t", {"event": "warmup", "step": 3, "of": 10}, False)) == \
        "warm-up step 4 of 10"
    # the H200 printed "warm-up step 38 of 10" while its clocks settled
    assert phase_text(phase_of("t", {"event": "warmup", "step": 37, "of": 10}, False)) == (
        "warm-up step 38 (past the 10 asked for, until the clocks settle)")
    assert phase_text(phase_of("t", {"event": "window", "index": 0, "of": 5}, False)) == \
        "measuring window 2 of 5"
    assert phase_text(phase_of("t", {"event": "window", "index": 4, "of": 5}, False)) == \
        "finishing (the result)"
    # changes nothing: it said "starting" there
    assert phase_text(phase_of("t", {"event": "result"}, False)) is None
