"""The `--html` report of a tune: one self-contained page (inline CSS and SVG, no script, no
network), a pure function of the result (rocmdoctor.tuners.model.TuneResult).

Charts: throughput of each trial over the time of the tune (failed trials on the floor,
the best-so-far as a step line, your settings as a dashed line), the confirmed speed-ups with
their 95 % intervals, and the effect of each knob value.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, Optional

from rocmdoctor.tuners.bench.child import excerpt
from rocmdoctor.tuners.bench.render import joules, unit_name
from rocmdoctor.tuners.export import energy_line, env_file_text, passed_over_text
from rocmdoctor.tuners.model import Candidate, ConfirmRun, Effect, Trial, TuneResult

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 860, 300, 70, 20, 20, 40
COLORS = {"ok": "#2563eb", "pruned": "#9ca3af", "baseline": "#111827", "fail": "#dc2626",
          "win": "#16a34a", "lose": "#6b7280"}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:920px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.sub{color:#4b5563}.verdict{padding:10px 14px;border-radius:6px;margin:16px 0;
background:#f3f4f6}.verdict.win{background:#dcfce7}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;
padding:4px 8px;border-bottom:1px solid #e5e7eb;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f9fafb;
padding:10px;overflow-x:auto;font-size:12px;border:1px solid #e5e7eb}
svg text{font:11px system-ui,sans-serif;fill:#374151}.muted{color:#6b7280}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _e_line(text: Optional[str]) -> str:
    """An escaped line of its own under the line before it, or nothing."""
    return f"<br>{_e(text)}" if text else ""


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def time_ticks(x_max: float) -> list[tuple[float, str]]:
    """Tick positions (minutes) and labels for a time axis of x_max minutes: at most six,
    at a round step, each label distinct ("0:30", "1:00", ... under ten minutes)."""
    steps = (1 / 12, 1 / 6, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0)
    step = next((s for s in steps if x_max / s <= 5), steps[-1] * math.ceil(x_max / 600))
    ticks = []
    n = 0
    while n * step <= x_max + 1e-9:
        minutes = n * step
        secs = int(round(minutes * 60))
        label = f"{secs // 60}:{secs % 60:02d}" if x_max < 10 else f"{minutes:g}"
        ticks.append((minutes, label))
        n += 1
    return ticks


def _axes(y_max: float, y_label: str, x_label: str, x_max: float) -> list[str]:
    parts = []
    for i in range(5):
        y = PAD_T + (H - PAD_T - PAD_B) * i / 4
        value = y_max * (4 - i) / 4
        parts.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" '
                     'stroke="#e5e7eb"/>')
        parts.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{value:,.0f}</text>')
    for minutes, label in time_ticks(x_max):
        x = PAD_L + (W - PAD_L - PAD_R) * minutes / x_max
        parts.append(f'<text x="{x:.1f}" y="{H - PAD_B + 16}" text-anchor="middle">'
                     f'{_e(label)}</text>')
    parts.append(f'<text x="{(W + PAD_L) / 2:.0f}" y="{H - 6}" text-anchor="middle">'
                 f'{_e(x_label)}</text>')
    parts.append(f'<text x="14" y="{(H - PAD_B) / 2:.0f}" transform="rotate(-90 14 '
                 f'{(H - PAD_B) / 2:.0f})" text-anchor="middle">{_e(y_label)}</text>')
    return parts


class _Plot:
    """The throughput chart's axes: minutes since the tune began against units per second."""

    def __init__(self, x_max: float, y_max: float) -> None:
        self.x_max, self.y_max = x_max, y_max

    def xy(self, minutes: float, value: float) -> tuple[float, float]:
        x = PAD_L + (W - PAD_L - PAD_R) * minutes / self.x_max
        y = PAD_T + (H - PAD_T - PAD_B) * (1 - value / self.y_max)
        return x, y


def _baseline_line(plot: _Plot, baseline: Optional[float]) -> list[str]:
    if not baseline:
        return []
    _, y = plot.xy(0, baseline)
    # at the right end: trial 0 (your settings) has its own label at the left
    return [f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" '
            f'stroke="{COLORS["baseline"]}" stroke-dasharray="6 4"/>',
            f'<text x="{W - PAD_R - 4}" y="{y - 5:.1f}" text-anchor="end">your settings</text>']


def _best_so_far(plot: _Plot, timed: Sequence[Trial], t0: float) -> list[str]:
    best, steps = 0.0, []
    for t in sorted(timed, key=lambda t: t.started_at or 0.0):
        if t.measured:
            best = max(best, float(t.throughput or 0.0))
        if best:
            steps.append(plot.xy(((t.started_at or t0) - t0) / 60, best))
    if len(steps) < 2:
        return []
    path = f"M{steps[0][0]:.1f} {steps[0][1]:.1f}" + "".join(
        f" H{x:.1f} V{y:.1f}" for x, y in steps[1:])
    return [f'<path d="{path}" fill="none" stroke="{COLORS["win"]}" stroke-width="1.5"/>']


def _trial_mark(plot: _Plot, t: Trial, t0: float, unit: str) -> list[str]:
    minutes = ((t.started_at or t0) - t0) / 60
    tip = _e(f"trial {t.number}: {t.state} "
             + (f"{t.throughput:,.1f} {unit}/s" if t.throughput else t.message))
    if t.measured:
        x, y = plot.xy(minutes, float(t.throughput or 0.0))
        return [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{COLORS["ok"]}">'
                f'<title>{tip}</title></circle>',
                f'<text x="{x + 7:.1f}" y="{y - 6:.1f}">{t.number}</text>']
    x, y = plot.xy(minutes, 0)
    color = COLORS["pruned"] if t.state == "pruned" else COLORS["fail"]
    return [f'<path d="M{x - 5:.1f} {y - 11:.1f} l10 10 m0 -10 l-10 10" '
            f'stroke="{color}" stroke-width="2"><title>{tip}</title></path>',
            f'<text x="{x + 7:.1f}" y="{y - 12:.1f}">{t.number} {_e(t.state)}</text>']


def _rerun_mark(plot: _Plot, run: ConfirmRun, minutes: float, base_number: Optional[int],
                unit: str) -> str:
    who = "your settings" if run.trial == base_number else f"trial {run.trial}"
    tip = _e(f"confirmation round {run.round + 1}, {who}: "
             + (f"{run.throughput:,.1f} {unit}/s" if run.throughput else str(run.state)))
    x, y = plot.xy(max(0.0, minutes), run.throughput or 0.0)
    color = COLORS["baseline"] if run.trial == base_number else COLORS["win"]
    return (f'<path d="M{x:.1f} {y - 5:.1f} l5 5 l-5 5 l-5 -5 z" fill="{color}">'
            f'<title>{tip}</title></path>')


def trials_chart(trials: Sequence[Trial], baseline: Optional[float], unit: str,
                 confirm_runs: Sequence[ConfirmRun] = ()) -> str:
    """Throughput of each trial against the time since the tune began, and the confirmation's
    re-measurements after them (diamonds: your settings dark, candidates green)."""
    timed = [t for t in trials if t.started_at is not None
             and t.state not in ("duplicate", "not-run")]
    if not timed:
        return '<p class="muted">No trial ran.</p>'
    t0 = min(float(t.started_at or 0.0) for t in timed)
    reruns = [(r, (float(r.at) - float(r.wall_s or 0.0) - t0) / 60)
              for r in confirm_runs if r.at is not None]
    ends = [(float(t.started_at or 0.0) - t0 + float(t.wall_s or 0.0)) / 60 for t in timed]
    ends += [(float(r.at or 0.0) - t0) / 60 for r, _ in reruns]
    x_max = max(0.1, max(ends)) * 1.02
    values = [float(t.throughput) for t in timed if t.throughput]
    values += [float(r.throughput) for r, _ in reruns if r.throughput]
    plot = _Plot(x_max, _nice_max(max(values + ([baseline] if baseline else []) + [1.0])
                                  * 1.08))
    clock = "minutes:seconds" if x_max < 10 else "minutes"
    parts = [f'<svg viewBox="0 0 {W} {H}" width="100%" role="img" '
             'aria-label="throughput of each trial over time">',
             *_axes(plot.y_max, f"{unit}/s", f"time since the tune began ({clock})", x_max),
             *_baseline_line(plot, baseline), *_best_so_far(plot, timed, t0)]
    for t in timed:
        parts += _trial_mark(plot, t, t0, unit)
    base_number = next((t.number for t in trials if t.baseline), None)
    parts += [_rerun_mark(plot, run, minutes, base_number, unit) for run, minutes in reruns]
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(rows: Sequence[tuple[str, float, Optional[float], Optional[float], str]],
              centre: float, fmt: str) -> str:
    """Horizontal bars from `centre` with optional interval whiskers: (label, value, low,
    high, colour)."""
    if not rows:
        return '<p class="muted">Nothing to show.</p>'
    row_h, left, right = 24, 260, 20
    fits = (left - 12) // 6  # characters of 11 px text left of the bars; longer ones are cut
    height = row_h * len(rows) + 30
    span = max(abs(v - centre) for r in rows for v in (r[1], r[2] or r[1], r[3] or r[1]))
    span = span * 1.15 or 0.01
    mid = left + (W - left - right) / 2

    def x(value: float) -> float:
        return mid + (value - centre) / span * (W - left - right) / 2

    parts = [f'<svg viewBox="0 0 {W} {height}" width="100%" role="img">',
             f'<line x1="{mid:.1f}" y1="4" x2="{mid:.1f}" y2="{height - 24}" stroke="#9ca3af"/>',
             f'<text x="{mid:.1f}" y="{height - 8}" text-anchor="middle">'
             f'{_e(fmt.format(centre))}</text>']
    for i, (label, value, low, high, color) in enumerate(rows):
        y = 6 + i * row_h
        x0, x1 = sorted((x(centre), x(value)))
        shown = label if len(label) <= fits else label[:fits - 1] + "\u2026"
        parts.append(f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">{_e(shown)}'
                     f'<title>{_e(label)}</title></text>')
        parts.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1):.1f}" '
                     f'height="{row_h - 8}" fill="{color}" opacity="0.8"/>')
        if low is not None and high is not None:
            parts.append(f'<line x1="{x(low):.1f}" y1="{y + row_h / 2:.1f}" x2="{x(high):.1f}"'
                         f' y2="{y + row_h / 2:.1f}" stroke="#111827" stroke-width="1.5"/>')
        parts.append(f'<text x="{max(x1, x(high or value)) + 6:.1f}" y="{y + 14}">'
                     f'{_e(fmt.format(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _fmt(value: Optional[float], pattern: str = "{:,.1f}") -> str:
    return "-" if value is None else pattern.format(value)


def _payback_table(cands: Sequence[Candidate]) -> str:
    """When each candidate's one-time cost (compile, tuning) is paid back by faster steps."""
    rows = [f"<tr><td class=n>{c.trial}</td>"
            f"<td class=n>{c.payback.one_time_s:g} s</td>"
            f"<td class=n>{c.payback.steps:,}</td>"
            f"<td class=n>{c.payback.minutes:g} min</td></tr>"
            for c in cands if c.payback]
    if not rows:
        return ""
    return ("<h2>One-time cost, paid back</h2><table><tr><th>trial</th><th>one-time cost "
            "beyond yours</th><th>steps to pay it back</th><th>training time</th></tr>"
            + "".join(rows) + "</table>")


def _failure_block(result: TuneResult) -> str:
    """When no verdict could be reached: what the benchmark printed last and the command that
    runs it by hand; after a break, whether the machine recovered."""
    parts = []
    if result.recovery:
        parts.append(f"<p>Your settings, run again after the break: "
                     f"{_e(result.recovery.message)}</p>")
    failure = result.failure
    tail = excerpt(failure.stderr_tail, 12) if failure else ""
    if tail:
        parts.append(f"<h2>What the benchmark printed last</h2><pre>{_e(tail)}</pre>")
    if failure and failure.reproduce:
        parts.append(f"<h2>The same run by hand</h2><pre>{_e(failure.reproduce)}</pre>")
    return "".join(parts)


def _speed_chart(result: TuneResult) -> str:
    rows = [(f"trial {c.trial}: " + (", ".join(f"{k}={v}" for k, v in c.changes.items())
                                     or "-"),
             c.speedup, c.low, c.high, COLORS["win"] if c.winner else COLORS["lose"])
            for c in result.confirmation.candidates if c.speedup is not None]
    return bar_chart(rows, 1.0, "{:.3f}")


def _effects_chart(effects: Sequence[Effect]) -> str:
    shown = list(effects[:16])
    rows = [(f"{e.knob} = {e.value}" + (" *" if e.note else ""), e.effect, None, None,
             COLORS["win"] if e.effect >= 0 else COLORS["fail"]) for e in shown]
    noted = [e for e in shown if e.note]
    notes = ("<ul class=sub>" + "".join(
        f"<li>* {_e(e.knob)} = {_e(e.value)}: {_e(e.note)}</li>" for e in noted)
        + "</ul>") if noted else ""
    return bar_chart(rows, 0.0, "{:+.1%}") + notes


def _trial_rows(result: TuneResult, unit: str) -> str:
    rows = []
    for t in result.trials:
        changes = ", ".join(f"{k}={v}" for k, v in result.space.changes(t.params).items()) \
            or "your settings"
        if not t.params:  # queued and never run: it has no point yet
            changes = "-"
        rows.append(f"<tr><td class=n>{t.number}</td><td>{_e(changes)}</td>"
                    f"<td>{_e(t.state)}</td><td class=n>{_fmt(t.throughput)}</td>"
                    f"<td class=n>{_e(joules(t.energy_per_unit, unit_name(unit)))}</td>"
                    f"<td class=n>{_fmt(t.one_time_s, '{:.1f} s')}</td>"
                    f"<td class=muted>{_e((t.message or '')[:160])}</td></tr>")
    return "".join(rows)


def _title(result: TuneResult) -> tuple[str, str]:
    w, p = result.workload, result.platform
    title = f"rocmdoctor tune: {w.model} on {p.shown}"
    stack = f"ROCm {p.hip}" if p.hip else f"CUDA {p.cuda}" if p.cuda else ""
    sub = " · ".join(x for x in (
        f"batch {w.batch_size}, {w.precision}", f"torch {p.torch}", stack,
        f"study {result.study.name} ({result.study.sampler})", str(result.created_at)) if x)
    return title, sub


def render_html(result: TuneResult) -> str:
    verdict, conf, unit = result.verdict, result.confirmation, result.unit
    base = result.baseline
    title, sub = _title(result)
    skipped = "".join(f"<li><b>{_e(k)}</b>: {_e(r)}</li>" for k, r in result.space.skipped)
    warnings = "".join(f"<li>{_e(m)}</li>" for m in result.warnings)
    chart = trials_chart(result.trials, base.throughput if base else None, unit,
                         conf.timed_runs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body><h1>{_e(title)}</h1>
<div class=sub>{_e(sub)}</div>
<div class="verdict{' win' if verdict.winner else ''}"><b>Verdict:</b>
{_e(verdict.summary)}{_e_line(energy_line(result))}{_e_line(passed_over_text(verdict))}</div>
{_failure_block(result)}
<h2>Throughput of each trial</h2>{chart}
{_payback_table(conf.candidates)}
<h2>Confirmed speed-up over your settings (95 % interval)</h2>
<p class=sub>Re-measured interleaved over {_e(conf.rounds)} rounds;
run-to-run noise {_fmt(conf.noise_cv, '{:.1%}')}.</p>{_speed_chart(result)}
<h2>Knob effects</h2><p class=sub>Geometric-mean throughput of finished trials with each value
against those without it.</p>{_effects_chart(result.effects)}
<h2>How to apply</h2><pre>{_e(env_file_text(result))}</pre>
<h2>Trials</h2><table><tr><th>#</th><th>changes</th><th>state</th><th>{_e(unit)}/s</th>
<th>energy</th><th>one-time</th><th>message</th></tr>{_trial_rows(result, unit)}</table>
<h2>Not searched</h2><ul>{skipped or '<li>none</li>'}</ul>
{'<h2>Warnings</h2><ul>' + warnings + '</ul>' if warnings else ''}
</body></html>
"""
