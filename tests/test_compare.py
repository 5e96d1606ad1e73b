"""`rocmdoctor compare`: golden tables (fixed width, colour off) and its errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from rocmdoctor.tuners.bench.compare import (
    CompareError,
    comparison,
    load_result,
    render_compare_markdown,
    render_compare_text,
)

GIB = 2**30


def result(*, precision: str = "bf16", channels_last: bool = True, compile_: bool = False,
           median: float = 4724.1, p10: float = 4700.0, p90: float = 4750.0,
           p50: float = 0.0271, p99: float = 0.0279, cv: float = 0.0029, first: float = 0.70,
           alloc: Optional[float] = 12.5 * GIB, avg_w: Optional[float] = 632.0,
           j: Optional[float] = 0.1338, vs_spec: Optional[float] = 0.116,
           vs_gemm: Optional[float] = 0.149, env: Optional[dict[str, str]] = None,
           settings: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The fields compare reads, shaped as the worker writes them (schema bench/1)."""
    return {
        "schema": "rocmdoctor.bench/1",
        "spec": {"model": "resnet50", "batch_size": 256, "precision": precision,
                 "channels_last": channels_last, "compile": compile_, "steps": 50, "warmup": 10,
                 "device": "cuda", "image_size": 224, "seq_len": 512,
                 "settings": settings or {}},
        "environment": {"name": "NVIDIA H200", "torch": "2.11.0+cu130",
                        "knobs": {"env": env or {}}},
        "warmup": {"steps": 10, "first_step_s": first},
        "metrics": {"unit": "images",
                    "throughput": {"median": median, "p10": p10, "p90": p90},
                    "step_time_s": {"p50": p50, "p99": p99, "cv": cv},
                    "memory": {"peak_allocated_bytes": alloc},
                    "power": {"avg_w": avg_w, "energy_per_sample_j": j},
                    "mfu": {"vs_spec": vs_spec, "vs_measured_gemm": vs_gemm}},
    }


RUNS = [
    ("eager-bf16-cl", result()),
    ("compile-bf16-cl", result(compile_=True, median=6679.0, p10=6500.0, p90=6720.5,
                               p50=0.0383, p99=0.0401, cv=0.015, first=50.7, alloc=10.1 * GIB,
                               avg_w=669.0, j=0.1002, vs_spec=0.164, vs_gemm=0.211,
                               env={"TORCHINDUCTOR_CACHE_DIR": "/tmp/ind"},
                               settings={"compile_mode": "default"})),
    ("fp32-nchw", result(precision="fp32", channels_last=False, median=914.0, p10=910.0,
                         p90=916.2, p50=0.28, p99=0.281, cv=0.0008, first=1.5, alloc=None,
                         avg_w=None, j=None, vs_spec=0.332, vs_gemm=None)),
]

GOLDEN_TEXT = """\
metric               eager-bf16-cl                       compile-bf16-cl        fp32-nchw
model              resnet50 bs 256                       resnet50 bs 256  resnet50 bs 256
config                     bf16 CL  bf16 CL compile compile_mode=default             fp32
env vs first                     -      TORCHINDUCTOR_CACHE_DIR=/tmp/ind                -
device                 NVIDIA H200                           NVIDIA H200      NVIDIA H200
throughput        4,724.1 images/s                      6,679.0 images/s   914.0 images/s
vs first                      base                               +41.4 %          -80.7 %
p10 - p90        4,700.0 - 4,750.0                     6,500.0 - 6,720.5    910.0 - 916.2
step p50                  27.10 ms                              38.30 ms        280.00 ms
step p99                  27.90 ms                              40.10 ms        281.00 ms
step CV                     0.29 %                                1.50 %           0.08 %
first step                  0.70 s                               50.70 s           1.50 s
peak memory              12.50 GiB                             10.10 GiB                -
avg power                    632 W                                 669 W                -
energy/sample             0.1338 J                              0.1002 J                -
energy vs first               base                               -25.1 %                -
MFU (spec)                  11.6 %                                16.4 %           33.2 %
MFU (GEMM)                  14.9 %                                21.1 %                -
"""

GOLDEN_MARKDOWN = """\
| metric | eager-bf16-cl | fp32-nchw |
| --- | ---: | ---: |
| model | resnet50 bs 256 | resnet50 bs 256 |
| config | bf16 CL | fp32 |
| env vs first | - | - |
| device | NVIDIA H200 | NVIDIA H200 |
| throughput | 4,724.1 images/s | 914.0 images/s |
| vs first | base | -80.7 % |
| p10 - p90 | 4,700.0 - 4,750.0 | 910.0 - 916.2 |
| step p50 | 27.10 ms | 280.00 ms |
| step p99 | 27.90 ms | 281.00 ms |
| step CV | 0.29 % | 0.08 % |
| first step | 0.70 s | 1.50 s |
| peak memory | 12.50 GiB | - |
| avg power | 632 W | - |
| energy/sample | 0.1338 J | - |
| energy vs first | base | - |
| MFU (spec) | 11.6 % | 33.2 % |
| MFU (GEMM) | 14.9 % | - |

- published: resnet50 on NVIDIA H200: 4,868.3 images/s (milabench resnet50-noio: \
torchvision, AMP fp16, channels_last, synthetic, bs 256) \
https://github.com/mila-iqia/milabench/blob/1c556cb96f4ab63338f3de8e7f822632559af333/\
config/scaling/H200.yaml
"""


def test_golden_terminal_table() -> None:
    assert render_compare_text(RUNS, width=100, color=False) == GOLDEN_TEXT


def test_golden_markdown_with_anchor() -> None:
    runs = [RUNS[0], RUNS[2]]
    assert render_compare_markdown(runs, anchors=True) == GOLDEN_MARKDOWN


def test_narrow_terminal_folds_instead_of_cutting() -> None:
    text = render_compare_text(RUNS, width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "6,679.0" in text and "TORCHINDUCTOR" in text and "_CACHE_DIR" in text


def test_load_result_errors(tmp_path: Path) -> None:
    bad = tmp_path / "check.json"
    bad.write_text(json.dumps({"schema": "rocmdoctor.check/1"}))
    with pytest.raises(CompareError, match=r"check.json is not a rocmdoctor bench result "
                                           r"\(schema 'rocmdoctor.check/1', expected "
                                           r"'rocmdoctor.bench/1'\)"):
        load_result(str(bad))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(CompareError, match="broken.json is not JSON"):
        load_result(str(broken))
    with pytest.raises(CompareError, match="cannot read .*missing.json: No such file"):
        load_result(str(tmp_path / "missing.json"))
    line = tmp_path / "line.json"  # a raw protocol line from the worker is accepted too
    line.write_text(json.dumps({"event": "result", "result": RUNS[0][1]}))
    assert load_result(str(line)) == RUNS[0][1]


def test_a_difference_inside_the_step_noise_is_warned_about() -> None:
    """+0.8 % with a step-time CV of 1.5 % in one of the runs: one run each cannot tell it
    from chance. The -80.7 % of fp32 and the +41.4 % of compile are far outside it."""
    close = ("eager-again", result(median=4762.0, cv=0.015))
    warning = ("warning: eager-again vs eager-bf16-cl: +0.8 % is inside the step-to-step "
               "noise (step time CV 1.5 %); one run each cannot tell it from chance: repeat "
               "both, or let `rocmdoctor tune` re-measure them interleaved")
    text = render_compare_text([RUNS[0], close, RUNS[1], RUNS[2]], width=100)
    assert text.splitlines()[-1] == warning  # one line, never wrapped
    assert sum("inside the step-to-step noise" in line for line in text.splitlines()) == 1
    markdown = render_compare_markdown([RUNS[0], close])
    assert markdown.endswith(f"\n\n- {warning}\n")
    assert "warning" not in render_compare_text(RUNS, width=100)


def test_a_run_that_read_images_is_compared_by_its_mean_and_says_so() -> None:
    synthetic = result()
    data = result(median=7344.3)
    data["metrics"]["throughput"].update(mean=1620.7, basis="mean")
    data["data"] = {"loader": {"num_workers": 16}, "split": {"input_share": 0.80,
                                                             "verdict": "input-bound"}}
    rows = {row[0]: row[1:] for row in comparison([("tensors", synthetic), ("jpeg", data)])}
    assert rows["throughput"] == ["4,724.1 images/s", "1,620.7 images/s (mean)"]
    assert rows["vs first"] == ["base", "-65.7 %"]
    assert rows["input verdict"] == ["-", "input-bound"]
