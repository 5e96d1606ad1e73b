"""GPU firmware facts from the sources: firmware builds AMD named as faulty, and the firmware
bundles a ROCm release lists for Instinct GPUs."""

from __future__ import annotations

from dataclasses import dataclass

# AMD in ROCm issue 5814 (gfx1201, linux-firmware 20251125): "FW 0x84 is affected by a known
# MES issue"; the users' random page faults and memory access faults matched it.
ROCM_5814 = "https://github.com/ROCm/ROCm/issues/5814"
# The ROCm 10.1.0 release notes, "Kernel driver and firmware bundle support" ("AMD supplies
# those firmware images (PLDM bundles), which the OEM integrates and distributes"), render
# ROCm/rocm-docs docs/data/driver-firmware-support.yaml: its `firmware` list per Instinct GPU.
FIRMWARE_YAML = ("https://github.com/ROCm/rocm-docs/blob/384a5ef4fd748dbc5494171e0021a3f8171f480e/"
                 "docs/data/driver-firmware-support.yaml")
FIRMWARE_RELEASE = "10.1"
COMPATIBILITY = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"


@dataclass(frozen=True)
class FaultyFirmware:
    firmware: str  # the amdgpu_firmware_info name: "MES"
    version: int
    gfx_prefix: str  # the GPUs it was reported on
    note: str
    source: str


FAULTY: tuple[FaultyFirmware, ...] = (
    FaultyFirmware("MES", 0x84, "gfx12",
                   "AMD: 'FW 0x84 is affected by a known MES issue' (random GPU page faults and "
                   "memory access faults on gfx12)", ROCM_5814),
)

# Product (as amd-smi or rocminfo names it) -> the firmware the ROCm 10.1.0 notes list for it
# (FIRMWARE_YAML, "AMD Instinct" entries; the first is "or later", the second the previous).
_MU5 = "maintenance update (MU) 5 with IFWI 75 (or later)"
INSTINCT_FIRMWARE: tuple[tuple[str, str], ...] = (
    ("MI355X", "PLDM bundle 01.26.01.03 (or later) or 01.26.00.02"),
    ("MI350X", "PLDM bundle 01.26.01.03 (or later) or 01.26.00.02"),
    ("MI350P", "BKC12.0 (IFWI PRD1000A) or later, or IFWI 00189939"),
    ("MI325X", "PLDM bundle 01.26.01.03 (or later) or 01.25.06.08"),
    ("MI300X", "PLDM bundle 01.26.00.04 (or later) or 01.25.06.05"),
    ("MI300A", "PI100D or PI100C"),
    ("MI250X", _MU5),
    ("MI250", _MU5),
    ("MI210", _MU5),
    ("MI100", "VBIOS D3430401-037"),
)
