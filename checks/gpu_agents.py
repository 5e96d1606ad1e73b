"""gpu-agents: the GPU agents rocminfo reports (gfx target, name, compute units), why rocminfo
fails when it does, and an integrated GPU that sits beside a discrete one.

By hand: `rocminfo | grep -E '^\\s+(Name|Marketing Name|Compute Unit|Device Type):'`; without
rocminfo: `grep -H gfx_target_version /sys/class/kfd/kfd/topology/nodes/*/properties`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amd_gpus import (
    GpuAgent,
    GpuInventory,
    amd_gpus,
    describe,
    hip_selection,
    kfd_gpus,
)
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb.rocminfo_failures import DMESG_KFD
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

ROCMINFO_DOC = "https://rocm.docs.amd.com/projects/rocminfo/en/latest/how-to/use-rocminfo.html"
GPU_ISOLATION = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html"


def size_text(num_bytes: int) -> str:
    if num_bytes >= 2**30:
        gib = num_bytes / 2**30
        return f"{gib:.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"
    return f"{num_bytes / 2**20:.0f} MiB"


def raw_uuid(inv: GpuInventory, gpu: GpuAgent) -> Optional[str]:
    """The Uuid line rocminfo printed for a GPU ("GPU-XX" included), None without one."""
    if inv.source != "rocminfo" or inv.report is None or gpu.index >= len(inv.report.gpus):
        return gpu.uuid
    return inv.report.gpus[gpu.index].uuid


def gpu_line(inv: GpuInventory, gpu: GpuAgent) -> str:
    parts = [f"GPU {gpu.index}: {gpu.gfx_full} {gpu.name}".rstrip()]
    if gpu.compute_units is not None:
        parts.append(f"{gpu.compute_units} CUs")
    if gpu.vram_bytes:
        parts.append(f"{size_text(gpu.vram_bytes)} memory pool")
    if gpu.node is not None:
        parts.append(f"KFD node {gpu.node}")
    uuid = raw_uuid(inv, gpu)
    if uuid:
        parts.append(uuid if gpu.uuid else f"no unique id ({uuid})")
    if gpu.is_integrated:
        parts.append("integrated")
    return ", ".join(parts)


def inventory_summary(gpus: tuple[GpuAgent, ...]) -> str:
    groups: dict[tuple[str, Optional[int], bool], int] = {}
    for g in gpus:
        key = (describe(g), g.compute_units, g.is_integrated)
        groups[key] = groups.get(key, 0) + 1
    parts = []
    for (text, cus, igpu), count in groups.items():
        extra = [f"{cus} CUs"] if cus is not None else []
        extra += ["integrated"] if igpu else []
        label = f"{text} ({', '.join(extra)})" if extra else text
        parts.append(f"{count} × {label}" if count > 1 else label)
    noun = "GPU" if len(gpus) == 1 else "GPUs"
    return f"{len(gpus)} {noun}: {', '.join(parts)}"


class GpuAgents(Check):
    id = "gpu-agents"
    depends = ("kfd-access",)
    title = "GPU agents (rocminfo)"
    source = ROCMINFO_DOC

    def applies(self, host: Host) -> Optional[str]:
        reason = not_rocm_reason(host)
        if reason is None:
            return None
        report = amd_gpus(host).report
        if report is not None and report.rock_loaded is False and report.rock_line:
            return f"{reason}; rocminfo says: {report.rock_line}"
        return reason

    def run(self, host: Host) -> CheckResult:
        inv = amd_gpus(host)
        if inv.timed_out:
            return self._timed_out(inv)
        if inv.source != "rocminfo" and inv.rocminfo is not None:
            return self._failed(inv)
        if not inv.gpus:
            return self.result(
                Status.FAIL, "no GPU agent found: rocminfo is not installed and the KFD "
                "topology (/sys/class/kfd/kfd/topology/nodes) lists no GPU",
                fix=Fix("Install ROCm (it provides rocminfo) and check that the amdgpu "
                        "driver is loaded: see the amdgpu-driver and kfd-access checks."))
        return self._listed(host, inv)

    def _sysfs_findings(self, host: Host) -> list[Finding]:
        nodes = kfd_gpus(host)
        if not nodes:
            return []
        return [Finding.info("The KFD topology in sysfs still lists "
                             + inventory_summary(nodes))]

    def _timed_out(self, inv: GpuInventory) -> CheckResult:
        findings = [Finding.hint(
            "Possible cause: the amdgpu driver or the GPU is stuck (a GPU reset that failed, a "
            "hung queue), which makes rocminfo hang; the kernel log shows it")]
        if inv.gpus:
            findings.append(Finding.info("The KFD topology in sysfs lists "
                                         + inventory_summary(inv.gpus)))
        waited = inv.rocminfo.duration_s if inv.rocminfo is not None else 0.0
        return self.result(
            Status.ERROR, f"rocminfo did not answer within {waited:.0f} s" if waited >= 0.5
            else "rocminfo did not answer (timed out)",
            findings, Fix("Read the kernel log for amdgpu errors; a reboot clears a hung GPU.",
                          commands=(DMESG_KFD,), needs_root=True))

    def _failed(self, inv: GpuInventory) -> CheckResult:
        assert inv.rocminfo is not None
        report = inv.report
        extra: list[Finding] = []
        if report is not None and report.group_line:
            extra.append(Finding.info(f"rocminfo also said: {report.group_line}"))
        if inv.gpus:
            extra.append(Finding.info("The KFD topology in sysfs lists "
                                      + inventory_summary(inv.gpus)))
        failure = inv.failure
        if failure is not None:
            return self.result(Status.FAIL, f"rocminfo failed: {failure.said}",
                               [Finding.error(f"{failure.likelihood.capitalize()} cause: "
                                              f"{failure.cause}"), *extra],
                               failure.fix, failure.source)
        rc = inv.rocminfo.returncode
        lines = [ln for ln in (report.text if report else "").splitlines() if ln.strip()]
        if rc == 0:
            cpus = len(report.agents) if report else 0
            summary = f"rocminfo lists no GPU agent ({cpus} other agent(s))"
            cause = ("possible causes: the KFD driver did not add a GPU (the GPU is missing, "
                     "or not supported by this kernel), or ROCR_VISIBLE_DEVICES hides it")
        else:
            summary = f"rocminfo exited with status {rc}"
            cause = f"its last line: {lines[-1].strip()}" if lines else "it printed nothing"
        return self.result(
            Status.FAIL, summary, [Finding.error(cause[0].upper() + cause[1:]), *extra],
            Fix("Read the kernel log for why the GPU is missing.", commands=(DMESG_KFD,),
                needs_root=True))

    def _listed(self, host: Host, inv: GpuInventory) -> CheckResult:
        findings = [Finding.info(gpu_line(inv, g)) for g in inv.gpus]
        if inv.source == "kfd-sysfs":
            findings.insert(0, Finding.info(
                "rocminfo is not installed: GPUs read from the KFD topology in sysfs"))
        for g in inv.gpus:
            if g.reported_gfx:
                findings.append(Finding.info(
                    f"rocminfo reports GPU {g.index} as {g.reported_gfx} because "
                    f"HSA_OVERRIDE_GFX_VERSION is set; the hardware is {g.gfx} "
                    "(see gfx-override)"))
        summary = inventory_summary(inv.gpus)
        selection = hip_selection(environment(host), inv.gpus)
        visible = selection.chosen if selection else inv.gpus
        igpus = [g for g in visible if g.is_integrated]
        dgpus = [g for g in visible if not g.is_integrated]
        if igpus and dgpus:
            return self._igpu_beside_dgpu(host, inv, igpus, dgpus, findings)
        if selection and any(g.is_integrated for g in inv.gpus) and dgpus:
            findings.append(Finding.info(
                f"{selection.var}={selection.value} keeps the integrated GPU out of HIP"))
        return self.passed(summary, findings)

    def _igpu_beside_dgpu(self, host: Host, inv: GpuInventory, igpus: list[GpuAgent],
                          dgpus: list[GpuAgent], findings: list[Finding]) -> CheckResult:
        for g in igpus:
            hints = [f"{g.compute_units} CUs" if g.compute_units is not None else "",
                     f"{size_text(g.vram_bytes)} memory pool" if g.vram_bytes else "",
                     f"no unique id ({raw_uuid(inv, g)})" if raw_uuid(inv, g) and not g.uuid
                     else ""]
            detail = ", ".join(h for h in hints if h)
            findings.append(Finding.hint(
                f"GPU {g.index} ({describe(g)}{', ' + detail if detail else ''}) is the "
                "processor's integrated GPU: HIP programs count it as a device of their own, "
                "so code that uses every GPU or picks one by index can land on it"))
        hip = ",".join(str(g.index) for g in dgpus)
        rocr = self._rocr_value(host, dgpus)
        names = ", ".join(describe(g) for g in dgpus)
        if rocr is not None:
            fix = Fix(f"Expose only the discrete GPU(s) ({names}) with ROCR_VISIBLE_DEVICES, "
                      f"which AMD recommends on Linux (or HIP_VISIBLE_DEVICES={hip}); add the "
                      "line to your shell profile to keep it.",
                      commands=(f"export ROCR_VISIBLE_DEVICES={rocr}",))
        else:
            fix = Fix(f"Expose only the discrete GPU(s) ({names}) to HIP; add the line to "
                      "your shell profile to keep it.",
                      commands=(f"export HIP_VISIBLE_DEVICES={hip}",))
        igpu_names = ", ".join(f"{describe(g)} (GPU {g.index})" for g in igpus)
        return self.result(Status.WARN, f"integrated GPU beside the discrete one: {igpu_names}",
                           findings, fix, GPU_ISOLATION)

    @staticmethod
    def _rocr_value(host: Host, dgpus: list[GpuAgent]) -> Optional[str]:
        """ROCR_VISIBLE_DEVICES indexes every GPU; rocminfo lists only those it exposes."""
        if "ROCR_VISIBLE_DEVICES" not in environment(host):
            return ",".join(str(g.index) for g in dgpus)
        if all(g.uuid for g in dgpus):
            return ",".join(str(g.uuid) for g in dgpus)
        physical = {g.node: g.index for g in kfd_gpus(host)}
        if all(g.node in physical for g in dgpus):
            return ",".join(str(physical[g.node]) for g in dgpus)
        return None
