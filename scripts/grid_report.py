"""The exhaustive grid's figures from its study database, against a tune's pick.

    python scripts/grid_report.py GRID.db [--study grid-resnet50] [--tune tune.json]
        [--json docs/data/grid-resnet50-h200x2.json --what "..."]

Prints: configurations measured of the space, those not yet measured, the ten fastest, the
grid's cost (every trial's own duration, interrupted ones included, summed: GPU-seconds, as if
one GPU ran them all; see durations() for a trial a stopped part left running), and, given a
tune's --output, where its pick ranks, how far it is from the grid's best as the grid measured
both, and the tune's time as a share of the grid's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from typing import Any

import optuna

from rocmdoctor.tuners import study as sd
from rocmdoctor.tuners.codec import trial_dict

MEASURED = ("ok", "pruned")  # a pruned trial was measured until clearly slower than the best


def load(db: str, study: str) -> list[tuple[optuna.trial.FrozenTrial, dict[str, Any]]]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    loaded = optuna.load_study(study_name=study, storage=f"sqlite:///{db}")
    return [(t, trial_dict(sd.read_trial(t))) for t in loaded.get_trials(deepcopy=False)]


def durations(trials: list[optuna.trial.FrozenTrial]) -> list[float]:
    """Each trial's run time in seconds. A trial that outlived its own timeout was left running
    by a part that stopped and marked failed when the next part recovered it, hours later: it
    ran until the last other trial that ended before that recovery (a stop ends every trial of
    its part at once), and never longer than its timeout."""
    ends = sorted(t.datetime_complete for t in trials if t.datetime_complete is not None)
    out = []
    for t in trials:
        if t.datetime_start is None or t.datetime_complete is None:
            out.append(0.0)
            continue
        seconds = (t.datetime_complete - t.datetime_start).total_seconds()
        started, deadline = t.user_attrs.get("started_at"), t.user_attrs.get("deadline_at")
        if isinstance(started, (int, float)) and isinstance(deadline, (int, float)) \
                and seconds > deadline - started:
            before = [e for e in ends if t.datetime_start <= e < t.datetime_complete]
            seconds = min(deadline - started, (max(before) - t.datetime_start).total_seconds()
                          if before else deadline - started)
        out.append(seconds)
    return out


def report(trials: list[tuple[optuna.trial.FrozenTrial, dict[str, Any]]],
           tune: dict[str, Any] | None) -> dict[str, Any]:
    choices: dict[str, list[str]] = {}
    for frozen, _ in trials:
        for name, dist in frozen.distributions.items():
            choices[name] = [str(c) for c in dist.choices]  # type: ignore[attr-defined]
    names = sorted(choices)
    space = [dict(zip(names, combo)) for combo in itertools.product(*(choices[n] for n in names))]
    measured = {sd.params_key(t["params"]): t for _, t in trials if t["state"] in MEASURED}
    ok = sorted((t for t in measured.values() if t["state"] == "ok"),
                key=lambda t: -t["throughput"])
    best = ok[0]
    out: dict[str, Any] = {
        "space_size": len(space), "measured": len(measured),
        "ok": len(ok), "pruned": len(measured) - len(ok),
        "not_measured": [p for p in space if sd.params_key(p) not in measured],
        "trials_run": len(trials),
        "gpu_seconds": round(sum(durations([f for f, _ in trials])), 1),
        "best": {"params": best["params"], "images_per_s": best["throughput"]},
        "fastest": [{"params": t["params"], "images_per_s": t["throughput"]} for t in ok[:10]],
    }
    if tune:
        pick = tune["verdict"]["best_overall"]
        in_grid = measured.get(sd.params_key(pick["params"]))
        out["tune"] = {
            "params": pick["params"], "tune_images_per_s": pick["search_throughput"],
            "elapsed_s": tune["elapsed_s"],
            "share_of_grid_time": round(tune["elapsed_s"] / out["gpu_seconds"], 4),
        }
        if in_grid and in_grid["state"] == "ok":
            out["tune"].update(
                grid_images_per_s=in_grid["throughput"],
                grid_rank=1 + sum(t["throughput"] > in_grid["throughput"] for t in ok),
                below_grid_best=round(1 - in_grid["throughput"] / best["throughput"], 4))
    return out


def raw(trials: list[tuple[optuna.trial.FrozenTrial, dict[str, Any]]], what: str
        ) -> dict[str, Any]:
    seconds = durations([f for f, _ in trials])
    return {"what": what, "trials": [
        {"number": t["number"], "optuna_state": f.state.name, "state": t["state"],
         "params": t["params"], "images_per_s": t["throughput"], "p10": t["p10"],
         "p90": t["p90"], "windows": t["windows"],
         "energy_per_sample_j": t["energy_per_sample_j"], "wall_s": t["wall_s"],
         "duration_s": round(s, 3), "gpu": t["gpu"], "message": t["message"]}
        for (f, t), s in zip(trials, seconds)]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--study", default="grid-resnet50")
    parser.add_argument("--tune", help="a tune's --output JSON")
    parser.add_argument("--json", help="write every trial's raw figures here")
    parser.add_argument("--what", default="", help="what the raw figures are (with --json)")
    args = parser.parse_args(argv)
    trials = load(args.db, args.study)
    tune = None
    if args.tune:
        with open(args.tune, encoding="utf-8") as fh:
            tune = json.load(fh)
    print(json.dumps(report(trials, tune), indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(raw(trials, args.what), fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
