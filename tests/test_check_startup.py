"""check's start-up order: the probe (importing torch is most of check's time) starts before
the checks are imported, and the library-load child does not wait for the probe."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmdoctor.checks.registry import all_checks
from rocmdoctor.facts.libload import LIBLOAD_TOOL
from rocmdoctor.host.live import LiveHost

# Run the real CLI with the probe replaced by a spy that says whether the checks were
# imported when it started, then stops the run.
SPY = r'''
import sys
import rocmdoctor.host.probe as probe

def spy(*args, **kwargs):
    print("registry imported:", "rocmdoctor.checks.registry" in sys.modules, flush=True)
    raise SystemExit(0)

probe.make_probe = spy
from rocmdoctor.cli import main
sys.argv = ["rocmdoctor", "check", *sys.argv[1:]]
main()
'''


def spy_run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", SPY, *args], capture_output=True, text=True,
                          timeout=120)
    return done.stdout.strip()


@pytest.mark.e2e
def test_the_default_run_starts_the_probe_before_importing_the_checks() -> None:
    # Every default set reads the probe, so starting it first changes nothing but the time.
    assert any(c.uses_python for c in all_checks(False))
    assert spy_run() == "registry imported: False"
    # With --only the selection decides whether a probe is needed at all.
    assert spy_run("--only", "torch-install") == "registry imported: True"
    # no check of --only os-release reads the probe: it is never started
    assert "registry imported" not in spy_run("--only", "os-release")


@pytest.mark.live
def test_our_children_start_in_the_python_that_trains_without_waiting_for_the_probe(
        tmp_path: Path) -> None:
    def probe() -> None:
        raise AssertionError("the probe was asked for")

    host = LiveHost(probe=probe, python_executable="/opt/venv/bin/python")
    assert host._resolve([LIBLOAD_TOOL])[0] == "/opt/venv/bin/python"
    # A prefetched command runs once; run() with the same argv gets its result.
    marker = tmp_path / "runs"
    script = f"echo x >> {marker}; sleep 0.3; echo done"
    host.prefetch(["sh", "-c", script])
    start = time.monotonic()
    result = host.run(["sh", "-c", script])
    assert (result.returncode, result.stdout) == (0, "done\n")
    assert time.monotonic() - start < 5
    assert marker.read_text() == "x\n"
    assert len(host.recording.commands) == 1
