"""The measured checks' figures where they are drawn: `check --json` (an added `figures` list:
value, unit, spread, reference and its source), the report's Markdown table, and `fleet
summarize` naming the nodes whose figures are well below the median node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rocmdoctor.fleet import parse_report, summarize
from rocmdoctor.model import ReportFacts
from rocmdoctor.redact import Redactor
from rocmdoctor.render.check_json import render_json
from rocmdoctor.render.fleet import fleet_to_dict
from rocmdoctor.render.fleet import render_markdown as fleet_markdown
from rocmdoctor.render.fleet import render_text as fleet_text
from rocmdoctor.render.report import render_markdown
from tests.deep_runs import deep_report, gemm, h200_host, recorded, scale, variant

FACTS = ReportFacts(header=(("rocmdoctor", "0.1.0"),), gpus=("NVIDIA H200",), collect_env=(),
                    sections=(), env=(), packages=())


def _json(run: dict[str, Any], node: str) -> dict[str, Any]:
    data = json.loads(render_json(deep_report(h200_host(run)), {"node": node}))
    assert isinstance(data, dict)
    return data


def test_check_json_carries_every_figure_with_its_unit_reference_and_source() -> None:
    data = _json(recorded("h200-quick.json"), "gpu01")
    figures = {c["id"]: c.get("figures", []) for c in data["checks"]}
    assert "figures" not in next(c for c in data["checks"] if c["id"] == "deep")
    assert [f["key"] for f in figures["gemm-rate"]] == [
        "gemm:bf16", "gemm:fp16", "gemm:fp8", "gemm:tf32", "gemm:fp32"]
    assert [f["key"] for f in figures["memory-bandwidth"]] == ["memory:copy", "memory:triad"]
    copy = figures["memory-bandwidth"][0]
    assert copy == {
        "key": "memory:copy", "name": "device-to-device copy of 1 GiB buffers", "gpu": 0,
        "value": 4307.6069, "unit": "GB/s", "spread_pct": 0.6, "runs": 10,
        "reference": {"value": 3803.7736, "unit": "GB/s",
                      "what": "79 % of 4,800 GB/s, the datasheet bandwidth (the share of it an "
                              "MI300X reaches)",
                      "source": "https://github.com/ROCm/legacy-rocm-build/issues/5070"},
        "ratio": 1.1325, "verdict": "pass", "spec": None}
    assert copy["value"] / copy["reference"]["value"] == pytest.approx(
        copy["ratio"], abs=1e-4)
    launch = figures["kernel-launch"][0]
    assert (launch["value"], launch["unit"], launch["verdict"]) == (4.1, "us", "pass")
    assert all(f["unit"] and f["value"] for fs in figures.values() for f in fs)


def test_the_report_shows_the_measured_figures() -> None:
    text = render_markdown(deep_report(h200_host(recorded("h200-quick.json"))), FACTS,
                           Redactor((), (), ()))
    start = text.index("### Measured (check --deep)")
    table = text[start:].split("\n\n")[1].splitlines()
    assert table[:3] == [
        "| GPU | check | figure | value | spread | reference | share | verdict |",
        "|---|---|---|---|---|---|---|---|",
        "| 0 | gemm-rate | bf16 GEMM 8192x8192x8192 (cuBLAS) | 781.9 TFLOP/s | 1.4 % | "
        "[794.5 TFLOP/s](https://github.com/stas00/ml-engineering/blob/"
        "b9e29720eebd4aa946fa9678975385efbc90a777/compute/accelerator/README.md"
        "#maximum-achievable-matmul-flops-comparison-table) | 98 % | pass |",
    ]
    assert ("| 0 | gemm-rate | fp16 GEMM 8192x8192x8192 (cuBLAS) | 779.3 TFLOP/s | 0.9 % | "
            "no reference for this card |  | no verdict |") in table
    assert len(table) == 2 + 5 + 3 + 2 + 2 + 1 + 1  # gemm, conv, memory, host, clock, launch


def _fleet() -> Any:
    slow = variant(recorded("h200-quick.json"))
    scale(gemm(slow, "bf16")["tflops"], 0.8)
    reports = [parse_report(_json(recorded("h200-quick.json"), name), f"r/{name}.json")
               for name in ("gpu01", "gpu02")]
    reports.append(parse_report(_json(slow, "gpu03"), "r/gpu03.json"))
    return summarize(reports)


def test_fleet_summarize_names_the_slow_node() -> None:
    fleet = _fleet()
    bf16 = next(m for m in fleet.measured if m.key == "gemm:bf16")
    assert bf16.values == (("gpu01", 781.9281), ("gpu02", 781.9281), ("gpu03", 625.5425))
    assert bf16.median == 781.9281
    assert [(n, round(s, 3)) for n, s in bf16.slow] == [("gpu03", 0.8)]
    assert all(not m.slow for m in fleet.measured if m.key != "gemm:bf16")
    text = fleet_text(fleet)
    assert ("  gemm-rate bf16 GEMM 8192x8192x8192 (cuBLAS): median 781.9 TFLOP/s over 3 nodes; "
            "slow: gpu03 625.5 TFLOP/s (80 %)") in text.splitlines()
    assert ("- **gemm-rate** bf16 GEMM 8192x8192x8192 (cuBLAS): median 781.9 TFLOP/s over 3 "
            "nodes; slow: gpu03 625.5 TFLOP/s (80 %)") in fleet_markdown(fleet).splitlines()
    measured = fleet_to_dict(fleet)["measured"]
    assert measured[0] == {"check": "gemm-rate", "key": "gemm:bf16",
                           "name": "bf16 GEMM 8192x8192x8192 (cuBLAS)", "unit": "TFLOP/s",
                           "median": 781.9281,
                           "nodes": {"gpu01": 781.9281, "gpu02": 781.9281, "gpu03": 625.5425},
                           "slow": [{"node": "gpu03", "share": 0.8}]}


def test_a_fleet_without_measured_figures_renders_as_before() -> None:
    data = json.loads(render_json(deep_report(h200_host(recorded("h200-quick.json"))),
                                  {"node": "a"}))
    for c in data["checks"]:
        c.pop("figures", None)
    fleet = summarize([parse_report(data, "a.json")])
    assert fleet.measured == ()
    assert "measured" not in fleet_to_dict(fleet)
    assert "Measured" not in fleet_text(fleet)
