"""The fields this release adds to a snapshot (statfs, rocm_root), live and replayed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rocmdoctor.host import StatfsInfo
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.snapshot import SnapshotHost, build_snapshot, parse_snapshot
from tests.helpers import make_snapshot


@pytest.mark.live
def test_live_host_records_statfs_and_the_rocm_root(tmp_path: Path) -> None:
    host = LiveHost(environ={"PATH": "/usr/bin:/bin"}, rocm_root="/opt/rocm-6.3.4")
    info = host.statfs(str(tmp_path))
    assert info is not None
    data = build_snapshot(host)
    assert data["statfs"] == {str(tmp_path): info.to_dict()}
    assert data["rocm_root"] == "/opt/rocm-6.3.4"
    replay = SnapshotHost(parse_snapshot(json.loads(json.dumps(data))))
    assert replay.statfs(str(tmp_path)) == info
    assert replay.rocm_root == "/opt/rocm-6.3.4"
    assert replay.statfs("/elsewhere") is None


def test_older_snapshots_have_neither_field() -> None:
    host = SnapshotHost(make_snapshot())
    assert (host.statfs("/home"), host.rocm_root) == (None, None)


def test_magic_numbers_round_trip() -> None:
    info = StatfsInfo(0xFF534D42, 4096, 10, 5, True)
    assert info.to_dict()["f_type"] == "0xff534d42"
    assert StatfsInfo.from_dict(info.to_dict()) == info
    assert StatfsInfo.from_dict({"f_type": 26985}).f_type == 0x6969
    assert StatfsInfo.from_dict({"f_type": -11317950}).f_type == 0xFF534D42  # a signed long


@pytest.mark.e2e
def test_cli_rocm_root_option(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)

    bad = cli("check", "--rocm-root", "relative/rocm")
    assert (bad.returncode, bad.stderr) == (
        2, "rocmdoctor: error: --rocm-root relative/rocm: give an absolute path\n")
    snap = tmp_path / "snap.json"
    assert cli("snapshot", "-o", str(snap), "--rocm-root", str(tmp_path)).returncode == 0
    data = json.loads(snap.read_text())
    assert data["rocm_root"] == str(tmp_path)
    replay = cli("check", "--from", str(snap), "--json")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    ids = [r["id"] for r in json.loads(replay.stdout)["checks"]]
    assert {"container", "rocm-libraries", "miopen-db"} <= set(ids)
