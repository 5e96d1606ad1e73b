"""torch-install: torch imports, and its build (ROCm / CUDA / CPU) fits the GPUs present.

By hand: `python -c "import torch; print(torch.__version__, torch.version.hip,
torch.version.cuda)"` — a `+rocmX.Y` version with `hip` set is a ROCm build, `+cuXYZ` with
`cuda` set a CUDA build, `+cpu` (neither set) a CPU build.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.platform import amd_signals, nvidia_signals, platform_kind
from rocmdoctor.facts.torch import BUILD_NAMES, TorchInfo, probe_skip_reason, torch_info
from rocmdoctor.facts.torch_wheel import cuda_index_line, rocm_index_line
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

INSTALL_DOCS = "https://pytorch.org/get-started/locally/"


def _wanted_build(kind: str) -> str:
    return {"rocm": "rocm", "cuda": "cuda"}.get(kind, "cpu")


class TorchInstall(Check):
    id = "torch-install"
    uses_python = True
    title = "PyTorch installed, and built for the GPUs present"
    source = INSTALL_DOCS

    def applies(self, host: Host) -> Optional[str]:
        return probe_skip_reason(torch_info(host))

    def run(self, host: Host) -> CheckResult:
        torch = torch_info(host)
        kind = platform_kind(host)
        if not torch.imported:
            return self._not_imported(host, torch, kind)
        version = torch.version or "?"
        build = torch.build or "cpu"
        findings = self._notes(torch, version)
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
                  f"pip of {torch_info(host).interpreter} ({why}).", (line,))
        return self.result(Status.FAIL, f"torch {version} is a {BUILD_NAMES[build]} build on "
                           f"an {vendor} machine", findings, fix)

    def _not_imported(self, host: Host, torch: TorchInfo, kind: str) -> CheckResult:
        python = torch.interpreter
        package = torch.package
        error = torch.error or "unknown error"
        line, why = (rocm_index_line(host, force=package is not None) if kind == "rocm" else
                     cuda_index_line(host, force=package is not None) if kind == "cuda" else
                     (wheels.pip_line("cpu", package is not None), "cpu: no GPU here"))
        if torch.not_python:
            return self.result(Status.FAIL, f"{python} is not a Python interpreter",
                               [Finding.error(error)], Fix(
                                   "Point rocmdoctor at the Python that will train (the one "
                                   "your training script runs with: `which python` in its "
                                   "environment).",
                                   ("rocmdoctor check --python /path/to/venv/bin/python",)))
        if package is None and "No module named 'torch'" in error:
            return self.result(Status.FAIL, f"torch is not installed in {python}",
                               [Finding.error(error)],
                               Fix(f"Install PyTorch with the pip of {python} ({why}).", (line,)))
        if torch.could_not_run:
            return self.result(Status.FAIL, error, [Finding.error(error)], Fix(
                "Point rocmdoctor at the Python that will train.",
                ("rocmdoctor check --python /path/to/venv/bin/python",)))
        if torch.crashed or torch.failed_stage not in (None, "import"):
            # The probe hung or died: reinstalling is not the known answer.
            return self.result(Status.FAIL, f"the PyTorch probe failed: {error}",
                               [Finding.error(error)])
        what = f"torch {package}" if package else "torch"
        findings = [Finding.error(f"import torch: {error}")]
        if package and torch.build not in (None, _wanted_build(kind)):
            findings.append(Finding.hint(f"{package} is not the build this machine needs"))
        return self.result(
            Status.FAIL, f"{what} is installed in {python} but does not import",
            findings,
            Fix(f"Reinstall PyTorch with the pip of {python} ({why}).", (line,)))

    @staticmethod
    def _notes(torch: TorchInfo, version: str) -> list[Finding]:
        notes: list[Finding] = []
        package = torch.package
        if package and wheels.version_tuple(package) != wheels.version_tuple(version):
            notes.append(Finding.hint(
                f"the imported torch ({torch.location}) is {version}, but pip's metadata "
                f"says {package}: two installs shadow each other"))
        if wheels.torch_newer_than_known(version):
            notes.append(Finding.info(
                f"torch {version} is newer than what this rocmdoctor knows, tables dated "
                f"{KB_DATE}: its wheel variants and compiled targets are not in them"))
        if torch.exit_error:
            notes.append(Finding.hint(f"after reporting, {torch.exit_error}: scripts using "
                                      "torch may crash when they exit"))
        return notes
