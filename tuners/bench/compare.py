"""`rocmdoctor compare A.json B.json ...`: bench results side by side, one column per run,
with differences against the first. Terminal (rich, fixed width) and Markdown renderings are
pure functions of the loaded results.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rocmdoctor import schemas
from rocmdoctor.tuners.bench.metrics import headline
from rocmdoctor.tuners.bench.render import get, gib, joules, num, pct, strip_lines

SCHEMA = schemas.BENCH


class CompareError(Exception):
    """A file that cannot be compared: unreadable, not JSON, or not a bench result."""


@dataclass(frozen=True)
class Anchor:
    """A published throughput for the same model on a named GPU."""

    model: str
    device_pattern: str
    value: float
    unit: str
    recipe: str
    source: str


ANCHORS: tuple[Anchor, ...] = (
    Anchor("resnet50", r"\bH200\b", 4868.3, "images/s",
           "milabench resnet50-noio: torchvision, AMP fp16, channels_last, synthetic, bs 256",
           "https://github.com/mila-iqia/milabench/blob/1c556cb96f4ab63338f3de8e7f822632559af333/config/scaling/H200.yaml"),
    Anchor("resnet50", r"\bMI325X?\b", 2416.1, "images/s",
           "milabench resnet50-noio: torchvision, AMP fp16, channels_last, synthetic, bs 256",
           "https://github.com/mila-iqia/milabench/blob/086c1c9c9cf8904603cec5e1a46707c1148ca6c4/config/scaling/MI325.yaml"),
)


def load_result(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise CompareError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CompareError(f"{path} is not JSON: {exc}") from None
    if isinstance(data, dict) and data.get("event") == "result":  # a raw protocol line
        data = data.get("result")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise CompareError(f"{path} is not a rocmdoctor bench result (schema {found!r}, "
                           f"expected {SCHEMA!r})")
    return data


def label_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _delta(value: Optional[float], base: Optional[float], is_base: bool = False) -> str:
    if value is None or base is None or base == 0:
        return "-"
    if is_base:
        return "base"
    return f"{(value - base) / base * 100:+.1f} %"


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 1000:,.2f} ms"


def _config(r: Mapping[str, Any]) -> str:
    spec = r.get("spec") or {}
    bits = [str(spec.get("precision", "?"))]
    if spec.get("channels_last"):
        bits.append("CL")
    if spec.get("compile"):
        bits.append("compile")
    bits.extend(f"{k}={v}" for k, v in sorted((spec.get("settings") or {}).items()))
    return " ".join(bits)


def _env_diff(r: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    mine = get(r, "environment", "knobs", "env") or {}
    theirs = get(base, "environment", "knobs", "env") or {}
    changed = [f"{k}={v}" for k, v in sorted(mine.items()) if theirs.get(k) != v]
    changed += [f"-{k}" for k in sorted(theirs) if k not in mine]
    return " ".join(changed) or "-"


Row = tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str]]
ROWS: tuple[Row, ...] = (
    ("model", lambda r, b: f"{get(r, 'spec', 'model')} bs {get(r, 'spec', 'batch_size')}"),
    ("config", lambda r, b: _config(r)),
    ("env vs first", lambda r, b: _env_diff(r, b) if r is not b else "-"),
    ("device", lambda r, b: str(get(r, "environment", "name") or "-")),
    ("throughput", lambda r, b: f"{num(_rate(r))} {get(r, 'metrics', 'unit') or 'samples'}/s"
                                f"{_basis(r)}"),
    ("vs first", lambda r, b: _delta(_rate(r), _rate(b), r is b)),
    ("p10 - p90", lambda r, b: f"{num(get(r, 'metrics', 'throughput', 'p10'))} - "
                               f"{num(get(r, 'metrics', 'throughput', 'p90'))}"),
    ("step p50", lambda r, b: _ms(get(r, "metrics", "step_time_s", "p50"))),
    ("step p99", lambda r, b: _ms(get(r, "metrics", "step_time_s", "p99"))),
    ("step CV", lambda r, b: pct(get(r, "metrics", "step_time_s", "cv"), 2)),
    ("first step", lambda r, b: f"{num(get(r, 'warmup', 'first_step_s'), 2)} s"),
    ("peak memory", lambda r, b: gib(get(r, "metrics", "memory", "peak_allocated_bytes"))),
    ("avg power", lambda r, b: _watts(get(r, "metrics", "power", "avg_w"))),
    ("energy/sample", lambda r, b: joules(get(r, "metrics", "power", "energy_per_sample_j"),
                                             digits=4)),
    ("energy vs first", lambda r, b: _delta(get(r, "metrics", "power", "energy_per_sample_j"),
                                            get(b, "metrics", "power", "energy_per_sample_j"),
                                            r is b)),
    ("MFU (spec)", lambda r, b: pct(get(r, "metrics", "mfu", "vs_spec"))),
    ("MFU (GEMM)", lambda r, b: pct(get(r, "metrics", "mfu", "vs_measured_gemm"))),
)


# With --data: where each run's time went (rows shown when any result read images).
DATA_ROWS: tuple[Row, ...] = (
    ("loader", lambda r, b: _loader(get(r, "data", "loader"))),
    ("input wait", lambda r, b: pct(get(r, "data", "split", "input_share"))),
    ("input verdict", lambda r, b: str(get(r, "data", "split", "verdict") or "-")),
)


def _rate(r: Mapping[str, Any]) -> Optional[float]:
    return headline(get(r, "metrics", "throughput"))


def _basis(r: Mapping[str, Any]) -> str:
    """A run judged by its mean (it read real data) says so beside the figure."""
    return " (mean)" if get(r, "metrics", "throughput", "basis") == "mean" else ""


def _loader(args: Any) -> str:
    if not isinstance(args, Mapping):
        return "-"
    return " ".join(f"{k}={v}" for k, v in args.items()) or "-"


def _watts(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:,.0f} W"


def comparison(results: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    """Header row, then one row per metric; column 0 names the metric."""
    if not results:
        return [["metric"]]
    base = results[0][1]
    table = [["metric", *(label for label, _ in results)]]
    rows = ROWS + (DATA_ROWS if any(r.get("data") for _, r in results) else ())
    for name, cell in rows:
        table.append([name, *(cell(r, base) for _, r in results)])
    return table


def noise_lines(results: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """A warning for each run whose throughput differs from the first's by less than the
    step-to-step noise of either (the step time's coefficient of variation): one pair of
    runs cannot tell such a difference from chance."""
    if len(results) < 2:
        return []
    base_label, base = results[0]
    base_rate = _rate(base)
    base_cv = get(base, "metrics", "step_time_s", "cv")
    lines = []
    for label, r in results[1:]:
        rate, cv = _rate(r), get(r, "metrics", "step_time_s", "cv")
        if rate is None or not base_rate or not isinstance(cv, (int, float)) \
                or not isinstance(base_cv, (int, float)):
            continue
        diff, noise = (rate - base_rate) / base_rate, max(cv, base_cv)
        if abs(diff) < noise:
            lines.append(f"warning: {label} vs {base_label}: {diff * 100:+.1f} % is inside the "
                         f"step-to-step noise (step time CV {noise * 100:.1f} %); one run each "
                         "cannot tell it from chance: repeat both, or let `rocmdoctor tune` "
                         "re-measure them interleaved")
    return lines


def anchor_lines(results: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Published figures for the models and GPUs being compared, with their sources."""
    lines: list[str] = []
    seen: set[Anchor] = set()
    for _, r in results:
        model, name = get(r, "spec", "model"), str(get(r, "environment", "name") or "")
        for anchor in ANCHORS:
            if anchor not in seen and anchor.model == model and re.search(
                    anchor.device_pattern, name, re.I):
                seen.add(anchor)
                lines.append(f"published: {model} on {name}: {anchor.value:,.1f} {anchor.unit} "
                             f"({anchor.recipe}) {anchor.source}")
    return lines


def render_compare_text(results: Sequence[tuple[str, Mapping[str, Any]]], width: int = 100,
                        color: bool = False, anchors: bool = False) -> str:
    from rich.console import Console
    from rich.table import Table

    rows = comparison(results)
    table = Table(show_header=True, header_style="bold" if color else None, box=None,
                  pad_edge=False)
    for i, head in enumerate(rows[0]):
        table.add_column(head, justify="left" if i == 0 else "right", overflow="fold")
    for row in rows[1:]:
        table.add_row(*row)
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False)
    console.print(table)
    for line in noise_lines(results):
        console.print(line, highlight=False, soft_wrap=True)
    if anchors:
        for line in anchor_lines(results):
            console.print(line, highlight=False, soft_wrap=True)
    return strip_lines(buf.getvalue())


def render_compare_markdown(results: Sequence[tuple[str, Mapping[str, Any]]],
                            anchors: bool = False) -> str:
    rows = comparison(results)

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    out = ["| " + " | ".join(cell(c) for c in rows[0]) + " |",
           "| --- |" + " ---: |" * (len(rows[0]) - 1)]
    out.extend("| " + " | ".join(cell(c) for c in row) + " |" for row in rows[1:])
    noise = noise_lines(results)
    if noise:
        out.append("")
        out.extend(f"- {line}" for line in noise)
    if anchors:
        out.append("")
        out.extend(f"- {line}" for line in anchor_lines(results))
    return "\n".join(out) + "\n"
