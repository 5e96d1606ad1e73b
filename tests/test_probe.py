"""The Python/PyTorch probe: real child processes, broken interpreters, and result parsing."""

from __future__ import annotations

import importlib
import json
import os
import platform
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.host import CommandResult
from rocmdoctor.host.probe import (
    CHILD_SCRIPT,
    PARTIAL_MARK,
    BackgroundProbe,
    interpret,
    make_probe,
    run_probe,
)

PY = sys.executable


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _fake_torch(root: Path, init: str, version: str = "2.5.1+rocm6.2") -> Path:
    """A site folder with a `torch` package whose __init__ runs `init`, and its dist-info."""
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(init))
    info = root / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return root


def _python_with(path: Path, site: Path) -> str:
    """A 'python' that is this interpreter with `site` first on its path."""
    return _script(path, f'PYTHONPATH="{site}" exec "{PY}" "$@"')


# --- interpret(): the child's output -> the snapshot `python` section ------------------------

PARTIAL: dict[str, Any] = {"executable": "/usr/bin/python3", "version": "3.11.7",
           "packages": {"torch": "2.5.1+rocm6.2"},
           "torch": {"imported": True, "error": None, "version": "2.5.1+rocm6.2",
                     "hip": "6.2.41133-dd7f95766", "cuda": None}}


def _partial_line(stage: str) -> str:
    return PARTIAL_MARK + json.dumps({"stage": stage, "result": PARTIAL})


def test_segfault_keeps_what_was_learned_and_says_where() -> None:
    res = CommandResult(returncode=-11, stderr=_partial_line("init") + "\n" + "Segmentation "
                        "fault\n" + PARTIAL_MARK + '{"stage": "dev', duration_s=1.5)
    data = interpret("/usr/bin/python3", res, 60)
    assert data["torch"] == {
        **PARTIAL["torch"],
        "error": "the probe was killed by SIGSEGV (signal 11) while initialising the GPU "
                 "runtime (torch.cuda.is_available)",
        "failed_stage": "init",
    }
    assert data["packages"] == {"torch": "2.5.1+rocm6.2"}
    assert data["probe"] == {"returncode": -11, "timed_out": False, "duration_s": 1.5,
                             "timeout_s": 60, "stage": "init"}


def test_timeout_while_importing() -> None:
    partial = dict(PARTIAL, torch={"imported": False, "error": None})
    line = PARTIAL_MARK + json.dumps({"stage": "import", "result": partial})
    res = CommandResult(returncode=124, stderr=line, timed_out=True, duration_s=5.0)
    data = interpret("/opt/venv/bin/python", res, 5)
    assert data["torch"] == {"imported": False, "failed_stage": "import",
                             "error": "the probe did not finish within 5 s (while importing "
                                      "torch)"}
    assert data["probe"]["timed_out"] is True


def test_output_of_a_program_that_is_not_python() -> None:
    # It ended by itself without one progress line: a Python prints one before anything else.
    res = CommandResult(returncode=0, stdout="hello\n", stderr="something odd\n")
    data = interpret("/x/python", res, 60)
    assert data == {
        "executable": "/x/python", "packages": {},
        "torch": {"imported": False, "failed_stage": None,
                  "error": "/x/python is not a Python interpreter: it ran the probe script and "
                           "exited with status 0 without one line of the probe's output; its "
                           "last line: something odd"},
        "probe": {"returncode": 0, "timed_out": False, "duration_s": 0.0, "timeout_s": 60,
                  "stage": None, "not_python": True},
    }
    # stdout's last line when stderr is blank; nothing at all said so
    said = interpret("/x/python", CommandResult(returncode=3, stdout="hello\n", stderr=" \n"),
                     60)["torch"]["error"]
    assert said.endswith("exited with status 3 without one line of the probe's output; its "
                         "last line: hello")
    silent = interpret("/x/python", CommandResult(returncode=0, stdout="", stderr=""),
                       60)["torch"]["error"]
    assert silent == ("/x/python is not a Python interpreter: it ran the probe script and "
                      "exited with status 0 without one line of the probe's output; it "
                      "printed nothing")


def test_a_python_that_reported_progress_but_no_result() -> None:
    res = CommandResult(returncode=0, stdout="hello\n",
                        stderr=_partial_line("packages") + "\nsomething odd\n")
    data = interpret("/x/python", res, 60)
    assert data["torch"]["error"] == ("the probe printed no result: something odd")
    assert "not_python" not in data["probe"]


def test_a_python_too_old_for_the_probe_is_still_a_python() -> None:
    res = CommandResult(returncode=1, stderr='  File "/x/probe_child.py", line 12\n'
                        "SyntaxError: future feature annotations is not defined\n")
    data = interpret("/usr/bin/python3.6", res, 60)
    assert data["torch"]["error"] == ("the probe exited with status 1 before reporting "
                                      "anything: SyntaxError: future feature annotations is "
                                      "not defined")
    assert "not_python" not in data["probe"]


def test_missing_interpreter() -> None:
    res = CommandResult(returncode=127, stderr="/nope/python: command not found")
    data = interpret("/nope/python", res, 60)
    assert data["torch"]["error"] == ("cannot run /nope/python: no such interpreter (or it is "
                                      "not executable)")


def test_exit_status_with_traceback_tail() -> None:
    res = CommandResult(returncode=1, stderr="Traceback...\nSyntaxError: invalid syntax\n")
    data = interpret("/usr/bin/python2", res, 60)
    assert data["torch"]["error"] == ("the probe exited with status 1 before reporting "
                                      "anything: SyntaxError: invalid syntax")


def test_result_then_crash_at_exit_is_kept_with_a_note() -> None:
    final = json.dumps(PARTIAL)
    res = CommandResult(returncode=-6, stdout=final + "\n", stderr=_partial_line("done"))
    data = interpret("/usr/bin/python3", res, 60)
    assert data["torch"] == PARTIAL["torch"]
    assert data["probe"]["exit_error"] == ("the probe was killed by SIGABRT (signal 6) after "
                                           "reporting its result")


@given(st.text(), st.text(), st.integers(-64, 255), st.booleans())
def test_interpret_never_raises(stdout: str, stderr: str, rc: int, timed_out: bool) -> None:
    data = interpret("/p", CommandResult(rc, stdout, stderr, timed_out), 3)
    assert isinstance(data["torch"], dict)
    assert data["probe"]["returncode"] == rc and data["probe"]["timed_out"] is timed_out


@given(st.lists(st.one_of(st.text(), st.just(PARTIAL_MARK + "{}"),
                          st.just(PARTIAL_MARK + '{"stage": 3, "result": []}'))))
def test_interpret_survives_odd_partial_lines(lines: list[str]) -> None:
    interpret("/p", CommandResult(-11, "", "\n".join(lines)), 3)


# --- broken interpreters: each becomes a result, never an exception ---------------------------

def test_interpreter_that_segfaults(tmp_path: Path) -> None:
    python = _script(tmp_path / "python", "kill -SEGV $$")
    data = run_probe(python, timeout=20)
    assert data["torch"] == {"imported": False, "failed_stage": None, "error":
                             "the probe was killed by SIGSEGV (signal 11) before reporting "
                             "anything"}
    assert data["executable"] == python


def test_interpreter_that_hangs(tmp_path: Path) -> None:
    python = _script(tmp_path / "python", "sleep 30")
    start = time.monotonic()
    data = run_probe(python, timeout=1)
    assert time.monotonic() - start < 10
    assert data["torch"]["error"] == ("the probe did not finish within 1 s (before reporting "
                                      "anything)")
    assert data["probe"]["timed_out"] is True


def test_torch_import_that_raises(tmp_path: Path) -> None:
    site = _fake_torch(tmp_path / "site", 'raise OSError("libamdhip64.so: cannot open shared '
                       'object file: No such file or directory")\n')
    data = run_probe(_python_with(tmp_path / "python", site), timeout=30)
    torch = data["torch"]
    assert torch["imported"] is False
    assert torch["error"] == ("OSError: libamdhip64.so: cannot open shared object file: "
                              "No such file or directory")
    assert "Traceback" in torch["traceback"]
    assert data["packages"]["torch"] == "2.5.1+rocm6.2"
    assert data["probe"]["stage"] == "done"


def test_torch_that_segfaults_in_gpu_init_keeps_the_build_facts(tmp_path: Path) -> None:
    site = _fake_torch(tmp_path / "site", """
        import os, signal, types
        __version__ = "2.5.1+rocm6.2"
        version = types.SimpleNamespace(hip="6.2.41133-dd7f95766", cuda=None,
                                        git_version="abc", debug=False)
        _C = types.SimpleNamespace(_cuda_getArchFlags=lambda: "gfx90a gfx942",
                                   _show_config=lambda: "  - HIP Runtime 6.2.41133\\n")
        def _crash():
            os.kill(os.getpid(), signal.SIGSEGV)
        cuda = types.SimpleNamespace(is_available=_crash)
    """)
    data = run_probe(_python_with(tmp_path / "python", site), timeout=30)
    torch = data["torch"]
    assert torch["imported"] is True
    assert torch["version"] == "2.5.1+rocm6.2"
    assert torch["hip"] == "6.2.41133-dd7f95766"
    assert torch["arch_list"] == ["gfx90a", "gfx942"]
    assert torch["hip_runtime"] == "6.2.41133"
    assert torch["bundles_rocm"] is False
    assert torch["error"] == ("the probe was killed by SIGSEGV (signal 11) while initialising "
                              "the GPU runtime (torch.cuda.is_available)")
    assert torch["failed_stage"] == "init"


def test_probe_child_does_not_shadow_modules_with_its_own_folder(tmp_path: Path) -> None:
    # doctor/ holds modules named like common ones (host, model, cli); the child removes its
    # folder from sys.path before importing torch.
    site = _fake_torch(tmp_path / "site", "import model\n")
    data = run_probe(_python_with(tmp_path / "python", site), timeout=30)
    assert data["torch"]["error"] == "ModuleNotFoundError: No module named 'model'"


def test_background_probe_starts_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    python = _script(tmp_path / "python", f'touch "{marker}"; sleep 0.2; kill -SEGV $$')
    probe = make_probe(python)
    assert isinstance(probe, BackgroundProbe)
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()  # it ran before anyone asked for the result
    result = probe()
    assert result is not None and result["probe"]["returncode"] == -11
    assert probe() is result


def _probe_children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if CHILD_SCRIPT.encode() in cmd and str(parent).encode() in cmd:
            found.append(int(entry))
    return found


def test_probe_child_dies_with_rocmdoctor(tmp_path: Path) -> None:
    site = _fake_torch(tmp_path / "site", "import time\ntime.sleep(60)\n")
    python = _python_with(tmp_path / "python", site)
    # The parent exits (os._exit: no clean-up of its own) once the test has seen its child, not
    # after a fixed time: on a loaded machine the child may take seconds to appear.
    code = (f"import os, sys\nfrom rocmdoctor.host.probe import make_probe\n"
            f"make_probe({python!r})\nprint(os.getpid(), flush=True)\nsys.stdin.readline()\n"
            f"os._exit(0)\n")
    parent = subprocess.Popen([PY, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert parent.stdout is not None and parent.stdin is not None
    pid = int(parent.stdout.readline())
    deadline = time.monotonic() + 30
    while not _probe_children(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    started = bool(_probe_children(pid))
    parent.stdin.write("go\n")
    parent.stdin.close()
    assert started, "the probe child did not start"
    parent.wait(timeout=20)
    deadline = time.monotonic() + 10
    while _probe_children(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _probe_children(pid) == []


# --- the real probe on this machine ------------------------------------------------------------

def _cpu_wheel() -> bool:
    from importlib import metadata

    try:
        return metadata.version("torch").endswith("+cpu")
    except metadata.PackageNotFoundError:
        return False


cpu_wheel_only = pytest.mark.skipif(
    not _cpu_wheel(), reason="torch here is not the CPU wheel (the GPU machine has its own test)")


@pytest.mark.e2e
@cpu_wheel_only
def test_real_probe_on_the_installed_cpu_wheel() -> None:
    import torch

    data = run_probe()
    assert data["executable"] == sys.executable
    assert data["version"] == ".".join(str(p) for p in sys.version_info[:3])
    assert data["packages"]["torch"] == torch.__version__
    assert data["torch"] == {
        "imported": True, "error": None, "version": torch.__version__,
        "location": os.path.dirname(torch.__file__), "hip": None, "cuda": None,
        "git_version": torch.version.git_version, "rocm": None, "debug": False,
        "arch_list": [], "available": False, "device_count": 0, "cudnn_version": None,
        "xnnpack": importlib.import_module("torch.backends.xnnpack").enabled, "devices": [],
        "num_threads": torch.get_num_threads(), "smoke": {"ok": None, "error": None, "reason": "no GPU visible to torch"},
    }
    assert data["probe"]["returncode"] == 0 and data["probe"]["stage"] == "done"
    # What collect_env prints as "Libc version" and "Python platform".
    assert (data["libc"], data["platform"]) == (
        "-".join(platform.libc_ver()), platform.platform())


@pytest.mark.e2e
@cpu_wheel_only
def test_real_probe_through_the_live_host_is_a_cpu_build() -> None:
    from rocmdoctor.checks.torch_install import TorchInstall
    from rocmdoctor.facts.platform import platform_kind
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.model import Status

    host = LiveHost(probe=make_probe(None))
    assert platform_kind(host) == "cpu"
    result = TorchInstall().run(host)
    import torch

    assert (result.status, result.summary, result.findings, result.fix) == (
        Status.PASS, f"torch {torch.__version__} imports; CPU build; no GPU expected", (), None)


# --- the smoke test's arithmetic, on the CPU standing in for a GPU -------------------------------

class _CpuAsGpu:
    """torch with the "cuda" device mapped to the CPU; `conv_error` perturbs the first conv2d."""

    def __init__(self, conv_error: float = 0.0) -> None:
        import types

        import torch

        self._torch = torch
        self._conv_calls = 0
        self.cuda = types.SimpleNamespace(synchronize=lambda device: None)

        def conv2d(*args: Any, **kwargs: Any) -> Any:
            self._conv_calls += 1
            out = torch.nn.functional.conv2d(*args, **kwargs)
            return out + conv_error if self._conv_calls == 1 else out

        self.nn = types.SimpleNamespace(functional=types.SimpleNamespace(conv2d=conv2d))

    def device(self, *args: Any) -> Any:
        return self._torch.device("cpu")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._torch, name)


@pytest.mark.e2e
def test_smoke_passes_when_the_device_agrees_with_the_cpu() -> None:
    from rocmdoctor.host.probe_child import Probe

    result = Probe.smoke(_CpuAsGpu(), 0)
    assert result["ok"] is True and result["error"] is None
    assert result["matmul_max_abs_err"] == 0.0 and result["conv_max_abs_err"] == 0.0


@pytest.mark.e2e
def test_smoke_fails_on_a_wrong_conv_and_says_by_how_much() -> None:
    from rocmdoctor.host.probe_child import Probe

    result = Probe.smoke(_CpuAsGpu(conv_error=0.01), 0)
    assert result["ok"] is False
    assert result["error"] == ("conv2d differs from the CPU result (max error matmul 0, conv2d "
                               "0.01; tolerance 0.001)")


@pytest.mark.gpu
def test_real_probe_on_the_gpu_machine() -> None:
    data = run_probe()
    torch = data["torch"]
    assert torch["imported"] is True and torch["available"] is True
    assert torch["device_count"] == len(torch["devices"]) > 0
    assert all(d["smoke"]["ok"] for d in torch["devices"]), torch["devices"]
    assert torch["smoke"] == {"ok": True, "error": None}


def test_interpreter_behind_a_wrapper_that_does_not_exec(tmp_path: Path) -> None:
    # conda-run style wrappers start python as their own child; the probe must still report.
    site = _fake_torch(tmp_path / "site", 'raise ImportError("fake")\n')
    python = _script(tmp_path / "python", f'PYTHONPATH="{site}" "{PY}" "$@"; exit $?')
    data = run_probe(python, timeout=30)
    assert data["torch"]["error"] == "ImportError: fake"
    assert data["probe"]["returncode"] == 0


def test_the_probe_reads_each_package_and_the_rocm_sdk_by_its_own_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the probe's own process: each distribution it reports is read by its name (a
    dist-info of each, ahead of what this Python has), and the pip-installed ROCm SDK's
    modules are found where they are, without importing them."""
    from rocmdoctor.host.probe_child import Probe
    versions = {"torch": "2.9.1+rocm7.1.0", "torchvision": "0.24.1+rocm7.1.0",
                "torchaudio": "2.9.1+rocm7.1.0", "triton": "3.5.1",
                "pytorch-triton-rocm": "3.5.1", "numpy": "2.1.2", "rocm-sdk-core": "7.1.0"}
    for name, version in versions.items():
        info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: "
                                       f"{version}\n", encoding="utf-8")
    for module in ("_rocm_sdk_core", "rocm_sdk"):
        (tmp_path / module).mkdir()
        (tmp_path / module / "__init__.py").write_text("raise SystemExit('imported')\n",
                                                       encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = Probe()
    probe.packages()
    assert probe.result["packages"] == versions
    assert probe.result["rocm_sdk"] == {"_rocm_sdk_devel": None,
                                        "_rocm_sdk_core": str(tmp_path / "_rocm_sdk_core"),
                                        "rocm_sdk": str(tmp_path / "rocm_sdk")}


def test_every_stage_the_probe_child_marks_has_its_words() -> None:
    """A crash or a hang is described by the last stage the child marked: each stage it marks
    (read from its source) has a description of its own, not the fallback."""
    import ast

    from rocmdoctor.host import probe_child
    from rocmdoctor.host.probe import describe_stage
    tree = ast.parse(Path(probe_child.__file__).read_text(encoding="utf-8"))
    marked = {node.args[0].value for node in ast.walk(tree)
              if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "mark"
              and node.args and isinstance(node.args[0], ast.Constant)}
    assert marked == {"packages", "import", "info", "init", "devices", "done"}
    said = {stage: describe_stage(stage) for stage in sorted(marked | {"start"})}
    assert said == {
        "devices": "while reading the device properties",
        "done": "after reporting its result",
        "import": "while importing torch",
        "info": "while reading torch's build information",
        "init": "while initialising the GPU runtime (torch.cuda.is_available)",
        "packages": "while reading package versions",
        "start": "before reading anything"}
    assert describe_stage("smoke:1") == "while running the smoke test on device 1"
    assert describe_stage(None) == describe_stage("later") == "before reporting anything"
