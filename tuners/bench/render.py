"""Render one bench result (schema rocmdoctor.bench/1) as a terminal table. Pure functions."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any, Optional

GIB = 1024 ** 3


def num(value: Optional[float], digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def unit_name(unit: Optional[str]) -> str:
    """One of what throughput counts: "image" for images, "token" for tokens."""
    unit = unit or "samples"
    return unit[:-1] if unit.endswith("s") else unit


def joules(value: Optional[float], per: Optional[str] = None, digits: int = 3) -> str:
    """Energy to `digits` significant digits with trailing zeros kept (0.00200 J), whole
    joules from 100 on; `per` a unit ("0.0871 J/image"); "-" where none was measured."""
    if value is None:
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:#.{digits}g}"
    return f"{text} J/{per}" if per else f"{text} J"


def pct(value: Optional[float], digits: int = 1) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f} %"


def flop(value: Optional[float]) -> str:
    """FLOPs with an SI prefix and 3 significant digits: 24.3 GFLOP, 5.12 MFLOP."""
    if value is None:
        return "-"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}FLOP"
    return f"{value:.3g} FLOP"


def gib(value: Optional[float]) -> str:
    return "-" if value is None else f"{value / GIB:.2f} GiB"


def get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def config_line(result: Mapping[str, Any]) -> str:
    spec = result.get("spec") or {}
    env = result.get("environment") or {}
    parts = [str(spec.get("model", "?")), f"batch {spec.get('batch_size', '?')}",
             str(spec.get("precision", "?"))]
    if spec.get("channels_last"):
        parts.append("channels_last")
    if spec.get("compile"):
        parts.append("compile")
    for key, value in sorted((spec.get("settings") or {}).items()):
        parts.append(f"{key}={value}")
    where = f"{env.get('name') or env.get('device', '?')} (torch {env.get('torch', '?')})"
    return f"{', '.join(parts)} on {where}"


def _timing_rows(m: Mapping[str, Any], w: Mapping[str, Any], unit: str
                 ) -> list[tuple[str, str]]:
    t = m.get("throughput") or {}
    s = m.get("step_time_s") or {}
    spread = f"p10 {num(t.get('p10'))}, p90 {num(t.get('p90'))}; CV {pct(t.get('cv'))}"
    rate = (f"{num(t.get('mean'))} {unit}/s over all measured time (median step "
            f"{num(t.get('median'))}, {spread})" if t.get("basis") == "mean" else
            f"{num(t.get('median'))} {unit}/s median ({spread})")
    return [
        ("throughput", rate),
        ("step time", f"{num(_ms(s.get('p50')), 2)} ms p50, {num(_ms(s.get('p99')), 2)} ms p99 "
                      f"over {m.get('measured_steps', '?')} steps ({m.get('timing', '?')})"),
        ("warm-up", f"first step {num(w.get('first_step_s'), 2)} s; "
                    f"{w.get('steps', '?')} steps {num(w.get('total_s'), 2)} s (excluded)"),
    ]


def data_rows(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """With --data: the images, the loader, and where the measured time went."""
    if not data:
        return []
    split = data.get("split") or {}
    loader = ", ".join(f"{k}={v}" for k, v in (data.get("loader") or {}).items())
    decode = "; decoded on the GPU" if data.get("gpu_decode") else ""
    return [
        ("data", f"{data.get('images', '?'):,} images in {data.get('classes', '?')} classes; "
                 f"DataLoader({loader}){decode}"),
        ("input", f"{split.get('verdict', '?')}: the device waited for input "
                  f"{pct(split.get('input_share'))} of the measured time (computing "
                  f"{num(split.get('compute_s'), 2)} s, waiting for batches "
                  f"{num(split.get('wait_s'), 2)} s, of {num(split.get('wall_s'), 2)} s; "
                  f"{split.get('how', '?')})"),
    ]


def ddp_rows(ddp: Mapping[str, Any], unit: str) -> list[tuple[str, str]]:
    """A data-parallel run: its ranks, the slowest, and the scaling against one process."""
    if not ddp:
        return []
    ranks = ddp.get("ranks") or []
    args = ", ".join(f"{k}={v}" for k, v in (ddp.get("args") or {}).items())
    rows = [("ranks", f"{ddp.get('world_size', '?')} processes ({ddp.get('backend', '?')}), "
                      f"DDP({args}); the slowest, rank {ddp.get('slowest_rank', '?')}, sets "
                      f"the pace; per rank " +
                      ", ".join(f"{num(r.get('throughput'))}" for r in ranks) + f" {unit}/s")]
    one = ddp.get("one_process") or {}
    if one.get("scaling_efficiency") is not None:
        rows.append(("scaling", f"{pct(one['scaling_efficiency'])} of {ddp.get('world_size')} "
                                f"x one process ({num(one.get('throughput'))} {unit}/s, same "
                                f"settings)"))
    return rows


def _memory_row(mem: Mapping[str, Any]) -> tuple[str, str]:
    if mem.get("peak_allocated_bytes") is not None:
        return ("memory", f"peak {gib(mem.get('peak_allocated_bytes'))} allocated, "
                          f"{gib(mem.get('peak_reserved_bytes'))} reserved of "
                          f"{gib(mem.get('device_total_bytes'))}")
    limit = mem.get("host_limit_bytes")
    bound = f" of {gib(limit)} free" if limit else ""  # the run's bound
    return ("memory", f"host peak RSS {gib(mem.get('host_peak_rss_bytes'))}{bound}; "
                      f"{mem.get('reason') or 'no device figures'}")


def _power_rows(pw: Mapping[str, Any], per_unit: int, per: str) -> list[tuple[str, str]]:
    if pw.get("avg_w") is None:
        rows = [("power", f"not measured: {pw.get('reason') or 'unknown'}")]
    else:
        energy = pw.get("energy_per_sample_j")  # per sample: per sequence for a language model
        rows = [("power", f"{num(pw.get('avg_w'), 0)} W average, "
                          f"{num(pw.get('peak_w'), 0)} W peak, "
                          f"{joules(None if energy is None else energy / per_unit, per)} "
                          f"({pw.get('source')}, {num(pw.get('sample_hz'), 0)} Hz)")]
    if pw.get("util_avg_pct") is not None:
        rows.append(("GPU busy", f"{num(pw.get('util_avg_pct'), 0)} % average"))
    return rows


def _flops_rows(fl: Mapping[str, Any], mfu: Mapping[str, Any], per_unit: int, per: str
                ) -> list[tuple[str, str]]:
    if fl.get("per_sample_train") is None:
        return []
    return [("FLOPs", f"{flop(fl['per_sample_train'] / per_unit)}/{per} "
                      f"(forward {flop((fl.get('per_sample_forward') or 0) / per_unit)}), "
                      f"{flop((mfu.get('achieved_tflops') or 0) * 1e12)}/s achieved")]


def result_rows(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    m = result.get("metrics") or {}
    unit = m.get("unit", "samples")
    per = unit_name(unit)
    per_unit = (result.get("workload") or {}).get("units_per_sample") or 1
    mfu = m.get("mfu") or {}
    return [*_timing_rows(m, result.get("warmup") or {}, unit),
            *data_rows(result.get("data") or {}),
            *ddp_rows(result.get("ddp") or {}, unit),
            _memory_row(m.get("memory") or {}),
            *_power_rows(m.get("power") or {}, per_unit, per),
            *_flops_rows(m.get("flops") or {}, mfu, per_unit, per),
            ("MFU", mfu_text(mfu))]


def mfu_text(mfu: Mapping[str, Any]) -> str:
    parts = []
    if mfu.get("vs_spec") is not None:
        parts.append(f"{pct(mfu['vs_spec'])} of {num(mfu.get('spec_peak_tflops'))} TFLOP/s "
                     f"{mfu.get('spec_dtype')} spec")
    elif mfu.get("spec_note"):
        parts.append(str(mfu["spec_note"]))
    gemm = mfu.get("gemm") or {}
    if mfu.get("vs_measured_gemm") is not None:
        parts.append(f"{pct(mfu['vs_measured_gemm'])} of a measured {gemm.get('n')}^3 "
                     f"{gemm.get('dtype')} GEMM ({num(gemm.get('tflops'), 2)} TFLOP/s)")
    elif gemm.get("reason") or mfu.get("reason"):
        parts.append(str(mfu.get("reason") or gemm.get("reason")))
    return "; ".join(parts) or "-"


def _ms(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else seconds * 1000.0


def render_result(result: Mapping[str, Any], width: int = 100, color: bool = False) -> str:
    """The result as a titled two-column table, followed by its warnings."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=config_line(result), title_justify="left", show_header=False,
                  box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, text in result_rows(result):
        table.add_row(name, text)
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False)
    console.print(table)
    for note in (result.get("workload") or {}).get("notes") or []:
        console.print(f"note: {note}", highlight=False)
    for warning in result.get("warnings") or []:
        console.print(f"warning: {warning}", highlight=False)
    return strip_lines(buf.getvalue())


def strip_lines(text: str) -> str:
    """Drop the trailing spaces rich pads lines with (stable golden text, clean pastes)."""
    return "".join(line.rstrip() + "\n" for line in text.splitlines())
