"""GPU firmware facts from the sources: firmware builds AMD named as faulty, and the firmware
bundles a ROCm release lists for Instinct GPUs."""

from __future__ import annotations

from dataclasses import dataclass

# AMD in ROCm issue 5814 (gfx1201, linux-firmware 20251125): "FW 0x84 is affected by a known
# MES issue"; the users' random page faults and memory access faults matched it.
ROCM_5814 = "https://github.com/ROCm/ROCm/issues/5814"
# ROCm 7.11.0 release notes, "Kernel driver and firmware bundle support": "AMD supplies those
# firmware images (PLDM bundles), which the OEM integrates and distributes."
ROCM_711_FIRMWARE = ("https://rocm.docs.amd.com/en/docs-7.11.0/about/release-notes.html"
                     "#release-supported-fw")
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

# Product (as amd-smi or rocminfo names it) -> the firmware ROCm 7.11.0 lists for it.
INSTINCT_FIRMWARE: tuple[tuple[str, str], ...] = (
    ("MI355X", "PLDM bundle 01.25.16.03"),
    ("MI350X", "PLDM bundle 01.25.16.03"),
    ("MI325X", "PLDM bundle 01.25.04.02"),
    ("MI300X", "PLDM bundle 01.25.03.12"),
    ("MI300A", "BKC 26.1"),
    ("MI250X", "IFWI 75 or later"),
    ("MI250", "maintenance update 5 with IFWI 75 or later"),
    ("MI210", "maintenance update 5 with IFWI 75 or later"),
)
