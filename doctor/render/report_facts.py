"""The rows `rocmdoctor report` shows beside the checks (the environment table, one line per
GPU, the fields torch.utils.collect_env prints), drawn from what facts/collect_env.py read.

A pure function of gathered facts: it never sees the machine. The result is a
model.ReportFacts, which render/report.py lays out as Markdown, text or JSON.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

from rocmdoctor.model import ReportFacts

if TYPE_CHECKING:  # the types of the facts it is given; nothing of facts/ runs here
    from rocmdoctor.facts.collect_env import ReportReadings
    from rocmdoctor.facts.torch import TorchInfo

ALLOC_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
NA = "n/a"


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


def header_rows(facts: ReportReadings, tool_version: str) -> list[tuple[str, str]]:
    """(label, value) rows of the environment table."""
    raw, torch = facts.raw, facts.torch
    rows: list[tuple[str, str]] = [
        ("rocmdoctor", tool_version),
        ("Knowledge base", f"tables dated {facts.kb_date}"),
        ("OS", f"{raw.os_name or 'unknown'} ({facts.machine})"),
        ("Kernel", facts.kernel_release or "unknown"),
    ]
    found = facts.rocm
    root = found.root
    passed = f"; passed over: {'; '.join(found.passed_over)}" if found.passed_over else ""
    if root is None:
        rows.append(("ROCm", f"not installed{passed}"))
    else:
        version = root.version or "release not recorded"
        rows.append(("ROCm", f"{version} at {root.path} (found by {root.found_by}; "
                             f"{root.kind}){passed}"))
    if facts.hip_runtime is not None:
        path, kind = facts.hip_runtime
        rows.append(("HIP runtime torch loads", f"{path} ({kind})"))
    if facts.amdgpu_driver is not None:
        rows.append(("amdgpu driver", facts.amdgpu_driver))
    if facts.nvidia_driver:
        rows.append(("NVIDIA driver", facts.nvidia_driver))
    if torch.probed:
        rows.append(("Python", f"{torch.python_version or '?'} ({torch.executable or '?'})"))
    torch_line, vision = _torch_line(torch)
    rows.append(("PyTorch", torch_line))
    rows.append(("torchvision", vision))
    rows.append(("CPU", raw.cpu or "unknown"))
    return rows


def gpu_lines(facts: ReportReadings) -> list[str]:
    """One line per GPU: from rocminfo/KFD on AMD machines, else what torch saw."""
    torch = facts.torch
    arch_list = set(torch.arch_list)
    gpus: list[str] = []
    if facts.amd_gpus:
        for g in facts.amd_gpus:
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


def collect_env_fields(facts: ReportReadings) -> list[tuple[str, str]]:
    """The fields `python -m torch.utils.collect_env` prints, filled the way it fills them
    (torch/utils/collect_env.py: get_libc_version, get_python_platform, get_cudnn_version)."""
    raw, torch = facts.raw, facts.torch
    alloc = {k: v for k, v in raw.env.items() if k in ALLOC_VARIABLES}
    return [
        ("PyTorch version", _text(torch.version or torch.package)),
        ("Is debug build", _text(torch.debug)),
        ("CUDA used to build PyTorch", _text(torch.cuda)),
        ("ROCM used to build PyTorch", _text(torch.hip)),
        ("OS", f"{raw.os_name or NA} ({facts.machine})"),
        ("GCC version", raw.toolchain.get("GCC version", NA)),
        ("Clang version", raw.toolchain.get("Clang version", NA)),
        ("CMake version", raw.toolchain.get("CMake version", NA)),
        ("Libc version", _text(torch.libc)),
        ("Python version", _text(torch.python_version)),
        ("Python platform", _text(torch.python_platform)),
        ("Is CUDA available", _text(torch.available)),
        ("CUDA runtime version", raw.toolchain.get("CUDA runtime version (nvcc)", NA)),
        ("CUDA_MODULE_LOADING set to", _text(facts.cuda_module_loading)),
        ("GPU models and configuration",
         "; ".join(f"GPU {d.index}: {d.name} ({d.arch})" for d in torch.devices) or NA),
        ("Nvidia driver version", facts.nvidia_driver or NA),
        ("cuDNN version", _text(torch.cudnn_version) if torch.cuda else NA),
        ("HIP runtime version", _text(torch.hip_runtime)),
        ("MIOpen runtime version", _text(torch.miopen)),
        ("Is XNNPACK available", _text(torch.xnnpack)),
        ("Caching allocator config", json.dumps(alloc) if alloc else "not set"),
        ("HIP version (hipcc)", raw.toolchain.get("HIP version (hipcc)", NA)),
        ("Versions of relevant libraries",
         ", ".join(f"{k}=={v}" for k, v in sorted(torch.packages.items()) if v) or NA),
    ]


def report_facts(facts: ReportReadings, tool_version: str) -> ReportFacts:
    """Everything the report shows beside the check results, as rows and sections."""
    raw = facts.raw
    sections = ((raw.rocminfo,) if raw.rocminfo is not None else ()) + raw.smi
    return ReportFacts(
        header=tuple(header_rows(facts, tool_version)),
        gpus=tuple(gpu_lines(facts)),
        collect_env=tuple(collect_env_fields(facts)),
        sections=sections,
        env=tuple(raw.env.items()),
        packages=tuple(sorted(facts.torch.packages.items())),
    )
