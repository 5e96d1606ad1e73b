"""The distribution, from os-release (/etc/os-release, else /usr/lib/os-release), read once.

The file is parsed here rather than by the `distro` package: distro reads the files from
disk itself, past the Host, so a snapshot could not replay it.

By hand: `cat /etc/os-release`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.platform import is_wsl, kernel_release
from rocmdoctor.host import Host
from rocmdoctor.kb import rocm_support as kb

OS_RELEASE_PATHS = ("/etc/os-release", "/usr/lib/os-release")
OS_RELEASE_SPEC = "https://www.freedesktop.org/software/systemd/man/latest/os-release.html"

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_LEADING_VERSION = re.compile(r"^(\d+(?:\.\d+)*)")


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines, values unquoted the shell way (the os-release format). Never raises."""
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        key, value = m.groups()
        try:
            words = shlex.split(value, comments=False)
        except ValueError:  # unbalanced quote: keep the text without its quote marks
            words = [value.strip().strip("\"'")]
        fields[key] = " ".join(words)
    return fields


@dataclass(frozen=True)
class OsRelease:
    id: str
    version_id: str
    pretty_name: str
    id_like: tuple[str, ...] = ()
    version: str = ""
    source: str = ""

    @property
    def point_release(self) -> str:
        """'22.04.4' from VERSION='22.04.4 LTS (Jammy Jellyfish)', else VERSION_ID."""
        m = _LEADING_VERSION.match(self.version)
        return m.group(1) if m else self.version_id

    @property
    def families(self) -> tuple[str, ...]:
        return (self.id, *self.id_like)


def os_release_from(fields: dict[str, str], source: str = "") -> OsRelease:
    name = fields.get("NAME", "")
    version = fields.get("VERSION", "")
    # ID defaults to "linux" (os-release(5)); a bare NAME="Ubuntu" still names the distro.
    guess = name.split()[0].lower() if name.split() else ""
    distro = fields.get("ID") or (guess if guess in kb.DISTRO_NAMES else "linux")
    version_id = fields.get("VERSION_ID", "")
    if not version_id:  # "24.04.1 LTS (Noble Numbat)" -> "24.04", as VERSION_ID would say
        m = _LEADING_VERSION.match(version)
        version_id = ".".join(m.group(1).split(".")[:2]) if m else ""
    pretty = fields.get("PRETTY_NAME") or " ".join(p for p in (name, version) if p) or distro
    return OsRelease(distro.lower(), version_id, pretty,
                     tuple(fields.get("ID_LIKE", "").lower().split()), version, source)


def read_os_release(host: Host) -> Optional[OsRelease]:
    """/etc/os-release, else /usr/lib/os-release (the spec's fallback); None when neither."""

    def compute() -> Optional[OsRelease]:
        for path in OS_RELEASE_PATHS:
            text = host.read_file(path)
            if text is not None:
                return os_release_from(parse_os_release(text), path)
        return None

    return host.memo("os_release", compute)


def os_pretty_name(host: Host) -> Optional[str]:
    """PRETTY_NAME ("Ubuntu 22.04.5 LTS"), None without an os-release file."""
    osr = read_os_release(host)
    return osr.pretty_name if osr else None


def wsl_kernel(host: Host) -> Optional[str]:
    """The kernel release when it is a WSL kernel (…-microsoft-standard-WSL2), else None."""
    return kernel_release(host) if is_wsl(host) else None
