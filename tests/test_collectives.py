"""`rocmdoctor check --collectives` on the CPU: real ranks (gloo), a rank that dies, one that
hangs."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from rocmdoctor.checks.collectives import Collectives
from rocmdoctor.host.live import COLLECTIVES_SCRIPT, LiveHost
from rocmdoctor.model import CheckResult, Fix, Status

SIZES = "65536,1048576"


def _live(**extra: str) -> LiveHost:
    env = dict(os.environ, ROCMDOCTOR_TESTING="1", ROCMDOCTOR_COLL_CPU_RANKS="3",
               ROCMDOCTOR_COLL_SIZES=SIZES, ROCMDOCTOR_COLL_DEADLINE="30")
    env.update(extra)
    return LiveHost(environ=env)


def _run(host: Any) -> CheckResult:
    check = Collectives()
    assert check.applies(host) is None
    return check.run(host)


@pytest.mark.e2e
def test_three_gloo_ranks_measure_all_reduce() -> None:
    result = _run(_live())
    assert result.status == Status.PASS, result
    assert result.summary.startswith("3 ranks (gloo): all-reduce of 1 MiB at ")
    assert result.summary.endswith(" GB/s bus bandwidth")
    (sweep,) = result.findings
    assert sweep.severity.value == "info"
    assert sweep.text.startswith("all-reduce bus bandwidth by message size: 64 KiB ")
    assert ", 1 MiB " in sweep.text


@pytest.mark.e2e
def test_a_rank_that_dies_is_named() -> None:
    result = _run(_live(ROCMDOCTOR_COLL_FAULT="1:die@allreduce"))
    assert result.status == Status.FAIL
    assert result.summary == ("rank 1 failed first: exited with code 7 in stage "
                              "'all-reduce correctness'")
    texts = [f.text for f in result.findings]
    # each rank's end, then the last line of its stderr (rank 1 died silently)
    assert len(texts) == 5
    assert texts[0].startswith("rank 0: crashed: exited with code 1 in stage 'all-reduce "
                               "correctness': ")
    assert texts[1].startswith("rank 0 stderr: ")
    assert texts[2] == "rank 1: crashed: exited with code 7 in stage 'all-reduce correctness'"
    assert texts[3].startswith("rank 2: crashed: exited with code 1 in stage ")
    assert texts[4].startswith("rank 2 stderr: ")
    assert result.fix == Fix(text="Rerun with gloo's log on and read the first error it prints.",
                             commands=("NCCL_DEBUG=INFO rocmdoctor check --collectives --only "
                                       "collectives -v",))


@pytest.mark.e2e
def test_a_rank_that_hangs_is_cut_off_and_named() -> None:
    result = _run(_live(ROCMDOCTOR_COLL_FAULT="1:hang@import", ROCMDOCTOR_COLL_DEADLINE="12"))
    assert result.status == Status.FAIL
    assert result.summary == ("3 of 3 ranks hung and were killed: ranks 0, 2 in "
                              "'init_process_group'; rank 1 in 'import torch'")
    assert [f.text for f in result.findings] == [
        "rank 0: hung: no result within 12 s; it was in stage 'init_process_group' and was "
        "killed",
        "rank 1: hung: no result within 12 s; it was in stage 'import torch' and was killed",
        "rank 2: hung: no result within 12 s; it was in stage 'init_process_group' and was "
        "killed",
    ]


def test_launcher_usage_errors_are_one_line() -> None:
    done = subprocess.run([sys.executable, COLLECTIVES_SCRIPT, "--nprocs", "2",
                           "--sizes", "1M"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "error: --sizes takes byte counts separated by commas, not '1M'")


# --- replay of a real run on two H200s (NVLink NV18), `snapshot --collectives` there -------
H200X2 = os.path.join(os.path.dirname(__file__), "fixtures", "h200x2-snapshot.json.gz")
H200X2_SWEEP = ("all-reduce bus bandwidth by message size: 1 MiB 33.2 GB/s, 8 MiB 175.7 GB/s, "
                "64 MiB 267.2 GB/s, 256 MiB 297.4 GB/s")
NV18 = ("NV18: NVLink 4, 18 links x 25 GB/s per direction (NVIDIA H200: 18 links, 900 GB/s "
        "bidirectional per GPU; NV18 is the bond between this pair, all 18 when the GPUs meet "
        "through NVSwitch)")
NVLS = ("NCCL_NVLS_ENABLE=0: turns off NVLink SHARP (in-switch reductions on NVSwitch "
        "systems); all-reduce uses the plain NVLink paths")


def _replay(**env: str) -> CheckResult:
    from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot

    data = load_snapshot(H200X2)
    data["env"].update(env)
    return _run(SnapshotHost(data))


def test_real_h200_pair_passes_against_nvlink() -> None:
    result = _replay()
    assert (result.status, result.summary, result.fix) == (
        Status.PASS, "2 ranks (NCCL): all-reduce of 256 MiB at 297.4 GB/s bus bandwidth, 66% "
        "of the 450.0 GB/s per direction of NV18", None)
    assert [(f.severity.value, f.text) for f in result.findings] == [
        ("info", NVLS), ("info", H200X2_SWEEP), ("info", NV18),
        ("info", "peer-to-peer copies: 0->1 384.2 GB/s, 1->0 385.0 GB/s")]


def test_a_variable_that_disables_p2p_is_flagged_with_its_fix() -> None:
    result = _replay(NCCL_P2P_DISABLE="1")
    assert result.status == Status.WARN
    assert result.summary.endswith("of NV18; NCCL_P2P_DISABLE set: fast paths disabled")
    assert (result.findings[0].severity.value, result.findings[0].text) == (
        "error", "NCCL_P2P_DISABLE=1: disables direct GPU-to-GPU transfers over NVLink / xGMI "
        "/ PCIe: traffic goes through host memory")
    assert result.fix == Fix(text="Unset the variables that disable NCCL's fast paths, then "
                             "measure again.", commands=("unset NCCL_P2P_DISABLE",))
    assert result.source == "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"


def test_collectives_is_opt_in() -> None:
    from rocmdoctor.checks.registry import all_checks

    assert "collectives" not in [c.id for c in all_checks()]
    assert [c.id for c in all_checks(opt_in=True)][-1] == "collectives"


def _replay_run(change: Any) -> CheckResult:
    """The real two-H200 run with its launcher output changed by `change`."""
    import json

    from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot

    data = load_snapshot(H200X2)
    key = next(k for k in data["commands"] if k.startswith("rocmdoctor-collectives "))
    run = json.loads(data["commands"][key]["stdout"])
    change(run)
    data["commands"][key]["stdout"] = json.dumps(run) + "\n"
    return _run(SnapshotHost(data))


def test_peer_access_off_on_an_nvlink_pair_is_flagged() -> None:
    def no_access(run: dict[str, Any]) -> None:
        for pair in run["p2p"]:
            pair["access"] = False

    result = _replay_run(no_access)
    assert result.status == Status.WARN
    assert result.summary.endswith(
        "of NV18; GPUs 0 and 1 are linked by NVLINK but peer access is off, so copies go "
        "through host memory (see https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
        "troubleshooting.html#pci-access-control-services-acs)")
    assert result.findings[3].text == ("peer-to-peer copies: 0->1 384.2 GB/s (no peer access), "
                                       "1->0 385.0 GB/s (no peer access)")


def test_an_all_reduce_far_below_the_link_is_flagged() -> None:
    def slow(run: dict[str, Any]) -> None:
        for size in run["allreduce"]:
            size["busbw_gbs"] /= 5

    result = _replay_run(slow)
    assert result.status == Status.WARN
    assert result.summary == ("2 ranks (NCCL): all-reduce of 256 MiB at 59.5 GB/s bus bandwidth, "
                              "13% of the 450.0 GB/s per direction of NV18; all-reduce bus "
                              "bandwidth is 13% of what the slowest link (NV18) carries")
    assert result.fix is not None and result.fix.commands == ()


def test_a_pair_far_slower_than_its_peers_is_named() -> None:
    from rocmdoctor.checks.collectives import _pair_problems
    from rocmdoctor.facts.topology import Link, Topology

    nv = Link(kind="nvlink", label="NV18", count=18)
    topo = Topology(source="nvidia-smi topo -m", gpus=4,
                    links={(i, j): nv for i in range(4) for j in range(i + 1, 4)}, numa={},
                    raw="")
    pairs = [{"src": i, "dst": j, "access": True, "gbs": 380.0}
             for i in range(4) for j in range(4) if i != j]
    pairs[4]["gbs"] = 90.0  # 1 -> 2
    findings: list[Any] = []
    assert _pair_problems(pairs, topo, findings) == [
        "GPUs 1 and 2 copy at 90.0 GB/s, under half the 380.0 GB/s of the other pairs"]
    assert findings[0].text.startswith("peer-to-peer copies: 0->1 380.0 GB/s, 0->2 380.0 GB/s")


@pytest.mark.e2e
def test_report_and_check_include_it_when_asked() -> None:
    row = ("| collectives | ✅ pass | 2 ranks (NCCL): all-reduce of 256 MiB at 297.4 GB/s bus "
           "bandwidth, 66% of the 450.0 GB/s per direction of NV18 |")
    base = [sys.executable, "-m", "rocmdoctor"]
    report = subprocess.run(base + ["report", "--from", H200X2, "--collectives"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and row in report.stdout.splitlines()
    plain = subprocess.run(base + ["report", "--from", H200X2], capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode == 0 and "| collectives |" not in plain.stdout
    check = subprocess.run(base + ["check", "--from", H200X2, "--only", "collectives"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0
    # --only runs the prerequisites too: torch-device, and the torch and driver checks it
    # needs (the AMD ones, and the container check before /dev/kfd, skip on this NVIDIA
    # machine, which is not a container).
    ids = [line.split()[1] for line in check.stdout.splitlines() if line.startswith("[")]
    assert ids == ["amdgpu-driver", "container", "kfd-access", "torch-install", "torch-device",
                   "nvidia-driver", "collectives"]
    assert check.stdout.splitlines()[-1] == "4 passed, 0 warnings, 0 failed, 3 skipped, 0 errors"


def test_a_snapshot_without_the_run_skips_it_and_skip_needs_no_flag() -> None:
    from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot

    data = load_snapshot(H200X2)
    data["commands"] = {k: v for k, v in data["commands"].items()
                        if not k.startswith("rocmdoctor-collectives ")}
    result = _run(SnapshotHost(data))
    assert (result.status, result.summary) == (
        Status.SKIP, "no collectives run recorded here (take the snapshot with `rocmdoctor "
        "snapshot --collectives`)")
    done = subprocess.run([sys.executable, "-m", "rocmdoctor", "check", "--from", H200X2,
                           "--skip", "collectives"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "collectives" not in done.stdout


@pytest.mark.e2e
def test_a_rank_that_hangs_only_at_exit_still_counts() -> None:
    result = _run(_live(ROCMDOCTOR_COLL_FAULT="1:hang@exit", ROCMDOCTOR_COLL_DEADLINE="15"))
    assert result.status == Status.PASS, result
    assert result.summary.startswith("3 ranks (gloo): all-reduce of 1 MiB at ")


@pytest.mark.e2e
def test_the_ranks_go_when_rocmdoctor_goes(tmp_path: Any) -> None:
    """Ctrl-C on `check --collectives` ends rocmdoctor; the launcher, left an orphan, stops
    its ranks at once instead of at its deadline."""
    import json
    import time

    out = tmp_path / "launch.json"
    env = dict(os.environ, ROCMDOCTOR_TESTING="1", ROCMDOCTOR_COLL_FAULT="0:hang@import,"
               "1:hang@import")
    start = time.monotonic()
    subprocess.run([sys.executable, "-c",
                    "import subprocess, sys; subprocess.Popen([sys.executable, sys.argv[1], "
                    "'--nprocs', '2', '--backend', 'gloo', '--timeout', '120'], "
                    "stdout=open(sys.argv[2], 'w')); import time; time.sleep(3)",
                    COLLECTIVES_SCRIPT, str(out)],
                   env=env, timeout=30, check=True)
    while time.monotonic() - start < 60 and not out.read_text().strip():
        time.sleep(0.2)
    result = json.loads(out.read_text())
    assert time.monotonic() - start < 30
    assert [r["state"] for r in result["ranks"]] == ["stopped", "stopped"]


@pytest.mark.e2e
def test_peer_copies_run_after_the_ranks_and_their_failure_is_shown() -> None:
    """The copy phase's process, after the ranks (on the CPU it finds no GPU pair)."""
    import json

    env = dict(os.environ, ROCMDOCTOR_TESTING="1", ROCMDOCTOR_COLL_P2P="1")
    argv = [sys.executable, COLLECTIVES_SCRIPT, "--nprocs", "2", "--backend", "gloo",
            "--timeout", "60", "--sizes", "65536"]
    clean = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True,
                                      timeout=120, check=True).stdout)
    assert (clean["ok"], clean["p2p"], clean["p2p_error"]) == (True, [], None)
    env["ROCMDOCTOR_COLL_FAULT"] = "0:die@p2p"
    broken = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True,
                                       timeout=120, check=True).stdout)
    assert broken["ok"] is True and broken["p2p"] == []
    assert broken["p2p_error"] == "exited with code 7 in stage 'import torch'"
    result = _run(_live(ROCMDOCTOR_COLL_P2P="1", ROCMDOCTOR_COLL_FAULT="0:die@p2p"))
    assert result.status == Status.PASS
    assert result.findings[-1].text == ("peer-to-peer copies not measured: exited with code 7 "
                                        "in stage 'import torch'")


def test_the_launcher_writes_the_collectives_format_rocmdoctor_names() -> None:
    from rocmdoctor import schemas
    from rocmdoctor.host import collectives_launch

    assert collectives_launch.SCHEMA == schemas.COLLECTIVES


def test_a_sweep_from_below_one_mib_names_its_sizes_in_kib() -> None:
    def small_first(run: dict[str, Any]) -> None:
        run["allreduce"].insert(0, {"bytes": 65536, "time_s": 2.9e-05, "algbw_gbs": 2.26,
                                    "busbw_gbs": 2.26})

    result = _replay_run(small_first)
    prefix = "all-reduce bus bandwidth by message size: "
    assert H200X2_SWEEP.startswith(prefix)
    assert result.findings[1].text == prefix + "64 KiB 2.3 GB/s, " + H200X2_SWEEP[len(prefix):]
    assert result.summary == _replay().summary


def test_ranks_hung_in_different_stages_are_named_by_stage() -> None:
    def hung(run: dict[str, Any]) -> None:
        for rank, stage in zip(run["ranks"], ("init_process_group", "import torch")):
            rank.update(state="hung", stage=stage, message=f"no progress in stage '{stage}'",
                        ended_s=None, returncode=None)

    result = _replay_run(hung)
    assert (result.status, result.summary) == (
        Status.FAIL, "2 of 2 ranks hung and were killed: rank 0 in 'init_process_group'; rank 1 "
        "in 'import torch'")
    assert [f.text for f in result.findings[1:]] == [
        "rank 0: hung: no progress in stage 'init_process_group'",
        "rank 1: hung: no progress in stage 'import torch'"]
    assert result.fix == Fix(text="Rerun with NCCL's log on and read the first error it prints.",
                             commands=("NCCL_DEBUG=INFO rocmdoctor check --collectives --only "
                                       "collectives -v",))


def test_lines_before_the_launchers_result_are_passed_over() -> None:
    from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot

    data = load_snapshot(H200X2)
    key = next(k for k in data["commands"] if k.startswith("rocmdoctor-collectives "))
    data["commands"][key]["stdout"] = ("W1201 12:00:00.000000 torch/distributed/run.py:793] "
                                       "Setting OMP_NUM_THREADS to 1\n"
                                       + data["commands"][key]["stdout"])
    assert _run(SnapshotHost(data)) == _replay()


def test_the_launcher_times_the_sizes_the_docs_name_by_default(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/checks.md: all-reduces of 1, 8, 64 and 256 MiB; `--sizes` replaces them."""
    from rocmdoctor.host import collectives_launch
    asked: list[tuple[Any, ...]] = []
    monkeypatch.setattr(collectives_launch, "launch",
                        lambda *args: asked.append(args) or {"ok": True})
    assert collectives_launch.main(["--nprocs", "2"]) == 0
    assert collectives_launch.main(["--nprocs", "1", "--backend", "gloo", "--sizes", "4096,"]) == 0
    mib = 1024 * 1024
    assert asked == [(2, "nccl", 60.0, (mib, 8 * mib, 64 * mib, 256 * mib)),
                     (1, "gloo", 60.0, (4096,))]
    assert capsys.readouterr().out == '{"ok": true}\n{"ok": true}\n'
