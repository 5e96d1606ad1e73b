"""What `rocmdoctor explain` knows about the situation around a message: the conditions an
entry may require (`requires`), the environment whose fix applies (a container, WSL), and the
resolvers (`context`) that add facts from the message itself or from the machine.

Every machine fact comes through the Host (a live machine or a snapshot); facts modules are
imported lazily and any failure there counts as "not known", so an answer never depends on a
fact that could not be read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from rocmdoctor.explain.paste import PasteFacts, is_amd_paste, is_nvidia_paste, read_facts

if TYPE_CHECKING:
    from rocmdoctor.host import Host

_I = re.IGNORECASE | re.MULTILINE
CONTAINER_TEXT = re.compile(
    r"\bdocker(?:-compose)? (?:run|exec|compose|start)\b|Error response from daemon|\bpodman\b|"
    r"\bsingularity\b|\bapptainer\b|\bkubectl\b|kubepods|/\.dockerenv|\broot@[0-9a-f]{12}:|"
    r"/dockerx\b|\bFlatpak\b|/app/extensions/", _I)
WSL_TEXT = re.compile(r"microsoft-standard-WSL|/usr/lib/wsl/|\bWSL ?2?\b|/dev/dxg", _I)
NVIDIA_TEXT = re.compile(r"NVIDIA GeForce|GeForce (?:GTX|RTX)|NVIDIA-SMI \d|\bQuadro\b|"
                         r"\bTesla [KPVTA]\d", _I)
AMD_TEXT = re.compile(r"\bRadeon\b|\bgfx[0-9]{3}|\bInstinct\b|\bamdgpu\b|AMD GPU", _I)
OVERRIDE_TEXT = re.compile(r"HSA_OVERRIDE_GFX_VERSION\s*[=:]\s*[\"']?\d", _I)
MASK_TEXT = re.compile(r"\b(CUDA|HIP|ROCR)_VISIBLE_DEVICES\s*=\s*([\w,.-]+)", _I)
MASKS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass
class Context:
    """What a resolver adds: notes, commands that replace the entry's generic ones, and doubts
    (a fact the answer needs that the text lacks or contradicts: the answer is then only
    `possible`, and each doubt is said)."""

    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    basis: list[int] = field(default_factory=list)  # lines of the text the notes rest on
    fix: Optional[str] = None  # a fix text for what the facts show, in place of the entry's
    # A fact names which of a many-caused message's causes this is (GENERIC_KEYS): the answer
    # may then be `likely`.
    settled: bool = False


class Situation:
    """The text and the machine it came with, asked lazily and once."""

    def __init__(self, text: str, host: Optional[Host],
                 numbers: Optional[tuple[int, ...]] = None) -> None:
        self.text = text
        self.host = host
        self.numbers = numbers  # the whole text's line number of each line of `text`
        self._memo: dict[str, object] = {}
        self._facts: Optional[PasteFacts] = None

    @property
    def facts(self) -> PasteFacts:
        """What the text itself states (rocmdoctor.explain.paste), read once."""
        if self._facts is None:
            self._facts = read_facts(self.text, self.numbers)
        return self._facts

    def line_of(self, index: int) -> int:
        """The whole text's line number of the character at `index` of `text`."""
        line = self.text.count("\n", 0, index) + 1
        return self.numbers[line - 1] if self.numbers and line <= len(self.numbers) else line

    def written_on_windows(self) -> bool:
        return self.facts.os == "windows"

    def machine_is_elsewhere(self) -> Optional[str]:
        """Why this machine's facts do not describe the text's machine, or None: a log written
        on Windows or macOS, read on a Linux machine, came from another computer."""
        if self.host is None or self.facts.os not in ("windows", "macos"):
            return None
        kernel = getattr(self.host.platform, "kernel_release", "") or ""
        system = getattr(self.host.platform, "system", "") or ""
        if kernel or system.lower() == "linux":
            fact = self.facts.first("os")
            where = f" (line {fact.line})" if fact else ""
            return (f"the text was written on {self.facts.os.capitalize()}{where}, so this "
                    f"machine's facts are left out")
        return None

    def _ask(self, key: str, compute: Callable[[], object]) -> object:
        if key not in self._memo:
            try:
                self._memo[key] = compute()
            except Exception:  # noqa: BLE001 - an unreadable fact is an unknown fact
                self._memo[key] = None
        return self._memo[key]

    def env(self) -> dict[str, str]:
        host = self.host
        value = self._ask("env", lambda: dict(host.env) if host is not None else {})
        return value if isinstance(value, dict) else {}

    def _host_signals(self, name: str) -> list[str]:
        host = self.host
        if host is None or self.machine_is_elsewhere():
            return []

        def compute() -> list[str]:
            from rocmdoctor.facts import platform

            assert host is not None
            if name == "container":
                return list(platform.container_signals(host))
            if name == "wsl":
                return [host.platform.kernel_release] if platform.is_wsl(host) else []
            if name == "amd":
                return list(platform.amd_signals(host))
            return list(platform.nvidia_signals(host))

        value = self._ask("host:" + name, compute)
        return value if isinstance(value, list) else []

    def environment(self) -> tuple[str, str]:
        """("wsl" | "container" | "host", why): WSL first, since a container under WSL is
        still served through WSL's GPU path."""
        wsl = WSL_TEXT.search(self.text)
        if wsl:
            return "wsl", f"the text shows {wsl.group(0).strip()!r}"
        if self._host_signals("wsl"):
            return "wsl", f"this machine runs {self._host_signals('wsl')[0]}"
        container = CONTAINER_TEXT.search(self.text)
        if container:
            return "container", f"the text shows {container.group(0).strip()!r}"
        signals = self._host_signals("container")
        if signals:
            return "container", signals[0]
        return "host", ""

    def masks(self) -> dict[str, str]:
        """Visibility masks set in the text (export lines, environments) or on this machine."""
        found = {m.group(1).upper() + "_VISIBLE_DEVICES": m.group(2)
                 for m in MASK_TEXT.finditer(self.text)}
        found.update({k: v for k, v in self.env().items() if k in MASKS})
        return found

    def holds(self, condition: str) -> bool:
        test = CONDITIONS.get(condition)
        return bool(test and test(self))


def _nvidia_machine(s: Situation) -> bool:
    if s._host_signals("amd"):
        return False
    if s._host_signals("nvidia"):
        return True
    return bool(NVIDIA_TEXT.search(s.text)) and not AMD_TEXT.search(s.text)


def _capability_above_build(s: Situation) -> bool:
    """The GPU's capability is above the newest the build names, within the same major."""
    cap, top = s.facts.first("capability"), s.facts.first("cc_max", role="build")
    if cap is None or top is None:
        return False
    device = tuple(int(p) for p in cap.value.split("."))
    build = tuple(int(p) for p in top.value.split("."))
    return device > build and device[0] == build[0]


_ROCM_TRITON = re.compile(r"pytorch-triton-rocm|\+rocm\d|torch\.version\.hip|\bROCm\b|"
                          r"\bHIP\b|gfx\d|/opt/rocm", _I)


CONDITIONS: dict[str, Callable[[Situation], bool]] = {
    "amd_paste": lambda s: is_amd_paste(s.facts),
    "not_amd_paste": lambda s: not is_amd_paste(s.facts),
    "nvidia_paste": lambda s: is_nvidia_paste(s.facts),
    "windows": lambda s: s.written_on_windows(),
    "capability_above_build": _capability_above_build,
    "not_capability_above_build": lambda s: not _capability_above_build(s),
    "rocm_context": lambda s: bool(_ROCM_TRITON.search(s.text)) or bool(s._host_signals("amd")),
    "override_set": lambda s: bool(OVERRIDE_TEXT.search(s.text)) or any(
        k.startswith("HSA_OVERRIDE_GFX_VERSION") for k in s.env()),
    "nvidia_machine": _nvidia_machine,
    "not_nvidia": lambda s: not _nvidia_machine(s),
    "wsl": lambda s: s.environment()[0] == "wsl",
    "container": lambda s: s.environment()[0] == "container",
    "mask_set": lambda s: bool(s.masks()),
    "both_masks": lambda s: {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"} <= set(s.masks()),
    "lsmod_missing": lambda s: bool(re.search(r"lsmod: (?:command )?not found", s.text, _I)),
    # NCCL's shm_open (include/shm.h, later src/misc/shmutils.cc) refused with EACCES
    "shm_denied": lambda s: bool(re.search(r"shm_open failed\s*:\s*Permission denied", s.text,
                                           _I)),
    # amdgpu's SMU interface differing from its firmware's (smu_v1x_0.c logs it and goes on)
    "smu_if_mismatch": lambda s: bool(re.search(r"SMU driver if version not matched", s.text)),
    # hipRTC compiles for many programs (hashcat, Blender, MIOpen): MIOpen's answer needs MIOpen
    "miopen_named": lambda s: bool(re.search(r"\bmiopen", s.text, _I)),
    # a rootless engine's command line or prompt in the paste (podman, buildah)
    "rootless_engine": lambda s: bool(re.search(r"\b(?:podman|buildah)\b", s.text, _I)),
    # bitsandbytes looked for a ROCm library by version and did not find it
    "bnb_rocm_named": lambda s: bool(re.search(
        r"(?:Could not find|No compatible)[^\n]*libbitsandbytes_rocm\d+", s.text, _I)),
    # amdgpu's probe failing with -ENOMEM: the BARs could not be mapped
    "probe_enomem": lambda s: bool(re.search(r"amdgpu: probe of \S+ failed with error -12\b",
                                             s.text)),
    "nvidia_dkms": lambda s: bool(re.search(r"/dkms/nvidia/|dkms install nvidia", s.text, _I)),
    # bitsandbytes' old CUDA setup (before 0.43) in a text that shows no ROCm
    "bnb_cuda_setup": lambda s: bool(re.search(r"CUDA Setup failed despite GPU", s.text))
    and not is_amd_paste(s.facts),
}
