"""Renderers of a tune result (schema rocmdoctor.tune/1, rocmdoctor.tuners.result): the
`--export` file that `source` applies, the `--output` JSON and the terminal summary.

All are pure functions of the result dict, like `rocmdoctor check`'s renderers.
Check an export by hand: `bash -c 'set -e; source best.env; env | grep -E "MIOPEN|PYTORCH"'`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor.tuners.bench.child import excerpt
from rocmdoctor.tuners.bench.render import joules, unit_name
from rocmdoctor.tuners.result import energy_per_unit

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
def env_file_text(result: Mapping[str, Any]) -> str:
    """A file `source` applies: export lines, with code-level settings as comments."""
    w = result["workload"]
    head = (f"# rocmdoctor tune {result.get('tool_version', '')}: {w['model']}, batch "
            f"{w['batch_size']}, {w['precision']}, on {result['platform'].get('device') or '?'}"
            f" ({result.get('created_at', '')})")
    verdict = result["verdict"]
    apply = result.get("apply")
    if not verdict["winner"] or not apply:
        return "\n".join([head, f"# {verdict['summary']}.",
                          "# Nothing to apply: keep your current settings.", ""])
    best = verdict["best_overall"]
    lines = [head, f"# Trial {best['trial']}: {_pct(best['speedup'])} throughput over your "
             f"settings (95 % interval {_pct(best['low'])} to {_pct(best['high'])}).",
             "# Apply: source this file, then start training from the same shell.", ""]
    lines += [export_line(name, value) for name, value in sorted(apply["env"].items())]
    if apply["python"]:
        lines += ["", "# Code-level settings: an environment file cannot set these; put them "
                      "in your training script:"]
        lines += [f"#   {line}" for line in apply["python"]]
    if apply["notes"]:
        lines += [""] + [f"# Note: {note}" for note in apply["notes"]]
    return "\n".join(lines) + "\n"


def passed_over_text(verdict: Mapping[str, Any]) -> Optional[str]:
    """Why the pick is not the fastest candidate measured, or None when it is."""
    over, best = verdict.get("passed_over"), verdict.get("best_overall")
    if not over or not best:
        return None
    return (f"trial {best['trial']} rather than trial {over['trial']}: as fast as far as "
            f"the confirmation can tell (trial {over['trial']} against it: {over['why']}), "
            f"with {over['changes']} changes instead of {over['its_changes']}")


def json_text(result: Mapping[str, Any]) -> str:
    """The `--output` file (the caller redacts the result first, as `rocmdoctor tune` does)."""
    return json.dumps(result, indent=2, sort_keys=False, default=str) + "\n"


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


def energy_line(result: Mapping[str, Any]) -> Optional[str]:
    """The pick's energy per unit against yours, both from the confirmation's re-runs."""
    best = result["verdict"].get("best_overall")
    mine = result["confirmation"].get("baseline_energy_per_unit_j")
    if not best or best.get("energy_per_unit_j") is None or not mine:
        return None
    per = unit_name((result.get("baseline") or {}).get("unit"))
    return (f"energy per {per}: {joules(best['energy_per_unit_j'])} against {joules(mine)} "
            f"with your settings ({best['energy_per_unit_j'] / mine - 1:+.0%})")


def _secs(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _changes(changes: Mapping[str, str], knobs: Mapping[str, Mapping[str, Any]]) -> str:
    if not changes:
        return "your settings"
    return ", ".join(f"{k} {knobs[k]['baseline']} -> {v}" if k in knobs else f"{k}={v}"
                     for k, v in changes.items())


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _stopped_line(result: Mapping[str, Any], queued: int) -> list[str]:
    """Why the search ended, and what a user can do about it, only where it would run more."""
    search = result.get("search") or {}
    reason, why = search.get("stopped"), search.get("why") or ""
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


def failure_lines(result: Mapping[str, Any]) -> list[str]:
    """When no verdict could be reached: what the child printed last, and the command that
    runs the same benchmark by hand; after a break, whether the machine recovered."""
    out: list[str] = []
    recovery = result.get("recovery")
    if recovery:
        out.append(f"  your settings, run again after the break: {recovery['message']}")
    failure = result.get("failure")
    if not failure:
        return out
    tail = excerpt(failure.get("stderr_tail") or "", 12)
    if tail:
        out += ["", "what the benchmark printed last (stderr):"]
        out += [f"  {line}" for line in tail.splitlines()]
    if failure.get("reproduce"):
        out += ["", "the same run by hand:", f"  {failure['reproduce']}"]
    return out


def render_summary(result: Mapping[str, Any], outputs: Sequence[str] = ()) -> str:
    """The end-of-tune report for the terminal (plain text, no colour)."""
    w, p = result["workload"], result["platform"]
    knobs = {k["name"]: k for k in result["space"]["knobs"]}
    trials = result["trials"]
    counted = [t for t in trials
               if t["state"] not in ("duplicate", "interrupted", "not-run", "waiting")]
    queued = sum(t["state"] == "waiting" for t in trials)
    states: dict[str, int] = {}
    for t in counted:
        states[t["state"]] = states.get(t["state"], 0) + 1
    versions = ", ".join(x for x in (
        f"ROCm {p['hip']}" if p.get("hip") else "", f"CUDA {p['cuda']}" if p.get("cuda") else "",
        f"torch {p['torch']}" if p.get("torch") else "") if x)
    out = [f"rocmdoctor tune: {w['model']}, batch {w['batch_size']}, {w['precision']} on "
           f"{p.get('device') or p['kind']} ({versions})",
           f"study {result['study']['name']}: {len(counted)} trials ("
           + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + f") in "
           f"{_duration(result['elapsed_s'])}", *_stopped_line(result, queued), ""]
    base = result.get("baseline")
    unit = (base or {}).get("unit")
    rows: list[tuple[str, ...]] = [("", "throughput", "energy", "memory", "one-time",
                                    "speed-up (95 % interval)")]
    if base:
        rows.append(("your settings", _rate(base["throughput"], unit),
                     joules(energy_per_unit(base), unit_name(unit)), _bytes(base["memory_bytes"]),
                     _secs(base["one_time_s"]), "1.000"))
    by_number = {t["number"]: t for t in trials}
    for cand in result["confirmation"]["candidates"]:
        t = by_number[cand["trial"]]
        interval = "" if cand["low"] is None else f" ({_pct(cand['low'])} .. {_pct(cand['high'])})"
        mark = " *" if cand["winner"] else ""
        rows.append((f"trial {cand['trial']}{mark}", _rate(t["throughput"], unit),
                     joules(energy_per_unit(t), unit_name(unit)), _bytes(t["memory_bytes"]),
                     _secs(t["one_time_s"]),
                     (f"{cand['speedup']:.3f}" if cand["speedup"] else "-") + interval))
    if all(r[2] == "-" for r in rows[1:]):  # no power readings (a CPU): no energy column
        rows = [r[:2] + r[3:] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if len(rows) > 1:  # nothing measured: no table
        out += ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
                for r in rows]
    conf = result["confirmation"]
    if conf.get("noise_cv") is not None:
        out.append(f"  (search throughput; speed-ups re-measured interleaved over "
                   f"{conf['rounds']} rounds, run-to-run noise {conf['noise_cv']:.1%})")
    for cand in conf["candidates"]:
        out.append(f"  trial {cand['trial']}: {_changes(cand['changes'], knobs)}: "
                   f"{cand['why']}")
        back = cand.get("payback")
        if back and back["one_time_s"] > 0:
            out.append(f"    its {back['one_time_s']:g} s of one-time cost (compile, tuning) "
                       f"is paid back after {back['steps']:,} steps "
                       f"({back['minutes']:g} min of training)")
    verdict = result["verdict"]
    out += ["", f"verdict: {verdict['summary']}"]
    out += failure_lines(result)
    energy = energy_line(result)
    if energy:
        out.append(f"  {energy}")
    over = passed_over_text(verdict)
    if over:
        out.append(f"  {over}")
    same = verdict.get("best_same_precision")
    best = verdict.get("best_overall")
    if best and same and same["trial"] != best["trial"]:
        out.append(f"  best that keeps {verdict['precision']}: trial {same['trial']} "
                   f"({_pct(same['speedup'])})")
    elif best and not same:
        out.append(f"  no confirmed win keeps {verdict['precision']}")
    if best and "best_same_batch" in verdict:
        batch = verdict.get("batch_size")
        keeps = verdict.get("best_same_batch")
        if keeps is None:
            out.append(f"  no confirmed win keeps batch size {batch}")
        elif keeps["trial"] != best["trial"]:
            out.append(f"  best at your batch size ({batch}): trial {keeps['trial']} "
                       f"({_pct(keeps['speedup'])})")
        if best.get("batch_size", batch) != batch:
            out.append(f"  trial {best['trial']} trains with batch size {best['batch_size']}: "
                       "scale the learning rate with the batch (and check convergence)")
    effects = result["effects"][:8]
    if effects:
        out += ["", "knob effects (geometric mean of finished trials with the value vs "
                    "without):"]
        width = max(len(f"{e['knob']} = {e['value']}") for e in effects)
        out += [f"  {e['knob'] + ' = ' + e['value']:<{width}}  {e['effect']:+8.1%}  "
                f"(n={e['n_with']} vs {e['n_without']})"
                + (f"  ({e['note']})" if e.get("note") else "") for e in effects]
    apply = result.get("apply")
    if apply:
        out += ["", "apply:"]
        out += [f"  {export_line(k, v)}" for k, v in sorted(apply["env"].items())]
        out += [f"  {line}" for line in apply["python"]]
        out += [f"  note: {n}" for n in apply["notes"]]
    if result["space"]["skipped"]:
        out += ["", "not searched: " + "; ".join(
            f"{s['knob']} ({s['reason']})" for s in result["space"]["skipped"])]
    out += [f"warning: {msg}" for msg in result["warnings"]]
    out += [f"wrote {path}" for path in outputs]
    return "\n".join(out) + "\n"
