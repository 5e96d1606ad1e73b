"""The rocminfo parser, the KFD properties parser and the gfx knowledge, on real captures."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.facts.amd_gpus import GpuAgent, gpus_from_report, parse_kfd_properties, select
from rocmdoctor.facts.rocminfo import clean, parse_rocminfo, rocminfo_section
from rocmdoctor.kb import gfx as kb
from rocmdoctor.kb.rocminfo_failures import diagnose
from tests.helpers import REAL, fixture_text

CPU, GPU, DSP = "CPU", "GPU", "DSP"
KB = 1024


def gpu(index: int, gfx: str, full: str, name: str, cus: Optional[int], uuid: Optional[str],
        igpu: bool, vram_kb: Optional[int], node: Optional[int]) -> GpuAgent:
    return GpuAgent(index=index, node=node, gfx=gfx, gfx_full=full, name=name,
                    compute_units=cus, uuid=uuid, is_integrated=igpu,
                    vram_bytes=vram_kb * KB if vram_kb is not None else None)


def mi300x(i: int, uuid: str) -> GpuAgent:
    return gpu(i, "gfx942", "gfx942:sramecc+:xnack-", "AMD Instinct MI300X", 304, uuid, False,
               201310208, i + 2)


def mi25(i: int, uuid: Optional[str] = None) -> GpuAgent:
    return gpu(i, "gfx900", "gfx900:xnack-", "Radeon Instinct MI25", 64, uuid, False, 16760832,
               i + 1)


Row = tuple[str, str, Optional[int], Optional[int]]


def row(name: str, kind: str, node: Optional[int], cus: Optional[int]) -> Row:
    return (name, kind, node, cus)


# fixture -> (agents as (name, device type, node, CUs), ROCk line, kfd error, HSA status,
#             the GPU agents the inventory builds)
CASES: dict[str, tuple[list[Row], Optional[str], Optional[str], Optional[str],
                       list[GpuAgent]]] = {
    "rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt": (
        [("AMD Ryzen 7 7700X 8-Core Processor", CPU, 0, 16), ("gfx1030", GPU, 1, 72),
         ("gfx1036", GPU, 2, 2)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx1030", "gfx1030", "AMD Radeon RX 6800 XT", 72, "GPU-e0ce170bfa1769dd",
             False, 16760832, 1),
         gpu(1, "gfx1036", "gfx1036", "AMD Radeon Graphics", 2, None, True, 524288, 2)]),
    "rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt": (
        [("AMD Ryzen 5 5500", CPU, 0, 12), ("gfx1100", GPU, 1, 96)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx1100", "gfx1100", "Radeon RX 7900 XTX", 96, "GPU-af80fc06fd8c76ab", False,
             25149440, 1)]),
    "rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt": (
        [("AMD Ryzen 7 7840U w/ Radeon 780M Graphics", CPU, 0, 16), ("gfx1103", GPU, 1, 12)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx1103", "gfx1103", "AMD Radeon Graphics", 12, None, True, 15773188, 1)]),
    "rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt": (
        [("AMD Ryzen AI 9 HX 470 w/ Radeon 890M", CPU, 0, 24), ("gfx1150", GPU, 1, 16),
         ("aie2p", DSP, 0, 0)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx1150", "gfx1150", "AMD Radeon Graphics", 16, None, True, 12582912, 1)]),
    "rocminfo-gfx900-mi25-x7-threadripper-multigpu.txt": (
        [row("AMD Ryzen Threadripper PRO 3955WX 16-Cores", CPU, 0, 32)]
        + [row("gfx900", GPU, n, 64) for n in range(1, 8)],
        "ROCk module is loaded", None, None,
        [mi25(i) for i in range(6)] + [mi25(6, "GPU-0213fb02cc8c08a4")]),
    "rocminfo-gfx902-ryzen2500u-apu-rocm3.x-oldformat.txt": (
        [("AMD Ryzen 5 2500U with Radeon Vega Mobile Gfx", CPU, 0, 8), ("gfx902", GPU, 0, 11)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx902", "gfx902+xnack", "AMD Ryzen 5 2500U with Radeon Vega Mobile Gfx", 11,
             None, True, None, 0)]),
    "rocminfo-gfx90c-ryzen4300u-apu-rocm5.7.txt": (
        [("AMD Ryzen 3 4300U with Radeon Graphics", CPU, 0, 4), ("gfx90c", GPU, 1, 5)],
        "ROCk module is loaded", None, None,
        [gpu(0, "gfx90c", "gfx90c:xnack-", "AMD Radeon Graphics", 5, None, True, 4194304, 1)]),
    "rocminfo-gfx942-mi300x-x4-epyc9474f.txt": (
        [row("AMD EPYC 9474F 48-Core Processor", CPU, 0, 96),
         row("AMD EPYC 9474F 48-Core Processor", CPU, 1, 96)]
        + [row("gfx942", GPU, n, 304) for n in range(2, 6)],
        "ROCk module is loaded", None, None,
        [mi300x(0, "GPU-8d1457e2c20f59d2"), mi300x(1, "GPU-b4fa34630e85d42a"),
         mi300x(2, "GPU-e8986800e182538a"), mi300x(3, "GPU-eff71edc82169115")]),
    "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt": (
        [("gfx1201", "", None, None), ("gfx1151", "", None, None)], None, None, None,
        [gpu(0, "gfx1201", "gfx1201", "", None, None, False, None, None),
         gpu(1, "gfx1151", "gfx1151", "", None, None, True, None, None)]),
    "rocminfo-grep-sysinfo-gfx906-radeonvii-x2-rocm6.3.0.txt": (
        [("Intel(R) Celeron(R) CPU G3900 @ 2.80GHz", "", None, None),
         ("gfx906", "", None, None), ("gfx906", "", None, None)], None, None, None,
        [gpu(i, "gfx906", "gfx906:sramecc+:xnack-", "AMD Radeon VII", None, None, False, None,
             None) for i in range(2)]),
    "rocminfo-wsl2-gfx1030-rx6800xt-rocm6.1.3.txt": (
        [("CPU", CPU, 0, 16), ("gfx1030", GPU, 1, 72)], None, None, None,
        [gpu(0, "gfx1030", "gfx1030", "AMD Radeon RX 6800 XT", 72, None, False, 16730340, 1)]),
    "rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt": (
        [], "ROCk module version 6.7.0 is loaded", "Invalid argument", None, []),
    "rocminfo-fail-kfd-enomem-navi14-rocm3.10.txt": (
        [], "ROCk module is loaded", "Cannot allocate memory",
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES", []),
    "rocminfo-fail-kfd-enomem-videogroup-raven-old.txt": (
        [], "ROCk module is loaded", "Cannot allocate memory",
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES", []),
    "rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt": (
        [], "ROCk module is loaded", "Operation not permitted", None, []),
    "rocminfo-fail-rock-not-loaded-and-rocm-smi-driver-not-initialized-azure-nvv4.txt": (
        [], "ROCk module is NOT loaded, possibly no GPU devices", None, None, []),
}


def test_every_rocminfo_fixture_has_a_case() -> None:
    assert sorted(p.name for p in REAL.glob("rocminfo-*.txt")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_whole_fixture(name: str) -> None:
    agents, rock, kfd_error, hsa, gpus = CASES[name]
    report = parse_rocminfo(fixture_text(name))
    assert [(a.name, a.device_type, a.node, a.compute_units) for a in report.agents] == agents
    assert report.rock_line == rock
    assert report.rock_loaded is (None if rock is None else "NOT" not in rock)
    assert report.kfd_error == kfd_error
    assert report.hsa_status == hsa
    assert gpus_from_report(report) == tuple(gpus)


def test_npu_and_cpu_agents_are_not_gpus() -> None:
    report = parse_rocminfo(fixture_text("rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt"))
    npu = report.agents[2]
    assert (npu.name, npu.marketing_name, npu.uuid, npu.is_gpu) == (
        "aie2p", "RyzenAI-npu4", "AIE-XX", False)
    assert report.agents[1].memory_properties == "APU"
    assert report.agents[1].isas == ("gfx1150", "gfx11-generic")
    assert (report.runtime_version, report.done) == ("1.18", True)


def test_stray_backtick_and_prompt_are_dropped() -> None:
    igpu = parse_rocminfo(fixture_text("rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt"))
    assert igpu.done  # the capture ends with '*** Done ***`'
    apu = parse_rocminfo(fixture_text("rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt"))
    assert apu.text.splitlines()[0] == "ROCk module is loaded"


def test_only_the_rocminfo_command_of_a_paste_is_read() -> None:
    # The rocm-clinfo block before it reports both GPUs as gfx1201 (an override was set).
    text = fixture_text(
        "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt")
    assert rocminfo_section(clean(text)).splitlines()[0].strip() == "Name:                    gfx1201"
    einval = rocminfo_section(clean(fixture_text(
        "rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt")))
    assert einval.splitlines() == ["ROCk module version 6.7.0 is loaded",
                                   "Unable to open /dev/kfd read-write: Invalid argument",
                                   "root is member of nogroup group"]


def test_ansi_colours_of_the_real_debian_rocminfo() -> None:
    report = parse_rocminfo(
        "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n")
    assert (report.rock_line, report.rock_loaded, report.agents) == (
        "ROCk module is NOT loaded, possibly no GPU devices", False, ())


def test_markdown_fence_around_output() -> None:
    body = fixture_text("rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt")
    fenced = parse_rocminfo("```text\n" + body + "```\n")
    assert [a.name for a in fenced.agents] == ["AMD Ryzen 5 5500", "gfx1100"]
    glued = parse_rocminfo("```" + body)  # the poster's fence glued to the first line
    assert glued.rock_line == "ROCk module is loaded"


@pytest.mark.parametrize("name, key", [
    ("rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt", "kfd-einval"),
    ("rocminfo-fail-kfd-enomem-navi14-rocm3.10.txt", "kfd-enomem"),
    ("rocminfo-fail-kfd-enomem-videogroup-raven-old.txt", "kfd-enomem"),
    ("rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt", "kfd-eperm"),
    ("rocminfo-fail-rock-not-loaded-and-rocm-smi-driver-not-initialized-azure-nvv4.txt",
     "rock-not-loaded"),
])
def test_failure_diagnosis(name: str, key: str) -> None:
    found = diagnose(parse_rocminfo(fixture_text(name)).text)
    assert found is not None and found[0].key == key


def test_kfd_properties_in_the_kernel_format() -> None:
    text = "cpu_cores_count 0\nsimd_count 192\nhive_id 0\nunique_id 12646452578226468523\n"
    assert parse_kfd_properties(text + "bogus\nname x y\n") == {
        "cpu_cores_count": 0, "simd_count": 192, "hive_id": 0,
        "unique_id": 12646452578226468523}


@pytest.mark.parametrize("number, target", [
    (90010, "gfx90a"), (90012, "gfx90c"), (90402, "gfx942"), (100300, "gfx1030"),
    (110000, "gfx1100"), (110501, "gfx1151"), (120001, "gfx1201"), (0, None)])
def test_kfd_target_version(number: int, target: Optional[str]) -> None:
    assert kb.kfd_target_version(number) == target


@pytest.mark.parametrize("value, target", [
    ("11.0.0", "gfx1100"), ("10.3.0", "gfx1030"), ("9.0.0", "gfx900"), ("9.0.12", "gfx90c"),
    ("12.0.1", "gfx1201"), ("10.3", None), ("10.3.0 ", None), ("64.0.0", None),
    ("9.256.0", None), ("gfx1030", None), ("", None)])
def test_override_value_target(value: str, target: Optional[str]) -> None:
    assert kb.override_value_target(value) == target


def test_gfx_knowledge() -> None:
    assert kb.base_target("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-") == "gfx90a"
    assert kb.base_target("gfx902+xnack") == "gfx902"
    assert [kb.family_of(g) for g in ("gfx1030", "gfx1103", "gfx942", "gfx1153x", "gfx1")] == [
        "RDNA2", "RDNA3", "CDNA3", "RDNA3.5", None]
    assert [kb.is_apu(g) for g in ("gfx1036", "gfx1151", "gfx90c", "gfx942", "gfx1100")] == [
        True, True, True, False, False]
    rule = kb.override_for("gfx1031")
    assert rule is not None and (rule.value, rule.target) == ("10.3.0", "gfx1030")
    assert kb.override_for("gfx1150") is None  # the only report is a failure
    assert kb.override_for("gfx1100") is None
    assert all(r.source.startswith("https://") for rules in kb.OVERRIDE_RULES.values()
               for r in rules)
    assert all(kb.override_value_target(r.value) == r.target
               for rules in kb.OVERRIDE_RULES.values() for r in rules)
    release = kb.rocm_native_targets((6, 4, 1))
    assert release is not None and "gfx1201" in release.targets
    assert kb.rocm_native_targets((5, 7, 1)) is None


def test_select_by_index_and_uuid() -> None:
    gpus = gpus_from_report(parse_rocminfo(fixture_text(
        "rocminfo-gfx942-mi300x-x4-epyc9474f.txt")))
    sel = select("ROCR_VISIBLE_DEVICES", "3,GPU-8d14,GPU-XX,7", gpus)
    assert [g.index for g in sel.chosen] == [3, 0]
    assert sel.kept == ("3", "GPU-8d14")
    assert sel.problems == (
        "ROCR_VISIBLE_DEVICES entry GPU-XX names no GPU (rocminfo prints it for GPUs without "
        "a unique id)",
        "ROCR_VISIBLE_DEVICES entry 7 does not exist (4 GPU(s) to choose from: 0-3)")
    assert select("GPU_DEVICE_ORDINAL", "GPU-8d14", gpus, None).problems == (
        "GPU_DEVICE_ORDINAL entry 'GPU-8d14' is not an index",)


@given(st.text())
def test_parse_rocminfo_never_raises(text: str) -> None:
    report = parse_rocminfo(text)
    assert all(isinstance(a.name, str) for a in report.agents)
    gpus_from_report(report)
    diagnose(report.text)


@given(st.lists(st.sampled_from([
    "ROCk module is loaded", "*******", "Agent 1", "Agent x", "  Name: gfx1100",
    "  Name:", "      Name: amdgcn-amd-amdhsa--gfx90a:xnack-", "  Uuid: GPU-XX",
    "  Device Type: GPU", "  Compute Unit: 99999999999999999999", "      Segment: GLOBAL",
    "      Size: 12(0xc) KB", "$ rocminfo", "root:~# ls", "\x1b[31m", "```", "Node: -1",
    "  Marketing Name: ::::", "Call returned HSA_STATUS_ERROR", ""])).map("\n".join))
def test_parse_rocminfo_shaped_noise_never_raises(text: str) -> None:
    for agent in gpus_from_report(parse_rocminfo(text)):
        assert agent.index >= 0


@given(st.text(), st.text())
def test_other_parsers_never_raise(text: str, value: str) -> None:
    parse_kfd_properties(text)
    kb.override_value_target(value)
    kb.base_target(value)
    kb.family_of(value)
    select("HIP_VISIBLE_DEVICES", value, ())
