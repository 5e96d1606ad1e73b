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

from rocmdoctor.facts.amd_gpus import KFD_NODES, kfd_node_names
from rocmdoctor.facts.kernel_log import kernel_log, matches
from rocmdoctor.facts.pci import AMD, KfdNode, PciDevice, bound_driver, kfd_gpu_nodes, pci_gpus
from rocmdoctor.facts.platform import is_wsl, not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb.kernel_log import (
    AMDGPU_NO_ATOMICS,
    KERNEL_MESSAGES,
    KFD_DEVICE,
    KFD_EVENTS,
    LSPCI_ATOMICS,
    ROCM_2429,
    ROCM_ATOMICS,
)
from rocmdoctor.kb.messages import DMESG_AMDGPU
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

ENTRY = {e.key: e for e in KERNEL_MESSAGES}
EVENT_ENTRY = {"atomics": "kfd-pci-rejects-atomics", "not-supported": "kfd-not-supported",
               "not-added": "kfd-device-not-added",
               "atomics-firmware": "kfd-atomics-mec-firmware-old"}
_FIRMWARE_NUMBERS = re.compile(dict(KFD_EVENTS)["atomics-firmware"], re.IGNORECASE)
WHY = {"atomics": "the path to it rejects PCIe atomics",
       "not-supported": "this kernel's KFD does not support it",
       "not-added": "KFD failed to add it"}
DRIVER_CAUSES = ("amdgpu-firmware-missing", "amdgpu-psp-load-failed", "amdgpu-fatal-init")


def _why_text(kind: Optional[str], line: Optional[str]) -> Optional[str]:
    """The reason a GPU is not in KFD, with the kernel's own numbers where it gives them."""
    m = _FIRMWARE_NUMBERS.search(line or "") if kind == "atomics-firmware" else None
    if m is not None:
        return (f"its MEC firmware {m['mec']} is older than {m['need']}, from which KFD takes "
                "it without the PCIe atomics the path to it does not pass")
    return WHY.get(kind or "")


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

    @staticmethod
    def _without_atomics(host: Host, gpus: list[PciDevice]) -> list[tuple[PciDevice, str]]:
        """GPUs KFD took although amdgpu_device_init() said "PCIE atomic ops is not supported"
        for them (a line without an address names the only AMD GPU there is)."""
        found: dict[str, tuple[PciDevice, str]] = {}
        for line in kernel_log(host).lines:
            m = re.search(AMDGPU_NO_ATOMICS, line.message, re.IGNORECASE)
            if m is None:
                continue
            bdf = m.group("bdf")
            match = next((g for g in gpus if g.bdf == bdf), None) if bdf else (
                gpus[0] if len(gpus) == 1 else None)
            if match is not None and match.bdf not in found:
                found[match.bdf] = (match, line.message)
        return list(found.values())

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
            driver = bound_driver(host, gpu.bdf)
            if driver is not None and driver != "amdgpu":
                findings.append(Finding.info(f"{gpu.label()}: driven by {driver}, not amdgpu: "
                                             "ROCm does not use it"))
                continue
            kind, line = self._why(host, gpu)
            problems.append((gpu, kind, line))
        if not problems:
            summary = (f"every AMD GPU on the PCI bus that amdgpu drives is in the KFD topology "
                       f"({len(in_kfd)} of {len(gpus)})")
            without = self._without_atomics(host, [g for g in gpus if g.bdf in in_kfd])
            if not without:
                return self.passed(summary, findings)
            for gpu, line in without:
                findings.append(Finding.error(
                    f"{gpu.label()}: in the KFD topology, but amdgpu found no PCIe atomics on "
                    f"the path to it (kernel log: {line[:200]}): GPU code that calls back to "
                    "the host (device printf, assert, device-side malloc: HIP's hostcall) fails "
                    "with 'Pcie atomics not enabled, hostcall not supported'"))
            names = ", ".join(g.bdf for g, _ in without)
            # ROCm/ROCm#6520: a GPU passed through by Proxmox with its audio function gets a
            # root port without AtomicOp completion; passed as a single function it has them.
            return self.result(
                Status.WARN, f"{summary}, but the path to {names} passes no PCIe atomics "
                "(hostcall fails)", findings,
                Fix("Put the card in a slot wired to the CPU (not the chipset), without a riser "
                    "or PCIe switch in between, and update the motherboard BIOS; under a "
                    "hypervisor, pass the GPU through as a single function.",
                    (LSPCI_ATOMICS,), needs_root=True), ROCM_2429)
        no_topology = kfd_node_names(host) is None
        for gpu, kind, line in problems:
            why = _why_text(kind, line) or (ENTRY[kind].title if kind in ENTRY else
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
        gpu, kind, first_line = problems[0]
        key = EVENT_ENTRY.get(kind or "", kind or "")
        reason = _why_text(kind, first_line) or (ENTRY[key].title if key in ENTRY else
                                                 "reason unknown")
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
