"""The measured checks' verdicts on recorded runs (tests/fixtures/deep), replayed through
snapshot hosts of the machines they describe: a healthy H200, MI300X and RX 7900 XTX, and each
deliberately degraded run the tool must catch (TF32 forced off, CUDA_LAUNCH_BLOCKING=1, a
throttled card, a narrow link, memory on the far socket, slow convolutions, stress errors)."""

from __future__ import annotations

import json
from typing import Any

from rocmdoctor.model import Finding, Fix, Status
from rocmdoctor.render.check_json import figure_to_dict
from tests.deep_runs import (
    amd_host,
    command,
    deep_report,
    gemm,
    h200_host,
    recorded,
    result_of,
    scale,
    variant,
)

H200 = "h200-quick.json"
MI300X = "mi300x-quick.json"
RX = "rx7900xtx-quick.json"
MAMF_H100 = ("the MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126 (mamf-finder.py, the mean of "
             "100 runs after 50 warm-ups per shape); the H200 has the H100 SXM's GH100 compute "
             "at the same 700 W; it differs in memory")


def _texts(findings: tuple[Finding, ...]) -> list[tuple[str, str]]:
    return [(f.severity.value, f.text) for f in findings]


def _mi300x(result: dict[str, Any], **files: str) -> Any:
    return amd_host(result, "0000:0c:00.0", "0x74a1", "AMD Instinct MI300X",
                    "gfx942:sramecc+:xnack-", **files)


def _rx(result: dict[str, Any], name: str = "AMD Radeon RX 7900 XTX", arch: str = "gfx1100",
        width: str = "16") -> Any:
    host = amd_host(result, "0000:03:00.0", "0x744c", name, arch, speed="16.0 GT/s PCIe")
    host.data["files"]["/sys/bus/pci/devices/0000:03:00.0/current_link_width"] = width + "\n"
    return host


# --- a healthy H200 -------------------------------------------------------------------------

def test_a_healthy_h200_passes_every_measured_check() -> None:
    report = deep_report(h200_host(recorded(H200)))
    assert [(r.id, r.status.value, r.summary) for r in report.results] == [
        ("deep", "pass", "1 GPU(s) measured in 25 s: GPU 0 NVIDIA H200 (torch 2.11.0+cu130)"),
        ("gemm-rate", "pass", "GPU 0 NVIDIA H200: bf16 781.9 TFLOP/s, 98 % of 794.5 TFLOP/s"),
        ("conv-rate", "pass", "1 GPU(s): bf16 channels_last convolution 413.0 TFLOP/s, 64 % of "
                              "the same-sized GEMM"),
        ("memory-bandwidth", "pass", "GPU 0 NVIDIA H200: device-to-device copy 4,308 GB/s, "
                                     "113 % of what is expected"),
        ("host-link", "pass", "1 GPU(s): host-to-device 55.10 GB/s at the lowest, 115 % of what "
                              "the link is expected to carry"),
        ("clocks-under-load", "pass", "1 GPU(s) held their clocks under load: 1,965 MHz median "
                                      "of 1,980 MHz"),
        ("kernel-launch", "pass", "1 GPU(s): 4.10 us a queued launch"),
        ("gpu-links", "skip", "needs 2 or more GPUs; 1 measured"),
    ]
    assert report.exit_code() == 0


def test_the_h200_gemm_figures_carry_their_references_and_sources() -> None:
    gemm_rate = result_of(deep_report(h200_host(recorded(H200))), "gemm-rate")
    assert _texts(gemm_rate.findings) == [
        ("info", "GPU 0 bf16 GEMM 8192x8192x8192 (cuBLAS): 781.9 TFLOP/s (median of 58 runs, "
                 f"spread 1.4 %); 98 % of 794.5 TFLOP/s, {MAMF_H100}; 79 % of the 989.4 TFLOP/s "
                 "bf16 datasheet peak (NVIDIA H200, dense)"),
        ("info", "GPU 0 fp16 GEMM 8192x8192x8192 (cuBLAS): 779.3 TFLOP/s (median of 10 runs, "
                 "spread 0.9 %); 79 % of the 989.4 TFLOP/s fp16 datasheet peak (NVIDIA H200, "
                 "dense)"),
        ("info", "GPU 0 fp8 GEMM 8192x8192x8192 (cuBLAS): 1,298 TFLOP/s (median of 10 runs, "
                 "spread 0.9 %); 93 % of 1,403 TFLOP/s, the FP8 MAMF of an NVIDIA H100 SXM, "
                 "torch 2.7.0+cu126 (mamf-finder.py, the mean of 100 runs after 50 warm-ups per "
                 "shape); the H200 has the H100 SXM's GH100 compute at the same 700 W; it "
                 "differs in memory; 66 % of the 1,979 TFLOP/s fp8 datasheet peak (NVIDIA H200, "
                 "dense)"),
        ("info", "GPU 0 tf32 GEMM 8192x8192x8192 (cuBLAS): 378.0 TFLOP/s (median of 10 runs, "
                 "spread 0.9 %); 76 % of the 494.7 TFLOP/s tf32 datasheet peak (NVIDIA H200, "
                 "dense)"),
        ("info", "GPU 0 fp32 GEMM 8192x8192x8192 (TF32 off, cuBLAS): 51.35 TFLOP/s (median of 5 "
                 "runs, spread 0.9 %); 77 % of the 66.90 TFLOP/s fp32 datasheet peak (NVIDIA "
                 "H200, dense)"),
        ("info", "GPU 0 bf16 GEMM via cuBLASLt: 783.4 TFLOP/s, 1.00x torch's choice (cuBLAS)"),
    ]
    bf16 = json.loads(json.dumps(figure_to_dict(gemm_rate.figures[0])))
    assert bf16 == {
        "key": "gemm:bf16", "name": "bf16 GEMM 8192x8192x8192 (cuBLAS)", "gpu": 0,
        "value": 781.9281, "unit": "TFLOP/s", "spread_pct": 1.399, "runs": 58,
        "reference": {"value": 794.5, "unit": "TFLOP/s", "what": MAMF_H100,
                      "source": "https://github.com/stas00/ml-engineering/blob/"
                                "b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/"
                                "README.md#maximum-achievable-matmul-flops-comparison-table"},
        "ratio": 0.9842, "verdict": "pass",
        "spec": {"value": 989.4, "unit": "TFLOP/s",
                 "what": "bf16 datasheet peak (NVIDIA H200, dense)",
                 "source": "https://www.nvidia.com/en-us/data-center/h200/"}}
    assert [f.verdict for f in gemm_rate.figures] == ["pass", None, "pass", None, None]


# --- degraded H200 runs ---------------------------------------------------------------------

def test_a_gemm_forced_to_fp32_strict_is_caught() -> None:
    run = variant(recorded(H200))
    run["env"]["NVIDIA_TF32_OVERRIDE"] = "0"
    tf32 = gemm(run, "tf32")["tflops"]
    scale(tf32, 51.6 / tf32["median"])
    result = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: tf32 GEMM 51.60 TFLOP/s, 1.00x the fp32 rate: "
                              "TF32 is not used (NVIDIA_TF32_OVERRIDE=0 is set: it stops cuBLAS "
                              "and cuDNN from using TF32, whatever torch asks)")
    assert result.fix == Fix("Let the libraries use TF32 again: unset the variable where "
                             "training runs.", ("unset NVIDIA_TF32_OVERRIDE",))
    assert result.source == "https://github.com/alibaba/DeepRec/blob/main/docs/docs_en/NVIDIA-TF32.md"
    assert [(f.key, f.verdict) for f in result.figures] == [
        ("gemm:bf16", "pass"), ("gemm:fp16", None), ("gemm:fp8", "pass"), ("gemm:tf32", "warn"),
        ("gemm:fp32", None)]


def test_cuda_launch_blocking_is_caught_by_the_launch_measurement() -> None:
    run = variant(recorded(H200))
    run["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    queued = run["gpus"][0]["launch"]["queued_us"]
    scale(queued, 18.9 / queued["median"])
    result = result_of(deep_report(h200_host(run)), "kernel-launch")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: kernel launches are serialized: 18.90 us a "
                              "launch queued, as slow as one waited for (17.80 us); "
                              "CUDA_LAUNCH_BLOCKING=1 is set")
    assert _texts(result.findings) == [
        ("info", "GPU 0 NVIDIA H200: 18.90 us a launch queued back to back, 17.80 us a launch "
                 "waited for (106 %)"),
        ("hint", "likely cause: CUDA_LAUNCH_BLOCKING=1: it makes every launch wait for the "
                 "kernel before it (https://docs.pytorch.org/docs/stable/"
                 "cuda_environment_variables.html)"),
    ]
    assert result.fix == Fix("Unset the debugging variables where training runs.",
                             ("unset CUDA_LAUNCH_BLOCKING",))


def test_serialized_launches_with_no_variable_name_the_debugger() -> None:
    run = variant(recorded(H200))
    queued = run["gpus"][0]["launch"]["queued_us"]
    scale(queued, 18.9 / queued["median"])
    result = result_of(deep_report(h200_host(run)), "kernel-launch")
    assert result.status is Status.WARN
    assert result.summary.endswith("no serializing variable is set: a debugger or profiler "
                                   "attached (compute-sanitizer, rocprof) does the same")


def _throttled() -> dict[str, Any]:
    run = variant(recorded(H200))
    gpu = run["gpus"][0]
    for entry in gpu["gemm"]:
        scale(entry["tflops"], 0.56)
    tele = gpu["telemetry"]
    tele["static"]["power_limit_w"] = 450.0
    load = tele["under_load"]
    load["clock_mhz"].update(median=1089.0, p95=1110.0, min=1020.0, max=1110.0)
    load["power_w"].update(median=431.0, max=449.0)
    load["temperature_c"]["max"] = 91.0
    load["reasons"] = {"SW Power Cap": 0.97, "HW Thermal Slowdown": 0.62,
                       "SW Thermal Slowdown": 0.81}
    return run


def test_a_throttled_card_fails_its_clocks_and_its_gemm_rate_names_why() -> None:
    report = deep_report(h200_host(_throttled()))
    clocks = result_of(report, "clocks-under-load")
    assert clocks.status is Status.FAIL
    assert clocks.summary == ("GPU 0 NVIDIA H200 was held at 1,089 MHz of 1,980 MHz by HW "
                              "Thermal Slowdown: the hardware lowers the clocks because the GPU "
                              "is too hot")
    assert _texts(clocks.findings) == [
        ("info", "GPU 0 NVIDIA H200 during the bf16 GEMM (64 samples from nvml): clock 1,089 MHz "
                 "median, 1,110 MHz p95 of 1,980 MHz; power 431.0 W median of a 450.0 W limit; "
                 "temperature up to 91 °C; reasons: HW Thermal Slowdown 62 % of the time, SW "
                 "Power Cap 97 % of the time, SW Thermal Slowdown 81 % of the time"),
        ("error", clocks.summary),
        ("hint", "GPU 0 NVIDIA H200 was slowed at 1,089 MHz of 1,980 MHz by SW Thermal Slowdown: "
                 "up to 91 °C, slowdown at 87 °C"),
        ("hint", "GPU 0 NVIDIA H200 was held at 1,089 MHz of 1,980 MHz by its power limit, "
                 "450.0 W of the default 700.0 W"),
    ]
    assert clocks.fix == Fix("Check the cooling and the power supply of this GPU (fans, airflow, "
                             "the server's power brake); the driver's counters say how long it "
                             "was throttled.", ("nvidia-smi -q -d PERFORMANCE",))
    gemm_rate = result_of(report, "gemm-rate")
    assert gemm_rate.status is Status.FAIL
    assert gemm_rate.summary == ("GPU 0 NVIDIA H200: bf16 437.9 TFLOP/s, 55 % of 794.5 TFLOP/s "
                                 "(the MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126)")
    assert _texts(gemm_rate.findings)[-1] == (
        "hint", "likely cause: the card was held down by SW Power Cap, HW Thermal Slowdown, SW "
                "Thermal Slowdown while the GEMMs ran (clocks-under-load)")
    assert gemm_rate.fix == Fix("See clocks-under-load for why the clocks were lowered.",
                                ("rocmdoctor check --deep --only clocks-under-load -v",))


def test_a_lowered_power_limit_alone_is_a_warning_with_the_command_for_an_admin() -> None:
    run = variant(recorded(H200))
    tele = run["gpus"][0]["telemetry"]
    tele["static"]["power_limit_w"] = 500.0
    tele["under_load"]["clock_mhz"].update(median=1605.0, p95=1650.0)
    tele["under_load"]["reasons"] = {"SW Power Cap": 1.0}
    clocks = result_of(deep_report(h200_host(run)), "clocks-under-load")
    assert clocks.status is Status.WARN
    assert clocks.summary == ("GPU 0 NVIDIA H200 was held at 1,605 MHz of 1,980 MHz by its power "
                              "limit, 500.0 W of the default 700.0 W")
    assert clocks.fix == Fix("Ask the administrator to restore the default power limit (this "
                             "tool only reads it).", ("sudo nvidia-smi -i 0000:00:06.0 -pl 700",),
                             needs_root=True)


def test_a_low_rate_with_no_known_cause_says_so() -> None:
    run = variant(recorded(H200))
    scale(gemm(run, "bf16")["tflops"], 0.85)
    result = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: bf16 664.6 TFLOP/s, 84 % of 794.5 TFLOP/s (the "
                              "MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126)")
    assert _texts(result.findings)[-1] == (
        "hint", "no known cause found on this machine: measure again with nothing else on the "
                "GPU, then compare with mamf-finder.py")
    assert result.fix == Fix("Measure again with nothing else running on the GPU; a rate that "
                             "stays low with the clocks at their boost is worth a report to the "
                             "vendor.", ("rocmdoctor check --deep --only gemm-rate -v",))


def test_the_link_is_found_by_nvidia_smi_when_torch_gives_no_pci_address() -> None:
    run = variant(recorded(H200))
    run["gpus"][0]["bus_id"] = None  # a torch whose device properties carry no PCI ids
    result = result_of(deep_report(h200_host(run)), "host-link")
    assert result.status is Status.PASS
    assert result.figures[0].reference is not None
    assert result.figures[0].reference.what == (
        "76 % of 63.02 GB/s, Gen5 x16 (32 GT/s) link, 63.02 GB/s per direction after encoding")


def test_pcie_replays_during_the_run_are_a_warning() -> None:
    run = variant(recorded(H200))
    run["gpus"][0]["counters"]["after"]["pcie_replays"] = 512
    result = result_of(deep_report(h200_host(run)), "host-link")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: 512 PCIe replays during the run, more than the "
                              "160 DCGM allows: a marginal link")
    assert result.fix == Fix("Reseat the card or try another slot or riser; watch the counter "
                             "under load.", ("nvidia-smi -q -d PCIE",))


# --- AMD --------------------------------------------------------------------------------------

def test_an_mi300x_is_judged_against_amds_own_pass_marks() -> None:
    report = deep_report(_mi300x(recorded(MI300X)))
    assert [(r.id, r.status.value) for r in report.results] == [
        ("deep", "pass"), ("gemm-rate", "pass"), ("conv-rate", "pass"),
        ("memory-bandwidth", "pass"), ("host-link", "pass"), ("clocks-under-load", "pass"),
        ("kernel-launch", "pass"), ("gpu-links", "skip")]
    gemm_rate = result_of(report, "gemm-rate")
    assert gemm_rate.summary == "GPU 0 AMD Instinct MI300X: bf16 603.7 TFLOP/s, 104 % of 581.0 TFLOP/s"
    assert gemm_rate.figures[0].reference is not None
    assert gemm_rate.figures[0].reference.source == (
        "https://github.com/ROCm/ROCmValidationSuite/blob/6d2e13f3ffa1d643a915a3b9d20bb631288de8dc/"
        "rvs/conf/MI300X/gst_single.conf")
    conv = result_of(report, "conv-rate")
    assert _texts(conv.findings)[-1] == (
        "info", "MIOpen's find settings: none set (MIOpen's defaults apply) (https://rocm.docs."
                "amd.com/projects/MIOpen/en/latest/how-to/find-and-immediate.html)")


def test_a_slow_mi300x_gemm_names_numa_balancing() -> None:
    run = variant(recorded(MI300X))
    for entry in run["gpus"][0]["gemm"]:
        scale(entry["tflops"], 0.8)
    result = result_of(deep_report(_mi300x(run, **{"/proc/sys/kernel/numa_balancing": "1\n"})),
                       "gemm-rate")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 AMD Instinct MI300X: bf16 482.9 TFLOP/s, 83 % of 581.0 "
                              "TFLOP/s (the ROCm Validation Suite's pass mark for an MI300X bf16 "
                              "GEMM of random data)")
    assert _texts(result.findings)[-1] == (
        "hint", "likely cause: kernel.numa_balancing is 1: AMD's MI300X guide says to turn it off "
                "(https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi300x.html)")
    assert result.fix == Fix("Turn off NUMA auto-balancing.",
                             ("sudo sysctl -w kernel.numa_balancing=0",), needs_root=True)


def test_copies_from_the_far_socket_are_caught() -> None:
    run = variant(recorded(MI300X))
    host_link = run["gpus"][0]["host_link"]
    scale(host_link["h2d"], 30.8 / host_link["h2d"]["median"])
    near, far = json.loads(json.dumps(host_link["d2h"])), json.loads(json.dumps(host_link["d2h"]))
    scale(near, 53.0 / near["median"])
    scale(far, 30.9 / far["median"])
    host_link["numa"] = [{"node": 0, "h2d": near, "d2h": near}, {"node": 1, "h2d": far, "d2h": far}]
    result = result_of(deep_report(_mi300x(run)), "host-link")
    assert result.status is Status.FAIL
    assert result.summary == ("GPU 0 AMD Instinct MI300X: copies from this process run at 30.80 "
                              "GB/s, 58 % of the 53.00 GB/s from NUMA node 0's memory: its "
                              "buffers sit on the other socket")
    assert result.fix == Fix("Bind training to the GPU's NUMA node (https://man7.org/linux/"
                             "man-pages/man8/numactl.8.html).",
                             ("numactl --cpunodebind=0 --membind=0 python train.py",))


def test_a_card_without_a_reference_gets_its_figures_and_no_verdict() -> None:
    report = deep_report(_rx(recorded(RX)))
    gemm_rate = result_of(report, "gemm-rate")
    assert gemm_rate.status is Status.SKIP
    assert gemm_rate.summary == ("GPU 0 AMD Radeon RX 7900 XTX: bf16 96.14 TFLOP/s (78 % of the "
                                 "122.8 TFLOP/s datasheet peak); no reference for this card: no "
                                 "verdict")
    assert all(f.verdict is None and f.value for f in gemm_rate.figures)
    assert result_of(report, "memory-bandwidth").summary == (
        "GPU 0 AMD Radeon RX 7900 XTX: device-to-device copy 811.5 GB/s, 107 % of what is "
        "expected")
    assert result_of(report, "host-link").status is Status.PASS
    assert ("info", "GPU 0 AMD Radeon RX 7900 XTX: gemm:fp8 not measured: RuntimeError: "
                    "torch._scaled_mm is only supported on CUDA devices with compute capability "
                    ">= 9.0 or 8.9, or ROCm MI300+") in _texts(result_of(report, "deep").findings)


def test_slow_convolutions_on_gfx1201_name_the_known_reports() -> None:
    run = variant(recorded(RX))
    gpu = run["gpus"][0]
    gpu["name"], gpu["arch"] = "AMD Radeon RX 9070 XT", "gfx1201"
    for conv in gpu["conv"]:
        scale(conv["tflops"], 0.21)
    result = result_of(deep_report(_rx(run, "AMD Radeon RX 9070 XT", "gfx1201")), "conv-rate")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 AMD Radeon RX 9070 XT: bf16 channels_last convolution 8.63 "
                              "TFLOP/s, 11 % of the same-sized GEMM on this card: a poor "
                              "convolution kernel")
    assert _texts(result.findings)[-3:] == [
        ("hint", "likely cause: a known report on gfx1201: RX 9070-class GPUs (gfx120x) ran "
                 "convolutions 4x slower than an RX 7800 XT: MIOpen picks other algorithms there "
                 "(https://github.com/ROCm/rocm-libraries/issues/2567)"),
        ("hint", "likely cause: a known report on gfx1201: on gfx1201 MIOpen's im2col kernel "
                 "failed to compile (HIPRTC) and convolution backward fell back to slow paths "
                 "(https://github.com/ROCm/legacy-rocm-build/issues/6625)"),
        ("hint", "likely cause: MIOpen found no tuned kernel for this shape in its databases: "
                 "with MIOPEN_FIND_ENFORCE=3 it searches once and keeps the result in the user "
                 "database (https://rocm.docs.amd.com/projects/MIOpen/en/latest/how-to/"
                 "find-and-immediate.html)"),
    ]
    assert result.fix == Fix("Follow the report (https://github.com/ROCm/rocm-libraries/issues/"
                             "2567) for the MIOpen release that fixes it; until then, measure the "
                             "model with another layout or dtype.")


def test_a_link_trained_at_x4_fails_host_link_and_says_so() -> None:
    run = variant(recorded(RX))
    host_link = run["gpus"][0]["host_link"]
    scale(host_link["h2d"], 6.1 / host_link["h2d"]["median"])
    scale(host_link["d2h"], 6.3 / host_link["d2h"]["median"])
    result = result_of(deep_report(_rx(run, width="4")), "host-link")
    assert result.status is Status.FAIL
    assert result.summary == ("GPU 0 AMD Radeon RX 7900 XTX: pinned host-to-device copy 6.10 "
                              "GB/s, 25 % of what its link carries: the link runs x4 of x16, at "
                              "most 7.88 GB/s per direction (pcie-link)")
    assert _texts(result.findings)[0] == (
        "error", "GPU 0 AMD Radeon RX 7900 XTX: the link runs x4 of x16, at most 7.88 GB/s per "
                 "direction (pcie-link)")
    assert result.fix == Fix("Check the link under load (pcie-link) and that nothing else copies "
                             "at the same time; a link that trains below its width needs the "
                             "card reseated or another slot.",
                             ("rocmdoctor check --only pcie-link -v",))


def test_a_performance_level_pinned_low_is_named() -> None:
    run = variant(recorded(RX))
    run["gpus"][0]["telemetry"]["static"]["perf_level"] = "low"
    result = result_of(deep_report(_rx(run)), "clocks-under-load")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 AMD Radeon RX 7900 XTX: performance level low: clocks are "
                              "forced to the lowest power state")
    assert result.fix == Fix("Let the driver choose the clocks again (this tool only reads the "
                             "level).", ("echo auto | sudo tee /sys/class/drm/card*/device/"
                                         "power_dpm_force_performance_level",), needs_root=True)


# --- the run itself ---------------------------------------------------------------------------

def test_a_crashed_run_is_one_error_and_the_checks_it_feeds_are_skipped() -> None:
    partial = ('ROCMDOCTOR_DEEP_PARTIAL {"stage": "conv:bf16", "label": "GPU 0 (NVIDIA H200): '
               'bf16 convolution", "result": {}}\nSegmentation fault')
    report = deep_report(h200_host(None, entry=command(None, -11, partial)))
    deep = result_of(report, "deep")
    assert deep.status is Status.ERROR
    assert deep.summary == ("the measuring process was killed by SIGSEGV while GPU 0 (NVIDIA "
                            "H200): bf16 convolution")
    assert {r.summary for r in report.results if r.id != "deep"} == {
        "needs deep, which could not run"}
    assert report.exit_code() == 1


def test_a_run_that_timed_out_says_where() -> None:
    partial = ('ROCMDOCTOR_DEEP_PARTIAL {"stage": "memory", "label": "GPU 0 (NVIDIA H200): '
               'memory copy and triad", "result": {}}')
    deep = result_of(deep_report(h200_host(None, entry=command(None, 124, partial, True))),
                     "deep")
    assert deep.status is Status.ERROR
    assert deep.summary == ("the measurements did not finish within 180 s (while GPU 0 (NVIDIA "
                            "H200): memory copy and triad)")


def test_a_snapshot_without_a_measured_run_says_so_once() -> None:
    host = h200_host(recorded(H200))
    del host.data["commands"]["rocmdoctor-deep"]
    report = deep_report(host)
    assert [(r.id, r.status.value, r.summary) for r in report.results] == [
        ("deep", "skip", "no measured run recorded here (take the snapshot with `rocmdoctor "
                         "snapshot --deep`)")]


def test_an_interrupted_run_reports_the_figures_so_far() -> None:
    run = variant(recorded(H200))
    run["interrupted"] = True
    run["elapsed_s"] = 12.4
    deep = result_of(deep_report(h200_host(run)), "deep")
    assert deep.status is Status.PASS
    assert deep.summary == ("interrupted (Ctrl-C) after 12 s: the figures so far; 1 GPU(s) "
                            "measured in 12 s: GPU 0 NVIDIA H200 (torch 2.11.0+cu130)")


# --- stress -----------------------------------------------------------------------------------

def _stressed(windows: list[float], ecc_after: int = 0, mismatches: int = 0,
              reasons: dict[str, float] | None = None) -> dict[str, Any]:
    run = variant(recorded(H200))
    run["level"], run["stress_s"] = "stress", 600.0
    gpu = run["gpus"][0]
    gpu["stress"] = {"seconds": 600.0, "n": 8192, "tile": 64, "stopped_early": False,
                     "windows": [{"t": float(i), "tflops": w, "gbs": 4012.0}
                                 for i, w in enumerate(windows)],
                     "checked_tiles": len(windows), "mismatches": mismatches, "nonfinite": 0,
                     "first_bad": {"window": 311, "row": 4608, "col": 1536, "excess": 37.5,
                                   "tolerance": 2.71, "finite": True} if mismatches else None}
    gpu["counters"]["after"]["ecc_uncorrected"] = ecc_after
    stress = json.loads(json.dumps(gpu["telemetry"]["under_load"]))
    stress["reasons"] = reasons or {"SW Power Cap": 0.61}
    gpu["telemetry"]["stress"] = stress
    return run


def _stress(run: dict[str, Any]) -> Any:
    return result_of(deep_report(h200_host(run, stress_s=600.0), stress=True), "stress")


def test_a_clean_stress_run_passes() -> None:
    result = _stress(_stressed([781.0, 779.5, 780.2, 778.9] * 150))
    assert result.status is Status.PASS
    assert result.summary == ("1 GPU(s), 600 windows over 600 s: no errors, no throttling, no "
                              "slow window")
    assert _texts(result.findings) == [
        ("info", "GPU 0 NVIDIA H200: 600 windows, bf16 GEMM 779.9 TFLOP/s median, slowest "
                 "778.9 TFLOP/s at 3 s (100 % of the median)"),
        ("info", "GPU 0 NVIDIA H200: 600 product tiles checked against float64 on the CPU: 0 "
                 "mismatched, 0 products with NaN or Inf"),
        ("info", "GPU 0 NVIDIA H200: ECC during the run: 0 uncorrectable, 0 corrected"),
    ]


def test_wrong_results_or_new_ecc_errors_under_stress_fail() -> None:
    result = _stress(_stressed([780.0] * 600, ecc_after=2, mismatches=1))
    assert result.status is Status.FAIL
    assert result.summary == ("GPU 0 NVIDIA H200: 1 product tile(s) disagreed with the CPU and 0 "
                              "product(s) held NaN or Inf (first in window 311, tile at row 4608, "
                              "column 1536)")
    assert ("info", "GPU 0 NVIDIA H200: ECC during the run: 2 uncorrectable, 0 corrected") in \
        _texts(result.findings)
    assert result.fix == Fix("Take the GPU out of service and run the vendor's diagnostics: wrong "
                             "results without an error are a hardware fault.",
                             ("dcgmi diag -r 3",))


def test_a_slow_window_and_thermal_throttling_under_stress_warn() -> None:
    windows = [780.0] * 300 + [612.0] + [775.0] * 299
    result = _stress(_stressed(windows, reasons={"SW Power Cap": 0.7, "HW Thermal Slowdown": 0.2}))
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: the slowest window ran at 79 % of the median "
                              "(612.0 TFLOP/s at 300 s)")


# --- two GPUs ---------------------------------------------------------------------------------

def _two_h200(p2p_gbs: float = 376.0, replays_after: int = 0, replays_before: int = 0) -> Any:
    import gzip

    from rocmdoctor.host.snapshot import SnapshotHost
    from tests.deep_runs import DEEP_KEY

    run = variant(recorded(H200))
    second = json.loads(json.dumps(run["gpus"][0]))
    second["index"], second["bus_id"] = 1, "0000:00:07.0"
    run["gpus"].append(second)
    for gpu in run["gpus"]:
        gpu["counters"]["before"]["links"] = {str(i): {"replay": 0, "recovery": 0, "crc_flit": 0,
                                                       "crc_data": 0} for i in range(18)}
        gpu["counters"]["after"]["links"] = json.loads(json.dumps(
            gpu["counters"]["before"]["links"]))
    run["gpus"][1]["counters"]["before"]["links"]["5"]["replay"] = replays_before
    run["gpus"][1]["counters"]["after"]["links"]["5"]["replay"] = replays_after
    rate = {"unit": "GB/s", "median": p2p_gbs, "min": p2p_gbs * 0.995, "max": p2p_gbs * 1.004,
            "spread_pct": 0.9, "n": 7, "samples": [p2p_gbs] * 7}
    run["p2p"] = [{"src": 0, "dst": 1, "access": True, "bytes": 268435456, "gbs": rate},
                  {"src": 1, "dst": 0, "access": True, "bytes": 268435456, "gbs": rate}]
    with gzip.open("tests/fixtures/h200x2-snapshot.json.gz", "rt", encoding="utf-8") as fh:
        snap = json.load(fh)
    snap["commands"][DEEP_KEY] = command(run)
    return SnapshotHost(snap)


def test_two_nvlinked_h200s_copy_at_their_links_rate() -> None:
    result = result_of(deep_report(_two_h200()), "gpu-links")
    assert result.status is Status.PASS
    assert result.summary == ("2 peer copies within the band of their links; no link errors "
                              "during the run")
    assert _texts(result.findings)[0] == (
        "info", "GPU 0 copy to GPU 1: 376.0 GB/s (median of 7 runs, spread 0.9 %); 111 % of "
                "337.5 GB/s, 75 % of 450.0 GB/s, NV18: NVLink 4, 18 links x 25 GB/s per "
                "direction (NVIDIA H200: 18 links, 900 GB/s bidirectional per GPU; NV18 is the "
                "bond between this pair, all 18 when the GPUs meet through NVSwitch)")


def test_nvlink_errors_are_what_the_counters_grew_by_during_the_run() -> None:
    # a link that had counted 40 replays before the run and 42 after counted 2 during it
    result = result_of(deep_report(_two_h200(replays_before=40, replays_after=42)), "gpu-links")
    assert result.summary == ("GPU 1 NVIDIA H200: NVLink 5 counted errors during the run "
                              "(replay +2)")
    same = result_of(deep_report(_two_h200(replays_before=42, replays_after=42)), "gpu-links")
    assert same.status is Status.PASS


def test_nvlink_errors_counted_during_the_run_are_a_warning() -> None:
    result = result_of(deep_report(_two_h200(replays_after=42)), "gpu-links")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 1 NVIDIA H200: NVLink 5 counted errors during the run "
                              "(replay +42)")
    assert result.fix == Fix("Watch the link's counters under load; a link that keeps counting "
                             "needs service.", ("nvidia-smi nvlink -e",))


def test_slow_peer_copies_fail_against_the_link() -> None:
    result = result_of(deep_report(_two_h200(p2p_gbs=48.2)), "gpu-links")
    assert result.status is Status.FAIL
    assert result.summary == ("GPU 0 copy to GPU 1: 48.20 GB/s, 14 % of what its link is "
                              "expected to carry")


def test_a_serializing_variable_is_caught_where_the_launch_share_stays_under_the_rule() -> None:
    # The H200 run with CUDA_LAUNCH_BLOCKING=1 (docs/benchmarks.md): 12.31 us a queued launch,
    # twice the normal runs' 6.2-6.9 us, under 0.8 of a launch waited for (that run's waited
    # figure did not come back; 16 us stands for it here).
    run = variant(recorded(H200))
    run["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    launch = run["gpus"][0]["launch"]
    scale(launch["queued_us"], 12.31 / launch["queued_us"]["median"])
    scale(launch["waited_us"], 16.0 / launch["waited_us"]["median"])
    result = result_of(deep_report(h200_host(run)), "kernel-launch")
    assert result.status is Status.WARN
    assert result.summary == ("GPU 0 NVIDIA H200: CUDA_LAUNCH_BLOCKING=1 is set, so every "
                              "kernel launch waits for the kernel: 12.31 us a launch queued "
                              "(16.00 us one waited for)")
    assert result.fix == Fix("Unset the debugging variables where training runs.",
                             ("unset CUDA_LAUNCH_BLOCKING",))
    del run["env"]["CUDA_LAUNCH_BLOCKING"]  # the same figures with nothing set pass
    assert result_of(deep_report(h200_host(run)), "kernel-launch").status is Status.PASS


def test_a_logging_variable_alone_does_not_say_launches_wait() -> None:
    run = variant(recorded(H200))
    run["env"]["AMD_LOG_LEVEL"] = "1"  # logs (errors only), serializes nothing
    assert result_of(deep_report(h200_host(run)), "kernel-launch").status is Status.PASS


# --- graded at the reference's own shape ----------------------------------------------------

def _at_shape(result: dict[str, Any], dtype: str, shape: tuple[int, int, int],
              factor: float) -> dict[str, Any]:
    """A product at a reference shape, its rates those of the dtype's n x n x n times
    `factor` (a constructed variant: how the child records one, deep_child.reference_shapes)."""
    entry = variant(gemm(result, dtype))
    m, n, k = shape
    entry.update({"m": m, "n": n, "k": k, "reference_shape": True})
    scale(entry["tflops"], factor)
    return entry


def test_the_gemm_is_graded_at_the_shape_its_reference_was_measured_at() -> None:
    # The real H200's one-shape figure: 659.7 TFLOP/s at 8192^3 under its 700 W cap, 83 % of
    # the MAMF, which is the best shape of a sweep (2048x2048x13312).
    run = variant(recorded(H200))
    scale(gemm(run, "bf16")["tflops"], 659.7 / 781.9281)
    low = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert (low.status, low.summary) == (Status.WARN, "GPU 0 NVIDIA H200: bf16 659.7 TFLOP/s, "
                                         "83 % of 794.5 TFLOP/s (the MAMF of an NVIDIA H100 "
                                         "SXM, torch 2.7.0+cu126)")
    # The same card measured at the reference's shape too: graded there, 8192^3 shown beside.
    run["gpus"][0]["gemm"].insert(1, _at_shape(run, "bf16", (2048, 2048, 13312), 1.18))
    judged = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert (judged.status, judged.summary) == (
        Status.PASS, "GPU 0 NVIDIA H200: bf16 778.4 TFLOP/s, 98 % of 794.5 TFLOP/s")
    assert [(f.key, f.name, f.verdict) for f in judged.figures][:2] == [
        ("gemm:bf16", "bf16 GEMM 2048x2048x13312 (the reference's shape, cuBLAS)", "pass"),
        ("gemm:bf16:8192", "bf16 GEMM 8192x8192x8192 (cuBLAS)", None)]
    assert _texts(judged.findings)[1] == (
        "info", "GPU 0 bf16 GEMM 8192x8192x8192 (cuBLAS): 659.7 TFLOP/s (median of 58 runs, "
                "spread 1.4 %); 67 % of the 989.4 TFLOP/s bf16 datasheet peak (NVIDIA H200, "
                "dense)")
    # Other cards' shapes measured here change nothing; a slow one at the reference's shape
    # is still caught there.
    run["gpus"][0]["gemm"].insert(2, _at_shape(run, "bf16", (13312, 10240, 8192), 0.5))
    assert result_of(deep_report(h200_host(run)), "gemm-rate").summary == judged.summary
    run["gpus"][0]["gemm"][1] = _at_shape(run, "bf16", (2048, 2048, 13312), 0.9)
    slow = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert (slow.status, slow.summary) == (
        Status.FAIL, "GPU 0 NVIDIA H200: bf16 593.7 TFLOP/s, 75 % of 794.5 TFLOP/s (the MAMF "
                     "of an NVIDIA H100 SXM, torch 2.7.0+cu126)")


def test_a_reference_shape_too_slow_for_the_card_is_named_and_the_square_one_graded() -> None:
    run = variant(recorded(H200))
    left = {"dtype": "bf16", "m": 2048, "n": 2048, "k": 13312, "library": None,
            "reference_shape": True, "left_out": "~3 s at this rate"}
    run["gpus"][0]["gemm"].insert(1, left)
    gemm_rate = result_of(deep_report(h200_host(run)), "gemm-rate")
    assert gemm_rate.summary == "GPU 0 NVIDIA H200: bf16 781.9 TFLOP/s, 98 % of 794.5 TFLOP/s"
    assert _texts(gemm_rate.findings)[1] == (
        "info", "GPU 0 bf16 GEMM at the reference's shape 2048x2048x13312: not measured (~3 s "
                "at this rate), graded at 8192x8192x8192 instead")


def test_the_childs_reference_shapes_are_those_of_kbs_references() -> None:
    from rocmdoctor.host.deep_kernels import REFERENCE_SHAPES
    from rocmdoctor.kb.deep_refs import CLASS_REFERENCES

    want: dict[str, set[tuple[int, int, int]]] = {}
    for ref in CLASS_REFERENCES:
        if ref.shape and ref.figure.startswith("gemm:"):
            want.setdefault(ref.figure.split(":")[1], set()).add(ref.shape)
    assert {k: set(v) for k, v in REFERENCE_SHAPES.items()} == want
    assert all(list(v) == sorted(v) for v in REFERENCE_SHAPES.values())
