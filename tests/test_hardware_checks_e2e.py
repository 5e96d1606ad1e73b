"""The kernel, PCIe, firmware and health checks through the real CLI in a subprocess: on this
GPU-less machine they skip or pass and `check` exits 0; with a kernel log of a broken machine
(a real capture, printed by a stand-in `dmesg`), kernel-log fails, `snapshot` records the read
under its contract key and a replay gives the same answer."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import fixture_text

pytestmark = pytest.mark.e2e
NEW = ("kernel-log", "amdgpu-firmware", "pcie-atomics", "pcie-link", "gpu-health")
FIRMWARE_LOG = ("dmesg-direct-firmware-load-polaris12-mc-failed-error-2-fatal-gpu-init-"
                "wx2100-raspberrypi-TRUNCATED.txt")


def rocmdoctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                          text=True, timeout=180, env=env, stdin=subprocess.DEVNULL)


def test_new_checks_skip_or_pass_on_a_machine_without_gpu() -> None:
    r = rocmdoctor("check", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    got = {c["id"]: c["status"] for c in json.loads(r.stdout)["checks"]}
    assert {i: got[i] for i in NEW} == {i: got[i] for i in NEW if got[i] in ("skip", "pass")}
    assert set(NEW) <= set(got)


@pytest.fixture()
def broken_machine(tmp_path: Path) -> dict[str, str]:
    """A ROCm folder and a `dmesg` that prints the Raspberry Pi WX 2100 log (firmware missing)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "dmesg.txt"
    log.write_text(fixture_text(FIRMWARE_LOG), encoding="utf-8")
    fake = bindir / "dmesg"
    fake.write_text(f"#!/bin/sh\ncat '{log}'\n")
    fake.chmod(0o755)
    rocm = tmp_path / "rocm"
    rocm.mkdir()
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "ROCM_PATH": str(rocm)}


def test_a_firmware_failure_in_the_kernel_log_fails_and_replays(
        broken_machine: dict[str, str], tmp_path: Path) -> None:
    live = rocmdoctor("check", "--only", "kernel-log", "--json", env=broken_machine)
    assert live.returncode == 1, live.stdout + live.stderr
    (result,) = json.loads(live.stdout)["checks"]
    assert (result["status"], result["summary"]) == (
        "fail", "the kernel log shows amdgpu firmware file missing (dmesg: 15 lines)")
    assert result["fix"]["commands"] == ["sudo dmesg | grep -iE 'amdgpu|kfd'"]

    snap = tmp_path / "snap.json.gz"
    r = rocmdoctor("snapshot", "-o", str(snap), env=broken_machine)
    assert r.returncode == 0, r.stderr
    data = json.loads(gzip.decompress(snap.read_bytes()))
    assert "amdgpu/polaris12_mc.bin" in data["commands"]["dmesg"]["stdout"]
    replay = rocmdoctor("check", "--only", "kernel-log", "--json", "--from", str(snap))
    assert json.loads(replay.stdout)["checks"][0]["summary"] == result["summary"]


def test_the_terminal_prints_the_fix(broken_machine: dict[str, str]) -> None:
    r = rocmdoctor("check", "--only", "kernel-log", env=broken_machine)
    assert r.returncode == 1
    assert "[✗] kernel-log  the kernel log shows amdgpu firmware file missing" in r.stdout
    assert "$ sudo dmesg | grep -iE 'amdgpu|kfd'" in r.stdout
