"""statfs(2) file-system magic numbers, and which of them are network or cluster file systems.

The numbers and the remote/local marks are coreutils' (src/stat.c, human_fstype(), each case
written `case S_MAGIC_X: /* 0x... remote|local */`); MIOpen's own list of networked file
systems is src/expanduser.cpp IsNetworked() (ROCm/MIOpen PR #2092): it moves its user
databases to the temp folder by itself on those, but not on GPFS, BeeGFS or PanFS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

COREUTILS_STAT = ("https://github.com/coreutils/coreutils/blob/"
                  "aa0c0de3508e9150eb0ea610f696ee353dd9353d/src/stat.c")
MIOPEN_NETWORKED = ("https://github.com/ROCm/MIOpen/blob/"
                    "a26441e176e2ae0c603e62d8c436001562aa62fb/src/expanduser.cpp")


@dataclass(frozen=True)
class FileSystem:
    magic: int
    name: str  # as `stat -f -c %T` prints it
    remote: bool  # coreutils' mark
    miopen_moves: bool  # in MIOpen's IsNetworked() list


FILE_SYSTEMS: tuple[FileSystem, ...] = (
    FileSystem(0x6969, "nfs", True, True),
    FileSystem(0x6E667364, "nfsd", True, False),
    FileSystem(0xFF534D42, "cifs", True, True),
    FileSystem(0x517B, "smb", True, True),
    FileSystem(0xFE534D42, "smb2", True, True),
    FileSystem(0x0BD00BD0, "lustre", True, True),
    FileSystem(0x47504653, "gpfs", True, False),
    FileSystem(0x19830326, "fhgfs", True, False),  # BeeGFS (formerly FhGFS)
    FileSystem(0x00C36400, "ceph", True, True),
    FileSystem(0x5346414F, "afs", True, True),
    FileSystem(0x7461636F, "ocfs2", True, True),
    FileSystem(0xAAD7AAEA, "panfs", True, False),
    FileSystem(0x65735546, "fuseblk", True, False),  # FUSE: sshfs, s3fs, ... (remote in coreutils)
    FileSystem(0x01021997, "v9fs", True, False),  # WSL2's Windows drives (/mnt/c)
    FileSystem(0x53464846, "wslfs", True, False),
    FileSystem(0xEF53, "ext2/ext3", False, False),
    FileSystem(0x58465342, "xfs", False, False),
    FileSystem(0x9123683E, "btrfs", False, False),
    FileSystem(0x01021994, "tmpfs", False, False),
    FileSystem(0x794C7630, "overlayfs", False, False),
    FileSystem(0x2FC12FC1, "zfs", False, False),
)
BY_MAGIC = {fs.magic: fs for fs in FILE_SYSTEMS}


def file_system(magic: Optional[int]) -> Optional[FileSystem]:
    return BY_MAGIC.get(magic) if magic is not None else None
