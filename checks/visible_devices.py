"""visible-devices: ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES and
GPU_DEVICE_ORDINAL select GPUs that exist.

On ROCm, ROCR_VISIBLE_DEVICES (indices or GPU-<hex> UUIDs) filters every GPU first; HIP then
takes HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset, and
indexes the GPUs ROCr left. By hand: `env | grep -E 'VISIBLE_DEVICES|DEVICE_ORDINAL'`, then
`rocminfo | grep -E 'Uuid|Marketing'` (ROCm) or `nvidia-smi -L` (NVIDIA).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from rocmdoctor.facts.amd_gpus import (
    HIP_LEVEL_VARS,
    GpuAgent,
    Selection,
    amd_gpus,
    describe,
    kfd_gpus,
    select,
)
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.nvidia_gpus import smi_list
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

GPU_ISOLATION = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html"
# "Only the devices whose index or UUID is present in the sequence are visible ... It will
# also work when you specify the first few characters of the UUID (including GPU-)".
CUDA_VISIBLE = "https://docs.nvidia.com/deploy/topics/topic_5_2_1.html"
ROCR_VAR = "ROCR_VISIBLE_DEVICES"
VARS = (ROCR_VAR, "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
NVIDIA_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9A-Fa-f-]+)\)")
CUDA_UUID = re.compile(r"GPU-[0-9A-Fa-f-]+")


def nvidia_gpus(text: str) -> tuple[GpuAgent, ...]:
    """The GPUs `nvidia-smi -L` lists ("GPU 0: NVIDIA H200 (UUID: GPU-...)")."""
    gpus: list[GpuAgent] = []
    for line in text.splitlines():
        m = NVIDIA_GPU.match(line.strip())
        if m:
            gpus.append(GpuAgent(index=len(gpus), node=None, gfx="", gfx_full="",
                                 name=m.group(2), compute_units=None, uuid=m.group(3),
                                 is_integrated=False, vram_bytes=None))
    return tuple(gpus)


def _names(gpus: tuple[GpuAgent, ...]) -> str:
    return ", ".join(describe(g) for g in gpus) if gpus else "none"


def _set_text(selections: list[Selection]) -> str:
    return ", ".join(f"{s.var}={s.value}" for s in selections)


class VisibleDevices(Check):
    id = "visible-devices"
    title = "GPU selection variables (*_VISIBLE_DEVICES)"
    source = GPU_ISOLATION

    def applies(self, host: Host) -> Optional[str]:
        if not any(v in environment(host) for v in VARS):
            return "none of ROCR_/HIP_/CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL is set"
        if platform_kind(host) == "cpu":
            return "no AMD or NVIDIA GPU found"
        return None

    def run(self, host: Host) -> CheckResult:
        if platform_kind(host) == "cuda":
            return self._cuda(host)
        return self._rocm(host)

    def _rocm(self, host: Host) -> CheckResult:
        env = environment(host)
        inv = amd_gpus(host)
        findings: list[Finding] = []
        selections: list[Selection] = []
        total, rocr_view = len(inv.gpus), inv.gpus
        if ROCR_VAR in env:
            # rocminfo honours ROCR_VISIBLE_DEVICES, so only sysfs shows every GPU.
            nodes = kfd_gpus(host)
            named = {g.node: g for g in inv.gpus if g.node is not None}
            physical = tuple(
                replace(named.get(g.node, g) if g.node is not None else g, index=g.index)
                for g in nodes)
            if physical:
                sel = select(ROCR_VAR, env[ROCR_VAR], physical)
                total, rocr_view = len(physical), sel.chosen
            else:
                empty = select(ROCR_VAR, env[ROCR_VAR], inv.gpus).problems
                sel = Selection(ROCR_VAR, env[ROCR_VAR], inv.gpus,
                                empty if not env[ROCR_VAR].strip() else ())
                findings.append(Finding.info(
                    f"{ROCR_VAR} cannot be checked entry by entry without the KFD topology "
                    f"in sysfs; rocminfo, which honours it, shows {len(inv.gpus)} GPU(s)"))
            selections.append(sel)
            rocr_view = tuple(replace(g, index=i) for i, g in enumerate(rocr_view))
        hip_level = []
        for var, uuid_re in HIP_LEVEL_VARS:
            if var == "CUDA_VISIBLE_DEVICES" and "HIP_VISIBLE_DEVICES" in env and var in env:
                findings.append(Finding.info(
                    f"CUDA_VISIBLE_DEVICES={env[var]} is ignored: on ROCm, HIP reads it only "
                    "when HIP_VISIBLE_DEVICES is unset"))
            elif var in env:
                hip_level.append(select(var, env[var], rocr_view, uuid_re))
        selections += hip_level
        final = hip_level[0].chosen if hip_level else rocr_view
        if total == 0 and not any(s.problems and not s.value.strip() for s in selections):
            return self.result(
                Status.WARN, f"{_set_text(selections)} cannot be checked: the GPU list is "
                "unknown (see gpu-agents)", findings)
        return self._verdict(selections, final, total, findings, GPU_ISOLATION)

    def _cuda(self, host: Host) -> CheckResult:
        env = environment(host)
        findings = [Finding.info(f"{v}={env[v]} is read only by AMD's ROCm runtimes; "
                                 "NVIDIA's ignores it")
                    for v in VARS if v in env and v != "CUDA_VISIBLE_DEVICES"]
        if "CUDA_VISIBLE_DEVICES" not in env:
            return self.passed("CUDA_VISIBLE_DEVICES is not set; the ROCm variables have no "
                               "effect on NVIDIA GPUs", findings, source=CUDA_VISIBLE)
        value = env["CUDA_VISIBLE_DEVICES"]
        if "MIG-" in value:
            return self.result(Status.WARN, f"CUDA_VISIBLE_DEVICES={value} names MIG "
                               "instances, which this check does not verify", findings,
                               source=CUDA_VISIBLE)
        listed = smi_list(host)
        gpus = nvidia_gpus(listed) if listed is not None else ()
        sel = select("CUDA_VISIBLE_DEVICES", value, gpus, CUDA_UUID)
        if not gpus and value.strip():
            return self.result(Status.WARN, f"CUDA_VISIBLE_DEVICES={value} cannot be checked: "
                               "`nvidia-smi -L` listed no GPU", findings, source=CUDA_VISIBLE)
        return self._verdict([sel], sel.chosen, len(gpus), findings, CUDA_VISIBLE)

    def _verdict(self, selections: list[Selection], final: tuple[GpuAgent, ...], total: int,
                 findings: list[Finding], source: str) -> CheckResult:
        problems = [p for s in selections for p in s.problems]
        if problems:
            bad = next(s for s in selections if s.problems)
            if bad.kept:
                fix = Fix(f"Keep only the entries of {bad.var} that name a GPU.",
                          commands=(f"export {bad.var}={','.join(bad.kept)}",))
            else:
                fix = Fix(f"Unset {bad.var} to make every GPU visible, or set it to GPUs that "
                          "exist (gpu-agents lists them).", commands=(f"unset {bad.var}",))
            return self.result(Status.FAIL, problems[0],
                               [Finding.error(p) for p in problems] + findings, fix, source)
        steps = [Finding.info(f"{s.var}={s.value} selects {_names(s.chosen)}")
                 for s in selections]
        noun = "GPU" if total == 1 else "GPUs"
        return self.passed(f"{_set_text(selections)}: {len(final)} of {total} {noun} "
                           f"visible ({_names(final)})", steps + findings, source=source)
