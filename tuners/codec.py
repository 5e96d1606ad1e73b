"""The tune/1 JSON of a result (`--output`, schema rocmdoctor.tune/1), written and read in this
one place: `to_dict(TuneResult)` and `from_dict(mapping)`.

Writing gives the keys in the order the format has always had. Reading takes results of any
version of tune/1: a key an older version did not write reads as its default, and a
top-level key this version does not know is kept (TuneResult.extra) and written back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import (
    Apply,
    BatchSearch,
    Candidate,
    Confirmation,
    ConfirmRun,
    Effect,
    Failure,
    KnobInfo,
    PassedOver,
    Payback,
    Platform,
    Recovery,
    Search,
    SpaceInfo,
    Study,
    Trial,
    TuneResult,
    Verdict,
)

TOP = ("schema", "tool_version", "created_at", "study", "workload", "platform", "space",
       "budget_s", "elapsed_s", "warnings", "trials", "baseline", "confirmation", "verdict",
       "search", "batch_search", "effects", "apply", "failure", "recovery")
TRIAL = ("number", "params", "state", "message", "stderr_tail", "baseline", "retry_of", "seed",
         "gpu", "started_at", "wall_s", "one_time_s", "dir", "env", "precision", "throughput",
         "p10", "p90", "cv", "unit", "memory_bytes", "memory_kind", "energy_per_sample_j",
         "units_per_sample", "optimizer_class", "first_step_s", "windows", "unsupported",
         "visible_devices", "survivors", "retried", "known_cause", "environment")
TRIAL_DATA = ("loader", "input_share", "input_verdict")  # written for --data trials only
PLATFORM = ("kind", "torch", "hip", "cuda", "device", "arch", "cpu_count", "torch_threads",
            "device_count")
KNOB_INFO = ("name", "title", "kind", "choices", "baseline", "changes_numerics",
             "one_time_cost", "effect", "source")
CANDIDATE = ("trial", "params", "precision", "search_throughput", "speedup", "low", "high",
             "pairs", "winner", "why", "changes", "batch_size", "energy_per_unit_j")
EFFECT = ("knob", "value", "baseline", "n_with", "n_without", "mean_with", "mean_without",
          "effect", "thin", "contradicts", "note")
PASSED_OVER = ("trial", "ratio", "low", "high", "why", "changes", "its_changes")
FAILURE = ("kind", "stop", "message", "state", "trial", "trials", "stderr_tail", "reproduce")
RECOVERY = ("state", "message", "throughput", "wall_s", "survivors")
BATCH_FOUND = ("largest_fit", "first_oom", "probes", "message", "failure", "seconds")


def _fields(obj: Any, names: Sequence[str]) -> dict[str, Any]:
    out = {}
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, tuple) and name not in ("choices",):
            value = list(value)
        out[name] = value
    return out


# --- writing -----------------------------------------------------------------------------------
def platform_dict(p: Platform) -> dict[str, Any]:
    return _fields(p, PLATFORM)


def space_dict(s: SpaceInfo) -> dict[str, Any]:
    return {"name": s.name, "size": s.size,
            "knobs": [{**_fields(k, KNOB_INFO), "choices": list(k.choices)} for k in s.knobs],
            "skipped": [{"knob": k, "reason": r} for k, r in s.skipped],
            "never_searched": [{"variable": v, "reason": r, "source": src}
                               for v, r, src in s.never_searched]}


def trial_dict(t: Trial) -> dict[str, Any]:
    out = _fields(t, TRIAL)
    for key in ("retried", "known_cause"):
        out[key] = dict(out[key]) if out[key] is not None else None
    if t.loader is not None:
        out.update(_fields(t, TRIAL_DATA))
    return out


def candidate_dict(c: Candidate) -> dict[str, Any]:
    out = _fields(c, CANDIDATE)
    out["payback"] = None if c.payback is None else {
        "one_time_s": c.payback.one_time_s, "steps": c.payback.steps,
        "minutes": c.payback.minutes}
    return out


def confirm_run_dict(r: ConfirmRun) -> dict[str, Any]:
    out: dict[str, Any] = {"trial": r.trial, "round": r.round, "throughput": r.throughput,
                           "state": r.state, "at": r.at, "wall_s": r.wall_s}
    if r.message is not None:
        out["message"] = r.message
    out["energy_per_sample_j"] = r.energy_per_sample_j
    return out


def confirmation_dict(c: Confirmation) -> dict[str, Any]:
    out: dict[str, Any] = {"status": c.status}
    if c.baseline_trial is not None:
        out["baseline_trial"] = c.baseline_trial
    out.update(candidates=[candidate_dict(x) for x in c.candidates],
               runs=[{"trial": k, "round": r, "throughput": v} for k, r, v in c.runs],
               noise_cv=c.noise_cv, rounds=c.rounds)
    if c.reason is not None:
        out["reason"] = c.reason
    out["timed_runs"] = [confirm_run_dict(r) for r in c.timed_runs]
    if c.baseline_trial is not None and c.candidates:
        out["baseline_energy_per_unit_j"] = c.baseline_energy_per_unit_j
    return out


def verdict_dict(v: Verdict) -> dict[str, Any]:
    def cand(c: Optional[Candidate]) -> Optional[dict[str, Any]]:
        return None if c is None else candidate_dict(c)

    return {"winner": v.winner, "summary": v.summary, "best_overall": cand(v.best_overall),
            "best_same_precision": cand(v.best_same_precision),
            "best_same_batch": cand(v.best_same_batch),
            "passed_over": None if v.passed_over is None else _fields(v.passed_over,
                                                                      PASSED_OVER),
            "precision": v.precision, "batch_size": v.batch_size}


def batch_search_dict(b: BatchSearch) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": list(b.sizes), "how": b.how}
    if b.how == "max-batch search":
        out.update({k: getattr(b, k) for k in BATCH_FOUND})
        out["probes"] = [list(p) for p in b.probes]
    if b.cached:
        out["cached"] = True
    return out


def to_dict(r: TuneResult) -> dict[str, Any]:
    """The tune/1 JSON of a result."""
    out: dict[str, Any] = {
        "schema": r.schema, "tool_version": r.tool_version, "created_at": r.created_at,
        "study": {"name": r.study.name, "storage": r.study.storage, "dir": r.study.dir,
                  "sampler": r.study.sampler, "seed": r.study.seed},
        "workload": r.workload.to_dict(), "platform": platform_dict(r.platform),
        "space": space_dict(r.space), "budget_s": r.budget_s, "elapsed_s": r.elapsed_s,
        "warnings": list(r.warnings), "trials": [trial_dict(t) for t in r.trials],
        "baseline": None if r.baseline is None else trial_dict(r.baseline),
        "confirmation": confirmation_dict(r.confirmation), "verdict": verdict_dict(r.verdict),
        "search": {"stopped": r.search.stopped, "why": r.search.why,
                   "queued": r.search.queued},
        "batch_search": batch_search_dict(r.batch_search),
        "effects": [_fields(e, EFFECT) for e in r.effects],
        "apply": None if r.apply is None else {"env": dict(r.apply.env),
                                               "python": list(r.apply.python),
                                               "notes": list(r.apply.notes)},
        "failure": None if r.failure is None else _fields(r.failure, FAILURE),
        "recovery": None if r.recovery is None else _fields(r.recovery, RECOVERY),
    }
    out.update({k: v for k, v in r.extra.items() if k not in out})
    return out


# --- reading -----------------------------------------------------------------------------------
def _map(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _opt_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def platform_from(d: Mapping[str, Any]) -> Platform:
    return Platform(kind=str(d.get("kind", "cpu")), torch=d.get("torch"), hip=d.get("hip"),
                    cuda=d.get("cuda"), device=str(d.get("device") or ""), arch=d.get("arch"),
                    cpu_count=int(d.get("cpu_count") or 1), torch_threads=d.get("torch_threads"),
                    device_count=int(d.get("device_count") or 0))


def space_from(d: Mapping[str, Any]) -> SpaceInfo:
    knobs = tuple(KnobInfo(name=k["name"], title=k.get("title", k["name"]),
                           kind=k.get("kind", ""), choices=tuple(k.get("choices", ())),
                           baseline=str(k.get("baseline", "")),
                           changes_numerics=bool(k.get("changes_numerics")),
                           one_time_cost=bool(k.get("one_time_cost")),
                           effect=k.get("effect", ""), source=k.get("source", ""))
                  for k in _list(d.get("knobs")))
    return SpaceInfo(name=str(d.get("name", "")), size=int(d.get("size") or 0), knobs=knobs,
                     skipped=tuple((s["knob"], s["reason"]) for s in _list(d.get("skipped"))),
                     never_searched=tuple((n["variable"], n["reason"], n.get("source", ""))
                                          for n in _list(d.get("never_searched"))))


def trial_from(d: Mapping[str, Any]) -> Trial:
    values = {k: d[k] for k in TRIAL + TRIAL_DATA if k in d}
    values["params"] = _map(d.get("params"))
    values["env"] = _map(d.get("env"))
    values["windows"] = tuple(w for w in _list(d.get("windows")))
    values["unsupported"] = _map(d.get("unsupported"))
    values["visible_devices"] = _map(d.get("visible_devices"))
    values["message"] = d.get("message") or ""
    values["stderr_tail"] = d.get("stderr_tail") or ""
    values["baseline"] = bool(d.get("baseline"))
    values["seed"] = bool(d.get("seed"))
    values["environment"] = bool(d.get("environment"))
    return Trial(**values)


def candidate_from(d: Mapping[str, Any]) -> Candidate:
    back = d.get("payback")
    return Candidate(trial=int(d["trial"]), params=_map(d.get("params")),
                     precision=d.get("precision"), search_throughput=d.get("search_throughput"),
                     speedup=d.get("speedup"), low=d.get("low"), high=d.get("high"),
                     pairs=int(d.get("pairs") or 0), winner=bool(d.get("winner")),
                     why=str(d.get("why", "")), changes=_map(d.get("changes")),
                     batch_size=d.get("batch_size"),
                     energy_per_unit_j=d.get("energy_per_unit_j"),
                     payback=None if not back else Payback(float(back["one_time_s"]),
                                                           int(back["steps"]),
                                                           float(back["minutes"])))


def confirm_run_from(d: Mapping[str, Any]) -> ConfirmRun:
    return ConfirmRun(trial=int(d["trial"]), round=int(d["round"]),
                      throughput=d.get("throughput"), state=str(d.get("state", "ok")),
                      at=d.get("at"), wall_s=d.get("wall_s"),
                      energy_per_sample_j=d.get("energy_per_sample_j"), message=d.get("message"))


def confirmation_from(d: Mapping[str, Any]) -> Confirmation:
    return Confirmation(
        status=str(d.get("status", "")),
        candidates=tuple(candidate_from(c) for c in _list(d.get("candidates"))),
        runs=tuple((int(r["trial"]), int(r["round"]), r.get("throughput"))
                   for r in _list(d.get("runs"))),
        noise_cv=d.get("noise_cv"), rounds=int(d.get("rounds") or 0),
        baseline_trial=d.get("baseline_trial"), reason=d.get("reason"),
        timed_runs=tuple(confirm_run_from(r) for r in _list(d.get("timed_runs"))),
        baseline_energy_per_unit_j=d.get("baseline_energy_per_unit_j"))


def verdict_from(d: Mapping[str, Any]) -> Verdict:
    def cand(key: str) -> Optional[Candidate]:
        value = d.get(key)
        return candidate_from(value) if value else None

    over = d.get("passed_over")
    return Verdict(winner=bool(d.get("winner")), summary=str(d.get("summary", "")),
                   best_overall=cand("best_overall"),
                   best_same_precision=cand("best_same_precision"),
                   best_same_batch=cand("best_same_batch"),
                   passed_over=None if not over else PassedOver(
                       trial=int(over["trial"]), ratio=float(over["ratio"]),
                       low=over.get("low"), high=over.get("high"), why=str(over["why"]),
                       changes=int(over["changes"]), its_changes=int(over["its_changes"])),
                   precision=str(d.get("precision", "")), batch_size=d.get("batch_size"),
                   same_batch_known="best_same_batch" in d)


def batch_search_from(d: Mapping[str, Any]) -> BatchSearch:
    return BatchSearch(sizes=tuple(int(s) for s in _list(d.get("sizes"))),
                       how=str(d.get("how", "not planned")), largest_fit=d.get("largest_fit"),
                       first_oom=d.get("first_oom"),
                       probes=tuple((int(p[0]), str(p[1])) for p in _list(d.get("probes"))),
                       message=d.get("message"), failure=d.get("failure"),
                       seconds=_opt_float(d.get("seconds")), cached=d.get("cached"))


def effect_from(d: Mapping[str, Any]) -> Effect:
    return Effect(knob=str(d["knob"]), value=str(d["value"]), baseline=bool(d.get("baseline")),
                  n_with=int(d.get("n_with") or 0), n_without=int(d.get("n_without") or 0),
                  mean_with=float(d.get("mean_with") or 0.0),
                  mean_without=float(d.get("mean_without") or 0.0),
                  effect=float(d.get("effect") or 0.0), thin=bool(d.get("thin")),
                  contradicts=bool(d.get("contradicts")), note=str(d.get("note") or ""))


def failure_from(d: Optional[Mapping[str, Any]]) -> Optional[Failure]:
    if not d:
        return None
    return Failure(kind=str(d.get("kind", "")), stop=str(d.get("stop", "")),
                   message=str(d.get("message", "")), state=d.get("state"),
                   trial=d.get("trial"), trials=tuple(_list(d.get("trials"))),
                   stderr_tail=str(d.get("stderr_tail") or ""), reproduce=d.get("reproduce"))


def recovery_from(d: Optional[Mapping[str, Any]]) -> Optional[Recovery]:
    if not d:
        return None
    return Recovery(state=str(d.get("state", "")), message=str(d.get("message", "")),
                    throughput=d.get("throughput"), wall_s=d.get("wall_s"),
                    survivors=d.get("survivors"))


def from_dict(d: Mapping[str, Any]) -> TuneResult:
    """A result read from tune/1 JSON (of this or an older version)."""
    study = _map(d.get("study"))
    search = _map(d.get("search"))
    apply = d.get("apply")
    return TuneResult(
        schema=str(d.get("schema", "")), tool_version=str(d.get("tool_version", "")),
        created_at=str(d.get("created_at", "")),
        study=Study(name=str(study.get("name", "")), storage=str(study.get("storage", "")),
                    dir=str(study.get("dir", "")), sampler=str(study.get("sampler", "")),
                    seed=int(study.get("seed") or 0)),
        workload=BenchSpec.from_dict(_map(d.get("workload"))),
        platform=platform_from(_map(d.get("platform"))), space=space_from(_map(d.get("space"))),
        budget_s=float(d.get("budget_s") or 0.0), elapsed_s=float(d.get("elapsed_s") or 0.0),
        warnings=tuple(_list(d.get("warnings"))),
        trials=tuple(trial_from(t) for t in _list(d.get("trials"))),
        baseline=trial_from(d["baseline"]) if d.get("baseline") else None,
        confirmation=confirmation_from(_map(d.get("confirmation"))),
        verdict=verdict_from(_map(d.get("verdict"))),
        search=Search(stopped=search.get("stopped"), why=str(search.get("why") or ""),
                      queued=int(search.get("queued") or 0)),
        batch_search=batch_search_from(_map(d.get("batch_search"))),
        effects=tuple(effect_from(e) for e in _list(d.get("effects"))),
        apply=None if not apply else Apply(env=_map(apply.get("env")),
                                           python=tuple(apply.get("python") or ()),
                                           notes=tuple(apply.get("notes") or ())),
        failure=failure_from(d.get("failure")), recovery=recovery_from(d.get("recovery")),
        extra={k: v for k, v in d.items() if k not in TOP})
