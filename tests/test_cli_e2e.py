"""The real CLI in a subprocess, on this machine (no GPU)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmdoctor.kb import KB_DATE

pytestmark = pytest.mark.e2e


def rocmdoctor(*args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocmdoctor", *args], capture_output=True, text=True,
        timeout=timeout, env=env, stdin=subprocess.DEVNULL,
    )


def test_help_does_not_import_torch() -> None:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rocmdoctor", "--help"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0
    assert "check" in r.stdout and "snapshot" in r.stdout
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    for heavy in ("torch", "numpy", "optuna", "rocmdoctor.tuners.bench.worker"):
        assert heavy not in imported, heavy


def test_version() -> None:
    r = rocmdoctor("--version")
    assert (r.returncode, r.stdout) == (0, f"rocmdoctor 0.1.0 (knowledge base of {KB_DATE})\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--from", "/nonexistent/snap.json"],
         "rocmdoctor: error: snapshot not found: /nonexistent/snap.json\n"),
        (["check", "--only", "no-such-check"], "rocmdoctor: error: unknown check id: no-such-check"),
        (["check", "--python", "/nonexistent/python"],
         "rocmdoctor: error: --python /nonexistent/python: no such interpreter"),
        (["report", "--format", "pdf"],
         "rocmdoctor: error: unknown --format 'pdf' (choose markdown, text or json)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    r = rocmdoctor(*args)
    assert r.returncode == 2
    assert r.stderr.startswith(message)
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not a JSON snapshot"),
        (json.dumps({"format": "other/2"}).encode(), "has format 'other/2'"),
        (gzip.compress(b'{"format": "rocmdoctor-snapshot/1", "files": {}}')[:25],
         "is a damaged or truncated gzip file"),
    ],
)
def test_unreadable_from_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "snap.json.gz"
    path.write_bytes(content)
    r = rocmdoctor("check", "--from", str(path))
    assert r.returncode == 2
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_check_on_this_machine_exits_0_and_json_matches_contract() -> None:
    r = rocmdoctor("check", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "rocmdoctor.check/1"
    assert data["platform"] == "cpu"
    assert data["summary"]["fail"] == 0 and data["summary"]["error"] == 0
    assert sum(data["summary"].values()) == len(data["checks"])


def test_snapshot_then_replay_gives_the_same_report(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json.gz"
    env = {**os.environ, "HIP_LAUNCH_BLOCKING": "1", "HF_TOKEN": "hf_" + "a1" * 15}
    r = rocmdoctor("snapshot", "-o", str(snap), env=env)
    assert r.returncode == 0, r.stderr
    assert f"replay with: rocmdoctor check --from {snap}" in r.stderr
    data = json.loads(gzip.decompress(snap.read_bytes()))
    assert data["format"] == "rocmdoctor-snapshot/1"
    assert data["platform"]["hostname"] == "<redacted>"
    assert data["env"]["HIP_LAUNCH_BLOCKING"] == "1"
    assert "HF_TOKEN" not in data["env"] or data["env"]["HF_TOKEN"] == "<redacted>"

    live = rocmdoctor("check", "--json", env=env)
    replay = rocmdoctor("check", "--json", "--from", str(snap))

    def strip(out: str) -> list[tuple[str, str, str]]:
        return [(c["id"], c["status"], c["summary"]) for c in json.loads(out)["checks"]]

    assert strip(replay.stdout) == strip(live.stdout)
    assert ("debug-env", "warn", "HIP_LAUNCH_BLOCKING set: GPU work runs slower") in strip(
        replay.stdout)


def test_strict_counts_warnings(tmp_path: Path) -> None:
    env = {**os.environ, "AMD_SERIALIZE_KERNEL": "3"}
    assert rocmdoctor("check", "--only", "debug-env", env=env).returncode == 0
    r = rocmdoctor("check", "--only", "debug-env", "--strict", env=env)
    assert r.returncode == 1
    assert "[!] debug-env  AMD_SERIALIZE_KERNEL set: GPU work runs slower" in r.stdout
    assert "$ unset AMD_SERIALIZE_KERNEL" in r.stdout


def test_a_hanging_rocminfo_is_cut_off_and_reported(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "rocminfo"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    rocm = tmp_path / "rocm"  # a ROCm folder makes this a ROCm machine for the doctor
    rocm.mkdir()
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "ROCM_PATH": str(rocm)}
    start = time.monotonic()
    # Its prerequisites (the driver, /dev/kfd, and the container check before /dev/kfd) fail
    # or vary on this machine: skipped, so that rocminfo itself runs.
    r = rocmdoctor("check", "--json", "--timeout", "1", "--only", "gpu-agents",
                   "--skip", "amdgpu-driver,kfd-access,container", env=env)
    assert time.monotonic() - start < 20
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["platform"] == "rocm"
    (agents,) = data["checks"]
    assert agents["status"] == "error"
    assert agents["summary"].startswith("rocminfo did not answer within 1 s")


@pytest.mark.ci_needs("rocminfo", "rocm-smi")
@pytest.mark.skipif(shutil.which("rocminfo") is None or shutil.which("rocm-smi") is None,
                    reason="Debian's rocminfo and rocm-smi are not installed (.ci/run installs them)")
def test_the_real_debian_rocm_tools_on_a_machine_without_gpu() -> None:
    r = rocmdoctor("check", "--json")
    assert r.returncode == 0, r.stderr
    checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    agents = checks["gpu-agents"]
    assert agents["status"] == "skip"
    assert agents["summary"].endswith(
        "rocminfo says: ROCk module is NOT loaded, possibly no GPU devices")
    report = rocmdoctor("report")
    assert report.returncode == 0, report.stderr
    assert "ROCk module is NOT loaded, possibly no GPU devices" in report.stdout
    assert "Driver not initialized (amdgpu not found in modules)" in report.stdout
    assert "\x1b[" not in report.stdout
