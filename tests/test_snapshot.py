from __future__ import annotations

import gzip
import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.host import CommandResult, command_key
from rocmdoctor.host.snapshot import (
    FORMAT,
    SnapshotError,
    SnapshotHost,
    UnexpectedAccess,
    load_snapshot,
    save_snapshot,
)
from rocmdoctor.redact import REDACTED, capture_env, looks_secret
from tests.helpers import make_snapshot


def test_missing_things_read_as_absent() -> None:
    host = SnapshotHost(make_snapshot())
    assert host.read_file("/etc/os-release") is None
    assert host.stat("/dev/kfd") is None
    assert host.listdir("/opt") is None
    assert host.run(["rocminfo"]) == CommandResult(returncode=127, stderr="command not found")
    assert host.python() is None


def test_strict_host_fails_loudly_on_anything_not_provided() -> None:
    host = SnapshotHost(make_snapshot(files={"/proc/version": "Linux"}), strict=True,
                        absent=["/dev/kfd"])
    assert host.read_file("/proc/version") == "Linux"
    assert host.stat("/dev/kfd") is None
    with pytest.raises(UnexpectedAccess, match="/etc/group"):
        host.read_file("/etc/group")
    with pytest.raises(UnexpectedAccess, match="rocm-smi --showproductname"):
        host.run(["rocm-smi", "--showproductname"])


def test_commands_files_paths_and_dirs_replay() -> None:
    data = make_snapshot(
        commands={"rocm-smi --showproductname": {"returncode": 2, "stdout": "x",
                                                 "stderr": "boom", "timed_out": True}},
        files={"/sys/class/drm/card1/device/vendor": "0x1002\n"},
        paths={"/dev/kfd": {"type": "char", "mode": "0660", "owner": "root",
                            "group": "render", "uid": 0, "gid": 110, "readable": False,
                            "writable": False, "executable": False}},
        dirs={"/opt": ["rocm", "rocm-6.3.4"]},
        user={"name": "alice", "uid": 1000, "groups": ["alice", "video"]},
    )
    host = SnapshotHost(data)
    r = host.run(["rocm-smi", "--showproductname"])
    assert (r.returncode, r.stdout, r.stderr, r.timed_out) == (2, "x", "boom", True)
    kfd = host.stat("/dev/kfd")
    assert kfd is not None and (kfd.type, kfd.group, kfd.gid, kfd.readable) == (
        "char", "render", 110, False)
    assert kfd.mode_bits == 0o660
    assert host.listdir("/opt") == ["rocm", "rocm-6.3.4"]
    # A folder that only has known files below it still exists and lists them.
    assert host.stat("/sys/class/drm")is not None
    assert host.listdir("/sys/class/drm") == ["card1"]
    assert host.user.groups == ("alice", "video")


def test_glob_answers_from_keys_one_segment_per_star() -> None:
    data = make_snapshot(files={
        "/sys/class/drm/card0/device/power_dpm_force_performance_level": "auto\n",
        "/sys/class/drm/card1/device/power_dpm_force_performance_level": "high\n",
        "/sys/class/drm/card1-DP-1/status": "connected\n",
    })
    host = SnapshotHost(data)
    assert host.glob("/sys/class/drm/card*/device/power_dpm_force_performance_level") == [
        "/sys/class/drm/card0/device/power_dpm_force_performance_level",
        "/sys/class/drm/card1/device/power_dpm_force_performance_level",
    ]
    assert host.glob("/sys/class/drm/card*") == [
        "/sys/class/drm/card0", "/sys/class/drm/card1", "/sys/class/drm/card1-DP-1"]
    assert host.glob("/sys/class/drm/*/status") == ["/sys/class/drm/card1-DP-1/status"]


def test_save_and_load_round_trip_plain_and_gzip(tmp_path: Path) -> None:
    data = make_snapshot(env={"HIP_VISIBLE_DEVICES": "0"}, files={"/proc/version": "Linux é"})
    for name in ("snap.json", "snap.json.gz"):
        path = tmp_path / name
        save_snapshot(data, str(path))
        assert load_snapshot(str(path)) == data
    assert (tmp_path / "snap.json.gz").read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json at all", "is not a JSON snapshot"),
        (b"[1, 2]", "is not a rocmdoctor snapshot (top level is not an object)"),
        (json.dumps({"format": "rocmdoctor-snapshot/9"}).encode(),
         "has format 'rocmdoctor-snapshot/9'; this rocmdoctor reads 'rocmdoctor-snapshot/1'"),
        (json.dumps({"format": FORMAT, "files": []}).encode(),
         "malformed snapshot: files must be an object, not a list"),
        (gzip.compress(b'{"format": "rocmdoctor-snapshot/1"}')[:20],
         "is a damaged or truncated gzip file"),
    ],
)
def test_bad_snapshots_give_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotError) as info:
        load_snapshot(str(path))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_snapshot_file(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="snapshot not found: .*nope.json"):
        load_snapshot(str(tmp_path / "nope.json"))


def test_unknown_fields_are_ignored() -> None:
    data = make_snapshot()
    data["future_field"] = {"anything": 1}
    data["commands"]["rocminfo"] = {"returncode": 0, "stdout": "x", "new": True}
    assert SnapshotHost(data).run(["rocminfo"]).stdout == "x"


def test_capture_env_keeps_relevant_and_redacts_secrets() -> None:
    env = {
        "HIP_VISIBLE_DEVICES": "0",
        "PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True",
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz123456",
        "TORCH_API_KEY": "plainvalue",
        "NCCL_SOCKET_IFNAME": "eth0",
        "CUDA_SOMETHING": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "LD_LIBRARY_PATH": "/opt/rocm/lib:/home/alice/ghp_0123456789abcdefghijABCDEFGHIJ01",
        "EDITOR": "vim",
        "AWS_SECRET_ACCESS_KEY": "x" * 40,
    }
    assert capture_env(env) == {
        "CUDA_SOMETHING": REDACTED,
        "HF_TOKEN": REDACTED,
        "HIP_VISIBLE_DEVICES": "0",
        "LD_LIBRARY_PATH": "/opt/rocm/lib:/home/alice/" + REDACTED,
        "NCCL_SOCKET_IFNAME": "eth0",
        "PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True",
        "TORCH_API_KEY": REDACTED,
    }
    kept = capture_env(env, redact=False)
    assert kept["HF_TOKEN"] == env["HF_TOKEN"]
    assert kept["AWS_SECRET_ACCESS_KEY"] == env["AWS_SECRET_ACCESS_KEY"]
    assert "EDITOR" not in kept


def test_paths_are_not_secrets() -> None:
    assert not looks_secret("LD_LIBRARY_PATH", "/opt/rocm-6.3.4/lib/llvm/lib64_x86_64abc")
    assert not looks_secret("HIP_VISIBLE_DEVICES", "0,1")
    assert looks_secret("SOME_VAR", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7")


@given(st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=80), max_size=8))
def test_capture_env_never_raises(env: dict[str, str]) -> None:
    out = capture_env(env)
    assert set(out) <= set(env)


def test_command_key_joins_with_single_spaces() -> None:
    assert command_key(["rocm-smi", "--showproductname"]) == "rocm-smi --showproductname"


def test_saved_file_is_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    save_snapshot(make_snapshot(), str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]
    assert stat.S_ISREG(os.stat(path).st_mode)
