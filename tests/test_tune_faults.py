"""What crashes tell the tune, end to end: the real tune command, real benchmark children on
the CPU, a machine that breaks for a while (ROCMDOCTOR_TEST_BREAK makes the workers numbered
FROM+1..TO exit at once, as a worker does that cannot import torch), the working folder
replaced under a running tune (what broke three of four plain tunes on an H200), and a Python
that hangs."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

TUNE = [sys.executable, "-m", "rocmdoctor", "tune"]
# Two measured steps make two windows: the pruner, which needs three, never stops a trial
# (a loaded machine made a slower configuration look prunable).
WORKLOAD = ["--model", "tinycnn", "--device", "cpu", "--batch-size", "8", "--image-size", "32",
            "--steps", "2", "--warmup", "1"]
OUTPUTS = ["--output", "r.json", "--export", "best.env"]
BROKE = "Intel oneMKL FATAL ERROR: Cannot load /x/torch/lib/libtorch_cpu.so."


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ROCMDOCTOR_TESTING", "ROCMDOCTOR_TEST_BREAK")}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
               **extra)
    return env


def _break(tmp: Path, first: int, last: str = "", text: str = BROKE) -> str:
    return f"{first}:{last}:{tmp / 'workers.txt'}:{text}"


def _tune(tmp: Path, args: list[str], timeout: float = 400, **env: str
          ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float]:
    start = time.monotonic()
    done = subprocess.run(TUNE + WORKLOAD + args + OUTPUTS, cwd=tmp, env=_env(tmp, **env),
                          text=True, capture_output=True, timeout=timeout)
    took = time.monotonic() - start
    path = tmp / "r.json"
    result = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return done, result, took


SEARCH = ["--space", "channels_last,optimizer_impl", "--budget", "5m", "--confirm-top", "1",
          "--trial-timeout", "90"]


def test_a_machine_that_breaks_after_two_trials_stops_the_search(tmp_path: Path) -> None:
    """Workers 3 to 5 crash alike, whatever their settings: the search stops there, your
    settings run once more (worker 6, still broken), no confirmation claims anything, and the
    rest of the budget is kept. The same command later runs the three again."""
    done, result, took = _tune(tmp_path, SEARCH, ROCMDOCTOR_TEST_BREAK=_break(tmp_path, 2))
    assert done.returncode == 1, done.stderr[-3000:]
    assert took < 120  # of a 5-minute budget
    failure = result["failure"]
    assert failure["kind"] == "environment" and failure["trials"] == [2, 3, 4]
    assert failure["message"] == f"the benchmark process exited with code 2: {BROKE}"
    assert result["search"]["stopped"] == "environment"
    states = [t["state"] for t in result["trials"] if t["state"] != "waiting"]
    assert states == ["ok", "ok", "crashed", "crashed", "crashed"]
    assert [t["number"] for t in result["trials"] if t["environment"]] == [2, 3, 4]
    assert result["recovery"]["state"] == "crashed"
    assert result["confirmation"]["status"] == "not-run"
    assert result["verdict"]["winner"] is False and result["apply"] is None
    summary = result["verdict"]["summary"]
    assert summary.startswith("the environment broke: 3 trials in a row, each with other "
                              "settings, crashed the same way (the benchmark process exited "
                              "with code 2: Intel oneMKL FATAL ERROR")
    assert summary.endswith("The confirmation did not run: the search figures are unconfirmed")
    assert f"verdict: {summary}\n" in done.stdout
    assert "faster" not in (tmp_path / "best.env").read_text(encoding="utf-8")
    assert "crashed the same way whatever their settings: the environment broke" in done.stderr
    # the oneMKL crash is named, with its source and what rocmdoctor does about it
    assert ("warning: a crash with a known cause outside rocmdoctor: the oneMKL inside "
            "torch's libtorch_cpu calls getcwd()") in done.stdout
    assert "https://github.com/InternLM/lmdeploy/issues/2258" in done.stdout
    # the message reads as a working folder gone (kb/trial_crashes.py): each crashed trial ran
    # once more, never twice: 2 + 3 x 2 + your settings once more
    assert (tmp_path / "workers.txt").read_text().count("\n") == 9
    assert all(t["retried"] for t in result["trials"] if t["environment"])

    again, resumed, _ = _tune(tmp_path, SEARCH)
    assert again.returncode == 0, again.stderr[-3000:]
    ran_again = {t["retry_of"] for t in resumed["trials"] if t["retry_of"] is not None}
    assert ran_again == {2, 3, 4}
    assert all(t["state"] == "ok" for t in resumed["trials"] if t["retry_of"] is not None)
    assert resumed["confirmation"]["status"] == "done" and resumed["failure"] is None


def test_a_machine_that_recovers_is_confirmed_with_what_it_found(tmp_path: Path) -> None:
    """The break lasts for workers 3 to 5 only: your settings run again fine (worker 6), so
    the candidates measured before the break are confirmed."""
    done, result, _ = _tune(tmp_path, SEARCH,
                            ROCMDOCTOR_TEST_BREAK=_break(tmp_path, 2, "5", "boom: injected"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert result["failure"]["kind"] == "environment"
    assert result["recovery"]["state"] == "ok"
    conf = result["confirmation"]
    assert conf["status"] == "done" and [c["trial"] for c in conf["candidates"]] == [1]
    assert conf["candidates"][0]["speedup"] is not None
    assert "your settings, run again after the break: " in done.stdout


def test_your_settings_crashing_stops_at_once_with_the_command_to_run_by_hand(
        tmp_path: Path) -> None:
    env = {"ROCMDOCTOR_TEST_BREAK": _break(tmp_path, 0, text="boom: injected")}
    done, result, took = _tune(tmp_path, SEARCH, **env)
    assert done.returncode == 1, done.stderr[-3000:]
    assert took < 60
    failure = result["failure"]
    assert failure["kind"] == "baseline" and failure["state"] == "crashed"
    assert [t["state"] for t in result["trials"] if t["state"] != "waiting"] == ["crashed"]
    assert result["confirmation"]["status"] == "no-baseline"
    assert result["verdict"]["summary"] == (
        "your settings crashed: the benchmark process exited with code 2: boom: injected; "
        "there is nothing to compare against")
    lines = done.stdout.splitlines()
    assert lines[lines.index("what the benchmark printed last (stderr):") + 1] == \
        "  boom: injected"
    command = lines[lines.index("the same run by hand:") + 1].strip()
    assert command == failure["reproduce"]
    assert command.startswith("rocmdoctor bench --model tinycnn --batch-size 8 --precision fp32 "
                              "--steps 2 --warmup 1 --device cpu --image-size 32 ")
    # it is the same benchmark: broken with the same break, fine without it
    bench = [sys.executable, "-m", "rocmdoctor", *shlex.split(command)[1:]]
    broken = subprocess.run(bench, cwd=tmp_path, env=_env(tmp_path, **env), text=True,
                            capture_output=True, timeout=120)
    assert broken.returncode == 1 and "boom: injected" in broken.stderr
    fine = subprocess.run(bench, cwd=tmp_path, env=_env(tmp_path), text=True,
                          capture_output=True, timeout=120)
    assert fine.returncode == 0, fine.stderr[-2000:]
    assert "images/s" in fine.stdout


def test_a_crashing_confirmation_names_no_unmeasured_gain(tmp_path: Path) -> None:
    """Both configurations measure; every re-measurement then crashes: the confirmation stops
    after three alike, says it could not run, and no winner or apply line is written."""
    args = ["--space", "channels_last", "--budget", "5m", "--confirm-top", "1",
            "--trial-timeout", "90"]
    done, result, _ = _tune(tmp_path, args, ROCMDOCTOR_TEST_BREAK=_break(tmp_path, 2))
    assert done.returncode == 1, done.stderr[-3000:]
    assert [t["state"] for t in result["trials"]] == ["ok", "ok"]
    conf = result["confirmation"]
    assert conf["status"] == "failed"
    assert [r["state"] for r in conf["timed_runs"]] == ["crashed", "crashed", "crashed",
                                                        "not-run"]
    assert conf["reason"] == (
        "the confirmation could not run: 4 of 4 re-measurements did not finish (crashed: the "
        f"benchmark process exited with code 2: {BROKE}); the search figures are unconfirmed")
    assert conf["candidates"][0]["winner"] is False
    assert conf["candidates"][0]["why"].startswith("not confirmed: its re-measurements did not "
                                                   "finish (crashed: ")
    assert result["verdict"] == {**result["verdict"], "winner": False,
                                 "summary": conf["reason"], "best_overall": None}
    assert result["apply"] is None
    env_file = (tmp_path / "best.env").read_text(encoding="utf-8")
    assert "Nothing to apply" in env_file and "throughput over your settings" not in env_file
    assert "no configuration beat your current settings" not in done.stdout


def test_a_crash_that_looks_transient_is_run_once_more(tmp_path: Path) -> None:
    text = "BlockingIOError: [Errno 11] Resource temporarily unavailable"
    args = ["--space", "channels_last", "--budget", "5m", "--confirm-top", "1",
            "--trial-timeout", "90"]
    done, result, _ = _tune(tmp_path, args,
                            ROCMDOCTOR_TEST_BREAK=_break(tmp_path, 1, "2", text))
    assert done.returncode == 0, done.stderr[-3000:]
    trial = result["trials"][1]
    assert trial["state"] == "ok"
    assert trial["retried"]["message"] == f"the benchmark process exited with code 2: {text}"
    assert "running it once more" in done.stderr


def test_the_folder_the_tune_runs_in_replaced_under_it(tmp_path: Path) -> None:
    """The H200 crash: the tune's working folder deleted and made again while it runs (a
    checkout copied anew). Every child of a tune that inherits it dies importing torch
    ('Intel oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so', exit 2); now each starts in
    the folder of that name and every trial measures."""
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen(TUNE + WORKLOAD + ["--space", "channels_last,optimizer_impl",
                                               "--max-trials", "4", "--budget", "5m",
                                               "--confirm-top", "1", "--trial-timeout", "90",
                                               "--output", "r.json"],
                            cwd=work, env=_env(tmp_path), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("[2/"):
            shutil.rmtree(work)
            work.mkdir()
            break
    out, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, "".join(seen) + err
    result = json.loads((work / "r.json").read_text(encoding="utf-8"))
    assert [t["state"] for t in result["trials"]] == ["ok"] * 4
    assert result["confirmation"]["status"] == "done"
    assert any(w.startswith(f"the folder rocmdoctor was started in ({work}) was deleted while "
                            "it ran; child processes start in the new folder of that name")
               for w in result["warnings"])


def test_a_python_that_hangs_is_cut_off_within_the_budget_with_progress(
        tmp_path: Path) -> None:
    hang = tmp_path / "python"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    start = time.monotonic()
    done = subprocess.run(TUNE + ["--model", "tinycnn", "--python", str(hang), "--budget", "30s"],
                          cwd=tmp_path, env=_env(tmp_path), text=True, capture_output=True,
                          timeout=120)
    took = time.monotonic() - start
    assert done.returncode == 2
    assert took <= 45  # the budget and 15 s
    lines = done.stderr.splitlines()
    assert lines[0] == f"tune: asking {hang} what it runs on (torch, GPUs; at most 40 s)"
    assert "      ... the platform probe: importing torch (5 s in)" in lines
    assert lines[-1] == (f"rocmdoctor: error: the platform probe ({hang}) did not finish in "
                         "40 s; `rocmdoctor check` says why torch hangs")
    assert not list(tmp_path.glob("cache/**/*.db"))
