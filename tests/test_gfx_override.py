"""gfx-override: real rocminfo captures with HSA_OVERRIDE_GFX_VERSION set, whole results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from rocmdoctor.checks.gfx_override import TORCH_ARCH, GfxOverride
from rocmdoctor.facts.amd_gpus import (
    KFD_NODES,
    _real_targets,
    amd_gpus,
    gpus_from_report,
)
from rocmdoctor.facts.rocm_root import DISTRO_VERSION_FILES
from rocmdoctor.facts.rocminfo import parse_rocminfo
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import gfx as kb
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot
from tests.test_visible_devices import kfd_node

CHECK = GfxOverride()
SIGNALS = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl")
INFO, HINT, ERR = Finding.info, Finding.hint, Finding.error
APU_780M = "rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt"
XTX = "rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt"
IGPU = "rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt"
MISREPORT = "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt"
NPU = "rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt"
# torch.cuda.get_arch_list() of the rocm6.x wheels (research notes, torch/cuda/__init__.py).
ROCM6_WHEEL = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100",
               "gfx1101", "gfx1102"]
UNSET = Fix("Unset the override.", commands=("unset HSA_OVERRIDE_GFX_VERSION",))
# The KFD topology of the RX 6800 XT + Ryzen 7700X box: the real targets, whatever the
# override makes rocminfo report (gfx1030 = 100300, gfx1036 = 100306).
IGPU_SYSFS = {
    f"{KFD_NODES}/0/properties": kfd_node(0, 0, 0, 0, cpu_cores=16),
    f"{KFD_NODES}/1/properties": kfd_node(144, 2, 100300, int("e0ce170bfa1769dd", 16)),
    f"{KFD_NODES}/2/properties": kfd_node(4, 2, 100306, 0),
    f"{KFD_NODES}/1/name": "ip discovery\n", f"{KFD_NODES}/2/name": "ip discovery\n",
}
NO_ROCM_VERSION = (*(f"/opt/rocm/{p}" for p in (
    ".info/version", "core/.info/version", "include/rocm-core/rocm_version.h",
    "include/rocm_version.h")), *DISTRO_VERSION_FILES)


def host(name: str, env: dict[str, str], arch: Optional[list[str]] = ROCM6_WHEEL,
         files: Optional[dict[str, str]] = None, rocm_version: Optional[str] = "6.2.1",
         absent: tuple[str, ...] = (KFD_NODES,)) -> SnapshotHost:
    python: Optional[dict[str, Any]] = None
    if arch is not None:
        python = {"executable": "/usr/bin/python3", "version": "3.11.7",
                  "torch": {"imported": True, "arch_list": arch}}
    version = {"/opt/rocm/.info/version": rocm_version + "\n"} if rocm_version else {}
    paths = {} if rocm_version else {"/opt/rocm": {"type": "dir", "mode": "0755"}}
    snap = make_snapshot(env=env, commands={"rocminfo": fixture_text(name)}, python=python,
                         files={**version, **(files or {})}, paths=paths)
    return SnapshotHost(snap, strict=True, absent=SIGNALS + absent)


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = kb.HSAKMT_TOPOLOGY) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def test_not_set() -> None:
    assert run(host(XTX, {})) == expect(Status.PASS, "HSA_OVERRIDE_GFX_VERSION is not set")


def test_not_rocm() -> None:
    snap = make_snapshot(env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    h = SnapshotHost(snap, strict=True, absent=SIGNALS + ("/opt/rocm",) + NO_ROCM_VERSION)
    assert run(h) == expect(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found")


def test_malformed_values() -> None:
    env = {"HSA_OVERRIDE_GFX_VERSION": "10.3", "HSA_OVERRIDE_GFX_VERSION_1": "11.0.0 "}
    assert run(host(APU_780M, env)) == expect(
        Status.FAIL, "HSA_OVERRIDE_GFX_VERSION='10.3' is not a version X.Y.Z: the ROCm runtime "
        "rejects it and finds no GPU",
        (ERR("HSA_OVERRIDE_GFX_VERSION='10.3': libhsakmt accepts only major.minor.stepping "
             "(major <= 63, minor and stepping <= 255), nothing around it"),
         ERR("HSA_OVERRIDE_GFX_VERSION_1='11.0.0 ': libhsakmt accepts only major.minor.stepping "
             "(major <= 63, minor and stepping <= 255), nothing around it")),
        Fix("Unset it, or set it to the X.Y.Z value your GPU needs (see gfx-override after "
            "fixing).", commands=("unset HSA_OVERRIDE_GFX_VERSION",
                                  "unset HSA_OVERRIDE_GFX_VERSION_1")))


M780 = "gfx1103 AMD Radeon Graphics"
ROCM_4557 = "https://github.com/ROCm/ROCm/issues/4557"
# AMD's caveat (schung-amd in ROCm#4557): same instruction set, fewer VGPRs than gfx1100.
RULE_780M = ("11.0.0 runs the gfx1100 (RX 7900) code on this RDNA3 GPU; the instruction set is "
             "the same, but gfx1103 has fewer registers than gfx1100, so gfx1100 kernels that "
             "need them fail on it (AMD, ROCm#4557)")
NEEDED_780M = f"gfx1103 is not in PyTorch's compiled arch list; {RULE_780M}"


def test_needed_on_the_780m() -> None:
    # The capture was taken without the override.
    assert run(host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})) == expect(
        Status.PASS, f"HSA_OVERRIDE_GFX_VERSION=11.0.0 is needed: {NEEDED_780M}",
        (INFO(f"GPU 0 ({M780}): {NEEDED_780M}"),), source=ROCM_4557)


def test_leading_zeros_are_the_same_value_libhsakmt_reads() -> None:
    # libhsakmt reads each number with sscanf's %u: 11.0.00 is 11.0.0, the value reported to
    # work on the 780M (kb.parse_override).
    text = NEEDED_780M.replace("; 11.0.0 runs", "; 11.0.00 runs")
    assert run(host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.00"})) == expect(
        Status.PASS, f"HSA_OVERRIDE_GFX_VERSION=11.0.00 is needed: {text}",
        (INFO(f"GPU 0 ({M780}): {text}"),), source=ROCM_4557)


def test_wrong_family_on_the_780m() -> None:
    text = ("wrong family: 10.3.0 selects gfx1030 (RDNA2) code for a RDNA3 GPU (gfx1103); code "
            "for another family does not run on it")
    assert run(host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=10.3.0: {text}", (ERR(f"GPU 0 ({M780}): {text}"),),
        Fix("Set the override to the value that works for this GPU.",
            commands=("export HSA_OVERRIDE_GFX_VERSION=11.0.0",)), kb.LLVM_GENERIC)


def test_unneeded_when_torch_has_the_target() -> None:
    # torch 2.13+rocm7.2 wheels add gfx1103 (research notes, get_arch_list).
    text = ("unneeded: gfx1103 is in PyTorch's compiled arch list, and the override makes it "
            "run gfx1100 code instead")
    h = host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, arch=ROCM6_WHEEL + ["gfx1103"])
    assert run(h) == expect(Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}",
                            (HINT(f"GPU 0 ({M780}): {text}"),), UNSET, TORCH_ARCH)


def test_target_missing_from_torch_too() -> None:
    text = "gfx1100 is not in PyTorch's arch list either, so the override cannot help gfx1103"
    h = host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
             arch=["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030"])
    assert run(h) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}", (ERR(f"GPU 0 ({M780}): {text}"),),
        Fix("Set the override to the value that works for this GPU.",
            commands=("export HSA_OVERRIDE_GFX_VERSION=11.0.0",)))


WRONG_XTX = ("wrong family: 10.3.0 selects gfx1030 (RDNA2) code for a RDNA3 GPU (gfx1100); "
             "code for another family does not run on it")


def test_another_family_fails_even_when_torch_has_the_native_target() -> None:
    # The family test comes first: gfx1030 code objects are the wrong instruction set for a
    # gfx1100 whether or not the wheel carries gfx1100 code (LLVM's generic processor table).
    assert run(host(XTX, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=10.3.0: {WRONG_XTX}",
        (ERR(f"GPU 0 (gfx1100 Radeon RX 7900 XTX): {WRONG_XTX}"),), UNSET, kb.LLVM_GENERIC)


def test_another_family_fails_when_the_rocm_release_supports_the_gpu() -> None:
    # ROCm 6.2 supports gfx1100 natively; rocminfo's gfx1100 is not the override's gfx1030,
    # so it is the real target.
    assert run(host(XTX, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, arch=None)) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=10.3.0: {WRONG_XTX}",
        (ERR(f"GPU 0 (gfx1100 Radeon RX 7900 XTX): {WRONG_XTX}"),), UNSET, kb.LLVM_GENERIC)


def test_same_family_unneeded_when_the_rocm_release_supports_the_gpu() -> None:
    text = ("unneeded: gfx1100 is in the ROCm 6.2 support list, and the override makes it run "
            "gfx1101 code instead")
    assert run(host(XTX, {"HSA_OVERRIDE_GFX_VERSION": "11.0.1"}, arch=None)) == expect(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.1: {text}",
        (HINT(f"GPU 0 (gfx1100 Radeon RX 7900 XTX): {text}"),), UNSET, kb.ROCM_MATRIX)


def test_rdna4_on_a_release_before_its_support_names_the_release() -> None:
    # "ROCm 6.4.1 introduces support for the RDNA4 architecture-based Radeon AI PRO R9700,
    # Radeon RX 9070 ..." (6.4.1 release notes); ROCm 6.3's list has no gfx1201.
    why = ("gfx1201 is not in the ROCm 6.3 support list (AMD lists it from ROCm 6.4.1 on); "
           "12.0.0 (gfx1200) is in the same family, but no report says it works on gfx1201")
    wrong = ("wrong family: 12.0.0 selects gfx1200 (RDNA4) code for a RDNA3.5 GPU (gfx1151); "
             "code for another family does not run on it")
    h = host(MISREPORT, {"HSA_OVERRIDE_GFX_VERSION": "12.0.0"}, arch=None, rocm_version="6.3.4")
    assert run(h) == expect(Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=12.0.0: {wrong}",
                            (HINT(f"GPU 0 (gfx1201): {why}"), ERR(f"GPU 1 (gfx1151): {wrong}")),
                            UNSET, kb.LLVM_GENERIC)


def test_release_newer_than_the_tables_is_said_so() -> None:
    why = ("could not tell whether gfx1103 has native code (no PyTorch arch list; ROCm 10.2.0 "
           f"is newer than what this rocmdoctor knows, tables dated {KB_DATE}); {RULE_780M}")
    h = host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, arch=None, rocm_version="10.2.0")
    assert run(h) == expect(Status.PASS, f"HSA_OVERRIDE_GFX_VERSION=11.0.0 is needed: {why}",
                            (INFO(f"GPU 0 ({M780}): {why}"),), source=ROCM_4557)


def test_override_to_a_target_the_tables_do_not_know() -> None:
    text = (f"13.1.0 selects gfx1310, a target this rocmdoctor does not know (tables dated "
            f"{KB_DATE})")
    assert run(host(XTX, {"HSA_OVERRIDE_GFX_VERSION": "13.1.0"})) == expect(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=13.1.0: {text}",
        (HINT(f"GPU 0 (gfx1100 Radeon RX 7900 XTX): {text}"),), UNSET, kb.LLVM_GENERIC)


def test_native_support_unknown() -> None:
    text = ("could not tell whether gfx1103 has native code (no PyTorch arch list, ROCm "
            f"release not known); {RULE_780M}")
    h = host(APU_780M, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, arch=None, rocm_version=None,
             absent=(KFD_NODES, *NO_ROCM_VERSION))
    assert run(h) == expect(Status.PASS, f"HSA_OVERRIDE_GFX_VERSION=11.0.0 is needed: {text}",
                            (INFO(f"GPU 0 ({M780}): {text}"),), source=ROCM_4557)


def test_override_equal_to_the_real_target_read_from_sysfs() -> None:
    files = {f"{KFD_NODES}/0/properties": kfd_node(0, 0, 0, 0, cpu_cores=12),
             f"{KFD_NODES}/1/properties": kfd_node(192, 2, 110000, 0),
             f"{KFD_NODES}/1/name": "ip discovery\n"}
    text = "11.0.0 is gfx1100, the GPU's own target: the override changes nothing; unset it"
    h = host(XTX, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, files=files, absent=())
    assert run(h) == expect(Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}",
                            (HINT(f"GPU 0 (gfx1100 Radeon RX 7900 XTX): {text}"),), UNSET)


def test_misreport_egpu_and_strix_halo() -> None:
    # ROCm#5696: HSA_OVERRIDE_GFX_VERSION=12.0.1 in ~/.bashrc made the 8060S report gfx1201.
    # Without sysfs the R9700's gfx1201 cannot be told from the override's; the 8060S's
    # gfx1151 (in the capture taken after removing it) is the real one.
    wrong = ("wrong family: 12.0.1 selects gfx1201 (RDNA4) code for a RDNA3.5 GPU (gfx1151); "
             "code for another family does not run on it")
    h = host(MISREPORT, {"HSA_OVERRIDE_GFX_VERSION": "12.0.1"},
             arch=ROCM6_WHEEL + ["gfx1200", "gfx1201"])
    assert run(h) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=12.0.1: {wrong}",
        (HINT("GPU 0 (gfx1201): its real target is unknown: rocminfo reports the overridden "
              "gfx1201 and the KFD topology is not readable"),
         ERR(f"GPU 1 (gfx1151): {wrong}")), UNSET, kb.LLVM_GENERIC)


def test_igpu_needs_it_dgpu_unchanged_real_targets_from_sysfs() -> None:
    h = host(IGPU, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, files=IGPU_SYSFS, absent=())
    needed = ("gfx1036 is not in PyTorch's compiled arch list; 10.3.0 runs the gfx1030 "
              "(RX 6800/6900) code on this RDNA2 GPU")
    assert run(h) == expect(
        Status.PASS, f"HSA_OVERRIDE_GFX_VERSION=10.3.0 is needed: {needed}",
        (INFO("GPU 0 (gfx1030 AMD Radeon RX 6800 XT): 10.3.0 is its own target (gfx1030): "
              "no effect"),
         INFO(f"GPU 1 (gfx1036 AMD Radeon Graphics): {needed}")), source=kb.LLVM_GENERIC)


def test_sysfs_gives_the_real_target_when_rocminfo_reports_the_override() -> None:
    # Under HSA_OVERRIDE_GFX_VERSION=10.3.0 rocminfo names the 7700X's iGPU gfx1030 too
    # (as rocm-clinfo did in ROCm#5696); the KFD topology still says gfx1036.
    h = host(IGPU, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, files=IGPU_SYSFS, absent=())
    reported = gpus_from_report(parse_rocminfo(fixture_text(IGPU)))
    overridden = (reported[0], replace(reported[1], gfx="gfx1030", gfx_full="gfx1030"))
    fixed = _real_targets(h, overridden)
    assert [(g.gfx, g.gfx_full, g.reported_gfx, g.gfx_known) for g in fixed] == [
        ("gfx1030", "gfx1030", None, True), ("gfx1036", "gfx1036", "gfx1030", True)]
    # what the runtime loads code for: the override's target on both
    assert [g.reported_gfx or g.gfx for g in fixed] == ["gfx1030", "gfx1030"]
    assert [g.gfx for g in amd_gpus(h).gpus] == ["gfx1030", "gfx1036"]


def test_per_node_override_only_reaches_its_node() -> None:
    h = host(IGPU, {"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}, files=IGPU_SYSFS, absent=())
    needed = ("gfx1036 is not in PyTorch's compiled arch list; 10.3.0 runs the gfx1030 "
              "(RX 6800/6900) code on this RDNA2 GPU")
    assert run(h) == expect(
        Status.PASS, f"HSA_OVERRIDE_GFX_VERSION_2=10.3.0 is needed: {needed}",
        (INFO(f"GPU 1 (gfx1036 AMD Radeon Graphics): {needed}"),
         INFO("GPU 0 (gfx1030 AMD Radeon RX 6800 XT) is not affected")), source=kb.LLVM_GENERIC)


def test_reported_failure_on_gfx1150() -> None:
    text = ("11.0.0 on gfx1150: reported to fail with HSA_STATUS_ERROR_INVALID_ISA on gfx1150; "
            "use a PyTorch build that includes gfx1150 instead")
    assert run(host(NPU, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})) == expect(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}",
        (HINT(f"GPU 0 (gfx1150 AMD Radeon Graphics): {text}"),), UNSET,
        "https://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/37")


def test_reported_crash_on_gfx1151_and_wrong_family_on_gfx1201() -> None:
    # unsloth#8480: gfx1100 kernels on gfx1151 "dies with SIGSEGV" at the first allocation.
    text = ("11.0.0 on gfx1151: reported to crash with SIGSEGV at the first allocation on "
            "gfx1151 (and to run for others); use a PyTorch build that includes gfx1151 instead")
    wrong = ("wrong family: 11.0.0 selects gfx1100 (RDNA3) code for a RDNA4 GPU (gfx1201); "
             "code for another family does not run on it")
    h = host(MISREPORT, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert run(h) == expect(
        Status.FAIL, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {wrong}",
        (ERR(f"GPU 0 (gfx1201): {wrong}"), HINT(f"GPU 1 (gfx1151): {text}")), UNSET,
        kb.LLVM_GENERIC)


def test_same_family_without_a_report() -> None:
    # No report of 11.0.1 (gfx1101 code) on gfx1150.
    text = ("gfx1150 is not in PyTorch's compiled arch list; 11.0.1 (gfx1101) is in the same "
            "family, but no report says it works on gfx1150")
    assert run(host(NPU, {"HSA_OVERRIDE_GFX_VERSION": "11.0.1"})) == expect(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.1: {text}",
        (HINT(f"GPU 0 (gfx1150 AMD Radeon Graphics): {text}"),), UNSET, kb.LLVM_GENERIC)


def test_the_usual_rdna3_value_on_a_gfx1152_is_not_the_one_reported_to_work() -> None:
    # A Krackan Point APU read from the KFD topology (no rocminfo): 11.0.0 is a value of the
    # same family, but the report for gfx1152 is 11.5.0 (llama.cpp#19949).
    text = ("11.0.0 is not the value reported to work for gfx1152; that is 11.5.0 (runs the "
            "gfx1150 (Radeon 890M) code on this RDNA3.5 APU, which has the same register file)")
    python = {"executable": "/usr/bin/python3", "version": "3.11.7",
              "torch": {"imported": True, "arch_list": ROCM6_WHEEL}}
    files = {"/opt/rocm/.info/version": "6.2.1\n",
             f"{KFD_NODES}/0/properties": kfd_node(0, 0, 0, 0, cpu_cores=16),
             f"{KFD_NODES}/1/properties": kfd_node(8, 2, 110502, 0, cpu_cores=12),
             f"{KFD_NODES}/0/name": "\n", f"{KFD_NODES}/1/name": "ip discovery\n"}
    snap = make_snapshot(env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, files=files, python=python)
    h = SnapshotHost(snap, strict=True, absent=SIGNALS + ("rocminfo",))
    assert run(h) == expect(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}",
        (HINT(f"GPU 0 (gfx1152 Radeon 860M/840M (Krackan Point)): {text}"),),
        Fix("Set the override to the value that works for this GPU.",
            commands=("export HSA_OVERRIDE_GFX_VERSION=11.5.0",)),
        "https://github.com/ggml-org/llama.cpp/issues/19949")
