"""What a card's measured figures are judged against (`check --deep`), each with its source.

Two kinds of reference:
- a *class reference*: a published measurement on cards of that class, with the command
  that measured it, or the vendor's own qualification target (ROCm Validation Suite);
- the *datasheet* figure, shown beside it as "% of spec"; a datasheet figure alone judges
  only where a published measurement says what share of it is reached (memory, host link).

A card matching no row gets its figures and "no reference for this card", never a verdict.
Matching is on torch.cuda.get_device_name(), as kb/peaks.py does for the spec peaks.

Units: TFLOP/s are 10^12 dense (no 2:4 sparsity) operations a second; GB/s are 10^9 bytes a
second; a copy counts bytes read plus bytes written (STREAM's counting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# Stas Bekman, Machine Learning Engineering, "Maximum Achievable Matmul FLOPS comparison
# table": mamf-finder.py, a brute-force search of matmul shapes, "a mean of 100 iterations
# after 50 warmup iterations for each shape" (BF16 and FP8 tables, v2 and v1).
MAMF = ("https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/"
        "compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table")
MAMF_COMMAND = "mamf-finder.py, the mean of 100 runs after 50 warm-ups per shape"
# ROCm Validation Suite, MI300X GEMM stress test: "The test on each GPU passes (TRUE) if the
# GPU achieves 1215 TFLOPS or more" (fp8), 639 (fp16), 581 (bf16), 100 (sgemm), random data.
RVS_GST_MI300X = ("https://github.com/ROCm/ROCmValidationSuite/blob/"
                  "6d2e13f3ffa1d643a915a3b9d20bb631288de8dc/rvs/conf/MI300X/gst_single.conf")
RVS_COMMAND = "rvs -c conf/MI300X/gst_single.conf"
# ROCm's roofline benchmark on MI300X "gives 4.2TB/s" (and an MI308X at 2 TB/s was a fault
# under investigation): ROCm issue 5070, kept in ROCm/legacy-rocm-build.
MI300X_HBM_MEASURED = "https://github.com/ROCm/legacy-rocm-build/issues/5070"
# AMD: "The 5.3 TB/s BW in the datasheet is the theoretical peak, not achievable with
# real-world tests" (ROCm/rocm_bandwidth_test issue 121).
AMD_PEAK_NOT_ACHIEVABLE = "https://github.com/ROCm/rocm_bandwidth_test/issues/121"
# AMD's Cluster Validation Suite, mi300_health_config.json: TransferBench "32_cu_rem_read":
# 48.0 GB/s expected from an MI300X reading host memory (a PCIe Gen5 x16 link).
AMD_CVS_HEALTH = ("https://rocm.docs.amd.com/projects/cvs/en/latest/reference/"
                  "configuration-files/health.html")
NVIDIA_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
NVIDIA_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
NVIDIA_A100 = "https://www.nvidia.com/en-us/data-center/a100/"
ROCM_MI300 = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html"
ROCM_MI250 = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi250.html"
AMD_MI210 = "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html"
AMD_7900XTX = ("https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/"
               "amd-radeon-rx-7900xtx.html")
AMD_W7900 = "https://www.amd.com/en/products/graphics/workstations/radeon-pro/w7900.html"
ADA_WHITEPAPER = ("https://images.nvidia.com/aem-dam/Solutions/geforce/ada/"
                  "nvidia-ada-gpu-architecture.pdf")

# Share of the datasheet memory bandwidth a copy or triad reaches on a healthy card, where a
# measurement is published: MI300X 4.2 of 5.3 TB/s (0.79).
MEMORY_SHARE = 4200.0 / 5300.0
MEMORY_SHARE_SOURCE = MI300X_HBM_MEASURED
# Share of the PCIe link's rate after encoding a healthy card's host copies reach: AMD
# expects 48 GB/s on MI300X's Gen5 x16 link, whose rate after encoding is 63.0 GB/s (0.76).
HOST_SHARE = 48.0 / 63.02
HOST_SHARE_SOURCE = AMD_CVS_HEALTH


@dataclass(frozen=True)
class CardMemory:
    name: str
    pattern: str  # regex searched in the device name, case-insensitive
    gbs: float  # datasheet memory bandwidth, GB/s
    source: str


MEMORY: tuple[CardMemory, ...] = (
    CardMemory("NVIDIA H200", r"\bH200\b", 4800.0, NVIDIA_H200),
    CardMemory("NVIDIA H100 SXM", r"\bH100\b(?!.*(PCIe|NVL))", 3350.0, NVIDIA_H100),
    CardMemory("NVIDIA A100-SXM4-80GB", r"A100-SXM4-80GB", 2039.0, NVIDIA_A100),
    CardMemory("NVIDIA A100 80GB PCIe", r"A100 80GB PCIe", 1935.0, NVIDIA_A100),
    CardMemory("NVIDIA A100 40GB", r"A100.*40GB", 1555.0, NVIDIA_A100),
    CardMemory("AMD Instinct MI300X", r"\bMI300X\b", 5300.0, ROCM_MI300),
    CardMemory("AMD Instinct MI250X (one GCD)", r"\bMI250X?\b", 1638.4, ROCM_MI250),
    CardMemory("AMD Instinct MI210", r"\bMI210\b", 1638.4, AMD_MI210),
    CardMemory("AMD Radeon RX 7900 XTX", r"\b7900 XTX\b", 960.0, AMD_7900XTX),
    CardMemory("AMD Radeon PRO W7900", r"\bW7900\b", 864.0, AMD_W7900),
    CardMemory("NVIDIA GeForce RTX 4090", r"\bRTX 4090\b", 1008.0, ADA_WHITEPAPER),
)


@dataclass(frozen=True)
class ClassReference:
    """A measured (or vendor-target) figure for a card class."""

    card: str
    pattern: str
    figure: str  # "gemm:bf16", "gemm:fp8", "memory:copy", "memory:triad"
    value: float
    unit: str
    basis: str  # "measured" or "vendor target"
    what: str  # how it was measured, in a phrase
    command: str
    source: str
    note: str = ""
    # The (M, N, K) the figure was measured at (MAMF's best shape, RVS's test shape): the
    # figure to grade against it is the same product on this card (deep_kernels measures
    # each), since a 8192^3 product under a 700 W cap runs slower than a reference's best shape.
    shape: Optional[tuple[int, int, int]] = None


_H100_NOTE = ("the H200 has the H100 SXM's GH100 compute at the same 700 W; it differs in "
              "memory")
CLASS_REFERENCES: tuple[ClassReference, ...] = (
    ClassReference("NVIDIA GH200", r"\bGH200\b", "gemm:bf16", 828.6, "TFLOP/s", "measured",
                   "the MAMF of an NVIDIA GH200 (900 W), torch 2.6.0+cu126", MAMF_COMMAND, MAMF,
                   shape=(1024, 15360, 4096)),
    ClassReference("NVIDIA GH200", r"\bGH200\b", "gemm:fp8", 1535.0, "TFLOP/s", "measured",
                   "the FP8 MAMF of an NVIDIA GH200 (900 W), torch 2.6.0+cu126", MAMF_COMMAND,
                   MAMF,
                   shape=(1024, 14336, 14336)),
    ClassReference("NVIDIA H200", r"\bH200\b", "gemm:bf16", 794.5, "TFLOP/s", "measured",
                   "the MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126", MAMF_COMMAND, MAMF,
                   _H100_NOTE,
                   shape=(2048, 2048, 13312)),
    ClassReference("NVIDIA H200", r"\bH200\b", "gemm:fp8", 1402.6, "TFLOP/s", "measured",
                   "the FP8 MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126", MAMF_COMMAND, MAMF,
                   _H100_NOTE,
                   shape=(1024, 9216, 14336)),
    ClassReference("NVIDIA H100 SXM", r"\bH100\b(?!.*(PCIe|NVL))", "gemm:bf16", 794.5,
                   "TFLOP/s", "measured", "the MAMF of an NVIDIA H100 SXM, torch 2.7.0+cu126",
                   MAMF_COMMAND, MAMF,
                   shape=(2048, 2048, 13312)),
    ClassReference("NVIDIA H100 SXM", r"\bH100\b(?!.*(PCIe|NVL))", "gemm:fp8", 1402.6,
                   "TFLOP/s", "measured", "the FP8 MAMF of an NVIDIA H100 SXM, torch "
                   "2.7.0+cu126", MAMF_COMMAND, MAMF,
                   shape=(1024, 9216, 14336)),
    ClassReference("NVIDIA A100 SXM", r"A100-SXM", "gemm:bf16", 271.2, "TFLOP/s", "measured",
                   "the MAMF of an NVIDIA A100 SXM, torch 2.6.0+cu126", MAMF_COMMAND, MAMF,
                   shape=(1024, 10240, 5120)),
    ClassReference("NVIDIA A100 PCIe", r"A100.*PCI", "gemm:bf16", 252.9, "TFLOP/s",
                   "measured", "the MAMF of an NVIDIA A100 PCIe, torch 2.5.1+cu124",
                   MAMF_COMMAND, MAMF,
                   shape=(2048, 5120, 6144)),
    ClassReference("AMD Instinct MI325X", r"\bMI325X\b", "gemm:bf16", 784.9, "TFLOP/s",
                   "measured", "the MAMF of an AMD MI325X (1000 W, PYTORCH_TUNABLEOP_ENABLED=1),"
                   " torch 2.6.0 ROCm 6.2.4", MAMF_COMMAND, MAMF,
                   shape=(13312, 10240, 8192)),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "gemm:bf16", 581.0, "TFLOP/s",
                   "vendor target", "the ROCm Validation Suite's pass mark for an MI300X bf16 "
                   "GEMM of random data (4864x4096x8192)", RVS_COMMAND, RVS_GST_MI300X,
                   shape=(4864, 4096, 8192)),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "gemm:fp16", 639.0, "TFLOP/s",
                   "vendor target", "the ROCm Validation Suite's pass mark for an MI300X fp16 "
                   "GEMM of random data (4864x4096x8192)", RVS_COMMAND, RVS_GST_MI300X,
                   shape=(4864, 4096, 8192)),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "gemm:fp8", 1215.0, "TFLOP/s",
                   "vendor target", "the ROCm Validation Suite's pass mark for an MI300X fp8 "
                   "GEMM of random data (4864x4096x8192)", RVS_COMMAND, RVS_GST_MI300X,
                   shape=(4864, 4096, 8192)),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "gemm:fp32", 100.0, "TFLOP/s",
                   "vendor target", "the ROCm Validation Suite's pass mark for an MI300X "
                   "sgemm of random data (3072x3072x3072)", RVS_COMMAND, RVS_GST_MI300X,
                   shape=(3072, 3072, 3072)),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "memory:copy", 4200.0, "GB/s",
                   "measured", "what ROCm's roofline benchmark gives on an MI300X",
                   "/opt/rocm/bin/roofline-*", MI300X_HBM_MEASURED),
    ClassReference("AMD Instinct MI300X", r"\bMI300X\b", "memory:triad", 4200.0, "GB/s",
                   "measured", "what ROCm's roofline benchmark gives on an MI300X",
                   "/opt/rocm/bin/roofline-*", MI300X_HBM_MEASURED),
    ClassReference("AMD Instinct MI250X (one GCD)", r"\bMI250X\b", "gemm:bf16", 147.0,
                   "TFLOP/s", "measured", "the MAMF of one MI250X GCD, ROCm 6.2 (v1 table)",
                   MAMF_COMMAND, MAMF,
                   shape=(1024, 19968, 14080)),
)


def class_reference(device_name: str, figure: str) -> Optional[ClassReference]:
    return next((r for r in CLASS_REFERENCES if r.figure == figure
                 and re.search(r.pattern, device_name, re.I)), None)


def memory_spec(device_name: str) -> Optional[CardMemory]:
    return next((m for m in MEMORY if re.search(m.pattern, device_name, re.I)), None)
