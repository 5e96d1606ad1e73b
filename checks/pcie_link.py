"""pcie-link: each GPU's PCIe link, current against the most the card and its slot allow, and
the host-to-device bandwidth a narrower link costs.

On AMD cards with their own PCIe switch (RDNA), the GPU function's link is the one inside the
card; the slot's link is on the card's upstream switch port, the topmost AMD bridge above the
GPU (LACT issues 334 and 593), so that one is read. GPUs lower their link speed when idle, so a
slower link is reported, not failed; a narrower one is a warning.

By hand: `grep . /sys/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}` for the GPU and
the bridges above it (`readlink /sys/bus/pci/devices/<bdf>`); `sudo lspci -vv -s <bdf> | grep
-E 'LnkCap|LnkSta'`; NVIDIA: `nvidia-smi -q -d PCIE` (PCIe Generation, Link Width).
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amd_gpus import kfd_gpus
from rocmdoctor.facts.nvidia_smi_q import nvidia_smi_q
from rocmdoctor.facts.pci import AMD, NVIDIA, kfd_gpu_nodes, pci_gpus
from rocmdoctor.facts.pcie_link import Link, smi_link, sysfs_link
from rocmdoctor.facts.platform import is_wsl, platform_kind
from rocmdoctor.host import Host
from rocmdoctor.kb import pcie
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

SYSFS_PCI = "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci"
LACT_593 = "https://github.com/ilya-zlobintsev/LACT/issues/593"


class PcieLink(Check):
    id = "pcie-link"
    title = "GPU PCIe link speed and width"
    source = SYSFS_PCI

    def applies(self, host: Host) -> Optional[str]:
        if platform_kind(host) == "cpu":
            return "no AMD or NVIDIA GPU or driver found"
        if is_wsl(host):
            return "WSL2: the GPU's PCIe link is not visible from Linux"
        return None

    def run(self, host: Host) -> CheckResult:
        integrated = {n.bdf for n in kfd_gpu_nodes(host)
                      for g in kfd_gpus(host) if g.node == n.node and g.is_integrated}
        gpus = [g for g in pci_gpus(host) if g.vendor in (AMD, NVIDIA)
                and g.bdf not in integrated]
        if not gpus:
            return self.skipped("no discrete AMD or NVIDIA GPU on the PCI bus")
        links: list[Link] = []
        unread: list[str] = []
        for gpu in gpus:
            link = sysfs_link(host, gpu) or (smi_link(host, gpu) if gpu.vendor == NVIDIA
                                             else None)
            if link is None:
                unread.append(gpu.label())
            else:
                links.append(link)
        if not links:
            return self.skipped(f"no PCIe link speed or width is readable for "
                                f"{', '.join(unread)}")
        findings = [Finding.info(f"{g}: link speed and width not readable") for g in unread]
        narrow = []
        for link in links:
            findings.append(self._finding(link))
            if link.width and link.max_width and link.width < link.max_width:
                narrow.append(link)
            elif link.speed and link.max_speed and link.speed < link.max_speed:
                findings.append(Finding.info(
                    f"{link.gpu.bdf} runs below its top speed now: GPUs lower the link speed "
                    f"when idle; read it again while a job runs: cat "
                    f"/sys/bus/pci/devices/{link.read_from}/current_link_speed"
                    if link.read_from != "nvidia-smi -q" else
                    f"{link.gpu.bdf} runs below its top speed now: GPUs lower the link speed "
                    "when idle; read it again while a job runs: nvidia-smi -q -d PCIE"))
        findings.extend(self._replays(host, links))
        if not narrow:
            return self.passed(f"{len(links)} GPU link(s) at full width", findings)
        first = narrow[0]
        summary = (f"{len(narrow)} GPU link(s) narrower than the card and slot allow: "
                   f"{first.gpu.bdf} runs x{first.width} of x{first.max_width}")
        return self.result(Status.WARN, summary, findings, Fix(
            "Put the card in a slot wired for all its lanes (the motherboard manual says which "
            "slots share lanes with M.2 drives or other slots), seat it fully without a riser, "
            "and check the slot's lane (bifurcation) setting in the BIOS."))

    @staticmethod
    def _replays(host: Host, links: list[Link]) -> list[Finding]:
        """NVIDIA's PCIe replay counter: packets the link had to send again."""
        out = []
        for link in links:
            if link.gpu.vendor != NVIDIA:
                continue
            smi = next((g for g in nvidia_smi_q(host).gpus if g.bus_id == link.gpu.bdf), None)
            replays = smi.number("PCI", "Replays Since Reset") if smi else None
            if replays:
                out.append(Finding.info(
                    f"{link.gpu.bdf}: PCIe Replays Since Reset: {replays} (packets the link had "
                    "to send again; a count that keeps growing means a marginal link)"))
        return out

    @staticmethod
    def _finding(link: Link) -> Finding:
        now = pcie.describe(link.speed, link.width)
        top = pcie.describe(link.max_speed, link.max_width)
        where = "" if link.read_from == link.gpu.bdf else f", read from {link.read_from}"
        if link.read_from not in (link.gpu.bdf, "nvidia-smi -q"):
            where += " (the card's upstream port: the GPU function's own link is inside the card)"
        text = f"{link.gpu.label()}: {now} of {top}{where}"
        full = pcie.link_gbps(link.max_speed, link.max_width)
        if link.width and link.max_width and link.width < link.max_width:
            reduced = pcie.link_gbps(link.max_speed, link.width)
            if full and reduced:
                text += (f"; at most {reduced:g} GB/s per direction host-to-device instead of "
                         f"{full:g} GB/s")
            return Finding.error(text)
        return Finding.info(text + (f"; {full:g} GB/s per direction at full speed" if full
                                    else ""))
