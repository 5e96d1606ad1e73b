"""PCIe link rates as data: what a link of a given speed and width carries per direction.

Per lane and direction, after line encoding, as Linux computes it (PCIE_SPEED2MBS_ENC in
drivers/pci/pci.h): 2.5 and 5 GT/s use 8b/10b, 8, 16 and 32 GT/s use 128b/130b. A speed not
in the table (64 GT/s and its FLIT mode) gets no figure: no guessing. NVIDIA reports the
generation number, which maps to GT/s as the PCIe base specification names them.

Units: GB/s are 10^9 bytes per second, one direction, before protocol (TLP) overhead, so a
measured host-to-device copy stays below it.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.kb.links import LINUX_PCIE_ENCODING

SOURCE = LINUX_PCIE_ENCODING
ENCODING: dict[float, float] = {2.5: 8 / 10, 5.0: 8 / 10, 8.0: 128 / 130, 16.0: 128 / 130,
                                32.0: 128 / 130}
GENERATION_GT: dict[int, float] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def generation_of(gt_per_s: float) -> Optional[int]:
    return next((g for g, rate in GENERATION_GT.items() if rate == gt_per_s), None)


def link_gbps(gt_per_s: Optional[float], width: Optional[int]) -> Optional[float]:
    """GB/s one way over `width` lanes at `gt_per_s`, after encoding; None when not known."""
    if gt_per_s is None or not width or gt_per_s not in ENCODING:
        return None
    return round(gt_per_s * ENCODING[gt_per_s] * width / 8, 2)


def describe(gt_per_s: Optional[float], width: Optional[int]) -> str:
    """'Gen4 x16 (16 GT/s)' for findings."""
    gen = generation_of(gt_per_s) if gt_per_s is not None else None
    speed = f"Gen{gen}" if gen else (f"{gt_per_s:g} GT/s" if gt_per_s else "speed unknown")
    lanes = f" x{width}" if width else ""
    return f"{speed}{lanes}" + (f" ({gt_per_s:g} GT/s)" if gen else "")
