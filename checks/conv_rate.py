"""conv-rate (`check --deep`): a ResNet-50 3x3 convolution (layer3: 256 channels, 14x14,
batch 256), forward and backward, in bf16 and fp16 channels_last and fp32, against the matrix
product of the same size on the same card (implicit GEMM: M = N*H*W, N = C_out, K = C_in*9);
on ROCm with MIOpen's find settings shown.

No published convolution rate exists per card, so the reference is the card's own GEMM: a
convolution at under a quarter of its GEMM's rate means the library chose a poor kernel.
Known reports of slow convolutions on a GPU target are named (kb/deep_rules.py).

By hand: `python -c "import torch, time; ..."` timing F.conv2d forward + backward with
torch.cuda.Event around it, against torch.matmul of (N*H*W, C*9) x (C*9, C_out); on ROCm
`MIOPEN_LOG_LEVEL=5` shows the solver MIOpen picks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from rocmdoctor.facts.deep import DeepRun, deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, describe, graded, share
from rocmdoctor.facts.deep_results import GpuDeep
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_rules
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status

MIOPEN_VARS = ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_USER_DB_PATH",
               "MIOPEN_CUSTOM_CACHE_DIR", "MIOPEN_DISABLE_CACHE", "MIOPEN_DEBUG_DISABLE_FIND_DB")


class ConvRate(Check):
    id = "conv-rate"
    title = "Convolution rate against the card's own GEMM (--deep)"
    source = deep_rules.RX9070_CONV
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        slow: list[tuple[GpuDeep, Figure]] = []
        for gpu in run.gpus:
            for conv in gpu.conv:
                ref = Reference(conv.gemm_equivalent.median, "TFLOP/s",
                                f"the {conv.dtype} GEMM of the same size on this card "
                                f"({conv.shape.get('batch', 0) * conv.shape.get('size', 0) ** 2}"
                                f"x{conv.shape.get('out', 0)}x{conv.shape.get('channels', 0) * 9})",
                                deep_rules.RX9070_CONV) if conv.gemm_equivalent else None
                fig = graded(f"conv:{conv.dtype}", f"{conv.dtype} {conv.layout} convolution "
                             "fwd+bwd", conv.rate, gpu.index, ref)
                if fig.ratio is not None and gpu.vendor != "cpu":
                    fig = _verdict(fig)
                figures.append(fig)
                first = (f"; first call {conv.first_call_s:.2f} s (algorithm search included)"
                         if conv.first_call_s is not None else "")
                findings.append(Finding.info(describe(fig) + first))
                if fig.verdict == "warn":
                    slow.append((gpu, fig))
            if gpu.conv_library == "MIOpen":
                findings.append(Finding.info(self._miopen(run)))
        if not figures:
            return self.skipped("no convolution was measured")
        if slow:
            gpu, fig = slow[0]
            summary = (f"GPU {gpu.index} {gpu.name}: {fig.name.split(' convolution')[0]} "
                       f"convolution {amount(fig.value, fig.unit)}, {share(fig.ratio or 0)} of "
                       f"the same-sized GEMM on this card: a poor convolution kernel")
            return self.result(Status.WARN, summary, findings, self._causes(run, gpu, findings),
                               figures=figures)
        head = figures[0]
        if all(f.verdict is None for f in figures):
            return self.result(Status.SKIP, f"GPU {head.gpu}: {head.name.split(' conv')[0]} "
                               f"convolution {amount(head.value, head.unit)}; no verdict on the "
                               "CPU test device", findings, figures=figures)
        summary = (f"{len(run.gpus)} GPU(s): {head.name.split(' convolution')[0]} convolution "
                   f"{amount(head.value, head.unit)}" + (
                       f", {share(head.ratio)} of the same-sized GEMM" if head.ratio else ""))
        return self.result(Status.PASS, summary, findings, figures=figures)

    @staticmethod
    def _miopen(run: DeepRun) -> str:
        shown = [f"{k}={run.env[k]}" for k in MIOPEN_VARS if k in run.env]
        return ("MIOpen's find settings: " + (", ".join(shown) if shown else
                "none set (MIOpen's defaults apply)") + f" ({deep_rules.MIOPEN_FIND})")

    @staticmethod
    def _causes(run: DeepRun, gpu: GpuDeep, findings: list[Finding]) -> Fix:
        causes: list[tuple[str, Fix]] = []
        for k in deep_rules.known_slow(gpu.arch, "conv-rate"):
            causes.append((f"a known report on {gpu.arch}: {k.text} ({k.source})", Fix(
                f"Follow the report ({k.source}) for the MIOpen release that fixes it; until "
                "then, measure the model with another layout or dtype.")))
        for c in deep_rules.env_causes(run.env, "conv-rate"):
            causes.append((f"{c.name}={run.env.get(c.name)} is set: it {c.effect} ({c.source})",
                           Fix(f"Unset {c.name} where training runs.", (f"unset {c.name}",))))
        if gpu.conv_library == "MIOpen":
            mode = run.env.get("MIOPEN_FIND_MODE", "")
            if mode in ("3", "FAST", "fast"):
                causes.append(("MIOPEN_FIND_MODE=FAST uses the find database or a fallback, "
                               "not a search: an empty database gives the fallback kernel "
                               f"({deep_rules.MIOPEN_FIND})", Fix(
                                   "Let MIOpen search once and keep what it finds.",
                                   ("unset MIOPEN_FIND_MODE",))))
            causes.append(("MIOpen found no tuned kernel for this shape in its databases: "
                           "with MIOPEN_FIND_ENFORCE=3 it searches once and keeps the result in "
                           f"the user database ({deep_rules.MIOPEN_FIND})", Fix(
                               "Let MIOpen search the kernels for this shape and see whether "
                               "the rate recovers; give training's first run the same variable "
                               "(its user database keeps what it finds).",
                               ("MIOPEN_FIND_ENFORCE=3 rocmdoctor check --deep --only "
                                "conv-rate",))))
        else:
            causes.append(("cuDNN's heuristics chose a slow algorithm: "
                           "torch.backends.cudnn.benchmark = True lets it time them", Fix(
                               "Set torch.backends.cudnn.benchmark = True at the start of the "
                               "training script: cuDNN then times its algorithms once per "
                               "shape.")))
        for text, _ in causes:
            findings.append(Finding.hint(f"likely cause: {text}"))
        return causes[0][1]


def _verdict(fig: Figure) -> Figure:
    ok = (fig.ratio or 0) >= deep_rules.CONV_MIN_SHARE
    return replace(fig, verdict="pass" if ok else "warn")
