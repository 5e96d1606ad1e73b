"""Values of /sys/class/drm/cardN/device/power_dpm_force_performance_level.

Reading the file gives one of the names below and a newline (amdgpu_pm.c,
amdgpu_get_power_dpm_force_performance_level: `sysfs_emit(buf, "%s\\n", ...)`, "unknown" for
anything else). The meanings are the kernel-doc "power_dpm_force_performance_level".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

THERMAL_DOC = (
    "https://docs.kernel.org/gpu/amdgpu/thermal.html#power-dpm-force-performance-level"
)
AMDGPU_PM_C = "https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/pm/amdgpu_pm.c"
# "drm/amd/pm: Enable performance determinism on aldebaran" (MI200).
PERF_DETERMINISM_COMMIT = (
    "https://github.com/torvalds/linux/commit/6be6424684cb464be65d47cd4158e811f0d75368"
)
# GPU control tools leave a card at manual: "the pp_dpm_* and pp_power_profile_mode files ...
# are only writable when performance level is manual" (LACT's author, LACT PR #513), so LACT and
# CoreCtrl set it to apply their profiles; at manual a RX 7900 XT ran 40-50% slower than at
# Automatic (LACT issue #594), and LACT 0.7.4's Manual held the power draw low (LACT #583).
LACT_MANUAL = "https://github.com/ilya-zlobintsev/LACT/issues/594"
LACT_WRITABLE_AT_MANUAL = "https://github.com/ilya-zlobintsev/LACT/pull/513"
# `rocm-smi --setperflevel LEVEL` writes the same file.
ROCM_SMI_README = "https://github.com/RadeonOpenCompute/ROC-smi/blob/roc-2.0.0/README.md"


class Verdict(str, enum.Enum):
    GOOD = "good"  # the driver picks clocks by load: what training wants
    SLOW = "slow"  # clocks held low: training runs slower
    PINNED = "pinned"  # clocks held high: fine, more power at idle
    NOTE = "note"  # a deliberate setting whose speed depends on other files
    MANUAL = "manual"  # clocks held by whatever a tool or script last wrote: often slow


@dataclass(frozen=True)
class PerfLevel:
    name: str
    meaning: str
    verdict: Verdict
    source: str = THERMAL_DOC


PERF_LEVELS: tuple[PerfLevel, ...] = (
    PerfLevel("auto", "the driver picks clocks dynamically for the current load", Verdict.GOOD),
    PerfLevel("low", "clocks are forced to the lowest power state", Verdict.SLOW),
    PerfLevel("high", "clocks are forced to the highest power state", Verdict.PINNED),
    PerfLevel("manual", "the enabled clock states are set by hand in pp_dpm_sclk, "
              "pp_dpm_mclk and pp_dpm_pcie, and the heuristics in pp_power_profile_mode",
              Verdict.MANUAL, LACT_MANUAL),
    PerfLevel("profile_standard", "profiling mode: clock and power gating are off and the "
              "clocks are fixed at a level that varies by GPU, below peak", Verdict.NOTE),
    PerfLevel("profile_min_sclk", "profiling mode: clock and power gating are off and the "
              "graphics clock is forced to its lowest level", Verdict.SLOW),
    PerfLevel("profile_min_mclk", "profiling mode: clock and power gating are off and the "
              "memory clock is forced to its lowest level", Verdict.SLOW),
    PerfLevel("profile_peak", "profiling mode: clock and power gating are off and all clocks "
              "(memory, graphics, PCIe) are at their highest levels", Verdict.PINNED),
    PerfLevel("perf_determinism", "performance determinism (Instinct): the firmware holds a "
              "sustained level under a maximum graphics clock set in pp_dpm_sclk",
              Verdict.NOTE, PERF_DETERMINISM_COMMIT),
    PerfLevel("unknown", "the driver reports a level it has no name for", Verdict.NOTE,
              AMDGPU_PM_C),
)

LEVELS_BY_NAME: dict[str, PerfLevel] = {level.name: level for level in PERF_LEVELS}
DEFAULT_LEVEL = "auto"


def lookup(value: str) -> PerfLevel:
    """The level that the file's text names; an unrecognised text maps to `unknown`."""
    return LEVELS_BY_NAME.get(value.strip(), LEVELS_BY_NAME["unknown"])
