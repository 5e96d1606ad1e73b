"""`rocmdoctor report`: an issue-ready Markdown (or text / JSON) report, safe to publish.

A pure function of the Report, the raw facts and the host's facts. Redaction is applied to
the whole rendered text, so nothing personal slips through a section that forgot it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from rocmdoctor.facts.collect_env import RawSection, ReportFacts
from rocmdoctor.facts.machine import amdgpu_version as _amdgpu_version
from rocmdoctor.facts.machine import nvidia_driver_version as _nvidia_version
from rocmdoctor.host import Host
from rocmdoctor.model import Report, Status
from rocmdoctor.redact import Redactor, redact_tree
from rocmdoctor.render.check_json import report_to_dict

GITHUB_BODY_LIMIT = 65536  # characters in a GitHub issue body
MARK = {Status.PASS: "✅", Status.WARN: "⚠️", Status.FAIL: "❌", Status.SKIP: "➖",
        Status.ERROR: "💥"}


@dataclass(frozen=True)
class Header:
    rows: tuple[tuple[str, str], ...]
    gpus: tuple[str, ...]


def _gib(n: Optional[int]) -> str:
    return f"{n / 2**30:.1f} GiB" if n else "?"


def _torch_line(probe: Optional[dict[str, Any]]) -> tuple[str, str]:
    if probe is None:
        return "not probed", "n/a"
    torch = probe.get("torch") or {}
    packages = probe.get("packages") or {}
    if not torch.get("imported"):
        version = packages.get("torch")
        err = torch.get("error") or "not installed"
        line = f"{version} (import failed: {err})" if version else err
    else:
        build = (f"HIP {torch['hip']}" if torch.get("hip") else
                 f"CUDA {torch['cuda']}" if torch.get("cuda") else "CPU build")
        line = (f"{torch.get('version')} ({build}); available: {torch.get('available')}, "
                f"devices: {torch.get('device_count')}")
    return line, str(packages.get("torchvision") or "not installed")


def build_header(host: Host, facts: ReportFacts, report: Report) -> Header:
    from rocmdoctor.facts.amd_gpus import amd_gpus
    from rocmdoctor.facts.rocm_version import installed_rocm

    plat = host.platform
    probe = host.python()
    rows: list[tuple[str, str]] = [
        ("rocmdoctor", report.tool_version),
        ("OS", f"{facts.os_name or 'unknown'} ({plat.machine})"),
        ("Kernel", plat.kernel_release or "unknown"),
    ]
    rocm = installed_rocm(host)
    rows.append(("ROCm", f"{rocm.version} ({rocm.root})" if rocm else "not installed"))
    if report.platform == "rocm":
        rows.append(("amdgpu driver", _amdgpu_version(host)))
    nvidia = _nvidia_version(host)
    if nvidia:
        rows.append(("NVIDIA driver", nvidia))
    if probe is not None:
        rows.append(("Python", f"{probe.get('version', '?')} ({probe.get('executable', '?')})"))
    torch_line, vision = _torch_line(probe)
    rows.append(("PyTorch", torch_line))
    rows.append(("torchvision", vision))
    rows.append(("CPU", facts.cpu or "unknown"))

    arch_list = set(((probe or {}).get("torch") or {}).get("arch_list") or [])
    gpus: list[str] = []
    torch_devices = ((probe or {}).get("torch") or {}).get("devices") or []
    inventory = amd_gpus(host) if report.platform == "rocm" else None
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
    else:
        for d in torch_devices:
            gpus.append(f"{d.get('index')}: {d.get('name')} ({d.get('arch')}, "
                        f"{_gib(d.get('total_memory'))})")
    return Header(tuple(rows), tuple(gpus))


def collect_env_fields(host: Host, facts: ReportFacts) -> list[tuple[str, str]]:
    """The fields `python -m torch.utils.collect_env` prints (report-anchors §1a)."""
    probe = host.python() or {}
    torch = probe.get("torch") or {}
    na = "n/a"

    def get(key: str) -> str:
        value = torch.get(key, probe.get(key))
        return na if value is None else str(value)

    alloc = {k: v for k, v in facts.env.items()
             if k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    packages = probe.get("packages") or {}
    devices = torch.get("devices") or []
    return [
        ("PyTorch version", get("version")),
        ("Is debug build", get("debug")),
        ("CUDA used to build PyTorch", get("cuda")),
        ("ROCM used to build PyTorch", get("hip")),
        ("OS", f"{facts.os_name or na} ({host.platform.machine})"),
        ("GCC version", facts.toolchain.get("GCC version", na)),
        ("Clang version", facts.toolchain.get("Clang version", na)),
        ("CMake version", facts.toolchain.get("CMake version", na)),
        ("Libc version", str(probe.get("libc") or na)),
        ("Python version", str(probe.get("version") or na)),
        ("Python platform", str(probe.get("platform") or na)),
        ("Is CUDA available", get("available")),
        ("CUDA runtime version", facts.toolchain.get("CUDA runtime version (nvcc)", na)),
        ("CUDA_MODULE_LOADING set to", host.env.get("CUDA_MODULE_LOADING", na)),
        ("GPU models and configuration",
         "; ".join(f"GPU {d.get('index')}: {d.get('name')} ({d.get('arch')})" for d in devices)
         or na),
        ("Nvidia driver version", _nvidia_version(host) or na),
        ("cuDNN version", get("cudnn")),
        ("HIP runtime version", get("hip_runtime")),
        ("MIOpen runtime version", get("miopen")),
        ("Is XNNPACK available", get("xnnpack")),
        ("Caching allocator config", json.dumps(alloc) if alloc else "not set"),
        ("HIP version (hipcc)", facts.toolchain.get("HIP version (hipcc)", na)),
        ("Versions of relevant libraries",
         ", ".join(f"{k}=={v}" for k, v in sorted(packages.items()) if v) or na),
    ]


def _details(title: str, body: str, lang: str = "") -> str:
    return f"<details><summary>{title}</summary>\n\n```{lang}\n{body}\n```\n\n</details>\n"


def _problem_lines(report: Report) -> list[str]:
    out = []
    problems = [r for r in report.results if r.status in (Status.FAIL, Status.ERROR, Status.WARN)]
    if not problems:
        return ["No check failed or warned.", ""]
    for r in problems:
        out.append(f"- {MARK[r.status]} **{r.id}** ({r.status.value}): {r.summary}")
        for f in r.findings:
            out.append(f"  - {f.severity.value}: {f.text}")
        if r.fix is not None:
            needs = [w for w, on in (("needs root", r.fix.needs_root),
                                     ("then log in again", r.fix.needs_relogin)) if on]
            out.append(f"  - fix: {r.fix.text}" + (f" ({', '.join(needs)})" if needs else ""))
            if r.fix.commands:
                out.append("    ```sh")
                out.extend(f"    {c}" for c in r.fix.commands)
                out.append("    ```")
        if r.source:
            out.append(f"  - source: {r.source}")
    out.append("")
    return out


def raw_sections(host: Host, facts: ReportFacts, redactor: Redactor) -> list[RawSection]:
    sections = []
    if facts.rocminfo is not None:
        sections.append(facts.rocminfo)
    sections.extend(facts.smi)
    env_text = "\n".join(f"{k}={redactor.env_value(k, v)}" for k, v in facts.env.items())
    sections.append(RawSection("Environment variables", env_text or "(none of HIP_, HSA_, "
                               "ROCR_, ROCM, AMD_, MIOPEN_, PYTORCH_, TORCH_, CUDA_, NCCL_, "
                               "RCCL_, OMP_ are set)"))
    probe = host.python() or {}
    packages = probe.get("packages") or {}
    sections.append(RawSection(
        "Python packages",
        "\n".join(f"{k}=={v}" for k, v in sorted(packages.items()) if v) or "(none found)"))
    collect = "\n".join(f"{k}: {v}" for k, v in collect_env_fields(host, facts))
    sections.append(RawSection("collect_env fields", collect))
    return sections


def render_markdown(
    report: Report,
    host: Host,
    facts: ReportFacts,
    redactor: Redactor,
    snapshot_name: Optional[str] = None,
    limit: int = GITHUB_BODY_LIMIT,
) -> str:
    header = build_header(host, facts, report)
    head = ["## Environment (rocmdoctor report)", "", "| | |", "|---|---|"]
    head += [f"| {k} | {v} |" for k, v in header.rows]
    head.append("| GPUs | " + ("<br>".join(header.gpus) if header.gpus else "none found") + " |")
    head.append("")
    summary = ", ".join(f"{n} {s}" for s, n in report.summary().items())
    head += [f"### Checks: {summary}", ""]
    head += _problem_lines(report)
    table = ["<details><summary>All checks</summary>", "", "| check | status | summary |",
             "|---|---|---|"]
    table += [f"| {r.id} | {MARK[r.status]} {r.status.value} | {r.summary.replace('|', '/')} |"
              for r in report.results]
    table += ["", "</details>", ""]
    if snapshot_name:
        tail = ["Reproduce this diagnosis elsewhere: attach the snapshot and run "
                f"`rocmdoctor check --from {snapshot_name}`", ""]
    else:
        tail = ["Reproduce this diagnosis elsewhere: `rocmdoctor snapshot -o snap.json.gz`, "
                "then `rocmdoctor check --from snap.json.gz`", ""]
    sections = raw_sections(host, facts, redactor)
    bodies = [s.text for s in sections]

    def assemble(cut_note: str = "") -> str:
        parts = ["\n".join(head), "\n".join(table)]
        parts += [_details(s.title, b) for s, b in zip(sections, bodies)]
        if cut_note:
            parts.append(cut_note + "\n")
        parts.append("\n".join(tail))
        return redactor("\n".join(parts))

    text = assemble()
    cut: dict[str, int] = {}
    while len(text) > limit:
        i = max(range(len(bodies)), key=lambda j: len(bodies[j]))
        lines = bodies[i].splitlines()
        if len(lines) <= 1 and len(bodies[i]) < 200:
            break
        keep = max(len(lines) // 2, 0) if len(lines) > 1 else 0
        dropped = len(lines) - keep
        cut[sections[i].title] = cut.get(sections[i].title, 0) + dropped
        bodies[i] = "\n".join(lines[:keep] + [f"... ({cut[sections[i].title]} lines cut)"])
        note = ("_Cut to fit GitHub's 65,536-character limit: " + ", ".join(
            f"{n} lines of {t}" for t, n in cut.items()) + "._")
        text = assemble(note)
    if len(text) > limit:
        text = text[: limit - 60] + "\n\n_(report truncated at GitHub's size limit)_\n"
    return text


def render_text(report: Report, host: Host, facts: ReportFacts, redactor: Redactor) -> str:
    header = build_header(host, facts, report)
    lines = [f"{k}: {v}" for k, v in header.rows]
    lines += ["GPUs:"] + [f"  {g}" for g in header.gpus or ("none found",)]
    lines.append("")
    for r in report.results:
        lines.append(f"[{r.status.value}] {r.id}: {r.summary}")
        if r.fix is not None and r.status in (Status.FAIL, Status.WARN):
            lines.append(f"    fix: {r.fix.text}")
            lines.extend(f"      $ {c}" for c in r.fix.commands)
    lines.append("")
    for s in raw_sections(host, facts, redactor):
        lines += [f"== {s.title}", s.text, ""]
    return redactor("\n".join(lines) + "\n")


def render_report_json(report: Report, host: Host, facts: ReportFacts,
                       redactor: Redactor) -> str:
    header = build_header(host, facts, report)
    data = {
        "schema": "rocmdoctor.report/1",
        "environment": dict(header.rows),
        "gpus": list(header.gpus),
        "check": report_to_dict(report),
        "collect_env": dict(collect_env_fields(host, facts)),
        "raw": {s.title: s.text for s in raw_sections(host, facts, redactor)},
    }
    return json.dumps(redact_tree(data, redactor), indent=2, ensure_ascii=False) + "\n"

