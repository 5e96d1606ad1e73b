"""container, rocm-libraries and miopen-db through the real CLI in a subprocess: on this
GPU-less machine they skip or pass and `check` exits 0; with a torch whose HIP runtime is
shadowed through LD_LIBRARY_PATH by a copy lacking a symbol (libraries built here with `cc`),
rocm-libraries fails, `snapshot` records the library-load child under its key
(`rocmdoctor-libload`) and a replay gives the same answer."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_libload_child import SONAMES, fake_torch

pytestmark = pytest.mark.e2e
NEW = ("container", "rocm-libraries", "miopen-db")


def rocmdoctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                          text=True, timeout=240, env=env, stdin=subprocess.DEVNULL)


def test_new_checks_skip_or_pass_on_a_machine_without_gpu() -> None:
    r = rocmdoctor("check", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    got = {c["id"]: (c["status"], c["summary"]) for c in json.loads(r.stdout)["checks"]}
    assert set(NEW) <= set(got)
    assert {i: got[i][0] for i in NEW} == {i: got[i][0] for i in NEW
                                           if got[i][0] in ("skip", "pass")}
    if got["container"][0] == "pass":  # CI runners often run jobs in a container
        assert "no GPU device is expected" in got["container"][1]


@pytest.mark.skipif(shutil.which("cc") is None or not sys.platform.startswith("linux"),
                    reason="needs cc on Linux")
def test_a_shadowed_hip_runtime_fails_and_replays(tmp_path: Path) -> None:
    site, lib, shadow = fake_torch(tmp_path)
    # pip's record of the wheel, so the probe reads the ROCm build from torch's version
    meta = site / "torch-2.5.1+rocm6.2.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+rocm6.2\n")
    env = {**os.environ, "PYTHONPATH": str(site), "LD_LIBRARY_PATH": str(shadow)}
    live = rocmdoctor("check", "--only", "rocm-libraries", "--json", env=env)
    assert live.returncode == 1, live.stdout + live.stderr
    (result,) = json.loads(live.stdout)["checks"]
    needs = (f"{lib / 'libtorch_hip.so'} needs the symbol hipMalloc, which no library loaded "
             "with it provides")
    assert (result["status"], result["summary"]) == (
        "fail", f"torch loads the HIP runtime from {shadow / SONAMES['hip']} (standalone); the "
        f"loader fails: {needs}; the HIP runtime from {shadow} shadows torch's own")
    assert result["fix"]["commands"] == ["unset LD_LIBRARY_PATH"]

    snap = tmp_path / "snap.json.gz"
    r = rocmdoctor("snapshot", "-o", str(snap), env=env)
    assert r.returncode == 0, r.stderr
    data = json.loads(gzip.decompress(snap.read_bytes()))
    record = json.loads(data["commands"]["rocmdoctor-libload"]["stdout"])
    assert record["libraries"]["hip"]["path"] == str(shadow / SONAMES["hip"])
    assert data["env"]["LD_LIBRARY_PATH"] == str(shadow)
    replay = rocmdoctor("check", "--only", "rocm-libraries", "--json", "--from", str(snap))
    assert replay.returncode == 1, replay.stdout + replay.stderr
    again = json.loads(replay.stdout)["checks"][0]
    assert (again["status"], again["summary"], again["findings"], again["fix"]) == (
        result["status"], result["summary"], result["findings"], result["fix"])
