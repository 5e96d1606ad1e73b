"""Parsers documented never to raise, on the inputs that made them raise: integers past
Python's 4,300-digit limit for int(), numbers a double cannot hold (1e999, 1e309), NaN and
inf, and digits that str.isdigit() accepts but int() refuses (superscripts). Each case is
the minimal input the fuzz suite (tests/test_fuzz.py) or a review found, with what the
parser gives instead."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rocmdoctor.facts import alloc_conf, amd_gpus, amd_smi, nvidia_gpus, pci, rocm_version, topology
from rocmdoctor.facts.alloc_conf import LEGACY, MODERN, AllocConfError, parse_alloc_conf, repair
from rocmdoctor.facts.rocminfo import parse_rocminfo
from rocmdoctor.facts.torch import torch_info_of
from rocmdoctor.kb import driver_support, nccl_env, ppfeatures, rocm_support, torch_wheels
from rocmdoctor.kb.allocator import option_names
from rocmdoctor.model import UNKNOWN
from tests.helpers import fixture_text, host_of

BIG = "9" * 4301  # one digit past int()'s limit
GPUS = amd_gpus.gpus_from_report(parse_rocminfo(
    fixture_text("rocminfo-gfx942-mi300x-x4-epyc9474f.txt")))


def test_the_inputs_really_are_past_pythons_limits() -> None:
    with pytest.raises(ValueError):
        int(BIG)
    with pytest.raises(ValueError):
        int("²")
    assert "²".isdigit() and float("1e999") == float("inf")


@pytest.mark.parametrize(("text", "dialect", "error"), [
    # std::stoull overflows (out_of_range) on a 4,301-digit number, as on any past 2**64
    ("max_split_size_mb:" + BIG, MODERN, AllocConfError("IndexError", "stoull",
                                                        "max_split_size_mb")),
    ("max_split_size_mb:" + "0" * 5000 + "512", MODERN, None),  # leading zeros are fine
    # std::stoull reads the leading "1" of 1e999: 1 MB, under the minimum
    ("max_split_size_mb:1e999", MODERN, AllocConfError(
        "ValueError", "CachingAllocator option max_split_size_mb too small, must be >= 20",
        "max_split_size_mb")),
    ("garbage_collection_threshold:0." + "0" * 4400 + "1e-1", MODERN,
     AllocConfError("IndexError", "stod", "garbage_collection_threshold")),
])
def test_alloc_conf_numbers_past_what_python_or_a_double_holds(
        text: str, dialect: str, error: AllocConfError | None) -> None:
    assert parse_alloc_conf(text, dialect).error == error


@pytest.mark.parametrize(("text", "repaired"), [
    ("max_split_size_mb:1e999", ""),  # no finite size was meant: the default, no limit
    ("expandable_segments:True,max_split_size_mb=1e999", "expandable_segments:True"),
    ("max_split_size_mb=" + BIG, ""),
    ("roundup_power2_divisions:nan", ""),
    ("max_split_size_mb=512", "max_split_size_mb:512"),
])
def test_alloc_conf_repair_drops_a_size_no_number_holds(text: str, repaired: str) -> None:
    assert repair(text, MODERN, "rocm", option_names(MODERN)) == repaired
    assert repair(text, LEGACY, "cuda", option_names(LEGACY)) == repaired


def test_kfd_properties_skip_a_value_past_64_bits() -> None:
    text = (f"simd_count {BIG}\nvendor_id 4098\nunique_id 18446744073709551615\nx ²\n"
            f"device_id {'0' * 5000}29857\n")
    assert amd_gpus.parse_kfd_properties(text) == {
        "vendor_id": 4098, "unique_id": 18446744073709551615, "device_id": 29857}


def test_kfd_node_folders_that_are_no_number_are_skipped() -> None:
    nodes = "/sys/class/kfd/kfd/topology/nodes"
    props = "cpu_cores_count 0\nsimd_count 304\ngfx_target_version 90402\nvendor_id 4098\n"
    host = host_of(dirs={nodes: ["1", "²", BIG]},
                   files={f"{nodes}/1/properties": props, f"{nodes}/²/properties": props})
    assert [g.node for g in amd_gpus.kfd_gpus(host)] == [1]
    assert [n.node for n in pci.kfd_gpu_nodes(host)] == [1]


def test_a_visible_devices_index_of_thousands_of_digits_selects_nothing() -> None:
    sel = amd_gpus.select("HIP_VISIBLE_DEVICES", f"{BIG},1", GPUS)
    assert [g.index for g in sel.chosen] == [1]
    assert sel.problems[0].startswith(f"HIP_VISIBLE_DEVICES entry {BIG} does not exist")
    # leading zeros count towards int()'s digit limit too (found by the fuzz suite)
    assert [g.index for g in amd_gpus.select("HIP_VISIBLE_DEVICES", "0" * 5000 + "2",
                                             GPUS).chosen] == [2]


@pytest.mark.parametrize(("row", "memory", "power"), [
    ("0, NVIDIA A100, 555.42, 8.0, Disabled, nan, inf, 1e309, GPU-x, 0000:3b:00.0", None,
     None),
    ("0, NVIDIA A100, 555.42, 8.0, Disabled, 400.00, 400.00, 81920, GPU-x, 0000:3b:00.0",
     81920, 400.0),
])
def test_nvidia_smi_numbers_a_double_cannot_hold_read_as_unknown(
        row: str, memory: int | None, power: float | None) -> None:
    (gpu,) = nvidia_gpus.parse_query_gpu(row + "\n")
    assert (gpu.memory_total_mib, gpu.power_limit_w) == (memory, power)


def test_nvidia_smi_index_of_thousands_of_digits_is_no_gpu() -> None:
    row = f"{BIG}, NVIDIA A100, 555.42, 8.0, Disabled, 1, 1, 1, GPU-x, 0000:3b:00.0\n"
    assert nvidia_gpus.parse_query_gpu(row) == []


@pytest.mark.parametrize(("call", "text", "expected"), [
    (rocm_version.parse_version_header,
     f"#define ROCM_VERSION_MAJOR {BIG}\n#define ROCM_VERSION_MINOR 2\n", None),
    (rocm_version.parse_version_file, f"{BIG}.2.1-76\n", None),
    (rocm_version.parse_version_file, "6.3.4-76\n", ("6.3.4", "76")),
    (driver_support.version_numbers, f"6.{BIG}.1", (6,)),
    (driver_support.version_numbers, "6.16.6", (6, 16, 6)),
    (torch_wheels.version_tuple, f"2.{BIG}+rocm6.2", (2,)),
    (rocm_support.version_key, f"6.{BIG}", (0, 0, 0)),
    (rocm_support.version_key, f"6.2.{BIG}", (6, 2, 0)),
    (rocm_support.version_key, "6.2.1", (6, 2, 1)),
    (ppfeatures.parse_mask, BIG, None),
    (ppfeatures.parse_mask, "4294967295", 4294967295),
    (amd_smi.number, "²", None),
    (amd_smi.number, "12", 12),
    (lambda t: topology.nvidia_link(t).kind, "NV" + BIG, UNKNOWN),
    (lambda t: topology.parse_rocm_showtopo(t) is None,
     f"GPU[{BIG}] : (Topology) Numa Node: 0\nGPU[0] : (Topology) Numa Node: -{BIG}\n", True),
    (lambda t: torch_info_of({"cpu_count": t, "torch": {"device_count": t}}).cpu_count, "²",
     None),
])
def test_version_and_number_readers(call: Any, text: str, expected: Any) -> None:
    assert call(text) == expected


@pytest.mark.parametrize(("value", "risky"), [
    ("2", True), ("0" * 5000 + "2", True), (BIG, False), ("²", False), ("8", False),
])
def test_nccl_max_nchannels_of_any_length(value: str, risky: bool) -> None:
    found = [var.name for var, _ in nccl_env.risky_settings({"NCCL_MAX_NCHANNELS": value})]
    assert found == (["NCCL_MAX_NCHANNELS"] if risky else [])


def test_alloc_conf_divisions_of_thousands_of_digits_overflow_as_in_torch() -> None:
    assert alloc_conf.parse_alloc_conf("roundup_power2_divisions:[" + BIG + ":1]").error == (
        AllocConfError("IndexError", "stoull", "roundup_power2_divisions"))


def test_rocminfo_numbers_of_thousands_of_digits_read_as_unknown() -> None:
    text = fixture_text("rocminfo-gfx942-mi300x-x4-epyc9474f.txt")
    cu = re.search(r"Compute Unit:\s+(\d+)", text)
    assert cu is not None
    report = parse_rocminfo(text.replace(cu.group(0), cu.group(0).replace(cu.group(1), BIG), 1)
                            .replace("Agent 1 ", f"Agent {BIG} ", 1))
    plain = parse_rocminfo(text)
    assert len(report.agents) == len(plain.agents)
    first, kept = report.agents[0], plain.agents[0]
    assert (first.number, first.compute_units, kept.number) == (None, None, 1)
    assert first.name == kept.name


def test_amd_smi_json_with_a_number_python_cannot_hold_does_not_parse() -> None:
    assert amd_smi.parse_amd_smi_json('[{"gpu": ' + BIG + "}]") == (
        [], "printed JSON that does not parse (cut off?)")


def test_etc_group_gid_of_thousands_of_digits_is_no_gid() -> None:
    from rocmdoctor.checks.kfd_access import parse_etc_group

    groups = parse_etc_group(f"render:x:{BIG}:alice\nvideo:x:44:bob\n")
    assert (groups["render"].gid, groups["video"].gid) == (None, 44)


@pytest.mark.parametrize(("text", "series"), [
    (f"6.{BIG}-generic", None), (f"{BIG}.8.0", None), ("6.8.0-45-generic", (6, 8)),
    (f"Linux version 6.{BIG} (gcc)", None),
])
def test_kernel_release_of_thousands_of_digits_is_no_series(
        text: str, series: tuple[int, int] | None) -> None:
    from rocmdoctor.checks.kernel_version import parse_kernel_release

    assert parse_kernel_release(text) == series


@pytest.mark.parametrize(("value", "target"), [
    (f"11.{BIG}.0", None), (f"{'0' * 5000}11.0.0", "gfx1100"), ("11.0.0", "gfx1100"),
    ("10.3.0", "gfx1030"), ("64.0.0", None),
])
def test_gfx_override_of_thousands_of_digits(value: str, target: str | None) -> None:
    from rocmdoctor.kb.gfx import override_value_target

    assert override_value_target(value) == target
