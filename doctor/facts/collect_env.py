"""The facts `rocmdoctor report` shows beside the checks: what collect_env prints, what it
lacks on ROCm, and the environment table. Everything comes through the Host, so `snapshot`
records it and a replay (`report --from`) shows the same thing. `report_readings` gathers it
all before anything is drawn; render/report_facts.py makes the report's rows of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.amd_gpus import GpuAgent
from rocmdoctor.facts.cpu import cpu_info
from rocmdoctor.facts.os_release import os_pretty_name
from rocmdoctor.facts.rocm_root import Discovery
from rocmdoctor.facts.rocminfo import ANSI
from rocmdoctor.facts.torch import TorchInfo, torch_info
from rocmdoctor.host import CommandResult, Host
from rocmdoctor.model import RawSection

# The SMI to show: amd-smi where it exists, else rocm-smi; nvidia-smi on NVIDIA machines.
AMD_SMI_COMMANDS = (("amd-smi", "version"), ("amd-smi", "static"))
ROCM_SMI_COMMANDS = (("rocm-smi",), ("rocm-smi", "--showproductname", "--showdriverversion"))
NVIDIA_SMI_COMMANDS = (("nvidia-smi",),)
# collect_env's toolchain lines (torch/utils/collect_env.py: get_gcc_version & co).
TOOLCHAIN = (
    ("GCC version", ("gcc", "--version"), r"gcc (.*)"),
    ("Clang version", ("clang", "--version"), r"clang version (.*)"),
    ("CMake version", ("cmake", "--version"), r"cmake (.*)"),
    ("CUDA runtime version (nvcc)", ("nvcc", "--version"), r"release .+ V(.*)"),
    ("HIP version (hipcc)", ("hipcc", "--version"), r"HIP version: (\S+)"),
)
ENV_PREFIXES = ("HIP_", "HSA_", "ROCR_", "ROCM", "AMD_", "MIOPEN_", "PYTORCH_", "TORCH_",
                "CUDA_", "NCCL_", "RCCL_", "OMP_")


@dataclass(frozen=True)
class RawFacts:
    """The commands and files the report reads for itself (memoised per host)."""

    os_name: Optional[str]
    cpu: Optional[str]
    toolchain: dict[str, str]
    smi: tuple[RawSection, ...]
    rocminfo: Optional[RawSection]
    env: dict[str, str]


def _first_match(result: CommandResult, pattern: str) -> Optional[str]:
    if not result.ok:
        return None
    match = re.search(pattern, result.stdout)
    return match.group(1).strip() if match else None


def _commands_section(host: Host, title: str, commands: Sequence[Sequence[str]]) -> RawSection:
    parts = []
    for argv in commands:
        r = host.run(list(argv))
        body = ANSI.sub("", r.stdout + ("\n" + r.stderr if r.stderr.strip() else "")).strip()
        status = " (timed out)" if r.timed_out else (
            f" (exit {r.returncode})" if r.returncode else "")
        parts.append(f"$ {' '.join(argv)}{status}\n{body}")
    return RawSection(title, "\n\n".join(parts))


def rocminfo_summary(text: str) -> str:
    """The lines maintainers ask for (ROCm's issue template greps Name and Marketing Name)."""
    keep = re.compile(
        r"^\s*(ROCk module.*|Runtime Version:.*|Agent \d+|Name:.*|Marketing Name:.*|"
        r"Device Type:.*|Compute Unit:.*|Node:.*|Unable to open.*|.*(?:not|NOT) (?:loaded|live).*"
        r"|.*member of.*|HSA_STATUS_ERROR.*|.*hsa api call failure.*)\s*$"
    )
    lines = [line.rstrip() for line in ANSI.sub("", text).splitlines() if keep.match(line)]
    return "\n".join(lines)


def gather(host: Host) -> RawFacts:
    """Collect the report's raw facts once per host."""

    def compute() -> RawFacts:
        from rocmdoctor.facts.platform import platform_kind

        kind = platform_kind(host)
        smi: list[RawSection] = []
        amd = host.run(list(AMD_SMI_COMMANDS[0]))
        if not amd.not_found:
            smi.append(_commands_section(host, "amd-smi", AMD_SMI_COMMANDS))
        elif kind == "rocm" or not host.run(["rocm-smi"]).not_found:
            smi.append(_commands_section(host, "rocm-smi", ROCM_SMI_COMMANDS))
        if kind == "cuda" or not host.run(["nvidia-smi"]).not_found:
            smi.append(_commands_section(host, "nvidia-smi", NVIDIA_SMI_COMMANDS))
        rocminfo = host.run(["rocminfo"])
        rocminfo_section = None
        if not rocminfo.not_found:
            text = rocminfo_summary(rocminfo.stdout + "\n" + rocminfo.stderr)
            if rocminfo.timed_out:
                text += "\n(rocminfo timed out)"
            rocminfo_section = RawSection("rocminfo (summary)", text.strip())
        toolchain = {}
        for label, argv, pattern in TOOLCHAIN:
            value = _first_match(host.run(list(argv)), pattern)
            if value:
                toolchain[label] = value
        env = {k: v for k, v in sorted(host.env.items()) if k.startswith(ENV_PREFIXES)}
        return RawFacts(
            os_name=os_pretty_name(host),
            cpu=cpu_info(host).describe(),
            toolchain=toolchain,
            smi=tuple(smi),
            rocminfo=rocminfo_section,
            env=env,
        )

    return host.memo("report:facts", compute)


@dataclass(frozen=True)
class ReportReadings:
    """Everything the report shows beside the check results, read before it is drawn."""

    raw: RawFacts
    platform: str  # rocm, cuda or cpu
    machine: str  # x86_64
    kernel_release: str  # uname -r ("" when not known)
    kb_date: str  # the date of the knowledge tables
    torch: TorchInfo
    rocm: Discovery  # where ROCm is, and what was passed over
    hip_runtime: Optional[tuple[str, Optional[str]]]  # the HIP runtime torch loads: path, kind
    amdgpu_driver: Optional[str]  # on ROCm machines: "6.8.5 (AMD DKMS)", "inbox driver ..."
    nvidia_driver: Optional[str]
    amd_gpus: tuple[GpuAgent, ...]  # on ROCm machines: rocminfo's GPUs (or the KFD's)
    cuda_module_loading: Optional[str]  # $CUDA_MODULE_LOADING


def report_readings(host: Host, platform: str) -> ReportReadings:
    """Read now, in the order the report shows them."""
    from rocmdoctor.facts.amd_gpus import amd_gpus
    from rocmdoctor.facts.amdgpu_module import describe_driver
    from rocmdoctor.facts.environment import environment
    from rocmdoctor.facts.libload import libload_known, rocm_libraries
    from rocmdoctor.facts.nvidia_gpus import nvidia_driver_version
    from rocmdoctor.facts.platform import uname_release
    from rocmdoctor.facts.rocm_root import discover_rocm
    from rocmdoctor.kb import KB_DATE

    raw = gather(host)
    machine = host.platform.machine
    torch = torch_info(host)
    rocm = discover_rocm(host, with_python=torch.probed)
    hip_runtime = None
    if libload_known(host):  # rocm-libraries ran: the copy torch really loads
        hip = rocm_libraries(host).library("hip")
        if hip is not None and hip.path:
            hip_runtime = (hip.path, rocm_libraries(host).kind)
    amdgpu_driver = describe_driver(host) if platform == "rocm" else None
    nvidia = nvidia_driver_version(host)
    gpus = amd_gpus(host).gpus if platform == "rocm" else ()
    return ReportReadings(
        raw=raw, platform=platform, machine=machine, kernel_release=uname_release(host),
        kb_date=KB_DATE, torch=torch, rocm=rocm, hip_runtime=hip_runtime,
        amdgpu_driver=amdgpu_driver, nvidia_driver=nvidia, amd_gpus=tuple(gpus),
        cuda_module_loading=environment(host).get("CUDA_MODULE_LOADING"))
