"""Vendor peak dense TFLOP/s per PyTorch device, the denominator of MFU "vs spec".

Dense figures (2:4 sparsity excluded), per device as PyTorch sees it: an MI250X is two
devices (GCDs), so its entry is half the package figure. "fp32" is the matrix-core FP32 rate
where the GPU has one (CDNA), else the vector rate. A GPU without TF32 units has no "tf32"
entry; `peak_for` then falls back to "fp32" and says so. Matching is on
torch.cuda.get_device_name(); no match means no spec MFU (the measured-GEMM MFU still works).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Peak:
    name: str
    pattern: str  # regex searched in the device name, case-insensitive
    tflops: dict[str, float]  # dtype -> dense TFLOP/s
    source: str
    note: str = ""


PEAKS: tuple[Peak, ...] = (
    Peak("AMD Instinct MI300X", r"\bMI300X\b",
         {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
         "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html",
         "304 CUs at 2.1 GHz"),
    Peak("AMD Instinct MI250X (one GCD)", r"\bMI250X\b",
         {"fp32": 47.9, "bf16": 191.5, "fp16": 191.5},
         "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi250.html",
         "package: 383 TFLOP/s FP16/BF16, 95.7 FP32 matrix, over 2 GCDs; no TF32"),
    Peak("AMD Instinct MI210", r"\bMI210\b",
         {"fp32": 45.3, "bf16": 181.0, "fp16": 181.0},
         "https://www.anandtech.com/show/17326/amd-releases-instinct-mi210-accelerator-cdna-2-on-a-pcie-card",
         "FP32 matrix 45.3, vector 22.6; no TF32"),
    Peak("AMD Radeon RX 7900 XTX", r"\b7900 XTX\b",
         {"fp32": 61.4, "bf16": 122.8, "fp16": 122.8},
         "https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html",
         "FP32 61.4 counts dual issue, which PyTorch GEMMs do not reach; BF16 WMMA runs at "
         "the FP16 rate; no TF32"),
    Peak("AMD Radeon PRO W7900", r"\bW7900\b",
         {"fp32": 61.3, "bf16": 122.6, "fp16": 122.6},
         "https://www.amd.com/en/products/graphics/workstations/radeon-pro/w7900.html",
         "same Navi 31 as the 7900 XTX at lower clocks; no TF32"),
    Peak("NVIDIA H200", r"\bH200\b",
         {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
         "https://www.nvidia.com/en-us/data-center/h200/",
         "H100 SXM5 compute with 141 GB HBM3e at 4.8 TB/s; NVIDIA's datasheet counts 2:4 "
         "sparsity (1,979 TFLOP/s bf16, 3,958 fp8): the dense figures are half"),
    Peak("NVIDIA H100 SXM5", r"\bH100\b(?!.*(PCIe|NVL))",
         {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
         "https://glennklockwood.com/garden/processors/h100",
         "132 SMs at 1.83 GHz (NVIDIA Hopper whitepaper figures); PCIe and NVL parts differ"),
    Peak("NVIDIA A100", r"\bA100\b",
         {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
         "https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/",
         "Table 3 of the Hopper blog lists the A100 column"),
    Peak("NVIDIA GeForce RTX 4090", r"\bRTX 4090\b",
         {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
         "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
         "tensor rates with FP32 accumulate, which PyTorch AMP uses (330.3 with FP16 accumulate)"),
)


@dataclass(frozen=True)
class PeakLookup:
    peak: Optional[Peak]
    dtype: Optional[str]  # the dtype whose figure is used
    tflops: Optional[float]
    reason: Optional[str]  # why there is no figure, or how it was chosen


def peak_for(device_name: str, precision: str) -> PeakLookup:
    """The spec peak for a device name and a precision (fp32/tf32/bf16/fp16, fp8)."""
    peak = next((p for p in PEAKS if re.search(p.pattern, device_name, re.I)), None)
    if peak is None:
        return PeakLookup(None, None, None, f"no peak figure for {device_name!r} in "
                          "rocmdoctor.kb.peaks")
    if precision in peak.tflops:
        return PeakLookup(peak, precision, peak.tflops[precision], None)
    if precision == "tf32" and "fp32" in peak.tflops:
        return PeakLookup(peak, "fp32", peak.tflops["fp32"],
                          f"{peak.name} has no TF32 units; the FP32 peak is used")
    return PeakLookup(peak, None, None, f"no {precision} figure for {peak.name}")
