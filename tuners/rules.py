"""Where a knob acts on this platform, read from the knob table (rocmdoctor.tuners.knobs) and
the platform the probe found: the version it needs, the value torch uses when you set none,
the allocator variable a trial sets and how an option merges into it, and the debugging
variables that slow every trial."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from rocmdoctor.facts.alloc_conf import tokenize
from rocmdoctor.facts.torch import release_of
from rocmdoctor.kb import allocator as alloc_kb
from rocmdoctor.kb.debug_vars import DEBUG_VARS, level
from rocmdoctor.tuners.knobs import SETTING_DEFAULTS
from rocmdoctor.tuners.model import Knob, Platform


def release(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """The release in a version string, by the probe's parser (facts/torch.py release_of), a
    HIP build number left out: "2.9.1+rocm6.4" -> (2, 9, 1), "6.4.43482-x" -> (6, 4)."""
    found = release_of(text)
    if found is not None and len(found) == 3 and found[2] > 999:
        return found[:2]
    return found


def at_least(have: Optional[str], need: str) -> bool:
    """Whether the release in `have` is `need` or later; False when either has none."""
    version, wanted = release(have), release(need)
    return version is not None and wanted is not None and version >= wanted


def version_gap(knob: Knob, platform: Platform) -> Optional[str]:
    """Why the installed versions do not honour the knob, or None."""
    for kind, min_torch, min_rocm in knob.min_versions:
        if kind != platform.kind:
            continue
        if not at_least(platform.torch, min_torch):
            return f"needs torch >= {min_torch} (this is {platform.torch or 'unknown'})"
        if min_rocm and not at_least(platform.hip, min_rocm):
            return (f"needs a torch built for ROCm >= {min_rocm} (this one: "
                    f"{platform.hip or 'unknown'})")
    return None


def setting_default(name: str, platform: Platform) -> Any:
    """The value torch uses for a run-time setting that the user did not set."""
    for setting, kind, since, before, value in SETTING_DEFAULTS:
        if setting != name or kind != platform.kind:
            continue
        if since and not at_least(platform.torch, since):
            continue
        if before and at_least(platform.torch, before):
            continue
        return value
    return None


def alloc_var(platform: Platform, env: Mapping[str, str]) -> str:
    """The allocator variable a trial should set: the one this torch reads among those the
    user set (the first set in its precedence order, kb/allocator.py PRECEDENCE; an empty one
    counts), else the one this torch reads reliably (PYTORCH_ALLOC_CONF from 2.11:
    pytorch#183387)."""
    rule = alloc_kb.precedence_for(release_of(platform.torch))
    order = rule.order if platform.kind == "rocm" else rule.order_cuda
    for var in order:
        if var in env:
            return var
    if at_least(platform.torch, "2.11"):
        return alloc_kb.ALLOC_CONF
    return alloc_kb.CUDA_ALLOC_CONF


def _alloc_options(text: str) -> list[list[str]]:
    """The top-level options of an allocator configuration, each as its tokens (torch's own
    tokenizer: a bracketed list is one value)."""
    options: list[list[str]] = [[]]
    depth = 0
    for token in tokenize(text):
        depth += {"[": 1, "]": -1}.get(token, 0)
        if token == "," and depth <= 0:
            options.append([])
        else:
            options[-1].append(token)
    return [o for o in options if o]


def merge_alloc(current: str, option: str) -> str:
    """`current` with one "key:value" option set (replacing that key if present)."""
    key = _alloc_options(option)[0][0]
    kept = ["".join(o) for o in _alloc_options(current) if o[0] != key]
    return ",".join(kept + [option])


def environment_warnings(env: Mapping[str, str]) -> list[str]:
    """Debugging variables in the user's environment: every trial inherits them."""
    out = []
    for var in DEBUG_VARS:
        value = env.get(var.name, "")
        if value and level(value) >= var.min_level:
            out.append(f"your environment sets {var.name}={value}, which {var.cost}; every "
                       f"trial inherits it, so all numbers are slower than they need be "
                       f"({var.source})")
    return out
