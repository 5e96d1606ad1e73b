"""The versions of one machine, read for the `machine` object of `check --json`.

render/machine.py draws the object from these facts, and fleet views group nodes by it
(rocmdoctor.fleet). Everything comes through the Host, so a snapshot replay gives the same
facts a live run did. The costly facts (the Python probe, rocminfo, nvidia-smi) are used only
when the checks already paid for them: this module never starts a command of its own.

By hand: `hostname -s; grep PRETTY_NAME /etc/os-release; uname -r; cat /opt/rocm/.info/version;
cat /sys/module/amdgpu/version; nvidia-smi --query-gpu=driver_version --format=csv;
python -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)'`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.facts.torch import TorchInfo, torch_info
from rocmdoctor.host import Host


@dataclass(frozen=True)
class MachineFacts:
    """What `machine_facts` could read; None (or empty) where a fact could not be had."""

    hostname: Optional[str] = None  # as the Host reports it, before shortening
    os: Optional[str] = None  # PRETTY_NAME
    kernel: Optional[str] = None
    rocm: Optional[str] = None
    amdgpu_driver: Optional[str] = None
    nvidia_driver: Optional[str] = None
    torch: TorchInfo = field(default_factory=lambda: TorchInfo(probed=False))
    gpus: tuple[str, ...] = ()  # "gfx942 AMD Instinct MI300X", "sm_90 NVIDIA H200"


def _torch_gpus(torch: TorchInfo) -> list[str]:
    return [" ".join(p for p in ((d.arch or "").split(":")[0], d.name) if p)
            for d in torch.devices]


def gpu_list(host: Host, platform: str, torch: TorchInfo) -> list[str]:
    """'gfx942 AMD Instinct MI300X' per AMD GPU (rocminfo / KFD), 'sm_90 NVIDIA H200' per
    NVIDIA GPU (nvidia-smi), else what torch saw; only from inventories already taken."""
    if platform == "rocm" and host.known("gpus:amd"):
        from rocmdoctor.facts.amd_gpus import amd_gpus, describe

        amd = [describe(g) for g in amd_gpus(host).gpus]
        if amd:
            return amd
    if platform == "cuda" and host.known("nvidia:gpus"):
        from rocmdoctor.facts.nvidia_gpus import nvidia_gpus

        nvidia = [f"{g.sm} {g.name}" if g.sm else g.name for g in nvidia_gpus(host).gpus]
        if nvidia:
            return nvidia
    return _torch_gpus(torch)


def machine_facts(host: Host, platform: str, probe: bool = True) -> MachineFacts:
    """The machine's versions. `probe=False` when the run did not start the Python probe (then
    torch is not probed). Never raises: a fact that cannot be had is None."""
    from rocmdoctor.facts.amdgpu_module import describe_driver
    from rocmdoctor.facts.nvidia_gpus import nvidia_driver_version
    from rocmdoctor.facts.os_release import os_pretty_name
    from rocmdoctor.facts.platform import kernel_release
    from rocmdoctor.facts.rocm_root import installed_rocm

    out: dict[str, Any] = {}

    def attempt(name: str, compute: Any) -> None:
        try:
            out[name] = compute()
        except Exception:  # a fact that cannot be had is None, never a crash of `check`
            pass

    attempt("hostname", lambda: host.platform.hostname)
    attempt("os", lambda: os_pretty_name(host))
    attempt("kernel", lambda: None if kernel_release(host) == "unknown" else kernel_release(host))
    attempt("rocm", lambda: getattr(installed_rocm(host), "version", None))
    if platform == "rocm":
        attempt("amdgpu_driver", lambda: describe_driver(host))
    if host.known("nvidia:gpus"):  # nvidia-smi ran for a check: its answer is free
        attempt("nvidia_driver", lambda: nvidia_driver_version(host))
    probed = TorchInfo(probed=False)
    if probe:
        try:
            probed = torch_info(host)
        except Exception:
            pass
    out["torch"] = probed
    attempt("gpus", lambda: tuple(gpu_list(host, platform, probed)))
    return MachineFacts(**out)
