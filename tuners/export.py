"""Renderers of a tune result (rocmdoctor.tuners.model.TuneResult): the `--export` file that
`source` applies, the `--output` JSON (written by rocmdoctor.tuners.codec) and the terminal
summary. All are pure functions of the result, like `rocmdoctor check`'s renderers.

Check an export by hand: `bash -c 'set -e; source best.env; env | grep -E "MIOPEN|PYTORCH"'`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Optional

from rocmdoctor.tuners.bench.child import excerpt
from rocmdoctor.tuners.bench.render import joules, unit_name
from rocmdoctor.tuners.codec import to_dict
from rocmdoctor.tuners.model import Candidate, Effect, SpaceInfo, Trial, TuneResult, Verdict

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NOT_COUNTED = ("duplicate", "interrupted", "not-run", "waiting")  # states that ran no trial


def export_line(name: str, value: object) -> str:
    """`export NAME=value`, quoted for the shell; a path in the home folder (as this account's
    $HOME or, redacted, as `~`) is written from "$HOME", so the line is safe to publish and
    still names the same folder when it runs."""
    if not _NAME.match(name):
        raise ValueError(f"not an environment variable name: {name!r}")
    text = str(value)
    home = os.environ.get("HOME", "").rstrip("/")
    for prefix in ((home,) if len(home) > 1 else ()) + ("~",):
        if text == prefix or text.startswith(prefix + "/"):
            rest = text[len(prefix):]
            return f'export {name}="$HOME"{shlex.quote(rest) if rest else ""}'
    return f"export {name}={shlex.quote(text)}"


def env_file_text(result: TuneResult) -> str:
    """A file `source` applies: export lines, with code-level settings as comments."""
    w = result.workload
    head = (f"# rocmdoctor tune {result.tool_version}: {w.model}, batch {w.batch_size}, "
            f"{w.precision}, on {result.platform.device or '?'} ({result.created_at})")
    verdict, apply = result.verdict, result.apply
    best = verdict.best_overall
    if not verdict.winner or not apply or best is None:
        return "\n".join([head, f"# {verdict.summary}.",
                          "# Nothing to apply: keep your current settings.", ""])
    lines = [head, f"# Trial {best.trial}: {_pct(best.speedup)} throughput over your "
             f"settings (95 % interval {_pct(best.low)} to {_pct(best.high)}).",
             "# Apply: source this file, then start training from the same shell.", ""]
    lines += [export_line(name, value) for name, value in sorted(apply.env.items())]
    if apply.python:
        lines += ["", "# Code-level settings: an environment file cannot set these; put them "
                      "in your training script:"]
        lines += [f"#   {line}" for line in apply.python]
    if apply.notes:
        lines += [""] + [f"# Note: {note}" for note in apply.notes]
    return "\n".join(lines) + "\n"


def passed_over_text(verdict: Verdict) -> Optional[str]:
    """Why the pick is not the fastest candidate measured, or None when it is."""
    over, best = verdict.passed_over, verdict.best_overall
    if not over or not best:
        return None
    return (f"trial {best.trial} rather than trial {over.trial}: as fast as far as "
            f"the confirmation can tell (trial {over.trial} against it: {over.why}), "
            f"with {over.changes} changes instead of {over.its_changes}")


def json_text(result: TuneResult) -> str:
    """The `--output` file (the caller redacts the result first, as `rocmdoctor tune` does)."""
    return json.dumps(to_dict(result), indent=2, sort_keys=False, default=str) + "\n"


def _pct(ratio: Optional[float]) -> str:
    return "?" if ratio is None else f"{ratio - 1:+.1%}"


def _rate(value: Optional[float], unit: Optional[str]) -> str:
    return "-" if value is None else f"{value:,.1f} {unit or 'samples'}/s"


def _bytes(value: Optional[float]) -> str:
    if value is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{value:.0f} B"
        value /= 1024
    return "-"


def energy_line(result: TuneResult) -> Optional[str]:
    """The pick's energy per unit against yours, both from the confirmation's re-runs."""
    best = result.verdict.best_overall
    mine = result.confirmation.baseline_energy_per_unit_j
    if not best or best.energy_per_unit_j is None or not mine:
        return None
    per = unit_name(result.baseline.unit if result.baseline else None)
    return (f"energy per {per}: {joules(best.energy_per_unit_j)} against {joules(mine)} "
            f"with your settings ({best.energy_per_unit_j / mine - 1:+.0%})")


def _secs(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f} s"


def changes_line(changes: Mapping[str, str], space: SpaceInfo) -> str:
    """ "precision fp32 -> fp16, ..." from a point's changes."""
    if not changes:
        return "your settings"
    return ", ".join(f"{k} {info.baseline} -> {v}" if (info := space.knob(k)) else f"{k}={v}"
                     for k, v in changes.items())


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _stopped_line(result: TuneResult, queued: int) -> list[str]:
    """Why the search ended, and what a user can do about it, only where it would run more."""
    reason, why = result.search.stopped, result.search.why
    if not why:
        return []
    line = f"the search ended: {why}"
    them = "it" if queued == 1 else "them"
    if queued and reason == "budget":
        line += (f"; {queued} queued configuration{'s' if queued != 1 else ''} not run: the "
                 f"same command with a longer --budget measures {them}")
    elif queued and reason == "max-trials":
        line += f"; {queued} queued, not run: a higher --max-trials measures {them}"
    return [line]


def failure_lines(result: TuneResult) -> list[str]:
    """When no verdict could be reached: what the child printed last, and the command that
    runs the same benchmark by hand; after a break, whether the machine recovered."""
    out: list[str] = []
    if result.recovery:
        out.append(f"  your settings, run again after the break: {result.recovery.message}")
    failure = result.failure
    if not failure:
        return out
    tail = excerpt(failure.stderr_tail, 12)
    if tail:
        out += ["", "what the benchmark printed last (stderr):"]
        out += [f"  {line}" for line in tail.splitlines()]
    if failure.reproduce:
        out += ["", "the same run by hand:", f"  {failure.reproduce}"]
    return out


def _head(result: TuneResult) -> list[str]:
    """What was tuned, how many trials ended how, and why the search ended."""
    w, p = result.workload, result.platform
    counted = [t for t in result.trials if t.state not in NOT_COUNTED]
    states: dict[str, int] = {}
    for t in counted:
        states[t.state] = states.get(t.state, 0) + 1
    queued = sum(t.state == "waiting" for t in result.trials)
    ranks = f", {w.nproc} ranks (DDP)" if w.nproc > 1 else ""
    return [f"rocmdoctor tune: {w.model}, batch {w.batch_size}, {w.precision}{ranks} on "
            f"{p.shown} ({p.versions})",
            f"study {result.study.name}: {len(counted)} trials ("
            + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + f") in "
            f"{_duration(result.elapsed_s)}", *_stopped_line(result, queued), ""]


def _row(label: str, t: Trial, unit: Optional[str], speedup: str) -> tuple[str, ...]:
    return (label, _rate(t.throughput, unit), joules(t.energy_per_unit, unit_name(unit)),
            _bytes(t.memory_bytes), _secs(t.one_time_s), speedup)


def _speedup(c: Candidate) -> str:
    interval = "" if c.low is None else f" ({_pct(c.low)} .. {_pct(c.high)})"
    return (f"{c.speedup:.3f}" if c.speedup else "-") + interval


def _rows(result: TuneResult) -> list[tuple[str, ...]]:
    base = result.baseline
    unit = base.unit if base else None
    rows: list[tuple[str, ...]] = [("", "throughput", "energy", "memory", "one-time",
                                    "speed-up (95 % interval)")]
    if base:
        rows.append(_row("your settings", base, unit, "1.000"))
    for cand in result.confirmation.candidates:
        mark = " *" if cand.winner else ""
        rows.append(_row(f"trial {cand.trial}{mark}", result.trial(cand.trial), unit,
                         _speedup(cand)))
    return rows


def _table(result: TuneResult) -> list[str]:
    """Your settings against each candidate: throughput, energy, memory, one-time cost,
    speed-up with its interval; no energy column when no power was read."""
    rows = _rows(result)
    if all(r[2] == "-" for r in rows[1:]):  # no power readings (a CPU): no energy column
        rows = [r[:2] + r[3:] for r in rows]
    if len(rows) < 2:  # nothing measured: no table
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
            for r in rows]


def _candidates(result: TuneResult) -> list[str]:
    conf = result.confirmation
    out = []
    if conf.noise_cv is not None:
        out.append(f"  (search throughput; speed-ups re-measured interleaved over "
                   f"{conf.rounds} rounds, run-to-run noise {conf.noise_cv:.1%})")
    for cand in conf.candidates:
        out.append(f"  trial {cand.trial}: {changes_line(cand.changes, result.space)}: "
                   f"{cand.why}")
        back = cand.payback
        if back and back.one_time_s > 0:
            out.append(f"    its {back.one_time_s:g} s of one-time cost (compile, tuning) "
                       f"is paid back after {back.steps:,} steps "
                       f"({back.minutes:g} min of training)")
    return out


def _keeps_precision(verdict: Verdict) -> list[str]:
    """The best that keeps your precision, where it is another."""
    best, same = verdict.best_overall, verdict.best_same_precision
    if best and same and same.trial != best.trial:
        return [f"  best that keeps {verdict.precision}: trial {same.trial} "
                f"({_pct(same.speedup)})"]
    if best and not same:
        return [f"  no confirmed win keeps {verdict.precision}"]
    return []


def _keeps_batch(verdict: Verdict) -> list[str]:
    """The best at your batch size, where it is another, and the batch of the pick."""
    best, batch, keeps = verdict.best_overall, verdict.batch_size, verdict.best_same_batch
    if not best or not verdict.same_batch_known:  # older results did not keep it
        return []
    out = []
    if keeps is None:
        out.append(f"  no confirmed win keeps batch size {batch}")
    elif keeps.trial != best.trial:
        out.append(f"  best at your batch size ({batch}): trial {keeps.trial} "
                   f"({_pct(keeps.speedup)})")
    if (best.batch_size or batch) != batch:
        out.append(f"  trial {best.trial} trains with batch size {best.batch_size}: "
                   "scale the learning rate with the batch (and check convergence)")
    return out


def _verdict(result: TuneResult) -> list[str]:
    out = ["", f"verdict: {result.verdict.summary}", *failure_lines(result)]
    out += [f"  {line}" for line in (energy_line(result), passed_over_text(result.verdict))
            if line]
    return out + _keeps_precision(result.verdict) + _keeps_batch(result.verdict)


def _effects(effects: Sequence[Effect]) -> list[str]:
    shown = list(effects[:8])
    if not shown:
        return []
    width = max(len(f"{e.knob} = {e.value}") for e in shown)
    return ["", "knob effects (geometric mean of finished trials with the value vs without):",
            *(f"  {e.knob + ' = ' + e.value:<{width}}  {e.effect:+8.1%}  "
              f"(n={e.n_with} vs {e.n_without})" + (f"  ({e.note})" if e.note else "")
              for e in shown)]


def _apply_and_rest(result: TuneResult, outputs: Sequence[str]) -> list[str]:
    out = []
    if result.apply:
        out += ["", "apply:", *(f"  {export_line(k, v)}" for k, v in
                                sorted(result.apply.env.items()))]
        out += [f"  {line}" for line in result.apply.python]
        out += [f"  note: {n}" for n in result.apply.notes]
    if result.space.skipped:
        out += ["", "not searched: " + "; ".join(f"{k} ({r})" for k, r in result.space.skipped)]
    out += [f"warning: {msg}" for msg in result.warnings]
    return out + [f"wrote {path}" for path in outputs]


def render_summary(result: TuneResult, outputs: Sequence[str] = ()) -> str:
    """The end-of-tune report for the terminal (plain text, no colour)."""
    out = [*_head(result), *_table(result), *_candidates(result), *_verdict(result),
           *_effects(result.effects), *_apply_and_rest(result, outputs)]
    return "\n".join(out) + "\n"
