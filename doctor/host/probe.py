"""The Python/PyTorch probe: runs `probe_child.py` in a child process of the Python that trains.

The child is run by path with the target interpreter (so a foreign interpreter without
rocmdoctor works) and without `-I`: a training script sees PYTHONPATH and the user site
(`pip install --user torch`), so the probe must too. A crash (negative return code), a hang
(the timeout), an import error or output that is not JSON all become a result dict whose
`torch.error` says why; rocmdoctor itself never raises here.

`make_probe` starts the child at once in a background thread, so importing torch overlaps
with the machine checks; `Host.python()` then waits for it (memoized by LiveHost).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from rocmdoctor.host import CommandResult
from rocmdoctor.host.process import run_command

PROBE_TIMEOUT_S = 60.0
CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_child.py")
PARTIAL_MARK = "ROCMDOCTOR_PROBE_PARTIAL "  # keep equal to probe_child.PARTIAL_MARK

ProbeFn = Callable[[], Optional[dict[str, Any]]]

_STAGES = {
    "start": "before reading anything",
    "packages": "while reading package versions",
    "import": "while importing torch",
    "info": "while reading torch's build information",
    "init": "while initialising the GPU runtime (torch.cuda.is_available)",
    "devices": "while reading the device properties",
    "done": "after reporting its result",
}


def describe_stage(stage: Optional[str]) -> str:
    if stage and stage.startswith("smoke:"):
        return f"while running the smoke test on device {stage.split(':', 1)[1]}"
    return _STAGES.get(stage or "", "before reporting anything")


def probe_argv(python: str, smoke: bool = True) -> list[str]:
    return [python, CHILD_SCRIPT, "--parent-pid", str(os.getpid()),
            *(() if smoke else ("--no-smoke",))]


def _json_object(text: str) -> Optional[dict[str, Any]]:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _final_result(stdout: str) -> Optional[dict[str, Any]]:
    """The child's result: the last stdout line that is a JSON object with a `torch` key."""
    for line in reversed(stdout.splitlines()):
        value = _json_object(line.strip())
        if value is not None and isinstance(value.get("torch"), dict):
            return value
    return None


def _last_partial(stderr: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """The last complete progress report on stderr: (result so far, stage)."""
    for line in reversed(stderr.splitlines()):
        if not line.startswith(PARTIAL_MARK):
            continue
        value = _json_object(line[len(PARTIAL_MARK):])
        if value is None:
            continue  # a line cut short by the crash
        result = value.get("result")
        stage = value.get("stage")
        return (result if isinstance(result, dict) else None,
                stage if isinstance(stage, str) else None)
    return None, None


def _last_stderr_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines()
             if ln.strip() and not ln.startswith(PARTIAL_MARK)]
    return lines[-1][:300] if lines else ""


# What a Python interpreter prints when it ran but could not run the probe script (too old for
# its syntax, a broken site-packages): such an interpreter is a Python, only not a usable one.
_PYTHON_SAID = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]*\", line \d+|Fatal Python error"
    r"|^[A-Z]\w*(?:Error|Exception|Warning)(?::|$)", re.MULTILINE)


def _not_python(res: CommandResult, stage: Optional[str]) -> bool:
    """The program ran and ended by itself without one progress line of the probe, and said
    nothing a Python interpreter says: it is not Python (`/bin/false`, a script of its own).
    A Python prints its first progress line before it reads anything."""
    if stage is not None or res.timed_out or res.returncode < 0 or res.returncode in (126, 127):
        return False
    return _PYTHON_SAID.search(res.stderr) is None and _PYTHON_SAID.search(res.stdout) is None


def _output_line(res: CommandResult) -> str:
    """The last line the program printed, stdout or stderr, for the evidence."""
    for text in (res.stderr, res.stdout):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[-1][:300]
    return ""


def _not_python_reason(python: str, res: CommandResult) -> str:
    said = _output_line(res)
    return (f"{python} is not a Python interpreter: it ran the probe script and exited with "
            f"status {res.returncode} without one line of the probe's output"
            + (f"; its last line: {said}" if said else "; it printed nothing"))


def _signal_name(returncode: int) -> str:
    try:
        return f"{signal.Signals(-returncode).name} (signal {-returncode})"
    except ValueError:
        return f"signal {-returncode}"


def _failure_reason(python: str, res: CommandResult, stage: Optional[str],
                    timeout: float) -> str:
    where = describe_stage(stage)
    if res.timed_out:
        return f"the probe did not finish within {timeout:g} s ({where})"
    if res.returncode == 127:
        return f"cannot run {python}: no such interpreter (or it is not executable)"
    if res.returncode == 126:
        return f"cannot run {python}: {_last_stderr_line(res.stderr) or 'permission denied'}"
    if res.returncode < 0:
        return f"the probe was killed by {_signal_name(res.returncode)} {where}"
    tail = _last_stderr_line(res.stderr)
    if res.returncode != 0:
        return f"the probe exited with status {res.returncode} {where}" + (
            f": {tail}" if tail else "")
    return "the probe printed no result" + (f": {tail}" if tail else "")


def interpret(python: str, res: CommandResult, timeout: float = PROBE_TIMEOUT_S
              ) -> dict[str, Any]:
    """Turn the child's CommandResult into the snapshot `python` section. Never raises."""
    final = _final_result(res.stdout)
    partial, stage = _last_partial(res.stderr)
    data: dict[str, Any] = final or partial or {"executable": python, "packages": {}}
    torch = data.get("torch")
    if not isinstance(torch, dict):
        torch = data["torch"] = {"imported": False, "error": None}
    data.setdefault("packages", {})
    data["probe"] = {
        "returncode": res.returncode, "timed_out": res.timed_out,
        "duration_s": round(res.duration_s, 3), "timeout_s": timeout,
        "stage": "done" if final is not None else stage,
    }
    if final is None and _not_python(res, stage):
        torch["error"] = _not_python_reason(python, res)
        torch["failed_stage"] = None
        torch.setdefault("imported", False)
        data["probe"]["not_python"] = True
    elif final is None:
        torch["error"] = _failure_reason(python, res, stage, timeout)
        torch["failed_stage"] = stage
        torch.setdefault("imported", False)
    elif res.returncode != 0:
        # The result came through, but the interpreter crashed or failed on its way out.
        data["probe"]["exit_error"] = _failure_reason(python, res, "done", timeout)
    return data


def run_probe(python: Optional[str] = None, timeout: float = PROBE_TIMEOUT_S,
              env: Optional[Mapping[str, str]] = None, smoke: bool = True) -> dict[str, Any]:
    """Run the probe now, in this thread, and return its result. `env` is the environment
    the Python that trains will have (default: this one); `smoke=False` skips the per-GPU
    matmul and conv2d check."""
    interpreter = python or sys.executable
    try:
        res = run_command(probe_argv(interpreter, smoke), timeout, env)
    except Exception as exc:  # run_command contains its own failures; this is a last guard
        res = CommandResult(returncode=126, stderr=f"{type(exc).__name__}: {exc}")
    return interpret(interpreter, res, timeout)


class BackgroundProbe:
    """A probe started at construction in a daemon thread; calling it waits for the result."""

    def __init__(self, python: Optional[str], timeout: float = PROBE_TIMEOUT_S) -> None:
        self.python = python or sys.executable
        self.timeout = timeout
        self._result: Optional[dict[str, Any]] = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rocmdoctor-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = run_probe(self.python, self.timeout)
        finally:
            self._done.set()

    def __call__(self) -> Optional[dict[str, Any]]:
        self._done.wait()
        return self._result


# The default probe, started by `start_early` before the command line is parsed.
_early: Optional[BackgroundProbe] = None


def start_early() -> None:
    """Start the default probe (this interpreter, the default timeout) now: importing torch
    is most of `check`'s time, and parsing the command line (typer, rich) need not delay
    it. `make_probe` hands it over; if nothing asks for it, it dies with rocmdoctor."""
    global _early
    if _early is None:
        _early = BackgroundProbe(None)


def make_probe(python: Optional[str], timeout: float = PROBE_TIMEOUT_S) -> Optional[ProbeFn]:
    """A callable giving the probe result for `python` (default: this interpreter).

    The child starts now (or already has, by `start_early`, when it is the default probe),
    so that importing torch overlaps with everything else; if rocmdoctor exits without
    asking, the child dies with it (PR_SET_PDEATHSIG).
    """
    global _early
    early, _early = _early, None
    if early is not None and python is None and timeout == early.timeout:
        return early
    return BackgroundProbe(python, timeout)
