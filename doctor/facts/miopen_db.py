"""Where MIOpen will keep its user database and kernel cache, and the file system under each.

MIOpen's user perf/find databases default to ~/.config/miopen (MIOPEN_USER_DB_PATH moves
them) and its kernel cache to ~/.cache/miopen (MIOPEN_CUSTOM_CACHE_DIR moves it,
MIOPEN_DISABLE_CACHE=true turns it off). Like MIOpen's own IsNetworkedFilesystem(), the
file system is that of the first folder on the path that exists (statfs(2) through
Host.statfs).

By hand: `echo "${MIOPEN_USER_DB_PATH:-$HOME/.config/miopen}" "${MIOPEN_CUSTOM_CACHE_DIR:-
$HOME/.cache/miopen}"; stat -f -c '%T %a %S' <folder>; df -h <folder>`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host, StatfsInfo
from rocmdoctor.kb import filesystems
from rocmdoctor.kb import miopen as kb

TRUE_WORDS = ("1", "true", "yes", "on", "enable", "enabled")


@dataclass(frozen=True)
class DbLocation:
    what: str  # "user database" or "kernel cache"
    variable: str  # the variable that moves it
    path: str  # where MIOpen will put it
    from_variable: bool  # set by the variable (else MIOpen's default under $HOME)
    existing: Optional[str]  # the path itself, or its first ancestor that exists
    writable: Optional[bool]  # can this user write (or create) it; None: unknown
    statfs: Optional[StatfsInfo]
    fs: Optional[filesystems.FileSystem]

    @property
    def network(self) -> bool:
        return self.fs is not None and self.fs.remote

    @property
    def fs_name(self) -> str:
        if self.fs is not None:
            return self.fs.name
        magic = self.statfs.f_type if self.statfs else None
        return f"file system 0x{magic:08x}" if magic is not None else "unknown file system"


def existing_ancestor(host: Host, path: str) -> Optional[str]:
    """The path, or the nearest folder above it that exists."""
    current = posixpath.normpath(path)
    for _ in range(64):
        if host.exists(current):
            return current
        if current == "/":
            return None
        current = posixpath.dirname(current)
    return None


def locate(host: Host, what: str, variable: str, default: str) -> Optional[DbLocation]:
    value = (host.env.get(variable) or "").strip()
    home = (host.env.get("HOME") or "").strip()
    if value:
        path = value if value.startswith("/") else posixpath.join(home or "/", value)
    elif home.startswith("/"):
        path = posixpath.join(home, default)
    else:
        return None
    path = posixpath.normpath(path)
    existing = existing_ancestor(host, path)
    info = host.stat(existing) if existing else None
    # A missing folder is created by MIOpen: its nearest existing parent must be writable.
    writable = None if info is None else (info.writable and info.executable
                                          if info.type == "dir" else info.writable)
    stats = host.statfs(existing) if existing else None
    if stats is not None and stats.readonly:
        writable = False
    fs = filesystems.file_system(stats.f_type) if stats else None
    return DbLocation(what, variable, path, bool(value), existing, writable, stats, fs)


def miopen_locations(host: Host) -> list[DbLocation]:
    """MIOpen's user database and (unless disabled) kernel cache, as this environment sets them."""

    def compute() -> list[DbLocation]:
        found = [locate(host, "user database", kb.USER_DB_VAR, kb.DEFAULT_USER_DB)]
        disabled = (host.env.get(kb.DISABLE_CACHE_VAR) or "").strip().lower() in TRUE_WORDS
        if not disabled:
            found.append(locate(host, "kernel cache", kb.CACHE_VAR, kb.DEFAULT_CACHE))
        return [loc for loc in found if loc is not None]

    return host.memo("facts:miopen_db", compute)


def local_folder(host: Host) -> tuple[str, Optional[DbLocation]]:
    """The node-local folder the fix moves MIOpen to ($TMPDIR, else /tmp) and its facts."""
    tmp = (host.env.get("TMPDIR") or "").strip()
    base = posixpath.normpath(tmp) if tmp.startswith("/") else "/tmp"
    return base, _plain(host, base)


def _plain(host: Host, path: str) -> Optional[DbLocation]:
    info = host.stat(path)
    if info is None:
        return None
    stats = host.statfs(path)
    fs = filesystems.file_system(stats.f_type) if stats else None
    writable = info.writable and not (stats is not None and stats.readonly)
    return DbLocation("local folder", "TMPDIR", path, False, path, writable, stats, fs)
