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

from rocmdoctor.host import Host

MACHINE_FIELDS = ("node", "os", "kernel", "rocm", "amdgpu_driver", "nvidia_driver", "python",
                  "torch", "torch_build", "torchvision", "gpus")
REDACTED_HOST = "<redacted>"


def amdgpu_version(host: Host) -> str:
    """'6.8.5 (AMD DKMS)', 'inbox driver of kernel X' or 'not loaded'.

    /sys/module/amdgpu/version exists only for the out-of-tree (DKMS) module; the kernel's
    own amdgpu carries no version of its own.
    """
    if not host.exists("/sys/module/amdgpu"):
        return "not loaded"
    version = (host.read_file("/sys/module/amdgpu/version") or "").strip()
    if version:
        return f"{version} (AMD DKMS)"
    return f"inbox driver of kernel {host.platform.kernel_release}"


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


def _computed(host: Host, key: str) -> bool:
    """Whether a memoised fact is already known (the checks computed it): never wait for
    one a stuck check is still computing, never start one."""
    entry = getattr(host, "_memo", {}).get(key)
    return entry is not None and entry.done and entry.error is None


def _torch_facts(probe: Optional[Mapping[str, Any]]) -> dict[str, Optional[str]]:
    out: dict[str, Optional[str]] = {"python": None, "torch": None, "torch_build": None,
                                     "torchvision": None}
    if not isinstance(probe, Mapping):
        return out
    torch = _mapping(probe.get("torch"))
    packages = _mapping(probe.get("packages"))
    out["python"] = _text(probe.get("version"))
    out["torchvision"] = _text(packages.get("torchvision"))
    if torch.get("imported"):
        out["torch"] = _text(torch.get("version"))
        out["torch_build"] = (f"HIP {torch['hip']}" if torch.get("hip") else
                              f"CUDA {torch['cuda']}" if torch.get("cuda") else "CPU")
    else:
        out["torch"] = _text(packages.get("torch"))
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> Optional[str]:
    return str(value) if value not in (None, "") else None


def _torch_gpus(probe: Optional[Mapping[str, Any]]) -> list[str]:
    devices = _mapping(_mapping(probe).get("torch")).get("devices")
    gpus = []
    for d in devices if isinstance(devices, list) else []:
        if isinstance(d, Mapping):
            arch = str(d.get("arch") or "").split(":")[0]
            gpus.append(" ".join(p for p in (arch, str(d.get("name") or "")) if p))
    return gpus


def gpu_list(host: Host, platform: str, probe: Optional[Mapping[str, Any]]) -> list[str]:
    """'gfx942 AMD Instinct MI300X' per AMD GPU (rocminfo / KFD), 'sm_90 NVIDIA H200' per
    NVIDIA GPU (nvidia-smi), else what torch saw; only from inventories already taken."""
    if platform == "rocm" and _computed(host, "gpus:amd"):
        from rocmdoctor.facts.amd_gpus import amd_gpus, describe

        amd = [describe(g) for g in amd_gpus(host).gpus]
        if amd:
            return amd
    if platform == "cuda" and _computed(host, "nvidia:gpus"):
        from rocmdoctor.facts.nvidia_gpus import nvidia_gpus

        nvidia = [f"{g.sm} {g.name}" if g.sm else g.name for g in nvidia_gpus(host).gpus]
        if nvidia:
            return nvidia
    return _torch_gpus(probe)


def machine_facts(host: Host, platform: str, probe: bool = True) -> dict[str, Any]:
    """The `machine` object of `check --json`. `probe=False` when the run did not start the
    Python probe (then the Python/torch fields are null). Never raises: a fact that cannot
    be had is null."""
    from rocmdoctor.facts.collect_env import os_pretty_name
    from rocmdoctor.facts.platform import kernel_release
    from rocmdoctor.facts.rocm_version import installed_rocm

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
        attempt("amdgpu_driver", lambda: amdgpu_version(host))
    if _computed(host, "nvidia:gpus"):  # nvidia-smi ran for a check: its answer is free
        attempt("nvidia_driver", lambda: nvidia_driver_version(host))
    probed: Optional[Mapping[str, Any]] = None
    if probe:
        try:
            probed = host.python()
        except Exception:
            probed = None
    try:
        out.update(_torch_facts(probed))
    except Exception:
        pass
    attempt("gpus", lambda: gpu_list(host, platform, probed))
    return out
