"""Resolvers that reason about GPU targets: the gfx target or compute capability a text (or
the machine) names, against kb's tables of ROCm releases, PyTorch wheels and overrides.

The rules the answers keep: a gfx target some ROCm release supports natively never gets an
HSA_OVERRIDE_GFX_VERSION (the library in use was built without it: a newer build is the
fix); a target no known release ships says so; a log written on Windows gets no override
(only ROCm's Linux runtime reads it); an old NVIDIA GPU is told which wheels last carried
code for it.
"""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.explain.context import Context, Situation
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb.errors_base import ARCH_LIST
from rocmdoctor.kb.messages import KnownMessage

WHL = "https://download.pytorch.org/whl/"
# TheRock's multi-arch wheels: "GPU-specific packages like amd-torch-device-gfx1100 contain
# GPU-specific kernels" (RELEASES.md, cited by AMD in TheRock issue 7839).
THEROCK_INDEX = "https://stable.repo.amd.com/rocm/whl-next/"
THEROCK_TEXT = re.compile(r"_rocm_sdk|rocm-sdk|rocm_sdk|device-gfx|device wheel|whl-multi-arch|"
                          r"whl-next|"
                          r"\+rocm1\d\.|rocm\.nightlies|therock", re.IGNORECASE)
TORCH_TEXT = re.compile(r"\btorch\b|PyTorch|TORCH_|\bcomfy|site-packages[/\\]torch", re.IGNORECASE)
DISCRETE = re.compile(r"\bRX ?\d{4}|\bW\d{4}\b|\bMI\d{2,3}|\bRadeon VII\b|\bVega (?:56|64)\b",
                      re.IGNORECASE)


def newest_known() -> str:
    return kb_gfx.release_name(max(kb_gfx.ROCM_RELEASES, key=lambda r: r.first))


def native_since(gfx: str) -> Optional[str]:
    """The first ROCm release (this table knows) that lists `gfx` as natively supported."""
    rows = [r for r in kb_gfx.ROCM_RELEASES if kb_gfx.base_target(gfx) in r.targets]
    if not rows:
        return None
    production = [r for r in rows if not r.preview]
    return kb_gfx.release_name(min(production or rows, key=lambda r: r.first))


def native_note(gfx: str, since: str) -> str:
    return (f"{gfx} is a target ROCm supports natively (ROCm {since} and later list it): it "
            f"needs no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.")


def never_note(gfx: str) -> str:
    return (f"No ROCm release from 6.0 to {newest_known()} (those this table knows) lists "
            f"{gfx} as supported: its libraries need not carry code for it.")


def windows_note() -> str:
    return ("This log was written on Windows: HSA_OVERRIDE_GFX_VERSION is read only by "
            "ROCm's Linux runtime (libhsakmt); on Windows it changes nothing.")


_OWN_BUILD = re.compile(r"offload-arch=|PYTORCH_ROCM_ARCH\s*=", re.IGNORECASE)


def gpu_gfx(s: Situation) -> list[tuple[str, int]]:
    """The GPU targets the text names as the GPU's (not a build list), with their lines; else
    the one target a program compiled for with --offload-arch or PYTORCH_ROCM_ARCH (tools
    that build for the GPU they find, such as llamafile, and users building for their own GPU
    name it there); else the target of the one AMD product the text names (kb.gpu_names)."""
    seen: dict[str, int] = {}
    for fact in s.facts.all("gfx"):
        seen.setdefault(fact.value, fact.line)
    if seen:
        return list(seen.items())
    built = {f.value: f.line for f in s.facts.all("gfx", role="build")
             if _OWN_BUILD.search(f.text)}
    if len(built) == 1:
        return list(built.items())
    named = {f.value: f.line for f in s.facts.all("gfx", role="name")}
    return list(named.items()) if len(named) == 1 else []


def name_note(s: Situation, gfx: str) -> Optional[str]:
    """'The text names the GPU, RX 6600 (line 1): its target is gfx1032', when `gfx` came
    from a product name and not from the text's own targets."""
    if any(f.value == gfx for f in s.facts.all("gfx")):
        return None
    fact = next((f for f in s.facts.all("gfx", role="name") if f.value == gfx), None)
    if fact is None:
        return None
    name = next((f.value for f in s.facts.all("gpu_name", role="amd") if f.line == fact.line),
                "GPU")
    return (f"The text names the GPU, {name} (line {fact.line}): its target is {gfx} "
            f"(ROCm's and LLVM's GPU lists).")


def newest_wheel(gfx: str) -> Optional[tuple[str, str]]:
    """(index suffix, torch release) of the newest PyTorch ROCm wheels compiled for gfx."""
    from rocmdoctor.kb.torch_wheels import INDEX_TARGETS, WHEELS, version_tuple

    having = [r for r in INDEX_TARGETS if gfx in r.targets]
    if not having:
        return None
    best = max(having, key=lambda r: version_tuple(r.rocm))
    torch = max((w for w in WHEELS if best.rocm in w.rocm), key=lambda w: version_tuple(w.torch))
    return best.rocm, torch.torch


def raised_in_package(s: Situation, ctx: Context, gfx: Optional[str]) -> bool:
    """Where the traceback's raising frame is a package other than torch, that package's
    build is the one without the code: say so and give its rebuild as the fix. True if so.

    torch.utils.cpp_extension takes a HIP extension's targets from PYTORCH_ROCM_ARCH, else
    from the GPUs it sees, so a build with no GPU (a Dockerfile) makes code for other targets
    (ROCm/TransformerEngine issue 74)."""
    frame = s.facts.frame
    if frame is None or frame.package in (None, "torch"):
        return False
    package = frame.package
    ctx.notes.append(f"The error was raised inside {package} (line {frame.at}): that "
                     f"package's build is the one to check.")
    if gfx is None:
        ctx.fix = (f"Rebuild {package} with code for this GPU's gfx target: on the machine "
                   f"with the GPU, or naming the target (torch's extension builds read "
                   f"PYTORCH_ROCM_ARCH; some packages have their own variable).")
        ctx.commands[:] = ["rocminfo | grep -o -m1 'gfx[0-9a-f]*'",
                           "export PYTORCH_ROCM_ARCH=<that gfx target>"]
    else:
        ctx.fix = (f"Rebuild {package} with {gfx} code: on the machine with this GPU, or "
                   f"naming the target (torch's extension builds read PYTORCH_ROCM_ARCH={gfx}; "
                   f"some packages have their own variable); no HSA_OVERRIDE_GFX_VERSION.")
        ctx.commands.append(f"export PYTORCH_ROCM_ARCH={gfx}")
    return True


def paste_targets(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """What the text's own gfx targets say: native (a newer build, no override), never
    shipped (override on Linux when one is known, a build otherwise), Windows."""
    targets = gpu_gfx(s)
    windows = s.written_on_windows()
    if not targets:
        ctx.doubts.append("the text names no GPU target (gfx); "
                          + ("`hipInfo` (the HIP SDK's) says which it is" if windows else
                             "`rocminfo | grep -m1 gfx` says which it is"))
        if not windows:
            raised_in_package(s, ctx, None)
        return
    for gfx, line in targets[:2]:
        ctx.basis.append(line)
        named = name_note(s, gfx)
        if named:
            ctx.notes.append(named)
        since = native_since(gfx)
        if windows:
            ctx.notes.append(windows_note())
            if THEROCK_TEXT.search(s.text):
                ctx.notes.append(f"AMD's multi-arch wheels keep {gfx}'s kernels in a "
                                 f"GPU-specific package: install torch with [device-{gfx}].")
                ctx.commands.append(f'pip install --index-url {THEROCK_INDEX} '
                                    f'"torch[device-{gfx}]" "torchvision[device-{gfx}]"')
            continue
        if since is not None:
            ctx.notes.append(native_note(gfx, since))
            if raised_in_package(s, ctx, gfx):
                continue
            wheel = newest_wheel(gfx)
            who = "torch" if TORCH_TEXT.search(s.text) else "the program that raised it"
            ctx.fix = (f"Install a release of {who} built with {gfx} code; no "
                       f"HSA_OVERRIDE_GFX_VERSION (ROCm supports {gfx} itself).")
            if wheel is not None and TORCH_TEXT.search(s.text):
                ctx.commands.append(f"pip install --force-reinstall torch torchvision "
                                    f"--index-url {WHL}rocm{wheel[0]}")
            elif wheel is not None:
                ctx.notes.append(f"The text does not show torch: the program that raised it "
                                 f"needs a build with {gfx} code.")
            continue
        ctx.notes.append(never_note(gfx))
        rule = kb_gfx.override_for(gfx)
        if rule is not None:
            ctx.notes.append(f"HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}; torch must "
                             f"carry {rule.target} code for it to help.")
            ctx.commands.extend([ARCH_LIST, f"export HSA_OVERRIDE_GFX_VERSION={rule.value}"])
        else:
            ctx.notes.append(f"No override is known to work for {gfx}: build torch with "
                             f"PYTORCH_ROCM_ARCH={gfx}.")


def _gpu_code(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    text, host = s.text, s.host
    missing = re.findall(r"amdgcn-amd-amdhsa--(gfx[0-9a-f]+)\S*\s*-\s*\[Not Found\]", text)
    bundled = re.findall(r"hipv4-amdgcn-amd-amdhsa--(gfx[0-9a-f]+)", text)
    if missing:
        ctx.notes.append(f"The runtime found no code for {', '.join(dict.fromkeys(missing))}"
                         + (f"; the library carries code for "
                            f"{', '.join(dict.fromkeys(bundled))}" if bundled else "") + ".")
    elsewhere = s.machine_is_elsewhere()
    if elsewhere:
        ctx.notes.append(f"Note: {elsewhere}.")
    if host is None or elsewhere:
        paste_targets(entry, s, ctx)
        return
    kept = len(ctx.notes)
    try:
        machine_targets(entry, s, ctx)
    except Exception:  # noqa: BLE001 - an unreadable machine fact leaves the text's facts
        del ctx.notes[kept:]
        ctx.commands.clear()
    if len(ctx.notes) == kept and not ctx.commands:
        paste_targets(entry, s, ctx)


def machine_targets(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """This machine's GPUs against its torch: the wheel index that has them, or the override
    value that works for a target no wheel has."""
    host = s.host
    assert host is not None
    from rocmdoctor.facts.amd_gpus import amd_gpus, describe
    from rocmdoctor.facts.torch import torch_info

    probed = torch_info(host)
    arch = probed.arch_list if probed.imported else None
    override = host.env.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        target = kb_gfx.override_value_target(override) or "?"
        lacking = arch is not None and target not in arch
        ctx.notes.append(f"HSA_OVERRIDE_GFX_VERSION={override} is set here: the runtime loads "
                         f"{target} code" + (", which torch was not compiled for." if lacking
                                              else "."))
        if lacking:
            ctx.commands.append("unset HSA_OVERRIDE_GFX_VERSION")
    for gpu in amd_gpus(host).gpus:
        if arch is not None and gpu.gfx in arch:
            ctx.notes.append(f"{describe(gpu)}: torch's compiled targets include {gpu.gfx}.")
            raised_in_package(s, ctx, gpu.gfx)  # torch has the code: the package lacks it
            continue
        wheel = _wheel_with(gpu.gfx, s)
        rule = kb_gfx.override_for(gpu.gfx)
        if wheel is not None:
            ctx.notes.append(f"{describe(gpu)}: {wheel[1]}.")
            ctx.commands.append("pip install --force-reinstall torch torchvision --index-url "
                                + wheel[0])
        elif rule is not None and native_since(gpu.gfx) is None:
            ctx.notes.append(f"{describe(gpu)}: no PyTorch wheel is compiled for {gpu.gfx}; "
                             f"HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}.")
            ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={rule.value}")
        else:
            ctx.notes.append(f"{describe(gpu)}: no PyTorch wheel is compiled for {gpu.gfx} and "
                             f"no override is known to work; build torch with "
                             f"PYTORCH_ROCM_ARCH={gpu.gfx}.")
    if any(c.startswith("export HSA_OVERRIDE_GFX_VERSION=") for c in ctx.commands):
        ctx.commands = [c for c in ctx.commands if c != "unset HSA_OVERRIDE_GFX_VERSION"]


def _wheel_with(gfx: str, s: Situation) -> Optional[tuple[str, str]]:
    """(index URL, why) of PyTorch's ROCm wheels that include `gfx`, preferring this ROCm's."""
    from rocmdoctor.facts.rocm_version import installed_rocm
    from rocmdoctor.kb.torch_wheels import (
        INDEX_TARGETS,
        index_url,
        rocm_index_for,
        targets_of_index,
        version_tuple,
    )

    assert s.host is not None
    install = installed_rocm(s.host)
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


def _integrated(gfx: str, s: Situation) -> bool:
    """An APU's graphics picked while the text shows a discrete GPU too, or a desktop CPU's
    graphics (gfx1036: Ryzen 7000/9000 desktop parts, which ROCm does not support)."""
    return kb_gfx.is_apu(gfx) and (gfx == "gfx1036" or bool(DISCRETE.search(s.text)))


def _tensile(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.trackers import tracker

    m = re.search(r"(?:GPU arch : |_lazy_)(gfx[0-9a-f]+)", s.text)
    listed = sorted(set(re.findall(r"TensileLibrary_lazy_(gfx[0-9a-f]+)\.dat\"", s.text)))
    sdk = re.search(r"AMD\\ROCm\\(\d+\.\d+)", s.text)
    targets = gpu_gfx(s)
    gfx = m.group(1) if m else (targets[0][0] if targets else None)
    windows = s.written_on_windows() or bool(sdk)
    if gfx is None:
        ctx.doubts.append("the text names no GPU target; `rocminfo | grep -m1 gfx` says which")
        return
    line = next((ln for g, ln in targets if g == gfx), None)
    if line:
        ctx.basis.append(line)
    named = name_note(s, gfx)
    if named:
        ctx.notes.append(named)
    ctx.notes.append(f"The library has no kernels for {gfx}"
                     + (f"; it has {', '.join(listed)}." if listed else "."))
    since = native_since(gfx)
    app = s.facts.first("app")
    if _integrated(gfx, s):
        info = kb_gfx.target_info(gfx)
        ctx.notes.append(f"{gfx} is an integrated GPU ({info.products if info else 'APU'}), "
                         f"which ROCm does not support for this: the application picked it. "
                         f"Hide it so the discrete GPU is used (or disable it in the BIOS, as "
                         f"AMD's ROCm documents advise).")
        ctx.commands.extend([("hipInfo" if windows else
                              "rocminfo | grep -E 'Marketing Name|gfx'"),
                             ("set HIP_VISIBLE_DEVICES=<index of the discrete GPU>" if windows
                              else "export HIP_VISIBLE_DEVICES=<index of the discrete GPU>")])
    elif windows:
        ctx.notes.append(windows_note())
        if since is not None:
            ctx.notes.append(f"ROCm's Linux releases list {gfx} from {since}; on Windows the "
                             f"HIP SDK's own rocBLAS must carry it.")
        ctx.notes.append(f"Use rocBLAS built for {gfx} and this HIP SDK version: replace "
                         f"rocblas.dll and the rocblas\\library folder with such a build "
                         f"(community builds exist for several consumer targets), or an "
                         f"application build that bundles one.")
    elif since is not None:
        ctx.notes.append(native_note(gfx, since))
        rocm = s.facts.first("rocm")
        if rocm is not None and kb_gfx.parse_override(_triple(rocm.value)) is not None:
            from rocmdoctor.kb.rocm_support import version_key

            if version_key(rocm.value) < version_key(since.split()[0]):
                ctx.basis.append(rocm.line)
                ctx.notes.append(f"ROCm {rocm.value} (line {rocm.line}) is older than "
                                 f"{since.split()[0]}, the first to ship {gfx}: update ROCm.")
        known = tracker(app.value) if app else None
        if known is not None and known.rebuild:
            ctx.notes.append(f"{app.value if app else ''} gets libraries with {gfx} this way "
                             f"({known.rebuild_source}).")
            ctx.commands.append(known.rebuild.replace("<gfx>", gfx))
    else:
        ctx.notes.append(never_note(gfx))
        rule = kb_gfx.override_for(gfx)
        if rule is not None:
            ctx.notes.append(f"HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}.")
            ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={rule.value}")
        else:
            ctx.notes.append(f"{gfx}: no override is known to work for it.")
    if sdk:
        ctx.notes.append(f"This is the Windows HIP SDK {sdk.group(1)}: community rocBLAS "
                         f"libraries (and rocblas.dll) must be built for that same SDK "
                         f"version (ROCmLibs maintainers).")


def _triple(version: str) -> str:
    parts = (version.split(".") + ["0", "0"])[:3]
    return ".".join(p if p.isdigit() else "0" for p in parts)


def _ollama_gfx(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.trackers import tracker

    gpus = list(dict.fromkeys(a or b for a, b in re.findall(
        r"gpu_type=(gfx[0-9a-f]+)|amdgpu \[\d+\] (gfx[0-9a-f]+) is not supported", s.text)))
    if re.search(r"supported types:\[\]", s.text):
        ctx.notes.append("'supported types:[]': ollama found no ROCm library it can match; on "
                         "Windows community builds replace rocblas.dll and its library "
                         "folder, and remove a stale HSA_OVERRIDE_GFX_VERSION.")
    for gfx in gpus:
        since = native_since(gfx)
        if since is not None:
            ctx.notes.append(native_note(gfx, since) + " ollama's bundled ROCm libraries lack "
                             "it: update ollama.")
            if s.environment()[0] == "container":
                ctx.fix = (f"Pull a newer ollama/ollama:rocm image (its bundled ROCm libraries "
                           f"lack {gfx}) and start the container again; no "
                           f"HSA_OVERRIDE_GFX_VERSION.")
                ctx.commands.append("docker pull ollama/ollama:rocm")
                return
            known = tracker("ollama")
            if known is not None and known.rebuild:
                ctx.commands.append(known.rebuild)
            return
        if s.written_on_windows():
            ctx.notes.append(windows_note())
            return
        rule = kb_gfx.override_for(gfx)
        if rule is None:
            ctx.notes.append(f"{gfx}: no override is known to work for it.")
            continue
        ctx.notes.append(f"{gfx}: HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}.")
        ctx.commands.extend([
            "sudo mkdir -p /etc/systemd/system/ollama.service.d",
            f"printf '[Service]\\nEnvironment=\"HSA_OVERRIDE_GFX_VERSION={rule.value}\"\\n' | "
            f"sudo tee /etc/systemd/system/ollama.service.d/override.conf",
            "sudo systemctl daemon-reload && sudo systemctl restart ollama"])
        return
