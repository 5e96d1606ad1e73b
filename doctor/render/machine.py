"""The `machine` object of `check --json` (contracts/check-json-v1.md), drawn from the facts
facts/machine.py read, and the per-node output names of `check -o` (%N, %h).

A pure function of gathered facts: it never sees the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # the types of the facts it is given; nothing of facts/ runs here
    from rocmdoctor.facts.machine import MachineFacts
    from rocmdoctor.facts.torch import TorchInfo

MACHINE_FIELDS = ("node", "os", "kernel", "rocm", "amdgpu_driver", "nvidia_driver", "python",
                  "torch", "torch_build", "torchvision", "gpus")
REDACTED_HOST = "<redacted>"


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


def _torch_fields(torch: TorchInfo) -> dict[str, Optional[str]]:
    if not torch.probed:
        return {"python": None, "torch": None, "torch_build": None, "torchvision": None}
    build = None
    if torch.imported:
        build = f"HIP {torch.hip}" if torch.hip else f"CUDA {torch.cuda}" if torch.cuda else "CPU"
    return {"python": torch.python_version,
            "torch": torch.version if torch.imported else torch.package,
            "torch_build": build, "torchvision": torch.packages.get("torchvision")}


def machine_object(facts: MachineFacts) -> dict[str, Any]:
    """The object, its fields in the contract's order; null where a fact was not had."""
    out: dict[str, Any] = dict.fromkeys(MACHINE_FIELDS)
    node = (short_hostname(facts.hostname) or None) if facts.hostname is not None else None
    out.update(node=node, os=facts.os, kernel=facts.kernel, rocm=facts.rocm,
               amdgpu_driver=facts.amdgpu_driver, nvidia_driver=facts.nvidia_driver)
    out.update(_torch_fields(facts.torch))
    out["gpus"] = list(facts.gpus)
    return out
