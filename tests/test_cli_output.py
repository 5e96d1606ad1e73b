"""What a person reads from the real CLI (in a subprocess, on this machine without a GPU):
an interpreter that is not Python, a hanging probe cut off with its whole process group,
progress while a command hangs, fix commands that are never broken, --quiet, colour."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional

import pytest

pytestmark = pytest.mark.e2e

# torch-install's fix for a torch that does not import here (with --force-reinstall when pip's
# metadata says it is installed).
PIP_CPU = re.compile(r"^       \$ pip install (--force-reinstall )?torch torchvision --index-url "
                     r"https://download\.pytorch\.org/whl/cpu$")


def rocmdoctor(*args: str, env: Optional[dict[str, str]] = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def python_without_torch(tmp_path: Path) -> str:
    """This interpreter with a `torch` whose import fails (a broken install)."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text('raise ImportError("libtorch_cpu.so: cannot '
                                                'open shared object file")\n')
    return script(tmp_path / "python", f'PYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --- --python naming a program that is not Python ------------------------------------------------

@pytest.mark.parametrize("kind", ["false", "noise"])
def test_a_program_that_is_not_python_is_named_so(tmp_path: Path, kind: str) -> None:
    program = "/bin/false" if kind == "false" else script(
        tmp_path / "train-env", "echo 'activating the environment...'\necho warming up >&2\n")
    r = rocmdoctor("check", "--python", program, "--only", "torch-install", "-v")
    assert r.returncode == 1, r.stdout + r.stderr
    said = "; it printed nothing" if kind == "false" else "; its last line: warming up"
    status = 1 if kind == "false" else 0
    flat = " ".join(r.stdout.split())
    assert f"[✗] torch-install {program} is not a Python interpreter (" in flat  # then its time
    assert (f"error: {program} is not a Python interpreter: it ran the probe script and exited "
            f"with status {status} without one line of the probe's output{said}") in flat
    assert "       $ rocmdoctor check --python /path/to/venv/bin/python" in r.stdout.splitlines()
    assert "Reinstall" not in r.stdout and "pip install" not in r.stdout


# --- the probe's timeout: --timeout, and its whole process group ---------------------------------

def test_a_hanging_probe_is_cut_at_timeout_with_its_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hang = script(tmp_path / "python", f"""\
        sleep 300 &
        echo $$ $! > {pids}
        exec sleep 301
        """)
    start = time.monotonic()
    r = rocmdoctor("check", "--python", hang, "--timeout", "2", "--only", "torch-install")
    took = time.monotonic() - start
    assert r.returncode == 1
    assert "the PyTorch probe failed: the probe did not finish within 2 s (before reporting" \
        in " ".join(r.stdout.split())
    assert took < 30, took  # not the probe's default 60 s
    shell, background = (int(p) for p in pids.read_text().split())
    deadline = time.monotonic() + 5
    while (alive(shell) or alive(background)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(shell), "the probe's interpreter outlived its timeout"
    assert not alive(background), "a child the probe started outlived the probe's timeout"


# --- progress on stderr ----------------------------------------------------------------------------

def test_plain_progress_lines_while_the_probe_hangs(tmp_path: Path) -> None:
    hang = script(tmp_path / "python", "exec sleep 300\n")
    r = rocmdoctor("check", "--python", hang, "--timeout", "9", "--only", "torch-install")
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("rocmdoctor: waiting for")]
    # the first after 2 s of silence (3 s when a loaded machine wakes the poll late)
    first = re.fullmatch(r"rocmdoctor: waiting for the Python probe \(importing torch\) "
                         r"\(([23]) s\)", lines[0]) if lines else None
    assert first, r.stderr
    # No more than one line every five seconds about the probe: at 2 s and 7 s in a 9 s
    # wait. Once it is cut off, a loaded machine may take a moment to finish the check: that
    # wait is named as the checks', at most once.
    probe = [ln for ln in lines if ln.startswith("rocmdoctor: waiting for the Python probe")]
    assert 1 <= len(probe) <= 2, lines
    rest = [ln for ln in lines if ln not in probe]
    assert len(rest) <= 1 and all(
        re.fullmatch(r"rocmdoctor: waiting for the checks \(\d+ s\)", ln) for ln in rest), lines


@pytest.mark.parametrize("tool", ["rocm-smi", "amd-smi", "nvidia-smi"])
def test_report_says_which_command_it_waits_for(tmp_path: Path, tool: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / tool, "exec sleep 300\n")
    r = rocmdoctor("report", "--format", "json", "--timeout", "3",
                   env={"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
    assert r.returncode == 0, r.stderr
    assert any(ln.startswith(f"rocmdoctor: waiting for {tool}") for ln in r.stderr.splitlines()), \
        r.stderr
    report = json.loads(r.stdout)  # stdout is the report and nothing else
    assert "(timed out)" in json.dumps(report["raw"])
    assert "rocmdoctor: waiting" not in r.stdout


def test_bench_compile_says_it_compiles_and_how_long_so_far() -> None:
    """The first steps of a compiled model can take minutes: stderr says it is compiling,
    then the time so far every 5 s (the worker hangs where the first step would compile)."""
    r = rocmdoctor("bench", "--model", "tinycnn", "--device", "cpu", "--image-size", "16",
                   "--batch-size", "4", "--steps", "5", "--warmup", "1", "--compile",
                   "--timeout", "25", env={"ROCMDOCTOR_TEST_FAULT": "hang"})
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert "rocmdoctor: compiling tinycnn with torch.compile (first steps)" in lines, r.stderr
    after = lines[lines.index("rocmdoctor: compiling tinycnn with torch.compile (first steps)"):]
    waits = [int(m.group(1)) for ln in after
             if (m := re.fullmatch(r"rocmdoctor: waiting for torch\.compile \(first steps\) "
                                   r"\((\d+) s\)", ln))]
    assert len(waits) >= 2 and waits == sorted(waits) and waits[-1] > waits[0], r.stderr
    assert lines[-1].startswith("rocmdoctor: error: the benchmark timed out: no result within 25 s")


def _run_on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 120
                       ) -> tuple[int, str]:
    """Run rocmdoctor with stdout and stderr on a pseudo-terminal; (exit status, all output)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rocmdoctor", *args], stdin=subprocess.DEVNULL,
                            stdout=terminal, stderr=terminal, env={**os.environ, **env})
    os.close(terminal)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.5)
        if ready:
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal closed: the child has exited
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(controller)
    return proc.wait(timeout=10), b"".join(chunks).decode("utf-8", "replace")


def test_live_progress_line_on_a_terminal_is_cleared_at_the_end(tmp_path: Path) -> None:
    hang = script(tmp_path / "python", "exec sleep 300\n")
    code, text = _run_on_a_terminal(
        ["check", "--python", hang, "--timeout", "4", "--only", "torch-install"],
        {"NO_COLOR": "1", "COLUMNS": "100"})
    assert code == 1
    assert re.search(r"\r\x1b\[Kwaiting for the Python probe \(importing torch\) \([23] s\)",
                     text), repr(text[:300])
    assert "rocmdoctor: waiting" not in text  # the plain lines are for logs
    before_report = text.split("rocmdoctor 0.1.0")[0]
    assert before_report.endswith("\r\x1b[K"), repr(before_report[-80:])


# --- colour ------------------------------------------------------------------------------------------

def test_colour_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    args = ["check", "--only", "os-release,debug-env"]
    code, coloured = _run_on_a_terminal(args, {"COLUMNS": "100", "NO_COLOR": ""})
    assert code == 0 and "\x1b[" in coloured
    code, plain = _run_on_a_terminal(args, {"COLUMNS": "100", "NO_COLOR": "1"})
    assert code == 0 and "\x1b[" not in plain and "[✓] os-release" in plain
    piped = rocmdoctor(*args, env={"NO_COLOR": ""})
    assert "\x1b[" not in piped.stdout


# --- fix commands whole, "How to fix", --quiet ---------------------------------------------------

def test_piped_output_never_breaks_a_command(tmp_path: Path) -> None:
    python = python_without_torch(tmp_path)
    for columns in ("100", "50"):
        r = rocmdoctor("check", "--python", python, env={"COLUMNS": columns})
        assert r.returncode == 1
        lines = r.stdout.splitlines()
        assert any(PIP_CPU.match(ln) for ln in lines), r.stdout
        fixes = lines[lines.index("How to fix (in this order):"):]
        assert fixes[1].startswith("  1. torch-install: Reinstall PyTorch with the pip"), fixes
        prose = [ln for ln in fixes[1:] if not ln.lstrip().startswith("$") and ln.strip()
                 and not ln[0].isdigit() and ln.startswith("  ")]
        assert all(len(ln) <= int(columns) or " " not in ln.strip() for ln in prose), prose
        # Checks skipped for the failure are named once, above the fixes.
        assert any(ln.startswith("not run because torch-install failed:") for ln in lines)


def test_quiet_prints_only_problems_and_their_fixes(tmp_path: Path) -> None:
    python = python_without_torch(tmp_path)
    r = rocmdoctor("check", "--quiet", "--python", python, env={"COLUMNS": "100"})
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("[✗] torch-install  torch "), lines
    assert "but does not import" in " ".join(r.stdout.split())
    assert not any(ln.startswith(("[✓]", "[-]", "rocmdoctor ")) for ln in lines), r.stdout
    assert any(PIP_CPU.match(ln) for ln in lines), r.stdout
    assert r.stderr == ""  # no progress lines in a log with --quiet
    calm = rocmdoctor("check", "-q", "--only", "os-release,debug-env")
    assert (calm.returncode, calm.stdout) == (0, "")


# --- the report's collect_env fields, as torch's collect_env finds them --------------------------

def test_report_fills_collect_envs_fields_as_collect_env_does() -> None:
    collect_env = pytest.importorskip("torch.utils.collect_env")
    r = rocmdoctor("report", "--format", "json")
    assert r.returncode == 0, r.stderr
    fields = json.loads(r.stdout)["collect_env"]
    info = collect_env.get_env_info()
    assert fields["Libc version"] == info.libc_version
    assert fields["Python platform"] == info.python_platform
    # collect_env finds no cuDNN in a CPU build of torch (it prints "Could not collect").
    assert fields["cuDNN version"] == (info.cudnn_version or "n/a")
    assert fields["PyTorch version"] == info.torch_version
