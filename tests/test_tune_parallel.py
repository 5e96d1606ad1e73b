"""`rocmdoctor tune --gpus`: trials run concurrently, one per GPU, in one study.

On the CPU the GPUs are stand-ins (ROCMDOCTOR_TESTING=1 lets --gpus through there): each
trial's child gets CUDA_VISIBLE_DEVICES naming its slot, and the bench result records the
environment the child saw, so the tests read back which slot ran what and when.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmdoctor.cli.tune import parse_gpus
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import Platform, Trial
from rocmdoctor.tuners.tune import TuneError, TuneOptions, Tuner
from tests.helpers import ctrl_c_default

TUNE = [sys.executable, "-m", "rocmdoctor", "tune"]
WORKLOAD = ["--model", "tinycnn", "--device", "cpu", "--batch-size", "8", "--image-size", "32",
            "--steps", "4", "--warmup", "1"]
# channels_last x batch size: 4 configurations, all of them measured (BruteForce).
SEARCH = ["--space", "channels_last,batch_size", "--batch-sizes", "8,16", "--budget", "5m",
          "--confirm-top", "1", "--confirm-rounds", "2", "--confirm-max-rounds", "2",
          "--trial-timeout", "90", "--gpus", "0,1"]
DONE = ("ok", "oom", "crashed", "timeout", "pruned", "error")


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
               ROCMDOCTOR_TESTING="1")
    return env


@pytest.mark.e2e
def test_trials_run_concurrently_one_per_gpu(tmp_path: Path) -> None:
    done = subprocess.run(TUNE + WORKLOAD + SEARCH + ["--output", "r.json"], cwd=tmp_path,
                          env=_env(tmp_path), text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    trials = [t for t in result["trials"] if t["state"] in DONE]
    # Every configuration measured exactly once, as a one-GPU tune would.
    keys = [json.dumps(t["params"], sort_keys=True) for t in trials]
    assert len(keys) == len(set(keys)) == result["space"]["size"] == 4
    # (on a busy 2-core CI machine a trial may be pruned as clearly slower: that is an end)
    assert all(t["state"] in ("ok", "pruned") for t in trials)
    # Both GPUs worked, and each child was given its GPU alone.
    assert {t["gpu"] for t in trials} == {0, 1}
    for t in trials:
        if t["state"] == "ok":
            assert t["visible_devices"] == {"CUDA_VISIBLE_DEVICES": str(t["gpu"])}
    assert "(GPU 0)" in done.stderr and "(GPU 1)" in done.stderr
    # each trial's place in the count is its own: [1/4] to [4/4], once each
    starts = sorted(line.split("]")[0] + "]" for line in done.stderr.splitlines()
                    if line.startswith("["))
    assert starts == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    # Two trials overlapped in time: they ran side by side, not one after the other.
    spans = sorted((t["started_at"], t["started_at"] + t["wall_s"]) for t in trials)
    assert any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))
    # The proof re-measures on one GPU only.
    assert result["confirmation"]["status"] == "done"
    assert result["baseline"]["gpu"] in (0, 1)


@pytest.mark.e2e
def test_interrupted_parallel_tune_resumes_without_repeating(tmp_path: Path) -> None:
    env = _env(tmp_path)
    first = subprocess.Popen(TUNE + WORKLOAD + SEARCH, cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=ctrl_c_default)
    assert first.stderr is not None
    seen: list[str] = []
    finished = 0
    for line in first.stderr:
        seen.append(line)
        finished += line.lstrip().startswith("trial ") and ": " in line
        # once one trial has finished and two others run, one on each GPU
        if finished >= 1 and sum(ln.startswith("[") for ln in seen) >= 3:
            first.send_signal(signal.SIGINT)
            break
    _, rest = first.communicate(timeout=120)
    assert first.returncode == 130, "".join(seen) + rest
    second = subprocess.run(TUNE + WORKLOAD + SEARCH + ["--output", "r.json"], cwd=tmp_path,
                            env=env, text=True, capture_output=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    trials = result["trials"]
    done = [t for t in trials if t["state"] in DONE]
    keys = [json.dumps(t["params"], sort_keys=True) for t in done]
    assert len(keys) == len(set(keys)) == 4, [(t["number"], t["params"], t["state"],
                                                t["retry_of"]) for t in trials]
    interrupted = [t for t in trials if t["state"] == "interrupted"]
    assert interrupted, "a running trial should have been cut off"
    for cut in interrupted:
        retry = [t for t in trials if t["retry_of"] == cut["number"]]
        assert len(retry) == 1 and retry[0]["params"] == cut["params"]
        assert retry[0]["state"] in DONE
    # No trial that finished in the first run ran again in the second.
    first_done = {ln.split(":")[0].split()[-1] for ln in seen + rest.splitlines()
                  if ln.startswith("      trial ")}
    assert not any(f"      trial {n}: " in second.stderr for n in first_done)


def _platform(kind: str = "cuda", count: int = 2) -> Platform:
    return Platform(kind=kind, torch="2.11.0+cu130", cuda="13.0", device="NVIDIA H200",
                    arch="sm_90", cpu_count=16, device_count=count)


def _tuner(gpus: tuple[int, ...], env: dict[str, str], platform: Platform,
           testing: bool = False) -> Tuner:
    spec = BenchSpec(model="tinycnn", device="cuda")
    options = TuneOptions(spec=spec, gpus=gpus, allow_test_knobs=testing)
    tuner = Tuner(options, env, probe=lambda *_: platform)
    tuner.ctx.platform = platform
    return tuner


def test_each_trial_sees_only_its_gpu() -> None:
    tuner = _tuner((0, 1), {}, _platform())
    assert tuner.runner.gpu_env(None) == {}
    assert tuner.runner.gpu_env(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    # With a visible-devices list already set, --gpus counts within it, as torch does.
    tuner = _tuner((0, 1), {"CUDA_VISIBLE_DEVICES": "4,6"}, _platform())
    assert tuner.runner.gpu_env(0) == {"CUDA_VISIBLE_DEVICES": "4"}
    assert tuner.runner.gpu_env(1) == {"CUDA_VISIBLE_DEVICES": "6"}
    rocm = Platform(kind="rocm", torch="2.9.1+rocm7.2", hip="7.2", device_count=8)
    tuner = _tuner((3,), {"HIP_VISIBLE_DEVICES": "0,2,4,6"}, rocm)
    assert tuner.runner.gpu_env(3) == {"HIP_VISIBLE_DEVICES": "6"}
    tuner = _tuner((1,), {}, rocm)
    assert tuner.runner.gpu_env(1) == {"HIP_VISIBLE_DEVICES": "1"}


def test_gpus_outside_what_torch_sees_are_refused() -> None:
    with pytest.raises(TuneError, match=r"^--gpus 0,2: torch sees 2 GPU\(s\), numbered 0 to 1$"):
        _tuner((0, 2), {}, _platform()).run()
    with pytest.raises(TuneError, match="^--gpus needs a GPU: this tune runs on the CPU$"):
        _tuner((0, 1), {}, Platform(kind="cpu", torch="2.13.0+cpu")).run()


def test_gpu_list_parsing() -> None:
    assert parse_gpus("0,1, 3") == (0, 1, 3)
    assert parse_gpus(None) == ()
    with pytest.raises(ValueError, match="not 'x'"):
        parse_gpus("0,x")
    with pytest.raises(ValueError, match="names a GPU twice"):
        parse_gpus("1,1")


@pytest.mark.e2e
def test_max_trials_holds_with_two_gpus(tmp_path: Path) -> None:
    args = [a for a in SEARCH if a != "5m"]
    args[args.index("--budget")] = "--max-trials"
    args.insert(args.index("--max-trials") + 1, "3")
    done = subprocess.run(TUNE + WORKLOAD + args + ["--budget", "5m", "--output", "r.json"],
                          cwd=tmp_path, env=_env(tmp_path), text=True, capture_output=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert len([t for t in result["trials"] if t["state"] in DONE]) == 3
    assert "[4/3]" not in done.stderr


def test_a_failing_gpu_thread_stops_the_others() -> None:
    import threading
    import time

    tuner = _tuner((0, 1), {}, _platform())
    seen: list[int] = []

    def search_on(gpu: int | None) -> None:
        seen.append(int(gpu or 0))
        if gpu == 1:
            raise OSError("the GPU fell off the bus")
        while not tuner.ctx.cancel.wait(0.05):
            pass

    tuner.search.stop_reason = lambda: None  # type: ignore[method-assign]
    tuner.search._optimize = search_on  # type: ignore[method-assign]
    tuner.ctx.study = type("S", (), {"_pop_waiting_trial_id": lambda self: None})()
    start = time.monotonic()
    with pytest.raises(OSError, match="fell off the bus"):
        tuner.search.run()
    assert tuner.ctx.cancel.is_set() and sorted(seen) == [0, 1]
    assert time.monotonic() - start < 10
    for thread in threading.enumerate():  # each has ended its loop; let it leave
        if thread.name.startswith("tune-gpu"):
            thread.join(5)
    assert not [t for t in threading.enumerate() if t.name.startswith("tune-gpu")]


@pytest.mark.parametrize("gpus", [(0, 1), ()], ids=["two-gpus", "one"])
def test_ctrl_c_waits_for_every_thread_to_record_its_trial(
        gpus: tuple[int, ...], monkeypatch: pytest.MonkeyPatch, ctrl_c: None) -> None:
    """Ctrl-C reaches the main thread while it waits for the search threads. Up to CPython
    3.12 a Ctrl-C landing in Thread.join() marks the joined thread as ended while it still
    runs (python/cpython#90882): the tune then stopped at once, and the trial that thread
    was recording stayed RUNNING."""
    import threading

    from rocmdoctor.tuners import study as sd

    tuner = _tuner(gpus, {}, _platform())
    recorded: list[int | None] = []

    def search_on(gpu: int | None) -> None:
        tuner.ctx.cancel.wait(30)
        time.sleep(0.5)  # killing the child and recording the trial as interrupted
        recorded.append(gpu)

    tuner.search.stop_reason = lambda: None  # type: ignore[method-assign]
    tuner.search._optimize = search_on  # type: ignore[method-assign]
    tuner.ctx.study = type("S", (), {"_pop_waiting_trial_id": lambda self: None})()
    released: list[str] = []
    monkeypatch.setattr(sd, "release", lambda study, owner: released.append(owner))
    press = threading.Timer(0.6, os.kill, (os.getpid(), signal.SIGINT))
    press.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tuner.search.run()
    finally:  # a test that fails early must not let the Ctrl-C land in the next one
        press.cancel()
    assert sorted(recorded, key=str) == sorted(gpus or (None,), key=str)
    assert released == [tuner.search.owner]


def test_cancel_kills_a_running_child_and_raises_ctrl_c() -> None:
    import threading
    import time

    from rocmdoctor.tuners.bench.child import _LIVE, run_bench_child

    cancel = threading.Event()
    spec = BenchSpec(model="tinycnn", device="cpu", batch_size=8, image_size=16,
                     steps=100_000, warmup=1)
    threading.Timer(3.0, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_bench_child(spec, timeout_s=120, cancel=cancel)
    assert time.monotonic() - start < 30
    assert not _LIVE  # no child left behind


def _running_and_interrupted(cache: Path) -> tuple[list[int], list[int]]:
    import sqlite3

    (db,) = cache.glob("**/*.db")
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute(
            "select t.number, t.state, a.value_json from trials t left join "
            "trial_user_attributes a on a.trial_id = t.trial_id and a.key = 'state'").fetchall()
    return ([n for n, state, _ in rows if state == "RUNNING"],
            [n for n, state, attr in rows if state == "FAIL" and attr == '"interrupted"'])


@pytest.mark.e2e
@pytest.mark.parametrize("gpus", [["--gpus", "0,1"], []], ids=["two-gpus", "one"])
def test_ctrl_c_twice_leaves_no_trial_running(tmp_path: Path, gpus: list[str]) -> None:
    """Ctrl-C pressed twice in a terminal (SIGINT to the whole process group, twice): the
    second must not cut short the recording of the trials the first one stopped; a trial
    left RUNNING would look to the next tune like one another tune still runs."""
    search = [a for a in SEARCH if a not in ("--gpus", "0,1")] + gpus
    tune = subprocess.Popen(TUNE + WORKLOAD + search, cwd=tmp_path, env=_env(tmp_path),
                            text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=ctrl_c_default)
    assert tune.stderr is not None
    started = 0
    for line in tune.stderr:
        started += line.startswith("[")
        if started == (2 if gpus else 1):  # the trials are running
            time.sleep(0.5)
            os.killpg(tune.pid, signal.SIGINT)
            time.sleep(0.05)
            os.killpg(tune.pid, signal.SIGINT)
            break
    tune.communicate(timeout=120)
    assert tune.returncode == 130
    running, interrupted = _running_and_interrupted(tmp_path / "cache")
    assert running == []
    assert len(interrupted) == (2 if gpus else 1)


def test_a_trial_that_ended_but_is_still_listed_running_counts_once() -> None:
    """A trial records its end in the study a moment before its thread takes it off the
    running set: counted twice, the next trial's place ("[4/4]") and --max-trials were off."""
    tuner = _tuner((0, 1), {}, _platform())
    ended = {"channels_last": "on", "batch_size": "8"}
    other = {"channels_last": "off", "batch_size": "16"}
    tuner.search.running = {json.dumps(ended, sort_keys=True),
                            json.dumps(other, sort_keys=True)}
    done = [Trial(number=0, params={"channels_last": "off", "batch_size": "8"}, state="ok"),
            Trial(number=1, params=ended, state="ok")]
    assert tuner.search.claimed(done) == 3


def test_the_grid_sampler_learns_of_an_ended_trial_under_the_suggest_lock() -> None:
    tuner = _tuner((0, 1), {}, _platform())
    held: list[bool] = []
    sampler = type("Sampler", (), {
        "after_trial": lambda self, *args: held.append(tuner.search.lock.locked())})()
    tuner._lock_sampler(sampler)  # type: ignore[arg-type]
    sampler.after_trial(None, None, None, None)
    assert held == [True] and not tuner.search.lock.locked()


def test_ctrl_c_inside_a_deferred_step_is_raised_once_the_step_is_done(ctrl_c: None) -> None:
    import threading

    from rocmdoctor.tuners.search import ctrl_c_deferred as _ctrl_c_deferred

    before = signal.getsignal(signal.SIGINT)
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with _ctrl_c_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler has run by now; the step goes on
            steps.append("whole")
    assert steps == ["whole"] and signal.getsignal(signal.SIGINT) is before
    with _ctrl_c_deferred():  # no Ctrl-C: nothing raised
        steps.append("quiet")
    elsewhere: list[BaseException] = []

    def off_main() -> None:  # signals reach the main thread only: nothing to hold there
        try:
            with _ctrl_c_deferred():
                steps.append("thread")
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            elsewhere.append(exc)

    thread = threading.Thread(target=off_main)
    thread.start()
    thread.join()
    assert steps == ["whole", "quiet", "thread"] and not elsewhere


def _start_until_a_trial_runs(tmp_path: Path) -> subprocess.Popen[str]:
    search = [a for a in SEARCH if a not in ("--gpus", "0,1")]
    tune = subprocess.Popen(TUNE + WORKLOAD + search, cwd=tmp_path, env=_env(tmp_path),
                            text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert tune.stderr is not None
    for line in tune.stderr:
        if line.startswith("["):  # a trial's child is starting
            time.sleep(1.5)
            return tune
    raise AssertionError("no trial started")


def _workers_of(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@pytest.mark.e2e
@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"),
                                                   (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_and_sighup_stop_like_ctrl_c(tmp_path: Path, sig: int, code: int,
                                             name: str) -> None:
    """scancel and `timeout` send SIGTERM, a closed SSH session SIGHUP: the running trial is
    recorded and queued again, no child is left, and the exit code says which signal."""
    import psutil

    tune = _start_until_a_trial_runs(tmp_path)
    children = [psutil.Process(p) for p in _workers_of(tune.pid)]
    assert children, "the trial's worker is running"
    tune.send_signal(sig)
    _, err = tune.communicate(timeout=120)
    assert tune.returncode == code
    assert (f"rocmdoctor tune: stopped by {name}; finished trials are saved in the study, run "
            "the same command to continue") in err
    running, interrupted = _running_and_interrupted(tmp_path / "cache")
    assert running == [] and len(interrupted) == 1
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


@pytest.mark.e2e
def test_a_killed_tune_leaves_no_worker_behind(tmp_path: Path) -> None:
    """kill -9 gives the tune no chance to clean up: its workers die with it (the parent-death
    signal), instead of holding the GPU until their own timeout."""
    import psutil

    tune = _start_until_a_trial_runs(tmp_path)
    children = [psutil.Process(p) for p in _workers_of(tune.pid)]
    assert children
    tune.kill()
    tune.wait(timeout=30)
    gone, alive = psutil.wait_procs(children, timeout=15)
    assert alive == [], [p.cmdline() for p in alive]
