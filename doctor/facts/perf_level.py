"""Each AMD card's power_dpm_force_performance_level (amdgpu's sysfs), read once.

By hand: `grep . /sys/class/drm/card*/device/power_dpm_force_performance_level` and
`cat /sys/class/drm/card*/device/vendor` (0x1002 is AMD).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from rocmdoctor.facts.platform import AMD_PCI_VENDOR
from rocmdoctor.host import Host

LEVEL_FILE = "power_dpm_force_performance_level"
LEVEL_GLOB = f"/sys/class/drm/card*/device/{LEVEL_FILE}"
# cardN only: connector entries such as card0-DP-1 are not GPUs.
_CARD_PATH = re.compile(rf"/sys/class/drm/(card\d+)/device/{LEVEL_FILE}")


class CardLevel(NamedTuple):
    card: str  # card0
    path: str  # its power_dpm_force_performance_level file
    text: Optional[str]  # what the file holds; None when it could not be read


def amd_level_files(host: Host) -> list[tuple[str, str]]:
    """(card, path) of every AMD card (PCI vendor 0x1002) that has the file."""
    found = []
    for path in host.glob(LEVEL_GLOB):
        match = _CARD_PATH.fullmatch(path)
        if match is None:
            continue
        card = match.group(1)
        vendor = (host.read_file(f"/sys/class/drm/{card}/device/vendor") or "").strip().lower()
        if vendor == AMD_PCI_VENDOR:
            found.append((card, path))
    return sorted(found, key=lambda cp: int(cp[0][4:]))


def perf_levels(host: Host) -> tuple[CardLevel, ...]:
    """Every AMD card's level, in card order."""
    return host.memo("facts:perf-levels", lambda: tuple(
        CardLevel(card, path, host.read_file(path)) for card, path in amd_level_files(host)))
