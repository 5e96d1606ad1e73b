"""The answer for a GPU-stack error rocmdoctor does not know: no cause is guessed. It lists
the facts the text states (targets, libraries, versions, the system, the frame that raised),
the checks that would confirm them on the machine, and the message's distinctive line with
paths, addresses and numbers stripped, as a ready search of the trackers where such errors
are discussed: the application's own, the library's, ROCm's and PyTorch's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from rocmdoctor.explain.paste import PasteFacts, is_amd_paste
from rocmdoctor.kb.trackers import PYTORCH, ROCM, search_url, tracker

# Installed packages whose frames make an error a GPU-stack one (the library named is asked).
GPU_PACKAGES = {"triton": "triton", "bitsandbytes": "bitsandbytes", "flash_attn": "flash-attn",
                "xformers": "xformers", "deepspeed": "DeepSpeed", "vllm": "vLLM"}


@dataclass(frozen=True)
class NotKnown:
    line: str  # the error line, secrets removed
    line_number: int
    facts: tuple[str, ...]
    checks: tuple[str, ...]
    query: str
    searches: tuple[tuple[str, str], ...]  # (tracker, URL)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "line_number": self.line_number, "facts": list(self.facts),
                "checks": list(self.checks), "search": self.query,
                "trackers": [{"name": n, "url": u} for n, u in self.searches]}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@+~*-]+){2,}[\\/]?|[A-Za-z]:\\[^\s'\"]*")
_FILE = re.compile(r"\b[\w.-]+\.(?:py|cpp|cc|cu|c|h|hpp|dat|hip)(?::\d+)*\b")
_LOG_FIELDS = re.compile(r"\b(?:us|pid|tid)\b:?")
_LEVEL = re.compile(r"^(?:(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL|FATAL|TRACE)\b[\s:]*)+"
                    r"(?:[A-Z][A-Z_]+\s*:\s*)?")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_TARGET = re.compile(r"\b(?:gfx[0-9a-f]+|sm_\d+)\S*", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![A-Za-z])[+-]?\d[\w.:/+-]*")
_LABEL = re.compile(r"^(?:[\w.]*(?:Error|Exception|Warning)\s*:\s*)+")
_PUNCT = re.compile(r"[\[\]{}()|<>=\"`]+")


def search_text(line: str) -> str:
    """The distinctive words of an error line: no paths, files, addresses, targets, numbers."""
    text = _ANSI.sub("", line)
    for pattern in (_PATH, _FILE, _HEX, _TARGET, _NUMBER, _LOG_FIELDS, _PUNCT):
        text = pattern.sub(" ", text)
    text = " ".join(text.split()).strip(" :;,.'-")
    text = _LEVEL.sub("", _LABEL.sub("", text)).strip(" :;,.'-")
    text = _LABEL.sub("", text)
    words = text.split()
    return " ".join(words[:14]).strip(" :;,.'-")


def _facts(facts: PasteFacts) -> tuple[list[str], list[str]]:
    said: list[str] = []
    checks: list[str] = []
    gfx = facts.all("gfx")
    if gfx:
        names = list(dict.fromkeys(f.value for f in gfx))
        said.append(f"GPU target {', '.join(names)} (line {gfx[0].line})")
        checks.append(f"rocmdoctor check --only torch-arch-support (does torch carry code for "
                      f"{names[0]})")
    cap = facts.first("capability")
    if cap is not None:
        said.append(f"compute capability {cap.value} (line {cap.line})")
        checks.append("rocmdoctor check --only torch-arch-support (does torch carry code for "
                      f"{cap.value})")
    libraries = list(dict.fromkeys(f.value for f in facts.all("library")))
    if libraries:
        said.append("libraries " + ", ".join(libraries))
        checks.append("rocmdoctor check --only rocm-libraries (which ROCm libraries torch loads)"
                      if is_amd_paste(facts) else
                      "rocmdoctor check --only torch-install (the torch build and its packages)")
    for kind, label in (("torch", "torch"), ("rocm", "ROCm"), ("cuda", "CUDA"),
                        ("driver", "NVIDIA driver")):
        fact = facts.first(kind)
        if fact is not None:
            said.append(f"{label} {fact.value} (line {fact.line})")
    if facts.first("rocm") is not None:
        checks.append("rocmdoctor check --only torch-rocm-match (torch's ROCm against the "
                      "system's)")
    if facts.first("driver") is not None:
        checks.append("rocmdoctor check --only nvidia-driver")
    apps = list(dict.fromkeys(f.value for f in facts.all("app")))
    if apps:
        said.append("application " + ", ".join(apps))
    if facts.os:
        said.append(f"written on {facts.os}")
    if facts.frame is not None:
        where = facts.frame.package or facts.frame.path
        said.append(f"raised in {where}, {facts.frame.function} (line {facts.frame.at})")
    return said, list(dict.fromkeys(checks))


def not_known(line: str, line_number: int, facts: PasteFacts) -> NotKnown:
    from rocmdoctor.explain.secrets import redact

    said, checks = _facts(facts)
    said = [redact(f) for f in said]
    query = redact(search_text(line) or line.strip()[:80])
    quoted = f'"{query}"'
    names: list[str] = []
    for app in facts.values("app"):
        names.append(app)
    package = facts.frame.package if facts.frame else None
    if package in GPU_PACKAGES:
        names.append(GPU_PACKAGES[package])
    names.extend(facts.values("library"))
    searches: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name in names:
        known = tracker(name)
        if known is not None and known.repo not in seen:
            seen.add(known.repo)
            searches.append((name, search_url(known.repo, quoted)))
    base = [ROCM, PYTORCH] if is_amd_paste(facts) else [PYTORCH]
    for known in base:
        if known.repo not in seen:
            seen.add(known.repo)
            searches.append((known.name, search_url(known.repo, quoted)))
    checks.append("rocmdoctor report (this machine's facts, to attach to an issue)")
    return NotKnown(line, line_number, tuple(said), tuple(checks), query, tuple(searches))


def gpu_library_frame(facts: PasteFacts) -> Optional[str]:
    """The GPU library whose frame raised the error, when one did."""
    package = facts.frame.package if facts.frame else None
    return GPU_PACKAGES.get(package or "")
