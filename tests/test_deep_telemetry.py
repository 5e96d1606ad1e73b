"""The deep child's telemetry readers, statistics and parsers: NVML and amdsmi through stand-in
modules (the calls the readers make, with a GPU's answers), sysfs texts, and the deep result's
parser on arbitrary JSON."""

from __future__ import annotations

import sys
import types
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rocmdoctor.facts.deep import parse_run
from rocmdoctor.host import deep_kernels, deep_telemetry
from rocmdoctor.host.deep_telemetry import (
    NvmlReader,
    SimulatedThrottle,
    decode_reasons,
    open_reader,
    parse_smi_line,
    summarize_samples,
)


def _fake_nvml(mask: int = 0x4) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
    m.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]
    m.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1  # type: ignore[attr-defined]
    m.NVML_MEMORY_ERROR_TYPE_CORRECTED = 0  # type: ignore[attr-defined]
    m.NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1  # type: ignore[attr-defined]
    m.NVML_VOLATILE_ECC = 0  # type: ignore[attr-defined]
    calls: dict[str, Any] = {
        "nvmlInit": lambda: None, "nvmlShutdown": lambda: None,
        "nvmlDeviceGetHandleByUUID": lambda uid: ("handle", uid),
        "nvmlDeviceGetClockInfo": lambda h, kind: 1755,
        "nvmlDeviceGetMaxClockInfo": lambda h, kind: 1980,
        "nvmlDeviceGetPowerUsage": lambda h: 689_412,
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700_000,
        "nvmlDeviceGetPowerManagementDefaultLimit": lambda h: 700_000,
        "nvmlDeviceGetTemperature": lambda h, kind: 66,
        "nvmlDeviceGetTemperatureThreshold": lambda h, kind: 87,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: mask,
        "nvmlDeviceGetPerformanceState": lambda h: 0,
        "nvmlDeviceGetTotalEccErrors": lambda h, kind, counter: 2 if kind == 0 else 0,
        "nvmlDeviceGetPcieReplayCounter": lambda h: 7,
        "nvmlDeviceGetNvLinkState": lambda h, link: 1 if link < 2 else 0,
        "nvmlDeviceGetNvLinkErrorCounter": lambda h, link, code: link * 10 + code,
    }
    for name, fn in calls.items():
        setattr(m, name, fn)
    return m


def test_nvml_reader_reads_clocks_power_reasons_and_counters(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(0x4 | 0x40))
    reader = NvmlReader("5a1d-uuid", 0)
    assert reader.handle == ("handle", "GPU-5a1d-uuid")
    assert reader.static() == {"max_clock_mhz": 1980.0, "power_limit_w": 700.0,
                               "default_power_limit_w": 700.0, "slowdown_temp_c": 87.0}
    assert reader.sample() == {"clock_mhz": 1755.0, "power_w": 689.412, "temperature_c": 66.0,
                               "reasons": ["SW Power Cap", "HW Thermal Slowdown"],
                               "pstate": "P0"}
    assert reader.counters() == {
        "ecc_uncorrected": 0, "ecc_corrected": 2, "pcie_replays": 7,
        "links": {"0": {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3},
                  "1": {"replay": 10, "recovery": 11, "crc_flit": 12, "crc_data": 13}}}


def test_nvidia_readers_fall_back_in_order_and_say_why(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    monkeypatch.setattr(deep_telemetry.NvidiaSmiReader, "_query", lambda self: {})
    reader, reasons = open_reader("nvidia", 0, None, "0000:00:06.0", {})
    assert reader.name == "none"
    assert reasons == ["nvml: ModuleNotFoundError: import of pynvml halted; None in sys.modules",
                       "nvidia-smi: RuntimeError: nvidia-smi reported no SM clock"]


def test_the_throttle_switch_is_honoured_only_in_tests() -> None:
    reader, reasons = open_reader("nvidia", 0, None, None, {
        "ROCMDOCTOR_TESTING": "1", "ROCMDOCTOR_DEEP_TELEMETRY": "throttled"})
    assert isinstance(reader, SimulatedThrottle) and reasons == []
    reader, _ = open_reader("cpu", 0, None, None, {"ROCMDOCTOR_DEEP_TELEMETRY": "throttled"})
    assert not isinstance(reader, SimulatedThrottle)


def _fake_amdsmi() -> types.ModuleType:
    m = types.ModuleType("amdsmi")
    m.AmdSmiClkType = types.SimpleNamespace(GFX="GFX")  # type: ignore[attr-defined]
    m.AmdSmiTemperatureType = types.SimpleNamespace(  # type: ignore[attr-defined]
        HOTSPOT="HOTSPOT", EDGE="EDGE")
    m.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT="CURRENT")  # type: ignore[attr-defined]
    calls: dict[str, Any] = {
        "amdsmi_init": lambda: None, "amdsmi_shut_down": lambda: None,
        "amdsmi_get_processor_handle_from_bdf": lambda bdf: ("h", bdf),
        "amdsmi_get_clock_info": lambda h, kind: {"clk": 1702, "max_clk": 2100, "min_clk": 500},
        "amdsmi_get_power_info": lambda h: {"current_socket_power": 738,
                                            "average_socket_power": "N/A", "power_limit": 750},
        "amdsmi_get_temp_metric": lambda h, kind, metric: 79 if kind == "HOTSPOT" else 61,
        "amdsmi_get_gpu_perf_level": lambda h: "AMDSMI_DEV_PERF_LEVEL_AUTO",
        "amdsmi_get_gpu_metrics_info": lambda h: {"throttle_status": 0},
        "amdsmi_get_gpu_total_ecc_count": lambda h: {"correctable_count": 3,
                                                     "uncorrectable_count": 0},
        "amdsmi_gpu_xgmi_error_status": lambda h: "AmdSmiXgmiStatus.NO_ERROR",
    }
    for name, fn in calls.items():
        setattr(m, name, fn)
    return m


def test_amdsmi_reader(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", _fake_amdsmi())
    monkeypatch.syspath_prepend(deep_telemetry.os.path.dirname(deep_telemetry.__file__))
    reader, reasons = open_reader("amd", 0, None, "0000:0c:00.0", {})
    assert reader.name == "amdsmi" and reasons == []
    assert reader.static() == {"max_clock_mhz": 2100.0, "power_limit_w": 750.0,
                               "perf_level": "auto"}
    assert reader.sample() == {"clock_mhz": 1702.0, "power_w": 738.0, "temperature_c": 79.0,
                               "reasons": []}
    assert reader.counters() == {"ecc_uncorrected": 0, "ecc_corrected": 3,
                                 "xgmi_error": "NO_ERROR"}


def test_sysfs_texts() -> None:
    sys.path.append(deep_telemetry.os.path.dirname(deep_telemetry.__file__))
    import deep_telemetry_amd as amd

    assert amd.parse_dpm("0: 500Mhz\n1: 1800Mhz\n2: 2482Mhz *\n") == (2482.0, 2482.0)
    assert amd.parse_dpm("0: 500Mhz *\n1: 2500Mhz\n") == (500.0, 2500.0)
    assert amd.parse_dpm("") == (None, None)
    assert amd.parse_ras_count("ue: 2\nce: 17\n") == (2, 17)
    assert amd.parse_ras_count("garbage") == (None, None)


def test_nvidia_smi_line() -> None:
    assert parse_smi_line("1755, 1980, 689.41, 700.00, 700.00, 66, 0x0000000000000004") == {
        "clock_mhz": 1755.0, "max_clock_mhz": 1980.0, "power_w": 689.41,
        "power_limit_w": 700.0, "default_power_limit_w": 700.0, "temperature_c": 66.0,
        "reasons": ["SW Power Cap"]}
    assert parse_smi_line("[N/A], 1980, [N/A], 700, 700, 66, [N/A]")["clock_mhz"] is None
    assert parse_smi_line("too, few") == {}


def test_reasons_decode_bit_by_bit() -> None:
    assert decode_reasons(0) == []
    assert decode_reasons(0x1 | 0x8 | 0x80) == ["Idle", "HW Slowdown", "HW Power Brake Slowdown"]


def test_a_phase_summary_counts_only_its_samples() -> None:
    samples = [{"phase": "gemm", "clock_mhz": c, "power_w": 600.0, "temperature_c": 60.0 + i,
                "reasons": ["SW Power Cap"] if i % 2 else []} for i, c in
               enumerate([1980.0, 1950.0, 1965.0, 1900.0])]
    samples.append({"phase": "", "clock_mhz": 345.0, "reasons": ["Idle"]})
    summary = summarize_samples(samples, "gemm")
    assert summary == {
        "samples": 4,
        "clock_mhz": {"median": 1957.5, "min": 1900.0, "max": 1980.0, "p95": 1980.0, "n": 4},
        "power_w": {"median": 600.0, "min": 600.0, "max": 600.0, "p95": 600.0, "n": 4},
        "temperature_c": {"median": 61.5, "min": 60.0, "max": 63.0, "p95": 63.0, "n": 4},
        "reasons": {"SW Power Cap": 0.5}, "pstates": []}


def test_stats_and_cpulists() -> None:
    assert deep_kernels.stats([3.0, 1.0, 2.0, float("nan"), -1.0], "GB/s") == {
        "unit": "GB/s", "median": 2.0, "min": 1.0, "max": 3.0, "spread_pct": 100.0, "n": 3,
        "samples": [3.0, 1.0, 2.0]}
    assert deep_kernels.stats([], "us")["median"] is None
    assert deep_kernels.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert deep_kernels.parse_cpulist("x,-,3") == [3]


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["gpus", "gemm", "conv", "memory", "host_link", "telemetry", "tflops",
                         "median", "dtype", "stress", "windows", "counters", "env", "p2p",
                         "launch", "queued_us", "numa", "static", "under_load", "reasons",
                         "index", "name", "links", "before", "after"]) | st.text(max_size=6),
        children, max_size=6),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_result_parser_never_raises(data: Any) -> None:
    run = parse_run(data)
    for gpu in run.gpus:
        assert gpu.label.startswith("GPU ")
