"""deep (`check --deep`): the measured run itself, in one child process of the Python that
trains: whether it ran, on which GPUs, how long it took, and what it could not measure.

The measured checks (gemm-rate, conv-rate, memory-bandwidth, host-link, clocks-under-load,
kernel-launch, gpu-links, stress) judge its figures; they depend on this one, so a run that
crashed or hung is one error here, not one per check.

By hand: each measured check's findings say what it timed and how; the run's progress and
its last words are in `rocmdoctor check --deep -v`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.deep import NOT_RECORDED, deep_run, no_gpu_reason
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


class DeepRunCheck(Check):
    id = "deep"
    title = "Measured checks (--deep)"
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return no_gpu_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        if not run.recorded:
            return self.skipped(NOT_RECORDED)
        if run.error is not None:
            return self.result(Status.ERROR, run.error, fix=Fix(
                "Run the measurements alone and read what they print last.",
                ("rocmdoctor check --deep --only deep -v",)))
        if not run.gpus:
            why = "; ".join(run.errors) or f"torch {run.torch or '?'} sees none"
            return self.skipped(f"the measuring process found no GPU to measure ({why})")
        findings = [Finding.info(f"{k}={v} in the measured process's environment")
                    for k, v in sorted(run.env.items())]
        failed = 0
        for gpu in run.gpus:
            findings.append(Finding.info(f"{gpu.label} ({gpu.arch}): timed with {gpu.timer}; "
                                         f"telemetry from {gpu.telemetry.source}"))
            for what, why in sorted(gpu.errors.items()):
                failed += 1
                findings.append(Finding.info(f"{gpu.label}: {what} not measured: {why}"))
            for why in gpu.telemetry.unavailable:
                findings.append(Finding.info(f"{gpu.label}: telemetry: {why}"))
        findings.extend(Finding.info(e) for e in run.errors)
        names = ", ".join(f"GPU {g.index} {g.name}" for g in run.gpus)
        took = f" in {run.elapsed_s:.0f} s" if run.elapsed_s is not None else ""
        what = f"{len(run.gpus)} GPU(s) measured{took}: {names} (torch {run.torch or '?'})"
        if run.level == "stress":
            what += f", stress {run.stress_s:g} s"
        if run.interrupted:
            what = f"interrupted (Ctrl-C) after {run.elapsed_s or 0:.0f} s: the figures so " \
                   f"far; {what}"
        if failed and all(not g.gemm and not g.conv and g.copy is None for g in run.gpus):
            return self.result(Status.ERROR, f"no measurement completed: {findings[-1].text}",
                               findings)
        return self.passed(what, findings)
