"""Whether a pip-installed ROCm or torch carries the code for each GPU this machine has.

Multi-arch ROCm packages split the GPU code into one package per target: rocm-sdk-device-
<gfx> (from `rocm[device-<gfx>]`) and amd-torch-device-<gfx> (from `torch[device-<gfx>]`);
the older scheme installs one rocm-sdk-libraries-<family> per GPU family (TheRock
RELEASES.md). `rocm-sdk test` does not compare them with the GPUs (TheRock#1079); this does.

By hand: `pip list 2>/dev/null | grep -E '^(rocm|amd-torch-device)'` against
`rocminfo | grep -o -m4 'gfx[0-9a-f]*'`.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host
from rocmdoctor.kb import rocm_sdk as kb
from rocmdoctor.model import Fix

# `rocm-sdk targets` prints dist_amdgpu_targets of <_rocm_sdk_core>/share/therock/
# dist_info.json ("gfx1100;gfx1101;gfx1102"): the targets the installed packages really ship.
DIST_INFO = "share/therock/dist_info.json"
ROCM_SDK_TARGETS = ("https://github.com/ROCm/TheRock/blob/f7c23c6fdc675bb403e476834247c47ae38e64ec/"
                    "build_tools/packaging/python/templates/rocm/src/rocm_sdk/__main__.py")


def parse_dist_targets(text: str) -> Optional[tuple[str, ...]]:
    """The targets of a dist_info.json text, or None. Never raises."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    value = data.get("dist_amdgpu_targets") if isinstance(data, dict) else None
    if isinstance(value, str):
        items = value.replace(",", ";").split(";")
    elif isinstance(value, list):
        items = [v for v in value if isinstance(v, str)]
    else:
        return None
    targets = tuple(sorted({t.strip().lower() for t in items if t.strip()}))
    return targets or None


def shipped_targets(host: Host) -> Optional[tuple[str, ...]]:
    """What `rocm-sdk targets` prints for the pip-installed ROCm SDK the training Python
    imports (None: no SDK, or it records none)."""
    from rocmdoctor.facts.torch import torch_info

    def compute() -> Optional[tuple[str, ...]]:
        core = torch_info(host).rocm_sdk_core
        text = host.read_file(posixpath.join(core, DIST_INFO)) if core else None
        return parse_dist_targets(text) if text else None

    return host.memo("rocm:sdk_targets", compute)


@dataclass(frozen=True)
class PackageGap:
    target: str  # gfx1150
    text: str  # the finding
    fix: Fix


def base_target(arch: str) -> str:
    """gfx90a from gfx90a:sramecc+:xnack-."""
    return arch.split(":", 1)[0].strip().lower()


def device_package_gaps(packages: Mapping[str, str], targets: Iterable[str],
                        torch_version: Optional[str] = None,
                        shipped: Optional[Iterable[str]] = None) -> list[PackageGap]:
    """The visible targets a multi-arch or per-family pip install has no code for. `shipped`:
    the targets the install records (`rocm-sdk targets`); without it a family package is
    taken to cover what its name says (gfx110X-dgpu: gfx110 and one hex digit)."""
    ships = {t.lower() for t in shipped} if shipped is not None else None
    names = {kb.normalize(k): v for k, v in packages.items()}
    wanted = sorted({base_target(t) for t in targets if t and t.lower().startswith("gfx")})
    gaps: list[PackageGap] = []
    rocm_version = names.get("rocm") or names.get(kb.SDK_PACKAGE)
    multi_rocm = kb.LIBRARIES in names or any(n.startswith(kb.DEVICE_PREFIX) for n in names)
    multi_torch = any(n.startswith(kb.TORCH_DEVICE_PREFIX) for n in names)
    families = [n[len(kb.LIBRARIES) + 1:] for n in names if n.startswith(kb.LIBRARIES + "-")]
    index = f"--index-url {kb.MULTI_ARCH_INDEX}"
    for target in wanted:
        if multi_rocm and kb.DEVICE_PREFIX + target not in names:
            pin = f"=={rocm_version}" if rocm_version else ""
            gaps.append(PackageGap(
                target, f"{kb.DEVICE_PREFIX}{target} is not installed: the pip-installed ROCm "
                f"has no code for {target}",
                Fix(f"Install the ROCm device package for {target}, at the installed ROCm's "
                    "version.", (f'pip install {index} "rocm[device-{target}]{pin}"',))))
        if multi_torch and kb.TORCH_DEVICE_PREFIX + target not in names:
            pin = f"=={torch_version}" if torch_version else ""
            gaps.append(PackageGap(
                target, f"{kb.TORCH_DEVICE_PREFIX}{target} is not installed: torch has no "
                f"kernels for {target}",
                Fix(f"Install torch's device package for {target} (it brings "
                    f"{kb.DEVICE_PREFIX}{target} too).",
                    (f'pip install {index} "torch[device-{target}]{pin}"',))))
        covered = (target in ships if ships is not None else
                   any(kb.family_covers(f, target) for f in families))
        if families and not covered:
            family = kb.family_for(target, exclude=families)
            installed = ", ".join(f"{kb.LIBRARIES}-{f}" for f in families)
            commands = (f"pip install --force-reinstall --index-url "
                        f"{kb.FAMILY_INDEX.format(family=family)} torch",) if family else ()
            where = f"the {family} index" if family else "the index of its GPU family"
            ships_text = (f" (`rocm-sdk targets`: {';'.join(sorted(ships))})"
                          if ships is not None else "")
            gaps.append(PackageGap(
                target, f"{installed} holds no code for {target}{ships_text}",
                Fix(f"Install torch and ROCm from {where}.", commands)))
    return gaps
