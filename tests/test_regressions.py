"""Regressions once missed by the suite (one-line bugs put into a copy of the code survived
it), each held here through the entry point a user or the tuner goes through: the
`rocmdoctor check` command replaying a snapshot, the tuner's confirmation as the tune calls
it, and `rocmdoctor tune` with a budget that binds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from typer.testing import CliRunner

from rocmdoctor.cli.app import app
from rocmdoctor.tuners import confirm as cf
from rocmdoctor.tuners.model import Trial
from tests.helpers import char_dev, make_snapshot

ETC_GROUP = "root:x:0:\nvideo:x:44:\nrender:x:110:\nalice:x:1000:\n"
AMDGPU = {"/sys/module/amdgpu": {"type": "dir", "mode": "0755"}}
ROCM = {"/opt/rocm/.info/version": "6.2.1\n", "/etc/group": ETC_GROUP}


def check_json(tmp_path: Path, snapshot: dict[str, Any], only: str) -> dict[str, Any]:
    """`rocmdoctor check --json --from SNAPSHOT --only ID`: that check's result."""
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot), encoding="utf-8")
    r = CliRunner().invoke(app, ["check", "--json", "--from", str(path), "--only", only])
    assert r.exit_code in (0, 1), r.output
    return next(c for c in json.loads(r.stdout)["checks"] if c["id"] == only)


def kfd_snapshot(kfd: dict[str, Any], groups: list[str]) -> dict[str, Any]:
    return make_snapshot(files=ROCM, paths={"/dev/kfd": kfd, "/dev/dri/renderD128": char_dev(),
                                            **AMDGPU},
                         user={"name": "alice", "uid": 1000, "groups": ["alice", *groups]})


def commands(result: dict[str, Any]) -> Optional[list[str]]:
    return None if result["fix"] is None else list(result["fix"]["commands"])


# --- kfd-access ----------------------------------------------------------------------------------

def test_kfd_readable_but_not_writable_fails(tmp_path: Path) -> None:
    """The ROCm runtime opens /dev/kfd read-write: readable alone is not access."""
    result = check_json(tmp_path, kfd_snapshot(char_dev(writable=False), ["render", "video"]),
                        "kfd-access")
    assert result["status"] == "fail"
    assert result["summary"] == "alice cannot open /dev/kfd (group render, mode 0660)"
    # alice is in render by name: the mode allows the group, so something else blocks it
    assert commands(result) == ["getfacl /dev/kfd",
                                "sudo dmesg | grep -i -E 'denied|apparmor|avc'"]
    writable = check_json(tmp_path, kfd_snapshot(char_dev(), ["render", "video"]), "kfd-access")
    assert writable["status"] == "pass"


def test_group_membership_by_numeric_gid_counts(tmp_path: Path) -> None:
    """A session whose groups have no names here (`id -G`: numbers only) is in the device's
    group when the number matches: the advice is not to add the user to render again."""
    result = check_json(tmp_path, kfd_snapshot(char_dev(readable=False, writable=False),
                                               ["110", "44"]), "kfd-access")
    assert result["status"] == "fail"
    assert commands(result) == ["getfacl /dev/kfd",
                                "sudo dmesg | grep -i -E 'denied|apparmor|avc'"]
    assert any("alice is in render and the mode allows the group" in f["text"]
               for f in result["findings"]), result["findings"]
    # Not in it by any name or number: add the user.
    other = check_json(tmp_path, kfd_snapshot(char_dev(readable=False, writable=False),
                                              ["1001"]), "kfd-access")
    assert commands(other) == ["sudo usermod -aG render,video $USER"]


# --- the tuner's confirmation ------------------------------------------------------------------

def _trial(number: int, throughput: float, baseline: bool = False) -> Trial:
    return Trial(number=number, params={"knob": str(number)}, state="ok",
                 throughput=throughput, precision="fp32", baseline=baseline)


def test_confirmation_goes_on_while_one_of_several_candidates_is_undecided() -> None:
    """Candidate 1 is settled after the minimum rounds (a steady +50 %); candidate 2 swings
    between -4 % and +8 %, an interval that holds both no gain and a gain worth having: the
    rounds go on to the maximum, as the tune calls confirm, while time allows."""
    base, steady, swinging = _trial(0, 1000.0, True), _trial(1, 1500.0), _trial(2, 1020.0)
    values = {0: lambda r: 1000.0, 1: lambda r: 1500.0,
              2: lambda r: 960.0 if r % 2 else 1080.0}
    asked: list[tuple[int, int]] = []

    def measure(t: Trial, round_index: int) -> Optional[float]:
        asked.append((t.number, round_index))
        return values[t.number](round_index)

    out = cf.confirm(base, [steady, swinging], [], measure, 3, 6, lambda keys: True)
    assert out.rounds == 6
    assert len(asked) == 18  # three configurations, six rounds
    verdicts = {c.trial: c for c in out.candidates}
    assert verdicts[1].winner is True and verdicts[1].pairs == 6
    assert verdicts[2].winner is False and verdicts[2].pairs == 6
    # the undecided one first: the same
    assert cf.confirm(base, [swinging, steady], [], measure, 3, 6,
                      lambda keys: True).rounds == 6
    # no time for another round: the minimum only
    short = cf.confirm(base, [steady, swinging], [], measure, 3, 6, lambda keys: False)
    assert short.rounds == 3
    # both settled: no extra round
    settled = cf.confirm(base, [steady, _trial(3, 1200.0)], [],
                         lambda t, r: {0: 1000.0, 1: 1500.0, 3: 1200.0}[t.number], 3, 6,
                         lambda keys: True)
    assert settled.rounds == 3


# --- the tune's budget keeps room for the confirmation ------------------------------------------

def _binding_budget_tune(tmp_path: Path, budget: int) -> tuple[subprocess.CompletedProcess[str],
                                                                 dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "ROCMDOCTOR_TESTING"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    run = tmp_path / f"budget-{budget}"
    run.mkdir()
    r = subprocess.run([sys.executable, "-m", "rocmdoctor", "tune", "--model", "tinycnn",
                        "--device", "cpu", "--batch-size", "8", "--image-size", "32",
                        "--steps", "4", "--warmup", "1", "--space", "channels_last,batch_size",
                        "--batch-sizes", "8,16,32,64", "--budget", str(budget),
                        "--confirm-top", "1", "--confirm-rounds", "12",
                        "--confirm-max-rounds", "12", "--trial-timeout", "90",
                        "--output", "r.json"],
                       cwd=run, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r, json.loads((run / "r.json").read_text(encoding="utf-8"))


@pytest.mark.e2e
def test_a_binding_budget_keeps_room_for_the_confirmation(tmp_path: Path) -> None:
    """`rocmdoctor tune --budget B` with 12 confirmation rounds. Until a configuration other
    than yours has finished, one more trial starts while it fits (there is nothing to confirm
    yet); after it (two trials of T seconds), another starts only while T more and the
    confirmation's 12 rounds of your settings and a candidate (about 24 T) still fit: it stops
    after the second trial whenever B < 27 T, and says why. A tune that kept no reserve would go
    on while one more trial fits (B > 3 T). B = 60 s tests that for any trial of 2.3 to 20 s;
    on a machine whose trial is outside that, the tune runs again with B = 9 T, a factor of
    three inside both edges."""
    r, result = _binding_budget_tune(tmp_path, 60)
    wall = [t for t in result["trials"] if t["state"] == "ok"][0]["wall_s"]
    if not 2.3 < wall < 20:
        r, result = _binding_budget_tune(tmp_path, max(round(9 * wall), 1))
    finished = [t for t in result["trials"] if t["state"] == "ok"]
    budget, walls = result["budget_s"], [t["wall_s"] for t in finished]
    assert 3 * max(walls) < budget < 27 * min(walls), \
        f"trials took {walls} s: a budget of {budget} s does not test the reserve"
    assert result["search"]["stopped"] == "budget", result["search"]
    assert [t["number"] for t in finished] == [0, 1], [(t["number"], t["state"]) for t in
                                                        result["trials"]]
    assert result["space"]["size"] == 8  # channels_last x 4 batch sizes: far from exhausted
    assert "the budget left no room for another trial and the confirmation" in r.stdout + r.stderr
