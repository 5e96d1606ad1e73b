"""perf-level: each AMD card's power_dpm_force_performance_level.

By hand: `grep . /sys/class/drm/card*/device/power_dpm_force_performance_level`; `rocm-smi`
shows the same value in its Perf column. Only root can change it, and rocmdoctor never does.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.perf_level import LEVEL_FILE, perf_levels
from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb.perf_levels import DEFAULT_LEVEL, LACT_MANUAL, THERMAL_DOC, Verdict, lookup
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


class PerfLevelCheck(Check):
    id = "perf-level"
    depends = ("amdgpu-driver",)
    title = "GPU performance level"
    source = THERMAL_DOC

    def applies(self, host: Host) -> Optional[str]:
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        levels = perf_levels(host)
        if not levels:
            return self.skipped(f"no AMD GPU exposes {LEVEL_FILE}")
        findings: list[Finding] = []
        by_value: dict[str, list[str]] = {}
        slow: list[tuple[str, str, str]] = []
        held: list[tuple[str, str, str]] = []
        source = THERMAL_DOC
        for card, path, text in levels:
            if text is None:
                findings.append(Finding.info(
                    f"{card}: the level could not be read (the GPU may be suspended or "
                    "resetting)"))
                continue
            value = text.strip() or "(empty)"
            by_value.setdefault(value, []).append(card)
            level = lookup(text)
            if level.verdict is Verdict.SLOW:
                slow.append((card, path, value))
                findings.append(Finding.error(f"{card}: {value}: {level.meaning}; training "
                                              "runs slower than with auto"))
            elif level.verdict is Verdict.MANUAL:
                held.append((card, path, value))
                findings.append(Finding.error(
                    f"{card}: {value}: {level.meaning}; GPU control tools (LACT, CoreCtrl) set "
                    "manual to apply their profiles and leave it there, and at manual a card "
                    "has run 40-50% slower than at auto"))
            elif level.verdict is Verdict.PINNED:
                findings.append(Finding.hint(
                    f"{card}: {value}: {level.meaning}; good for steady benchmarks, but the "
                    "GPU draws more power when idle (auto is the default)"))
            elif level.verdict is Verdict.NOTE:
                findings.append(Finding.info(f"{card}: {value}: {level.meaning}"))
                source = level.source if level.source != THERMAL_DOC else source
        if not by_value:
            return self.skipped("no AMD GPU's performance level could be read")
        summary = "; ".join(f"{', '.join(cards)}: {value}" for value, cards in by_value.items())
        if not slow and not held:
            return self.passed(summary, findings, source=source)
        fixed = slow + held
        cards = ", ".join(card for card, _, _ in fixed)
        tool = (" Set the GPU control tool's performance level to Automatic too (LACT, "
                "CoreCtrl), or it writes manual again." if held else "")
        fix = Fix(f"Return {cards} to {DEFAULT_LEVEL} (this lasts until reboot; "
                  f"`sudo rocm-smi --setperflevel {DEFAULT_LEVEL}` does the same for every "
                  "GPU). If the level comes back after a reboot, a udev rule or a service "
                  f"sets it.{tool}",
                  tuple(f"echo {DEFAULT_LEVEL} | sudo tee {path}" for _, path, _ in fixed),
                  needs_root=True)
        parts = []
        if slow:
            parts.append(f"{', '.join(c for c, _, _ in slow)} held at low clocks")
        if held:
            parts.append(f"{', '.join(c for c, _, _ in held)} left at manual clocks")
        summary = f"{'; '.join(parts)} ({summary})"
        return self.result(Status.WARN, summary, findings, fix,
                           source=THERMAL_DOC if slow else LACT_MANUAL)

