"""The facts `rocmdoctor report` shows beside the checks: what collect_env prints, what it
lacks on ROCm, and the environment table. Everything comes through the Host, so `snapshot`
records it and a replay (`report --from`) shows the same thing; `report_facts` gathers it all
into a model.ReportFacts before anything is rendered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.cpu import cpu_info
from rocmdoctor.facts.os_release import read_os_release
from rocmdoctor.facts.rocminfo import ANSI
from rocmdoctor.facts.torch import TorchInfo, torch_info
from rocmdoctor.host import CommandResult, Host
from rocmdoctor.model import RawSection, ReportFacts

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


ALLOC_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
NA = "n/a"


@dataclass(frozen=True)
class RawFacts:
    """The commands and files the report reads for itself (memoised per host)."""

    os_name: Optional[str]
    cpu: Optional[str]
    toolchain: dict[str, str]
    smi: tuple[RawSection, ...]
    rocminfo: Optional[RawSection]
    env: dict[str, str]


def os_pretty_name(host: Host) -> Optional[str]:
    osr = read_os_release(host)
    return osr.pretty_name if osr else None


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


def _gib(n: Optional[int]) -> str:
    return f"{n / 2**30:.1f} GiB" if n else "?"


def _torch_line(torch: TorchInfo) -> tuple[str, str]:
    if not torch.probed:
        return "not probed", NA
    if not torch.imported:
        err = torch.error or "not installed"
        line = f"{torch.package} (import failed: {err})" if torch.package else err
    else:
        build = (f"HIP {torch.hip}" if torch.hip else f"CUDA {torch.cuda}" if torch.cuda
                 else "CPU build")
        line = (f"{torch.version} ({build}); available: {torch.available}, "
                f"devices: {torch.device_count}")
    return line, torch.packages.get("torchvision") or "not installed"


def header_rows(host: Host, raw: RawFacts, platform: str, tool_version: str
                ) -> list[tuple[str, str]]:
    from rocmdoctor.facts.amdgpu_module import describe_driver
    from rocmdoctor.facts.machine import nvidia_driver_version
    from rocmdoctor.facts.rocm_root import discover_rocm
    from rocmdoctor.kb import KB_DATE

    plat = host.platform
    torch = torch_info(host)
    rows: list[tuple[str, str]] = [
        ("rocmdoctor", tool_version),
        ("Knowledge base", f"tables dated {KB_DATE}"),
        ("OS", f"{raw.os_name or 'unknown'} ({plat.machine})"),
        ("Kernel", plat.kernel_release or "unknown"),
    ]
    found = discover_rocm(host, with_python=torch.probed)
    root = found.root
    passed = f"; passed over: {'; '.join(found.passed_over)}" if found.passed_over else ""
    if root is None:
        rows.append(("ROCm", f"not installed{passed}"))
    else:
        version = root.version or "release not recorded"
        rows.append(("ROCm", f"{version} at {root.path} (found by {root.found_by}; "
                             f"{root.kind}){passed}"))
    if host.known("facts:libload"):  # rocm-libraries ran: the copy torch really loads
        from rocmdoctor.facts.libload import rocm_libraries

        hip = rocm_libraries(host).library("hip")
        if hip is not None and hip.path:
            rows.append(("HIP runtime torch loads",
                         f"{hip.path} ({rocm_libraries(host).kind})"))
    if platform == "rocm":
        rows.append(("amdgpu driver", describe_driver(host)))
    nvidia = nvidia_driver_version(host)
    if nvidia:
        rows.append(("NVIDIA driver", nvidia))
    if torch.probed:
        rows.append(("Python", f"{torch.python_version or '?'} ({torch.executable or '?'})"))
    torch_line, vision = _torch_line(torch)
    rows.append(("PyTorch", torch_line))
    rows.append(("torchvision", vision))
    rows.append(("CPU", raw.cpu or "unknown"))
    return rows


def gpu_lines(host: Host, platform: str) -> list[str]:
    """One line per GPU: from rocminfo/KFD on AMD machines, else what torch saw."""
    from rocmdoctor.facts.amd_gpus import amd_gpus

    torch = torch_info(host)
    arch_list = set(torch.arch_list)
    gpus: list[str] = []
    inventory = amd_gpus(host) if platform == "rocm" else None
    if inventory is not None and inventory.gpus:
        for g in inventory.gpus:
            support = ""
            if arch_list:
                support = ", in torch's arch list" if g.gfx in arch_list else (
                    ", NOT in torch's arch list")
            kind = ", integrated" if g.is_integrated else ""
            cus = f", {g.compute_units} CUs" if g.compute_units else ""
            gpus.append(f"{g.index}: {g.name} ({g.gfx_full}{cus}, {_gib(g.vram_bytes)}"
                        f"{kind}{support})")
        return gpus
    return [f"{d.index}: {d.name} ({d.arch}, {_gib(d.total_memory)})" for d in torch.devices]


def _text(value: object) -> str:
    return NA if value is None else str(value)


def collect_env_fields(host: Host, raw: RawFacts) -> list[tuple[str, str]]:
    """The fields `python -m torch.utils.collect_env` prints, filled the way it fills them
    (torch/utils/collect_env.py: get_libc_version, get_python_platform, get_cudnn_version)."""
    from rocmdoctor.facts.machine import nvidia_driver_version

    torch = torch_info(host)
    alloc = {k: v for k, v in raw.env.items() if k in ALLOC_VARIABLES}
    return [
        ("PyTorch version", _text(torch.version or torch.package)),
        ("Is debug build", _text(torch.debug)),
        ("CUDA used to build PyTorch", _text(torch.cuda)),
        ("ROCM used to build PyTorch", _text(torch.hip)),
        ("OS", f"{raw.os_name or NA} ({host.platform.machine})"),
        ("GCC version", raw.toolchain.get("GCC version", NA)),
        ("Clang version", raw.toolchain.get("Clang version", NA)),
        ("CMake version", raw.toolchain.get("CMake version", NA)),
        ("Libc version", _text(torch.libc)),
        ("Python version", _text(torch.python_version)),
        ("Python platform", _text(torch.python_platform)),
        ("Is CUDA available", _text(torch.available)),
        ("CUDA runtime version", raw.toolchain.get("CUDA runtime version (nvcc)", NA)),
        ("CUDA_MODULE_LOADING set to", host.env.get("CUDA_MODULE_LOADING", NA)),
        ("GPU models and configuration",
         "; ".join(f"GPU {d.index}: {d.name} ({d.arch})" for d in torch.devices) or NA),
        ("Nvidia driver version", nvidia_driver_version(host) or NA),
        ("cuDNN version", _text(torch.cudnn_version) if torch.cuda else NA),
        ("HIP runtime version", _text(torch.hip_runtime)),
        ("MIOpen runtime version", _text(torch.miopen)),
        ("Is XNNPACK available", _text(torch.xnnpack)),
        ("Caching allocator config", json.dumps(alloc) if alloc else "not set"),
        ("HIP version (hipcc)", raw.toolchain.get("HIP version (hipcc)", NA)),
        ("Versions of relevant libraries",
         ", ".join(f"{k}=={v}" for k, v in sorted(torch.packages.items()) if v) or NA),
    ]


def report_facts(host: Host, platform: str, tool_version: str) -> ReportFacts:
    """Everything the report shows beside the check results, read now."""
    raw = gather(host)
    sections = ((raw.rocminfo,) if raw.rocminfo is not None else ()) + raw.smi
    return ReportFacts(
        header=tuple(header_rows(host, raw, platform, tool_version)),
        gpus=tuple(gpu_lines(host, platform)),
        collect_env=tuple(collect_env_fields(host, raw)),
        sections=sections,
        env=tuple(raw.env.items()),
        packages=tuple(sorted(torch_info(host).packages.items())),
    )
