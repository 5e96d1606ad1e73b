"""A GPU's PCIe link as the slot gives it: the current speed and width against the most the
card and its slot allow (pcie-link judges it; host-link measures against it).

On AMD cards with their own PCIe switch (RDNA), the GPU function's link is the one inside the
card; the slot's link is on the card's upstream switch port, the topmost AMD bridge above the
GPU (LACT issues 334 and 593), so that one is read. NVIDIA GPUs whose sysfs has no link
files (a virtual machine's) are read from `nvidia-smi -q`.

By hand: `grep . /sys/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}`;
`nvidia-smi -q -d PCIE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.nvidia_smi_q import nvidia_smi_q
from rocmdoctor.facts.pci import AMD, NVIDIA, PciDevice, device, pci_gpus
from rocmdoctor.host import Host
from rocmdoctor.kb import pcie


@dataclass(frozen=True)
class Link:
    gpu: PciDevice
    read_from: str  # where the values come from: a BDF or "nvidia-smi -q"
    speed: Optional[float]  # GT/s now
    width: Optional[int]
    max_speed: Optional[float]  # the most the card and its slot allow
    max_width: Optional[int]


def _min(*values: Optional[float]) -> Optional[float]:
    known = [v for v in values if v]
    return min(known) if known else None


def slot_device(host: Host, gpu: PciDevice) -> tuple[PciDevice, Optional[PciDevice]]:
    """(the device whose link is the slot's, the port above it) for a GPU."""
    link_dev = gpu
    if gpu.vendor == AMD:
        for bdf in reversed(gpu.parents):
            parent = device(host, bdf)
            if parent is None or parent.vendor != AMD or not parent.is_bridge:
                break
            link_dev = parent
    above = link_dev.parents[-1] if link_dev.parents else None
    return link_dev, device(host, above) if above else None


def sysfs_link(host: Host, gpu: PciDevice) -> Optional[Link]:
    dev, port = slot_device(host, gpu)
    if dev.speed("current") is None and dev.width("current") is None:
        return None
    max_speed = _min(dev.speed("max"), port.speed("max") if port else None)
    max_width = _min(dev.width("max"), port.width("max") if port else None)
    return Link(gpu, dev.bdf, dev.speed("current"), dev.width("current"), max_speed,
                int(max_width) if max_width else None)


def smi_link(host: Host, gpu: PciDevice) -> Optional[Link]:
    smi = next((g for g in nvidia_smi_q(host).gpus if g.bus_id == gpu.bdf), None)
    if smi is None:
        return None
    gen_max, gen_now, host_max, width_max, width_now = smi.link
    gen_cap = min(g for g in (gen_max, host_max) if g) if gen_max or host_max else None
    speed = pcie.GENERATION_GT.get(gen_now or 0)
    return Link(gpu, "nvidia-smi -q", speed, width_now, pcie.GENERATION_GT.get(gen_cap or 0),
                width_max)


def gpu_link(host: Host, bdf: str) -> Optional[Link]:
    """The link of the GPU at this PCI address, from sysfs or nvidia-smi; None when unread."""
    gpu = next((g for g in pci_gpus(host) if g.bdf.lower() == bdf.lower()), None)
    if gpu is None:
        return None
    return sysfs_link(host, gpu) or (smi_link(host, gpu) if gpu.vendor == NVIDIA else None)
