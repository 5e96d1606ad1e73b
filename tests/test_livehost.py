from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.process import run_command

pytestmark = pytest.mark.live


def _fake_bin(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}


def test_missing_executable_is_127() -> None:
    r = run_command(["rocmdoctor-no-such-tool"], timeout=5)
    assert (r.returncode, r.timed_out, r.not_found) == (127, False, True)
    assert r.stderr == "rocmdoctor-no-such-tool: command not found"


def test_output_and_exit_code(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path, "fake-rocminfo", 'echo "Agent 1"; echo oops >&2; exit 3')
    r = run_command(["fake-rocminfo"], timeout=5, env=env)
    assert (r.returncode, r.stdout, r.stderr, r.timed_out) == (3, "Agent 1\n", "oops\n", False)


def test_a_hanging_command_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child-alive"
    env = _fake_bin(tmp_path, "fake-hang",
                    f'(sleep 30; touch {marker}) & echo started; sleep 30')
    start = time.monotonic()
    r = run_command(["fake-hang"], timeout=0.5, env=env)
    assert time.monotonic() - start < 4
    assert r.timed_out and r.returncode == 124
    assert r.stdout == "started\n"


def test_live_host_records_what_it_read(tmp_path: Path) -> None:
    f = tmp_path / "version"
    f.write_text("6.3.4-76\n")
    env = _fake_bin(tmp_path, "fake-tool", "echo hi")
    host = LiveHost(environ=env)
    assert host.read_file(str(f)) == "6.3.4-76\n"
    assert host.read_file(str(tmp_path / "missing")) is None
    info = host.stat(str(f))
    assert info is not None and info.type == "file" and info.readable
    assert host.listdir(str(tmp_path)) == ["fake-tool", "version"]
    assert host.glob(str(tmp_path / "ver*")) == [str(f)]
    assert host.run(["fake-tool", "-a"]).stdout == "hi\n"
    rec = host.recording
    assert rec.files == {str(f): "6.3.4-76\n"}
    assert set(rec.paths) == {str(f)}
    assert rec.dirs == {str(tmp_path): ["fake-tool", "version"]}
    assert rec.commands["fake-tool -a"]["stdout"] == "hi\n"


def test_a_command_runs_once_per_host_even_when_asked_twice(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    env = _fake_bin(tmp_path, "fake-count", f"echo x >> {counter}")
    host = LiveHost(environ=env)
    host.run(["fake-count"])
    host.run(["fake-count"])
    assert counter.read_text() == "x\n"
