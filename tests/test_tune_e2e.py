"""End to end: the real tune command in subprocesses, tuning the tinycnn workload on the CPU
with real benchmark child processes, a real SQLite study and real files."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ctrl_c_default

pytestmark = pytest.mark.e2e

# `rocmdoctor tune` once rocmdoctor.cli.app registers it; the module runs the same command alone.
TUNE = [sys.executable, "-m", "rocmdoctor", "tune"]
WORKLOAD = ["--model", "tinycnn", "--device", "cpu", "--batch-size", "8", "--image-size", "32",
            "--steps", "4", "--warmup", "1"]
SEARCH = ["--space", "channels_last", "--budget", "5m", "--confirm-top", "1",
          "--confirm-rounds", "2", "--confirm-max-rounds", "2", "--trial-timeout", "90"]
DONE = ("ok", "oom", "crashed", "timeout", "pruned", "error")


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    # One intra-op thread as the user's setting keeps each trial short on a small CI machine;
    # the threads knob then tries the other counts.
    env = {k: v for k, v in os.environ.items() if k != "ROCMDOCTOR_TESTING"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
               **extra)
    return env


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run 1 is interrupted with SIGINT as its second trial starts; run 2 is the same
    command."""
    tmp = tmp_path_factory.mktemp("tune")
    env = _env(tmp)
    first = subprocess.Popen(TUNE + WORKLOAD + SEARCH, cwd=tmp, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=ctrl_c_default)
    assert first.stderr is not None
    seen: list[str] = []
    for line in first.stderr:
        seen.append(line)
        if line.startswith("[2/2]"):
            first.send_signal(signal.SIGINT)
            break
    rest_out, rest_err = first.communicate(timeout=120)
    outputs = ["--output", "r.json", "--export", "best.env", "--html", "r.html"]
    second = subprocess.run(TUNE + WORKLOAD + SEARCH + outputs, cwd=tmp, env=env, text=True,
                            capture_output=True, timeout=400)
    assert second.returncode == 0, second.stderr[-3000:]
    return {"tmp": tmp, "first_rc": first.returncode, "first_err": "".join(seen) + rest_err,
            "first_out": rest_out, "second": second,
            "result": json.loads((tmp / "r.json").read_text(encoding="utf-8"))}


def test_interrupt_exits_130_and_says_how_to_resume(resumed: dict[str, Any]) -> None:
    assert resumed["first_rc"] == 130, resumed["first_err"][-4000:]
    assert resumed["first_err"].rstrip().endswith(
        "rocmdoctor tune: interrupted; finished trials are saved in the study, run the same "
        "command to continue")
    assert resumed["first_out"] == ""


def test_resume_repeats_no_finished_trial(resumed: dict[str, Any]) -> None:
    result = resumed["result"]
    trials = result["trials"]
    numbers = [t["number"] for t in trials]
    assert numbers == sorted(set(numbers))
    done = [t for t in trials if t["state"] in DONE]
    keys = [json.dumps(t["params"], sort_keys=True) for t in done]
    assert len(keys) == len(set(keys)) == result["space"]["size"] == 2
    # Trial 0 finished before the interrupt and was kept, not run again.
    assert "      trial 0: " in resumed["first_err"]
    assert trials[0]["state"] in DONE
    assert "trial 0: " not in resumed["second"].stderr
    # The trial that was running was marked interrupted and queued once more.
    interrupted = [t for t in trials if t["state"] == "interrupted"]
    assert [t["number"] for t in interrupted] == [1]
    retries = [t for t in trials if t["retry_of"] == 1]
    assert [t["number"] for t in retries] == [2]
    assert retries[0]["params"] == interrupted[0]["params"] == {"channels_last": "on"}
    assert retries[0]["state"] in DONE
    assert "trial(s) 1 were interrupted last time; they run again" in resumed["second"].stderr


def test_result_is_a_consistent_verdict(resumed: dict[str, Any]) -> None:
    result = resumed["result"]
    assert result["schema"] == "rocmdoctor.tune/1"
    assert result["platform"]["kind"] == "cpu"
    assert result["baseline"]["number"] == 0 and result["baseline"]["state"] == "ok"
    assert result["baseline"]["params"] == {"channels_last": "off"}
    conf = result["confirmation"]
    assert conf["status"] == "done" and conf["rounds"] == 2
    assert [c["trial"] for c in conf["candidates"]] == [2]
    cand = conf["candidates"][0]
    rounds = {r["round"] for r in conf["runs"] if r["trial"] == cand["trial"]}
    assert rounds == {r["round"] for r in conf["runs"] if r["trial"] == 0}
    assert cand["low"] <= cand["speedup"] <= cand["high"]
    assert cand["winner"] == (cand["low"] > 1.0 and cand["speedup"] - 1 >= 0.01
                              and cand["speedup"] - 1 > conf["noise_cv"])
    verdict = result["verdict"]
    assert verdict["winner"] == cand["winner"]
    assert (result["apply"] is not None) == cand["winner"]
    assert {(e["knob"], e["value"]) for e in result["effects"]} == {
        ("channels_last", "off"), ("channels_last", "on")}
    # each trial keeps what its throughput counts and the optimizer it ran; a CPU reads no
    # power, so there is no energy to show
    assert {(t["unit"], t["units_per_sample"], t["optimizer_class"], t["energy_per_sample_j"])
            for t in result["trials"] if t["state"] == "ok"} == {
        ("images", 1, "torch.optim.SGD", None)}
    assert cand["energy_per_unit_j"] is None
    assert conf["baseline_energy_per_unit_j"] is None
    summary = resumed["second"].stdout
    assert summary.startswith("rocmdoctor tune: tinycnn, batch 8, fp32 on cpu (torch ")
    assert "J/image" not in summary and "energy" not in summary
    assert f"verdict: {verdict['summary']}\n" in summary
    assert summary.rstrip().endswith("wrote r.json\nwrote best.env\nwrote r.html")


def test_export_file_sources_cleanly_in_bash(resumed: dict[str, Any]) -> None:
    tmp = resumed["tmp"]
    done = subprocess.run(["bash", "-c", "set -e; source best.env; env"], cwd=tmp, text=True,
                          capture_output=True, env={"PATH": os.environ["PATH"]}, timeout=30)
    assert done.returncode == 0, done.stderr
    apply = resumed["result"]["apply"]
    exported = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    for name, value in (apply or {"env": {}})["env"].items():
        assert exported[name] == value
    if apply is None:
        assert "# Nothing to apply: keep your current settings." in \
            (tmp / "best.env").read_text(encoding="utf-8")


@pytest.mark.ci_needs("chromium")
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_html_report_renders_in_headless_chromium(resumed: dict[str, Any]) -> None:
    tmp = resumed["tmp"]
    page = (tmp / "r.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 3 and "http://" not in page and "<script" not in page
    shot = tmp / "r.png"
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           "--window-size=1000,2000", f"--screenshot={shot}",
                           (tmp / "r.html").as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_crash_hang_and_oom_are_recorded_and_the_tune_finishes(tmp_path: Path) -> None:
    args = TUNE + WORKLOAD + ["--space", "test_fault", "--trial-timeout", "20",
                              "--budget", "5m", "--output", "r.json"]
    done = subprocess.run(args, cwd=tmp_path, env=_env(tmp_path, ROCMDOCTOR_TESTING="1"),
                          text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    states = {t["params"]["test_fault"]: t for t in result["trials"]}
    assert sorted(states) == ["crash", "hang", "none", "oom"]
    assert states["none"]["state"] == "ok" and states["none"]["baseline"]
    assert states["crash"]["state"] == "crashed"
    assert states["crash"]["message"] == "the benchmark process was killed by SIGSEGV"
    assert states["hang"]["state"] == "timeout"
    assert re.fullmatch(r"no result within 20 s; the child was killed; it was in _inject "
                        r"\(worker\.py:\d+\)", states["hang"]["message"])
    assert states["oom"]["state"] == "oom"
    assert states["oom"]["message"] == "out of memory at batch 8"
    assert "injected out of memory" in states["oom"]["stderr_tail"]
    assert result["confirmation"]["status"] == "nothing-to-confirm"
    assert result["verdict"]["winner"] is False
    assert "verdict: no other configuration finished a run\n" in done.stdout


def test_unknown_knob_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(TUNE + WORKLOAD + ["--space", "threads,warp_speed"], cwd=tmp_path,
                          env=_env(tmp_path), text=True, capture_output=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("rocmdoctor: error: unknown knob(s) warp_speed; known: ")


def test_probe_reports_this_machine_and_refuses_a_missing_gpu(tmp_path: Path) -> None:
    from rocmdoctor.tuners.platform import ProbeError, probe_platform

    env = _env(tmp_path)
    cpu = probe_platform("auto", None, env)
    assert cpu.kind in ("cpu", "rocm", "cuda") and cpu.torch and cpu.cpu_count >= 1
    if cpu.kind == "cpu":
        with pytest.raises(ProbeError, match=r"^--device cuda, but torch .* sees no GPU$"):
            probe_platform("cuda", None, env)
    with pytest.raises(ProbeError, match="^cannot run /nonexistent/python: "):
        probe_platform("cpu", "/nonexistent/python", env)


def test_tunableop_trial_tunes_once_then_replays(tmp_path: Path) -> None:
    """The two TunableOp runs, with real children (on the CPU TunableOp has no GEMMs to
    tune, so no results file appears and the tuning run repeats; the environment of the
    measured run is what matters)."""
    from rocmdoctor.tuners import knobs as kb
    from rocmdoctor.tuners.bench.spec import BenchSpec
    from rocmdoctor.tuners.model import Platform
    from rocmdoctor.tuners.space import PlannedKnob, SearchSpace, materialize
    from rocmdoctor.tuners.tune import TuneOptions, Tuner

    knob = kb.knobs_named("tunableop")[0]
    space = SearchSpace("tunableop", (PlannedKnob(knob, ("off", "on"), "off"),), ())
    spec = BenchSpec(model="tinycnn", device="cpu", batch_size=8, image_size=32, steps=2,
                     warmup=1)
    platform = Platform(kind="cpu", torch="2.13.0+cpu")
    plan = materialize(space, {"tunableop": "on"}, spec, platform, {}, str(tmp_path / "7"))
    tuner = Tuner(TuneOptions(spec=spec), _env(tmp_path))
    outcome, one_time = tuner.runner.run(plan, 120.0, None)
    assert outcome.state == "ok", outcome.stderr_tail
    assert one_time is not None and one_time > 0
    assert outcome.result is not None
    seen = outcome.result["environment"]["knobs"]["env"]
    assert seen["PYTORCH_TUNABLEOP_ENABLED"] == "1"
    assert seen["PYTORCH_TUNABLEOP_TUNING"] == "0"
    assert seen["PYTORCH_TUNABLEOP_FILENAME"] == str(tmp_path / "7" / "tunableop_results%d.csv")
    assert (tmp_path / "7").is_dir()


def test_a_trial_inherits_the_environment_given_to_the_tune_not_os_environ(
        tmp_path: Path) -> None:
    """run_tune(options, env): the trials run in `env`, whatever this process's os.environ
    holds (a library caller passes the environment it wants tuned)."""
    from rocmdoctor.tuners.bench.spec import BenchSpec
    from rocmdoctor.tuners.model import Platform
    from rocmdoctor.tuners.space import SearchSpace, materialize
    from rocmdoctor.tuners.tune import TuneOptions, Tuner

    assert "PYTORCH_ROCMDOCTOR_SEAM" not in os.environ
    spec = BenchSpec(model="tinycnn", device="cpu", batch_size=8, image_size=32, steps=2,
                     warmup=1)
    env = _env(tmp_path, PYTORCH_ROCMDOCTOR_SEAM="given")
    env.pop("OMP_NUM_THREADS")
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "3"  # in this process only: the trial must not see it
    try:
        plan = materialize(SearchSpace("none", (), ()), {}, spec,
                           Platform(kind="cpu", torch="2.13.0+cpu"), env,
                           str(tmp_path / "1"))
        outcome, _ = Tuner(TuneOptions(spec=spec), env).runner.run(plan, 120.0, None)
    finally:
        if saved is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    assert outcome.state == "ok", outcome.stderr_tail
    assert outcome.result is not None
    seen = outcome.result["environment"]["knobs"]["env"]
    assert seen.get("PYTORCH_ROCMDOCTOR_SEAM") == "given"
    assert "OMP_NUM_THREADS" not in seen


def test_an_unwritable_output_is_refused_before_anything_is_measured(tmp_path: Path) -> None:
    start = time.monotonic()
    done = subprocess.run(TUNE + WORKLOAD + SEARCH + ["--html", "no/such/folder/r.html"],
                          cwd=tmp_path, env=_env(tmp_path), text=True, capture_output=True,
                          timeout=120)
    assert (done.returncode, done.stderr) == (
        2, f"rocmdoctor: error: cannot write no/such/folder/r.html: no folder "
           f"{tmp_path}/no/such/folder\n")
    assert time.monotonic() - start < 20 and not (tmp_path / "cache").exists()
    bench = subprocess.run([sys.executable, "-m", "rocmdoctor", "bench", "--model", "tinycnn",
                            "--device", "cpu", "--json", str(tmp_path)], cwd=tmp_path,
                           env=_env(tmp_path), text=True, capture_output=True, timeout=60)
    assert (bench.returncode, bench.stderr) == (
        2, f"rocmdoctor: error: cannot write {tmp_path}: it is a folder\n")


def test_a_file_that_fails_at_the_end_still_shows_the_verdict(tmp_path: Path) -> None:
    """/dev/full takes the open and refuses the write: the summary is printed anyway and the
    study keeps the results."""
    done = subprocess.run(TUNE + WORKLOAD + ["--space", "channels_last", "--budget", "5m",
                                             "--keep-batch-size", "--trial-timeout", "90",
                                             "--output", "/dev/full"],
                          cwd=tmp_path, env=_env(tmp_path), text=True, capture_output=True,
                          timeout=400)
    assert done.returncode == 1
    assert "verdict: " in done.stdout
    assert ("rocmdoctor: error: cannot write /dev/full: No space left on device; the results "
            "are in the study") in done.stderr
