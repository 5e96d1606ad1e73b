"""memory-bandwidth (`check --deep`): a device-to-device copy and a STREAM triad
(a = b + s*c) over buffers far larger than the caches, in GB/s counting bytes read and
written, against the card's measured class figure where one is published, else against its
datasheet bandwidth times the share a published measurement reaches (kb/deep_refs.py).

By hand: BabelStream (`hip-stream` / `cuda-stream`), or `rvs -c .../babel.conf` on an
Instinct GPU, or `python -c` timing `dst.copy_(src)` of a 1 GiB tensor with CUDA events.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.deep import deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, describe, graded, share, status_of, worst_of
from rocmdoctor.facts.deep_results import GpuDeep, Rate
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_refs, deep_rules
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status


def _figure(gpu: GpuDeep, key: str, name: str, rate: Optional[Rate]) -> tuple[Figure, float]:
    """The figure, and the share of its reference that is expected."""
    spec = deep_refs.memory_spec(gpu.name)
    spec_ref = Reference(spec.gbs, "GB/s", "datasheet memory bandwidth", spec.source) \
        if spec else None
    measured = deep_refs.class_reference(gpu.name, key)
    if measured is not None:
        ref = Reference(measured.value, measured.unit, f"{measured.what} ({measured.command})",
                        measured.source)
        return graded(key, name, rate, gpu.index, ref, deep_rules.MEASURED, spec_ref), 1.0
    if spec_ref is not None:
        share_ = deep_refs.MEMORY_SHARE
        ref = Reference(spec.gbs if spec else 0.0, "GB/s",
                        "the datasheet bandwidth (the share of it an MI300X reaches)",
                        deep_refs.MEMORY_SHARE_SOURCE)
        return graded(key, name, rate, gpu.index, ref, deep_rules.MEASURED, None, share_), share_
    return graded(key, name, rate, gpu.index), 1.0


class MemoryBandwidth(Check):
    id = "memory-bandwidth"
    title = "Device memory bandwidth: copy and triad (--deep)"
    source = deep_refs.MI300X_HBM_MEASURED
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        for gpu in run.gpus:
            size = ""
            if gpu.memory_bytes:
                big = gpu.memory_bytes >= 2**30
                size = (f" of {gpu.memory_bytes / 2**(30 if big else 20):g} "
                        f"{'GiB' if big else 'MiB'} buffers")
            for key, name, rate in (("memory:copy", f"device-to-device copy{size}", gpu.copy),
                                    ("memory:triad", f"triad a = b + s*c{size}", gpu.triad)):
                if rate is None:
                    continue
                fig, expected = _figure(gpu, key, name, rate)
                figures.append(fig)
                findings.append(Finding.info(describe(fig)))
        if not figures:
            return self.skipped("device memory bandwidth was not measured")
        verdict = worst_of(f.verdict for f in figures)
        if verdict is None:
            head = figures[0]
            return self.result(Status.SKIP, f"GPU {head.gpu}: copy {amount(head.value, 'GB/s')}"
                               "; no reference for this card: no verdict", findings,
                               figures=figures)
        low = next(f for f in figures if f.verdict == verdict)
        found = run.gpu(low.gpu or 0)
        name = found.name if found else "GPU"
        summary = (f"GPU {low.gpu} {name}: {low.name.split(' of ')[0]} "
                   f"{amount(low.value, 'GB/s')}, {share(low.ratio or 0)} of what is expected")
        if verdict == "pass":
            if len(run.gpus) > 1:
                summary = f"{len(run.gpus)} GPUs: copy and triad within the expected band"
            return self.result(Status.PASS, summary, findings, figures=figures)
        findings.append(Finding.hint(
            "likely causes: the memory clock held low (clocks-under-load shows the GPU's; "
            "`nvidia-smi -q -d CLOCK` or `amd-smi metric --clock` the memory's), another "
            "process using the GPU, or a memory partition mode (NPS4, CPX) that gives each "
            "device part of the memory"))
        return self.result(status_of(verdict), summary, findings, Fix(
            "Measure again with nothing else on the GPU and read the memory clock while it runs; "
            "a card that stays this slow needs its vendor's diagnostics.",
            ("nvidia-smi -q -d CLOCK" if found and found.vendor == "nvidia" else
             "amd-smi metric --clock",)), figures=figures)
