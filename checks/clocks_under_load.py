"""clocks-under-load (`check --deep`): the GPU clock, power and temperature sampled (10 Hz)
while the sustained bf16 GEMM runs, with the reasons the driver gives for holding the clocks
down (NVML's clocks event reasons; amdsmi's throttle status), the power limit against its
default, the temperature against the slowdown threshold, and AMD's performance level.

The tool only reads these settings; a fix that changes one is printed for an administrator.

By hand: `nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE` while a job runs, or
`nvidia-smi dmon -s pc`; AMD: `amd-smi metric --clock --power --temperature` and
`cat /sys/class/drm/card*/device/power_dpm_force_performance_level`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.deep import deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, share, status_of, worst_of
from rocmdoctor.facts.deep_results import GpuDeep
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_rules, perf_levels
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status

Problem = tuple[str, str, Fix]


class ClocksUnderLoad(Check):
    id = "clocks-under-load"
    title = "Clocks, power and temperature under load (--deep)"
    source = deep_rules.NVML_REASONS
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        problems: list[Problem] = []
        read = 0
        for gpu in run.gpus:
            load = gpu.telemetry.under_load
            if not load.samples:
                findings.append(Finding.info(f"{gpu.label}: no telemetry ("
                                             + ("; ".join(gpu.telemetry.unavailable) or
                                                gpu.telemetry.source) + ")"))
                continue
            read += 1
            figures.append(self._figure(gpu))
            findings.append(Finding.info(self._line(gpu)))
            problems.extend(self._judge(gpu))
        if not read:
            return self.skipped("no clock or power telemetry could be read (install "
                                "nvidia-ml-py or amdsmi in the Python that trains)")
        verdict = worst_of(p[0] for p in problems)
        if verdict is not None:
            first = next(p for p in problems if p[0] == verdict)
            for p in problems:
                findings.append(Finding.error(p[1]) if p[0] == "fail" else Finding.hint(p[1]))
            return self.result(status_of(verdict), first[1], findings, first[2],
                               figures=figures)
        head = figures[0]
        summary = (f"{read} GPU(s) held their clocks under load: "
                   f"{amount(head.value, 'MHz')} median" + (
                       f" of {amount(head.reference.value, 'MHz')}" if head.reference else ""))
        return self.result(Status.PASS, summary, findings, figures=figures)

    @staticmethod
    def _figure(gpu: GpuDeep) -> Figure:
        t, load = gpu.telemetry, gpu.telemetry.under_load
        ref = Reference(t.max_clock_mhz, "MHz", "the top clock the driver reports",
                        deep_rules.NVML_REASONS) if t.max_clock_mhz else None
        ratio = load.clock_median / t.max_clock_mhz if load.clock_median and t.max_clock_mhz \
            else None
        return Figure("clock:under-load", "GPU clock under the bf16 GEMM", load.clock_median,
                      "MHz", gpu=gpu.index, runs=load.samples, reference=ref, ratio=ratio)

    @staticmethod
    def _line(gpu: GpuDeep) -> str:
        t, load = gpu.telemetry, gpu.telemetry.under_load
        parts = [f"clock {amount(load.clock_median, 'MHz')} median, "
                 f"{amount(load.clock_p95, 'MHz')} p95"
                 + (f" of {amount(t.max_clock_mhz, 'MHz')}" if t.max_clock_mhz else "")]
        if load.power_median is not None:
            parts.append(f"power {amount(load.power_median, 'W')} median"
                         + (f" of a {amount(t.power_limit_w, 'W')} limit" if t.power_limit_w
                            else ""))
        if load.temp_max is not None:
            parts.append(f"temperature up to {load.temp_max:.0f} °C")
        if load.reasons:
            parts.append("reasons: " + ", ".join(f"{r} {share(s)} of the time"
                                                 for r, s in sorted(load.reasons.items())))
        return (f"{gpu.label} during the bf16 GEMM ({load.samples} samples from "
                f"{t.source}): " + "; ".join(parts))

    @staticmethod
    def _judge(gpu: GpuDeep) -> list[Problem]:
        t, load = gpu.telemetry, gpu.telemetry.under_load
        out: list[Problem] = []
        on = {r: s for r, s in (load.reasons or {}).items() if s >= deep_rules.REASON_SHARE}
        bus = gpu.bus_id or str(gpu.index)
        held = (f" at {amount(load.clock_median, 'MHz')} of {amount(t.max_clock_mhz, 'MHz')}"
                if load.clock_median and t.max_clock_mhz else "")
        hw = [r for r in deep_rules.HW_REASONS if r in on]
        if hw:
            out.append(("fail", f"{gpu.label} was held{held} by {', '.join(hw)}: "
                        f"{deep_rules.REASON_MEANING[hw[0]]}", Fix(
                            "Check the cooling and the power supply of this GPU (fans, airflow, "
                            "the server's power brake); the driver's counters say how long "
                            "it was throttled.", ("nvidia-smi -q -d PERFORMANCE",))))
        thermal = [r for r in deep_rules.THERMAL_REASONS if r in on]
        if thermal or (load.temp_max and t.slowdown_temp_c and load.temp_max >= t.slowdown_temp_c):
            why = thermal[0] if thermal else "its temperature"
            at = f", slowdown at {t.slowdown_temp_c:.0f} °C" if t.slowdown_temp_c else ""
            out.append(("warn", f"{gpu.label} was slowed{held} by {why}: up to "
                        f"{load.temp_max or 0:.0f} °C{at}", Fix(
                            "Improve the GPU's cooling (airflow, fan curve, room temperature).",
                            ("nvidia-smi -q -d TEMPERATURE",))))
        low_limit = (t.power_limit_w and t.default_power_limit_w
                     and t.power_limit_w < 0.95 * t.default_power_limit_w)
        if low_limit and "SW Power Cap" in on:
            out.append(("warn", f"{gpu.label} was held{held} by its power limit, "
                        f"{amount(t.power_limit_w, 'W')} of the default "
                        f"{amount(t.default_power_limit_w, 'W')}", Fix(
                            "Ask the administrator to restore the default power limit (this "
                            "tool only reads it).",
                            (f"sudo nvidia-smi -i {bus} -pl {t.default_power_limit_w:g}",),
                            needs_root=True)))
        level = t.perf_level
        if level and level != "auto":
            known = next((p for p in perf_levels.PERF_LEVELS if p.name == level), None)
            meaning = known.meaning if known else "not the driver's automatic choice"
            out.append(("warn", f"{gpu.label}: performance level {level}: {meaning}", Fix(
                "Let the driver choose the clocks again (this tool only reads the level).",
                ("echo auto | sudo tee /sys/class/drm/card*/device/"
                 "power_dpm_force_performance_level",), needs_root=True)))
        if not out and load.clock_p95 and t.max_clock_mhz and \
                load.clock_p95 < deep_rules.BOOST_SHARE * t.max_clock_mhz and not on:
            out.append(("warn", f"{gpu.label} never reached its top clock under load: "
                        f"{amount(load.clock_p95, 'MHz')} p95 of {amount(t.max_clock_mhz, 'MHz')}"
                        ", and the driver gives no reason", Fix(
                            "Read the clocks while a job runs; a locked or application clock "
                            "set by an administrator shows there.",
                            ("nvidia-smi -q -d CLOCK" if gpu.vendor == "nvidia"
                             else "amd-smi metric --clock",))))
        return out
