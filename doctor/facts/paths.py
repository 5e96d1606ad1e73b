"""Paths the machine's settings name: the entries of PATH, LD_LIBRARY_PATH, LD_PRELOAD and
/etc/ld.so.preload, HIP_PATH, the folders of a ROCm install, the /opt/rocm link. Whether each
exists, its stat facts and where a link leads.

By hand: `ls -ld PATH`; `readlink -f PATH`.
"""

from __future__ import annotations

import posixpath
from typing import Optional

from rocmdoctor.host import Host, PathInfo


def path_info(host: Host, path: str) -> Optional[PathInfo]:
    """The path's stat facts, not following a final symlink (None: it does not exist)."""
    return host.stat(path)


def path_exists(host: Host, path: str) -> bool:
    return host.exists(path)


def link_chain(host: Host, path: str, limit: int = 8) -> list[str]:
    """path, then each symlink target in turn: ['/opt/rocm', '/etc/alternatives/rocm', ...]."""
    chain = [path]
    for _ in range(limit):
        info = host.stat(chain[-1])
        if info is None or info.type != "symlink" or not info.target:
            break
        chain.append(posixpath.normpath(
            posixpath.join(posixpath.dirname(chain[-1]), info.target)))
    return chain
