"""debug-env: which debugging variables slow the GPU, at which levels, and the whole result."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from rocmdoctor.checks.debug_env import DebugEnv
from rocmdoctor.kb.debug_vars import CLR_FLAGS, DEBUG_VARS, MIOPEN_DEBUG, TORCH_CUDA_ENV, level
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, host_of

TITLE = DebugEnv.title
COST = {v.name: v.cost for v in DEBUG_VARS}
FIX_TEXT = "Unset these for training and benchmarks; set them only while debugging."


def check(env: dict[str, str]) -> CheckResult:
    return replace(run_one(DebugEnv(), host_of(env=env)), duration_ms=0)


def suggested(name: str, var: str) -> str:
    """The value a real error message tells the user to set while debugging."""
    m = re.search(rf"consider passing ({var})=(\S+)", fixture_text(name))
    assert m is not None
    return m.group(2)


def test_nothing_set_passes() -> None:
    assert check({"PATH": "/usr/bin", "HIP_VISIBLE_DEVICES": "0"}) == CheckResult(
        "debug-env", TITLE, Status.PASS, "no debugging variables that slow the GPU are set")


@pytest.mark.parametrize("env", [
    {"MIOPEN_LOG_LEVEL": "4"},  # warnings: below info level
    {"AMD_LOG_LEVEL": "0"}, {"HIP_LAUNCH_BLOCKING": ""}, {"AMD_SERIALIZE_KERNEL": " "},
    {"CUDA_LAUNCH_BLOCKING": "false"}, {"PYTORCH_NO_CUDA_MEMORY_CACHING": "off"},
    {"AMD_SERIALIZE_COPY": "No"},
])
def test_values_that_turn_nothing_on_pass(env: dict[str, str]) -> None:
    assert check(env).status is Status.PASS


def test_the_value_torch_suggests_after_an_illegal_address_is_named_with_its_cost() -> None:
    value = suggested("errors/hip-illegal-memory-access--gfx1100-rocm72-setdevice-terminate.txt",
                      "AMD_SERIALIZE_KERNEL")
    assert value == "3"
    assert check({"AMD_SERIALIZE_KERNEL": value}) == CheckResult(
        "debug-env", TITLE, Status.WARN, "AMD_SERIALIZE_KERNEL set: GPU work runs slower",
        (Finding.error(f"AMD_SERIALIZE_KERNEL=3: {COST['AMD_SERIALIZE_KERNEL']}; for debugging "
                       "only"),),
        Fix(FIX_TEXT, ("unset AMD_SERIALIZE_KERNEL",)), CLR_FLAGS)


def test_several_are_named_in_the_table_order_and_the_first_gives_the_source() -> None:
    env = {"PYTORCH_NO_HIP_MEMORY_CACHING": "1", "MIOPEN_LOG_LEVEL": "5",
           "CUDA_LAUNCH_BLOCKING": "yes", "MIOPEN_CHECK_NUMERICS": "0x1", "AMD_LOG_LEVEL": "0"}
    names = ["CUDA_LAUNCH_BLOCKING", "MIOPEN_LOG_LEVEL", "MIOPEN_CHECK_NUMERICS",
             "PYTORCH_NO_HIP_MEMORY_CACHING"]
    assert check(env) == CheckResult(
        "debug-env", TITLE, Status.WARN, f"{', '.join(names)} set: GPU work runs slower",
        tuple(Finding.error(f"{n}={env[n]}: {COST[n]}; for debugging only") for n in names),
        Fix(FIX_TEXT, (f"unset {' '.join(names)}",)), TORCH_CUDA_ENV)
    assert check({"MIOPEN_ENABLE_LOGGING": "1", "MIOPEN_LOG_LEVEL": "6"}).source == MIOPEN_DEBUG


@pytest.mark.parametrize(("value", "expected"), [
    ("", 0), ("  ", 0), ("0", 0), ("3", 3), (" 6 ", 6), ("0x10", 16), ("-1", -1),
    ("false", 0), ("OFF", 0), ("no", 0), ("yes", 1), ("true", 1), ("on", 1),
])
def test_level(value: str, expected: int) -> None:
    assert level(value) == expected
