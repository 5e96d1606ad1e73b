"""The amdgpu `ppfeaturemask` module parameter: its bits, its defaults, how to read it.

Each bit is one PowerPlay feature of `enum PP_FEATURE_MASK` in the kernel's
drivers/gpu/drm/amd/include/amd_shared.h; the default mask is
`amdgpu_pp_feature_mask` in drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

AMD_SHARED_H = (
    "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/include/amd_shared.h"
)
AMDGPU_DRV_C = (
    "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c"
)
# "drm/amd/pm: enable DCS" (2021-02-03) added bit 19 and changed the default to 0xfff7bfff.
GFX_DCS_PATCH = "https://lore.kernel.org/amd-gfx/20210203104725.2000-1-kenneth.feng@amd.com/"
# The parameter became `hexint` (printed "%#08x"); older kernels print it as a decimal `uint`.
KERNEL_PARAMS_C = "https://github.com/torvalds/linux/blob/master/kernel/params.c"

MASK_BITS = 32
FULL_MASK = (1 << MASK_BITS) - 1
# amdgpu_drv.c: "OverDrive(bit 14) disabled by default / GFX DCS(bit 19) disabled by default".
DEFAULT_MASK = 0xFFF7BFFF
# Before the GFX DCS patch only OverDrive was off by default.
OLD_DEFAULT_MASK = 0xFFFFBFFF
KNOWN_DEFAULTS: dict[int, str] = {
    DEFAULT_MASK: "the default since 2021 (OverDrive and GFX DCS off)",
    OLD_DEFAULT_MASK: "the default of kernels before 2021 (OverDrive off)",
}
OVERDRIVE_BIT = 14


@dataclass(frozen=True)
class PPFeature:
    bit: int
    name: str  # the enum constant in amd_shared.h
    title: str  # the kernel-doc description, shortened
    # What clearing it (when the default sets it) or setting it (when the default clears it)
    # means for a machine that trains models.
    effect: str
    source: str = AMD_SHARED_H

    @property
    def mask(self) -> int:
        return 1 << self.bit


_CLOCK_FIXED = "that clock stops following the load and stays at one level, usually slower"
_MORE_POWER = "a power-saving feature is off: more power and heat, speed mostly unchanged"
_PM_OFF = "a power-management feature is off; its effect depends on the GPU"
_NOT_COMPUTE = "a display or video feature is off; compute is unaffected"
THERMAL_DOC = "https://docs.kernel.org/gpu/amdgpu/thermal.html"

PP_FEATURES: tuple[PPFeature, ...] = (
    PPFeature(0, "PP_SCLK_DPM_MASK", "graphics clock (SCLK) DPM", _CLOCK_FIXED),
    PPFeature(1, "PP_MCLK_DPM_MASK", "memory clock (MCLK) DPM", _CLOCK_FIXED),
    PPFeature(2, "PP_PCIE_DPM_MASK", "PCIe clock and lane DPM",
              "the PCIe link stops scaling its speed and width with the load"),
    PPFeature(3, "PP_SCLK_DEEP_SLEEP_MASK", "graphics clock deep sleep", _MORE_POWER),
    PPFeature(4, "PP_POWER_CONTAINMENT_MASK", "power containment", _PM_OFF),
    PPFeature(5, "PP_UVD_HANDSHAKE_MASK", "video decoder (UVD) handshake", _NOT_COMPUTE),
    PPFeature(6, "PP_SMC_VOLTAGE_CONTROL_MASK", "dynamic voltage control", _PM_OFF),
    PPFeature(7, "PP_VBI_TIME_SUPPORT_MASK", "vertical blank interval support", _NOT_COMPUTE),
    PPFeature(8, "PP_ULV_MASK", "ultra low voltage", _MORE_POWER),
    PPFeature(9, "PP_ENABLE_GFX_CG_THRU_SMU", "SMU control of graphics clock gating",
              _MORE_POWER),
    PPFeature(10, "PP_CLOCK_STRETCH_MASK", "clock stretching", _PM_OFF),
    PPFeature(11, "PP_OD_FUZZY_FAN_CONTROL_MASK", "OverDrive fuzzy fan control", _PM_OFF),
    PPFeature(12, "PP_SOCCLK_DPM_MASK", "SoC clock DPM", _CLOCK_FIXED),
    PPFeature(13, "PP_DCEFCLK_DPM_MASK", "display controller fabric clock DPM", _CLOCK_FIXED),
    PPFeature(14, "PP_OVERDRIVE_MASK", "OverDrive (over- and under-clocking)",
              "pp_od_clk_voltage lets root change clocks and voltages out of spec; the kernel "
              "taints itself (TAINT_CPU_OUT_OF_SPEC) and logs 'Overdrive is enabled, please "
              "disable it before reporting any bugs'", AMDGPU_DRV_C),
    PPFeature(15, "PP_GFXOFF_MASK", "GFXOFF (graphics engine powered off when idle)",
              "the graphics engine stays powered when idle: more idle power, no loss of speed",
              THERMAL_DOC),
    PPFeature(16, "PP_ACG_MASK", "adaptive clock generator", _PM_OFF),
    PPFeature(17, "PP_STUTTER_MODE", "stutter mode", _MORE_POWER),
    PPFeature(18, "PP_AVFS_MASK", "adaptive voltage and frequency scaling", _PM_OFF),
    PPFeature(19, "PP_GFX_DCS_MASK", "GFX asynchronous DCS",
              "a power feature that is off by default is on", GFX_DCS_PATCH),
)

FEATURES_BY_BIT: dict[int, PPFeature] = {f.bit: f for f in PP_FEATURES}

_MASK_RE = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")


def parse_mask(text: str) -> Optional[int]:
    """The mask in `text` ("0xfff7bfff" from sysfs, "4294950911" from old kernels, or a
    command-line value), read the way the kernel's kstrtouint(base 0) reads it; None when
    it is not a 32-bit unsigned number."""
    value = text.strip()
    if not _MASK_RE.fullmatch(value):
        return None
    if value[:2].lower() == "0x":
        number = int(value[2:], 16)
    elif len(value) > 1 and value[0] == "0":
        if any(c in "89" for c in value):
            return None
        number = int(value, 8)
    elif len(value) > 10:  # past any 32-bit value (and past Python's int() digit limit)
        return None
    else:
        number = int(value, 10)
    return number if number <= FULL_MASK else None


@dataclass(frozen=True)
class MaskDiff:
    """How a mask differs from the default: features switched on and off, unknown bits."""

    turned_on: tuple[PPFeature, ...]
    turned_off: tuple[PPFeature, ...]
    undefined_cleared: tuple[int, ...]  # bits with no feature that the default sets


def diff_from_default(mask: int, default: int = DEFAULT_MASK) -> MaskDiff:
    turned_on: list[PPFeature] = []
    turned_off: list[PPFeature] = []
    undefined: list[int] = []
    for bit in range(MASK_BITS):
        flag = 1 << bit
        if (mask & flag) == (default & flag):
            continue
        feature = FEATURES_BY_BIT.get(bit)
        if feature is None:
            if default & flag:
                undefined.append(bit)
        elif mask & flag:
            turned_on.append(feature)
        else:
            turned_off.append(feature)
    return MaskDiff(tuple(turned_on), tuple(turned_off), tuple(undefined))


def hex_mask(mask: int) -> str:
    return f"{mask:#010x}"
