"""gpu-health through a strict SnapshotHost: real `nvidia-smi -q` captures, real (truncated)
amd-smi JSON, and amd-smi JSON written in the keys of amd-smi's own source from the real human
captures (MI300X ECC blocks, MI350X RAS)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.gpu_health import GpuHealth
from rocmdoctor.facts.amd_smi import AMDSMI_COMMANDS, parse_amd_smi_json
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import nvidia_xid
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from tests.helpers import char_dev, fixture_text, make_snapshot

CHECK = GpuHealth()
ABSENT = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl",
          "nvidia-smi -q", "amd-smi static --json", "amd-smi metric --json")
A100 = "nvidia-smi-q-a100-sxm4-80gb-x4-ecc-enabled-remapped-rows-pending-yes-driver555.42.txt"
AMD_FIX = Fix("Collect the error counts and retired pages and reset the GPU when it is idle; "
              "uncorrectable errors that come back mean the GPU needs service.",
              ("amd-smi metric --ecc --ecc-blocks", "amd-smi bad-pages"))


def nvidia(name: Optional[str]) -> SnapshotHost:
    commands = {"nvidia-smi -q": fixture_text(name)} if name else {}
    snap = make_snapshot(paths={"/dev/nvidiactl": char_dev("root", "0666")}, commands=commands)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def amd(static: Any, metric: Any, python: Optional[dict[str, Any]] = None,
        env: Optional[dict[str, str]] = None) -> SnapshotHost:
    commands = {}
    for key, value in (("amd-smi static --json", static), ("amd-smi metric --json", metric)):
        if value is not None:
            commands[key] = value if isinstance(value, str) else json.dumps(value, indent=4)
    snap = make_snapshot(files={"/opt/rocm/.info/version": "6.4.0\n"}, commands=commands,
                         python=python, env=env)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    reason = CHECK.applies(h)
    return replace(CHECK.skipped(reason) if reason else CHECK.run(h), duration_ms=0)


def clean(bus: str, name: str) -> Finding:
    return Finding.info(f"GPU {bus} {name}: no uncorrectable ECC errors, nothing pending")


# --- NVIDIA ---------------------------------------------------------------------------------


def test_a100_with_a_row_remap_waiting_for_a_reset() -> None:
    name = "NVIDIA A100-SXM4-80GB"
    pending = ("GPU 0000:9e:00.0 NVIDIA A100-SXM4-80GB: Remapped Rows: Pending: Yes (correctable "
               "1, uncorrectable 0): a row remap waits for a GPU reset")
    assert run(nvidia(A100)) == CHECK.result(Status.WARN, pending, (
        clean("0000:68:00.0", name), Finding.hint(pending), clean("0000:c2:00.0", name),
        clean("0000:d4:00.0", name)), Fix(
        "Stop the programs on that GPU and reset it, so that pending row remaps or page "
        "retirements take effect; a remapping failure or uncorrectable errors that come back "
        "mean the GPU needs service (NVIDIA's memory error management).",
        ("sudo nvidia-smi -r -i 00000000:9e:00.0",), needs_root=True), nvidia_xid.MEMORY_ERRORS)


def test_a_clean_l4_passes() -> None:
    got = run(nvidia("nvidia-smi-q-l4-pcie-link-width-8x-of-16x-gen1-idle-ecc-enabled-driver550.90.txt"))
    assert got == CHECK.passed("1 GPU(s): no uncorrectable errors, nothing pending",
                               (clean("0000:01:00.0", "NVIDIA L4"),))


def test_consumer_gpus_without_ecc_skip() -> None:
    got = run(nvidia(
        "nvidia-smi-q-geforce-rtx3090-x2-ecc-na-retired-pages-na-remapped-rows-na-pcie-gen1-idle-driver560.35.txt"))
    assert got == CHECK.skipped("no GPU here has ECC (NVIDIA GeForce RTX 3090); data-centre GPUs do")


def test_uncorrectable_errors_and_a_remapping_failure_fail() -> None:
    text = fixture_text(A100)
    gpu = text.index("GPU 00000000:C2:00.0")
    section = text[gpu:]
    broken = (section.replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2", 1)
              .replace("Remapping Failure Occurred        : No", "Remapping Failure Occurred        : Yes", 1))
    snap = make_snapshot(paths={"/dev/nvidiactl": char_dev("root", "0666")},
                         commands={"nvidia-smi -q": text[:gpu] + broken})
    got = run(SnapshotHost(snap, strict=True, absent=ABSENT))
    assert got.status is Status.FAIL
    assert got.summary == ("GPU 0000:c2:00.0 NVIDIA A100-SXM4-80GB: 2 uncorrectable ECC error(s) "
                           "since the driver loaded (ECC Errors, Volatile)")
    assert Finding.error("GPU 0000:c2:00.0 NVIDIA A100-SXM4-80GB: Remapped Rows: Remapping "
                         "Failure Occurred: Yes") in got.findings


def test_a_page_retirement_and_a_reset_waiting_are_hints() -> None:
    """A pre-Ampere card retires pages instead of remapping rows: "Pending Page Blacklist: Yes"
    in its Retired Pages section (and GPU Reset Status) waits for a GPU reset."""
    text = fixture_text(A100)
    gpu = text.index("GPU 00000000:C2:00.0")
    section = text[gpu:].replace("Pending Page Blacklist            : N/A",
                                 "Pending Page Blacklist            : Yes", 1)
    snap = make_snapshot(paths={"/dev/nvidiactl": char_dev("root", "0666")},
                         commands={"nvidia-smi -q": text[:gpu] + section})
    got = run(SnapshotHost(snap, strict=True, absent=ABSENT))
    assert Finding.hint("GPU 0000:c2:00.0 NVIDIA A100-SXM4-80GB: Retired Pages: Pending Page "
                        "Blacklist: Yes: a page retirement waits for a GPU reset") in got.findings
    assert not any("Pending Page Blacklist" in f.text for f in run(SnapshotHost(
        make_snapshot(paths={"/dev/nvidiactl": char_dev("root", "0666")},
                      commands={"nvidia-smi -q": text}), strict=True, absent=ABSENT)).findings)


def test_without_nvidia_smi_it_skips() -> None:
    assert run(nvidia(None)) == CHECK.skipped(
        "nvidia-smi is not installed (it reports ECC and row remapping)")


# --- AMD ------------------------------------------------------------------------------------


def human_blocks(name: str) -> dict[str, int]:
    """'UMC:' / 'CORRECTABLE_COUNT: 2' ... of an `amd-smi metric -k` capture."""
    counts: dict[str, int] = {}
    for line in fixture_text(name).splitlines():
        key, _, value = line.strip().partition(": ")
        if key.endswith("_COUNT") and value.isdigit():
            counts[key.lower()] = int(value)
    return counts


UMC = human_blocks("amd-smi-metric-ecc-block-k-grep-umc-correctable-count-2-mi300x-driver6.16.6.txt")
MI300X = {"asic": {"market_name": "AMD Instinct MI300X OAM"}, "bus": {"bdf": "0000:05:00.0"},
          "ras": {"eeprom_version": "0x10000", "poison_schema": "ENABLED",
                  "bad_page_threshold_exceeded": "N/A"},
          "partition": {"compute_partition": "SPX", "memory_partition": "NPS1"}}


def metric(uncorrectable: int) -> dict[str, Any]:
    return {"ecc": {"total_correctable_count": UMC["correctable_count"],
                    "total_uncorrectable_count": uncorrectable,
                    "total_deferred_count": UMC["deferred_count"]},
            "ecc_blocks": {"UMC": {"correctable_count": UMC["correctable_count"],
                                   "uncorrectable_count": uncorrectable,
                                   "deferred_count": UMC["deferred_count"]}},
            "throttle": {"ppt_violation_status": "ACTIVE",
                         "socket_thermal_violation_status": "NOT ACTIVE"}}


def test_mi300x_with_correctable_errors_only_passes() -> None:
    assert UMC == {"correctable_count": 2, "uncorrectable_count": 0, "deferred_count": 0}
    h = amd([{"gpu": 0, **MI300X}], {"gpu_data": [{"gpu": 0, **metric(0)}]})
    assert run(h) == CHECK.passed("1 GPU(s): no uncorrectable errors, nothing pending", (
        Finding.info("GPU 0 AMD Instinct MI300X OAM (0000:05:00.0): no uncorrectable ECC errors "
                     "(total_correctable_count 2, total_deferred_count 0)"),
        Finding.info("partition mode: compute SPX, memory NPS1")))


def test_uncorrectable_umc_errors_fail() -> None:
    h = amd([{"gpu": 0, **MI300X}], [{"gpu": 0, **metric(3)}])
    got = run(h)
    assert got == CHECK.result(
        Status.FAIL, "GPU 0 AMD Instinct MI300X OAM (0000:05:00.0): total_uncorrectable_count 3 "
        "(UMC 3)", (Finding.error("GPU 0 AMD Instinct MI300X OAM (0000:05:00.0): "
                                  "total_uncorrectable_count 3 (UMC 3)"),
                    Finding.info("partition mode: compute SPX, memory NPS1")),
        AMD_FIX, AMDSMI_COMMANDS)


def test_cpx_partitions_torch_does_not_all_see() -> None:
    cpx = {**MI300X, "partition": {"compute_partition": "CPX", "memory_partition": "NPS4"}}
    torch = {"executable": "python3", "version": "3.12", "packages": {"torch": "2.5.1+rocm6.2"},
             "torch": {"imported": True, "error": None, "version": "2.5.1+rocm6.2",
                       "hip": "6.2.41133", "cuda": None, "available": True, "device_count": 1}}
    gpus = [{"gpu": i, **cpx} for i in range(8)]
    got = run(amd(gpus, [{"gpu": i, **metric(0)} for i in range(8)], python=torch))
    assert got.status is Status.WARN
    assert got.summary == ("torch sees 1 device(s) but amd-smi lists 8 GPU partitions: in a "
                           "partitioned mode each partition is its own device")
    visible = run(amd(gpus, [{"gpu": i, **metric(0)} for i in range(8)], python=torch,
                      env={"HIP_VISIBLE_DEVICES": "0"}))
    assert visible.status is Status.PASS


def test_a_truncated_metric_json_is_a_result() -> None:
    """The W7700's `amd-smi metric -u --json` as posted, cut off mid-list."""
    cut = fixture_text("amd-smi-metric-u-json-bare-list-gfx1101-w7700-TRUNCATED.txt")
    got = run(amd([{"gpu": 0, **MI300X}], cut))
    assert got == CHECK.passed(
        "1 GPU(s): nothing wrong in what could be read (`amd-smi metric --json` printed JSON "
        "that does not parse (cut off?))", (
            Finding.info("`amd-smi metric --json` printed JSON that does not parse (cut off?)"),
            Finding.info("partition mode: compute SPX, memory NPS1")))


def test_a_truncated_static_json_reports_no_gpu() -> None:
    cut = fixture_text("amd-smi-static-json-gpu_data-envelope-gfx1101-rx7800xt-TRUNCATED.txt")
    cut = cut.split("\n", 1)[1]  # the prompt line
    got = run(amd(cut, None))
    assert got == CHECK.skipped(
        "amd-smi reported no GPU: `amd-smi static --json` printed JSON that does not parse (cut "
        "off?); `amd-smi metric --json` failed: command not found")


def test_without_amd_smi_it_skips() -> None:
    snap = make_snapshot(files={"/opt/rocm/.info/version": "6.4.0\n"})
    got = run(SnapshotHost(snap, strict=True, absent=ABSENT))
    assert got == CHECK.skipped("amd-smi is not installed (it reports ECC, RAS and partitions)")


def test_both_envelopes_and_warnings_before_the_json() -> None:
    bare = fixture_text("amd-smi-static-clock-json-bare-list-no-gpu-data-envelope-mi355x-TRUNCATED.txt")
    assert parse_amd_smi_json(bare)[1] == "printed JSON that does not parse (cut off?)"
    warned = "x.py:1: SyntaxWarning: 'return' in a 'finally' block\n" + json.dumps(
        {"gpu_data": [{"gpu": 0, "asic": {}}]})
    assert parse_amd_smi_json(warned) == ([{"gpu": 0, "asic": {}}], None)


@given(st.text())
def test_amd_smi_parser_never_raises(text: str) -> None:
    parse_amd_smi_json(text)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=3)
                    | st.dictionaries(st.sampled_from(["gpu", "ecc", "ras", "partition",
                                                       "throttle", "ecc_blocks", "asic", "bus",
                                                       "total_uncorrectable_count"]),
                                      children, max_size=4), max_leaves=20))
def test_wrong_typed_amd_smi_fields_give_a_result(value: Any) -> None:
    got = run(amd(json.dumps([value, {"gpu": 1, "static": value}]), json.dumps([value])))
    assert got.status in (Status.PASS, Status.WARN, Status.FAIL, Status.SKIP)


# --- held by mutation testing ----------------------------------------------------------------

NVIDIA_FIX = Fix(
    "Stop the programs on that GPU and reset it, so that pending row remaps or page "
    "retirements take effect; a remapping failure or uncorrectable errors that come back "
    "mean the GPU needs service (NVIDIA's memory error management).",
    ("sudo nvidia-smi -r -i 00000000:9e:00.0",), needs_root=True)


def test_hardware_slowdown_and_mig_mode_are_named_per_gpu() -> None:
    text = fixture_text(A100)
    gpu = text.index("GPU 00000000:C2:00.0")
    section = (text[gpu:]
               .replace("HW Slowdown                       : Not Active",
                        "HW Slowdown                       : Active", 1)
               .replace("HW Thermal Slowdown           : Not Active",
                        "HW Thermal Slowdown           : Active", 1)
               .replace("    MIG Mode\n        Current                           : Disabled",
                        "    MIG Mode\n        Current                           : Enabled", 1))
    snap = make_snapshot(paths={"/dev/nvidiactl": char_dev("root", "0666")},
                         commands={"nvidia-smi -q": text[:gpu] + section})
    name = "NVIDIA A100-SXM4-80GB"
    pending = ("GPU 0000:9e:00.0 NVIDIA A100-SXM4-80GB: Remapped Rows: Pending: Yes (correctable "
               "1, uncorrectable 0): a row remap waits for a GPU reset")
    assert run(SnapshotHost(snap, strict=True, absent=ABSENT)) == CHECK.result(
        Status.WARN, pending, (
            clean("0000:68:00.0", name), Finding.hint(pending),
            Finding.hint(f"GPU 0000:c2:00.0 {name}: clocks lowered now by HW Slowdown, HW "
                         "Thermal Slowdown"),
            Finding.info(f"GPU 0000:c2:00.0 {name}: MIG Mode Current: Enabled"),
            clean("0000:d4:00.0", name)), NVIDIA_FIX, nvidia_xid.MEMORY_ERRORS)


def test_thermal_throttling_on_an_instinct_gpu_warns_and_the_power_cap_does_not() -> None:
    hot = metric(0)
    hot["throttle"] = {**hot["throttle"], "socket_thermal_violation_status": "ACTIVE"}
    label = "GPU 0 AMD Instinct MI300X OAM (0000:05:00.0)"
    throttling = f"{label}: throttling now: socket_thermal_violation_status ACTIVE"
    assert run(amd([{"gpu": 0, **MI300X}], [{"gpu": 0, **hot}])) == CHECK.result(
        Status.WARN, throttling, (
            Finding.info(f"{label}: no uncorrectable ECC errors (total_correctable_count 2, "
                         "total_deferred_count 0)"),
            Finding.hint(throttling), Finding.info("partition mode: compute SPX, memory NPS1")),
        AMD_FIX, AMDSMI_COMMANDS)


def test_a_radeon_whose_ras_fields_are_all_n_a_skips() -> None:
    # amd-smi's static `ras` keys on a GPU without RAS: every value "N/A", the per-block
    # ecc_block_state a table of its own (amdsmi_commands.py).
    radeon = {"asic": {"market_name": "AMD Radeon RX 7800 XT"}, "bus": {"bdf": "0000:03:00.0"},
              "ras": {"eeprom_version": "N/A", "parity_schema": "N/A",
                      "single_bit_schema": "N/A", "double_bit_schema": "N/A",
                      "poison_schema": "N/A",
                      "ecc_block_state": {"UMC": "N/A", "SDMA": "N/A", "GFX": "N/A"}}}
    assert run(amd([{"gpu": 0, **radeon}], [{"gpu": 0, "ecc": "N/A"}])) == CHECK.skipped(
        "no GPU here reports ECC or RAS counters (AMD Radeon RX 7800 XT); Instinct GPUs do")


def test_partitions_torch_sees_exactly_or_more_than_listed() -> None:
    cpx = {**MI300X, "partition": {"compute_partition": "CPX", "memory_partition": "NPS4"}}
    gpus = [{"gpu": i, **cpx} for i in range(8)]
    metrics = [{"gpu": i, **metric(0)} for i in range(8)]

    def torch(count: int) -> dict[str, Any]:
        return {"executable": "python3", "version": "3.12", "packages": {"torch": "2.5.1"},
                "torch": {"imported": True, "error": None, "version": "2.5.1+rocm6.2",
                          "hip": "6.2.41133", "cuda": None, "available": True,
                          "device_count": count}}

    assert run(amd(gpus, metrics, python=torch(8))).status is Status.PASS
    more = run(amd(gpus, metrics, python=torch(64)))
    assert (more.status, more.summary) == (
        Status.WARN, "torch sees 64 device(s) but amd-smi lists 8 GPU partitions: in a "
        "partitioned mode each partition is its own device")
