"""Resolvers for `rocmdoctor explain`: named by an entry's `context`, each adds what the
message itself says (its numbers, the targets and versions it names) and what the machine
says (its GPUs, torch, environment), and may replace the entry's generic commands with ones
for this case. A resolver that fails leaves the generic answer (rocmdoctor.explain)."""

from __future__ import annotations

import re
from typing import Callable, Optional

from rocmdoctor.explain.context import AMD_TEXT, Context, Situation
from rocmdoctor.kb.messages import KnownMessage

_SIZE = r"(\d+(?:\.\d+)?) ?(bytes|[KMGT]iB)"
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
WHL = "https://download.pytorch.org/whl/"


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS[unit])


def _size(pattern: str, text: str) -> Optional[tuple[str, int]]:
    m = re.search(pattern.replace("SIZE", _SIZE), text)
    return (f"{m.group(1)} {m.group(2)}", _bytes(m.group(1), m.group(2))) if m else None


def _gpu_code(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    text, host = s.text, s.host
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
        wheel = _wheel_with(gpu.gfx, s)
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


def _out_of_memory(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    text, host = s.text, s.host
    tried = _size(r"Tried to allocate SIZE", text)
    total = (_size(r"total capaci?ty of SIZE", text) or _size(r"SIZE total capacity", text))
    spare = _size(r"SIZE is reserved by PyTorch but unallocated", text)
    free = _size(r"of which SIZE is free", text) or _size(r"SIZE free;", text)
    by_torch = _size(r"SIZE is allocated by PyTorch", text) or _size(r"SIZE already allocated",
                                                                     text)
    other = re.search(r"Process (\d+) has " + _SIZE + r" memory in use", text)
    allowed = _size(r"SIZE allowed;", text)
    vram = re.search(r"amdgpu: VRAM: (\d+)M", text)
    too_big = tried is not None and total is not None and tried[1] > total[1]
    if too_big and tried and total:
        ctx.notes.append(f"The request ({tried[0]}) is larger than the GPU's whole capacity as "
                         f"HIP reports it ({total[0]}): no allocator setting can satisfy it; "
                         f"make that tensor smaller or split the work.")
    elif spare and total and spare[1] * 5 >= total[1]:
        ctx.notes.append(f"{spare[0]} is reserved by PyTorch but unallocated: the cache is "
                         f"fragmented, so an allocator setting helps.")
    elif tried and free and free[1] >= 100 * tried[1] and free[1] >= 2**30:
        ctx.notes.append(f"Only {tried[0]} was asked for while {free[0]} is free: this is not "
                         f"the GPU running out; a limit on this process or an allocator fault "
                         f"is; report it with the message.")
    elif by_torch and total and by_torch[1] * 5 >= total[1] * 4:
        ctx.notes.append(f"PyTorch itself holds {by_torch[0]} of {total[0]}: the workload does "
                         f"not fit this GPU as it is; make it smaller.")
    in_use = _bytes(other.group(2), other.group(3)) if other else 0
    if other and not (by_torch and by_torch[1] <= in_use <= by_torch[1] + 2**31):
        # torch lists every process on the GPU; one holding what PyTorch allocated is this one
        ctx.notes.append(f"Process {other.group(1)} holds {other.group(2)} {other.group(3)} on "
                         f"this GPU: if that is another program, stop it or use another GPU.")
    if allowed:
        ctx.notes.append(f"'{allowed[0]} allowed' is a per-process cap "
                         f"(torch.cuda.set_per_process_memory_fraction), not the GPU's size: "
                         f"raise or remove it.")
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


def _machine_state(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    host = s.host
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


def _user_groups(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    host = s.host
    if re.search(r"is member of video group", s.text):
        ctx.notes.append("rocminfo says the user is in the video group; on systems where "
                         "/dev/kfd belongs to render that is not enough (older rocminfo "
                         "checked only video).")
    if host is None or s.environment()[0] == "container":
        return
    user = host.user
    missing = [g for g in ("render", "video") if g not in user.groups]
    ctx.notes.append(f"{user.name} is in the groups {', '.join(user.groups) or '(none)'}"
                     + (f"; not in {' and '.join(missing)}." if missing else "."))
    if missing:
        ctx.commands.append(f"sudo usermod -aG {','.join(missing)} {user.name}")


def _torchvision(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    host = s.host
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


def _variable(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    if s.host is None or entry.variable is None:
        return
    value = s.host.env.get(entry.variable)
    ctx.notes.append(f"{entry.variable}={value} is set in this environment." if value is not None
                     else f"{entry.variable} is not set in this environment.")


def _cuda_capability(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    gpu = re.search(r"(\S[^\n]*?) with CUDA capability sm_(\d+) is not compatible", s.text)
    listed = re.search(r"supports CUDA capabilities ((?:sm_\d+ ?)+)", s.text)
    if gpu is None:
        return
    sm = int(gpu.group(2))
    ctx.notes.append(f"{gpu.group(1).strip()} is sm_{sm}"
                     + (f"; this torch has code for {listed.group(1).strip()}." if listed
                        else "."))
    if sm >= 120:
        ctx.notes.append("sm_120 (RTX 50 series) needs a torch built with CUDA 12.8 or newer.")
        ctx.commands.append(f"pip install --force-reinstall torch torchvision --index-url "
                            f"{WHL}cu128")


def _driver_found(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"found version (\d{4,6})", s.text)
    if m is None:
        return
    from rocmdoctor.kb.torch_wheels import WHEELS, version_tuple

    number = int(m.group(1))
    cuda = (number // 1000, (number % 1000) // 10)
    ctx.notes.append(f"'found version {number}': this driver supports CUDA "
                     f"{cuda[0]}.{cuda[1]} at most.")
    for release in reversed(WHEELS):
        fitting = [c for c in release.cuda if version_tuple(c)[:2] <= cuda]
        if fitting:
            cu = max(fitting, key=version_tuple)
            ctx.notes.append(f"torch {release.torch} is the newest release with a wheel for "
                             f"CUDA {cu} or older.")
            ctx.commands.extend(["nvidia-smi", f"pip install torch=={release.torch} "
                                 f"torchvision=={release.torchvision} --index-url "
                                 f"{WHL}cu{cu.replace('.', '')}"])
            return


_CUDA_CODES = {
    100: "no CUDA-capable device was detected",
    101: "an invalid device ordinal (a mask or index names a GPU that does not exist)",
    802: "the system is not ready: a required driver daemon is not running (on NVSwitch "
         "systems, nvidia-fabricmanager)",
    803: "the display driver and the CUDA driver versions differ: reboot after a driver "
         "update, or remove a forward-compatibility package that does not match",
    804: "forward compatibility was set up, but the visible GPU does not support it: remove "
         "the compatibility libraries or show only supported GPUs",
}


def _cuda_code(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"Error (\d+): (\w+)", s.text)
    if m is None:
        return
    meaning = None if entry.key.startswith("hip") else _CUDA_CODES.get(int(m.group(1)))
    ctx.notes.append(f"Error {m.group(1)} is {m.group(2)}" + (f": {meaning}." if meaning
                                                               else "."))
    if m.group(1) == "802":
        ctx.commands.append("systemctl status nvidia-fabricmanager")


def _masks(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    masks = s.masks()
    if not masks:
        return
    ctx.notes.append("Set: " + ", ".join(f"{k}={v}" for k, v in sorted(masks.items())) + ".")
    if entry.key == "visible-devices-both-set":
        return
    ctx.commands.extend([f"unset {k}" for k in sorted(masks)])
    ctx.commands.extend(entry.commands)


def _nccl_last_error(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"Last error:\s*\n(?:\s*\[rank\d+\]:)?\s*([^\n]+)", s.text)
    if m is not None and m.group(1).strip():
        ctx.notes.append(f"NCCL's last error: {m.group(1).strip()}.")


def _xid(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.errors import XID_MEANINGS

    for code in dict.fromkeys(int(c) for c in re.findall(r"Xid \([^)]*\): (\d+)", s.text)):
        meaning = XID_MEANINGS.get(code)
        ctx.notes.append(f"Xid {code}: {meaning}." if meaning else
                         f"Xid {code}: look it up in NVIDIA's Xid catalog.")


def _dkms(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    kernel = re.search(r"module build on kernel: (\S+)", s.text)
    package = re.search(r"/var/lib/dkms/(amdgpu|nvidia)/([^/\s]+)/", s.text)
    if kernel and package:
        ctx.notes.append(f"{package.group(1)} {package.group(2)} did not build for kernel "
                         f"{kernel.group(1)}.")
    if re.search(r"dma_resv->seq is missing", s.text):
        ctx.notes.append("'dma_resv->seq is missing': the driver's compatibility layer does "
                         "not know this distribution kernel (ROCm 5.5 fixed it for CentOS "
                         "Stream 8, ROCm issue 2155).")


def _tensile(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.gfx import override_for

    arch = re.search(r"(?:GPU arch : |_lazy_)(gfx[0-9a-f]+)", s.text)
    listed = sorted(set(re.findall(r"TensileLibrary_lazy_(gfx[0-9a-f]+)\.dat\"", s.text)))
    sdk = re.search(r"AMD\\ROCm\\(\d+\.\d+)", s.text)
    if arch:
        gfx = arch.group(1)
        ctx.notes.append(f"The library has no kernels for {gfx}"
                         + (f"; it has {', '.join(listed)}." if listed else "."))
        rule = override_for(gfx)
        if rule is not None:
            ctx.notes.append(f"HSA_OVERRIDE_GFX_VERSION={rule.value} {rule.note}.")
            ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={rule.value}")
    if sdk:
        ctx.notes.append(f"This is the Windows HIP SDK {sdk.group(1)}: community rocBLAS "
                         f"libraries (and rocblas.dll) must be built for that same SDK "
                         f"version (ROCmLibs maintainers).")


def _ollama_gfx(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.gfx import override_for

    gpus = list(dict.fromkeys(re.findall(r"gpu_type=(gfx[0-9a-f]+)", s.text)))
    if re.search(r"supported types:\[\]", s.text):
        ctx.notes.append("'supported types:[]': ollama found no ROCm library it can match; on "
                         "Windows community builds replace rocblas.dll and its library "
                         "folder, and remove a stale HSA_OVERRIDE_GFX_VERSION.")
    for gfx in gpus:
        rule = override_for(gfx)
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


def _override_format(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"HSA_OVERRIDE_GFX_VERSION\s*[=:]\s*[\"']?gfx([0-9a-f]{3,4})\b", s.text, re.I)
    if m is None:
        return
    digits = m.group(1).lower()
    number = f"{int(digits[:-2])}.{int(digits[-2], 16)}.{int(digits[-1], 16)}"
    ctx.notes.append(f"gfx{digits} is written {number}.")
    ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={number}")


def _torch_build(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    amd = bool(s._host_signals("amd")) or (s.host is None and bool(AMD_TEXT.search(s.text)))
    if not amd:
        if s._host_signals("nvidia"):
            ctx.commands.extend([entry.commands[0], "pip install --force-reinstall torch "
                                 f"torchvision --index-url {WHL}cu128"])
        return
    from rocmdoctor.kb.torch_wheels import index_url, rocm_index_for

    install = None
    if s.host is not None:
        from rocmdoctor.facts.rocm_version import installed_rocm

        install = installed_rocm(s.host)
    suffix = rocm_index_for(install.version if install else None)
    ctx.notes.append("This is an AMD GPU: it needs a ROCm build of torch (on Linux from "
                     "PyTorch's ROCm index; on Windows AMD's own wheels), not a CUDA one.")
    ctx.commands.extend([entry.commands[0], "pip install --force-reinstall torch torchvision "
                         "--index-url " + index_url("rocm" + suffix)])


def _webui_abort(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    if re.search(r"Error code: 134\b", s.text):
        ctx.notes.append("Error code 134 is SIGABRT: the test process aborted instead of "
                         "answering False; with a ROCm torch that is the HIP runtime finding "
                         "no code for the GPU.")


RESOLVERS: dict[str, Callable[[KnownMessage, Situation, Context], None]] = {
    "gpu_code": _gpu_code, "out_of_memory": _out_of_memory, "machine_state": _machine_state,
    "user_groups": _user_groups, "torchvision": _torchvision, "variable": _variable,
    "cuda_capability": _cuda_capability, "driver_found": _driver_found, "cuda_code": _cuda_code,
    "masks": _masks, "nccl_last_error": _nccl_last_error, "xid": _xid, "dkms": _dkms,
    "tensile": _tensile, "ollama_gfx": _ollama_gfx, "override_format": _override_format,
    "torch_build": _torch_build, "webui_abort": _webui_abort,
}
