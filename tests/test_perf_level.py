"""perf-level through a strict SnapshotHost, in the kernel's sysfs format ("auto\\n")."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

import pytest

from rocmdoctor.checks.perf_level import PerfLevelCheck
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.perf_levels import LACT_MANUAL, PERF_DETERMINISM_COMMIT, PERF_LEVELS, lookup
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = PerfLevelCheck()
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}
ABSENT = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl")
LEVEL = "/sys/class/drm/{}/device/power_dpm_force_performance_level"


def card(name: str, level: Optional[str], vendor: str = "0x1002") -> dict[str, str]:
    files = {f"/sys/class/drm/{name}/device/vendor": vendor + "\n"}
    if level is not None:
        files[LEVEL.format(name)] = level + "\n"
    return files


def host(files: dict[str, str], paths: Optional[dict[str, dict[str, Any]]] = None) -> SnapshotHost:
    # A path recorded by stat but with no file text reads as "cannot be read".
    return SnapshotHost(make_snapshot(files={**ROCM, **files}, paths=paths), strict=True,
                        absent=ABSENT + tuple(paths or ()))


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def smi_levels(name: str) -> list[str]:
    """The per-GPU values of a real `rocm-smi -a` "Show Performance Level" section."""
    return re.findall(r"^GPU\[\d+\]\s+: Performance Level: (\S+)$", fixture_text(name), re.M)


@pytest.mark.parametrize(("fixture", "first", "summary"), [
    ("rocm-smi-a-gfx942-mi300x-x4-driver6.7.0.txt", 1, "card1, card2, card3, card4: auto"),
    ("rocm-smi-a-gfx1103-780m-apu-inbox-kernel6.10-rocm6.1.1-gfx11003.txt", 0, "card0: auto"),
])
def test_real_levels_pass(fixture: str, first: int, summary: str) -> None:
    files: dict[str, str] = {}
    for i, value in enumerate(smi_levels(fixture), start=first):
        files.update(card(f"card{i}", value))
    if first:  # the server's BMC display (ASPEED, vendor 0x1a03) is card0 and has no level
        files["/sys/class/drm/card0/device/vendor"] = "0x1a03\n"
    assert run(host(files)) == expect(Status.PASS, summary)


def test_low_warns_and_prints_the_root_command() -> None:
    h = host({**card("card0", "auto"), **card("card1", "low")})
    path = LEVEL.format("card1")
    assert run(h) == expect(Status.WARN, "card1 held at low clocks (card0: auto; card1: low)", (
        Finding.error("card1: low: clocks are forced to the lowest power state; training runs "
                      "slower than with auto"),
    ), Fix("Return card1 to auto (this lasts until reboot; `sudo rocm-smi --setperflevel auto` "
           "does the same for every GPU). If the level comes back after a reboot, a udev rule or "
           "a service sets it.", (f"echo auto | sudo tee {path}",), needs_root=True))


def test_profile_min_sclk_counts_as_slow() -> None:
    h = host(card("card0", "profile_min_sclk"))
    result = run(h)
    assert result == expect(Status.WARN, "card0 held at low clocks (card0: profile_min_sclk)", (
        Finding.error("card0: profile_min_sclk: profiling mode: clock and power gating are off "
                      "and the graphics clock is forced to its lowest level; training runs "
                      "slower than with auto"),
    ), result.fix)
    assert result.fix is not None and result.fix.commands == (
        f"echo auto | sudo tee {LEVEL.format('card0')}",)


def test_high_is_a_hint_not_a_failure() -> None:
    h = host({**card("card0", "high"), **card("card1", "profile_peak")})
    assert run(h) == expect(Status.PASS, "card0: high; card1: profile_peak", (
        Finding.hint("card0: high: clocks are forced to the highest power state; good for "
                     "steady benchmarks, but the GPU draws more power when idle (auto is the "
                     "default)"),
        Finding.hint("card1: profile_peak: profiling mode: clock and power gating are off and all "
                     "clocks (memory, graphics, PCIe) are at their highest levels; good for steady "
                     "benchmarks, but the GPU draws more power when idle (auto is the default)"),
    ))


def test_determinism_is_explained() -> None:
    h = host(card("card1", "perf_determinism"))
    assert run(h) == expect(Status.PASS, "card1: perf_determinism", (
        Finding.info("card1: perf_determinism: performance determinism (Instinct): the firmware "
                     "holds a sustained level under a maximum graphics clock set in pp_dpm_sclk"),
    ), source=PERF_DETERMINISM_COMMIT)


LACT_594 = "lact-manual-performance-level-40-50-percent-slower-rx7900xt-from-corectrl.txt"
LACT_583 = "lact-manual-performance-level-limits-power-draw-0.7.4-TRUNCATED.txt"
LACT_513 = "lact-pp-dpm-writable-only-at-manual-performance-level-TRUNCATED.txt"


def test_real_a_card_left_at_manual_by_a_gpu_control_tool_warns() -> None:
    # LACT#594: moved from CoreCtrl to LACT, "manual performance level ... degraded by 40-50%";
    # LACT#583: "Manual" held the power draw low; LACT#513: the clock files are writable only at
    # manual, which is why the tools set it. The file then reads "manual" (amdgpu_pm.c).
    assert "manual performance level" in fixture_text(LACT_594)
    assert "degraded by 40-50%" in fixture_text(LACT_594)
    assert 'performance level as "Manual"' in fixture_text(LACT_583)
    assert "only writable when performance level is manual" in fixture_text(LACT_513)
    h = host({**card("card0", "auto"), **card("card1", "manual")})
    path = LEVEL.format("card1")
    assert run(h) == expect(
        Status.WARN, "card1 left at manual clocks (card0: auto; card1: manual)", (
            Finding.error("card1: manual: the enabled clock states are set by hand in "
                          "pp_dpm_sclk, pp_dpm_mclk and pp_dpm_pcie, and the heuristics in "
                          "pp_power_profile_mode; GPU control tools (LACT, CoreCtrl) set manual "
                          "to apply their profiles and leave it there, and at manual a card has "
                          "run 40-50% slower than at auto"),
        ),
        Fix("Return card1 to auto (this lasts until reboot; `sudo rocm-smi --setperflevel "
            "auto` does the same for every GPU). If the level comes back after a reboot, a udev "
            "rule or a service sets it. Set the GPU control tool's performance level to "
            "Automatic too (LACT, CoreCtrl), or it writes manual again.",
            (f"echo auto | sudo tee {path}",), needs_root=True),
        source=LACT_MANUAL)


def test_unreadable_card_is_noted_and_others_still_count() -> None:
    # rocm-smi shows "unknown" in its Perf column for GPUs it cannot read (ROCm#4878).
    unreadable = {LEVEL.format("card1"): {"type": "file", "mode": "0644"}}
    h = host({**card("card0", "auto"), **card("card1", None)}, unreadable)
    assert run(h) == expect(Status.PASS, "card0: auto", (
        Finding.info("card1: the level could not be read (the GPU may be suspended or "
                     "resetting)"),
    ))
    # ...whichever card comes first
    first = {LEVEL.format("card0"): {"type": "file", "mode": "0644"}}
    assert run(host({**card("card0", None), **card("card1", "low")}, first)) == expect(
        Status.WARN, "card1 held at low clocks (card1: low)", (
            Finding.info("card0: the level could not be read (the GPU may be suspended or "
                         "resetting)"),
            Finding.error("card1: low: clocks are forced to the lowest power state; training "
                          "runs slower than with auto")),
        Fix("Return card1 to auto (this lasts until reboot; `sudo rocm-smi --setperflevel auto` "
            "does the same for every GPU). If the level comes back after a reboot, a udev rule "
            "or a service sets it.", (f"echo auto | sudo tee {LEVEL.format('card1')}",),
            needs_root=True))
    only_unreadable = host(card("card1", None), unreadable)
    assert run(only_unreadable) == expect(
        Status.SKIP, "no AMD GPU's performance level could be read")


def test_non_amd_cards_and_connectors_are_ignored() -> None:
    files = {**card("card0", "auto", vendor="0x10de"), **card("card1", "auto"),
             LEVEL.format("card1-DP-1"): "low\n"}
    assert run(host(files)) == expect(Status.PASS, "card1: auto")


def test_skips_without_amd_cards_or_without_amd() -> None:
    assert run(host({})) == expect(
        Status.SKIP, "no AMD GPU exposes power_dpm_force_performance_level")
    cpu = SnapshotHost(make_snapshot(), strict=True, absent=ABSENT)
    assert run(cpu) == expect(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found")


def test_every_kernel_level_is_known() -> None:
    # The names amdgpu_get_power_dpm_force_performance_level() can print.
    names = ["auto", "low", "high", "manual", "profile_standard", "profile_min_sclk",
             "profile_min_mclk", "profile_peak", "perf_determinism", "unknown"]
    assert [level.name for level in PERF_LEVELS] == names
    assert lookup("bogus\n").name == "unknown" and lookup("auto\n").name == "auto"
