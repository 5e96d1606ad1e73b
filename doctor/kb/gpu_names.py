"""GPU product names and the target each is: AMD's LLVM target (gfx) and NVIDIA's compute
capability, for a text that names the GPU (a Radeon RX 6600, a GTX 1080 Ti) but not its
target. `rocmdoctor explain` reads a name only where the text states no target itself.

Each row is a pattern of the marketing name as people write it and the target every product
it matches is. A name that covers parts of different targets (a bare "Radeon Graphics", an RX
6750 GRE that came as gfx1031 and gfx1032) is left out: a wrong target is worse than none.

Sources:
- AMD: ROCm's GPU list (rocm-docs data/gpus.yaml: product name, LLVM target) and LLVM's
  AMDGPU processor table (example products per target) for the GPUs ROCm does not list.
- NVIDIA: NVIDIA's CUDA GPUs page (compute capability per product).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

ROCM_GPUS_YAML = "https://github.com/ROCm/rocm-docs/blob/develop/docs/data/gpus.yaml"
LLVM_PROCESSORS = "https://llvm.org/docs/AMDGPUUsage.html#processors"
NVIDIA_CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus"


@dataclass(frozen=True)
class NamedGpu:
    pattern: re.Pattern[str]
    vendor: str  # amd, nvidia
    target: str  # gfx1032, or a compute capability "6.1"
    source: str


# ASCII word boundaries: a name written against Chinese or Japanese text ("旧显卡如M40出现") is
# still a word of its own.
def _amd(pattern: str, gfx: str, source: str = ROCM_GPUS_YAML) -> NamedGpu:
    return NamedGpu(re.compile(pattern, re.IGNORECASE | re.ASCII), "amd", gfx, source)


def _nv(pattern: str, capability: str) -> NamedGpu:
    return NamedGpu(re.compile(pattern, re.IGNORECASE | re.ASCII), "nvidia", capability,
                    NVIDIA_CUDA_GPUS)


def _radeon(number: str) -> str:
    """A Radeon RX model: "RX 6600", "Radeon RX 7900 XTX", or the number with its XT or XTX
    alone ("7900xtx", "6700 XT": no NVIDIA product is called that)."""
    return (rf"\b(?:(?:Radeon )?RX ?(?:{number})(?: ?(?:XTX|XT|GRE))?|(?:{number}) ?(?:XTX|XT))"
            rf"\b")


NAMED_GPUS: tuple[NamedGpu, ...] = (
    # RDNA4, RDNA3, RDNA2, RDNA1 desktop cards (gpus.yaml; RDNA1 from LLVM's table)
    _amd(_radeon(r"90[67]0"), "gfx1201"),
    _amd(_radeon(r"9060"), "gfx1200"),
    _amd(r"\b(?:(?:Radeon )?RX ?)?7900 ?(?:XTX|XT|GRE)\b", "gfx1100"),
    _amd(_radeon(r"7[78]00"), "gfx1101"),
    _amd(_radeon(r"7600"), "gfx1102"),
    _amd(_radeon(r"6[89][05]0"), "gfx1030"),
    _amd(_radeon(r"67[05]0(?! ?GRE)"), "gfx1031"),
    _amd(_radeon(r"66[05]0"), "gfx1032"),
    _amd(_radeon(r"6[45]00"), "gfx1034", LLVM_PROCESSORS),
    _amd(_radeon(r"5[67]00"), "gfx1010", LLVM_PROCESSORS),
    _amd(_radeon(r"5500"), "gfx1012", LLVM_PROCESSORS),
    _amd(r"\b(?:Radeon )?RX ?(?:4[6-8]0|5[5-9]0)\b", "gfx803", LLVM_PROCESSORS),
    _amd(r"\bRX ?Vega ?(?:56|64)\b|\bVega ?(?:56|64)\b", "gfx900", LLVM_PROCESSORS),
    _amd(r"\bRadeon VII\b|\bInstinct MI50\b|\bMI60\b", "gfx906"),
    _amd(r"\bRadeon PRO W6800\b|\bW6800\b", "gfx1030"),
    _amd(r"\bRadeon PRO W7[89]00\b|\bW7[89]00\b", "gfx1100"),
    _amd(r"\bW7[67]00\b", "gfx1101"),
    _amd(r"\bMI100\b", "gfx908"),
    _amd(r"\bMI2(?:10|50X?)\b", "gfx90a"),
    _amd(r"\bMI3(?:00[AX]|25X)\b", "gfx942"),
    _amd(r"\bMI3[56]5X\b|\bMI350X\b", "gfx950"),
    # APUs' graphics (LLVM's table, gpus.yaml for the Ryzen AI parts)
    _amd(r"\bRadeon (?:8060S|8050S)\b", "gfx1151"),
    _amd(r"\bRadeon 8[89]0M\b", "gfx1150"),
    _amd(r"\bRadeon 7[468]0M\b", "gfx1103", LLVM_PROCESSORS),
    _amd(r"\bRadeon 6[68]0M\b", "gfx1035", LLVM_PROCESSORS),
    _amd(r"\bRyzen [357] [45][0-9]{2}0[UH]S?\b|\b[45][0-9]{2}0U\b", "gfx90c", LLVM_PROCESSORS),
    # NVIDIA (CUDA GPUs page)
    _nv(r"\bRTX ?50[5-9]0(?: ?Ti)?\b", "12.0"),
    _nv(r"\bRTX ?40[5-9]0(?: ?Ti| ?SUPER)?\b|\bNVIDIA L40S?\b", "8.9"),
    _nv(r"\bRTX ?30[5-9]0(?: ?Ti)?\b|\bRTX A[2-6]000\b", "8.6"),
    _nv(r"\bA100\b", "8.0"),
    _nv(r"\bH100\b|\bH200\b|\bGH200\b", "9.0"),
    _nv(r"\bRTX ?20[6-8]0(?: ?Ti| ?SUPER)?\b|\bGTX ?16[5-6]0(?: ?Ti| ?SUPER)?\b|\bTesla T4\b|"
        r"\bTITAN RTX\b|\bQuadro RTX ?[4-8]000\b", "7.5"),
    _nv(r"\bV100\b|\bTITAN V\b", "7.0"),
    _nv(r"\bGTX ?10[5-8]0(?: ?Ti)?\b|\bTITAN Xp\b|\bTesla P40\b|\bTesla P4\b", "6.1"),
    _nv(r"\bP100\b|\bQuadro GP100\b", "6.0"),  # Kaggle says "GPU P100"
    _nv(r"\bGTX ?9[5-8]0(?: ?Ti)?\b|\bTITAN X\b(?!p)|\b(?:Tesla )?M[46]0\b", "5.2"),
    _nv(r"\bGTX ?750(?: ?Ti)?\b", "5.0"),
    _nv(r"\bTesla K80\b", "3.7"),
    _nv(r"\bTesla K40\b|\bGT ?710\b", "3.5"),
)


def named_gpus(line: str) -> list[tuple[NamedGpu, str]]:
    """The rows a line names, with the words that matched, in line order."""
    found = [(row, m) for row in NAMED_GPUS for m in [row.pattern.search(line)] if m]
    found.sort(key=lambda f: f[1].start())
    return [(row, m.group(0)) for row, m in found]


def target_of(name: str) -> Optional[NamedGpu]:
    """The row for a product name, or None when none (or more than one target) matches."""
    rows = {row.target: row for row, _ in named_gpus(name)}
    return next(iter(rows.values())) if len(rows) == 1 else None
