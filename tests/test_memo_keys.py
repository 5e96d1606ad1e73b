"""Every memoised reader that takes an argument besides its Host keys its memo by that argument
(issue 28): on one host, two calls that differ in any argument get their own answers."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from rocmdoctor import schemas
from rocmdoctor.facts.amd_smi import amd_smi
from rocmdoctor.facts.deep import deep_run
from rocmdoctor.facts.rocm_root import discover_rocm
from rocmdoctor.facts.topology import (
    parse_amd_smi_topology,
    parse_nvidia_topo,
    read_topology,
)
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.snapshot import SnapshotHost
from tests.deep_runs import DEEP_KEY, command
from tests.helpers import fixture_text, host_of, make_snapshot

H100_TOPO = "nvidia-smi-topo-m-h100-x8-nv18-nic-gpu-numa-id-misaligned-columns.txt"
MI355X_TOPO = "amd-smi-topology-mi355x-x8-xgmi-weight0-rocm7.0.2.txt"


def test_topology_is_read_per_platform() -> None:
    nvidia, amd = fixture_text(H100_TOPO), fixture_text(MI355X_TOPO)
    host = SnapshotHost(make_snapshot(commands={"nvidia-smi topo -m": nvidia,
                                                "amd-smi topology": amd}), strict=True)
    assert read_topology(host, "cuda") == parse_nvidia_topo(nvidia)
    assert read_topology(host, "rocm") == parse_amd_smi_topology(amd)
    assert read_topology(host, "cpu") is None
    assert read_topology(host, "cuda") == parse_nvidia_topo(nvidia)


def _amd_smi_entry(part: str) -> dict[str, Any]:
    return {"gpu": 0, part: {"asked": part}}


def test_amd_smi_is_read_per_set_of_subcommands() -> None:
    commands = {f"amd-smi {part} --json": json.dumps([_amd_smi_entry(part)])
                for part in ("static", "metric", "firmware")}
    host = SnapshotHost(make_snapshot(commands=commands), strict=True)
    static = amd_smi(host, ("static",))
    metric = amd_smi(host, ("metric",))
    both = amd_smi(host, ("static", "metric"))
    assert [g.static for g in static.gpus] == [_amd_smi_entry("static")]
    assert [g.metric for g in static.gpus] == [{}]
    assert [g.static for g in metric.gpus] == [{}]
    assert [g.metric for g in metric.gpus] == [_amd_smi_entry("metric")]
    assert [(g.static, g.metric) for g in both.gpus] == [
        (_amd_smi_entry("static"), _amd_smi_entry("metric"))]


def test_rocm_discovery_is_kept_apart_with_and_without_the_probe() -> None:
    # A torch that bundles its ROCm and no system ROCm: only the probe finds it.
    location = "/home/u/venv/lib/python3.10/site-packages/torch"
    version = "2.3.0.dev20240126+rocm6.0"
    probe = {"executable": "/home/u/venv/bin/python", "version": "3.10.12",
             "packages": {"torch": version},
             "torch": {"imported": True, "version": version, "hip": "6.0.32830-d62f6a171",
                       "cuda": None, "location": location, "bundles_rocm": True}}
    host = host_of(paths={"/sys/module/amdgpu": {"type": "dir"}}, python=probe)
    without = discover_rocm(host, with_python=False)
    with_probe = discover_rocm(host, with_python=True)
    assert without.root is None
    assert with_probe.root is not None and with_probe.root.path == f"{location}/lib"
    assert discover_rocm(host, with_python=False).root is None


def test_the_measured_run_is_read_per_stress_length() -> None:
    quick = {"schema": schemas.DEEP, "level": "quick"}
    long = {"schema": schemas.DEEP, "level": "stress", "stress_s": 30}
    host = SnapshotHost(make_snapshot(commands={
        DEEP_KEY: command(quick), f"{DEEP_KEY} --stress 30": command(long)}))
    host.deep_stress_s = 0.0
    first = deep_run(host)
    host.deep_stress_s = 30.0
    second = deep_run(host)
    assert (first.level, first.stress_s, second.level, second.stress_s) == (
        "quick", 0.0, "stress", 30.0)
    host.deep_stress_s = 0.0
    assert deep_run(host) == first


@pytest.mark.live
def test_live_commands_are_memoised_per_argument_list_not_per_joined_text() -> None:
    host = LiveHost()
    split = host.run([sys.executable, "-c", "import sys; print(sys.argv[1:])", "a", "b"])
    joined = host.run([sys.executable, "-c", "import sys; print(sys.argv[1:])", "a b"])
    assert split.stdout.strip() == "['a', 'b']"
    assert joined.stdout.strip() == "['a b']"


def test_the_two_nvidia_smi_readers_keep_their_own_answers_in_either_order() -> None:
    """`nvidia_gpus` (the query) and `nvidia_smi_q` (`nvidia-smi -q`) are memoised on one host
    under keys of their own: reading one first does not change what the other answers."""
    import gzip

    from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
    from rocmdoctor.facts.nvidia_smi_q import QUERY, nvidia_smi_q, parse_nvidia_smi_q
    h200 = "nvidia-smi-q-h200-kvm-guest-gen5-x16-host-max-na-ecc-enabled-driver580.159.txt"
    with gzip.open("tests/fixtures/h200-snapshot.json.gz", "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    data["commands"][" ".join(QUERY)] = {"returncode": 0, "stdout": fixture_text(h200),
                                         "stderr": "", "timed_out": False, "duration_s": 0.1}

    def pair(first: str) -> tuple[Any, Any]:
        host = SnapshotHost(json.loads(json.dumps(data)))
        if first == "q":
            q = nvidia_smi_q(host)
            return nvidia_gpus(host), q
        return nvidia_gpus(host), nvidia_smi_q(host)

    gpus, q = pair("gpus")
    assert (gpus, q) == pair("q")
    assert [g.name for g in gpus.gpus] == ["NVIDIA H200"] and gpus.error is None
    assert q.gpus == tuple(parse_nvidia_smi_q(fixture_text(h200))) and len(q.gpus) == 1


def test_nvidia_smi_that_times_out_or_is_missing_is_said_so() -> None:
    from rocmdoctor.facts.nvidia_gpus import QUERY_FIELDS, nvidia_gpus, query_argv
    from rocmdoctor.host import command_key
    key = command_key(query_argv(QUERY_FIELDS))
    hung = {"returncode": -9, "stdout": "", "stderr": "", "timed_out": True, "duration_s": 10.0}
    got = nvidia_gpus(SnapshotHost(make_snapshot(commands={key: hung})))
    assert (got.gpus, got.error, got.command) == ((), "nvidia-smi did not answer", key)
    missing = SnapshotHost(make_snapshot(), absent=[key])
    assert nvidia_gpus(missing).error == "nvidia-smi is not installed"
