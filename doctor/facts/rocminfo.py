"""Parse `rocminfo` output of every generation, including what people paste.

rocminfo prints everything to stdout: a "ROCk module ..." line, pre-check errors, then
"HSA System Attributes" and one block per agent framed by `*******` / `Agent N` lines, each
line `<label padded to 25><value>` (ROCm/rocminfo rocminfo.cc). The parser tolerates:
ANSI colour codes, shell prompts and other commands' output around it (only the output of a
prompt that ran rocminfo is read), Markdown fences and stray backticks, `rocminfo | grep`
excerpts without agent headers, the old 3.x layout, and WSL output (no ROCk line).
Arbitrary text never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]")
# A shell prompt followed by a command: "user@host:~$ cmd", "root:~# cmd", "(base) ... $ cmd",
# "[ user: ~ ]$ cmd", "$ cmd". rocminfo's own lines never contain "$ " or "# ".
PROMPT = re.compile(r"^\s{0,8}(?:\([^)\n]{0,40}\)\s?)?"
                    r"(?:\[[^\]\n]{0,80}\]|[\w.@:~/+\- ]{0,80}?)[$#]\s+(?P<cmd>\S.*)$")
ROCMINFO_CMD = re.compile(r"^(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?rocminfo(?:\s|\||$)")
KEY_VALUE = re.compile(
    r"^(?P<indent>\s*)(?P<key>[A-Za-z][A-Za-z0-9 .()/_-]*?)\s*:+\s*(?P<value>.*)$")
# Numbers are bounded: a longer run is no agent number or count (and int() refuses 4,300+
# digits).
AGENT_HEADER = re.compile(r"^\s*Agent\s+(\d{1,9})\s*$")
LEADING_INT = re.compile(r"^\s*(\d{1,20})(?!\d)")
ISA_PREFIX = "amdgcn-amd-amdhsa--"


@dataclass(frozen=True)
class Pool:
    segment: str
    size_kb: Optional[int]


@dataclass(frozen=True)
class RocmAgent:
    """One HSA agent as rocminfo prints it."""

    number: Optional[int]  # "Agent N", None in grep excerpts
    name: str  # gfx target for GPUs, CPU model for CPUs, "aie2p" for the NPU
    marketing_name: str = ""
    vendor: str = ""
    device_type: str = ""  # "CPU", "GPU", "DSP"; "" when the excerpt has no such line
    node: Optional[int] = None
    uuid: Optional[str] = None
    chip_id: Optional[int] = None
    compute_units: Optional[int] = None
    memory_properties: str = ""  # "APU" on APUs (ROCm 6.x+)
    isas: tuple[str, ...] = ()  # "gfx90a:sramecc+:xnack-", without the amdgcn-... prefix
    pools: tuple[Pool, ...] = ()

    @property
    def is_gpu(self) -> bool:
        if self.device_type:
            return self.device_type.upper() == "GPU"
        return re.fullmatch(r"gfx[0-9a-f]{3,4}(?:[:+].*)?", self.name.lower()) is not None

    @property
    def vram_kb(self) -> Optional[int]:
        """Size of the first coarse-grained global pool (the GPU's own memory)."""
        globals_ = [p for p in self.pools if p.segment.upper().startswith("GLOBAL")]
        coarse = [p for p in globals_ if "COARSE" in p.segment.upper()]
        for pool in coarse or globals_:
            if pool.size_kb is not None:
                return pool.size_kb
        return None


@dataclass(frozen=True)
class RocminfoReport:
    agents: tuple[RocmAgent, ...] = ()
    rock_line: Optional[str] = None  # "ROCk module version 6.7.0 is loaded"
    rock_loaded: Optional[bool] = None  # False for "NOT loaded" / "NOT live"
    kfd_error: Optional[str] = None  # strerror text after "Unable to open /dev/kfd read-write:"
    hsa_status: Optional[str] = None  # "HSA_STATUS_ERROR_OUT_OF_RESOURCES"
    group_line: Optional[str] = None  # "alice is member of render group"
    wsl: bool = False
    runtime_version: Optional[str] = None
    done: bool = False  # saw "*** Done ***"
    text: str = ""  # the cleaned rocminfo output this was parsed from

    @property
    def gpus(self) -> tuple[RocmAgent, ...]:
        return tuple(a for a in self.agents if a.is_gpu)


def clean(text: str) -> str:
    """Drop colour codes, carriage returns, Markdown fences and stray backticks."""
    text = ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            line = stripped[3:]
            if not line.strip() or re.fullmatch(r"[\w+-]+", line.strip()):
                continue  # a fence line, maybe with a language tag
        lines.append(line.rstrip().rstrip("`").rstrip())
    return "\n".join(lines)


def rocminfo_section(text: str) -> str:
    """The part of a paste that rocminfo printed: after each prompt that ran rocminfo, up to
    the next prompt. Text without prompts, or whose prompts never ran rocminfo, is kept."""
    lines = text.split("\n")
    prompts = [(i, m.group("cmd")) for i, line in enumerate(lines)
               if ("$" in line or "#" in line) and (m := PROMPT.match(line)) is not None]
    if not prompts:
        return text
    kept: list[str] = []
    for n, (i, cmd) in enumerate(prompts):
        if ROCMINFO_CMD.match(cmd.strip()):
            end = prompts[n + 1][0] if n + 1 < len(prompts) else len(lines)
            kept.extend(lines[i + 1:end])
    return "\n".join(kept) if kept else text


def _int(value: str) -> Optional[int]:
    m = LEADING_INT.match(value)
    return int(m.group(1)) if m else None


@dataclass
class _Agent:
    number: Optional[int]
    fields: dict[str, str] = field(default_factory=dict)
    isas: list[str] = field(default_factory=list)
    pools: list[list[str]] = field(default_factory=list)  # [segment, size]

    def freeze(self) -> RocmAgent:
        f = self.fields
        uuid = f.get("Uuid", "").strip() or None
        return RocmAgent(
            number=self.number,
            name=f.get("Name", "").strip(),
            marketing_name=f.get("Marketing Name", "").strip(),
            vendor=f.get("Vendor Name", "").strip(),
            device_type=f.get("Device Type", "").strip(),
            node=_int(f.get("Node", "")),
            uuid=uuid,
            chip_id=_int(f.get("Chip ID", "")),
            compute_units=_int(f.get("Compute Unit", "")),
            memory_properties=f.get("Memory Properties", "").strip(),
            isas=tuple(self.isas),
            pools=tuple(Pool(seg, _size_kb(size)) for seg, size in self.pools),
        )


def _size_kb(value: str) -> Optional[int]:
    n = _int(value)
    if n is None:
        return None
    unit = value.upper()
    if "MB" in unit:
        return n * 1024
    if "GB" in unit:
        return n * 1024 * 1024
    return n


def parse_rocminfo(text: str) -> RocminfoReport:
    """Parse rocminfo output (or a paste of it). Never raises."""
    cleaned = rocminfo_section(clean(text))
    agents: list[_Agent] = []
    current: Optional[_Agent] = None
    headed = False  # the output has "Agent N" headers
    info: dict[str, object] = {}
    for raw in cleaned.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("ROCk module"):
            info["rock_line"] = line
            info["rock_loaded"] = "NOT" not in line
            continue
        if line.startswith("Unable to open /dev/kfd read-write:"):
            info["kfd_error"] = line.split(":", 1)[1].strip()
            continue
        m_status = re.search(r"Call returned (HSA_STATUS_\w+)", line)
        if m_status:
            info["hsa_status"] = m_status.group(1)
            continue
        if re.search(r"\bis (?:not )?member of\b|group membership", line):
            info["group_line"] = line
            continue
        if line.startswith("WSL environment detected"):
            info["wsl"] = True
            continue
        if line.startswith("*** Done ***"):
            info["done"] = True
            continue
        header = AGENT_HEADER.match(line)
        if header:
            headed = True
            current = _Agent(int(header.group(1)))
            agents.append(current)
            continue
        kv = KEY_VALUE.match(raw)
        if kv is None:
            continue
        key, value = kv.group("key").strip(), kv.group("value").strip()
        if key == "Runtime Version" and current is None:
            info["runtime_version"] = value
        elif key == "Name" and value.lower().startswith(ISA_PREFIX):
            if current is not None:
                current.isas.append(value[len(ISA_PREFIX):])
        elif key == "Name":
            if current is None or "Name" in current.fields:
                # A grep excerpt (no headers) or a header-less repeat: a new agent starts.
                current = _Agent(None if not headed else len(agents) + 1)
                agents.append(current)
            current.fields["Name"] = value
        elif current is None:
            continue
        elif key == "Segment":
            current.pools.append([value, ""])
        elif key == "Size" and current.pools and not current.pools[-1][1]:
            current.pools[-1][1] = value
        elif key not in current.fields:
            current.fields[key] = value
    frozen = tuple(a.freeze() for a in agents if a.fields.get("Name", "").strip())
    return RocminfoReport(
        agents=frozen,
        rock_line=_opt_str(info.get("rock_line")),
        rock_loaded=_opt_bool(info.get("rock_loaded")),
        kfd_error=_opt_str(info.get("kfd_error")),
        hsa_status=_opt_str(info.get("hsa_status")),
        group_line=_opt_str(info.get("group_line")),
        wsl=bool(info.get("wsl", False)),
        runtime_version=_opt_str(info.get("runtime_version")),
        done=bool(info.get("done", False)),
        text=cleaned,
    )


def _opt_str(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


def _opt_bool(value: object) -> Optional[bool]:
    return value if isinstance(value, bool) else None
