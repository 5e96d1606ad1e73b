"""torch-arch-support: every GPU's target is among the targets compiled into torch.

By hand: `python -c "import torch; print(torch.cuda.get_arch_list());
print([torch.cuda.get_device_properties(i).gcnArchName for i in
range(torch.cuda.device_count())])"` on ROCm (compare `gfx90a` of `gfx90a:sramecc+:xnack-`),
or `torch.cuda.get_device_capability(i)` against the `sm_XY` / `compute_XY` entries on CUDA.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.amd_gpus import amd_gpus
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.facts.torch import TorchInfo, imported_skip_reason, torch_info
from rocmdoctor.facts.torch_wheel import cuda_index_line
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

CUDA_COMPAT = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
)
_SM = re.compile(r"(sm|compute)_(\d+)(\d)([a-z]?)$")


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    target: str  # base gfx target, or "sm_90"


def _rocm_devices(host: Host) -> list[Device]:
    seen = [Device(d.index, d.name, kb_gfx.base_target(d.arch))
            for d in torch_info(host).devices if d.arch]
    if seen:
        return seen
    return [Device(g.index, g.name, g.gfx) for g in amd_gpus(host).gpus]


def _cuda_devices(host: Host) -> list[Device]:
    found = [Device(d.index, d.name, f"sm_{d.cuda_capability[0]}{d.cuda_capability[1]}")
             for d in torch_info(host).devices if d.cuda_capability]
    if found:
        return found
    return [Device(g.index, g.name, g.sm) for g in nvidia_gpus(host).gpus if g.sm]


def cuda_support(target: str, arch_list: list[str]) -> Optional[str]:
    """How a CUDA device runs torch's kernels: "native", "compatible", "ptx", or None."""
    m = _SM.match(target)
    if m is None:
        return None
    cap = (int(m.group(2)), int(m.group(3)))
    entries = [e for e in (_SM.match(a) for a in arch_list) if e is not None]
    if any(e.group(1) == "sm" and (int(e.group(2)), int(e.group(3))) == cap for e in entries):
        return "native"
    # Binaries for sm_XY run on later minor versions of the same major (not the "a" variants).
    if any(e.group(1) == "sm" and not e.group(4) and int(e.group(2)) == cap[0]
           and int(e.group(3)) < cap[1] for e in entries):
        return "compatible"
    if any(e.group(1) == "compute" and (int(e.group(2)), int(e.group(3))) <= cap
           for e in entries):
        return "ptx"
    return None


def _newer() -> str:
    return f"newer than what this rocmdoctor knows, tables dated {KB_DATE}"


class TorchArchSupport(Check):
    id = "torch-arch-support"
    depends = ("torch-install",)
    uses_python = True
    title = "GPU targets compiled into torch"
    source = "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py"

    def applies(self, host: Host) -> Optional[str]:
        torch = torch_info(host)
        reason = imported_skip_reason(torch)
        if reason:
            return reason
        if not (torch.hip or torch.cuda):
            return "CPU build of torch: no GPU code to check"
        if platform_kind(host) == "cpu":
            return "no GPU on this machine"
        if not torch.arch_list:
            return "torch reported no compiled GPU targets"
        return None

    def run(self, host: Host) -> CheckResult:
        torch = torch_info(host)
        arch_list = list(torch.arch_list)
        if torch.hip:
            return self._rocm(host, torch, arch_list)
        return self._cuda(host, torch, arch_list)

    def _rocm(self, host: Host, torch: TorchInfo, arch_list: list[str]) -> CheckResult:
        compiled = {kb_gfx.base_target(a) for a in arch_list}
        devices = _rocm_devices(host)
        if not devices:
            return self.skipped("no AMD GPU found")
        version = str(torch.version)
        missing = [d for d in devices if d.target not in compiled]
        names = ", ".join(sorted({f"{d.target} ({d.name})" for d in devices}))
        findings: list[Finding] = []
        override = environment(host).get("HSA_OVERRIDE_GFX_VERSION")
        if override:
            findings.append(Finding.info(
                f"HSA_OVERRIDE_GFX_VERSION={override} is set: torch sees the overridden "
                "target (see gfx-override)"))
        if not missing:
            return self.passed(f"{names} in torch {version}'s compiled targets", findings)
        listed = ", ".join(arch_list)
        for d in missing:
            findings.append(Finding.error(
                f"GPU {d.index} {d.name} is {d.target}; torch {version} was compiled for "
                f"{listed}"))
        usable = [d for d in devices if d.target in compiled]
        if usable and all(kb_gfx.is_apu(d.target) for d in missing):
            keep = ",".join(str(d.index) for d in usable)
            return self.result(
                Status.WARN, f"the integrated GPU ({missing[0].target}) is not in torch's "
                f"targets; GPU {keep} is", findings,
                Fix("Hide the integrated GPU from PyTorch.",
                    (f"export HIP_VISIBLE_DEVICES={keep}",)))
        fix, source = self._rocm_fix(host, missing[0].target, findings)
        return self.result(Status.FAIL, f"{missing[0].target} is not among the targets compiled "
                           f"into torch {version}", findings, fix, source)

    @staticmethod
    def _rocm_fix(host: Host, target: str, findings: list[Finding]
                  ) -> tuple[Optional[Fix], Optional[str]]:
        install = installed_rocm(host)
        fitting = wheels.targets_of_index(
            wheels.rocm_index_for(install.version if install else None))
        newest = next((r for r in sorted(wheels.INDEX_TARGETS,
                                         key=lambda r: wheels.version_tuple(r.rocm), reverse=True)
                       if target in r.targets), None)
        # The index that fits the installed ROCm when it has the target, else the newest one.
        index = fitting if fitting is not None and target in fitting.targets else newest
        first = kb_gfx.first_release_with(target)
        if install is not None and first is not None and install.key < first.first:
            findings.append(Finding.hint(
                f"ROCm {install.version} predates AMD's support for {target}: AMD lists it from "
                f"ROCm {kb_gfx.release_name(first)} on ({first.source})"))
        rule = kb_gfx.override_for(target)
        if rule is not None:
            hint = (f"unofficial: export HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note} "
                    f"({rule.source})")
            if index is None:
                return Fix(f"Make the runtime treat {target} as {rule.target} (unofficial; "
                           f"{rule.note}).",
                           (f"export HSA_OVERRIDE_GFX_VERSION={rule.value}",)), rule.source
            findings.append(Finding.hint(hint))
        if index is not None:
            since = wheels.added_on_index(target, index.rocm)
            later = f" from torch {since.torch} on" if since is not None else ""
            return Fix(f"Install a PyTorch build that includes {target} (the rocm{index.rocm} "
                       f"wheels do{later}).", (wheels.pip_line(f"rocm{index.rocm}", True),)
                       ), index.source
        if kb_gfx.target_info(target) is None:
            return Fix(f"{target} is {_newer()}: no wheel in its tables includes it. Check "
                       "PyTorch's current ROCm wheels, or build PyTorch from source with "
                       f"PYTORCH_ROCM_ARCH={target}."), None
        return Fix(f"No official PyTorch wheel includes {target}: build PyTorch from source "
                   f"with PYTORCH_ROCM_ARCH={target}."), None

    def _cuda(self, host: Host, torch: TorchInfo, arch_list: list[str]) -> CheckResult:
        devices = _cuda_devices(host)
        if not devices:
            return self.skipped("no NVIDIA GPU found")
        version = str(torch.version)
        findings: list[Finding] = []
        missing = []
        for d in devices:
            how = cuda_support(d.target, arch_list)
            if how is None:
                missing.append(d)
            elif how == "ptx":
                findings.append(Finding.info(
                    f"GPU {d.index} {d.name} ({d.target}) runs torch's kernels through PTX "
                    "JIT compilation: the first start is slow"))
        names = ", ".join(sorted({f"{d.target} ({d.name})" for d in devices}))
        if not missing:
            return self.passed(f"{names} supported by torch {version}", findings,
                               source=CUDA_COMPAT)
        # A GPU newer than every compiled target needs a newer CUDA; an older one an older
        # CUDA (CUDA 13 dropped Maxwell, Pascal and Volta).
        caps = [(int(e.group(2)), int(e.group(3))) for e in map(_SM.match, arch_list) if e]
        first = _SM.match(missing[0].target)
        newer = bool(caps and first and (int(first.group(2)), int(first.group(3))) > min(caps))
        line, why = cuda_index_line(host, newest_gpus=newer)
        for d in missing:
            findings.append(Finding.error(
                f"GPU {d.index} {d.name} is {d.target}; torch {version} has "
                f"{', '.join(arch_list)}"))
        return self.result(
            Status.FAIL, f"{missing[0].target} is not supported by torch {version}", findings,
            Fix(f"Install a PyTorch build whose CUDA version supports {missing[0].target} "
                f"({why}).", (line,)), CUDA_COMPAT)
