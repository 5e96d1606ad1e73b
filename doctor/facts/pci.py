"""PCI devices from sysfs (`/sys/bus/pci/devices/<bdf>/...`), `lspci -nn`, and the GPU nodes of
the KFD topology, so that a GPU on the bus can be matched with the one ROCm sees.

sysfs values as the kernel writes them (drivers/pci/pci-sysfs.c): `vendor` and `device`
"0x1002", `class` "0x030000"; `current_link_speed`/`max_link_speed` "16.0 GT/s PCIe" (older
kernels "8 GT/s", "Unknown" when not known); `*_link_width` a number of lanes. Each entry of
/sys/bus/pci/devices is a symlink into the device tree, so its target names the bridges above
the device. KFD node properties are `<name> <value>` lines (kfd_topology.c node_show):
`vendor_id`, `device_id`, `location_id` (bus << 8 | devfn), `domain`.

By hand: `lspci -nn`; `grep . /sys/bus/pci/devices/*/{class,vendor,device,*_link_*}`;
`readlink /sys/bus/pci/devices/<bdf>`; `cat /sys/class/kfd/kfd/topology/nodes/*/properties`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from rocmdoctor.facts.amd_gpus import KFD_NODES, kfd_node_names, parse_kfd_properties
from rocmdoctor.host import Host

PCI_DEVICES = "/sys/bus/pci/devices"
GPU_CLASSES = ("0x03", "0x12")  # display controllers, processing accelerators
BRIDGE_CLASS = "0x0604"
AMD, NVIDIA = "0x1002", "0x10de"
LINK_FILES = ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width")
BDF = re.compile(r"(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", re.IGNORECASE)
_FULL_BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_SPEED = re.compile(r"(\d{1,3}(?:\.\d{1,2})?)\s*GT/s")
_LSPCI = re.compile(
    r"^(?P<bdf>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\s+(?P<kind>[^\[\n]*?)\s*"
    r"\[(?P<cls>[0-9a-f]{4})\]:\s*(?P<name>.*?)\s*\[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]",
    re.IGNORECASE)


def parse_speed(text: Optional[str]) -> Optional[float]:
    """GT/s from "16.0 GT/s PCIe" or "8 GT/s"; None for "Unknown" or anything else."""
    m = _SPEED.search(text or "")
    return float(m.group(1)) if m else None


def parse_width(text: Optional[str]) -> Optional[int]:
    value = (text or "").strip().lstrip("x")
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 3 else None


def full_bdf(bdf: str) -> str:
    """"0000:03:00.0" from "03:00.0" (domain 0 when none is given), lower case."""
    bdf = bdf.lower()
    return bdf if _FULL_BDF.fullmatch(bdf) else f"0000:{bdf}"


@dataclass(frozen=True)
class PciDevice:
    bdf: str  # "0000:03:00.0"
    vendor: str  # "0x1002"
    device: str  # "0x744c"
    pci_class: str  # "0x030000"
    link: dict[str, str] = field(default_factory=dict)  # link file -> value as read
    parents: tuple[str, ...] = ()  # BDFs of the bridges above it, the root port first
    name: Optional[str] = None  # from lspci -nn

    @property
    def is_gpu(self) -> bool:
        return self.pci_class.startswith(GPU_CLASSES)

    @property
    def is_bridge(self) -> bool:
        return self.pci_class.startswith(BRIDGE_CLASS)

    @property
    def pci_id(self) -> str:
        """"1002:744c", as KFD and lspci print it."""
        return f"{self.vendor[2:]}:{self.device[2:]}"

    def speed(self, which: str) -> Optional[float]:
        return parse_speed(self.link.get(f"{which}_link_speed"))

    def width(self, which: str) -> Optional[int]:
        return parse_width(self.link.get(f"{which}_link_width"))

    def label(self) -> str:
        if self.name:
            return f"{self.bdf} {self.name}"
        return f"{self.bdf} [{self.vendor[2:] or '?'}:{self.device[2:] or '?'}]"


def _read(host: Host, path: str) -> str:
    return (host.read_file(path) or "").strip().lower()


def parse_lspci_nn(text: str) -> list[PciDevice]:
    """Devices of `lspci -nn` lines; other lines (prompts, -v detail) are skipped."""
    found = []
    for line in text.splitlines():
        m = _LSPCI.match(line.strip())
        if m:
            found.append(PciDevice(full_bdf(m.group("bdf")), "0x" + m.group("vendor").lower(),
                                   "0x" + m.group("device").lower(),
                                   "0x" + m.group("cls").lower(), name=m.group("name")[:120]))
    return found


def lspci_devices(host: Host) -> tuple[PciDevice, ...]:
    """The devices `lspci -nn` lists (none when lspci is not installed)."""

    def compute() -> tuple[PciDevice, ...]:
        result = host.run(["lspci", "-nn"])
        return tuple(parse_lspci_nn(result.stdout)) if result.ok else ()

    return host.memo("pci:lspci", compute)


def lspci_names(host: Host) -> dict[str, str]:
    """BDF -> device name from `lspci -nn`."""
    return {d.bdf: d.name or "" for d in lspci_devices(host)}


def pci_devices(host: Host) -> tuple[PciDevice, ...]:
    """Every PCI device in sysfs with vendor, device and class; GPUs and the bridges above them
    also with their link files (memoised)."""

    def compute() -> tuple[PciDevice, ...]:
        devices: dict[str, PciDevice] = {}
        for path in host.glob(PCI_DEVICES + "/*"):
            bdf = path.rsplit("/", 1)[-1].lower()
            info = host.stat(path)
            target = info.target if info is not None and info.target else ""
            chain = [full_bdf(b) for b in BDF.findall(target)]
            parents = tuple(b for b in chain if b != bdf)
            devices[bdf] = PciDevice(bdf, _read(host, path + "/vendor"),
                                     _read(host, path + "/device"), _read(host, path + "/class"),
                                     parents=parents)
        wanted = {b for d in devices.values() if d.is_gpu for b in (d.bdf, *d.parents)}
        for bdf in sorted(wanted):
            if bdf in devices:
                link = {}
                for name in LINK_FILES:
                    value = host.read_file(f"{PCI_DEVICES}/{bdf}/{name}")
                    if value is not None and value.strip():
                        link[name] = value.strip()[:40]
                old = devices[bdf]
                devices[bdf] = PciDevice(old.bdf, old.vendor, old.device, old.pci_class, link,
                                         old.parents)
        return tuple(devices[b] for b in sorted(devices))

    return host.memo("pci:devices", compute)


def pci_gpus(host: Host, vendor: Optional[str] = None) -> tuple[PciDevice, ...]:
    """GPUs on the PCI bus (display or accelerator class), with lspci names: from sysfs, else
    from `lspci -nn` when sysfs lists none."""
    from_sysfs = [d for d in pci_devices(host) if d.is_gpu]
    if from_sysfs:
        names = lspci_names(host)
        gpus = [PciDevice(d.bdf, d.vendor, d.device, d.pci_class, d.link, d.parents,
                          names.get(d.bdf)) for d in from_sysfs]
    else:
        gpus = [d for d in lspci_devices(host) if d.is_gpu]
    return tuple(g for g in gpus if vendor is None or g.vendor == vendor)


def device(host: Host, bdf: str) -> Optional[PciDevice]:
    return next((d for d in pci_devices(host) if d.bdf == bdf), None)


def bound_driver(host: Host, bdf: str) -> Optional[str]:
    """The driver bound to a PCI device ("amdgpu", "vfio-pci"): where its driver link leads;
    None when no driver is bound."""
    info = host.stat(f"{PCI_DEVICES}/{bdf}/driver")
    return info.target.rstrip("/").rsplit("/", 1)[-1] if info and info.target else None


@dataclass(frozen=True)
class KfdNode:
    node: int
    vendor_id: int
    device_id: int
    bdf: Optional[str]  # from domain and location_id; None on kernels without them
    gfx_target_version: int
    name: str  # the node's name file ("gfx1100", "ip discovery" on some)

    @property
    def pci_id(self) -> str:
        return f"{self.vendor_id:04x}:{self.device_id:04x}"


def kfd_gpu_nodes(host: Host) -> tuple[KfdNode, ...]:
    """The GPU nodes of the KFD topology (simd_count > 0), in node order (memoised)."""

    def compute() -> tuple[KfdNode, ...]:
        nodes = []
        for entry in sorted((e for e in kfd_node_names(host) or []
                             if e.isascii() and e.isdigit() and len(e) <= 9), key=int):
            props = parse_kfd_properties(host.read_file(f"{KFD_NODES}/{entry}/properties") or "")
            if props.get("simd_count", 0) == 0:
                continue
            location = props.get("location_id")
            bdf = None
            if location is not None:
                bus, devfn, domain = location >> 8 & 0xFF, location & 0xFF, props.get("domain", 0)
                bdf = f"{domain & 0xFFFF:04x}:{bus:02x}:{devfn >> 3:02x}.{devfn & 7}"
            nodes.append(KfdNode(int(entry), props.get("vendor_id", 0), props.get("device_id", 0),
                                 bdf, props.get("gfx_target_version", 0),
                                 (host.read_file(f"{KFD_NODES}/{entry}/name") or "").strip()))
        return tuple(nodes)

    return host.memo("kfd:gpu-nodes", compute)
