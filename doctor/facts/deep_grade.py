"""A measured rate as a graded Figure: its value, unit, spread, reference and verdict, and the
words every measured check prints for it. Shared by the `check --deep` checks (a check never
imports another); the bands and references themselves live in kb/deep_rules.py and
kb/deep_refs.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from rocmdoctor.facts.deep_results import Rate
from rocmdoctor.kb import deep_rules
from rocmdoctor.model import Figure, Reference, Status

ORDER = {"pass": 0, "warn": 1, "fail": 2}


def number(value: float) -> str:
    """788.2, 4,310, 0.0123: three significant figures or more, thousands separated."""
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def amount(value: Optional[float], unit: str) -> str:
    return "not measured" if value is None else f"{number(value)} {unit}"


def share(ratio: float) -> str:
    return f"{ratio * 100:.0f} %"


def graded(key: str, name: str, rate: Optional[Rate], gpu: int,
           reference: Optional[Reference] = None, band: Optional[deep_rules.Band] = None,
           spec: Optional[Reference] = None, expected_share: float = 1.0) -> Figure:
    """The figure of `rate`, judged against reference.value x expected_share with `band`
    (no verdict without a reference or a band)."""
    value = rate.median if rate else None
    ratio = verdict = None
    if reference is not None and expected_share != 1.0:  # the reference is what is expected
        whole = amount(reference.value, reference.unit)
        reference = Reference(reference.value * expected_share, reference.unit,
                              f"{share(expected_share)} of {whole}, {reference.what}",
                              reference.source)
    if value is not None and reference is not None and reference.value > 0:
        ratio = value / reference.value
        if band is not None:
            verdict = deep_rules.grade(ratio, band)
    return Figure(key=key, name=name, value=value, unit=rate.unit if rate else "",
                  gpu=gpu, spread_pct=rate.spread_pct if rate else None,
                  runs=rate.runs if rate else 0, reference=reference, ratio=ratio,
                  verdict=verdict, spec=spec)


def describe(fig: Figure) -> str:
    """'GPU 0 bf16 GEMM 8192³: 788.2 TFLOP/s (median of 52 runs, spread 1.3 %); 99 % of
    794.5 TFLOP/s, the MAMF of ...; 80 % of the 989.4 TFLOP/s datasheet peak'."""
    if fig.value is None:
        return f"GPU {fig.gpu} {fig.name}: not measured"
    text = f"GPU {fig.gpu} {fig.name}: {amount(fig.value, fig.unit)}"
    if fig.runs:
        spread = f", spread {fig.spread_pct:.1f} %" if fig.spread_pct is not None else ""
        text += f" (median of {fig.runs} runs{spread})"
    if fig.reference is not None and fig.ratio is not None:
        text += (f"; {share(fig.ratio)} of {amount(fig.reference.value, fig.unit)}, "
                 f"{fig.reference.what}")
    elif fig.verdict is None and fig.spec is None:
        text += "; no reference for this card"
    if fig.spec is not None and fig.spec is not fig.reference and fig.value is not None:
        text += (f"; {share(fig.value / fig.spec.value)} of the "
                 f"{amount(fig.spec.value, fig.unit)} {fig.spec.what}")
    return text


def worst_of(verdicts: Iterable[Optional[str]]) -> Optional[str]:
    """The worst of these verdicts (pass < warn < fail); None when there is none."""
    known = [v for v in verdicts if v in ORDER]
    return max(known, key=lambda v: ORDER[v]) if known else None


def status_of(verdict: Optional[str]) -> Status:
    return {"warn": Status.WARN, "fail": Status.FAIL}.get(verdict or "", Status.PASS)
