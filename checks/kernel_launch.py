"""kernel-launch (`check --deep`): microseconds per launch of a tiny kernel, queued back to
back and each waited for. Queued launches as slow as waited ones are serialized: the CPU waits
for every kernel (CUDA_LAUNCH_BLOCKING=1, HIP_LAUNCH_BLOCKING, AMD_SERIALIZE_KERNEL, or a
debugger or profiler attached), which slows every training step.

The rule compares two measurements on the same card, so it needs no reference for it.

By hand: `env | grep -E 'LAUNCH_BLOCKING|SERIALIZE'`; time 10,000 `x.add_(1)` between two
CUDA events, then the same with `torch.cuda.synchronize()` after each.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.deep import deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, share
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_rules
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status


class KernelLaunch(Check):
    id = "kernel-launch"
    title = "Kernel launches queue without waiting (--deep)"
    source = deep_rules.TORCH_CUDA_ENV
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        serialized = []
        causes = deep_rules.env_causes(run.env, "kernel-launch")
        blocking = [c for c in causes if c.name in deep_rules.SERIALIZING_VARS]
        for gpu in run.gpus:
            queued, waited = gpu.launch_queued, gpu.launch_waited
            if queued is None or waited is None:
                continue
            ratio = queued.median / waited.median
            cpu = gpu.vendor == "cpu"
            # A serializing variable set makes every launch wait, whatever the ratio: on an
            # H200, CUDA_LAUNCH_BLOCKING=1 doubled the queued launch (12.31 us against
            # 6.2-6.9) and still stayed under the share (docs/benchmarks.md).
            verdict = None if cpu else (
                "warn" if blocking or ratio >= deep_rules.SERIALIZED_SHARE else "pass")
            figures.append(Figure(
                "launch:queued", "queued kernel launch", queued.median, "us", gpu=gpu.index,
                spread_pct=queued.spread_pct, runs=queued.runs, ratio=ratio, verdict=verdict,
                reference=Reference(waited.median, "us", "a launch waited for",
                                    deep_rules.TORCH_CUDA_ENV)))
            findings.append(Finding.info(
                f"{gpu.label}: {amount(queued.median, 'us')} a launch queued back to back, "
                f"{amount(waited.median, 'us')} a launch waited for ({share(ratio)})"
                + ("; the CPU device runs kernels as it launches them: no verdict" if cpu
                   else "")))
            if verdict == "warn":
                serialized.append((gpu, queued.median, waited.median))
        if not figures:
            return self.skipped("kernel launches were not measured")
        if all(f.verdict is None for f in figures):
            return self.result(Status.SKIP, "no verdict on the CPU test device (it runs each "
                               "kernel as it is launched)", findings, figures=figures)
        if not serialized:
            head = figures[0]
            return self.result(Status.PASS, f"{len(figures)} GPU(s): "
                               f"{amount(head.value, 'us')} a queued launch", findings,
                               figures=figures)
        gpu, queued_us, waited_us = serialized[0]
        set_vars = ", ".join(f"{c.name}={run.env.get(c.name)}" for c in blocking)
        why = (set_vars + " is set" if causes else "no serializing variable is set: a "
               "debugger or profiler attached (compute-sanitizer, rocprof) does the same")
        for c in causes:
            findings.append(Finding.hint(f"likely cause: {c.name}={run.env.get(c.name)}: "
                                         f"it {c.effect} ({c.source})"))
        if queued_us / waited_us >= deep_rules.SERIALIZED_SHARE:
            summary = (f"{gpu.label}: kernel launches are serialized: "
                       f"{amount(queued_us, 'us')} a launch queued, as slow as one waited for "
                       f"({amount(waited_us, 'us')}); {why}")
        else:
            summary = (f"{gpu.label}: {set_vars} is set, so every kernel launch waits for the "
                       f"kernel: {amount(queued_us, 'us')} a launch queued "
                       f"({amount(waited_us, 'us')} one waited for)")
        fix = Fix("Unset the debugging variables where training runs.",
                  (f"unset {' '.join(c.name for c in causes)}",)) if causes else Fix(
            "Run training without the debugger or profiler.", ("env | grep -i -E "
                                                                "'BLOCKING|SERIALIZE'",))
        return self.result(Status.WARN, summary, findings, fix, figures=figures,
                           source=causes[0].source if causes else None)
