"""Resolvers for errors raised by libraries on top of the GPU stack and the system under it:
they name the library, read the versions and targets the text gives, and make the fix's
commands exact for them (the torch index that brings pytorch-triton-rocm back, the GPU target
for a bitsandbytes build, the libtinfo the loader asked for, the libstdc++ of the GCC the
compiler picks, the driver a CUDA version needs, what a PCIe error's ids are)."""

from __future__ import annotations

import re

from rocmdoctor.explain.context import Context, Situation
from rocmdoctor.kb.messages import KnownMessage

WHL = "https://download.pytorch.org/whl/"
# PCI vendor ids (https://pci-ids.ucw.cz/read/PC/): the ones GPU links show.
VENDORS = {"1002": "AMD (ATI) GPU", "10de": "NVIDIA GPU", "1022": "AMD CPU/chipset",
           "8086": "Intel CPU/chipset", "14e4": "Broadcom"}
# AMD's PCIe switch inside Navi boards (pci-ids: "Navi 10 XL Upstream/Downstream Port of PCI
# Express Switch"): the link fault is on the GPU board's own link.
AMD_BOARD_SWITCH = {"1478", "1479"}


def _hipblaslt(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    torch = s.facts.first("torch")
    if torch is not None:
        ctx.basis.append(torch.line)
        nightly = re.search(r"2\.6\.0\.dev202410(?:1[4-9]|2[0-1])", torch.value)
        ctx.notes.append(f"torch {torch.value} (line {torch.line})"
                         + (": one of the October 2024 nightlies without the fallback."
                            if nightly else "."))
    from rocmdoctor.explain.targets import gpu_gfx

    for gfx, line in gpu_gfx(s)[:1]:
        ctx.basis.append(line)
        ctx.notes.append(f"The GPU is {gfx} (line {line}).")


def _rocm_index(s: Situation) -> str:
    """The PyTorch ROCm index for the torch the text shows (rocm6.4 for 2.7.0+rocm6.4.1)."""
    from rocmdoctor.kb.torch_wheels import rocm_index_for

    torch = s.facts.first("torch")
    local = re.search(r"\+rocm(\d+\.\d+(?:\.\d+)?)", torch.value) if torch else None
    rocm = local.group(1) if local else (s.facts.first("rocm").value  # type: ignore[union-attr]
                                         if s.facts.first("rocm") else None)
    return "rocm" + rocm_index_for(rocm)


def _triton(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    rocm_triton = s.facts.first("library")
    for fact in s.facts.all("library"):
        if fact.value == "pytorch-triton-rocm":
            rocm_triton = fact
            ctx.basis.append(fact.line)
            ctx.notes.append(f"pytorch-triton-rocm is installed too (line {fact.line}): the "
                             f"PyPI triton shadows it.")
            break
    else:
        rocm_triton = None
    if rocm_triton is None and re.search(r"-lcuda|third_party[/\\]cuda|backends[/\\]nvidia",
                                         s.text):
        ctx.notes.append("The triton in use builds CUDA launchers (-lcuda, third_party/cuda): "
                         "it is the CUDA build.")
    ctx.commands.extend([entry.commands[0], "pip uninstall -y triton",
                         f"pip install --force-reinstall torch --index-url {WHL}{_rocm_index(s)}"])


def _bitsandbytes(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.explain.context import CONDITIONS
    from rocmdoctor.explain.paste import is_amd_paste, is_nvidia_paste

    if not is_amd_paste(s.facts) and not is_nvidia_paste(s.facts) and not s.host \
            and not CONDITIONS["bnb_cuda_setup"](s):
        ctx.doubts.append("the text shows neither ROCm nor CUDA; the fix below is ROCm's")
    from rocmdoctor.explain.targets import gpu_gfx

    targets = gpu_gfx(s)
    if targets and not is_nvidia_paste(s.facts):
        gfx, line = targets[0]
        ctx.basis.append(line)
        ctx.commands.extend(["python -m bitsandbytes",
                             f"cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH={gfx} -S . && make "
                             f"&& pip install ."])


def _deepspeed(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    if re.search(r"hipify\(\) got an unexpected keyword argument '(\w+)'", s.text):
        arg = re.search(r"unexpected keyword argument '(\w+)'", s.text)
        ctx.notes.append(f"DeepSpeed passes hipify '{arg.group(1) if arg else '?'}', which "
                         f"this torch's hipify does not take: it predates the hipify changes "
                         f"of pytorch pull 76141; use a newer torch (or an older DeepSpeed).")
    elif re.search(r"\bCUDA_HOME\b", s.text):
        ctx.notes.append("DeepSpeed's op builder reads torch's CUDA_HOME, which is None on "
                         "ROCm (torch sets ROCM_HOME there): DeepSpeed pulls 6456 (the GDS "
                         "builder) and 7224 fixed these builders; update DeepSpeed.")
    elif re.search(r"get_rocm_wavefront_size|No such file or directory: \"[^\"\n]*rocminfo \|",
                   s.text):
        ctx.notes.append("DeepSpeed runs `rocminfo | grep ...` to read the wavefront size; "
                         "run without a shell that pipe is taken for one program's name "
                         "(DeepSpeed issue 6585): DeepSpeed pull 6587 fixed it; update "
                         "DeepSpeed.")
    elif re.search(r"cuda\w*\.h: No such file", s.text):
        ctx.notes.append("A hipified source still includes a CUDA header: hipify did not "
                         "rewrite the include for this DeepSpeed and torch pair.")


def _libtinfo(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    m = re.search(r"libtinfo\.so\.([56])|NCURSES(6)?_TINFO", s.text)
    six = bool(m and (m.group(1) == "6" or m.group(2)))
    name = "libtinfo.so.6" if six else "libtinfo.so.5"
    ctx.notes.append(f"The loader asks for {name}.")
    ctx.commands.extend([f"sudo apt install libtinfo{'6' if six else '5'}",
                         f"dnf provides '*/{name}'"])


def _std_headers(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    header = re.search(r"fatal error: '(\w+)' file not found", s.text)
    gcc = re.search(r"/usr/lib/gcc/x86_64-linux-gnu/(\d+)|GCC version: \(\w+ (\d+)\.", s.text)
    version = (gcc.group(1) or gcc.group(2)) if gcc else "12"
    if header:
        ctx.notes.append(f"The compiler found no <{header.group(1)}>: a C++ standard header.")
    if not gcc:
        ctx.notes.append("The text does not say which GCC the compiler picked; `ls "
                         "/usr/lib/gcc/x86_64-linux-gnu/` shows the newest (12 on Ubuntu "
                         "22.04, where these reports come from).")
    ctx.commands.extend(["ls /usr/lib/gcc/x86_64-linux-gnu/",
                         f"sudo apt install libstdc++-{version}-dev"])


def _forward_compat(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.kb.cuda_driver import CUDA_GA_DRIVERS, ga_driver
    from rocmdoctor.kb.torch_wheels import version_tuple

    driver = s.facts.first("driver")
    cuda = s.facts.first("cuda")
    if driver is not None:
        ctx.basis.append(driver.line)
        fitting = [r for r in CUDA_GA_DRIVERS
                   if version_tuple(r.min_driver) <= version_tuple(driver.value)]
        top = max(fitting, key=lambda r: version_tuple(r.cuda), default=None)
        ctx.notes.append(f"Driver {driver.value} (line {driver.line})"
                         + (f" supports CUDA {top.cuda} at most (NVIDIA's minimum drivers)."
                            if top else " is older than every CUDA 10.2+ minimum."))
    if cuda is not None:
        row = ga_driver(cuda.value)
        if row is not None:
            ctx.notes.append(f"CUDA {cuda.value} (line {cuda.line}) needs driver "
                             f"{row.min_driver} or newer.")


def _libcuda(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    from rocmdoctor.explain.paste import is_nvidia_paste

    if not is_nvidia_paste(s.facts) and not s._host_signals("nvidia"):
        ctx.doubts.append("the text shows no NVIDIA GPU, driver or CUDA build; on a ROCm "
                          "machine a package built for CUDA (a CUDA triton) asks for libcuda")
    link = re.search(r"cannot find -lcuda\b", s.text)
    if link and s.environment()[0] != "wsl":
        # triton's third_party/nvidia/backend/driver.py builds its launcher with `-lcuda` in
        # the folders of libcuda_dirs() (ldconfig's libcuda entries, or TRITON_LIBCUDA_PATH);
        # the driver installs libcuda.so.1, the unversioned name is a development link
        # (pytorch issue 103417: the link fixed it).
        line = s.line_of(link.start())
        ctx.basis.append(line)
        ctx.notes.append(f"The linker (`-lcuda`, line {line}) looks for libcuda.so with no "
                         "version; the NVIDIA driver installs libcuda.so.1, and the unversioned "
                         "name is only a link that its development files add.")
        ctx.fix = ("Where the NVIDIA driver is installed (ldconfig lists libcuda.so.1), add "
                   "the unversioned link beside it; without an NVIDIA GPU run the program on "
                   "the CPU.")
        ctx.commands[:] = ["ldconfig -p | grep libcuda",
                           "sudo ln -s /usr/lib/x86_64-linux-gnu/libcuda.so.1 "
                           "/usr/lib/x86_64-linux-gnu/libcuda.so"]


def _psp_ring(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    if re.search(r"PSP is resuming|GPU reset\(\d+\) failed|resume of IP block <psp>", s.text):
        ctx.notes.append("This happened during a GPU reset: the reset failed; a full power "
                         "cycle (reboot) brings the GPU back, then find what hung it.")
        ctx.commands.append("sudo reboot")
    else:
        ctx.notes.append("This happened while the driver loaded: look at the hardware around "
                         "the GPU (bridge, riser, slot, power).")


def _pcie_link(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    fatal = re.search(r"severity=Uncorrect\w* \(Fatal\)|Uncorrected \(Fatal\)", s.text)
    ctx.notes.append("An uncorrectable (fatal) error: the link stopped carrying traffic and the "
                     "device behind it hung." if fatal else
                     "Corrected errors: the link retried them; many of them mean poor signal "
                     "on that link (riser, slot, speed).")
    ids = list(dict.fromkeys(f.value for f in s.facts.all("pci_id")))
    for pci in ids[:3]:
        vendor, device = pci.split(":")
        what = VENDORS.get(vendor, "vendor " + vendor)
        if vendor == "1002" and device in AMD_BOARD_SWITCH:
            what = "the PCIe switch on an AMD GPU's own board"
        ctx.notes.append(f"[{pci}] is {what}.")
    kinds = sorted(set(re.findall(r"\] (BadTLP|BadDLLP|Timeout|Rollover|RxErr|Malformed TLP|"
                                  r"CmpltTO|SDES|UnsupReq)", s.text)))
    if kinds:
        ctx.notes.append(f"Error types: {', '.join(kinds)}.")
    # A completion timeout: the device did not answer a request in time. Link power states
    # (ASPM L1, whose exit latency adds to every answer) are a known trigger on GPU links, so
    # the first thing to try is the link without them (kernel-parameters: pcie_aspm).
    if "CmpltTO" in kinds or re.search(r"Completion Timeout", s.text, re.IGNORECASE):
        ctx.notes.append("A completion timeout: the device behind the link did not answer in "
                         "time. Besides the hardware, power-saving link states (ASPM) are a "
                         "known trigger: booting with pcie_aspm=off (or "
                         "pcie_aspm.policy=performance) tells the two apart.")
        ctx.commands.extend([*entry.commands, "cat /sys/module/pcie_aspm/parameters/policy",
                             "sudo lspci -vvv | grep -i aspm"])


# rocminfo's own output in the text: it ran, so the HSA runtime reached the driver
_ROCMINFO_RAN = re.compile(r"^HSA System Attributes|^\s*Name:\s+gfx[0-9a-f]{3,4}\b", re.M)


def _cuda_wheel(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """The torch wheel to install, as the checks choose it (facts.torch_wheel): the newest CUDA
    this machine's driver runs, or without one the CUDA that runs on the most drivers."""
    from rocmdoctor.facts.torch_wheel import cuda_index_line

    machine = s.host if s.host is not None and not s.machine_is_elsewhere() else None
    line, why = cuda_index_line(machine, force=False)
    ctx.notes.append(f"Wheel index: {why}.")
    ctx.commands.extend([*entry.commands, line])


def _cdi_spec(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """A CDI spec in the text (nvidia-ctk cdi generate's YAML) with NVIDIA device nodes but no
    /dev/nvidia-uvm: nvidia-ctk lists only the nodes that exist when it runs, and CUDA cannot
    start without that one (nvidia-container-toolkit issue 50, maintainers)."""
    spec = re.search(r"^cdiVersion:", s.text, re.MULTILINE)
    if spec is None or "deviceNodes:" not in s.text or "/dev/nvidia" not in s.text \
            or "/dev/nvidia-uvm" in s.text:
        return
    line = s.line_of(spec.start())
    ctx.basis.append(line)
    ctx.notes.append(f"The CDI spec in the text (line {line}) lists NVIDIA device nodes but not "
                     f"/dev/nvidia-uvm, which CUDA needs: nvidia-ctk wrote it before that node "
                     f"existed (nvidia-container-toolkit issue 50).")
    ctx.fix = ("Create the UVM device nodes on the host (nvidia-modprobe -u -c=0, or a reboot "
               "after installing the driver), generate the CDI spec again, and restart the "
               "container.")
    ctx.commands[:] = ["ls -l /dev/nvidia-uvm*", "sudo nvidia-modprobe -u -c=0",
                       "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"]
    ctx.settled = True


def _rock_check(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """rocminfo's "ROCk module is NOT loaded": under WSL there is no module to find; on this
    machine, /sys/module/amdgpu says whether the driver is there (then rocminfo's own check
    missed it: an amdgpu built into the kernel, rocminfo issue 42) or not."""
    if s.environment()[0] == "wsl":
        ctx.notes.append("This is WSL: there is no amdgpu module for rocminfo to find; ROCm "
                         "reaches the GPU through /dev/dxg.")
        ctx.settled = True
        return
    if s.host is None or s.machine_is_elsewhere() or s.environment()[0] == "container":
        return
    from rocmdoctor.facts.amdgpu_module import amdgpu_module

    module = amdgpu_module(s.host)
    if not module.loaded:
        ctx.notes.append("On this machine /sys/module/amdgpu does not exist: the amdgpu driver "
                         "is not loaded.")
        ctx.settled = True
        return
    how = ("built into the kernel (it has no /proc/modules line)" if module.proc_state is None
           and module.initstate is None else f"loaded ({module.state or 'present'})")
    ctx.notes.append(f"On this machine amdgpu is {how}: the driver is there, and rocminfo's "
                     f"own check of it is what is wrong (older rocminfo asked lsmod, which "
                     f"does not list a built-in amdgpu: rocminfo issue 42, fixed there).")
    ctx.fix = ("The driver is loaded: update ROCm (its rocminfo) or ignore this line, and "
               "check that /dev/kfd exists and that you can open it.")
    ctx.commands[:] = ["ls -l /dev/kfd", "cat /sys/module/amdgpu/initstate", "groups"]
    ctx.settled = True


def _smi_driver(entry: KnownMessage, s: Situation, ctx: Context) -> None:
    """amd-smi's "driver not initialized": WSL, or rocminfo working in the same text, says
    it is amd-smi's check that is wrong, not the driver."""
    wsl = re.search(r"WSL environment detected", s.text)
    if wsl or s.environment()[0] == "wsl":
        if wsl:
            ctx.basis.append(s.line_of(wsl.start()))
        ctx.fix = entry.wsl_fix
        ctx.commands[:] = list(entry.wsl_commands)
        ctx.notes.append("This is WSL: amd-smi is not supported there (AMD, amdsmi issue 75); "
                         "the GPU is reached through /dev/dxg.")
        ctx.settled = True
        return
    ran = _ROCMINFO_RAN.search(s.text)
    if ran:
        ctx.basis.append(s.line_of(ran.start()))
        ctx.notes.append(f"rocminfo ran in the same text (line {s.line_of(ran.start())}): the "
                         "driver works, and amd-smi's own check is what is wrong (one known "
                         "case: amdgpu built into the kernel, amdsmi issue 172, fixed by "
                         "rocm-systems pull 2689; update amd-smi).")
        ctx.settled = True
