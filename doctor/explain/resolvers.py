"""Resolvers for `rocmdoctor explain`: named by an entry's `context`, each adds what the
message itself says (its numbers, the targets and versions it names) and what the machine
says (its GPUs, torch, environment), and may replace the entry's generic commands with ones
for this case. A resolver that fails leaves the generic answer (rocmdoctor.explain).

GPU targets are reasoned about in rocmdoctor.explain.targets (gfx) and .capability (NVIDIA
compute capabilities), libraries and the system under them in .stack; this module holds the
rest and the table that names them all."""

from __future__ import annotations

import re
from typing import Callable, Optional

from rocmdoctor.explain import capability, stack, targets
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






# The runtime's own allocation failing (no "Tried to allocate") under WSL: its context and
# pinned host buffers come from the WSL VM, which Microsoft's WSL settings give 50 % of the
# computer's memory by default (https://learn.microsoft.com/en-us/windows/wsl/wsl-config);
# OpenMOSS/MOSS issue 328 was that limit, fixed in .wslconfig.
WSL_VM_MEMORY = ("Under WSL this allocation may be the WSL VM's memory running out, not the "
                 "GPU's: the VM gets half the computer's memory by default. Where nvidia-smi "
                 "shows the GPU not full, raise memory= under [wsl2] in "
                 "%UserProfile%\\.wslconfig and run `wsl --shutdown` in Windows.")


def _out_of_memory(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    text, host = s.text, s.host
    tried = _size(r"Tried to allocate SIZE", text)
    stream = re.search(r"\b(hip|cuda)(?:StreamCreate|CtxCreate|EventCreate)\w*(?=\()", text)
    if stream and tried is None:
        line = s.line_of(stream.start())
        ctx.basis.append(line)
        ctx.doubts.append(f"the call that failed ({stream.group(0)}, line {line}) creates a "
                          f"stream or context; it allocates no tensor")
        if stream.group(1) == "hip":
            # llama.cpp issue 8618: a 780M iGPU visible beside the card; hiding it helped
            ctx.notes.append("One known cause, with an integrated GPU beside the card: HIP "
                             "counts both, and work on the iGPU (one ROCm does not support) "
                             "fails this way; hide it with HIP_VISIBLE_DEVICES (llama.cpp "
                             "issue 8618).")
            ctx.commands.extend(["rocminfo | grep -E 'Marketing Name|gfx'",
                                 "export HIP_VISIBLE_DEVICES=<the card's index>"])
    total = (_size(r"total capaci?ty of SIZE", text) or _size(r"SIZE total capacity", text))
    spare = _size(r"SIZE is reserved by PyTorch but unallocated", text)
    free = _size(r"of which SIZE is free", text) or _size(r"SIZE free;", text)
    by_torch = _size(r"SIZE is allocated by PyTorch", text) or _size(r"SIZE already allocated",
                                                                     text)
    other = re.search(r"Process (\d+) has " + _SIZE + r" memory in use", text)
    allowed = _size(r"SIZE allowed;", text)
    vram = re.search(r"amdgpu: VRAM: (\d+)M", text)
    too_big = tried is not None and total is not None and tried[1] > total[1]
    # an APU whose kernel log shows far more VRAM than HIP reports (TheRock issue 1054)
    apu_gap = bool(vram and total and int(vram.group(1)) * 2**20 > 1.5 * total[1])
    if too_big and tried and total:
        ctx.notes.append(f"The request ({tried[0]}) is larger than the GPU's whole capacity as "
                         f"HIP reports it ({total[0]}): no allocator setting can satisfy it"
                         + ("." if apu_gap else "; make that tensor smaller or split the "
                                                "work."))
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
    if tried is None and s.environment()[0] == "wsl" and re.search(
            r"(?:CUDA|HIP) error: ?out of memory", text, re.IGNORECASE):
        ctx.notes.append(WSL_VM_MEMORY)
    if vram and total and apu_gap:
        ctx.notes.append(f"The kernel log shows {int(vram.group(1)) / 1024:g} GiB of VRAM but "
                         f"HIP reports {total[0]}: HIP sees only part of this GPU's memory, as "
                         f"in TheRock issue 1054.")
        # TheRock issue 1054 (the reporter, with amdgpu_top): HIP placed the tensors in GTT,
        # not in the 96 GB carve-out; a minimal BIOS carve-out gave the memory to GTT
        ctx.fix = ("This APU's memory is not what HIP allocates from: it puts tensors in GTT, "
                   "not the VRAM carve-out the kernel log shows. Set the BIOS VRAM (UMA frame "
                   "buffer) carve-out to its minimum so the memory is given to GTT, or use a "
                   "newer ROCm build for this GPU; a smaller batch only hides it.")
        ctx.commands[:] = ["sudo dmesg | grep -i -e 'VRAM' -e 'GTT'",
                           "python -c 'import torch; print(torch.cuda.mem_get_info())'"]
        return
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


def _unsupported_gpu(s: Situation, ctx: Context) -> bool:
    """The text's GPU is a target no known ROCm release supports and no override runs: the
    runtime fails to open it whatever the user's groups (the entries' cause says "unsupported
    GPUs fail the same way"). Notes it and says so in the fix."""
    from rocmdoctor.explain import targets
    from rocmdoctor.kb import gfx as kb_gfx

    if s.written_on_windows():
        return False
    for gfx, line in targets.gpu_gfx(s)[:1]:
        if targets.native_since(gfx) is not None or kb_gfx.override_for(gfx) is not None:
            return False
        ctx.basis.append(line)
        named = targets.name_note(s, gfx)
        if named:
            ctx.notes.append(named)
        ctx.notes.append(targets.never_note(gfx) + " No override is known to run it.")
        ctx.fix = (f"{gfx} is not a GPU ROCm supports: the runtime fails to open it this way "
                   f"whatever the groups. Use a GPU on ROCm's support list (or a ROCm release "
                   f"old enough to have supported it); the groups below matter only then.")
        return True
    return False


def _user_groups(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    host = s.host
    _unsupported_gpu(s, ctx)
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


# What cudaGetDeviceCount's error codes mean. 802 and 804 have entries of their own
# (cuda-fabric-manager, cuda-forward-compat-unsupported), which this one yields to.
_CUDA_CODES = {
    100: "no CUDA-capable device was detected",
    101: "an invalid device ordinal (a mask or index names a GPU that does not exist)",
    803: "the display driver and the CUDA driver versions differ: reboot after a driver "
         "update, or remove a forward-compatibility package that does not match",
}


def _cuda_code(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"Error (\d+): ([^\n(]+?)[.\s]*(?:\(|$)", s.text, re.MULTILINE)
    if m is None:
        return
    meaning = None if entry.key.startswith("hip") else _CUDA_CODES.get(int(m.group(1)))
    ctx.notes.append(f"Error {m.group(1)} ({m.group(2).strip()})" + (f": {meaning}." if meaning
                                                                      else "."))


def _masks(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    masks = s.masks()
    if not masks:
        return
    ctx.notes.append("Set: " + ", ".join(f"{k}={v}" for k, v in sorted(masks.items())) + ".")
    if entry.key == "visible-devices-both-set":
        return
    ctx.commands.extend([f"unset {k}" for k in sorted(masks)])
    ctx.commands.extend(entry.commands)


# NVIDIA/nccl issue 1240 (maintainer): NCCL_GRAPH_FILE, left set to an image's graph.xml,
# made every communicator fail with ncclSystemError; "it should never be set in production".
# As exported (NCCL_GRAPH_FILE=...) or as NCCL's INFO log says it ("NCCL_GRAPH_FILE set by
# environment to ...", src/misc/param.cc).
_NCCL_GRAPH = re.compile(r"\bNCCL_GRAPH_FILE(?:\s*[=:]\s*|\s+set by environment to\s+)"
                         r"([^\s\"']+)")


def _nccl_last_error(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"Last error:\s*\n(?:\s*\[rank\d+\]:)?\s*([^\n]+)", s.text)
    if m is not None and m.group(1).strip():
        ctx.notes.append(f"NCCL's last error: {m.group(1).strip()}.")
    graph = _NCCL_GRAPH.search(s.text)
    where = "in the text" if graph else ""
    value = graph.group(1) if graph else s.env().get("NCCL_GRAPH_FILE", "")
    if value and not where:
        where = "on this machine"
    if value:
        ctx.notes.append(f"NCCL_GRAPH_FILE={value} is set {where}: NCCL then builds its rings "
                         f"from that file instead of this machine's topology, which fails when "
                         f"the file is another machine's (NVIDIA/nccl issue 1240: unsetting it "
                         f"fixed the error; it is not meant to be set in production).")
        ctx.fix = ("Unset NCCL_GRAPH_FILE (in the job's environment, or its line in "
                   "/etc/nccl.conf) and run again.")
        ctx.commands[:] = ["unset NCCL_GRAPH_FILE", "grep -s NCCL_GRAPH_FILE /etc/nccl.conf"]
        ctx.basis.extend([s.line_of(graph.start())] if graph else [])
        ctx.settled = True


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






def _override_format(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"HSA_OVERRIDE_GFX_VERSION\s*[=:]\s*[\"']?gfx([0-9a-f]{3,4})\b", s.text, re.I)
    if m is None:
        return
    digits = m.group(1).lower()
    number = f"{int(digits[:-2])}.{int(digits[-2], 16)}.{int(digits[-1], 16)}"
    ctx.notes.append(f"gfx{digits} is written {number}.")
    ctx.commands.append(f"export HSA_OVERRIDE_GFX_VERSION={number}")


def _torch_build(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    if s.written_on_windows():
        from rocmdoctor.explain.paste import is_amd_paste, is_nvidia_paste

        if is_nvidia_paste(s.facts):
            ctx.notes.append("The text shows an NVIDIA GPU: install a CUDA wheel of torch.")
            ctx.commands.extend([entry.commands[0], "pip install --force-reinstall torch "
                                 f"torchvision --index-url {WHL}cu128"])
        elif is_amd_paste(s.facts):
            ctx.notes.append("The text shows an AMD GPU on Windows: AMD's Windows wheels, not "
                             "PyTorch's (Linux-only) ROCm index.")
        else:
            ctx.doubts.append("the text does not say whether the GPU is NVIDIA or AMD")
        return
    from rocmdoctor.explain.paste import is_amd_paste

    amd = bool(s._host_signals("amd")) or (s.host is None and (bool(AMD_TEXT.search(s.text))
                                                                or is_amd_paste(s.facts)))
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


def _zluda_setup(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """The launchers (SD.Next, the web UI's amdgpu fork, OneTrainer) print "Failed to load
    ZLUDA: {e}" for any exception of their ZLUDA set-up, then fall back to CPU-only torch: a
    missing HIP SDK is one such exception, not the only one."""
    failed = re.search(r"Failed to (?:load|install) ZLUDA: ([^\n]+)", s.text)
    if failed is None or re.search(r"ROCm agent enumerator failed|ROCm: version=None", s.text):
        return
    ctx.notes.append(f"The launcher's ZLUDA set-up raised \"{failed.group(1).strip()}\" and "
                     "then installed CPU-only torch: that error is the cause.")
    ctx.doubts.append("the text does not show the HIP SDK missing; a driver ZLUDA does not "
                      "work with fails the same way (CS1o/Stable-Diffusion-Info issue 5: a "
                      "PRO driver)")


def _xformers_build(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """xformers names the torch it was built for and the one it found ("PyTorch 2.1.2+cu121
    with CUDA 1201 (you have 2.1.2+cpu)"): a CPU-only torch, a ROCm torch under a CUDA
    xformers, or another version."""
    m = re.search(r"PyTorch (\S+) with CUDA \S+ \(you have (\S+)\)", s.text)
    if m is None:
        return
    built, have = m.group(1), m.group(2)
    if have.endswith("+cpu"):
        ctx.notes.append(f"You have torch {have}, the CPU-only build: no GPU extension loads "
                         f"with it, whatever xformers you install.")
        ctx.fix = ("Install the CUDA build of torch (the selector on pytorch.org gives the "
                   "command for your CUDA); xformers built for it then loads.")
    elif "rocm" in have:
        ctx.notes.append(f"You have torch {have}, a ROCm build, under an xformers built for "
                         f"CUDA ({built}): it cannot load on ROCm.")
        ctx.fix = ("Install an xformers built for ROCm from the ROCm index of your torch, or "
                   "uninstall xformers so the program uses torch's own attention.")
    elif built.split("+")[0] != have.split("+")[0]:
        ctx.notes.append(f"xformers was built for torch {built}; you have {have}.")


RESOLVERS: dict[str, Callable[[KnownMessage, Situation, Context], None]] = {
    "gpu_code": targets._gpu_code, "out_of_memory": _out_of_memory, "cdi_spec": stack._cdi_spec,
    "machine_state": _machine_state, "user_groups": _user_groups, "torchvision": _torchvision,
    "variable": _variable, "cuda_capability": capability._cuda_capability,
    "old_gpu": capability._old_gpu, "bf16_gemm": capability._bf16_gemm,
    "kernel_image": capability._kernel_image,
    "driver_found": _driver_found, "cuda_code": _cuda_code,
    "masks": _masks, "nccl_last_error": _nccl_last_error, "xid": _xid, "dkms": _dkms,
    "tensile": targets._tensile, "ollama_gfx": targets._ollama_gfx,
    "override_format": _override_format, "torch_build": _torch_build,
    "webui_abort": _webui_abort, "zluda_setup": _zluda_setup,
    "xformers_build": _xformers_build, "hipblaslt": stack._hipblaslt, "triton": stack._triton,
    "bitsandbytes": stack._bitsandbytes, "deepspeed": stack._deepspeed,
    "libtinfo": stack._libtinfo, "std_headers": stack._std_headers,
    "forward_compat": stack._forward_compat, "psp_ring": stack._psp_ring,
    "pcie_link": stack._pcie_link, "libcuda": stack._libcuda, "smi_driver": stack._smi_driver,
    "rock_check": stack._rock_check, "cuda_wheel": stack._cuda_wheel,
}
