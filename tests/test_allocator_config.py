"""allocator-config: the torch-mirroring parser, and the check on real torch builds.

The torch builds come from real `collect_env` captures (tests/fixtures/real); the setting most
tests use is the one torch itself recommends in a real HIP out-of-memory message.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocmdoctor.checks.allocator_config import AllocatorConfig
from rocmdoctor.facts.alloc_conf import (
    LEGACY,
    MODERN,
    AllocConfError,
    parse_alloc_conf,
    repair,
    split_items,
    tokenize,
)
from rocmdoctor.facts.torch import release_of, torch_info
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import allocator as kb
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

OOM = "errors-hip-out-of-memory-gfx1151-strix-halo-15gib-cap-vs-96gib-vram.txt"
TORCH_291_ROCM72 = "collect_env-gfx1150-890m-rocm7.2-container-torch2.9.1.txt"
TORCH_212_ROCM61 = "collect_env-wsl2-gfx1030-rx6800xt-rocm6.1.3-no-gfx-suffix.txt"
TORCH_250_ROCM62 = "collect_env-vllm-gfx942-mi300x-x8-rocm6.2-topology.txt"
# The platform files platform_kind() looks at when torch's build is unknown.
PLATFORM_PATHS = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version",
                  "/dev/nvidiactl")
TITLE = AllocatorConfig.title
ALLOC_CPP = kb.ALLOC_CONFIG_CPP
SET_ONLY = ("Set only {}, to a value torch accepts and uses; put it in the shell profile or "
            "job script that starts training.")
UNSET = "Nothing in the setting takes effect here; unset it."


def oom_advice() -> tuple[str, str]:
    """The variable and value torch's own HIP OOM message recommends (real capture)."""
    m = re.search(r"try setting (PYTORCH_HIP_ALLOC_CONF)=(\S+) to avoid", fixture_text(OOM))
    assert m is not None
    return m.group(1), m.group(2)


def probe_from_collect_env(name: str) -> dict[str, Any]:
    """The snapshot `python` probe fields that a real collect_env capture states."""
    text = fixture_text(name)

    def field(label: str) -> Optional[str]:
        m = re.search(rf"^{label}: (.*)$", text, re.M)
        assert m is not None, label
        value = m.group(1).strip()
        return None if value == "N/A" else value

    version = field("PyTorch version")
    return {"executable": "python3", "version": "3", "packages": {"torch": version},
            "torch": {"imported": True, "error": None, "version": version,
                      "hip": field("ROCM used to build PyTorch"),
                      "cuda": field("CUDA used to build PyTorch")}}


def probe(version: str, hip: Optional[str] = None, cuda: Optional[str] = None) -> dict[str, Any]:
    return {"executable": "python3", "version": "3", "packages": {"torch": version},
            "torch": {"imported": True, "error": None, "version": version, "hip": hip,
                      "cuda": cuda}}


# torch 2.13 ROCm wheels are built for ROCm 7.2, whose HIP version is 7.2.53211
# (download.pytorch.org/whl/rocm7.2; ROCm compatibility matrix). Not a capture.
TORCH_213_ROCM72 = probe("2.13.0+rocm7.2", hip="7.2.53211")


def check(env: dict[str, str], python: Optional[dict[str, Any]]) -> CheckResult:
    host = SnapshotHost(make_snapshot(env=env, python=python), strict=True,
                        absent=PLATFORM_PATHS)
    return dataclasses.replace(run_one(AllocatorConfig(), host), duration_ms=0)


def expected(status: Status, summary: str, findings: list[Finding], fix: Optional[Fix],
             source: Optional[str]) -> CheckResult:
    return CheckResult("allocator-config", TITLE, status, summary, tuple(findings), fix,
                       source)


# --- the check ----------------------------------------------------------------------------


def test_skips_when_no_allocator_variable_is_set() -> None:
    assert check({"HIP_VISIBLE_DEVICES": "0"}, TORCH_213_ROCM72) == expected(
        Status.SKIP, "none of PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF, "
        "PYTORCH_HIP_ALLOC_CONF is set", [], None, kb.CUDA_NOTES)


def test_oom_advice_is_ignored_by_torch_2_9_1_for_rocm_7_2() -> None:
    var, value = oom_advice()
    assert (var, value) == ("PYTORCH_HIP_ALLOC_CONF", "expandable_segments:True")
    assert check({var: value}, probe_from_collect_env(TORCH_291_ROCM72)) == expected(
        Status.WARN, "expandable_segments:True is ignored",
        [Finding.error("expandable_segments:True is ignored: torch 2.9.1 built for ROCm 7.2 "
                       "prints \"expandable_segments not supported on this platform\"; ROCm "
                       "support starts with torch 2.12 built for ROCm 7.0 or newer"),
         Finding.info("torch 2.9.1 warns \"PYTORCH_HIP_ALLOC_CONF is deprecated, use "
                      "PYTORCH_ALLOC_CONF instead\"; it still works")],
        Fix(UNSET, ("unset PYTORCH_HIP_ALLOC_CONF",)), kb.ROCM_EXPANDABLE_PR)


def test_oom_advice_is_ignored_by_torch_2_1_2_for_rocm_6_1() -> None:
    var, value = oom_advice()
    assert check({var: value}, probe_from_collect_env(TORCH_212_ROCM61)) == expected(
        Status.WARN, "expandable_segments:True is ignored",
        [Finding.error("expandable_segments:True is ignored: torch 2.1.2 built for ROCm 6.1 "
                       "prints \"expandable_segments not supported on this platform\"; ROCm "
                       "support starts with torch 2.12 built for ROCm 7.0 or newer")],
        Fix(UNSET, ("unset PYTORCH_HIP_ALLOC_CONF",)), kb.ROCM_EXPANDABLE_PR)


def test_oom_advice_takes_effect_with_torch_2_13_for_rocm_7_2() -> None:
    var, value = oom_advice()
    assert check({var: value}, TORCH_213_ROCM72) == expected(
        Status.PASS, "PYTORCH_HIP_ALLOC_CONF='expandable_segments:True' is valid and in "
        "effect (torch 2.13.0)", [], None, kb.CUDA_NOTES)


def test_unified_name_is_not_read_before_torch_2_8() -> None:
    assert check({"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
                 probe_from_collect_env(TORCH_250_ROCM62)) == expected(
        Status.WARN, "PYTORCH_ALLOC_CONF is ignored",
        [Finding.error("PYTORCH_ALLOC_CONF is ignored: torch 2.5.0a0 (rocm build) reads only "
                       "PYTORCH_CUDA_ALLOC_CONF and PYTORCH_HIP_ALLOC_CONF"),
         Finding.error("expandable_segments:True is ignored: torch 2.5.0a0 built for ROCm 6.2 "
                       "prints \"expandable_segments not supported on this platform\"; ROCm "
                       "support starts with torch 2.12 built for ROCm 7.0 or newer")],
        Fix(UNSET, ("unset PYTORCH_ALLOC_CONF",)), kb.LEGACY_CONFIG_H)


def test_unified_name_before_torch_2_8_moves_to_the_cuda_name() -> None:
    assert check({"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.8"},
                 probe_from_collect_env(TORCH_250_ROCM62)) == expected(
        Status.WARN, "PYTORCH_ALLOC_CONF is ignored",
        [Finding.error("PYTORCH_ALLOC_CONF is ignored: torch 2.5.0a0 (rocm build) reads only "
                       "PYTORCH_CUDA_ALLOC_CONF and PYTORCH_HIP_ALLOC_CONF")],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8",
             "unset PYTORCH_ALLOC_CONF")), kb.LEGACY_CONFIG_H)


def test_lowercase_true_fails_on_torch_2_13() -> None:
    assert check({"PYTORCH_HIP_ALLOC_CONF": "expandable_segments:true"},
                 TORCH_213_ROCM72) == expected(
        Status.FAIL, "PYTORCH_HIP_ALLOC_CONF is invalid: torch raises ValueError: Expected "
        "'True' or 'False' at index 2 in ConfigTokenizer but got 'true'",
        [Finding.error("PYTORCH_HIP_ALLOC_CONF='expandable_segments:true': torch 2.13.0 raises "
                       "ValueError: Expected 'True' or 'False' at index 2 in ConfigTokenizer "
                       "but got 'true' at the first GPU allocation")],
        Fix(SET_ONLY.format("PYTORCH_HIP_ALLOC_CONF"),
            ("export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True",)), ALLOC_CPP)


def test_lowercase_true_fails_on_torch_2_1_2_with_the_legacy_message() -> None:
    assert check({"PYTORCH_HIP_ALLOC_CONF": "expandable_segments:true"},
                 probe_from_collect_env(TORCH_212_ROCM61)) == expected(
        Status.FAIL, "PYTORCH_HIP_ALLOC_CONF is invalid: torch raises RuntimeError: Expected a "
        "single True/False argument for expandable_segments",
        [Finding.error("PYTORCH_HIP_ALLOC_CONF='expandable_segments:true': torch 2.1.2 raises "
                       "RuntimeError: Expected a single True/False argument for "
                       "expandable_segments at the first GPU allocation"),
         Finding.error("expandable_segments:True is ignored: torch 2.1.2 built for ROCm 6.1 "
                       "prints \"expandable_segments not supported on this platform\"; ROCm "
                       "support starts with torch 2.12 built for ROCm 7.0 or newer")],
        Fix(UNSET, ("unset PYTORCH_HIP_ALLOC_CONF",)), kb.LEGACY_CONFIG_CPP)


def test_equals_sign_instead_of_colon_fails() -> None:
    assert check({"PYTORCH_ALLOC_CONF": "max_split_size_mb=128"}, TORCH_213_ROCM72) == expected(
        Status.FAIL, "PYTORCH_ALLOC_CONF is invalid: torch raises ValueError: Unrecognized key "
        "'max_split_size_mb=128' in Accelerator allocator config.",
        [Finding.error("PYTORCH_ALLOC_CONF='max_split_size_mb=128': torch 2.13.0 raises "
                       "ValueError: Unrecognized key 'max_split_size_mb=128' in Accelerator "
                       "allocator config. at the first GPU allocation")],
        Fix(SET_ONLY.format("PYTORCH_ALLOC_CONF"),
            ("export PYTORCH_ALLOC_CONF=max_split_size_mb:128",)), ALLOC_CPP)


def test_max_split_size_below_20_fails_and_the_fix_keeps_the_other_options() -> None:
    value = "garbage_collection_threshold:0.8,max_split_size_mb:16"
    assert check({"PYTORCH_ALLOC_CONF": value}, TORCH_213_ROCM72) == expected(
        Status.FAIL, "PYTORCH_ALLOC_CONF is invalid: torch raises ValueError: CachingAllocator "
        "option max_split_size_mb too small, must be >= 20",
        [Finding.error(f"PYTORCH_ALLOC_CONF='{value}': torch 2.13.0 raises ValueError: "
                       "CachingAllocator option max_split_size_mb too small, must be >= 20 at "
                       "the first GPU allocation")],
        Fix(SET_ONLY.format("PYTORCH_ALLOC_CONF"),
            ("export PYTORCH_ALLOC_CONF=garbage_collection_threshold:0.8,max_split_size_mb:20",)),
        ALLOC_CPP)


def test_roundup_divisions_not_a_power_of_two_fails() -> None:
    assert check({"PYTORCH_HIP_ALLOC_CONF": "roundup_power2_divisions:3"},
                 TORCH_213_ROCM72) == expected(
        Status.FAIL, "PYTORCH_HIP_ALLOC_CONF is invalid: torch raises ValueError: For "
        "roundups, the divisions has to be power of 2",
        [Finding.error("PYTORCH_HIP_ALLOC_CONF='roundup_power2_divisions:3': torch 2.13.0 "
                       "raises ValueError: For roundups, the divisions has to be power of 2 "
                       "at the first GPU allocation")],
        Fix(SET_ONLY.format("PYTORCH_HIP_ALLOC_CONF"),
            ("export PYTORCH_HIP_ALLOC_CONF=roundup_power2_divisions:2",)), ALLOC_CPP)


def test_expandable_segments_is_unknown_to_torch_2_0() -> None:
    assert check({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                 probe("2.0.1+rocm5.4.2", hip="5.4.22803-474e8620")) == expected(
        Status.FAIL, "PYTORCH_CUDA_ALLOC_CONF is invalid: torch raises RuntimeError: "
        "Unrecognized CachingAllocator option: expandable_segments",
        [Finding.error("PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True': torch 2.0.1 raises "
                       "RuntimeError: Unrecognized CachingAllocator option: expandable_segments "
                       "at the first GPU allocation")],
        Fix(UNSET, ("unset PYTORCH_CUDA_ALLOC_CONF",)), kb.LEGACY_CONFIG_CPP)


def test_cuda_name_shadows_the_unified_name_on_torch_2_13() -> None:
    env = {"PYTORCH_ALLOC_CONF": "max_split_size_mb:512",
           "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert check(env, TORCH_213_ROCM72) == expected(
        Status.WARN, "PYTORCH_ALLOC_CONF is shadowed",
        [Finding.error("PYTORCH_ALLOC_CONF is shadowed: torch 2.13.0 uses only the first "
                       "variable set, in the order PYTORCH_CUDA_ALLOC_CONF, "
                       "PYTORCH_HIP_ALLOC_CONF, PYTORCH_ALLOC_CONF; PYTORCH_CUDA_ALLOC_CONF "
                       "wins")],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
             "unset PYTORCH_ALLOC_CONF")), ALLOC_CPP)


def test_an_empty_cuda_name_still_shadows_and_the_fix_keeps_the_meant_value() -> None:
    env = {"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": ""}
    assert check(env, TORCH_213_ROCM72) == expected(
        Status.WARN, "PYTORCH_ALLOC_CONF is shadowed (an empty PYTORCH_CUDA_ALLOC_CONF counts "
        "as set)",
        [Finding.error("PYTORCH_ALLOC_CONF is shadowed (an empty PYTORCH_CUDA_ALLOC_CONF counts "
                       "as set): torch 2.13.0 uses only the first variable set, in the order "
                       "PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF, PYTORCH_ALLOC_CONF; "
                       "PYTORCH_CUDA_ALLOC_CONF wins")],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
             "unset PYTORCH_ALLOC_CONF")), ALLOC_CPP)


def test_unified_name_on_torch_2_9_1_cuda_moves_to_the_cuda_name() -> None:
    assert check({"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
                 probe("2.9.1+cu128", cuda="12.8")) == expected(
        Status.WARN, "PYTORCH_ALLOC_CONF may be ignored",
        [Finding.error("PYTORCH_ALLOC_CONF may be ignored: torch 2.9.1 silently ignored "
                       "expandable_segments given in PYTORCH_ALLOC_CONF (pytorch issue 183387); "
                       "torch 2.8 and 2.9 honour PYTORCH_CUDA_ALLOC_CONF")],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
             "unset PYTORCH_ALLOC_CONF")), kb.ALLOC_CONF_IGNORED_ISSUE)


def test_hip_name_is_not_read_by_a_cuda_build_before_torch_2_8() -> None:
    assert check({"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:128"},
                 probe("2.4.1+cu121", cuda="12.1")) == expected(
        Status.WARN, "PYTORCH_HIP_ALLOC_CONF is ignored",
        [Finding.error("PYTORCH_HIP_ALLOC_CONF is ignored: torch 2.4.1 (cuda build) reads only "
                       "PYTORCH_CUDA_ALLOC_CONF")],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
             "unset PYTORCH_HIP_ALLOC_CONF")), kb.LEGACY_CONFIG_H)


def test_async_backend_ignores_native_options() -> None:
    value = "backend:hipMallocAsync,max_split_size_mb:512,garbage_collection_threshold:0.8"
    assert check({"PYTORCH_HIP_ALLOC_CONF": value}, TORCH_213_ROCM72) == expected(
        Status.WARN, "max_split_size_mb, garbage_collection_threshold ignored with "
        "backend:hipMallocAsync",
        [Finding.error("max_split_size_mb, garbage_collection_threshold ignored with "
                       "backend:hipMallocAsync: torch warns \"backend:cudaMallocAsync ignores "
                       "max_split_size_mb,roundup_power2_divisions, and "
                       "garbage_collect_threshold.\"")],
        Fix(SET_ONLY.format("PYTORCH_HIP_ALLOC_CONF"),
            ("export PYTORCH_HIP_ALLOC_CONF=backend:hipMallocAsync",)),
        kb.CUDA_ALLOC_CONFIG_CPP)


def test_expandable_segments_with_max_split_size_on_rocm() -> None:
    value = "expandable_segments:True,max_split_size_mb:128"
    assert check({"PYTORCH_HIP_ALLOC_CONF": value}, TORCH_213_ROCM72) == expected(
        Status.WARN, "expandable_segments:True with max_split_size_mb risks data loss on ROCm",
        [Finding.error("expandable_segments:True with max_split_size_mb risks data loss on "
                       "ROCm: with ROCm 7.14 on gfx1201/gfx1100 a live tensor read back as "
                       "zeros (ROCm issue 6603), and reserved memory grew until the GPU was "
                       "full (pytorch issue 123548); drop max_split_size_mb")],
        Fix(SET_ONLY.format("PYTORCH_HIP_ALLOC_CONF"),
            ("export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True",)), kb.ROCM_ZEROS_ISSUE)


def test_unknown_torch_is_judged_by_the_newest_rules() -> None:
    assert check({"PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.6"},
                 None) == expected(
        Status.PASS, "PYTORCH_CUDA_ALLOC_CONF='garbage_collection_threshold:0.6' is valid and "
        "in effect",
        [Finding.info("torch's version is unknown: judged by the rules of torch 2.10 and "
                      "newer")], None, kb.CUDA_NOTES)


def test_cpu_build_says_the_setting_has_no_effect() -> None:
    assert check({"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
                 probe("2.13.0+cpu")) == expected(
        Status.PASS, "PYTORCH_ALLOC_CONF='expandable_segments:True' is valid and in effect "
        "(torch 2.13.0)",
        [Finding.info("torch is a CPU build: allocator settings only take effect with a ROCm "
                      "or CUDA build")], None, kb.CUDA_NOTES)


def test_torch_facts_from_real_captures() -> None:
    host = SnapshotHost(make_snapshot(python=probe_from_collect_env(TORCH_291_ROCM72)))
    facts = torch_info(host)
    assert (facts.release, facts.public_version, facts.build, facts.rocm_release) == (
        (2, 9, 1), "2.9.1", "rocm", (7, 2, 26015))
    assert release_of("2.14.0.dev20260811") == (2, 14, 0)
    assert release_of("nightly") is None


def test_a_cpu_build_on_an_amd_machine_is_judged_by_the_rocm_rules() -> None:
    # hipMallocAsync is a backend only torch's ROCm parser knows; without a GPU the CUDA
    # rules apply (the check's choice when torch names no GPU build).
    env = {"PYTORCH_HIP_ALLOC_CONF": "backend:hipMallocAsync"}
    amd = SnapshotHost(make_snapshot(env=env, python=probe("2.13.0+cpu"),
                                     paths={"/sys/module/amdgpu": {"type": "dir"}}))
    cpu_info = Finding.info("torch is a CPU build: allocator settings only take effect with a "
                            "ROCm or CUDA build")
    assert dataclasses.replace(run_one(AllocatorConfig(), amd), duration_ms=0) == expected(
        Status.PASS, "PYTORCH_HIP_ALLOC_CONF='backend:hipMallocAsync' is valid and in effect "
        "(torch 2.13.0)", [cpu_info], None, kb.CUDA_NOTES)
    assert check(env, probe("2.13.0+cpu")).summary == (
        "PYTORCH_HIP_ALLOC_CONF is invalid: torch raises ValueError: Unknown allocator "
        "backend, options are native and cudaMallocAsync")


def test_expandable_segments_with_max_split_size_is_no_risk_on_cuda() -> None:
    value = "expandable_segments:True,max_split_size_mb:128"
    assert check({"PYTORCH_CUDA_ALLOC_CONF": value},
                 probe("2.13.0+cu128", cuda="12.8")) == expected(
        Status.PASS, f"PYTORCH_CUDA_ALLOC_CONF={value!r} is valid and in effect (torch 2.13.0)",
        [], None, kb.CUDA_NOTES)


def test_an_invalid_winner_is_named_first_and_each_shadowed_variable_after_it() -> None:
    env = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb=128",
           "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:256",
           "PYTORCH_ALLOC_CONF": "max_split_size_mb:512"}
    order = "PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF, PYTORCH_ALLOC_CONF"
    raises = ("ValueError: Unrecognized key 'max_split_size_mb=128' in Accelerator allocator "
              "config.")
    assert check(env, TORCH_213_ROCM72) == expected(
        Status.FAIL, f"PYTORCH_CUDA_ALLOC_CONF is invalid: torch raises {raises}",
        [Finding.error(f"PYTORCH_CUDA_ALLOC_CONF='max_split_size_mb=128': torch 2.13.0 raises "
                       f"{raises} at the first GPU allocation"),
         *(Finding.error(f"{var} is shadowed: torch 2.13.0 uses only the first variable set, "
                         f"in the order {order}; PYTORCH_CUDA_ALLOC_CONF wins")
           for var in ("PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"))],
        Fix(SET_ONLY.format("PYTORCH_CUDA_ALLOC_CONF"),
            ("export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
             "unset PYTORCH_ALLOC_CONF PYTORCH_HIP_ALLOC_CONF")), ALLOC_CPP)


# --- the parser ---------------------------------------------------------------------------

# What the torch 2.13 CPU wheel does with each value (test_parser_agrees_with_torch checks it).
CPU_TABLE: list[tuple[str, Optional[tuple[str, str]]]] = [
    ("", None),
    ("max_split_size_mb:128", None),
    ("max_split_size_mb:20", None),
    ("max_split_size_mb:-1", None),  # std::stoull wraps a minus sign
    ("max_split_size_mb:30abc", None),
    ("max_split_size_mb,128", None),  # the separator is not checked
    (" max_split_size_mb : 128 , expandable_segments : True ", None),
    ("\tmax_split_size_mb:128\n", None),
    ("foo:1", None),  # no device parser on a CPU build: unknown keys are skipped
    ("foo:[1,2]", None),
    ("backend:foo", None),
    ("expandable_segments:True,", None),
    ("garbage_collection_threshold:0x1p-1", None),
    ("garbage_collection_threshold:.5", None),
    ("garbage_collection_threshold:0x1p-1070", None),
    ("roundup_power2_divisions:[256:1,512:2,>:8]", None),
    ("roundup_power2_divisions:[]", None),
    ("large_segment_size_mb:40,max_split_size_mb:30,large_segment_size_mb:20", None),
    # after a skipped key with a list value, large_segment_size_mb sits off the 4-token rhythm
    ("foo:[1],large_segment_size_mb:10",
     ("ValueError", "CachingAllocator option large_segment_size_mb must be > 10 MB")),
    ("foo:[1],large_segment_size_mb:40,max_split_size_mb:30",
     ("ValueError", "CachingAllocator option max_split_size_mb too small, must be >= 40")),
    ("max_split_size_mb:10", ("ValueError",
                              "CachingAllocator option max_split_size_mb too small, must be >= 20")),
    ("max_split_size_mb:30,large_segment_size_mb:40",
     ("ValueError", "CachingAllocator option max_split_size_mb too small, must be >= 40")),
    ("large_segment_size_mb:10",
     ("ValueError", "CachingAllocator option large_segment_size_mb must be > 10 MB")),
    ("large_segment_size_mb", ("RuntimeError", "Index out of bounds in ConfigTokenizer")),
    ("max_split_size_mb=128", ("RuntimeError", "Index out of bounds in ConfigTokenizer")),
    ("max_split_size_mb:abc", ("ValueError", "stoull")),
    ("max_split_size_mb:99999999999999999999999", ("IndexError", "stoull")),
    ("expandable_segments:true", ("ValueError", "Expected 'True' or 'False' at index 2 in "
                                                "ConfigTokenizer but got 'true'")),
    ("expandable_segments", ("RuntimeError", "Index out of bounds in ConfigTokenizer")),
    ("garbage_collection_threshold:1.5",
     ("ValueError", "garbage_collect_threshold is invalid, set it in (0.0, 1.0)")),
    ("garbage_collection_threshold:nan",
     ("ValueError", "garbage_collect_threshold is invalid, set it in (0.0, 1.0)")),
    ("garbage_collection_threshold:1e-310", ("IndexError", "stod")),
    ("garbage_collection_threshold:1e400", ("IndexError", "stod")),
    ("roundup_power2_divisions:3", ("ValueError", "For roundups, the divisions has to be "
                                                  "power of 2 ")),
    ("roundup_power2_divisions:0", ("ValueError", "For roundups, the divisions has to be "
                                                  "power of 2 ")),
    ("roundup_power2_divisions:[256:3]", ("ValueError", "For roundups, the divisions has to be "
                                                        "power of 2 or 0 to disable roundup ")),
    ("roundup_power2_divisions:[300:4]", ("ValueError", "For roundups, the intervals have to "
                                                        "be power of 2 ")),
    ("roundup_power2_divisions:[256:4", ("RuntimeError", "Index out of bounds in "
                                                         "ConfigTokenizer")),
    ("foo:[1,2", ("RuntimeError", "Expected closing bracket ']' in ConfigTokenizer but reached "
                                  "end of config")),
    ("max_split_size_mb:128;expandable_segments:True",
     ("RuntimeError", "Index out of bounds in ConfigTokenizer")),
]


@pytest.mark.parametrize(("value", "error"), CPU_TABLE)
def test_parser_on_a_cpu_build(value: str, error: Optional[tuple[str, str]]) -> None:
    conf = parse_alloc_conf(value, MODERN, device=None)
    assert (conf.error and (conf.error.kind, conf.error.message)) == (error or None)


@pytest.mark.parametrize(("value", "device", "error"), [
    ("foo:1", "rocm", AllocConfError("ValueError", "Unrecognized key 'foo' in Accelerator "
                                                   "allocator config.", "foo")),
    ("backend:hipMallocAsync", "rocm", None),
    ("backend:hipMallocAsync", "cuda", AllocConfError(
        "ValueError", "Unknown allocator backend, options are native and cudaMallocAsync",
        "backend")),
    ("backend:foo", "rocm", AllocConfError(
        "ValueError", "Unknown allocator backend, options are native, cudaMallocAsync, and "
                      "hipMallocAsync", "backend")),
    ("pinned_num_register_threads:3", "rocm", AllocConfError(
        "ValueError", "Number of register threads has to be power of 2, got 3",
        "pinned_num_register_threads")),
    ("pinned_num_register_threads:128", "cuda", None),  # the largest torch accepts
    ("pinned_num_register_threads:256", "cuda", AllocConfError(
        "ValueError", "Number of register threads should be less than or equal to 128, got 256",
        "pinned_num_register_threads")),
    ("per_process_memory_fraction:1.5", "rocm", AllocConfError(
        "ValueError", "per_process_memory_fraction is invalid, set it in [0.0, 1.0]",
        "per_process_memory_fraction")),
    ("release_lock_on_hipmalloc:True,pinned_use_hip_host_register:False", "cuda", None),
])
def test_parser_on_a_gpu_build(value: str, device: str,
                               error: Optional[AllocConfError]) -> None:
    assert parse_alloc_conf(value, MODERN, device).error == error


@pytest.mark.parametrize(("value", "error"), [
    ("max_split_size_mb:21", None),
    ("max_split_size_mb:20", AllocConfError(
        "RuntimeError", "CachingAllocator option max_split_size_mb too small, must be > 20",
        "max_split_size_mb")),
    ("max_split_size_mb,128", AllocConfError(
        "RuntimeError", "Error parsing CachingAllocator settings, expected :",
        "max_split_size_mb")),
    ("max_split_size_mb:3000000000", AllocConfError("IndexError", "stoi", "max_split_size_mb")),
    ("garbage_collection_threshold:0", AllocConfError(
        "RuntimeError", "garbage_collect_threshold too small, set it 0.0~1.0",
        "garbage_collection_threshold")),
    ("foo:1", AllocConfError("RuntimeError", "Unrecognized CachingAllocator option: foo", "foo")),
    ("large_segment_size_mb:40", AllocConfError(
        "RuntimeError", "Unrecognized CachingAllocator option: large_segment_size_mb",
        "large_segment_size_mb")),
])
def test_legacy_parser(value: str, error: Optional[AllocConfError]) -> None:
    assert parse_alloc_conf(value, LEGACY, "rocm").error == error


def test_parsed_options_and_last_value_wins() -> None:
    conf = parse_alloc_conf("release_lock_on_hipmalloc:True,max_split_size_mb:64,"
                            "max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]",
                            MODERN, "rocm")
    assert conf.ok and conf.value("max_split_size_mb") == "128"
    assert conf.value("release_lock_on_cudamalloc") == "True"
    assert conf.value("roundup_power2_divisions") == "[256:1,>:4]"
    assert tokenize(" a b:[1, 2]\t,x") == ["ab", ":", "[", "1", ",", "2", "]", ",", "x"]
    assert tokenize(" a\tb:c", LEGACY) == ["a\tb", ":", "c"]
    assert split_items("max_split_size_mb=128;roundup_power2_divisions:[1:2,>:4]") == [
        ("max_split_size_mb", "128"), ("roundup_power2_divisions", "[1:2,>:4]")]


@pytest.mark.parametrize(("value", "fixed"), [
    ("max_split_size_mb=128;expandable_segments:true",
     "max_split_size_mb:128,expandable_segments:True"),
    ("garbage_collection_threshold:80,max_split_size_mb:10",
     "garbage_collection_threshold:0.8,max_split_size_mb:20"),
    ("garbage_collection_threshold:1.5", ""),
    ("roundup_power2_divisions:6,expandible_segments:True",
     "roundup_power2_divisions:4,expandable_segments:True"),
    ("foo:1,backend:hipMallocAsync", "backend:hipMallocAsync"),
])
def test_repair(value: str, fixed: str) -> None:
    assert repair(value, MODERN, "rocm", kb.option_names(MODERN)) == fixed


SETTING = st.lists(st.sampled_from(
    [opt.name for opt in kb.OPTIONS] + [":", ":", ",", ",", "[", "]", "=", ";", " ", ">",
                                        "True", "true", "0", "3", "4", "10", "20", "40",
                                        "256", "-1", "0.5", "1.5", "1e-310", "abc", "foo"]),
    max_size=10).map("".join)


@given(st.one_of(st.text(), SETTING), st.sampled_from([MODERN, LEGACY]),
       st.sampled_from(["rocm", "cuda", None]))
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_parser_and_repair_never_raise(value: str, dialect: str, device: Optional[str]) -> None:
    conf = parse_alloc_conf(value, dialect, device)
    assert conf.error is None or conf.error.kind in ("ValueError", "RuntimeError", "IndexError")
    fixed = repair(value, dialect, device, kb.option_names(dialect))
    assert parse_alloc_conf(fixed, dialect, device).ok


# --- against the real torch 2.13 CPU wheel ------------------------------------------------


def torch_verdict(value: str) -> Optional[tuple[str, str]]:
    """What torch.__init__'s allocator-settings hook does with a value on this CPU wheel."""
    torch = pytest.importorskip("torch")
    setter = torch._C._accelerator_setAllocatorSettings
    setter("large_segment_size_mb:20")  # settings persist; start each value from the default
    try:
        setter(value)
    except (ValueError, RuntimeError, IndexError) as exc:
        return type(exc).__name__, str(exc)
    return None


def agrees(value: str) -> bool:
    mine = parse_alloc_conf(value, MODERN, device=None).error
    theirs = torch_verdict(value)
    if mine is None or theirs is None:
        return mine is None and theirs is None
    return mine.kind == theirs[0] and mine.message in theirs[1]


@pytest.mark.live
@pytest.mark.parametrize(("value", "error"), CPU_TABLE)
def test_table_matches_torch(value: str, error: Optional[tuple[str, str]]) -> None:
    theirs = torch_verdict(value)
    assert (theirs is None) == (error is None) and agrees(value)


@pytest.mark.live
@given(st.one_of(SETTING, st.text(alphabet=st.characters(
    exclude_categories=["Cs"], exclude_characters="\x00"))))
@settings(max_examples=1500, deadline=None)
def test_parser_agrees_with_torch(value: str) -> None:
    assert agrees(value), (value, parse_alloc_conf(value, MODERN, None).error,
                           torch_verdict(value))
