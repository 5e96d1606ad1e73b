"""torchvision-match: torchvision's version and build pair with torch's.

By hand: `pip list 2>/dev/null | grep -E '^(torch|torchvision) '` — torchvision 0.N pairs
with torch 2.(N-15), each torchvision wheel pins one torch release exactly (`pip show
torchvision` -> Requires), and both carry the same build tag (+rocmX.Y, +cuXYZ, +cpu).
A mismatched pair typically fails at `import torchvision` with
"operator torchvision::nms does not exist".
"""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.facts.torch import probe_skip_reason, torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

_OFFICIAL = re.compile(r"^(?:rocm(\d+(?:\.\d+){1,2})|cu(\d+)|cpu)$")


def variant(local: str) -> tuple[str, str]:
    """("rocm", "6.2") / ("cuda", "cu126") / ("cpu", "") / ("pypi", "") / ("other", local)."""
    if not local:
        return "pypi", ""  # PyPI's untagged Linux wheels are CUDA builds
    if local.startswith("rocm"):
        v = wheels.version_tuple(local[4:])
        return ("rocm", f"{v[0]}.{v[1]}") if len(v) >= 2 else ("other", local)
    cuda = re.match(r"cu\d+", local)
    if cuda is not None:
        return "cuda", cuda.group()
    if local == "cpu":
        return "cpu", ""
    return "other", local


def is_official(version: str) -> bool:
    """A download.pytorch.org / PyPI release (not a source, nightly or vendor build)."""
    public, local = wheels.split_local(version)
    return re.fullmatch(r"\d+\.\d+\.\d+", public) is not None and (
        not local or _OFFICIAL.match(local) is not None)


def variants_clash(torch_local: str, vision_local: str) -> bool:
    a, b = variant(torch_local), variant(vision_local)
    if "other" in (a[0], b[0]):
        return False
    kinds = {a[0], b[0]}
    if kinds <= {"pypi", "cuda"}:  # untagged is the default CUDA build
        return a[0] == b[0] == "cuda" and a != b
    return a != b


class TorchvisionMatch(Check):
    id = "torchvision-match"
    depends = ("torch-install",)
    uses_python = True
    title = "torchvision pairs with torch"
    source = wheels.VISION_README

    def applies(self, host: Host) -> Optional[str]:
        reason = probe_skip_reason(torch_info(host))
        if reason:
            return reason
        if not torch_info(host).packages.get("torchvision"):
            return "torchvision is not installed"
        if not self._torch_version(host):
            return "torch is not installed (see torch-install)"
        return None

    @staticmethod
    def _torch_version(host: Host) -> Optional[str]:
        torch = torch_info(host)
        return torch.version if torch.imported and torch.version else torch.package

    def run(self, host: Host) -> CheckResult:
        torch_v = self._torch_version(host) or ""
        vision = torch_info(host).packages["torchvision"]
        t_local = wheels.split_local(torch_v)[1]
        v_public, v_local = wheels.split_local(vision)
        want_minor = wheels.expected_torchvision_minor(torch_v)
        row = wheels.wheel_release(torch_v)
        want = row.torchvision if row else (
            f"{want_minor[0]}.{want_minor[1]}.*" if want_minor else None)
        fix = self._fix(torch_v, want)
        pinned = wheels.torch_for_torchvision(vision)
        pin_note = f" (pins torch=={pinned})" if pinned and is_official(vision) else ""
        pair = f"torchvision {vision} with torch {torch_v}"
        if want_minor and wheels.version_tuple(vision)[:2] != want_minor:
            findings = [Finding.error(
                f"torchvision {vision}{pin_note}; torch {torch_v} pairs with torchvision "
                f"{want}"),
                Finding.hint("a mismatched pair typically fails at import with \"operator "
                             "torchvision::nms does not exist\" or an undefined symbol")]
            if is_official(vision):
                return self.result(Status.FAIL, f"{pair}: not a pair", findings, fix)
            findings.append(Finding.info(f"torchvision {vision} is a source build: it works "
                                         "only if it was built against this torch"))
            return self.result(Status.WARN, f"{pair}: not a released pair", findings, fix)
        if variants_clash(t_local, v_local):
            return self.result(Status.FAIL, f"{pair}: different builds", [Finding.error(
                f"torch is a {self._describe(t_local)} build, torchvision a "
                f"{self._describe(v_local)} build: torchvision's compiled operators will not "
                "load")], fix)
        if row and wheels.version_tuple(v_public)[:3] != wheels.version_tuple(row.torchvision):
            text = (f"torchvision {vision}{pin_note} was released for another torch patch "
                    f"release; torch {torch_v} pairs with torchvision {row.torchvision}")
            if is_official(vision) and is_official(torch_v):
                return self.result(Status.WARN, f"{pair}: patch releases differ",
                                   [Finding.error(text)], fix, source=row.source)
            return self.passed(f"{pair}: same minor release (vendor build)",
                               [Finding.info(text)])
        return self.passed(f"{pair}: a matching pair")

    @staticmethod
    def _describe(local: str) -> str:
        kind, detail = variant(local)
        return {"pypi": "default (CUDA)", "cpu": "CPU", "rocm": f"ROCm {detail}",
                "cuda": f"CUDA ({detail})"}.get(kind, local)

    @staticmethod
    def _fix(torch_v: str, want: Optional[str]) -> Fix:
        if want is None:
            return Fix("Install the torchvision release that pairs with this torch (see the "
                       "table at https://github.com/pytorch/vision#installation).")
        spec = f"torchvision=={want}"
        _, local = wheels.split_local(torch_v)
        if not is_official(torch_v):
            return Fix(f"Install {spec} built for this torch build (from the same source as "
                       "torch, e.g. the container or AMD's wheels), or build it from source.")
        index = f" --index-url {wheels.index_url(local)}" if local else ""
        return Fix(f"Install the torchvision that pairs with torch {torch_v}.",
                   (f"pip install {spec}{index}",))
