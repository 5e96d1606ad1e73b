"""Pure parts of the benchmark: spec, statistics, power parsing, peaks, OOM text, max batch."""

from __future__ import annotations

import math
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.cli.bench import parse_settings
from rocmdoctor.kb.peaks import peak_for
from rocmdoctor.tuners.bench import metrics, power
from rocmdoctor.tuners.bench.child import TrialOutcome, _classify, _parse_event
from rocmdoctor.tuners.bench.maxbatch import find_max_batch, probe_spec
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.bench.worker import is_oom, is_oom_text
from tests.helpers import fixture_text

# --- spec -------------------------------------------------------------------------------


def test_spec_round_trips_through_json_dict() -> None:
    spec = BenchSpec(model="vit_b_16", batch_size=128, precision="bf16", channels_last=True,
                     settings={"cudnn_benchmark": True, "num_threads": 4})
    again = BenchSpec.from_dict(spec.to_dict())
    assert again == spec
    assert spec.problems() == []


def test_spec_rejects_unknown_fields_and_reports_every_problem() -> None:
    with pytest.raises(ValueError, match="unknown spec field.s.: colour"):
        BenchSpec.from_dict({"model": "resnet50", "colour": "red"})
    spec = BenchSpec(model="alexnet", batch_size=0, warmup=0, device="tpu",
                     settings={"num_threads": "4", "compile_mode": "fastest"})
    assert spec.problems() == [
        "unknown model 'alexnet' (built-in: resnet50, vit_b_16, gpt2, tinycnn; or a workload "
        "factory as 'pkg.module:factory')",
        "unknown device 'tpu' (one of auto, cuda, cpu)",
        "batch_size must be a positive integer, not 0",
        "warmup must be at least 1, not 0",
        "setting 'num_threads' must be int, not '4'",
        "setting 'compile_mode' must be one of default, reduce-overhead, max-autotune, "
        "max-autotune-no-cudagraphs",
    ]


def test_cli_settings_are_typed() -> None:
    assert parse_settings(["cudnn_benchmark=on", "num_threads=8", "preferred_blas=hipblaslt"]) \
        == {"cudnn_benchmark": True, "num_threads": 8, "preferred_blas": "hipblaslt"}
    with pytest.raises(ValueError, match="--set 'turbo=1': expected KEY=VALUE"):
        parse_settings(["turbo=1"])
    with pytest.raises(ValueError, match="--set num_threads: 'many' is not an integer"):
        parse_settings(["num_threads=many"])


# --- statistics -------------------------------------------------------------------------


def test_percentiles_interpolate_like_numpy() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert metrics.percentile(values, 50) == 2.5
    assert metrics.percentile(values, 10) == pytest.approx(1.3)
    assert metrics.percentile(values, 100) == 4.0
    with pytest.raises(ValueError):
        metrics.percentile([], 50)


def test_step_stats() -> None:
    stats = metrics.step_stats([0.1, 0.1, 0.2, 0.1], samples_per_step=10)
    assert stats["throughput"]["median"] == 100.0
    assert stats["throughput"]["mean"] == pytest.approx(40 / 0.5)
    assert stats["throughput"]["p10"] == pytest.approx(65.0)
    assert stats["step_time_s"]["p50"] == 0.1
    assert stats["step_time_s"]["max"] == 0.2
    assert stats["step_time_s"]["cv"] == pytest.approx(0.04330127 / 0.125)
    assert metrics.noise_warning(stats) == (
        "step times are noisy: IQR is 25% of the median (more than 10%); use more --steps "
        "or a quieter machine")
    assert metrics.noise_warning(metrics.step_stats([0.1] * 5, 1)) is None
    with pytest.raises(ValueError):
        metrics.step_stats([0.1, 0.0], 1)
    assert stats["throughput"]["basis"] == "median"
    assert metrics.headline(stats["throughput"]) == 100.0


def test_a_loader_that_stalls_every_few_steps_is_judged_by_its_mean() -> None:
    # the shape of a real H200 run reading JPEGs: most steps fast, one in four waits for a
    # batch; the median step hides the stalls, the mean is what training gets
    step_s = [0.13, 0.13, 0.13, 1.0] * 5
    data = metrics.step_stats(step_s, samples_per_step=1024, basis="mean")
    assert data["throughput"]["median"] == pytest.approx(1024 / 0.13)
    assert metrics.headline(data["throughput"]) == data["throughput"]["mean"] == \
        pytest.approx(1024 * 20 / 6.95)
    # a result written before the basis was recorded is read by its median, and a missing
    # or non-numeric figure is no throughput at all
    old = {k: v for k, v in data["throughput"].items() if k != "basis"}
    assert metrics.headline(old) == pytest.approx(1024 / 0.13)
    assert metrics.headline({"basis": "mean", "median": 5.0}) is None
    assert metrics.headline(None) is None


def test_window_sizes_partition_the_steps() -> None:
    assert metrics.window_sizes(50) == [10] * 5
    assert metrics.window_sizes(7) == [2, 2, 1, 1, 1]
    assert metrics.window_sizes(3) == [1, 1, 1]


# --- power ------------------------------------------------------------------------------


def test_power_summary_integrates_and_prefers_a_plausible_counter() -> None:
    samples = [(0.0, 100.0, 50.0), (1.0, 300.0, 100.0), (2.0, 200.0, None)]
    s = power.summarize(samples, counter_j=None, span_s=2.0, samples_measured=100,
                        source="hwmon", reason=None)
    assert (s["avg_w"], s["peak_w"], s["energy_j"]) == (225.0, 300.0, 450.0)
    assert s["energy_per_sample_j"] == 4.5
    assert (s["util_avg_pct"], s["util_peak_pct"]) == (75.0, 100.0)
    assert s["energy_source"] == "integrated power samples"
    counted = power.summarize(samples, counter_j=460.0, span_s=2.0, samples_measured=100,
                              source="nvml", reason=None)
    assert counted["energy_j"] == 460.0 and counted["energy_source"] == "hardware energy counter"
    wild = power.summarize(samples, counter_j=9000.0, span_s=2.0, samples_measured=100,
                           source="amdsmi", reason=None)
    assert wild["energy_j"] == 450.0  # a counter 20x off the samples is not believed


def test_power_degrades_to_null_fields_with_the_reason() -> None:
    sampler = power.PowerSampler(None, reasons=["nvml: ModuleNotFoundError: No module named "
                                                "'pynvml'"])
    sampler.start()
    s = sampler.stop(samples_measured=10)
    assert s["avg_w"] is None and s["energy_per_sample_j"] is None and s["samples"] == 0
    assert s["reason"] == "nvml: ModuleNotFoundError: No module named 'pynvml'"
    source, reasons = power.open_source("nvidia", 0, uuid="58e0a1b2")
    if source is None:  # this machine has neither pynvml nor nvidia-smi
        assert [r.split(":")[0] for r in reasons] == ["nvml", "nvidia-smi"]


def test_rocm_smi_json_both_key_generations() -> None:
    # key names from ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py (showPower, showUse)
    text = ('{"card0": {"Average Graphics Package Power (W)": "92.0", "GPU use (%)": "27"}, '
            '"card1": {"Current Socket Graphics Package Power (W)": "133.0", '
            '"Max Graphics Package Power (W)": "750.0", "GPU use (%)": "0"}, '
            '"system": {"Driver version": "6.7.0"}}')
    assert power.parse_rocm_smi_json(text) == {"card0": (92.0, 27.0), "card1": (133.0, 0.0)}
    assert power.parse_rocm_smi_json("WARNING: no JSON data\n") == {}


def test_nvidia_smi_and_hwmon_values() -> None:
    assert power.parse_nvidia_smi_line("612.34, 98\n") == (612.34, 98.0)
    assert power.parse_nvidia_smi_line("[N/A], [N/A]") == (None, None)
    assert power.parse_microwatts("35000000\n") == 35.0
    assert power.parse_microwatts("") is None


@given(st.text())
def test_power_parsers_never_raise(text: str) -> None:
    power.parse_rocm_smi_json(text)
    power.parse_nvidia_smi_line(text)
    power.parse_microwatts(text)
    _parse_event(text)
    is_oom_text(text)


@given(st.recursive(st.none() | st.booleans() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=3), max_leaves=12))
def test_rocm_smi_parser_survives_any_json(value: object) -> None:
    import json

    out = power.parse_rocm_smi_json(json.dumps(value))
    for watts, util in out.values():
        assert watts is None or math.isfinite(watts)
        assert util is None or math.isfinite(util)


def test_a_result_survives_a_hang_at_exit() -> None:
    result = {"metrics": {"unit": "images", "throughput": {"median": 1234.5}}}
    final = {"event": "result", "result": result}
    assert _classify(BenchSpec(), final, "", -9, "", 60.0, exit_hung=True) == (
        "ok", result, "1,234.5 images/s; the process hung at exit and was killed")
    assert _classify(BenchSpec(), None, "", -6, "", 60.0)[2] == (
        "the benchmark process was killed by SIGABRT")
    assert _classify(BenchSpec(), None, "", 1, "", 60.0)[2] == (
        "the benchmark process exited with code 1")


# --- out of memory ----------------------------------------------------------------------


def test_real_hip_oom_message_is_recognised() -> None:
    text = fixture_text("errors-hip-out-of-memory-gfx1151-strix-halo-15gib-cap-vs-96gib-vram.txt")
    first = text.splitlines()[0]
    assert first.startswith("torch.OutOfMemoryError: HIP out of memory.")
    assert is_oom_text(first)

    class OutOfMemoryError(RuntimeError):  # the name torch uses, without importing torch
        pass

    assert is_oom(OutOfMemoryError("x")) and is_oom(MemoryError())
    assert not is_oom(RuntimeError("HIP error: invalid device function"))


# --- peaks ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "precision", "tflops", "dtype"), [
    ("AMD Instinct MI300X", "bf16", 1307.4, "bf16"),
    ("AMD Instinct MI250X / MI250", "fp16", 191.5, "fp16"),
    ("AMD Radeon RX 7900 XTX", "tf32", 61.4, "fp32"),
    ("NVIDIA H200", "tf32", 494.7, "tf32"),
    ("NVIDIA H100 80GB HBM3", "fp32", 66.9, "fp32"),
    ("NVIDIA A100-SXM4-80GB", "fp16", 312.0, "fp16"),
    ("NVIDIA GeForce RTX 4090", "bf16", 165.2, "bf16"),
])
def test_peak_lookup(name: str, precision: str, tflops: float, dtype: str) -> None:
    found = peak_for(name, precision)
    assert (found.tflops, found.dtype) == (tflops, dtype)
    assert found.peak is not None and found.peak.source.startswith("https://")


def test_peak_lookup_misses_say_why() -> None:
    assert peak_for("NVIDIA H100 PCIe", "bf16").reason == (
        "no peak figure for 'NVIDIA H100 PCIe' in rocmdoctor.kb.peaks")
    assert peak_for("AMD Instinct MI210", "tf32").reason == (
        "AMD Instinct MI210 has no TF32 units; the FP32 peak is used")


# --- largest batch ----------------------------------------------------------------------


def _fake_runner(limit: Optional[int], probes: list[BenchSpec], crash_at: int = 0):  # type: ignore[no-untyped-def]
    def run(spec: BenchSpec) -> TrialOutcome:
        probes.append(spec)
        if crash_at and spec.batch_size >= crash_at:
            return TrialOutcome("crashed", None, "killed by SIGSEGV", "", -11, 1.0)
        fits = limit is None or spec.batch_size <= limit
        return TrialOutcome("ok" if fits else "oom", {} if fits else None,
                            "" if fits else f"out of memory at batch {spec.batch_size}", "",
                            0 if fits else 3, 1.0)

    return run


def test_max_batch_doubles_then_bisects() -> None:
    probes: list[BenchSpec] = []
    found = find_max_batch(BenchSpec(batch_size=64), _fake_runner(200, probes))
    assert found.probes == [(64, "ok"), (128, "ok"), (256, "oom"), (192, "ok"), (224, "oom"),
                            (208, "oom"), (200, "ok")]
    # bisection stops within lo // 16 (about 6 %): 200 fits, 208 does not
    assert (found.largest_fit, found.first_oom) == (200, 208)
    assert found.message() == "largest batch that fits: 200 (batch 208 runs out of memory)"
    assert all(p.steps == 1 and p.warmup == 1 and p.settings["extras"] is False
               for p in probes)


def test_max_batch_halves_when_the_first_does_not_fit() -> None:
    found = find_max_batch(BenchSpec(batch_size=64), _fake_runner(20, []), only_down=True)
    assert found.probes == [(64, "oom"), (32, "oom"), (16, "ok")]
    assert (found.largest_fit, found.first_oom) == (16, 32)
    nothing = find_max_batch(BenchSpec(batch_size=4), _fake_runner(0, []))
    assert nothing.largest_fit is None
    assert nothing.message() == "even batch 1 does not fit in memory"


def test_max_batch_stops_on_a_crash_and_at_the_limit() -> None:
    crashed = find_max_batch(BenchSpec(batch_size=8), _fake_runner(None, [], crash_at=32))
    assert crashed.probes == [(8, "ok"), (16, "ok"), (32, "crashed")]
    assert crashed.message() == "probe at batch 32 crashed: killed by SIGSEGV"
    capped = find_max_batch(BenchSpec(batch_size=8), _fake_runner(None, []), limit=20)
    assert capped.probes == [(8, "ok"), (16, "ok"), (20, "ok")]
    assert capped.message() == "batch 20 fits (the search limit; no out-of-memory seen)"
    assert probe_spec(BenchSpec(settings={"seed": 3}), 5).settings == {"seed": 3,
                                                                       "extras": False}


def test_float_settings_are_converted() -> None:
    """`--set power_hz=20` and `--set min_warmup_s=0.5` are documented float settings."""
    assert parse_settings(["power_hz=20", "min_warmup_s=0.5"]) == {"power_hz": 20.0,
                                                                   "min_warmup_s": 0.5}
    with pytest.raises(ValueError, match="--set power_hz: 'fast' is not a number"):
        parse_settings(["power_hz=fast"])
    with pytest.raises(ValueError, match="--set min_warmup_s: 'inf' is not a finite number"):
        parse_settings(["min_warmup_s=inf"])


MEMINFO = """MemTotal:       24683584 kB
MemFree:        19021344 kB
MemAvailable:   23112028 kB
Buffers:          310240 kB
"""


@pytest.mark.parametrize("cgroup_max, cgroup_current, expected", [
    (None, None, 100 * 2**20 + int(23112028 * 1024 * 0.9)),  # no cgroup v2 files
    ("max\n", "123\n", 100 * 2**20 + int(23112028 * 1024 * 0.9)),  # cgroup without a limit
    ("8589934592\n", "4294967296\n", 100 * 2**20 + int(4 * 2**30 * 0.9)),  # 4 GiB left
    ("8589934592\n", "9999999999\n", 100 * 2**20),  # over its limit already: nothing more
])
def test_a_cpu_run_may_take_what_is_free_to_it(cgroup_max: Optional[str],
                                              cgroup_current: Optional[str],
                                              expected: int) -> None:
    from rocmdoctor.tuners.bench.host_memory import host_memory_limit

    assert host_memory_limit(MEMINFO, cgroup_max, cgroup_current, 100 * 2**20) == expected


@given(st.text(), st.one_of(st.none(), st.text()), st.one_of(st.none(), st.text()))
def test_the_memory_limit_never_raises(meminfo: str, cg_max: Optional[str],
                                       cg_cur: Optional[str]) -> None:
    from rocmdoctor.tuners.bench.host_memory import host_memory_limit

    limit = host_memory_limit(meminfo, cg_max, cg_cur, None)
    assert limit is None or limit >= 0


@pytest.mark.parametrize("text", ["MemAvailable: ²³ kB", "MemAvailable: " + "9" * 5000 + " kB"])
def test_the_memory_limit_reads_odd_numbers_as_unknown(text: str) -> None:
    from rocmdoctor.tuners.bench.host_memory import host_memory_limit

    assert host_memory_limit(text, "9" * 5000, "²", None) is None
