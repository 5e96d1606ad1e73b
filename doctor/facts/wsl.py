"""ROCm on WSL: whether torch loads a runtime that can reach the GPU through /dev/dxg.

On WSL there is no /dev/kfd: the GPU is reached through /dev/dxg. A torch wheel's bundled
libhsa-runtime64.so is a normal Linux runtime; AMD's WSL guide for wheels before ROCm 6.4.1
replaces it with the WSL runtime from /opt/rocm/lib (package hsa-runtime-rocr4wsl-amdgpu).
From 6.4.1 the step is no longer needed; ROCm 7.2 and later use librocdxg (ROCDXG).

By hand: `ls -l /dev/dxg; ls <torch>/lib/libhsa-runtime64.so*;
ls -l /opt/rocm/lib/libhsa-runtime64.so*`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.platform import is_wsl
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import rocm_sdk as kb
from rocmdoctor.model import Finding, Fix

DXG = "/dev/dxg"
WSL_RUNTIME_GLOB = "/opt/rocm/lib/libhsa-runtime64.so.1.*"


@dataclass(frozen=True)
class WslAdvice:
    findings: tuple[Finding, ...]
    fix: Optional[Fix]
    source: str

    @property
    def needed(self) -> bool:
        return self.fix is not None


def _torch_rocm(version: Optional[str], hip: Optional[str]) -> Optional[tuple[int, int, int]]:
    """The ROCm release a torch wheel names (2.4.0+rocm6.3.4 -> 6.3.4), else torch.version.hip's
    major.minor (its third field is a build number, not the patch release)."""
    local = (version or "").partition("+")[2]
    m = re.match(r"rocm(\d+)\.(\d+)(?:\.(\d+))?", local)
    if m:
        return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    m = re.match(r"(\d+)\.(\d+)", hip or "")
    return (int(m.group(1)), int(m.group(2)), 0) if m else None


def _version(release: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in release)


def dxg_present(host: Host) -> bool:
    """Whether /dev/dxg exists (WSL shares a GPU with Linux through it), read once."""
    return host.memo("facts:dxg", lambda: host.exists(DXG))


def wsl_advice(host: Host) -> Optional[WslAdvice]:
    """What a ROCm torch on WSL needs for its runtime; None off WSL or without a ROCm torch."""

    def compute() -> Optional[WslAdvice]:
        if not is_wsl(host) or not dxg_present(host):
            return None
        torch = torch_info(host)
        release = _torch_rocm(torch.any_version, torch.hip)
        if torch.build != "rocm" or release is None:
            return None
        padded = release
        seen = f"WSL with {DXG}, torch built for ROCm {_version(release)}"
        if padded >= kb.WSL_ROCDXG_FROM:
            return _rocdxg(host, padded, seen)
        if padded >= kb.WSL_STEP_UNTIL:
            return WslAdvice((Finding.info(
                f"{seen}: from ROCm {_version(kb.WSL_STEP_UNTIL)} on, AMD's WSL wheels need no "
                "runtime swap"),), None, kb.WSL_STEP_HISTORY)
        lib = posixpath.join(torch.location, "lib") if torch.location else None
        bundled = host.glob(posixpath.join(lib, "libhsa-runtime64.so*")) if lib else []
        if lib is None or not bundled:
            return WslAdvice((Finding.info(
                f"{seen}: torch/lib holds no libhsa-runtime64, so the WSL runtime is used"),),
                None, kb.WSL_PYTORCH_DOC)
        runtimes = [p for p in host.glob(WSL_RUNTIME_GLOB)
                    if (info := host.stat(p)) is not None and info.type == "file"]
        found = [Finding.error(f"{seen}: torch loads its own {posixpath.basename(p)} "
                               f"({p}), not the WSL runtime") for p in bundled[:1]]
        if not runtimes:
            found.append(Finding.hint(f"no WSL runtime in /opt/rocm/lib ({kb.WSL_RUNTIME_PACKAGE} "
                                      "is not installed)"))
            return WslAdvice(tuple(found), Fix(
                "Install ROCm for WSL (it brings the WSL runtime), then swap torch's runtime "
                "for it as AMD's WSL guide shows.",
                ("sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms",), needs_root=True),
                kb.WSL_PYTORCH_DOC)
        real = posixpath.basename(runtimes[-1])
        return WslAdvice(tuple(found), Fix(
            "Replace torch's libhsa-runtime64 with the WSL runtime, as AMD's WSL guide for "
            f"ROCm before {_version(kb.WSL_STEP_UNTIL)} says.",
            (f"cd {lib}", "rm libhsa-runtime64.so*", f"cp /opt/rocm/lib/{real} .",
             f"ln -sf {real} libhsa-runtime64.so.1",
             "ln -sf libhsa-runtime64.so.1 libhsa-runtime64.so")), kb.WSL_PYTORCH_DOC)

    return host.memo("facts:wsl", compute)


def _rocdxg_not_in_cache(host: Host) -> Optional[str]:
    """The installed librocdxg the loader cannot find: in /opt/rocm/lib, absent from
    `ldconfig -p` and from LD_LIBRARY_PATH (None when found, or when ldconfig cannot tell)."""
    installed = host.glob(kb.ROCDXG_GLOB)
    if not installed:
        return None
    folder = posixpath.dirname(installed[0])
    if folder in (host.env.get("LD_LIBRARY_PATH") or "").split(":"):
        return None
    cache = host.run(["ldconfig", "-p"])
    if cache.returncode != 0 or cache.timed_out or not cache.stdout.strip():
        return None
    if "librocdxg.so" in cache.stdout:
        return None
    return installed[0]


def _rocdxg(host: Host, release: tuple[int, ...], seen: str) -> WslAdvice:
    found = [Finding.info(f"{seen}: ROCm {_version(kb.WSL_ROCDXG_FROM)} and later reach the "
                          "GPU through librocdxg (ROCDXG), as AMD's WSL guide installs it")]
    stale = _rocdxg_not_in_cache(host)
    if stale is not None:
        folder = posixpath.dirname(stale)
        found.append(Finding.error(
            f"{stale} is installed, but the loader's cache does not list it (`ldconfig -p`): "
            "ldconfig was not run after the install, so the ROCm runtime cannot load it and "
            "finds no GPU"))
        return WslAdvice(tuple(found), Fix(
            "Rebuild the loader's cache (needs root); without root, `export LD_LIBRARY_PATH="
            f"{folder}:$LD_LIBRARY_PATH` lets this shell find it.", ("sudo ldconfig",),
            needs_root=True), kb.ROCDXG_LDCONFIG)
    if release < kb.DXG_DETECTION_UNTIL and host.env.get(kb.DXG_DETECTION_VAR) != "1":
        found.append(Finding.error(f"{kb.DXG_DETECTION_VAR} is not 1: ROCm before "
                                   f"{_version(kb.DXG_DETECTION_UNTIL)} needs it to use "
                                   "librocdxg"))
        return WslAdvice(tuple(found), Fix(
            f"Set {kb.DXG_DETECTION_VAR}=1 (in your shell profile to keep it).",
            (f"export {kb.DXG_DETECTION_VAR}=1",)), kb.DXG_DETECTION_SOURCE)
    return WslAdvice(tuple(found), None, kb.WSL_ROCDXG_GUIDE)

