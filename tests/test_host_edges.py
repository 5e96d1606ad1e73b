"""The host boundary's own limits and names: output cut at its cap, children in their own
session, the variables the measured run records, NVML's reason names, which Python runs our
child scripts."""

from __future__ import annotations

import sys

import pytest

from rocmdoctor.host.deep import DEEP_TOOL
from rocmdoctor.host.deep_child import ENV_NAMES, Run
from rocmdoctor.host.deep_telemetry import decode_reasons
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.process import MAX_OUTPUT_CHARS, run_command, spawn


def test_output_is_cut_at_two_mebibytes() -> None:
    assert MAX_OUTPUT_CHARS == 2 * 1024 * 1024
    done = run_command([sys.executable, "-c", "print('x' * 3_000_000, end='')"], timeout=30)
    assert done.returncode == 0 and len(done.stdout) == MAX_OUTPUT_CHARS


def test_a_child_starts_in_a_session_of_its_own() -> None:
    child = spawn([sys.executable, "-c", "import os; print(os.getsid(0))"])
    out, _ = child.communicate(timeout=30)
    assert int(out) == child.pid


def test_the_measured_run_records_every_variable_that_changes_what_it_measures() -> None:
    env = {name: f"value of {name}" for name in ENV_NAMES}
    recorded = Run({**env, "HOME": "/root", "PATH": "/usr/bin"}, 0.0).result["env"]
    assert recorded == env
    assert {"MIOPEN_DEBUG_DISABLE_FIND_DB", "CUDA_DEVICE_MAX_CONNECTIONS",
            "GPU_MAX_HW_QUEUES", "HSA_OVERRIDE_GFX_VERSION"} <= set(recorded)


def test_nvml_clock_event_reasons_are_named_as_nvidia_smi_prints_them() -> None:
    assert decode_reasons(0x2 | 0x4 | 0x100) == [
        "Applications Clocks Setting", "SW Power Cap", "Display Clock Setting"]
    assert decode_reasons(0) == []


@pytest.mark.live
def test_our_child_scripts_run_in_the_python_the_probe_found() -> None:
    host = LiveHost()
    host.python = lambda: {"executable": "/venv/bin/python"}  # type: ignore[method-assign]
    assert host._resolve([DEEP_TOOL])[0] == "/venv/bin/python"
