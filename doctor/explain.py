"""`rocmdoctor explain`: recognise known messages in pasted text and say what they mean.

`explain_text(text, host)` matches the table in `rocmdoctor.kb.errors` line by line and
returns, per recognised message, its cause, the fix and the check that confirms it. Numbers in
the message itself (an out-of-memory request against the GPU's capacity, the targets a code
object lacks) are always used; with a host, the answer also names this machine's GPUs, the
HSA_OVERRIDE_GFX_VERSION value for them and the pip line for its ROCm. The modules that know
those machine facts are imported lazily, and any failure there falls back to the generic
answer.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from rocmdoctor.kb.errors import KNOWN_MESSAGES, KnownMessage
from rocmdoctor.model import Fix

if TYPE_CHECKING:
    from rocmdoctor.host import Host

_FLAGS = re.IGNORECASE | re.MULTILINE
_SIZE = r"(\d+(?:\.\d+)?) ?(bytes|[KMGT]iB)"
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


@dataclass(frozen=True)
class Explanation:
    key: str
    title: str
    kind: str  # error, kernel-log, not-a-setting, harmful
    matched: str  # the line of the text that was recognised
    cause: str
    fix: Fix
    check: Optional[str]  # the `rocmdoctor check` id that confirms it
    source: str
    notes: tuple[str, ...] = ()  # facts from the message itself or from this machine

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "kind": self.kind,
                "matched": self.matched, "cause": self.cause, "notes": list(self.notes),
                "fix": {"text": self.fix.text, "commands": list(self.fix.commands),
                        "needs_root": self.fix.needs_root,
                        "needs_relogin": self.fix.needs_relogin},
                "check": self.check, "source": self.source}


@dataclass
class _Context:
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # replace the generic ones when set


def explain_text(text: str, host: Optional[Host] = None) -> list[Explanation]:
    """Every known message in `text`, in the order it first appears."""
    found: list[tuple[int, KnownMessage, str]] = []
    for entry in KNOWN_MESSAGES:
        hit = _first_match(entry, text)
        if hit is not None:
            found.append((hit[0], entry, hit[1]))
    keys = {entry.key for _, entry, _ in found}
    found = [f for f in found if not keys.intersection(f[1].yields_to)]
    found.sort(key=lambda f: f[0])
    return [_explain(entry, line, text, host) for _, entry, line in found]


def _first_match(entry: KnownMessage, text: str) -> Optional[tuple[int, str]]:
    best: Optional[tuple[int, str]] = None
    for pattern in entry.patterns:
        for m in re.finditer(pattern, text, _FLAGS):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start:end if end >= 0 else len(text)]
            if any(re.search(u, line, re.IGNORECASE) for u in entry.unless):
                continue
            if best is None or start < best[0]:
                line = line.strip()
                best = (start, line if len(line) <= 200 else line[:197] + "...")
            break
    return best


def _explain(entry: KnownMessage, line: str, text: str, host: Optional[Host]) -> Explanation:
    context = _Context()
    resolver = _RESOLVERS.get(entry.context or "")
    if resolver is not None:
        try:
            resolver(entry, text, host, context)
        except Exception:  # noqa: BLE001 - machine facts are a bonus; keep the generic fix
            context.commands.clear()
    if context.commands:
        commands = tuple(dict.fromkeys(context.commands))
        needs_root = any(c.startswith("sudo ") for c in commands)
    else:
        commands, needs_root = entry.commands, entry.needs_root
    fix = Fix(entry.fix, commands, needs_root, entry.needs_relogin)
    return Explanation(entry.key, entry.title, entry.kind, line, entry.cause, fix,
                       entry.check, entry.source, tuple(context.notes))


# --- facts from the message ---------------------------------------------------------------


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS[unit])


def _size(pattern: str, text: str) -> Optional[tuple[str, int]]:
    m = re.search(pattern.replace("SIZE", _SIZE), text)
    return (f"{m.group(1)} {m.group(2)}", _bytes(m.group(1), m.group(2))) if m else None


# --- resolvers: (entry, text, host, context) -> None ----------------------------------------


def _gpu_code(entry: KnownMessage, text: str, host: Optional[Host], ctx: _Context) -> None:
    missing = re.findall(r"amdgcn-amd-amdhsa--(gfx[0-9a-f]+)\S*\s*-\s*\[Not Found\]", text)
    bundled = re.findall(r"hipv4-amdgcn-amd-amdhsa--(gfx[0-9a-f]+)", text)
    if missing:
        ctx.notes.append(f"The runtime found no code for {', '.join(dict.fromkeys(missing))}"
                         + (f"; the library carries code for "
                            f"{', '.join(dict.fromkeys(bundled))}" if bundled else "") + ".")
    if host is None:
        return
    from rocmdoctor.facts.amd_gpus import amd_gpus, describe
    from rocmdoctor.facts.torch import torch_info
    from rocmdoctor.kb.gfx import override_for, override_value_target

    probed = torch_info(host)
    arch = probed.arch_list if probed.imported else None
    override = host.env.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        target = override_value_target(override) or "?"
        lacking = arch is not None and target not in arch
        ctx.notes.append(f"HSA_OVERRIDE_GFX_VERSION={override} is set here: the runtime loads "
                         f"{target} code" + (", which torch was not compiled for." if lacking
                                              else "."))
        if lacking:
            ctx.commands.append("unset HSA_OVERRIDE_GFX_VERSION")
    for gpu in amd_gpus(host).gpus:
        if arch is not None and gpu.gfx in arch:
            ctx.notes.append(f"{describe(gpu)}: torch's compiled targets include {gpu.gfx}.")
            continue
        wheel = _wheel_with(gpu.gfx, host)
        rule = override_for(gpu.gfx)
        if wheel is not None:
            ctx.notes.append(f"{describe(gpu)}: {wheel[1]}.")
            ctx.commands.append("pip install --force-reinstall torch torchvision --index-url "
                                + wheel[0])
        elif rule is not None:
            ctx.notes.append(f"{describe(gpu)}: no PyTorch wheel is compiled for {gpu.gfx}; "
                             f"HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}.")
            ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={rule.value}")
        else:
            ctx.notes.append(f"{describe(gpu)}: no PyTorch wheel is compiled for {gpu.gfx} and "
                             f"no override is known to work; build torch with "
                             f"PYTORCH_ROCM_ARCH={gpu.gfx}.")
    if any(c.startswith("export HSA_OVERRIDE_GFX_VERSION=") for c in ctx.commands):
        ctx.commands = [c for c in ctx.commands if c != "unset HSA_OVERRIDE_GFX_VERSION"]


def _wheel_with(gfx: str, host: Host) -> Optional[tuple[str, str]]:
    """(index URL, why) of PyTorch's ROCm wheels that include `gfx`, preferring this ROCm's."""
    from rocmdoctor.facts.rocm_version import installed_rocm
    from rocmdoctor.kb.torch_wheels import (
        INDEX_TARGETS,
        index_url,
        rocm_index_for,
        targets_of_index,
        version_tuple,
    )

    install = installed_rocm(host)
    suffix = rocm_index_for(install.version if install else None)
    row = targets_of_index(suffix)
    here = f" (ROCm {install.version} is installed here)" if install else ""
    if row is not None and gfx in row.targets:
        return index_url("rocm" + suffix), f"PyTorch's ROCm {suffix} wheels include {gfx}{here}"
    having = [r for r in INDEX_TARGETS if gfx in r.targets]
    if not having:
        return None
    best = max(having, key=lambda r: version_tuple(r.rocm))
    return index_url("rocm" + best.rocm), (
        f"PyTorch's ROCm {best.rocm} wheels include {gfx}, those for ROCm {suffix} do not"
        f"{here}; the wheels bring their own ROCm libraries, the amdgpu driver must support "
        f"ROCm {best.rocm}")


def _out_of_memory(entry: KnownMessage, text: str, host: Optional[Host],
                   ctx: _Context) -> None:
    tried = _size(r"Tried to allocate SIZE", text)
    total = _size(r"total capacity of SIZE", text)
    spare = _size(r"SIZE is reserved by PyTorch but unallocated", text)
    vram = re.search(r"amdgpu: VRAM: (\d+)M", text)
    too_big = tried is not None and total is not None and tried[1] > total[1]
    if too_big and tried and total:
        ctx.notes.append(f"The request ({tried[0]}) is larger than the GPU's whole capacity as "
                         f"HIP reports it ({total[0]}): no allocator setting can satisfy it; "
                         f"make that tensor smaller or split the work.")
    elif spare and total and spare[1] * 5 >= total[1]:
        ctx.notes.append(f"{spare[0]} is reserved by PyTorch but unallocated: the cache is "
                         f"fragmented, so an allocator setting helps.")
    if vram and total and int(vram.group(1)) * 2**20 > 1.5 * total[1]:
        ctx.notes.append(f"The kernel log shows {int(vram.group(1)) / 1024:g} GiB of VRAM but "
                         f"HIP reports {total[0]}: HIP sees only part of this GPU's memory, as "
                         f"in TheRock issue 1054.")
    if host is None or too_big:
        return
    from rocmdoctor.facts.torch import torch_info
    from rocmdoctor.kb import allocator as kb

    facts = torch_info(host)
    if facts.build not in ("rocm", "cuda"):
        return
    already = [v for v in kb.ALL_VARIABLES if v in host.env]
    if already:
        ctx.notes.append(f"{already[0]}={host.env[already[0]]} is already set here; "
                         f"`rocmdoctor check --only allocator-config` says whether torch uses it.")
        return
    works = facts.build == "cuda" or (
        (facts.release or (0,)) >= kb.ROCM_EXPANDABLE_TORCH
        and (facts.rocm_release or (0,)) >= kb.ROCM_EXPANDABLE_ROCM)
    var = kb.HIP_ALLOC_CONF if facts.build == "rocm" else kb.CUDA_ALLOC_CONF
    value = ("expandable_segments:True" if works else
             "garbage_collection_threshold:0.8,max_split_size_mb:512")
    if not works:
        ctx.notes.append(f"torch {facts.public_version} ignores expandable_segments on ROCm; "
                         f"the allocator settings that work here are below.")
    ctx.commands.append(f"export {var}={value}")


def _machine_state(entry: KnownMessage, text: str, host: Optional[Host],
                   ctx: _Context) -> None:
    if host is None:
        return
    override = {k: v for k, v in host.env.items() if k.startswith("HSA_OVERRIDE_GFX_VERSION")}
    for name, value in sorted(override.items()):
        ctx.notes.append(f"{name}={value} is set here; a wrong target causes exactly this.")
    if host.platform.kernel_release:
        ctx.notes.append(f"This machine runs Linux {host.platform.kernel_release}; "
                         f"`rocmdoctor check --only kernel-version` compares it with ROCm's "
                         f"supported kernels.")
    if override:
        ctx.commands.extend([f"unset {' '.join(sorted(override))}", *entry.commands])


def _user_groups(entry: KnownMessage, text: str, host: Optional[Host],
                 ctx: _Context) -> None:
    if host is None:
        return
    user = host.user
    missing = [g for g in ("render", "video") if g not in user.groups]
    ctx.notes.append(f"{user.name} is in the groups {', '.join(user.groups) or '(none)'}"
                     + (f"; not in {' and '.join(missing)}." if missing else "."))
    if missing:
        ctx.commands.append(f"sudo usermod -aG {','.join(missing)} {user.name}")


def _torchvision(entry: KnownMessage, text: str, host: Optional[Host], ctx: _Context) -> None:
    if host is None:
        return
    from rocmdoctor.facts.torch import torch_info
    from rocmdoctor.kb.torch_wheels import index_url, wheel_release

    probed = torch_info(host)
    torch_version = probed.any_version or ""
    vision = probed.packages.get("torchvision")
    release = wheel_release(torch_version) if torch_version else None
    if release is None:
        return
    public, _, local = torch_version.partition("+")
    ctx.notes.append(f"torch {torch_version} is installed"
                     + (f" beside torchvision {vision}" if vision else "")
                     + f"; torch {public} pairs with torchvision {release.torchvision}.")
    suffix = re.match(r"rocm[\d.]+|cu\d+|cpu", local)
    where = f" --index-url {index_url(suffix.group(0))}" if suffix else ""
    ctx.commands.append(f"pip install --force-reinstall --no-deps "
                        f"torchvision=={release.torchvision}{where}")


def _variable(entry: KnownMessage, text: str, host: Optional[Host], ctx: _Context) -> None:
    if host is None or entry.variable is None:
        return
    value = host.env.get(entry.variable)
    ctx.notes.append(f"{entry.variable}={value} is set in this environment." if value is not None
                     else f"{entry.variable} is not set in this environment.")


_RESOLVERS: dict[str, Callable[[KnownMessage, str, Optional[Host], _Context], None]] = {
    "gpu_code": _gpu_code, "out_of_memory": _out_of_memory, "machine_state": _machine_state,
    "user_groups": _user_groups, "torchvision": _torchvision, "variable": _variable,
}


# --- rendering ------------------------------------------------------------------------------


def render_explanations(explanations: list[Explanation], width: int = 100) -> str:
    """Plain text, one block per explanation (no colour: it is pasted into bug reports)."""
    return "\n\n".join(_render_one(e, width) for e in explanations) + "\n"


def _wrap(lines: list[str], label: str, body: str, width: int) -> None:
    lines.extend(textwrap.wrap(body, width, initial_indent=f"  {label:<9}",
                               subsequent_indent=" " * 11, break_on_hyphens=False,
                               break_long_words=False) or [f"  {label}"])


def _render_one(e: Explanation, width: int) -> str:
    lines = [f"{e.title}  [{e.kind}]"]
    _wrap(lines, "seen:", e.matched, width)
    _wrap(lines, "cause:", e.cause, width)
    for note in e.notes:
        _wrap(lines, "here:", note, width)
    _wrap(lines, "fix:", e.fix.text, width)
    lines.extend(f"           $ {c}" for c in e.fix.commands)
    needs = [w for w, on in (("root", e.fix.needs_root), ("a new login", e.fix.needs_relogin))
             if on]
    if needs:
        lines.append(f"           (needs {' and '.join(needs)})")
    _wrap(lines, "confirm:", f"rocmdoctor check --only {e.check}" if e.check else
          "no check: no tool reads this setting", width)
    _wrap(lines, "source:", e.source, width)
    return "\n".join(lines)
