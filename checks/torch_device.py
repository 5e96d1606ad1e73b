"""torch-device: torch sees the GPUs the system lists, and a small computation is right on each.

By hand: `rocminfo | grep -c 'Device Type: *GPU'` (or `nvidia-smi -L`), then
`python -c "import torch; print(torch.cuda.device_count())"` and, per device,
`(torch.rand(64, 64).cuda() @ torch.rand(64, 64).cuda())` compared with the same product on
the CPU (with TF32 off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from rocmdoctor.facts.amd_gpus import GpuAgent, amd_gpus, describe, select
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.facts.torch import BUILD_NAMES, imported_skip_reason, torch_info
from rocmdoctor.facts.wsl import wsl_advice
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

HIP_VISIBILITY = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html"
# Who lists the GPUs torch is compared with, by the inventory's source.
LISTERS = {"kfd-sysfs": "the KFD topology", "none": "the system"}


def _visible(devices: Sequence[Any], env: dict[str, str], names: tuple[str, ...],
             uuids: bool = False) -> tuple[list[Any], list[str]]:
    """Apply the first set variable of `names` to `devices` (UUID entries when `uuids`)."""
    for var in names:
        if var in env:
            chosen = select(var, env[var], devices, uuids=uuids)
            return list(chosen.chosen), [f"{var}={env[var]}"]
    return list(devices), []


def expected_gpus(host: Host, kind: str) -> tuple[list[str], str, list[str]]:
    """(descriptions of the GPUs torch should see, where they come from, visibility vars)."""
    env = dict(environment(host))
    if kind == "rocm":
        inventory = amd_gpus(host)
        devices: list[GpuAgent] = list(inventory.gpus)
        used: list[str] = []
        if inventory.source == "kfd-sysfs":  # sysfs does not apply ROCR_VISIBLE_DEVICES
            devices, used = _visible(devices, env, ("ROCR_VISIBLE_DEVICES",), uuids=True)
        # HIP honours CUDA_VISIBLE_DEVICES only when HIP_VISIBLE_DEVICES is unset.
        devices, more = _visible(devices, env, ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"))
        return [describe(g) for g in devices], inventory.source, used + more
    gpus = nvidia_gpus(host).gpus
    shown, used = _visible(list(gpus), env, ("CUDA_VISIBLE_DEVICES",), uuids=True)
    return [f"{g.name}" for g in shown], "nvidia-smi", used


def _kind(host: Host) -> str:
    """The platform; on WSL a ROCm torch with /dev/dxg counts as ROCm (no PCI GPU is visible)."""
    kind = platform_kind(host)
    return "rocm" if kind == "cpu" and wsl_advice(host) is not None else kind


class TorchDevice(Check):
    id = "torch-device"
    depends = ("torch-install", "kfd-access", "nvidia-driver")
    uses_python = True
    title = "torch sees the GPUs, and computes correctly on each"
    source = HIP_VISIBILITY

    def applies(self, host: Host) -> Optional[str]:
        torch = torch_info(host)
        reason = imported_skip_reason(torch)
        if reason:
            return reason
        kind = _kind(host)
        if kind == "cpu":
            return "no GPU on this machine"
        build = torch.build
        if build != kind:
            return f"torch is a {BUILD_NAMES.get(build or 'cpu')} build (see torch-install)"
        return None

    def run(self, host: Host) -> CheckResult:
        torch = torch_info(host)
        kind = _kind(host)
        expected, origin, vars_used = expected_gpus(host, kind)
        seen = torch.device_count
        devices = torch.devices
        lister = LISTERS.get(origin, origin)
        selected = f" ({', '.join(vars_used)})" if vars_used else ""
        if torch.error:  # the probe crashed or hung after importing torch
            return self.result(
                Status.FAIL, f"torch failed on the GPU: {torch.error}",
                [Finding.error(torch.error),
                 Finding.hint("check dmesg for amdgpu/nvidia errors (GPU reset, page fault)")])
        if seen == 0:
            findings = [Finding.error(f"{lister} lists {g}") for g in expected]
            if not expected:
                findings = [Finding.error("no GPU is listed by the system either")]
            advice = wsl_advice(host)
            if advice is not None and advice.fix is not None:
                return self.result(
                    Status.FAIL, f"torch sees no GPU; {lister} lists {len(expected)}{selected}; "
                    "on WSL torch needs AMD's WSL runtime", [*findings, *advice.findings],
                    advice.fix, source=advice.source)
            return self.result(
                Status.FAIL, f"torch sees no GPU; {lister} lists {len(expected)}{selected}",
                findings,
                Fix("See the kfd-access, gfx-override, visible-devices and torch-arch-support "
                    "results for why the runtime hides the GPU."))
        findings = [Finding.info(f"GPU {d.index}: {d.name}" + (f" ({d.arch})" if d.arch else ""))
                    for d in devices]
        bad = [d for d in devices if d.smoke is not None and d.smoke.ok is False]
        for d in bad:
            findings.append(Finding.error(
                f"GPU {d.index} {d.name}: {d.smoke.error if d.smoke else None}"))
        if bad:
            first = bad[0]
            fix = Fix("Wrong results on a GPU usually mean its code was built for another "
                      "target (HSA_OVERRIDE_GFX_VERSION) or an unsupported setup; see "
                      "gfx-override and torch-arch-support, and check dmesg.")
            return self.result(
                Status.FAIL, f"the smoke test failed on GPU {first.index} "
                f"({first.name})", findings, fix)
        counted = f"torch sees {seen} GPU{'s' if seen != 1 else ''}"
        if expected and seen != len(expected):
            findings.append(Finding.error(
                f"{lister} lists {len(expected)}{selected}: {'; '.join(expected)}"))
            return self.result(Status.WARN, f"{counted}; {lister} lists {len(expected)}"
                               f"{selected}", findings,
                               Fix("Check HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (see "
                                   "visible-devices)."))
        tested = bool(devices) and all(d.smoke is not None for d in devices)
        checked = "matmul and conv2d match the CPU on each" if tested else "no smoke test ran"
        return self.passed(f"{counted}{selected}; {checked}", findings)
