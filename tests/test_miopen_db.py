"""miopen-db: where MIOpen's databases go, and the file system under them (statfs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.miopen_db import MiopenDb
from rocmdoctor.facts.miopen_db import miopen_locations
from rocmdoctor.host import Host, StatfsInfo
from rocmdoctor.host.live import live_statfs
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import miopen as kb
from rocmdoctor.kb.filesystems import file_system
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = MiopenDb()
ROCM_TORCH = {"executable": "/usr/bin/python3", "packages": {"torch": "2.5.1+rocm6.2"},
              "torch": {"imported": True, "version": "2.5.1+rocm6.2", "hip": "6.2.41133",
                        "cuda": None}}
EXT4 = {"f_type": "0x0000ef53", "block_size": 4096, "blocks": 10_000_000,
        "available": 5_000_000, "readonly": False}
DIR = {"type": "dir", "mode": "0755", "readable": True, "writable": True, "executable": True}
EXPORTS = ('export MIOPEN_USER_DB_PATH="/tmp/miopen-config-$USER"',
           'export MIOPEN_CUSTOM_CACHE_DIR="/tmp/miopen-cache-$USER"',
           'mkdir -p "$MIOPEN_USER_DB_PATH" "$MIOPEN_CUSTOM_CACHE_DIR"')


def statfs(magic: int, free_blocks: int = 5_000_000, readonly: bool = False) -> dict[str, Any]:
    return {**EXT4, "f_type": f"0x{magic:08x}", "available": free_blocks, "readonly": readonly}


def host(home: str, home_fs: dict[str, Any], *, env: Optional[dict[str, str]] = None,
         home_stat: Optional[dict[str, Any]] = None, extra: Optional[dict[str, Any]] = None
         ) -> SnapshotHost:
    data = make_snapshot(env={"HOME": home, **(env or {})},
                         paths={home: home_stat or DIR, "/tmp": DIR, **(extra or {})},
                         python=ROCM_TORCH)
    data["statfs"] = {home: home_fs, "/tmp": EXT4}
    return SnapshotHost(data)


def run(h: Host) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def both(home: str, fs: str, free: str = "19.1 GiB free") -> list[Finding]:
    return [Finding.info(f"MIOpen user database: {home}/.config/miopen (MIOpen's default) (not "
                         f"created yet; {home} exists): {fs}, {free}"),
            Finding.info(f"MIOpen kernel cache: {home}/.cache/miopen (MIOpen's default) (not "
                         f"created yet; {home} exists): {fs}, {free}")]


FIX_TEXT = ("Move MIOpen's databases to node-local disk, one folder per user, created before "
            "training starts (in the job script or shell profile).")


def test_local_home_passes() -> None:
    assert run(host("/home/alice", EXT4)) == CHECK.result(
        Status.PASS, "MIOpen's user database on ext2/ext3; kernel cache on ext2/ext3, writable",
        both("/home/alice", "ext2/ext3"))


def test_real_nfs_work_directory() -> None:
    # treeverse/dvc#7553: "type nfs (rw,...,vers=3,...,local_lock=none,...)".
    line = fixture_text("mount-nfs-v3-home-local_lock-none-work-dir-options.txt").strip()
    mount_point = line.split(" on ", 1)[1].split(" type ", 1)[0]
    assert (mount_point, line.split(" type ", 1)[1].split()[0]) == ("/work/fzills", "nfs")
    moved = ("/work/fzills/.config/miopen is on nfs: MIOpen from 2023 on (ROCm/MIOpen PR "
             "#2092) moves its user databases to the temp folder by itself here, older releases "
             "and the ranks of other nodes share this one")
    assert run(host(mount_point, statfs(0x6969))) == CHECK.result(
        Status.WARN, "the user database is on nfs, a network file system; the kernel cache is "
        "on nfs, a network file system",
        [*both(mount_point, "nfs"), Finding.error(moved),
         Finding.error(moved.replace(".config", ".cache"))],
        Fix(FIX_TEXT, EXPORTS), kb.LOCAL_EXPORTS)


def test_real_gpfs_home_of_a_multinode_job_is_not_moved_by_miopen() -> None:
    # ROCm/MIOpen#114: a GPFS home shared by many nodes; per-node MIOPEN_USER_DB_PATH.
    text = fixture_text("miopen-multinode-gpfs-home-config-miopen-ufdb-filesystem-error-gfx906-rocm4.5.txt")
    assert "/home/bsc88/bsc88474/.config/miopen//gfx906_60" in text and "/gpfs/" in text
    result = run(host("/home/bsc88/bsc88474", statfs(0x47504653),
                      env={"SLURM_JOB_ID": "4242", "MIOPEN_DISABLE_CACHE": "1"}))
    assert result == CHECK.result(
        Status.WARN, "the user database is on gpfs, a network file system",
        [Finding.info("MIOpen user database: /home/bsc88/bsc88474/.config/miopen (MIOpen's "
                      "default) (not created yet; /home/bsc88/bsc88474 exists): gpfs, 19.1 GiB "
                      "free"),
         Finding.error("/home/bsc88/bsc88474/.config/miopen is on gpfs, which MIOpen does not "
                       "recognise as a network file system (its list has NFS, SMB/CIFS, Lustre, "
                       "Ceph, AFS, OCFS2, Coda): it keeps its SQLite files there for every rank "
                       "and node")],
        Fix("Move MIOpen's databases to node-local disk, one folder per user and job, created "
            "before training starts (in the job script or shell profile).",
            ('export MIOPEN_USER_DB_PATH="/tmp/miopen-config-$USER-$SLURM_JOB_ID"',
             'export MIOPEN_CUSTOM_CACHE_DIR="/tmp/miopen-cache-$USER-$SLURM_JOB_ID"',
             'mkdir -p "$MIOPEN_USER_DB_PATH" "$MIOPEN_CUSTOM_CACHE_DIR"')), kb.LOCAL_EXPORTS)


def test_real_read_only_home_in_a_container_fails() -> None:
    # tensorflow-upstream#1419: singularity with $HOME bound from a share: "disk I/O error".
    assert "disk I/O error" in fixture_text(
        "miopen-sqlite-disk-io-error-singularity-rocm-home-bind-gfx908-rocm4.2-tf2.5.txt")
    result = run(host("/home/u", statfs(0xEF53, readonly=True)))
    assert result.status is Status.FAIL
    assert result.summary == ("the user database folder is not writable (/home/u); the kernel "
                              "cache folder is not writable (/home/u)")
    assert result.fix == Fix(FIX_TEXT, EXPORTS)


def test_real_user_db_path_from_the_log_and_the_variable() -> None:
    # ROCm/MIOpen#2214: "Initializing user database file /users/anwerrao/.config/miopen/...".
    text = fixture_text("miopen-log-level-info2-sqlitebase-initializing-user-db-config-miopen-udb-gfx90a-rocm5.2.3-TRUNCATED.txt")
    assert "Initializing user database file /users/anwerrao/.config/miopen/" in text
    h = host("/users/anwerrao", EXT4,
             env={"MIOPEN_USER_DB_PATH": "/scratch/db", "MIOPEN_CUSTOM_CACHE_DIR": "/scratch/kc"},
             extra={"/scratch": DIR})
    h.data["statfs"]["/scratch"] = statfs(0x0BD00BD0)  # type: ignore[index]
    [db, cache] = miopen_locations(h)
    assert (db.path, db.from_variable, db.existing, db.fs.name if db.fs else None) == (
        "/scratch/db", True, "/scratch", "lustre")
    result = run(h)
    assert result.status is Status.WARN
    assert Finding.error("/scratch/kc is on lustre, set by $MIOPEN_CUSTOM_CACHE_DIR: every rank "
                         "and node that shares it writes the same SQLite files") in result.findings


def test_real_slurm_jobs_sharing_a_full_cache() -> None:
    # ROCm/MIOpen#1878: jobs share ~/.cache/miopen: "database disk image is malformed".
    assert "database disk image is malformed" in fixture_text(
        "miopen-slurm-multiple-jobs-kern-db-database-disk-image-is-malformed-mi50-rocm5.2-TRUNCATED.txt")
    result = run(host("/home/alirezak", statfs(0xEF53, free_blocks=1000)))
    assert result.status is Status.WARN
    assert result.summary == ("0.0 GiB free for the user database; 0.0 GiB free for the kernel "
                              "cache")


def test_folders_that_exist_are_named_as_they_are() -> None:
    h = host("/home/alice", EXT4, extra={"/home/alice/.config/miopen": DIR,
                                         "/home/alice/.cache/miopen": DIR})
    h.data["statfs"].update({"/home/alice/.config/miopen": EXT4,  # type: ignore[union-attr]
                             "/home/alice/.cache/miopen": EXT4})
    assert run(h) == CHECK.result(
        Status.PASS, "MIOpen's user database on ext2/ext3; kernel cache on ext2/ext3, writable",
        [Finding.info("MIOpen user database: /home/alice/.config/miopen (MIOpen's default): "
                      "ext2/ext3, 19.1 GiB free"),
         Finding.info("MIOpen kernel cache: /home/alice/.cache/miopen (MIOpen's default): "
                      "ext2/ext3, 19.1 GiB free")])


def test_a_read_only_temp_folder_is_flagged_under_the_fix() -> None:
    # The read-only home of tensorflow-upstream#1419, in a container whose /tmp is read-only too:
    # the lines the fix prints would fail there as well.
    result = run(host("/home/u", statfs(0xEF53, readonly=True),
                      extra={"/tmp": {**DIR, "writable": False}}))
    assert (result.status, result.findings[2:], result.fix) == (
        Status.FAIL,
        (Finding.error("/home/u is not writable by this user: MIOpen cannot keep its user "
                       "database there"),
         Finding.error("/home/u is not writable by this user: MIOpen cannot keep its kernel cache "
                       "there"),
         Finding.hint("/tmp itself is not writable: use a node-local folder instead of it in the "
                      "lines below")),
        Fix(FIX_TEXT, EXPORTS))


def test_a_temp_folder_on_the_shared_file_system_is_flagged_under_the_fix() -> None:
    # The GPFS home of ROCm/MIOpen#114 with TMPDIR on the same cluster's GPFS scratch.
    tmp = "/gpfs/scratch/bsc88/tmp"
    h = host("/home/bsc88/bsc88474", statfs(0x47504653), env={"TMPDIR": tmp}, extra={tmp: DIR})
    h.data["statfs"][tmp] = statfs(0x47504653)  # type: ignore[index]
    result = run(h)
    assert (result.status, result.findings[-1], result.fix) == (
        Status.WARN,
        Finding.hint(f"{tmp} itself is on gpfs: use a node-local folder instead of it in the lines "
                     "below"),
        Fix(FIX_TEXT, (f'export MIOPEN_USER_DB_PATH="{tmp}/miopen-config-$USER"',
                       f'export MIOPEN_CUSTOM_CACHE_DIR="{tmp}/miopen-cache-$USER"',
                       'mkdir -p "$MIOPEN_USER_DB_PATH" "$MIOPEN_CUSTOM_CACHE_DIR"')))


def test_skips() -> None:
    cuda = make_snapshot(python={"packages": {"torch": "2.5.1+cu124"},
                                 "torch": {"imported": True, "version": "2.5.1+cu124",
                                           "hip": None, "cuda": "12.4"}})
    assert run(SnapshotHost(cuda)).summary == "torch does not use MIOpen (not a ROCm build)"
    no_home = make_snapshot(python=ROCM_TORCH)
    assert run(SnapshotHost(no_home)).summary == ("HOME is not set and neither is "
                                                  "MIOPEN_USER_DB_PATH")


def test_wrong_typed_statfs_gives_a_result() -> None:
    h = host("/home/u", {"f_type": [1], "block_size": "x", "blocks": -5, "readonly": "yes"})
    assert run(h).status is Status.PASS
    data = make_snapshot(env={"HOME": "/h"}, paths={"/h": DIR}, python=ROCM_TORCH)
    data["statfs"] = "not an object"
    assert run(SnapshotHost(data)).status is Status.PASS


@given(st.dictionaries(st.text(max_size=12), st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=20), st.floats())))
def test_statfs_from_any_dict_never_raises(d: dict[str, Any]) -> None:
    info = StatfsInfo.from_dict(d)
    assert info.free_bytes >= 0
    file_system(info.f_type)


@pytest.mark.live
@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("stat") is None,
                    reason="needs Linux and stat(1)")
def test_live_statfs_matches_stat_f(tmp_path: Path) -> None:
    info = live_statfs(str(tmp_path))
    assert info is not None and info.f_type is not None
    out = subprocess.run(["stat", "-f", "-c", "%t", str(tmp_path)], capture_output=True,
                         text=True, timeout=30).stdout.strip()
    assert info.f_type == int(out, 16)
    vfs = os.statvfs(tmp_path)
    assert (info.block_size, info.blocks) == (vfs.f_frsize, vfs.f_blocks)
    # Other processes write to the same disk between the two calls: equal within 1 GiB.
    assert abs(info.free_bytes - vfs.f_bavail * vfs.f_frsize) < 2**30
    assert live_statfs(str(tmp_path / "absent")) is None


@pytest.mark.live
def test_live_run_is_recorded_and_replays(tmp_path: Path) -> None:
    # A real folder as $HOME, a full check through LiveHost, then the snapshot it writes.
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.host.snapshot import build_snapshot

    (tmp_path / ".config").mkdir()
    live = LiveHost(probe=lambda: ROCM_TORCH,
                    environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                             "MIOPEN_CUSTOM_CACHE_DIR": str(tmp_path / "cache")})
    first = run(live)
    assert first.status in (Status.PASS, Status.WARN), first
    data = build_snapshot(live, redact=False)  # as recorded (--no-redact)
    assert {str(tmp_path / ".config"), str(tmp_path)} <= set(data["statfs"])
    assert data["env"]["MIOPEN_CUSTOM_CACHE_DIR"] == str(tmp_path / "cache")
    assert run(SnapshotHost(data)) == first
    # a snapshot to publish hides the home folder in the variables
    assert build_snapshot(live)["env"]["MIOPEN_CUSTOM_CACHE_DIR"] == "~/cache"


def test_less_than_one_gib_free_under_the_databases_warns() -> None:
    """1 GiB free (262,144 blocks of 4 KiB) is enough; one block less is not."""
    enough = run(host("/home/alice", statfs(0xEF53, free_blocks=262_144)))
    assert enough.status is Status.PASS
    short = run(host("/home/alice", statfs(0xEF53, free_blocks=262_143)))
    assert short.status is Status.WARN
    assert Finding.error("/home/alice has 1.0 GiB free (under 1.0 GiB): the user database may "
                         "not grow") in short.findings


@pytest.mark.parametrize(("magic", "name", "moves"), [
    (0x6969, "nfs", True), (0xFF534D42, "cifs", True), (0x517B, "smb", True),
    (0xFE534D42, "smb2", True), (0x0BD00BD0, "lustre", True), (0x00C36400, "ceph", True),
    (0x5346414F, "afs", True), (0x7461636F, "ocfs2", True),
    (0x47504653, "gpfs", False), (0x19830326, "fhgfs", False), (0xAAD7AAEA, "panfs", False),
])
def test_a_network_home_says_whether_miopen_moves_its_databases_itself(
        magic: int, name: str, moves: bool) -> None:
    """MIOpen's IsNetworked() (src/expanduser.cpp) lists NFS, SMB/CIFS, Lustre, Ceph, AFS,
    OCFS2 and Coda: there it moves its user databases to the temp folder by itself; on
    GPFS, BeeGFS and PanFS it does not."""
    result = run(host("/home/u", statfs(magic)))
    said = next(f.text for f in result.findings if f.text.startswith("/home/u/.config/miopen is on"))
    assert said.startswith(f"/home/u/.config/miopen is on {name}")
    assert ("moves its user databases to the temp folder by itself" in said) is moves
    assert ("which MIOpen does not recognise as a network file system" in said) is not moves
