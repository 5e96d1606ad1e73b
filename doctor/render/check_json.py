"""`rocmdoctor check --json` (contracts/check-json-v1.md). A pure function of the Report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from rocmdoctor import schemas
from rocmdoctor.model import CheckResult, Figure, Reference, Report

SCHEMA = schemas.CHECK


def _reference(ref: Optional[Reference]) -> Optional[dict[str, Any]]:
    return None if ref is None else {"value": round(ref.value, 4), "unit": ref.unit,
                                     "what": ref.what, "source": ref.source}


def figure_to_dict(f: Figure) -> dict[str, Any]:
    """A measured figure (`check --deep`): value, unit, spread, reference and its source."""
    return {"key": f.key, "name": f.name, "gpu": f.gpu, "value": f.value, "unit": f.unit,
            "spread_pct": f.spread_pct, "runs": f.runs, "reference": _reference(f.reference),
            "ratio": None if f.ratio is None else round(f.ratio, 4), "verdict": f.verdict,
            "spec": _reference(f.spec)}


def result_to_dict(r: CheckResult) -> dict[str, Any]:
    data = {
        "id": r.id,
        "title": r.title,
        "status": r.status.value,
        "summary": r.summary,
        "findings": [{"severity": f.severity.value, "text": f.text} for f in r.findings],
        "fix": None
        if r.fix is None
        else {
            "text": r.fix.text,
            "commands": list(r.fix.commands),
            "needs_root": r.fix.needs_root,
            "needs_relogin": r.fix.needs_relogin,
        },
        "source": r.source,
        "duration_ms": r.duration_ms,
        "depends": list(r.depends),
        "root_cause": r.root_cause,
    }
    if r.figures:  # an addition of check --deep; absent elsewhere
        data["figures"] = [figure_to_dict(f) for f in r.figures]
    return data


def report_to_dict(report: Report,
                   machine: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """The contract's dict; `machine` (render/machine.py's object) is added when given."""
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "tool_version": report.tool_version,
        "platform": report.platform,
        "summary": report.summary(),
        "checks": [result_to_dict(r) for r in report.results],
    }
    if machine is not None:
        data["machine"] = dict(machine)
    return data


def render_json(report: Report, machine: Optional[Mapping[str, Any]] = None) -> str:
    return json.dumps(report_to_dict(report, machine), indent=2, ensure_ascii=False) + "\n"
