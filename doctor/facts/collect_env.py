"""The raw facts `rocmdoctor report` shows beside the checks: what collect_env prints, and
what it lacks on ROCm. Everything comes through the Host, so `snapshot` records it and a
replay (`report --from`) shows the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.facts.rocminfo import ANSI
from rocmdoctor.host import CommandResult, Host

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
class RawSection:
    title: str
    text: str


@dataclass(frozen=True)
class ReportFacts:
    os_name: Optional[str]
    cpu: Optional[str]
    toolchain: dict[str, str]
    smi: tuple[RawSection, ...]
    rocminfo: Optional[RawSection]
    env: dict[str, str]
    libc: Optional[str] = None
    extras: dict[str, Any] = field(default_factory=dict)


def os_pretty_name(host: Host) -> Optional[str]:
    text = host.read_file("/etc/os-release") or ""
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
    return match.group(1) if match else None


def _first_match(result: CommandResult, pattern: str) -> Optional[str]:
    if not result.ok:
        return None
    match = re.search(pattern, result.stdout)
    return match.group(1).strip() if match else None


def _cpu_model(host: Host) -> Optional[str]:
    text = host.read_file("/proc/cpuinfo") or ""
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    if not match:
        return None
    count = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
    return f"{match.group(1).strip()} ({count} logical CPUs)" if count else match.group(1).strip()


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


def gather(host: Host) -> ReportFacts:
    """Collect the report's raw facts once per host."""

    def compute() -> ReportFacts:
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
        return ReportFacts(
            os_name=os_pretty_name(host),
            cpu=_cpu_model(host),
            toolchain=toolchain,
            smi=tuple(smi),
            rocminfo=rocminfo_section,
            env=env,
        )

    return host.memo("report:facts", compute)
