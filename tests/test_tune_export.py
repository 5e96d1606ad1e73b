"""Renderers of a tune result: how to apply the winner, the file `source` applies, the terminal
summary and the HTML page. The result below is what a ResNet-50 tune on an MI300X records."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from typing import Any

import pytest

from rocmdoctor.tuners import export, html
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.codec import from_dict, space_from
from rocmdoctor.tuners.result import how_to_apply as _how_to_apply

# The renderers take the result as the codec reads it from tune/1 JSON; the tests below
# build and change that JSON, then render it.


def env_file_text(r: dict[str, Any]) -> str:
    return export.env_file_text(from_dict(r))


def render_summary(r: dict[str, Any], outputs: list[str]) -> str:
    return export.render_summary(from_dict(r), outputs)


def render_html(r: dict[str, Any]) -> str:
    return html.render_html(from_dict(r))


def how_to_apply(space: dict[str, Any], *args: Any) -> dict[str, Any]:
    applied = _how_to_apply(space_from(space), *args)
    return {"env": dict(applied.env), "python": list(applied.python),
            "notes": list(applied.notes)}

SPACE: dict[str, Any] = {
    "name": "default", "size": 48,
    "knobs": [
        {"name": "precision", "choices": ["fp32", "bf16", "fp16"], "baseline": "fp32",
         "changes_numerics": True},
        {"name": "channels_last", "choices": ["off", "on"], "baseline": "off",
         "changes_numerics": False},
        {"name": "miopen_find_mode", "choices": ["default", "FAST", "NORMAL"],
         "baseline": "default", "changes_numerics": False},
        {"name": "tunableop", "choices": ["off", "on"], "baseline": "off",
         "changes_numerics": False},
    ],
    "skipped": [{"knob": "alloc", "reason": "needs torch >= 2.12 (this is 2.9.1+rocm6.4)"}],
}
DB = "/home/u/.cache/rocmdoctor/tune/resnet50-0123456789/trials/3"
WINNER_ENV = {"MIOPEN_FIND_MODE": "FAST", "MIOPEN_USER_DB_PATH": f"{DB}/miopen-db",
              "MIOPEN_CUSTOM_CACHE_DIR": f"{DB}/miopen-cache",
              "PYTORCH_TUNABLEOP_FILENAME": f"{DB}/tunableop_results%d.csv"}
WINNER = {"precision": "bf16", "channels_last": "on", "miopen_find_mode": "FAST",
          "tunableop": "on"}


def _trial(number: int, params: dict[str, str], state: str, tput: Any, **extra: Any
           ) -> dict[str, Any]:
    base = {"number": number, "params": params, "state": state, "throughput": tput,
            "unit": "images", "memory_bytes": 9.5 * 2**30, "one_time_s": 2.0,
            "message": f"{tput:,.1f} images/s" if tput else state, "baseline": number == 0,
            "started_at": 1_800_000_000.0 + 60 * number, "retry_of": None, "env": {},
            "precision": params["precision"]}
    return {**base, **extra}


def result() -> dict[str, Any]:
    baseline = {"precision": "fp32", "channels_last": "off", "miopen_find_mode": "default",
                "tunableop": "off"}
    trials = [
        _trial(0, baseline, "ok", 1234.5, energy_per_sample_j=0.4051),
        _trial(1, {**baseline, "channels_last": "on"}, "ok", 1300.0, energy_per_sample_j=0.3862),
        _trial(2, {**baseline, "precision": "fp16"}, "oom", None,
               message="out of memory at batch 256"),
        _trial(3, WINNER, "ok", 2500.0, env=WINNER_ENV, one_time_s=41.5,
               energy_per_sample_j=0.1893),
        _trial(4, {**baseline, "miopen_find_mode": "NORMAL"}, "pruned", None,
               message="pruned: <script>alert(1)</script>"),
    ]
    why = "+102.0%, 95 % interval +98.0% to +106.0%, above the run-to-run noise (0.8%)"
    cand: dict[str, Any] = {"trial": 3, "params": WINNER, "precision": "bf16", "speedup": 2.02,
            "low": 1.98, "high": 2.06, "pairs": 3, "winner": True,
            "changes": {k: v for k, v in WINNER.items() if baseline[k] != v},
            "why": why, "energy_per_unit_j": 0.1911}
    keep = {"trial": 1, "params": trials[1]["params"], "precision": "fp32", "speedup": 1.004,
            "low": 0.99, "high": 1.02, "pairs": 3, "winner": False,
            "changes": {"channels_last": "on"},
            "why": "the 95 % interval -1.0% to +2.0% includes no gain",
            "energy_per_unit_j": 0.3874}
    spec = BenchSpec(batch_size=256)
    return {
        "schema": "rocmdoctor.tune/1", "tool_version": "0.1.0",
        "created_at": "2026-11-29T12:00:00+00:00",
        "study": {"name": "resnet50-0123456789", "sampler": "TPESampler", "seed": 0},
        "workload": spec.to_dict(),
        "platform": {"kind": "rocm", "torch": "2.9.1+rocm6.4", "hip": "6.4.43482-0f2d60242",
                     "cuda": None, "device": "AMD Instinct MI300X", "arch": "gfx942"},
        "space": SPACE, "elapsed_s": 845.2, "warnings": [], "trials": trials,
        "baseline": trials[0],
        "confirmation": {"status": "done", "candidates": [cand, keep], "noise_cv": 0.008,
                         "rounds": 3, "runs": [], "baseline_energy_per_unit_j": 0.4102},
        "verdict": {"winner": True, "summary": "trial 3 (precision=bf16, channels_last=on, "
                    "miopen_find_mode=FAST, tunableop=on) is faster than your settings: "
                    + why, "best_overall": cand, "best_same_precision": None,
                    "precision": "fp32"},
        "effects": [{"knob": "precision", "value": "bf16", "effect": 0.85, "n_with": 2,
                     "n_without": 3, "baseline": False},
                    {"knob": "channels_last", "value": "on", "effect": 0.3, "n_with": 2,
                     "n_without": 3, "baseline": False},
                    {"knob": "tunableop", "value": "off", "effect": 0.05, "n_with": 1,
                     "n_without": 1, "baseline": True, "thin": True, "contradicts": True,
                     "note": "one trial against one; the confirmed best uses on instead"}],
        "apply": how_to_apply(SPACE, WINNER, WINNER_ENV, "rocm", spec),
    }


def test_how_to_apply_collects_environment_code_and_notes() -> None:
    apply = how_to_apply(SPACE, WINNER, {**WINNER_ENV, "ROCMDOCTOR_TEST_FAULT": "crash"},
                         "rocm", BenchSpec())
    assert apply == {
        "env": {**WINNER_ENV, "PYTORCH_TUNABLEOP_ENABLED": "1"},
        "python": [
            "with torch.autocast('cuda', dtype=torch.bfloat16):  # around forward + loss",
            "model = model.to(memory_format=torch.channels_last)",
            "images = images.to(memory_format=torch.channels_last)  # every batch"],
        "notes": [
            "precision fp32 -> bf16 changes numerics: check that the model still converges",
            "TunableOp replays the tuned GEMMs in PYTORCH_TUNABLEOP_FILENAME; new shapes are "
            "tuned on first use",
            "MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR point at the databases this trial "
            "tuned; they stay valid for this MIOpen version and GPU"],
    }


def test_export_file_text() -> None:
    assert env_file_text(result()) == f"""\
# rocmdoctor tune 0.1.0: resnet50, batch 256, fp32, on AMD Instinct MI300X (2026-11-29T12:00:00+00:00)
# Trial 3: +102.0% throughput over your settings (95 % interval +98.0% to +106.0%).
# Apply: source this file, then start training from the same shell.

export MIOPEN_CUSTOM_CACHE_DIR={DB}/miopen-cache
export MIOPEN_FIND_MODE=FAST
export MIOPEN_USER_DB_PATH={DB}/miopen-db
export PYTORCH_TUNABLEOP_ENABLED=1
export PYTORCH_TUNABLEOP_FILENAME={DB}/tunableop_results%d.csv

# Code-level settings: an environment file cannot set these; put them in your training script:
#   with torch.autocast('cuda', dtype=torch.bfloat16):  # around forward + loss
#   model = model.to(memory_format=torch.channels_last)
#   images = images.to(memory_format=torch.channels_last)  # every batch

# Note: precision fp32 -> bf16 changes numerics: check that the model still converges
# Note: TunableOp replays the tuned GEMMs in PYTORCH_TUNABLEOP_FILENAME; new shapes are tuned on first use
# Note: MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR point at the databases this trial tuned; they stay valid for this MIOpen version and GPU
"""  # noqa: E501


def test_export_file_sources_in_bash_with_awkward_values(tmp_path: Any) -> None:
    r = result()
    awkward = {"A_PATH": "/tmp/with space/it's $HOME `x`", "B_EMPTY": "", "C_PCT": "%d;|&"}
    r["apply"]["env"] = awkward
    path = tmp_path / "best.env"
    path.write_text(env_file_text(r), encoding="utf-8")
    done = subprocess.run(["bash", "-c", f"set -e; source '{path}'; env -0"], text=True,
                          capture_output=True, env={"PATH": os.environ["PATH"]}, timeout=30)
    assert done.returncode == 0, done.stderr
    seen = dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
    for name, value in awkward.items():
        assert seen[name] == value
    r["apply"]["env"] = {"BAD NAME": "1"}
    with pytest.raises(ValueError, match="not an environment variable name"):
        env_file_text(r)


def test_export_without_a_winner_applies_nothing() -> None:
    r = result()
    r["verdict"] = {**r["verdict"], "winner": False, "best_overall": None,
                    "summary": "no configuration beat your current settings beyond the "
                               "measured noise"}
    r["apply"] = None
    assert env_file_text(r).splitlines()[1:] == [
        "# no configuration beat your current settings beyond the measured noise.",
        "# Nothing to apply: keep your current settings."]


def test_terminal_summary() -> None:
    assert render_summary(result(), ["r.json"]) == f"""\
rocmdoctor tune: resnet50, batch 256, fp32 on AMD Instinct MI300X (ROCm 6.4.43482-0f2d60242, torch 2.9.1+rocm6.4)
study resnet50-0123456789: 5 trials (3 ok, 1 oom, 1 pruned) in 14m05s

                 throughput        energy         memory   one-time  speed-up (95 % interval)
  your settings  1,234.5 images/s  0.405 J/image  9.5 GiB  2.0 s     1.000
  trial 3 *      2,500.0 images/s  0.189 J/image  9.5 GiB  41.5 s    2.020 (+98.0% .. +106.0%)
  trial 1        1,300.0 images/s  0.386 J/image  9.5 GiB  2.0 s     1.004 (-1.0% .. +2.0%)
  (search throughput; speed-ups re-measured interleaved over 3 rounds, run-to-run noise 0.8%)
  trial 3: precision fp32 -> bf16, channels_last off -> on, miopen_find_mode default -> FAST, tunableop off -> on: +102.0%, 95 % interval +98.0% to +106.0%, above the run-to-run noise (0.8%)
  trial 1: channels_last off -> on: the 95 % interval -1.0% to +2.0% includes no gain

verdict: trial 3 (precision=bf16, channels_last=on, miopen_find_mode=FAST, tunableop=on) is faster than your settings: +102.0%, 95 % interval +98.0% to +106.0%, above the run-to-run noise (0.8%)
  energy per image: 0.191 J against 0.410 J with your settings (-53%)
  no confirmed win keeps fp32

knob effects (geometric mean of finished trials with the value vs without):
  precision = bf16      +85.0%  (n=2 vs 3)
  channels_last = on    +30.0%  (n=2 vs 3)
  tunableop = off        +5.0%  (n=1 vs 1)  (one trial against one; the confirmed best uses on instead)

apply:
  export MIOPEN_CUSTOM_CACHE_DIR={DB}/miopen-cache
  export MIOPEN_FIND_MODE=FAST
  export MIOPEN_USER_DB_PATH={DB}/miopen-db
  export PYTORCH_TUNABLEOP_ENABLED=1
  export PYTORCH_TUNABLEOP_FILENAME={DB}/tunableop_results%d.csv
  with torch.autocast('cuda', dtype=torch.bfloat16):  # around forward + loss
  model = model.to(memory_format=torch.channels_last)
  images = images.to(memory_format=torch.channels_last)  # every batch
  note: precision fp32 -> bf16 changes numerics: check that the model still converges
  note: TunableOp replays the tuned GEMMs in PYTORCH_TUNABLEOP_FILENAME; new shapes are tuned on first use
  note: MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR point at the databases this trial tuned; they stay valid for this MIOpen version and GPU

not searched: alloc (needs torch >= 2.12 (this is 2.9.1+rocm6.4))
wrote r.json
"""  # noqa: E501


def test_a_queued_trial_that_never_ran_is_not_counted_as_a_trial() -> None:
    res = result()
    res["trials"].append({"number": 5, "params": {}, "state": "waiting", "throughput": None,
                          "unit": None, "memory_bytes": None, "one_time_s": None,
                          "message": "", "baseline": False, "started_at": None,
                          "retry_of": None, "env": {}, "precision": None})
    assert "<tr><td class=n>5</td><td>-</td><td>waiting</td>" in render_html(res)
    res["search"] = {"stopped": "budget", "queued": 1,
                     "why": "the budget left no room for another trial and the confirmation"}
    lines = render_summary(res, []).splitlines()
    assert lines[1:3] == [
        "study resnet50-0123456789: 5 trials (3 ok, 1 oom, 1 pruned) in 14m05s",
        "the search ended: the budget left no room for another trial and the confirmation; "
        "1 queued configuration not run: the same command with a longer --budget measures it"]


@pytest.mark.parametrize(("stopped", "why", "queued", "line"), [
    ("space", "every configuration of the space was measured", 0,
     "the search ended: every configuration of the space was measured"),
    ("max-trials", "--max-trials was reached", 2,
     "the search ended: --max-trials was reached; 2 queued, not run: a higher --max-trials "
     "measures them"),
    # the budget, with nothing queued: no advice to rerun a command that would run nothing
    ("budget", "the budget left no room for another trial and the confirmation", 0,
     "the search ended: the budget left no room for another trial and the confirmation"),
])
def test_the_summary_says_why_the_search_ended(stopped: str, why: str, queued: int,
                                               line: str) -> None:
    res = result()
    res["search"] = {"stopped": stopped, "why": why, "queued": queued}
    for n in range(queued):
        res["trials"].append({"number": 10 + n, "params": {}, "state": "waiting",
                              "throughput": None, "unit": None, "memory_bytes": None,
                              "one_time_s": None, "message": "", "baseline": False,
                              "started_at": None, "retry_of": None, "env": {},
                              "precision": None})
    assert render_summary(res, []).splitlines()[2] == line


def test_html_page_is_self_contained_and_escaped() -> None:
    page = render_html(result())
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == 3
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "http://" not in page and "https://" not in page and "<link" not in page
    # a label longer than the room left of the bars is cut, whole in its tooltip
    full = "trial 3: precision=bf16, channels_last=on, miopen_find_mode=FAST, tunableop=on"
    assert (f'text-anchor="end">{full[:40]}\u2026<title>{full}</title></text>') in page
    assert 'text-anchor="end">trial 1: channels_last=on<title>' in page
    assert "export MIOPEN_FIND_MODE=FAST" in page
    # an effect with a note is starred in the chart and explained under it
    assert 'text-anchor="end">tunableop = off *<title>' in page
    assert ("<li>* tunableop = off: one trial against one; the confirmed best uses on "
            "instead</li>") in page
    assert "<li><b>alloc</b>: needs torch &gt;= 2.12 (this is 2.9.1+rocm6.4)</li>" in page


H200_TUNE = os.path.join(os.path.dirname(__file__), "..", "docs", "data",
                         "tune-resnet50-h200-plain-15m.json")


def test_a_home_path_is_exported_from_home_and_still_names_that_folder(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `--output` of `rocmdoctor tune --model resnet50` on an H200 (docs/benchmarks.md),
    as written: redacted, its compile caches under `~`. The export file and the summary
    write them from "$HOME": nothing personal in them, and sourced they name the folders
    in the home of whoever sources them."""
    import json

    with open(H200_TUNE, encoding="utf-8") as fh:
        r = json.load(fh)
    monkeypatch.setenv("HOME", "/home/alice")
    caches = ".cache/rocmdoctor/tune/resnet50-7c38e710f2/trials/10"
    text = env_file_text(r)
    exports = [line for line in text.splitlines() if line.startswith("export ")]
    assert exports == [
        "export PYTORCH_ALLOC_CONF=expandable_segments:True",
        f'export TORCHINDUCTOR_CACHE_DIR="$HOME"/{caches}/inductor',
        f'export TRITON_CACHE_DIR="$HOME"/{caches}/triton']
    assert "  " + exports[1] in render_summary(r, []).splitlines()
    # the same lines for the path as this account's $HOME spells it, before redaction
    r["apply"]["env"] = {"TRITON_CACHE_DIR": f"/home/alice/{caches}/triton",
                         "OTHER_HOME": "/home/alice2/x", "HOME_ITSELF": "/home/alice"}
    assert [line for line in env_file_text(r).splitlines() if line.startswith("export ")] == [
        'export HOME_ITSELF="$HOME"', "export OTHER_HOME=/home/alice2/x",
        f'export TRITON_CACHE_DIR="$HOME"/{caches}/triton']
    path = tmp_path / "best.env"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(["bash", "-c", f"set -e; source '{path}'; env -0"], text=True,
                          capture_output=True, timeout=30,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "bob")})
    assert done.returncode == 0, done.stderr
    seen = dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
    assert seen["TORCHINDUCTOR_CACHE_DIR"] == f"{tmp_path}/bob/{caches}/inductor"
    assert seen["TRITON_CACHE_DIR"] == f"{tmp_path}/bob/{caches}/triton"


def test_the_tune_command_prints_and_writes_nothing_personal(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200 result above as the tune returns it on the user's machine (the caches in
    their home, a trial's message naming their home and a token): the summary, --output,
    --export and --html hide the home, the user name and the token; the export still works."""
    import json

    from typer.testing import CliRunner

    from rocmdoctor.cli.app import app
    from rocmdoctor.tuners import tune as tune_module

    home, user, token = "/home/zelda-q", "zelda-q", "hf_" + "Q" * 34
    with open(H200_TUNE, encoding="utf-8") as fh:
        raw = fh.read().replace('"~/', f'"{home}/')
    result = json.loads(raw)
    result["trials"][4]["message"] = f"pruned at {home}/train.py with HF_TOKEN={token}"
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("USER", user)
    monkeypatch.setattr(tune_module, "run_tune", lambda *args, **kwargs: from_dict(result))
    out = {name: tmp_path / name for name in ("r.json", "best.env", "r.html")}
    done = CliRunner().invoke(app, ["tune", "--model", "resnet50", "--output", str(out["r.json"]),
                                    "--export", str(out["best.env"]),
                                    "--html", str(out["r.html"])])
    assert done.exit_code == 0, done.output
    texts = {"stdout": done.stdout, **{n: p.read_text(encoding="utf-8") for n, p in out.items()}}
    for where, text in texts.items():
        for planted in (home, user, token):
            assert planted not in text, f"{planted} in {where}"
    caches = ".cache/rocmdoctor/tune/resnet50-7c38e710f2/trials/10"
    line = f'export TORCHINDUCTOR_CACHE_DIR="$HOME"/{caches}/inductor'
    assert line in texts["best.env"].splitlines() and "  " + line in done.stdout.splitlines()
    assert "pruned at ~/train.py with HF_TOKEN=&lt;redacted&gt;" in texts["r.html"]
    assert json.loads(texts["r.json"])["apply"]["env"]["TRITON_CACHE_DIR"] == f"~/{caches}/triton"


def test_the_summary_and_the_page_say_why_the_pick_is_not_the_fastest() -> None:
    import json

    from rocmdoctor.tuners import confirm as cf

    with open(H200_TUNE, encoding="utf-8") as fh:
        r = json.load(fh)
    confirmation = from_dict(r).confirmation
    best, over = cf.pick_best([c for c in confirmation.candidates if c.winner],
                              confirmation.runs, confirmation.noise_cv)
    assert best is not None and over is not None
    from rocmdoctor.tuners.codec import candidate_dict

    r["verdict"] = {**r["verdict"], "best_overall": candidate_dict(best),
                    "passed_over": dataclasses.asdict(over)}
    line = ("  trial 2 rather than trial 10: as fast as far as the confirmation can tell "
            "(trial 10 against it: the 95 % interval -0.3% to +0.3% includes no gain), with 6 "
            "changes instead of 7")
    lines = render_summary(r, []).splitlines()
    assert lines[lines.index(next(x for x in lines if x.startswith("verdict: "))) + 1] == line
    assert f"<br>{line.strip()}</div>" in render_html(r)
    r["verdict"]["passed_over"] = None
    assert not any("rather than" in x for x in render_summary(r, []).splitlines())
