"""gemm-rate (`check --deep`): large matrix products in fp32 (TF32 off), tf32, bf16, fp16 and
fp8 where the device has them, against the card's class reference (a published measurement
with its command, or the vendor's pass mark) and its datasheet peak; bf16 again through the
other BLAS library torch can choose (cuBLASLt / hipBLASLt).

Timed with device events after warm-up, median of repeated runs of random data (deep_child).
A reference measured at a shape (MAMF's best, RVS's test shape) is compared with the product at
that same shape on this card; the 8192^3 one (a sustained load) is shown beside it.
A tf32 product no faster than the fp32 one did not use TF32; the other library much faster
than torch's choice is worth choosing.

By hand: `python mamf-finder.py --m_range 8192 8192 1 --n 8192 --k 8192` (stas00/ml-engineering
compute/accelerator/benchmarks), or `rvs -c .../gst_single.conf` on an Instinct GPU.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from rocmdoctor.facts.cpu import numa_balancing
from rocmdoctor.facts.deep import DeepRun, deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, describe, graded, share, status_of, worst_of
from rocmdoctor.facts.deep_results import GpuDeep
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_refs, deep_rules
from rocmdoctor.kb.peaks import peak_for
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status

ORDER = ("bf16", "fp16", "fp8", "tf32", "fp32")


def _reference(gpu: GpuDeep, dtype: str) -> tuple[Optional[Reference], deep_rules.Band]:
    ref = deep_refs.class_reference(gpu.name, f"gemm:{dtype}")
    if ref is None:
        return None, deep_rules.MEASURED
    what = f"{ref.what} ({ref.command})" + (f"; {ref.note}" if ref.note else "")
    band = deep_rules.VENDOR_TARGET if ref.basis == "vendor target" else deep_rules.MEASURED
    return Reference(ref.value, ref.unit, what, ref.source), band


def _spec(gpu: GpuDeep, dtype: str) -> Optional[Reference]:
    peak = peak_for(gpu.name, dtype)
    if peak.tflops is None or peak.peak is None or peak.dtype != dtype:
        return None
    return Reference(peak.tflops, "TFLOP/s", f"{dtype} datasheet peak ({peak.peak.name}, dense)",
                     peak.peak.source)


class GemmRate(Check):
    id = "gemm-rate"
    title = "GEMM rate against the card's class (--deep)"
    source = deep_refs.MAMF
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        problems: list[tuple[str, str, Optional[Fix]]] = []  # (verdict, text, fix)
        for gpu in run.gpus:
            self._gpu(host, run, gpu, figures, findings, problems)
        if not figures:
            return self.skipped("no GEMM was measured")
        verdict = worst_of([f.verdict for f in figures] + [v for v, _, _ in problems])
        if verdict in ("warn", "fail"):
            first = next((p for p in problems if p[0] == verdict), None)
            low = next(f for f in figures if f.verdict == verdict) if first is None else None
            text = first[1] if first else self._low(low, run)
            fix = first[2] if first else self._causes(host, run, low, findings)
            source = deep_rules.NVIDIA_TF32_OVERRIDE if first and "TF32" in text else (
                low.reference.source if low is not None and low.reference else None)
            return self.result(status_of(verdict), text, findings, fix, source=source,
                               figures=figures)
        head = [f for f in figures if f.key == "gemm:bf16"] or figures
        if all(f.verdict is None for f in figures):
            best = head[0]
            spec = (f" ({share(best.value / best.spec.value)} of the "
                    f"{amount(best.spec.value, 'TFLOP/s')} datasheet peak)"
                    if best.spec and best.value else "")
            return self.result(Status.SKIP, f"GPU {best.gpu} {self._name(run, best)}: "
                               f"{best.name.split()[0]} {amount(best.value, best.unit)}{spec}; "
                               "no reference for this card: no verdict", findings,
                               figures=figures)
        judged = [f for f in head if f.verdict] or [f for f in figures if f.verdict]
        ratios = [f.ratio for f in judged if f.ratio is not None]
        top = judged[0]
        ref_value = top.reference.value if top.reference else None
        if len(run.gpus) == 1:
            summary = (f"GPU {top.gpu} {self._name(run, top)}: {top.name.split()[0]} "
                       f"{amount(top.value, top.unit)}, {share(top.ratio or 0)} of "
                       f"{amount(ref_value, top.unit)}")
        else:
            summary = (f"{len(run.gpus)} GPUs: {top.name.split()[0]} "
                       f"{share(min(ratios))} to {share(max(ratios))} of "
                       f"{amount(ref_value, top.unit)}")
        return self.result(Status.PASS, summary, findings, figures=figures)

    @staticmethod
    def _name(run: DeepRun, fig: Figure) -> str:
        gpu = run.gpu(fig.gpu or 0)
        return gpu.name if gpu else "GPU"

    def _gpu(self, host: Host, run: DeepRun, gpu: GpuDeep, figures: list[Figure],
             findings: list[Finding], problems: list[tuple[str, str, Optional[Fix]]]) -> None:
        ours = sorted((g for g in gpu.gemm if g.library is None and not g.reference_shape),
                      key=lambda g: ORDER.index(g.dtype) if g.dtype in ORDER else 9)
        for g in ours:
            ref, band = _reference(gpu, g.dtype)
            how = ", ".join(w for w in ("TF32 off" if g.dtype == "fp32" else "",
                                        g.library_name or "") if w)
            spec = _spec(gpu, g.dtype)
            row = deep_refs.class_reference(gpu.name, f"gemm:{g.dtype}")
            at = gpu.gemm_at(g.dtype, row.shape) if row and row.shape else None
            if at is not None and at.rate is not None:
                # Graded at the shape the reference was measured at; the n x n x n product
                # (a sustained load that meets the power cap sooner) is shown beside it.
                fig = graded(f"gemm:{g.dtype}", f"{g.dtype} GEMM {at.shape_text} (the "
                             f"reference's shape" + (f", {how})" if how else ")"), at.rate,
                             gpu.index, ref, band, spec)
                square = graded(f"gemm:{g.dtype}:{g.size}", f"{g.dtype} GEMM "
                                f"{g.shape_text}" + (f" ({how})" if how else ""), g.rate,
                                gpu.index, None, None, spec)
                figures.extend([fig, square])
                findings.extend([Finding.info(describe(fig)), Finding.info(describe(square))])
                continue
            fig = graded(f"gemm:{g.dtype}", f"{g.dtype} GEMM {g.size}x{g.size}x{g.size}"
                         + (f" ({how})" if how else ""), g.rate, gpu.index, ref, band, spec)
            figures.append(fig)
            findings.append(Finding.info(describe(fig)))
            if at is not None and at.left_out:
                findings.append(Finding.info(
                    f"GPU {gpu.index} {g.dtype} GEMM at the reference's shape {at.shape_text}: "
                    f"not measured ({at.left_out}), graded at {g.shape_text} instead"))
        self._tf32(run, gpu, figures, problems)
        base = gpu.gemm_of("bf16")
        for alt in (g for g in gpu.gemm if g.library is not None and g.rate):
            if base is None or base.rate is None or alt.rate is None:
                continue
            gain = alt.rate.median / base.rate.median
            findings.append(Finding.info(
                f"GPU {gpu.index} bf16 GEMM via {alt.library_name or alt.library}: "
                f"{amount(alt.rate.median, 'TFLOP/s')}, {gain:.2f}x torch's choice "
                f"({base.library_name or 'its default'})"))
            if gain >= deep_rules.BLAS_GAIN:
                env = deep_rules.blas_env(run.backend == "rocm")
                findings.append(Finding.hint(
                    f"GPU {gpu.index}: {alt.library_name} is {gain:.2f}x faster than torch's "
                    f"default here: set {env} (or torch.backends.cuda.preferred_blas_library"
                    f"('{alt.library}')) for training ({deep_rules.TORCH_BLAS_LIBRARY})"))

    def _tf32(self, run: DeepRun, gpu: GpuDeep, figures: list[Figure],
              problems: list[tuple[str, str, Optional[Fix]]]) -> None:
        tf32, fp32 = gpu.gemm_of("tf32"), gpu.gemm_of("fp32")
        spec = peak_for(gpu.name, "tf32")
        if not (tf32 and fp32 and tf32.rate and fp32.rate) or spec.dtype != "tf32":
            return
        gain = tf32.rate.median / fp32.rate.median
        if gain >= deep_rules.TF32_MIN_GAIN:
            return
        causes = deep_rules.env_causes(run.env, "gemm-rate")
        override = [c for c in causes if c.name == "NVIDIA_TF32_OVERRIDE"]
        why = (f"{override[0].name}={override[0].value} is set: it {override[0].effect}"
               if override else "something in the environment keeps cuBLAS from TF32")
        text = (f"GPU {gpu.index} {gpu.name}: tf32 GEMM {amount(tf32.rate.median, 'TFLOP/s')}, "
                f"{gain:.2f}x the fp32 rate: TF32 is not used ({why})")
        fix = Fix("Let the libraries use TF32 again: unset the variable where training runs.",
                  ("unset NVIDIA_TF32_OVERRIDE",)) if override else Fix(
            "Check what sets the math mode: torch.backends.cuda.matmul.allow_tf32 and "
            "torch.set_float32_matmul_precision('high') ask for TF32 (PyTorch's CUDA notes).",
            ("env | grep -i -E 'TF32|CUBLAS'",))
        problems.append(("warn", text, fix))
        for i, fig in enumerate(figures):
            if fig.key == "gemm:tf32" and fig.gpu == gpu.index:
                figures[i] = replace(fig, verdict="warn")

    def _low(self, fig: Optional[Figure], run: DeepRun) -> str:
        assert fig is not None and fig.reference is not None
        return (f"GPU {fig.gpu} {self._name(run, fig)}: {fig.name.split()[0]} "
                f"{amount(fig.value, fig.unit)}, {share(fig.ratio or 0)} of "
                f"{amount(fig.reference.value, fig.unit)} ({fig.reference.what.split(' (')[0]})")

    def _causes(self, host: Host, run: DeepRun, fig: Optional[Figure],
                findings: list[Finding]) -> Fix:
        """The likely causes of a low rate, most likely first, as hints; the first one's fix."""
        gpu = run.gpu(fig.gpu or 0) if fig else None
        causes: list[tuple[str, Fix]] = []
        for c in deep_rules.env_causes(run.env, "gemm-rate"):
            causes.append((f"{c.name}={run.env.get(c.name)} is set: it {c.effect} ({c.source})",
                           Fix(f"Unset {c.name} where training runs.", (f"unset {c.name}",))))
        if gpu is not None:
            load, t = gpu.telemetry.under_load, gpu.telemetry
            lowered = bool(t.power_limit_w and t.default_power_limit_w
                           and t.power_limit_w < 0.95 * t.default_power_limit_w)
            # the power cap at the default limit is the card working as designed under a GEMM
            counted = deep_rules.HW_REASONS + deep_rules.THERMAL_REASONS + (
                deep_rules.POWER_REASONS if lowered else ())
            hot = [r for r, s in (load.reasons or {}).items() if s >= deep_rules.REASON_SHARE
                   and r in counted]
            if hot:
                causes.append((f"the card was held down by {', '.join(hot)} while the GEMMs ran "
                               "(clocks-under-load)", Fix(
                                   "See clocks-under-load for why the clocks were lowered.",
                                   ("rocmdoctor check --deep --only clocks-under-load -v",))))
            level = gpu.telemetry.perf_level
            if level and level != "auto":
                causes.append((f"the performance level is {level}, not auto (perf-level)", Fix(
                    "Let the driver choose the clocks again.",
                    ("echo auto | sudo tee /sys/class/drm/card*/device/"
                     "power_dpm_force_performance_level",), needs_root=True)))
            if "MI300" in gpu.name and numa_balancing(host):
                causes.append(("kernel.numa_balancing is 1: AMD's MI300X guide says to turn "
                               f"it off ({deep_rules.AMD_NUMA_BALANCING})", Fix(
                                   "Turn off NUMA auto-balancing.",
                                   ("sudo sysctl -w kernel.numa_balancing=0",),
                                   needs_root=True)))
        for text, _ in causes:
            findings.append(Finding.hint(f"likely cause: {text}"))
        if causes:
            return causes[0][1]
        findings.append(Finding.hint("no known cause found on this machine: measure again with "
                                     "nothing else on the GPU, then compare with mamf-finder.py"))
        return Fix("Measure again with nothing else running on the GPU; a rate that stays low "
                   "with the clocks at their boost is worth a report to the vendor.",
                   ("rocmdoctor check --deep --only gemm-rate -v",))
