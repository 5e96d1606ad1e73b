"""How this machine boots its GPU driver: the kernel command line and the /etc/modprobe.d
lines that name amdgpu.

By hand: `cat /proc/cmdline`; `grep -rw amdgpu /etc/modprobe.d/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmdoctor.host import Host
from rocmdoctor.kb.boot import BLACKLIST_PARAMS, MODPROBE_GLOB

CMDLINE_FILE = "/proc/cmdline"


@dataclass(frozen=True)
class CmdlineFacts:
    blacklist_tokens: tuple[str, ...]  # the tokens that blacklist amdgpu
    amdgpu_options: tuple[str, ...]  # every amdgpu.* token
    nomodeset: bool
    modeset_off: bool  # amdgpu.modeset=0


def parse_cmdline(text: str) -> CmdlineFacts:
    tokens = text.split()
    blacklist = tuple(t for t in tokens if t.partition("=")[0] in BLACKLIST_PARAMS
                      and "amdgpu" in t.partition("=")[2].split(","))
    options = tuple(t for t in tokens if t.startswith("amdgpu."))
    return CmdlineFacts(blacklist, options, "nomodeset" in tokens, "amdgpu.modeset=0" in tokens)


@dataclass(frozen=True)
class ModprobeLine:
    path: str
    lineno: int
    text: str
    kind: str  # blacklist, install or options


def parse_modprobe_conf(path: str, text: str) -> list[ModprobeLine]:
    """The `blacklist amdgpu`, `install amdgpu ...` and `options amdgpu ...` lines."""
    found = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if len(words) >= 2 and words[1] == "amdgpu" and words[0] in (
                "blacklist", "install", "options"):
            found.append(ModprobeLine(path, lineno, " ".join(words), words[0]))
    return found


def modprobe_lines(host: Host) -> list[ModprobeLine]:
    def compute() -> list[ModprobeLine]:
        found = []
        for path in host.glob(MODPROBE_GLOB):
            found += parse_modprobe_conf(path, host.read_file(path) or "")
        return found

    return host.memo("amdgpu:modprobe.d", compute)


def cmdline_text(host: Host) -> str:
    """The kernel command line as /proc/cmdline gives it ("" when unreadable), read once."""
    return host.memo("facts:cmdline", lambda: host.read_file(CMDLINE_FILE) or "")


def kernel_cmdline(host: Host) -> CmdlineFacts:
    return parse_cmdline(cmdline_text(host))
