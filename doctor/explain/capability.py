"""Resolvers for NVIDIA compute capabilities: a GPU older (or newer) than the capabilities a
torch build carries, in the words of every torch release, against kb.cuda_arch (which
wheels last carried code for old GPUs, and which carry it now)."""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.explain.context import Context, Situation
from rocmdoctor.kb.cuda_arch import arch_support, runs_code_of
from rocmdoctor.kb.messages import KnownMessage

WHL = "https://download.pytorch.org/whl/"


def _capability(s: Situation, ctx: Optional[Context] = None) -> Optional[tuple[str, int]]:
    """The GPU's compute capability the text states; else the one its product name has
    (kb.gpu_names), said in a note, when the text names one NVIDIA GPU only."""
    fact = s.facts.first("capability")
    if fact is not None:
        return fact.value, fact.line
    named = {f.value: f for f in s.facts.all("capability", role="name")}
    if len(named) != 1:
        return None
    [fact] = named.values()
    name = next((f.value for f in s.facts.all("gpu_name", role="nvidia") if f.line == fact.line),
                "GPU")
    if ctx is not None:
        ctx.notes.append(f"The text names the GPU, {name} (line {fact.line}): compute "
                         f"capability {fact.value} (NVIDIA's CUDA GPUs list).")
    return fact.value, fact.line


def _newest_with(index: str) -> Optional[tuple[str, str]]:
    """(torch, torchvision) of the newest release with wheels on a CUDA index (cu126)."""
    from rocmdoctor.kb.torch_wheels import WHEELS, version_tuple

    cuda = f"{index[2:-1]}.{index[-1]}"
    rows = [w for w in WHEELS if cuda in w.cuda]
    if not rows:
        return None
    best = max(rows, key=lambda w: version_tuple(w.torch))
    return best.torch, best.torchvision


def wheels_for(capability: str, ctx: Context) -> None:
    """Notes and the pip line for the official wheels that carry code for `capability`."""
    row = arch_support(capability)
    if row is None:
        return
    ctx.notes.append(f"Compute capability {capability} ({row.family}): {row.wheels}.")
    if row.index is None:
        return
    if row.release is not None:
        from rocmdoctor.kb.torch_wheels import wheel_release

        pair = wheel_release(row.release)
        vision = f" torchvision=={pair.torchvision}" if pair else ""
        ctx.commands.append(f"pip install torch=={row.release}{vision} --index-url "
                            f"{WHL}{row.index}")
        return
    newest = _newest_with(row.index)
    if newest is not None:
        ctx.commands.append(f"pip install --force-reinstall torch=={newest[0]} "
                            f"torchvision=={newest[1]} --index-url {WHL}{row.index}")


def _old_gpu(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    found = _capability(s, ctx)
    if found is None:
        ctx.doubts.append("the text states no compute capability; "
                          "`nvidia-smi --query-gpu=name,compute_cap --format=csv` says it")
        return
    capability, line = found
    ctx.basis.append(line)
    top = s.facts.first("cc_max", role="build")
    bottom = s.facts.first("cc_min", role="build")
    if entry.key == "cuda-capability-above-build" and top is not None:
        if runs_code_of(capability, top.value):
            ctx.notes.append(f"The GPU is {capability}; this build's newest is {top.value}: a "
                             f"{capability} GPU runs {top.value} code, so the warning is "
                             f"spurious.")
        return
    if bottom is not None:
        ctx.notes.append(f"The GPU is {capability}; this torch's oldest is {bottom.value} "
                         f"(line {bottom.line}).")
    before = len(ctx.notes)
    wheels_for(capability, ctx)
    if len(ctx.notes) == before:
        ctx.doubts.append(f"no table row for compute capability {capability}; "
                          f"`python -c \"import torch; print(torch.cuda.get_arch_list())\"` "
                          f"lists what this torch carries")


def _cuda_capability(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    gpu = re.search(r"(\S[^\n]*?) with CUDA capability sm_(\d+) is not compatible", s.text)
    listed = re.search(r"supports CUDA capabilities ((?:sm_\d+ ?)+)", s.text)
    if gpu is None:
        return
    sm = int(gpu.group(2))
    # torch's warning starts with the device's name; a paste may have words before it on the
    # line ("UserWarning: ", "I got this info :**"): the name is what follows the last of them
    name = re.split(r"[:*`\"']+\s*", gpu.group(1))[-1].strip() or gpu.group(1).strip()
    ctx.notes.append(f"{name} is sm_{sm}"
                     + (f"; this torch has code for {listed.group(1).strip()}." if listed
                        else "."))
    capability = f"{sm // 10}.{sm % 10}"
    if sm >= 120:
        ctx.notes.append("sm_120 (RTX 50 series) needs a torch built with CUDA 12.8 or newer.")
        ctx.commands.append(f"pip install --force-reinstall torch torchvision --index-url "
                            f"{WHL}cu128")
        return
    wheels_for(capability, ctx)


def _kernel_image(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """'no kernel image': when the text states the GPU's capability (or names the GPU), which
    wheels carry code for it; a capability the current wheels carry leaves the generic
    answer (then an extension, not torch, lacks the kernel)."""
    found = _capability(s, ctx)
    if found is None:
        return
    capability, line = found
    ctx.basis.append(line)
    if arch_support(capability) is None:
        ctx.notes.append(f"PyTorch's current wheels carry code for {capability}: the kernel "
                         f"missing is in an extension or custom node, or in an old torch that "
                         f"a program bundles.")
        return
    before = len(ctx.commands)
    wheels_for(capability, ctx)
    if len(ctx.commands) > before:
        ctx.commands[before:before] = [entry.commands[0]]


def _bf16_gemm(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """Reported on sm_52 and sm_60 (kb errors_cuda): sure below 7.0, doubted where the text
    names no GPU, and not this entry's story on a Turing or newer GPU."""
    found = _capability(s, ctx)
    if found is None:
        ctx.doubts.append("the text names no GPU; `" + entry.commands[0] + "` shows its "
                          "compute capability (cuBLAS has bf16 products from Turing, 7.5, on)")
        return
    capability, line = found
    ctx.basis.append(line)
    major = int(capability.split(".")[0])
    if major < 7:
        ctx.notes.append(f"Compute capability {capability} (line {line}): a GPU older than "
                         f"Volta, whose cuBLAS has no bf16 product.")
    else:
        ctx.doubts.append(f"compute capability {capability} (line {line}) is one whose "
                          f"cuBLAS has bf16 products as far as the reports go; another "
                          f"cause (shape, library version) is as likely")
