"""stress (`check --stress DURATION`): the GEMM and bandwidth loops for that long on every GPU
at once, per one-second window; every window's product checked for NaN/Inf and a sampled
tile against a float64 product on the CPU; ECC counters read before and after; the reasons
the clocks were held down during it; the slowest window against the median one. For burn-in
and fleet acceptance. Ctrl-C ends it with the figures so far.

By hand: `dcgmi diag -r 3` (NVIDIA), `rvs -c .../gst_stress.conf` (AMD), or gpu-fryer.
"""

from __future__ import annotations

import statistics
from typing import Optional

from rocmdoctor.facts.deep import deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, share
from rocmdoctor.facts.deep_results import GpuDeep
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_rules
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status

DCGM_DIAG = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html"


class Stress(Check):
    id = "stress"
    title = "Stress: errors, throttling and the slowest window (--stress)"
    source = DCGM_DIAG
    depends = ("deep",)
    uses_python = True
    level = "stress"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        failures: list[tuple[str, Fix]] = []
        warnings: list[tuple[str, Fix]] = []
        ran = [g for g in run.gpus if g.stress is not None]
        for gpu in ran:
            self._gpu(gpu, figures, findings, failures, warnings)
        if not ran:
            return self.skipped("the stress loop did not run (`check --stress DURATION` runs "
                                "it)")
        cut = " (interrupted: the figures so far)" if run.interrupted else ""
        if failures:
            text, fix = failures[0]
            return self.result(Status.FAIL, text + cut, findings, fix, figures=figures)
        if warnings:
            text, fix = warnings[0]
            return self.result(Status.WARN, text + cut, findings, fix, figures=figures)
        seconds = max((g.stress.seconds if g.stress else 0) for g in ran)
        windows = sum(len(g.stress.windows) for g in ran if g.stress)
        return self.result(Status.PASS, f"{len(ran)} GPU(s), {windows} windows over "
                           f"{seconds:g} s: no errors, no throttling, no slow window{cut}",
                           findings, figures=figures)

    @staticmethod
    def _gpu(gpu: GpuDeep, figures: list[Figure], findings: list[Finding],
             failures: list[tuple[str, Fix]], warnings: list[tuple[str, Fix]]) -> None:
        s = gpu.stress
        assert s is not None
        rates = [w[1] for w in s.windows if w[1]]
        if rates:
            median = statistics.median(rates)
            slowest = min(rates)
            at = next(w[0] for w in s.windows if w[1] == slowest)
            figures.append(Figure("stress:gemm", "bf16 GEMM per window", median, "TFLOP/s",
                                  gpu=gpu.index, runs=len(rates),
                                  spread_pct=(max(rates) - slowest) / median * 100,
                                  reference=Reference(median, "TFLOP/s", "the median window",
                                                      DCGM_DIAG), ratio=slowest / median))
            findings.append(Finding.info(
                f"{gpu.label}: {len(rates)} windows, bf16 GEMM {amount(median, 'TFLOP/s')} "
                f"median, slowest {amount(slowest, 'TFLOP/s')} at {at:.0f} s "
                f"({share(slowest / median)} of the median)"))
            # the CPU test device shares its cores with everything else: no timing verdict
            if slowest < deep_rules.SLOW_WINDOW_SHARE * median and gpu.vendor != "cpu":
                warnings.append((f"{gpu.label}: the slowest window ran at "
                                 f"{share(slowest / median)} of the median "
                                 f"({amount(slowest, 'TFLOP/s')} at {at:.0f} s)", Fix(
                                     "Look at clocks-under-load and the temperature over the "
                                     "run: a card that slows as it heats needs cooling.",
                                     ("rocmdoctor check --stress 10m --only stress -v",))))
        findings.append(Finding.info(f"{gpu.label}: {s.checked_tiles} product tiles checked "
                                     f"against float64 on the CPU: {s.mismatches} mismatched, "
                                     f"{s.nonfinite} products with NaN or Inf"))
        service = Fix("Take the GPU out of service and run the vendor's diagnostics: wrong "
                      "results without an error are a hardware fault.",
                      ("dcgmi diag -r 3" if gpu.vendor == "nvidia" else
                       "rvs -c /opt/rocm/share/rocm-validation-suite/conf/gst_single.conf",))
        if s.mismatches or s.nonfinite:
            bad = s.first_bad
            where = (f" (first in window {bad.get('window')}, tile at row {bad.get('row')}, "
                     f"column {bad.get('col')})") if bad else ""
            failures.append((f"{gpu.label}: {s.mismatches} product tile(s) disagreed with the "
                             f"CPU and {s.nonfinite} product(s) held NaN or Inf{where}",
                             service))
        before, after = gpu.before, gpu.after
        if before.ecc_uncorrected is not None and after.ecc_uncorrected is not None:
            grew = after.ecc_uncorrected - before.ecc_uncorrected
            corrected = (after.ecc_corrected or 0) - (before.ecc_corrected or 0)
            findings.append(Finding.info(f"{gpu.label}: ECC during the run: {grew} "
                                         f"uncorrectable, {corrected} corrected"))
            if grew > 0:
                failures.append((f"{gpu.label}: {grew} uncorrectable ECC error(s) during the "
                                 "stress run", service))
        load = gpu.telemetry.stress
        if load and load.reasons:
            hot = {r: v for r, v in load.reasons.items() if v >= deep_rules.REASON_SHARE
                   and r in deep_rules.HW_REASONS + deep_rules.THERMAL_REASONS}
            if hot:
                reason = max(hot, key=lambda r: hot[r])
                warnings.append((f"{gpu.label} was throttled during the stress run: {reason} "
                                 f"{share(hot[reason])} of the time", Fix(
                                     "Check the cooling of this GPU.",
                                     ("nvidia-smi -q -d PERFORMANCE,TEMPERATURE",))))
