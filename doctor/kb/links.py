"""Nominal GPU-to-GPU link rates, per direction, as data.

`nominal_rate(link, gpu_name)` answers what one pair of GPUs can move in one direction over the
link `rocmdoctor.facts.topology` found between them, from the vendor's own figures. Where the vendor
gives a per-GPU aggregate, `what` says how the per-pair figure follows from it. A GPU, link kind
or PCIe generation that is not in these tables gets None: no guessing.

Units: GB/s are 10^9 bytes per second, one direction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.model import NVLINK, PCIE, XGMI, Link

# NVIDIA's own MLPerf system descriptions (submitter NVIDIA): "18x 4th Gen NVLink, 900GB/s",
# "accelerator_host_interconnect": "PCIe Gen5 x16".
MLPERF_DGX_H100 = ("https://github.com/mlcommons/inference_results_v4.1/blob/main/closed/NVIDIA/"
                   "systems/DGX-H100_H100-SXM-80GBx8_TRT.json")
MLPERF_H200 = ("https://github.com/mlcommons/inference_results_v4.1/blob/main/closed/NVIDIA/"
               "systems/H200-SXM-141GBx8_TRT.json")
# "Ein einzelner NVIDIA A100 ... unterstützt bis zu zwölf NVLink-Verbindungen der dritten
# Generation für eine Bandbreite von insgesamt 600 GB/s" (NVIDIA's NVLink page, German edition).
NVIDIA_NVLINK_A100 = "https://www.nvidia.com/de-de/data-center/nvlink/"
# NVIDIA A100 40GB PCIe product brief PB-10137-001: "a dual-slot 10.5 inch PCI Express Gen4
# card based on the NVIDIA Ampere GA100"; the SXM4 module carries the same GA100.
A100_PCIE_BRIEF = "https://docslib.org/doc/3015592/a100-40gb-pcie-product-brief"
# ROCm GPU architecture pages: MI300X "host system via PCIe Gen 5 x16 links ... seven ... AMD
# Infinity Fabric links ... to form a fully connected 8-GPU system"; MI250 "PCIe Gen 4 x16";
# MI100 "PCIe Gen 4 x16 link (16 GT/sec)".
_ROCM_ARCH = ("https://github.com/ROCm/legacy-rocm-build/blob/"
              "089d7513c55fc7b6edb2a75b83cb40ca883a0ec2/docs/conceptual/gpu-arch/")
ROCM_MI300 = _ROCM_ARCH + "mi300.md"
ROCM_MI250 = _ROCM_ARCH + "mi250.md"
ROCM_MI100 = _ROCM_ARCH + "mi100.md"
# AMD's blog on amd-smi, run on MI300X: `amd-smi xgmi` prints bit_rate "32 Gb/s" and
# max_bandwidth "512 Gb/s" per XGMI link. amdgpu computes that maximum as speed x width and
# documents it as unidirectional (amd-gfx list, "Add APIs to initialize XGMI speed, width
# details", https://mail-archive.com/amd-gfx@lists.freedesktop.org/msg118097.html).
AMD_SMI_BLOG = ("https://github.com/ROCm/rocm-blogs/blob/1d0a28f73c1303d9561ff8bce07bc5d43b0e19fd/"
                "blogs/software-tools-optimization/amd-smi-overview/README.md")
# Linux PCIE_SPEED2MBS_ENC: "PCIe speed to Mb/s reduced by encoding overhead", 16000*128/130
# for 16 GT/s and 32000*128/130 for 32 GT/s, per lane and direction.
LINUX_PCIE_ENCODING = ("https://github.com/torvalds/linux/commit/"
                       "9cb3985af63555810bb07de50acdf4170771451d")

# PCIe generation -> GT/s per lane (Gen3 to Gen5 use 128b/130b encoding).
PCIE_GT_PER_S: dict[int, float] = {3: 8.0, 4: 16.0, 5: 32.0}


@dataclass(frozen=True)
class LinkRate:
    gbps_per_direction: float  # GB/s (bytes), one direction, between the two GPUs of a pair
    what: str  # how the figure follows from the vendor's numbers
    source: str  # URL of the original spec


@dataclass(frozen=True)
class NvlinkSpec:
    generation: str  # "NVLink 4"
    links_per_gpu: int
    gbps_bidirectional_per_gpu: float  # the vendor's headline figure
    source: str

    @property
    def per_link_per_direction(self) -> float:
        return self.gbps_bidirectional_per_gpu / self.links_per_gpu / 2


@dataclass(frozen=True)
class XgmiSpec:
    gbps_per_direction: float  # per pair of GPUs
    what: str
    source: str


@dataclass(frozen=True)
class GpuLinks:
    """What one GPU model's links can carry. `pattern` is matched against the device name."""

    name: str
    pattern: str
    nvlink: Optional[NvlinkSpec] = None
    xgmi: Optional[XgmiSpec] = None
    pcie_gen: Optional[int] = None  # the GPU's own x16 host link
    pcie_source: str = ""


GPU_LINKS: tuple[GpuLinks, ...] = (
    # H800/A800 (export parts with fewer NVLinks) and H20 are deliberately not matched.
    GpuLinks("NVIDIA H100", r"\bH100\b", NvlinkSpec("NVLink 4", 18, 900.0, MLPERF_DGX_H100),
             pcie_gen=5, pcie_source=MLPERF_DGX_H100),
    GpuLinks("NVIDIA H200", r"\bH200\b", NvlinkSpec("NVLink 4", 18, 900.0, MLPERF_H200),
             pcie_gen=5, pcie_source=MLPERF_H200),
    GpuLinks("NVIDIA A100", r"\bA100\b", NvlinkSpec("NVLink 3", 12, 600.0, NVIDIA_NVLINK_A100),
             pcie_gen=4, pcie_source=A100_PCIE_BRIEF),
    GpuLinks("AMD Instinct MI300X", r"\bMI300X\b",
             xgmi=XgmiSpec(64.0, "xGMI on MI300X: 7 links per GPU form a fully connected 8-GPU "
                                 "node, one link per pair; 32 Gb/s x 16 lanes = 512 Gb/s = "
                                 "64 GB/s per direction per link", AMD_SMI_BLOG),
             pcie_gen=5, pcie_source=ROCM_MI300),
    # MI250/MI250X GCD pairs have 1, 2 or 4 xGMI links (ROCm mi250.md) and the topology tools
    # do not say which, so no xGMI figure; MI210 bridge and MI100 hive link widths are not
    # stated by AMD's pages either.
    GpuLinks("AMD Instinct MI250/MI250X", r"\bMI250X?\b", pcie_gen=4, pcie_source=ROCM_MI250),
    GpuLinks("AMD Instinct MI100", r"\bMI100\b", pcie_gen=4, pcie_source=ROCM_MI100),
)


def gpu_links(gpu_name: str) -> Optional[GpuLinks]:
    """The table entry for a device name such as "NVIDIA H100 80GB HBM3"."""
    for spec in GPU_LINKS:
        if re.search(spec.pattern, gpu_name, re.IGNORECASE):
            return spec
    return None


def pcie_x16_per_direction(generation: int) -> Optional[float]:
    """GB/s one way over an x16 link of that generation, after 128b/130b encoding."""
    rate = PCIE_GT_PER_S.get(generation)
    return None if rate is None else round(rate * 16 * 128 / 130 / 8, 2)


def nominal_rate(link: Link, gpu_name: str,
                 pcie_gen: Optional[int] = None) -> Optional[LinkRate]:
    """What the pair can move per direction over `link`, or None when it is not known.

    `pcie_gen` overrides the GPU's own PCIe generation (for example the negotiated one).
    """
    spec = gpu_links(gpu_name)
    if link.kind == NVLINK:
        nv = spec.nvlink if spec else None
        if spec is None or nv is None or not link.count or link.count > nv.links_per_gpu:
            return None
        per_link = nv.per_link_per_direction
        return LinkRate(
            link.count * per_link,
            f"{nv.generation}, {link.count} links x {per_link:g} GB/s per direction "
            f"({spec.name}: {nv.links_per_gpu} links, {nv.gbps_bidirectional_per_gpu:g} GB/s "
            f"bidirectional per GPU; {link.label} is the bond between this pair, all "
            f"{nv.links_per_gpu} when the GPUs meet through NVSwitch)",
            nv.source)
    if link.kind == XGMI:
        if spec is None or spec.xgmi is None:
            return None
        return LinkRate(spec.xgmi.gbps_per_direction, spec.xgmi.what, spec.xgmi.source)
    if link.kind == PCIE:
        generation = pcie_gen or (spec.pcie_gen if spec else None)
        rate = pcie_x16_per_direction(generation) if generation else None
        if generation is None or rate is None:
            return None
        source = spec.pcie_source if spec and pcie_gen is None else LINUX_PCIE_ENCODING
        return LinkRate(
            rate,
            f"PCIe Gen{generation} x16: {PCIE_GT_PER_S[generation]:g} GT/s x 16 lanes x "
            f"128/130 / 8 = {rate:g} GB/s per direction, an upper bound for the "
            f"{link.label} path",
            source)
    return None
