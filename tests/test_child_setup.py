"""host/child_setup.py: what every child does first (die with its parent, keep stdout for its
report), loaded by path by the child scripts that run in the Python that trains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from rocmdoctor.host import child_setup
from rocmdoctor.host.live import LIBLOAD_SCRIPT
from rocmdoctor.host.probe import CHILD_SCRIPT

SETUP = Path(child_setup.__file__)
# A child that loads child_setup.py by path, as the child scripts do, with no rocmdoctor.
LOAD = (f"import importlib.util, os, sys, time\n"
        f"spec = importlib.util.spec_from_file_location('setup', {str(SETUP)!r})\n"
        f"setup = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(setup)\n")


def _gone_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60)
    return int(done.stdout)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("argv", "pid"), [
    (["--parent-pid", "4242"], 4242),
    (["--no-smoke", "--parent-pid", "7", "x"], 7),
    (["--parent-pid"], None),
    (["--parent-pid", "me"], None),
    ([], None),
])
def test_the_parent_pid_is_read_from_the_arguments(argv: list[str], pid: Optional[int]) -> None:
    assert child_setup.parent_pid_from_argv(argv) == pid


def test_a_child_whose_parent_is_gone_exits_at_once_silently() -> None:
    code = LOAD + (f"setup.die_with_parent({_gone_pid()})\n"
                   "print('still here')\n")
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_dies_when_its_parent_is_killed() -> None:
    # parent: starts the child, prints its pid, then waits to be killed
    child = LOAD + "setup.die_with_parent(os.getppid())\ntime.sleep(60)\n"
    parent = ("import subprocess, sys, time\n"
              f"p = subprocess.Popen([sys.executable, '-I', '-c', {child!r}])\n"
              "print(p.pid, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    time.sleep(0.5)  # the child has set PR_SET_PDEATHSIG
    assert _alive(pid)
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_stdout_carries_only_the_report() -> None:
    code = LOAD + ("fd = setup.keep_stdout()\nprint('from python')\n"
                   "os.write(1, b'from a library\\n')\nsetup.hand_over(fd, 'the report\\n')\n")
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert r.stdout == "the report\n"
    assert r.stderr == "from python\nfrom a library\n"


def test_a_protocol_stream_reports_line_by_line() -> None:
    code = LOAD + ("proto = setup.protocol_stream()\nprint('noise')\n"
                   "proto.write('{\"event\": \"step\"}\\n')\nproto.flush()\n"
                   "sys.stdout.write('more noise\\n')\nproto.write('{\"event\": \"result\"}\\n')\n"
                   "proto.close()\n")
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert [json.loads(line)["event"] for line in r.stdout.splitlines()] == ["step", "result"]
    assert r.stderr == "noise\nmore noise\n"


@pytest.mark.parametrize("script", [CHILD_SCRIPT, LIBLOAD_SCRIPT])
def test_the_child_scripts_load_it_by_path(script: str) -> None:
    # -I -S: no site-packages (no rocmdoctor, no torch) and no script folder on sys.path
    r = subprocess.run([sys.executable, "-I", "-S", script, "--no-smoke", "--parent-pid",
                        str(os.getpid())], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert isinstance(data, dict) and data
    gone = subprocess.run([sys.executable, "-I", "-S", script, "--parent-pid",
                           str(_gone_pid())], capture_output=True, text=True, timeout=60)
    assert (gone.returncode, gone.stdout) == (0, "")
