"""The versions of one machine, as the `machine` object of `check --json` carries them.

Fleet views group nodes by these facts (rocmdoctor.fleet). Everything comes through the
Host, so a snapshot replay gives the same object a live run did. The costly facts (the
Python probe, rocminfo, nvidia-smi) are used only when the checks already paid for them:
this module never starts a command of its own.

By hand: `hostname -s; grep PRETTY_NAME /etc/os-release; uname -r; cat /opt/rocm/.info/version;
cat /sys/module/amdgpu/version; nvidia-smi --query-gpu=driver_version --format=csv;
python -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)'`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from rocmdoctor.facts.torch import TorchInfo, torch_info
from rocmdoctor.host import Host

MACHINE_FIELDS = ("node", "os", "kernel", "rocm", "amdgpu_driver", "nvidia_driver", "python",
                  "torch", "torch_build", "torchvision", "gpus")
REDACTED_HOST = "<redacted>"


def nvidia_driver_version(host: Host) -> Optional[str]:
    """The NVIDIA driver version nvidia-smi reports, None on machines without NVIDIA signs."""
    from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
    from rocmdoctor.facts.platform import nvidia_signals

    if not nvidia_signals(host):
        return None
    return nvidia_gpus(host).driver_version


def short_hostname(name: str) -> str:
    """'gpu-node-07' for 'gpu-node-07.cluster.example.org' (what `hostname -s` prints)."""
    return name.strip().split(".")[0] if name.strip() != REDACTED_HOST else REDACTED_HOST


def expand_output_pattern(pattern: str, env: Mapping[str, str], hostname: str) -> str:
    """`check -o`'s file name: %N the Slurm node name ($SLURMD_NODENAME, which srun sets in
    each task, else the short host name), %h the short host name, %% a literal %.

    The letters follow srun's own filename patterns (https://slurm.schedmd.com/srun.html,
    "filename pattern"). Any other %-sequence is a ValueError, so a typo such as %n or a
    trailing % does not silently become part of a file name.
    """
    short = short_hostname(hostname) or "localhost"
    values = {"N": (env.get("SLURMD_NODENAME") or "").strip() or short, "h": short, "%": "%"}
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        letter = pattern[i + 1:i + 2]
        if letter not in values:
            seq = "%" + letter if letter else "a trailing %"
            raise ValueError(f"--output {pattern!r}: unknown pattern {seq} "
                             "(rocmdoctor expands %N, %h and %%)")
        out.append(values[letter])
        i += 2
    return "".join(out)


def _torch_facts(torch: TorchInfo) -> dict[str, Optional[str]]:
    if not torch.probed:
        return {"python": None, "torch": None, "torch_build": None, "torchvision": None}
    build = None
    if torch.imported:
        build = f"HIP {torch.hip}" if torch.hip else f"CUDA {torch.cuda}" if torch.cuda else "CPU"
    return {"python": torch.python_version,
            "torch": torch.version if torch.imported else torch.package,
            "torch_build": build, "torchvision": torch.packages.get("torchvision")}


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


def machine_facts(host: Host, platform: str, probe: bool = True) -> dict[str, Any]:
    """The `machine` object of `check --json`. `probe=False` when the run did not start the
    Python probe (then the Python/torch fields are null). Never raises: a fact that cannot
    be had is null."""
    from rocmdoctor.facts.amdgpu_module import describe_driver
    from rocmdoctor.facts.collect_env import os_pretty_name
    from rocmdoctor.facts.platform import kernel_release
    from rocmdoctor.facts.rocm_root import installed_rocm

    out: dict[str, Any] = dict.fromkeys(MACHINE_FIELDS)
    out["gpus"] = []

    def attempt(field: str, compute: Any) -> None:
        try:
            out[field] = compute()
        except Exception:  # a fact that cannot be had is null, never a crash of `check`
            pass

    attempt("node", lambda: short_hostname(host.platform.hostname) or None)
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
    out.update(_torch_facts(probed))
    attempt("gpus", lambda: gpu_list(host, platform, probed))
    return out
