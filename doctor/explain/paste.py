"""The facts a pasted text states about itself, read before any message is matched: the GPU
targets (gfx names, sm_NN, "CUDA capability X.Y"), PCI ids, the libraries it names, the
versions of torch, ROCm, CUDA and the driver, the operating system the log was written on,
the application, and the frame of the traceback that raised the error.

Every fact keeps the line it was read from (1-based, in the text as explain reads it), so an
answer can say which line it rests on. `read_facts` never raises: a text is data, whatever
it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_I = re.IGNORECASE

# gfx names: gfx803, gfx90a, gfx942, gfx1030, gfx1151; not gfx120X (a family index) or gfx11
# (a generic family).
_GFX = re.compile(r"(?<![A-Za-z0-9])gfx ?((?:[0-9]{2}[0-9a-f])|(?:1[0-9]{2}[0-9a-f]))"
                  r"(?![0-9a-zA-Z])", _I)
# A line that lists targets something was built for, or that a library carries: not the GPU.
_BUILD_LIST = re.compile(r"PYTORCH_ROCM_ARCH|AMDGPU_TARGETS|GPU_TARGETS|BNB_ROCM_ARCH|"
                         r"TORCH_CUDA_ARCH_LIST|offload-arch|hipv4-amdgcn|List of available|"
                         r"Bundled Code Objects|get_arch_list|supports CUDA capabilities|"
                         r"gfx_arch_list|arch_list|targets? (?:include|list)", _I)
_OVERRIDE = re.compile(r"HSA_OVERRIDE_GFX_VERSION(?:_\d+)?\s*[=:]\s*[\"']?(\d+\.\d+\.\d+)", _I)
_SM = re.compile(r"\bsm_(\d{2,3})[a-z]?\b")
_CAPABILITY = re.compile(r"(?:cuda|compute) capability(?: \(CC\))?[: ]+(?:sm_)?(\d{1,2})\.(\d)\b|"
                         r"(?:cuda|compute) capability sm_(\d{2,3})\b|"
                         r"major: (\d{1,2}) minor: (\d)\b", _I)
_CC_RANGE = re.compile(r"supported by this version of PyTorch is \((\d+)\.(\d)\) - \((\d+)\.(\d)\)",
                       _I)
_CC_MIN = re.compile(r"minimum (?:cuda|compute) capability (?:that we support|supported by this "
                     r"library) is (\d+)\.(\d)", _I)
_PCI_ID = re.compile(r"\[([0-9a-f]{4}):([0-9a-f]{4})\]", _I)
_PCI_ADDR = re.compile(r"\b([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\b", _I)

_Named = tuple[tuple[str, re.Pattern[str]], ...]


def _named(pairs: tuple[tuple[str, str], ...]) -> _Named:
    return tuple((name, re.compile(pattern, _I)) for name, pattern in pairs)


LIBRARIES: _Named = _named((
    ("hipBLASLt", r"hipblaslt|rocblaslt"),
    ("rocBLAS", r"\brocblas\b|rocBLAS|TensileLibrary"),
    ("MIOpen", r"\bMIOpen\b|miopen"),
    ("hipRTC", r"\bhiprtc"),
    ("comgr", r"amd_comgr|\bcomgr\b"),
    ("libamdhip64", r"libamdhip64|amdhip64\.dll"),
    ("pytorch-triton-rocm", r"pytorch-triton-rocm"),
    ("triton", r"(?<![\w-])triton(?![\w-]*rocm)\b"),
    ("bitsandbytes", r"bitsandbytes"),
    ("flash-attn", r"flash[_-]?attn|flash[_-]attention|FlashAttention"),
    ("xformers", r"\bxformers\b"),
    ("RCCL", r"\bRCCL\b|librccl"),
    ("NCCL", r"\bNCCL\b|\bnccl\w*Error\b"),
    ("cuDNN", r"\bcudnn"),
    ("cuBLAS", r"\bcublas(?!Lt)"),
    ("libtinfo", r"libtinfo|NCURSES\w*_TINFO"),
    ("libstdc++", r"libstdc\+\+"),
))

APPLICATIONS: _Named = _named((
    ("ollama", r"\bollama\b"),
    ("llamafile", r"\bllamafile\b"),
    ("koboldcpp", r"koboldcpp"),
    ("llama.cpp", r"llama\.cpp|\bggml_|llama-server|llama-cli"),
    ("ComfyUI", r"ComfyUI|[/\\]comfy[/\\]|comfy_"),
    ("stable-diffusion-webui", r"stable-diffusion-webui|sd-webui|webui-user|\bA1111\b|forge"),
    ("vLLM", r"\bvllm\b"),
    ("DeepSpeed", r"deepspeed|op_builder|\bds_report\b"),
    ("transformers", r"[/\\]transformers[/\\]|\btransformers\.\w|\bfrom transformers\b"),
    ("LM Studio", r"LM Studio|lmstudio"),
))

_TORCH_VERSION = re.compile(
    r"(?:\btorch(?:==|-|\s+version\s*[.: ]*|\s+)|PyTorch [Vv]ersion:?\**\s*|you have )"
    r"v?(\d+\.\d+\.\d+(?:[.\w]*\+[\w.]+|[.\w]*))", _I)
_ROCM_VERSION = (
    re.compile(r"\bROCm(?:\s+[Vv]ersion)?[:\s]+v?(\d+\.\d+(?:\.\d+)?)(?![\d])", _I),
    re.compile(r"/opt/rocm[-_](\d+\.\d+(?:\.\d+)?)", _I),
    re.compile(r"AMD\\ROCm\\(\d+\.\d+)", _I),
    re.compile(r"\+rocm(\d+\.\d+(?:\.\d+)?)", _I),
    re.compile(r"\brocm(\d+\.\d+(?:\.\d+)?)\b", _I),
    re.compile(r"(?:HIP runtime version|ROCM used to build PyTorch):\s*(\d+\.\d+)", _I),
    re.compile(r"\brocm[-_/](?:dev-\S+:)?(\d+\.\d+(?:\.\d+)?)\b", _I),
)
_CUDA_VERSION = (
    re.compile(r"\+cu(\d{2,3})\b"),
    re.compile(r"\bCUDA (?:runtime )?(?:version:? )?(\d{2}\.\d)\b"),
    re.compile(r"\bcu(1[12]\d|13\d)\b"),
)
_DRIVER = (
    re.compile(r"Driver Version:\s*(\d{3}\.\d+(?:\.\d+)?)", _I),
    re.compile(r"NVIDIA-SMI (\d{3}\.\d+(?:\.\d+)?)", _I),
    re.compile(r"driver version (?:is )?(\d{3}\.\d+(?:\.\d+)?)", _I),
)
_DRIVER_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d)", _I)

# Strong signs of Windows (drive letters, Windows paths); a .exe or .dll alone is weak: a Linux
# log shows them too (a Windows game under Wine or Proton in a kernel log).
_WINDOWS_WEAK = re.compile(r"\w\.dll\b|\w\.exe\b", _I)
# A drive letter with either slash (C:\\ or C:/, as MSYS-built programs print it), and an
# NTSTATUS exit code (0xc0000409: a Windows process killed by a fast-fail).
_WINDOWS = re.compile(r"(?<![\w/])[A-Za-z]:\\|(?<![\w/:.])[A-Za-z]:/(?=[\w.-]+/)|"
                      r"\bexit status 0xc0000[0-9a-f]{3}\b|"
                      r"\\site-packages\\|\\AppData\\|[/\\]\w+\.dll\b|"
                      r"\bwin_amd64\b|\bWindows (?:1[01]|fatal exception|Subsystem)|"
                      r"\bPS [A-Z]:\\|Program Files|%ProgramFiles%|\bpowershell\b|\bWinError\b|"
                      # a Go program's log naming its source file: a file named *_windows.go
                      # is built only for Windows (go/build's file-name constraints), as
                      # ollama's "source=amd_windows.go:99"
                      r"\bsource=\w+_windows\.go:\d+", _I)
_WINDOWS_WORD = re.compile(r"\bWindows\b(?! Subsystem)|\bwin32\b")
_WSL = re.compile(r"microsoft-standard-WSL|/usr/lib/wsl/|\bWSL ?2?\b|/dev/dxg|/mnt/[a-z]/", _I)
_LINUX = re.compile(r"(?<![\w\\])/(?:home|usr|opt|root|var|tmp|etc|dev|proc|sys|lib)/|"
                    r"\bUbuntu\b|\bDebian\b|\bFedora\b|\bRHEL\b|\bCentOS\b|\bArch ?Linux\b|"
                    r"\bNixOS\b|\bLinux\b|linux-gnu|manylinux|\bdmesg\b|\bkernel: |"
                    # kernel driver lines: only Linux has them (no dmesg on Windows)
                    r"\bamdgpu [0-9a-f]{4}:|\[drm[:\]]|\bpcieport\b|\bNVRM: |\bkfd kfd\b", _I)
_MACOS = re.compile(r"\bmacOS\b|\bdarwin\b|/Users/\w+/|\bApple M\d", _I)

_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_PACKAGE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_][\w]*)")
_AMD_GPU = re.compile(r"\bRadeon\b|\bAMD (?:graphics|gpu|card)|\bInstinct\b|\bMI\d{2,3}X?\b|"
                      r"\bVega\b|\bEllesmere\b|\bPolaris\b|\bNavi\b|\bgfx\d|\bamdgpu\b|\bROCm\b|\bHIP\b|Strix|Phoenix",
                      _I)
_NVIDIA_GPU = re.compile(r"\bGeForce\b|\bQuadro\b|\bTesla [KPVTAM]\d|\bNVIDIA\b|\bRTX ?\d|\bGTX\b|"
                         r"\bTITAN\b|\bH100\b|\bA100\b|\bV100\b|\bGB10\b", _I)


@dataclass(frozen=True)
class Fact:
    kind: str  # gfx, override, sm, capability, cc_min, cc_max, pci_id, pci_addr, library,
    #           app, torch, rocm, cuda, driver, driver_cuda, os, amd_gpu, nvidia_gpu, gpu_name
    value: str
    line: int  # 1-based line number in the text
    text: str  # that line, stripped (clipped to 200 characters)
    role: str = "gpu"  # for targets: gpu (the machine's), build (what something was built for),
    #                    name (what the GPU's product name is: kb.gpu_names)


@dataclass(frozen=True)
class Frame:
    """The frame of a traceback that raised the error: its file, line, function and the
    installed package it belongs to (None for the program's own file)."""

    path: str
    line: int
    function: str
    package: Optional[str]
    at: int  # its line number in the text


@dataclass(frozen=True)
class PasteFacts:
    facts: tuple[Fact, ...]
    frame: Optional[Frame] = None

    def all(self, kind: str, role: Optional[str] = "gpu") -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if f.kind == kind and (role is None or f.role == role))

    def values(self, kind: str, role: Optional[str] = "gpu") -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.value for f in self.all(kind, role)))

    def first(self, kind: str, role: Optional[str] = "gpu") -> Optional[Fact]:
        found = self.all(kind, role)
        return found[0] if found else None

    def has(self, kind: str, value: Optional[str] = None) -> bool:
        return any(f.kind == kind and (value is None or f.value == value) for f in self.facts)

    @property
    def os(self) -> Optional[str]:
        """windows, wsl, linux or macos: the system the log was written on, when it says."""
        fact = self.first("os")
        return fact.value if fact else None

    @property
    def gfx(self) -> tuple[str, ...]:
        return self.values("gfx")

    @property
    def capability(self) -> Optional[tuple[int, int]]:
        """The GPU's CUDA compute capability the text states, as (major, minor)."""
        fact = self.first("capability")
        if fact is None:
            return None
        major, _, minor = fact.value.partition(".")
        return int(major), int(minor or 0)


def _clip(line: str) -> str:
    line = line.strip()
    return line if len(line) <= 200 else line[:197] + "..."


def read_facts(text: str, numbers: Optional[tuple[int, ...]] = None) -> PasteFacts:
    """Every fact the text states, in text order. Never raises. `numbers` gives each line's
    number in the whole text, when `text` holds only some of its lines."""
    try:
        facts = _read(text)
    except Exception:  # noqa: BLE001 - a parser of pasted text answers "no facts", never fails
        return PasteFacts(())
    if not numbers:
        return facts

    def real(n: int) -> int:
        return numbers[n - 1] if 0 < n <= len(numbers) else n

    frame = facts.frame
    return PasteFacts(tuple(Fact(f.kind, f.value, real(f.line), f.text, f.role)
                            for f in facts.facts),
                      None if frame is None else Frame(frame.path, frame.line, frame.function,
                                                       frame.package, real(frame.at)))


class _Collector:
    """Facts of one text, added line by line."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.number = 0
        self.shown = ""

    def at(self, number: int, line: str) -> None:
        self.number, self.shown = number, _clip(line)

    def add(self, kind: str, value: str, role: str = "gpu") -> None:
        self.facts.append(Fact(kind, value, self.number, self.shown, role))


def _read(text: str) -> PasteFacts:
    out = _Collector()
    lines = text.splitlines()
    os_found: dict[str, Fact] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        line = raw[:4000]
        out.at(number, line)
        build = bool(_BUILD_LIST.search(line))
        for m in _GFX.finditer(line):
            out.add("gfx", "gfx" + m.group(1).lower(), "build" if build else "gpu")
        for m in _OVERRIDE.finditer(line):
            out.add("override", m.group(1))
        _capabilities(line, build, out)
        for m in _PCI_ID.finditer(line):
            out.add("pci_id", f"{m.group(1).lower()}:{m.group(2).lower()}")
        for m in _PCI_ADDR.finditer(line):
            out.add("pci_addr", m.group(1).lower())
        for name, pattern in LIBRARIES:
            if pattern.search(line):
                out.add("library", name)
        for name, pattern in APPLICATIONS:
            if pattern.search(line):
                out.add("app", name)
        _versions(line, out)
        _names(line, out)
        if _AMD_GPU.search(line):
            out.add("amd_gpu", "yes")
        if _NVIDIA_GPU.search(line):
            out.add("nvidia_gpu", "yes")
        for name, pattern in (("wsl", _WSL), ("windows", _WINDOWS), ("windows", _WINDOWS_WORD),
                              ("windows-weak", _WINDOWS_WEAK), ("macos", _MACOS),
                              ("linux", _LINUX)):
            if name not in os_found and pattern.search(line):
                os_found[name] = Fact("os", name, number, out.shown)
    # WSL is Linux run from Windows (its paths include /mnt/c/...): it wins over both. A lone
    # .exe or .dll counts for Windows only where nothing says Linux.
    facts = out.facts
    if "windows-weak" in os_found:
        weak = os_found.pop("windows-weak")
        os_found.setdefault("windows-only-weak", Fact("os", "windows", weak.line, weak.text))
    for name in ("wsl", "windows", "macos", "linux", "windows-only-weak"):
        if name in os_found:
            facts.insert(0, os_found[name])
            break
    return PasteFacts(tuple(facts), _raising_frame(lines))


def _capabilities(line: str, build: bool, out: _Collector) -> None:
    for m in _CAPABILITY.finditer(line):
        if m.group(1):
            out.add("capability", f"{int(m.group(1))}.{m.group(2)}")
        elif m.group(3):
            sm = int(m.group(3))
            out.add("capability", f"{sm // 10}.{sm % 10}")
        elif m.group(4):
            out.add("capability", f"{int(m.group(4))}.{m.group(5)}")
    for m in _SM.finditer(line):
        sm = int(m.group(1))
        out.add("sm", f"{sm // 10}.{sm % 10}", "build" if build or "capability sm_" not in line
                else "gpu")
    for m in _CC_RANGE.finditer(line):
        out.add("cc_min", f"{int(m.group(1))}.{m.group(2)}", "build")
        out.add("cc_max", f"{int(m.group(3))}.{m.group(4)}", "build")
    for m in _CC_MIN.finditer(line):
        out.add("cc_min", f"{int(m.group(1))}.{m.group(2)}", "build")


def _names(line: str, out: _Collector) -> None:
    """A GPU's product name, as its target (role "name"): a gfx for AMD, a compute capability
    for NVIDIA (kb.gpu_names). The name itself is kept as a gpu_name fact."""
    from rocmdoctor.kb.gpu_names import named_gpus

    stated = {f.kind for f in out.facts if f.line == out.number}
    for row, name in named_gpus(line):
        kind = "gfx" if row.vendor == "amd" else "capability"
        if kind in stated:  # the line states the target itself
            continue
        out.add("gpu_name", name, row.vendor)
        out.add(kind, row.target, "name")


def _versions(line: str, out: _Collector) -> None:
    for m in _TORCH_VERSION.finditer(line):
        out.add("torch", m.group(1).rstrip(".,;)"))
    for pattern in _ROCM_VERSION:
        for m in pattern.finditer(line):
            out.add("rocm", m.group(1))
    for pattern in _CUDA_VERSION:
        for m in pattern.finditer(line):
            value = m.group(1)
            if "." not in value:
                value = f"{value[:-1]}.{value[-1]}"
            out.add("cuda", value)
    for pattern in _DRIVER:
        for m in pattern.finditer(line):
            out.add("driver", m.group(1))
    for m in _DRIVER_CUDA.finditer(line):
        out.add("driver_cuda", m.group(1))


def _raising_frame(lines: list[str]) -> Optional[Frame]:
    """The last `File "...", line N, in f` frame of the last traceback in the text."""
    last: Optional[Frame] = None
    for number, line in enumerate(lines, start=1):
        m = _FRAME.match(line)
        if m is None:
            continue
        package = _PACKAGE.search(m.group(1))
        last = Frame(m.group(1), int(m.group(2)), m.group(3),
                     package.group(1) if package else None, number)
    return last


def is_amd_paste(facts: PasteFacts) -> bool:
    """The text is about an AMD GPU or ROCm (a gfx target, a Radeon/Instinct name, ROCm)."""
    return bool(facts.gfx) or facts.has("amd_gpu") or facts.has("rocm") \
        or bool(facts.all("gpu_name", role="amd"))


def is_nvidia_paste(facts: PasteFacts) -> bool:
    """The text names an NVIDIA GPU, driver or CUDA build, and nothing AMD."""
    nvidia = facts.has("nvidia_gpu") or facts.has("driver") or facts.has("cuda")
    return nvidia and not is_amd_paste(facts)
