"""pcie-atomics: every AMD GPU on the PCI bus is in the KFD topology, and why one is not
(PCIe atomics rejected by the path to it, a GPU this kernel's KFD does not support, or the
driver refused it during start-up, as the kernel log says).

By hand: `lspci -nn | grep -E '\\[(03|12)[0-9a-f]{2}\\]: .*\\[1002:'`;
`grep -H -E '^(device_id|location_id|domain) ' /sys/class/kfd/kfd/topology/nodes/*/properties`;
`sudo dmesg | grep -iE 'kfd|amdgpu'`; `sudo lspci -vvv | grep -E '^[0-9a-f]|AtomicOps'`.
"""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.facts.kernel_log import kernel_log, matches
from rocmdoctor.facts.pci import AMD, PCI_DEVICES, KfdNode, PciDevice, kfd_gpu_nodes, pci_gpus
from rocmdoctor.facts.platform import is_wsl, not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES, KFD_DEVICE, KFD_EVENTS, ROCM_ATOMICS
from rocmdoctor.kb.messages import DMESG_AMDGPU
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

ENTRY = {e.key: e for e in KERNEL_MESSAGES}
EVENT_ENTRY = {"atomics": "kfd-pci-rejects-atomics", "not-supported": "kfd-not-supported",
               "not-added": "kfd-device-not-added"}
WHY = {"atomics": "the path to it rejects PCIe atomics",
       "not-supported": "this kernel's KFD does not support it",
       "not-added": "KFD failed to add it"}
DRIVER_CAUSES = ("amdgpu-firmware-missing", "amdgpu-psp-load-failed", "amdgpu-fatal-init")


def _in_kfd(gpus: tuple[PciDevice, ...], nodes: tuple[KfdNode, ...]) -> dict[str, KfdNode]:
    """BDF of each GPU KFD exposes -> its node: by PCI address, else by vendor:device id."""
    found: dict[str, KfdNode] = {}
    unplaced = []
    for node in nodes:
        if node.bdf and any(g.bdf == node.bdf for g in gpus):
            found[node.bdf] = node
        else:
            unplaced.append(node)
    for node in unplaced:
        match = next((g for g in gpus if g.bdf not in found and g.pci_id == node.pci_id), None)
        if match is not None:
            found[match.bdf] = node
    return found


def _bound_driver(host: Host, gpu: PciDevice) -> Optional[str]:
    info = host.stat(f"{PCI_DEVICES}/{gpu.bdf}/driver")
    return info.target.rstrip("/").rsplit("/", 1)[-1] if info and info.target else None


class PcieAtomics(Check):
    id = "pcie-atomics"
    title = "AMD GPUs on the PCI bus are in KFD (PCIe atomics)"
    source = ROCM_ATOMICS
    depends = ("amdgpu-driver",)

    def applies(self, host: Host) -> Optional[str]:
        if is_wsl(host):
            return "WSL2: GPUs reach Linux through /dev/dxg, not the PCI bus"
        return not_rocm_reason(host)

    def _why(self, host: Host, gpu: PciDevice) -> tuple[Optional[str], Optional[str]]:
        """(reason kind, the kernel-log line that shows it) for a GPU missing from KFD."""
        for line in kernel_log(host).lines:
            for kind, pattern in KFD_EVENTS:
                m = re.search(pattern, line.message, re.IGNORECASE)
                if m is None:
                    continue
                ids = m.groupdict()
                if ids.get("id") and ids["id"].lower() != gpu.pci_id:
                    continue
                if ids.get("did") and ids["did"].lower() != gpu.device[2:]:
                    continue
                return kind, line.message
        # amdgpu's own start-up failure: the line naming this GPU, and the firmware line
        # before it that names the cause (PSP lines carry no PCI address).
        lines = kernel_log(host).lines
        hits = {key: [ln for ln in lines if matches(ENTRY[key], ln.message)]
                for key in DRIVER_CAUSES}
        for key in DRIVER_CAUSES:
            mine = next((ln for ln in hits[key] if gpu.bdf in ln.message), None)
            if mine is None:
                continue
            if key == "amdgpu-fatal-init":
                for precise in DRIVER_CAUSES[:2]:
                    if hits[precise]:
                        return precise, hits[precise][0].message
            return key, mine.message
        return None, None

    def run(self, host: Host) -> CheckResult:
        gpus = pci_gpus(host, AMD)
        if not gpus:
            return self.skipped("no AMD GPU on the PCI bus (sysfs and lspci -nn list none)")
        in_kfd = _in_kfd(gpus, kfd_gpu_nodes(host))
        findings = [Finding.info(f"{g.label()}: KFD node {in_kfd[g.bdf].node}")
                    for g in gpus if g.bdf in in_kfd]
        missing = [g for g in gpus if g.bdf not in in_kfd]
        problems: list[tuple[PciDevice, Optional[str], Optional[str]]] = []
        for gpu in missing:
            driver = _bound_driver(host, gpu)
            if driver is not None and driver != "amdgpu":
                findings.append(Finding.info(f"{gpu.label()}: driven by {driver}, not amdgpu: "
                                             "ROCm does not use it"))
                continue
            kind, line = self._why(host, gpu)
            problems.append((gpu, kind, line))
        if not problems:
            return self.passed(f"every AMD GPU on the PCI bus that amdgpu drives is in the KFD "
                               f"topology ({len(in_kfd)} of {len(gpus)})", findings)
        no_topology = host.listdir(KFD_NODES) is None
        for gpu, kind, line in problems:
            why = WHY.get(kind or "") or (ENTRY[kind].title if kind in ENTRY else
                                          "no kernel-log line says why")
            text = f"{gpu.label()}: not in the KFD topology: {why}"
            findings.append(Finding.error(text + (f" (kernel log: {line[:200]})" if line else "")))
            if kind == "atomics" and gpu.parents:
                findings.append(Finding.info(
                    f"{gpu.bdf} sits below {len(gpu.parents)} bridge(s), from the root port: "
                    f"{', '.join(gpu.parents)}"))
        if no_topology:
            findings.append(Finding.info(f"{KFD_NODES} does not exist: amdkfd did not start"))
        log = kernel_log(host)
        if log.source is None:
            findings.append(Finding.hint(f"the kernel log is not readable here ({log.problem}), "
                                         "so the reason may be missing"))
        gpu, kind, _ = problems[0]
        key = EVENT_ENTRY.get(kind or "", kind or "")
        reason = WHY.get(kind or "") or (ENTRY[key].title if key in ENTRY else "reason unknown")
        summary = (f"{len(problems)} of {len(gpus)} AMD GPU(s) on the PCI bus "
                   f"{'is' if len(problems) == 1 else 'are'} not in the KFD topology: "
                   f"{gpu.bdf}: {reason}")
        if key in ENTRY:
            entry = ENTRY[key]
            fix = Fix(entry.fix, entry.commands, entry.needs_root)
            source = entry.source
        else:
            fix = Fix("ROCm cannot use a GPU that KFD did not add; the kernel log says why.",
                      (DMESG_AMDGPU,), needs_root=True)
            source = KFD_DEVICE
        return self.result(Status.FAIL, summary, findings, fix, source)
