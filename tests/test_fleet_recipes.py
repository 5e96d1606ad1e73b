"""The collection recipes of docs/fleet.md, run as written with stand-ins for srun and ssh.

The fake `srun` runs its command once per node with SLURMD_NODENAME set, as srun does for
one task per node; the fake `ssh` runs the remote command here through a shell with the host
name in FAKE_SSH_HOST. A `rocmdoctor` first on PATH replays the snapshot of the node it
"runs on" (`check --from <node>.json ...`), so the recipe lines themselves stay untouched.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rocmdoctor.host.snapshot import save_snapshot
from tests.golden import assert_golden
from tests.test_fleet import GOLDEN, mi300x

pytestmark = pytest.mark.e2e

DOC = Path(__file__).parent.parent / "docs" / "fleet.md"
NODES = ("node01", "node02", "node03")

SRUN = """#!/bin/bash
# One task per node of the allocation ($FAKE_NODES), like srun --ntasks-per-node=1.
[ "$1" = "--ntasks-per-node=1" ] || { echo "fake srun: unexpected $1" >&2; exit 2; }
shift
worst=0
for node in $FAKE_NODES; do
  SLURMD_NODENAME="$node" "$@"
  rc=$?
  [ "$rc" -gt "$worst" ] && worst=$rc
done
exit "$worst"
"""
SSH = """#!/bin/bash
# The remote command runs here, joined by spaces and through a shell, as sshd would run it.
host="$1"
shift
FAKE_SSH_HOST="$host" exec bash -c "$*"
"""
ROCMDOCTOR = """#!/bin/bash
# rocmdoctor on the node this runs on: `check` replays that node's snapshot.
node="${SLURMD_NODENAME:-$FAKE_SSH_HOST}"
if [ "$1" = check ]; then
  shift
  exec PYTHON -m rocmdoctor check --from "$SNAPSHOTS/$node.json" "$@"
fi
exec PYTHON -m rocmdoctor "$@"
"""


def recipes() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- recipe: (\w+) -->\n```sh\n(.*?)\n```", text, re.DOTALL))


def test_the_doc_has_both_recipes() -> None:
    found = recipes()
    assert sorted(found) == ["slurm", "ssh"]
    assert "rocmdoctor check --json -o reports/%N.json" in found["slurm"]
    assert "rocmdoctor fleet summarize reports/*.json" in found["ssh"]


def setup_nodes(tmp_path: Path) -> dict[str, str]:
    """Shims on PATH and one snapshot per node: two healthy MI300X nodes, one whose user
    cannot open /dev/kfd."""
    bin_dir, snaps = tmp_path / "bin", tmp_path / "snapshots"
    bin_dir.mkdir()
    snaps.mkdir()
    shims = {"srun": SRUN, "ssh": SSH,
             "rocmdoctor": ROCMDOCTOR.replace("PYTHON", shlex.quote(sys.executable))}
    for name, body in shims.items():
        path = bin_dir / name
        path.write_text(body, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    for name in NODES:
        save_snapshot(mi300x(kfd_denied=name == "node03"), str(snaps / f"{name}.json"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "FAKE_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", SNAPSHOTS=str(snaps),
               FAKE_NODES=" ".join(NODES))
    return env


@pytest.mark.parametrize("name", ["slurm", "ssh"])
def test_recipe_runs_as_written(tmp_path: Path, name: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = setup_nodes(tmp_path)
    r = subprocess.run(["bash", "-c", recipes()[name]], cwd=work, env=env, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert sorted(os.listdir(work / "reports")) == [f"{n}.json" for n in NODES]
    assert (r.returncode, r.stderr) == (1, "")  # node03 fails kfd-access
    assert_golden(GOLDEN / "recipe.txt", r.stdout)


def test_the_documented_tune_options_exist() -> None:
    r = subprocess.run([sys.executable, "-m", "rocmdoctor", "tune", "--help"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0
    assert "--study" in r.stdout and "--storage" in r.stdout
