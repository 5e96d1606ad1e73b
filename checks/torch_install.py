"""torch-install: torch imports, and its build (ROCm / CUDA / CPU) fits the GPUs present.

By hand: `python -c "import torch; print(torch.__version__, torch.version.hip,
torch.version.cuda)"` — a `+rocmX.Y` version with `hip` set is a ROCm build, `+cuXYZ` with
`cuda` set a CUDA build, `+cpu` (neither set) a CPU build.

Also the shared vocabulary of the torch checks: `torch_of(host)`, `build_of(...)`,
`probe_skip_reason(host)` and the pip lines that install a matching build.
"""

from __future__ import annotations

from typing import Any, Optional

from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
from rocmdoctor.facts.platform import amd_signals, nvidia_signals, platform_kind
from rocmdoctor.facts.rocm_version import installed_rocm
from rocmdoctor.host import Host
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.kb.cuda_driver import newest_cuda_for_driver
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

INSTALL_DOCS = "https://pytorch.org/get-started/locally/"
BUILD_NAMES = {"rocm": "ROCm", "cuda": "CUDA", "cpu": "CPU"}


def probe_skip_reason(host: Host) -> Optional[str]:
    if host.python() is None:
        return "the Python/PyTorch probe was not run"
    return None


def imported_torch_skip_reason(host: Host) -> Optional[str]:
    """Why a check of an imported torch does not apply: no probe, or torch does not import."""
    reason = probe_skip_reason(host)
    if reason is None and not torch_of(host).get("imported"):
        reason = "torch does not import (see torch-install)"
    return reason


def torch_of(host: Host) -> dict[str, Any]:
    """The probe's `torch` section ({} when absent)."""
    probe = host.python() or {}
    torch = probe.get("torch")
    return torch if isinstance(torch, dict) else {}


def interpreter(host: Host) -> str:
    return str((host.python() or {}).get("executable") or "this Python")


def installed_torch(host: Host) -> Optional[str]:
    packages = (host.python() or {}).get("packages") or {}
    value = packages.get("torch")
    return str(value) if value else None


def build_of(torch: dict[str, Any], package_version: Optional[str] = None) -> Optional[str]:
    """"rocm", "cuda" or "cpu"; from the imported torch, else from the wheel's local tag."""
    if torch.get("imported"):
        return "rocm" if torch.get("hip") else "cuda" if torch.get("cuda") else "cpu"
    if not package_version:
        return None
    _, local = wheels.split_local(package_version)
    if local.startswith("rocm"):
        return "rocm"
    if local.startswith("cu"):
        return "cuda"
    if local.startswith("cpu"):
        return "cpu"
    return None


def rocm_index_line(host: Host, force: bool = True) -> tuple[str, str]:
    """(pip line, why this index) for the ROCm wheel matching the system ROCm."""
    install = installed_rocm(host)
    index = wheels.rocm_index_for(install.version if install else None)
    why = (f"rocm{index} fits the installed ROCm {install.version}" if install else
           f"rocm{index} is the newest ROCm index; the wheel brings its own ROCm libraries")
    return pip_line(f"rocm{index}", force), why


def cuda_index_line(host: Host, force: bool = True, newest_gpus: bool = False
                    ) -> tuple[str, str]:
    """(pip line, why this index) for the newest CUDA wheel the NVIDIA driver can run.

    Without a known driver: the build with the oldest CUDA (it runs on the most drivers), or
    with `newest_gpus` the newest CUDA (it supports the newest GPUs).
    """
    newest = wheels.WHEELS[-1]
    driver = nvidia_gpus(host).driver_version
    cuda = newest_cuda_for_driver(driver, newest.cuda) if driver else None
    if cuda is None and newest_gpus:
        cuda = newest.cuda[-1]
        why = f"{wheels.cuda_index(cuda)} has torch {newest.torch}'s newest CUDA"
    elif cuda is None:
        cuda = newest.cuda[0]
        why = (f"{wheels.cuda_index(cuda)} is torch {newest.torch}'s oldest CUDA: it runs on the "
               "oldest drivers and GPUs")
    else:
        why = f"{wheels.cuda_index(cuda)} is the newest build driver {driver} can run"
    return pip_line(wheels.cuda_index(cuda), force), why


def pip_line(index: str, force: bool) -> str:
    flag = "--force-reinstall " if force else ""
    return f"pip install {flag}torch torchvision --index-url {wheels.index_url(index)}"


def _wanted_build(kind: str) -> str:
    return {"rocm": "rocm", "cuda": "cuda"}.get(kind, "cpu")


class TorchInstall(Check):
    id = "torch-install"
    uses_python = True
    title = "PyTorch installed, and built for the GPUs present"
    source = INSTALL_DOCS

    def applies(self, host: Host) -> Optional[str]:
        return probe_skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        torch = torch_of(host)
        python = interpreter(host)
        kind = platform_kind(host)
        if not torch.get("imported"):
            return self._not_imported(host, torch, python, kind)
        version = str(torch.get("version") or "?")
        build = build_of(torch) or "cpu"
        findings = self._notes(host, torch, version)
        if kind == "cpu":
            if build == "cpu":
                return self.passed(f"torch {version} imports; CPU build; no GPU expected",
                                   findings)
            findings.insert(0, Finding.info(
                f"a {BUILD_NAMES[build]} build, but no GPU was found here: torch will run on "
                "the CPU"))
            return self.passed(f"torch {version} imports ({BUILD_NAMES[build]} build)", findings)
        if build == _wanted_build(kind):
            return self.passed(f"torch {version} imports; {BUILD_NAMES[build]} build fits the "
                               f"{'AMD' if kind == 'rocm' else 'NVIDIA'} GPU", findings)
        return self._wrong_build(host, version, build, kind, findings)

    def _wrong_build(self, host: Host, version: str, build: str, kind: str,
                     findings: list[Finding]) -> CheckResult:
        vendor = "AMD" if kind == "rocm" else "NVIDIA"
        signals = amd_signals(host) if kind == "rocm" else nvidia_signals(host)
        line, why = rocm_index_line(host) if kind == "rocm" else cuda_index_line(host)
        evidence = f" ({', '.join(signals)})" if signals else ""
        findings.insert(0, Finding.error(
            f"torch {version} is a {BUILD_NAMES[build]} build, but this is an {vendor} "
            f"machine{evidence}: torch cannot use the GPU"))
        fix = Fix(f"Install the {BUILD_NAMES[_wanted_build(kind)]} build of PyTorch with the "
                  f"pip of {interpreter(host)} ({why}).", (line,))
        return self.result(Status.FAIL, f"torch {version} is a {BUILD_NAMES[build]} build on "
                           f"an {vendor} machine", findings, fix)

    def _not_imported(self, host: Host, torch: dict[str, Any], python: str,
                      kind: str) -> CheckResult:
        package = installed_torch(host)
        error = str(torch.get("error") or "unknown error")
        line, why = (rocm_index_line(host, force=package is not None) if kind == "rocm" else
                     cuda_index_line(host, force=package is not None) if kind == "cuda" else
                     (pip_line("cpu", package is not None), "cpu: no GPU here"))
        if package is None and "No module named 'torch'" in error:
            return self.result(Status.FAIL, f"torch is not installed in {python}",
                               [Finding.error(error)],
                               Fix(f"Install PyTorch with the pip of {python} ({why}).", (line,)))
        meta = (host.python() or {}).get("probe") or {}
        if int(meta.get("returncode") or 0) in (126, 127) and error.startswith("cannot run "):
            return self.result(Status.FAIL, error, [Finding.error(error)], Fix(
                "Point rocmdoctor at the Python that will train.",
                ("rocmdoctor check --python /path/to/venv/bin/python",)))
        crashed = bool(meta.get("timed_out")) or int(meta.get("returncode") or 0) < 0
        if crashed or torch.get("failed_stage") not in (None, "import"):
            # The probe hung or died: reinstalling is not the known answer.
            return self.result(Status.FAIL, f"the PyTorch probe failed: {error}",
                               [Finding.error(error)])
        what = f"torch {package}" if package else "torch"
        findings = [Finding.error(f"import torch: {error}")]
        if package and build_of(torch, package) not in (None, _wanted_build(kind)):
            findings.append(Finding.hint(f"{package} is not the build this machine needs"))
        return self.result(
            Status.FAIL, f"{what} is installed in {python} but does not import",
            findings,
            Fix(f"Reinstall PyTorch with the pip of {python} ({why}).", (line,)))

    @staticmethod
    def _notes(host: Host, torch: dict[str, Any], version: str) -> list[Finding]:
        notes: list[Finding] = []
        package = installed_torch(host)
        if package and wheels.version_tuple(package) != wheels.version_tuple(version):
            notes.append(Finding.hint(
                f"the imported torch ({torch.get('location')}) is {version}, but pip's metadata "
                f"says {package}: two installs shadow each other"))
        exit_error = ((host.python() or {}).get("probe") or {}).get("exit_error")
        if exit_error:
            notes.append(Finding.hint(f"after reporting, {exit_error}: scripts using torch may "
                                      "crash when they exit"))
        return notes
