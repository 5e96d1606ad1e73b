"""What the mutation run of seed 31 (docs/testing.md) found no test for: each test below fails on
the change that survived, and passes on the code as it is."""

from __future__ import annotations

import os
import pwd
from typing import Any

import pytest


def test_a_uid_with_no_passwd_entry_is_named_by_user_then_by_number(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `docker run -u 1234`: no passwd entry for the uid, as in many containers
    from rocmdoctor.host import live

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setenv("USER", "alice")
    assert live._live_user().name == "alice"
    # so a file written to be shared hides that name even where the uid has no entry
    assert "alice" not in live.account_redactor({})("run by alice")
    monkeypatch.delenv("USER")
    assert live._live_user().name == str(os.getuid())


def test_the_deep_checks_dtype_names_are_torchs_dtypes_of_those_widths() -> None:
    # the deep child reads them with getattr(torch, ...) in a process no in-process test sees
    torch = pytest.importorskip("torch")
    from rocmdoctor.host.deep_kernels import DTYPES

    assert {k: getattr(torch, v, None) for k, v in DTYPES.items()} == {
        "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
        "fp16": torch.float16}


def test_a_check_reports_its_duration_in_whole_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmdoctor import runner
    from rocmdoctor.host.snapshot import SnapshotHost
    from tests.helpers import make_snapshot

    clock = iter([100.0, 102.5])
    monkeypatch.setattr(runner.time, "monotonic", lambda: next(clock))

    from rocmdoctor.checks.registry import all_checks

    check = next(c for c in all_checks(opt_in=True) if c.id == "kernel-version")
    result = runner.run_one(check, SnapshotHost(make_snapshot()))
    assert result.duration_ms == 2500


def test_a_driver_too_old_for_the_wheel_names_the_newest_torch_it_can_run() -> None:
    from rocmdoctor.explain import explain_text

    text = ("RuntimeError: The NVIDIA driver on your system is too old (found version 12060). "
            "Please update your GPU driver")
    [e] = explain_text(text, None)
    assert e.fix.commands == ("nvidia-smi", "pip install torch==2.14.1 torchvision==0.29.1 "
                              "--index-url https://download.pytorch.org/whl/cu126")


@pytest.mark.parametrize("marker", [
    "[  649.968333] [drm] PSP is resuming...",
    "[  650.160703] [drm:amdgpu_device_fw_loading [amdgpu]] *ERROR* resume of IP block <psp> "
    "failed -62",
    "[  650.160935] amdgpu 0000:0b:00.0: amdgpu: GPU reset(1) failed"])
def test_each_sign_of_a_reset_makes_a_psp_ring_failure_a_reboot(marker: str) -> None:
    from rocmdoctor.explain import explain_text

    ring = "[  650.160197] [drm:psp_hw_start [amdgpu]] *ERROR* PSP create ring failed!"
    [e] = explain_text(marker + "\n" + ring, None)
    assert e.key == "amdgpu-psp-ring-failed" and "sudo reboot" in e.fix.commands
    [e] = explain_text(ring, None)
    assert "sudo reboot" not in e.fix.commands


def test_nvidia_smi_is_asked_for_its_own_field_names_in_the_parsed_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `nvidia-smi --help-query-gpu` names them; parse_smi_line reads them in this order
    import subprocess

    from rocmdoctor.host import deep_telemetry

    asked: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, "1755, 1980, 689.41, 700.00, 700.00, 66, "
                                                     "0x0000000000000004\n", "")

    monkeypatch.setattr(deep_telemetry.subprocess, "run", run)
    reader = deep_telemetry.NvidiaSmiReader("0")
    assert reader.static() == {"max_clock_mhz": 1980.0, "power_limit_w": 700.0,
                               "default_power_limit_w": 700.0}
    assert asked[0] == ["nvidia-smi", "--id=0", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,"
                        "power.limit,power.default_limit,temperature.gpu,"
                        "clocks_event_reasons.active", "--format=csv,noheader,nounits"]


def test_the_link_of_a_pci_address_that_is_no_gpu_is_none() -> None:
    from rocmdoctor.facts.pcie_link import gpu_link
    from tests.test_pcie import machine, pci

    link = {"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
            "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}
    h = machine([pci("0000:83:00.0", "0x1002", "0x744c", "0x030000", link=link)])
    assert gpu_link(h, "0000:03:00.0") is None
    assert gpu_link(h, "0000:83:00.0") is not None


def test_sizes_in_a_pasted_message_are_binary_units() -> None:
    # the binary units the messages use (1 GiB = 2**30 bytes)
    from rocmdoctor.explain.resolvers import _bytes

    assert [_bytes("1.5", u) for u in ("bytes", "KiB", "MiB", "GiB", "TiB")] == [
        1, 1536, 3 * 2**19, 3 * 2**29, 3 * 2**39]


def _t_quantile(p: float, df: int) -> float:
    """Student's t quantile by bisection on its CDF, the density integrated by Simpson's rule
    (exact to far below the 1e-4 that matters here)."""
    import math

    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(t: float, steps: int = 4000) -> float:
        h = t / steps
        f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(steps + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    lo, hi = 0.0, 5.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def test_the_t_quantile_beyond_the_table_is_within_a_ten_thousandth() -> None:
    from rocmdoctor.tuners.confirm import t975

    for df in (31, 35, 40, 60, 120):
        assert abs(t975(df) - _t_quantile(0.975, df)) < 3e-4, df


def test_merging_into_a_setting_with_two_bracketed_values_keeps_them_whole() -> None:
    from rocmdoctor.tuners.rules import merge_alloc

    current = ("roundup_power2_divisions:[256:1,512:2],max_split_size_mb:128,"
               "roundup_power2_divisions:[1024:4,2048:8]")
    assert merge_alloc(current, "roundup_power2_divisions:[>:4]") == (
        "max_split_size_mb:128,roundup_power2_divisions:[>:4]")


def test_every_choice_of_a_knob_applied_in_code_has_its_lines() -> None:
    from rocmdoctor.tuners.knobs import DEFAULT, KNOBS
    from rocmdoctor.tuners.result import CODE_LINES

    in_code = {name for name, _ in CODE_LINES}
    for knob in KNOBS:
        if knob.name in in_code:
            for label, _ in knob.choices:
                if label != DEFAULT:
                    assert CODE_LINES.get((knob.name, label)), (knob.name, label)


def test_hostlist_keeps_each_run_of_numbers_apart() -> None:
    from rocmdoctor.render.fleet import hostlist

    assert hostlist(["n1", "n2", "n5", "n6", "n9"]) == "n[1-2,5-6,9]"


def test_the_report_json_carries_the_raw_sections_and_ends_its_line() -> None:
    import json

    from tests.test_report import MACHINES, render

    text = render(MACHINES[sorted(MACHINES)[0]](), "json")
    data = json.loads(text)
    assert set(data) == {"schema", "environment", "gpus", "check", "collect_env", "raw"}
    assert data["raw"] and all(isinstance(v, str) for v in data["raw"].values())
    assert text.endswith("}\n") and not text.endswith("\n\n")


def test_the_check_json_ends_its_last_line() -> None:
    from rocmdoctor.host.snapshot import SnapshotHost
    from rocmdoctor.render.check_json import render_json
    from rocmdoctor.runner import run_checks
    from tests.helpers import make_snapshot

    text = render_json(run_checks(SnapshotHost(make_snapshot()), []))
    assert text.endswith("}\n") and not text.endswith("\n\n")


def test_a_discrete_gpus_own_vram_line_is_no_apu_carve_out() -> None:
    from rocmdoctor.explain import explain_text

    # the kernel log's VRAM and HIP's capacity agree (a 24 GB card): no carve-out story
    text = ("[    3.1] amdgpu 0000:03:00.0: amdgpu: VRAM: 24560M 0x0000008000000000 - "
            "0x00000085FEFFFFFF (24560M used)\n"
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 23.98 GiB of which 1.10 GiB is free.")
    [e] = explain_text(text, None)
    assert e.key == "hip-out-of-memory"
    assert "carve-out" not in e.fix.text and not any("TheRock issue 1054" in n for n in e.notes)


def test_a_nightly_wheels_rocm_version_is_read_whole_and_its_library_named() -> None:
    from rocmdoctor.explain.paste import read_facts

    # TheRock's nightly wheels: "+rocm7.0.0rc20250922", the version runs into "rc"
    facts = read_facts("torch 2.10.0a0+rocm7.0.0rc20250922\nMIOpen(HIP): Error [Compile] x")
    rocm = facts.first("rocm")
    assert rocm is not None and rocm.value == "7.0.0"
    assert facts.values("library", None) == ("MIOpen",)


def test_the_bench_gemm_dtypes_are_torchs() -> None:
    torch = pytest.importorskip("torch")
    from rocmdoctor.tuners.bench.flops import GEMM_DTYPES

    assert GEMM_DTYPES == {"fp32": torch.float32, "tf32": torch.float32,
                           "bf16": torch.bfloat16, "fp16": torch.float16}


def test_the_mfu_line_and_the_environment_diff_separate_their_parts() -> None:
    from rocmdoctor.tuners.bench.compare import _env_diff
    from rocmdoctor.tuners.bench.render import mfu_text

    text = mfu_text({"vs_spec": 0.41, "spec_peak_tflops": 989.0, "spec_dtype": "bf16",
                     "vs_measured_gemm": 0.55,
                     "gemm": {"n": 8192, "dtype": "bf16", "tflops": 742.1}})
    assert text == ("41.0 % of 989.0 TFLOP/s bf16 spec; 55.0 % of a measured 8192^3 bf16 GEMM "
                    "(742.10 TFLOP/s)")
    mine = {"environment": {"knobs": {"env": {"A": "1", "B": "2"}}}}
    base = {"environment": {"knobs": {"env": {"C": "3"}}}}
    assert _env_diff(mine, base) == "A=1 B=2 -C"


def test_only_the_gpu_runtimes_variables_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmdoctor.tuners.bench.environment import knob_env

    for k in list(os.environ):
        monkeypatch.delenv(k)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("HIPPO_MODE", "fast")  # a name that starts like HIP's, but is not
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert knob_env() == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "HIP_VISIBLE_DEVICES": "0"}


def test_large_segment_size_is_read_after_a_skipped_list_value() -> None:
    from rocmdoctor.facts.alloc_conf import parse_alloc_conf

    # after "foo:[1]" (skipped, a list) the key is no longer at a multiple of four tokens
    parsed = parse_alloc_conf("foo:[1],large_segment_size_mb:40", device=None)
    assert (parsed.error, parsed.options) == (None, (("large_segment_size_mb", "40"),))
