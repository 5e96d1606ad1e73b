"""The firmware the amdgpu driver loaded, per card, and the distribution's firmware packages.

debugfs `amdgpu_firmware_info` (readable by root only) prints one line per firmware:
"MEC feature version: 29, firmware version: 0x000001fe", "SMC feature version: 0, program: 0,
firmware version: 0x004e5500 (78.85.0)", "VBIOS version: 113-D7020100-102"; the folder's
`name` file says which PCI device it is ("amdgpu dev=0000:03:00.0 unique=0000:03:00.0").
The packages come from `dpkg-query -W`, `rpm -q` or `pacman -Q`, whichever is installed.

By hand: `sudo cat /sys/kernel/debug/dri/*/amdgpu_firmware_info`;
`dpkg-query -W linux-firmware amdgpu-dkms-firmware` (or `rpm -q ...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocmdoctor.host import Host

DEBUGFS_GLOB = "/sys/kernel/debug/dri/*/amdgpu_firmware_info"
PACKAGES = ("linux-firmware", "linux-firmware-amdgpu", "amdgpu-dkms-firmware")
_LINE = re.compile(r"^\s*(?P<name>[A-Z][A-Z0-9_ ]{0,30}?) feature version: (?P<feature>\S+?),"
                   r"(?: program: \S+?,)? firmware version: (?P<version>0x[0-9a-fA-F]{1,16})"
                   r"(?: \((?P<dotted>[\d.]{1,20})\))?")
_VBIOS = re.compile(r"^\s*VBIOS version: (\S{1,60})")
_DEV = re.compile(r"\bdev=([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")


@dataclass(frozen=True)
class CardFirmware:
    where: str  # the debugfs file, or "amd-smi GPU <n>"
    bdf: str  # "" when not known
    versions: dict[str, int] = field(default_factory=dict)  # "MEC" -> 0x1fe
    shown: dict[str, str] = field(default_factory=dict)  # "SMC" -> "78.85.0", "VBIOS" -> ...


def parse_firmware_info(text: str) -> tuple[dict[str, int], dict[str, str]]:
    """(name -> firmware version, name -> how to show it) from amdgpu_firmware_info."""
    versions: dict[str, int] = {}
    shown: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            versions[m.group("name")] = int(m.group("version"), 16)
            shown[m.group("name")] = m.group("dotted") or m.group("version")
            continue
        v = _VBIOS.match(line)
        if v:
            shown["VBIOS"] = v.group(1)
    return versions, shown


def debugfs_firmware(host: Host) -> list[CardFirmware]:
    """Each card's amdgpu_firmware_info (none when debugfs is not readable)."""

    def compute() -> list[CardFirmware]:
        cards = []
        for path in host.glob(DEBUGFS_GLOB):
            text = host.read_file(path)
            if not text:
                continue
            versions, shown = parse_firmware_info(text)
            if not versions:
                continue
            name = host.read_file(path.rsplit("/", 1)[0] + "/name") or ""
            dev = _DEV.search(name)
            cards.append(CardFirmware(path, dev.group(1) if dev else "", versions, shown))
        return cards

    return host.memo("amdgpu:firmware-debugfs", compute)


def parse_package_list(text: str) -> dict[str, str]:
    """name -> version from `dpkg-query -W` ("name\\tversion"), `rpm -q`
    ("name-version-release.arch") or `pacman -Q` ("name version") output."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("package ", "error:", "dpkg-query:")):
            continue
        parts = line.split()
        if len(parts) == 2 and parts[0] in PACKAGES:
            found[parts[0]] = parts[1]
            continue
        for name in sorted(PACKAGES, key=len, reverse=True):
            if line.startswith(name + "-") and line[len(name) + 1:][:1].isdigit():
                found[name] = line[len(name) + 1:]
                break
    return found


def firmware_packages(host: Host) -> dict[str, str]:
    """The installed firmware packages and their versions (empty when none is known)."""

    def compute() -> dict[str, str]:
        for argv in (["dpkg-query", "-W", *PACKAGES], ["rpm", "-q", *PACKAGES],
                     ["pacman", "-Q", *PACKAGES]):
            result = host.run(argv)
            if result.not_found or result.timed_out:
                continue
            return parse_package_list(result.stdout)
        return {}

    return host.memo("amdgpu:firmware-packages", compute)
