"""The platform a tune runs on, asked of the Python that will train: the torch probe
(rocmdoctor.host.probe, the child `rocmdoctor check` runs too) read through its fact reader
(rocmdoctor.facts.torch), never an import of torch here."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Optional

from rocmdoctor.facts.torch import TorchInfo, torch_info_of
from rocmdoctor.host.probe import run_probe
from rocmdoctor.tuners.model import Platform


class ProbeError(Exception):
    """The platform probe failed: one line for the user."""


def platform_of(torch: TorchInfo, device: str) -> Platform:
    """The Platform a tune runs on, from the probe's TorchInfo; ProbeError when torch cannot
    run there."""
    if not torch.imported:
        error = torch.error or "unknown error"
        if torch.could_not_run or torch.crashed or torch.failed_stage not in (None, "import"):
            raise ProbeError(error)  # the interpreter, not torch: its own words
        raise ProbeError(f"cannot import torch: {error}")
    base = Platform(kind="cpu", torch=torch.version, hip=torch.hip, cuda=torch.cuda,
                    device="cpu", cpu_count=torch.cpu_count or 1,
                    torch_threads=torch.num_threads,
                    torchvision=torch.packages.get("torchvision"))
    if device == "cpu" or not (torch.available and torch.devices):
        if device == "cuda":
            raise ProbeError(f"--device cuda, but torch {torch.version} sees no GPU")
        return base
    first = torch.devices[0]
    arch = (first.arch or "").split(":")[0] or None
    return replace(base, kind="rocm" if torch.hip else "cuda", device=first.name, arch=arch,
                   device_count=torch.device_count)


def probe_platform(device: str, python: Optional[str], env: Mapping[str, str],
                   timeout_s: float = 180.0) -> Platform:
    """Platform and versions, from the torch probe run in the Python that will train, with
    the tune's environment."""
    data = run_probe(python, timeout_s, env=env, smoke=False)
    torch = torch_info_of(data)
    if torch.timed_out:
        raise ProbeError(f"the platform probe ({python or sys.executable}) did not finish in "
                         f"{timeout_s:.0f} s; `rocmdoctor check` says why torch hangs")
    return platform_of(torch, device)
