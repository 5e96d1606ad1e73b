"""What the mutation run of seed 29 (docs/testing.md) found no test for: each test below
fails on the change that survived, and passes on the code as it is."""

from __future__ import annotations

import time
from typing import Any

import pytest

from rocmdoctor.explain import explain_text
from rocmdoctor.host.base import _magic
from rocmdoctor.tuners.codec import batch_search_dict, batch_search_from
from rocmdoctor.tuners.model import BatchSearch
from tests.deep_runs import deep_report, h200_host, recorded, result_of, variant
from tests.helpers import host_of


def test_a_file_systems_magic_number_keeps_its_32_bits() -> None:
    # statfs reports f_type as a C long: a negative value is the same 32 bits sign-extended,
    # a hex string is read as written; beyond 64 bits or below a 32-bit long it is no number
    assert _magic(0x6969) == 0x6969
    assert _magic(-1) == 0xFFFFFFFF and _magic(-(2**31)) == 0x80000000
    assert _magic(-(2**31) - 1) is None
    assert _magic("0xFFFFFFFF") == 0xFFFFFFFF and _magic("0x1FFFFFFFF") == 0xFFFFFFFF
    assert _magic("0x" + "f" * 17) is None and _magic(True) is None and _magic("nfs") is None


def test_a_checks_duration_is_the_time_it_took() -> None:
    from rocmdoctor.model import Check, Status
    from rocmdoctor.runner import run_checks

    class Slow(Check):
        id = "slow-test"
        title = "a check that takes 50 ms"

        def run(self, host: Any) -> Any:
            time.sleep(0.05)
            return self.result(Status.PASS, "done")

    [result] = run_checks(host_of(), [Slow()]).results
    assert 40 <= result.duration_ms < 5000


def _memory_names(size: int) -> list[str]:
    run = variant(recorded("h200-quick.json"))
    run["gpus"][0]["memory"]["bytes"] = size
    found = result_of(deep_report(h200_host(run)), "memory-bandwidth")
    return [f.name for f in found.figures]


def test_the_memory_figures_name_their_buffers_in_the_unit_that_fits() -> None:
    assert _memory_names(1 << 30) == ["device-to-device copy of 1 GiB buffers",
                                      "triad a = b + s*c of 1 GiB buffers"]
    assert _memory_names(4 << 20) == ["device-to-device copy of 4 MiB buffers",
                                      "triad a = b + s*c of 4 MiB buffers"]


def test_the_process_torch_lists_holding_what_torch_allocated_is_this_one() -> None:
    # torch's message lists every process on the GPU; the one holding about what PyTorch
    # allocated (up to 2 GiB more: the context) is the process that raised it
    base = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 23.64 GiB of which 1.06 GiB is free. Process 4242 has {} "
            "memory in use. Of the allocated memory 20.10 GiB is allocated by PyTorch, and "
            "1.20 GiB is reserved by PyTorch but unallocated.")
    own = explain_text(base.format("21.50 GiB"), None)[0].notes
    assert not any("Process 4242" in n for n in own)
    other = explain_text(base.format("23.00 GiB"), None)[0].notes
    assert ("Process 4242 holds 23.00 GiB on this GPU: if that is another program, stop it or "
            "use another GPU.") in other


def test_a_batch_search_keeps_how_its_sizes_were_chosen() -> None:
    search = BatchSearch(sizes=(64, 128), how="doublings of yours up to the largest that fits")
    assert batch_search_from(batch_search_dict(search)).how == search.how
    assert batch_search_from({}).how == "not planned"


def test_an_unknown_local_version_is_no_clash_of_variants() -> None:
    from rocmdoctor.checks.torchvision_match import variants_clash

    # a source build's "+git1234" says nothing of its variant: no clash is claimed
    assert variants_clash("git1234", "rocm6.2") is False
    assert variants_clash("rocm6.2", "git1234") is False
    assert variants_clash("rocm6.2", "cu121") is True


def test_rocm_path_names_a_root_only_where_that_folder_exists() -> None:
    from rocmdoctor.facts.platform import rocm_roots

    there = host_of(env={"ROCM_PATH": "/opt/rocm-6.2.0/"}, dirs={"/opt/rocm-6.2.0": []})
    assert "/opt/rocm-6.2.0" in rocm_roots(there)
    gone = host_of(env={"ROCM_PATH": "/opt/rocm-6.2.0"})
    assert "/opt/rocm-6.2.0" not in rocm_roots(gone)


@pytest.mark.live
def test_a_snapshot_replays_the_files_the_live_run_read(tmp_path: Any) -> None:
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.host.snapshot import SnapshotHost, build_snapshot

    release = tmp_path / "os-release"
    release.write_text('NAME="Test Linux"\n', encoding="utf-8")
    live = LiveHost(probe=lambda: {}, environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert live.read_file(str(release)) == 'NAME="Test Linux"\n'
    data = build_snapshot(live, redact=False)
    assert data["files"][str(release)] == 'NAME="Test Linux"\n'
    assert SnapshotHost(data).read_file(str(release)) == 'NAME="Test Linux"\n'


def test_the_ld_library_path_left_keeps_every_other_folder_in_order() -> None:
    from types import SimpleNamespace

    from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch
    from rocmdoctor.facts.libload import LibLoad

    torch = SimpleNamespace(bundles_rocm=True)
    load = LibLoad(ran=True, failure=None, torch_lib="/site/torch/lib",
                   ld_library_path=("/usr/local/lib", "/opt/rocm/lib/", "/opt/x lib"))
    assert TorchRocmMatch._shadowed(torch, load, "/opt/rocm/lib/libamdhip64.so.6") == (
        "/opt/rocm/lib/", "export LD_LIBRARY_PATH='/usr/local/lib:/opt/x lib'")
    alone = LibLoad(ran=True, failure=None, ld_library_path=("/opt/rocm/lib",))
    assert TorchRocmMatch._shadowed(torch, alone, "/opt/rocm/lib/libamdhip64.so.6") == (
        "/opt/rocm/lib", "unset LD_LIBRARY_PATH")


def test_the_full_deep_plan_measures_more_than_the_tiny_one_everywhere() -> None:
    from rocmdoctor.host.deep_child import FULL, TINY

    def numbers(plan: Any, where: str = "") -> dict[str, float]:
        out: dict[str, float] = {}
        for key, value in plan.items():
            if isinstance(value, dict):
                out.update(numbers(value, f"{where}{key}."))
            else:
                out[where + key] = value
        return out

    full, tiny = numbers(FULL), numbers(TINY)
    assert full.keys() == tiny.keys()
    for key in full:
        if key != "shape_scale":  # the tiny plan divides the reference shapes by it
            assert full[key] >= tiny[key] > 0, key
    assert FULL["memory"] == 1 << 30  # the 1 GiB buffers docs/benchmarks.md's figures name


def test_an_optimizer_implementation_outside_its_choices_is_a_problem() -> None:
    from rocmdoctor.tuners.bench.spec import BenchSpec

    assert BenchSpec(settings={"optimizer_impl": "fused"}).problems() == []
    assert BenchSpec(settings={"optimizer_impl": "turbo"}).problems() == [
        "setting 'optimizer_impl' must be one of for-loop, foreach, fused"]


def test_the_result_records_the_hip_queue_count(monkeypatch: Any) -> None:
    # GPU_MAX_HW_QUEUES (ROCm's HIP runtime) changes how kernels are queued: a result keeps it
    pytest.importorskip("torch")
    from rocmdoctor.tuners.bench.environment import knob_env

    monkeypatch.setenv("GPU_MAX_HW_QUEUES", "2")
    monkeypatch.setenv("GPU_OTHER_THING", "1")
    env = knob_env()
    assert env["GPU_MAX_HW_QUEUES"] == "2" and "GPU_OTHER_THING" not in env


def test_a_child_stopped_by_its_caller_is_recorded_as_pruned() -> None:
    from rocmdoctor.tuners.bench.child import _classify
    from rocmdoctor.tuners.bench.spec import BenchSpec

    assert _classify(BenchSpec(), {"index": 1}, "pruned", -15, "", 60.0) == (
        "pruned", None, "stopped by the caller after measured window 2")


def test_the_deep_child_records_every_variable_the_verdicts_name() -> None:
    # the child sends only ENV_NAMES back; a verdict reading any other name never sees it set
    from rocmdoctor.checks.conv_rate import MIOPEN_VARS
    from rocmdoctor.host.deep_child import ENV_NAMES
    from rocmdoctor.kb import deep_rules

    named = set(MIOPEN_VARS) | {c.name for c in deep_rules.ENV_CAUSES}
    assert named <= set(ENV_NAMES), sorted(named - set(ENV_NAMES))


def test_a_paste_names_the_system_libraries_it_shows() -> None:
    from rocmdoctor.explain.paste import read_facts

    text = ("ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not "
            "found (required by /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch.so)")
    assert "libstdc++" in read_facts(text).values("library", None)
    tinfo = "/bin/bash: /opt/conda/lib/libtinfo.so.6: no version information available"
    assert "libtinfo" in read_facts(tinfo).values("library", None)


def test_a_data_parallel_spec_runs_the_launcher_module_that_exists() -> None:
    import importlib.util

    from rocmdoctor.tuners.bench.child import worker_argv
    from rocmdoctor.tuners.bench.spec import BenchSpec

    worker = "rocmdoctor.tuners.bench.worker"
    cases = ((BenchSpec(nproc=2), "rocmdoctor.tuners.bench.ddp_launch"), (BenchSpec(), worker),
             (None, worker))
    for spec, module in cases:
        argv = worker_argv("/usr/bin/python3", spec)
        assert argv == ["/usr/bin/python3", "-m", module]
        assert importlib.util.find_spec(module) is not None


def test_every_image_model_takes_real_data() -> None:
    from rocmdoctor.tuners.bench.spec import BenchSpec

    for model in ("resnet50", "vit_b_16", "tinycnn"):
        assert BenchSpec(model=model, data="/data/images").problems() == [], model
    assert BenchSpec(model="gpt2", data="/data/images").problems() == [
        "--data takes images: it works with the image models (resnet50, vit_b_16, tinycnn), "
        "not gpt2"]


def test_the_stress_runs_telemetry_is_read_apart_from_the_quick_levels() -> None:
    from rocmdoctor.facts.deep_results import Telemetry

    load = {"samples": 120, "clock_mhz": {"median": 1455.0, "p95": 1470.0, "min": 1410.0},
            "power_w": {"median": 690.0, "max": 701.0}, "temperature_c": {"max": 71.0}}
    read = Telemetry.parse({"source": "nvml", "under_load": load, "stress": load})
    assert read.stress is not None and read.stress == read.under_load
    assert (read.stress.samples, read.stress.clock_median, read.stress.power_max) == (
        120, 1455.0, 701.0)
    assert Telemetry.parse({"source": "nvml", "under_load": load}).stress is None


def test_an_nvidia_machine_without_rocm_smi_reports_only_nvidia_smi() -> None:
    import gzip
    import json

    from rocmdoctor.facts.collect_env import gather
    from rocmdoctor.host.snapshot import SnapshotHost

    with gzip.open("tests/fixtures/h200-snapshot.json.gz", "rt", encoding="utf-8") as fh:
        h200 = SnapshotHost(json.load(fh))
    assert [s.title for s in gather(h200).smi] == ["nvidia-smi"]


@pytest.mark.live
def test_a_huge_file_is_read_up_to_4_mib(tmp_path: Any) -> None:
    # /proc and /sys files are small; a log that is not stops at 4 MiB, the snapshot's share
    from rocmdoctor.host.live import LiveHost

    huge = tmp_path / "huge.log"
    huge.write_bytes(b"x" * (5 << 20))
    small = tmp_path / "small.log"
    small.write_bytes(b"y" * ((4 << 20) - 1))
    live = LiveHost(probe=lambda: {}, environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert len(live.read_file(str(huge)) or "") == 4 << 20
    assert len(live.read_file(str(small)) or "") == (4 << 20) - 1
