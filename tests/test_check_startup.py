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


# The same run with the probe's class replaced by a spy that says whether the command line's
# libraries (typer) were imported when the child would have started.
EARLY_SPY = r'''
import sys
import rocmdoctor.host.probe as probe

class Spy:
    def __init__(self, python, timeout=probe.PROBE_TIMEOUT_S):
        print("typer imported:", "typer" in sys.modules, python, flush=True)
        raise SystemExit(0)

probe.BackgroundProbe = Spy
from rocmdoctor.cli import main
sys.argv = ["rocmdoctor", *sys.argv[1:]]
main()
'''


def early_spy_run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", EARLY_SPY, *args], capture_output=True,
                          text=True, timeout=120)
    return done.stdout.strip()


@pytest.mark.e2e
def test_the_plain_check_starts_the_probe_before_parsing_its_command_line() -> None:
    assert early_spy_run("check") == "typer imported: False None"
    assert early_spy_run("check", "--json", "-v") == "typer imported: False None"
    # options that change the probe, or whether one runs: it starts once they are parsed
    assert early_spy_run("check", f"--python={sys.executable}") == (
        f"typer imported: True {sys.executable}")
    assert early_spy_run("check", "--timeout", "30") == "typer imported: True None"
    assert early_spy_run("check", "--help").startswith("Usage")
    # other commands start no probe before their own code asks
    assert "typer imported" not in early_spy_run("report", "--help")


def test_make_probe_hands_over_the_early_probe_only_when_it_is_the_one_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import rocmdoctor.host.probe as probe

    started: list[tuple[object, float]] = []

    class Fake:
        def __init__(self, python: object, timeout: float = probe.PROBE_TIMEOUT_S) -> None:
            self.python, self.timeout = python, timeout
            started.append((python, timeout))

    monkeypatch.setattr(probe, "BackgroundProbe", Fake)
    monkeypatch.setattr(probe, "_early", None)
    probe.start_early()
    probe.start_early()  # once
    early = probe._early
    assert started == [(None, probe.PROBE_TIMEOUT_S)]
    assert probe.make_probe(None) is early
    assert probe.make_probe(None) is not early  # handed over once: a new child after that
    probe.start_early()
    other = probe.make_probe("/opt/venv/bin/python")
    assert other is not early and other.python == "/opt/venv/bin/python"
    assert probe._early is None  # a probe not asked for is never handed over later
    probe.start_early()
    assert probe.make_probe(None, 5.0).timeout == 5.0
