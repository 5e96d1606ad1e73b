"""`rocmdoctor check --json` (contracts/check-json-v1.md). A pure function of the Report."""

from __future__ import annotations

import json
from typing import Any

from rocmdoctor.model import CheckResult, Report

SCHEMA = "rocmdoctor.check/1"


def result_to_dict(r: CheckResult) -> dict[str, Any]:
    return {
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
    }


def report_to_dict(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "tool_version": report.tool_version,
        "platform": report.platform,
        "summary": report.summary(),
        "checks": [result_to_dict(r) for r in report.results],
    }


def render_json(report: Report) -> str:
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False) + "\n"
