"""How the local GPUs are wired to each other, read from the vendor's topology tool.

Three tools print a GPU-by-GPU matrix; each parser turns one into a `Topology`:

- `nvidia-smi topo -m`: `NV#` is a bonded set of # NVLinks; `PIX`, `PXB`, `PHB`, `NODE` and
  `SYS` (older drivers: `SOC`) are PCIe paths of growing length; `X` is the GPU itself. NIC
  rows/columns (`NIC0`, `mlx5_0`) and the `CPU Affinity`, `NUMA Affinity`, `GPU NUMA ID`
  columns follow the GPU columns (https://docs.nvidia.com/deploy/nvidia-smi/index.html).
- `amd-smi topology`: BDF-labelled tables (`LINK TYPE TABLE:` with `XGMI`/`PCIE`, `HOPS TABLE:`,
  `WEIGHT TABLE:`); columns are in amd-smi's GPU index order.
- `rocm-smi --showtopo`: `Link Type between two GPUs`, `Hops ...`, `Weight ...` and the
  `(Topology) Numa Node` lines.

AMD's hop count is abstract: 1 means reachable over xGMI whatever the number of physical links,
2 PCIe within a NUMA node, 3 PCIe across nodes (https://github.com/ROCm/rocm-systems/issues/5763).

Verify by hand: run the same command (`nvidia-smi topo -m`, `amd-smi topology`,
`rocm-smi --showtopo`) and read the row of one GPU against the column of another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Optional

from rocmdoctor.host import Host
from rocmdoctor.model import NVLINK, PCIE, SAME_BOARD, UNKNOWN, XGMI, Link

NVIDIA_TOPO_ARGV: tuple[str, ...] = ("nvidia-smi", "topo", "-m")
AMD_SMI_TOPO_ARGV: tuple[str, ...] = ("amd-smi", "topology")
ROCM_SMI_TOPO_ARGV: tuple[str, ...] = ("rocm-smi", "--showtopo")


# Pastes carry colour codes (ESC [ ... m) and CR line ends; both go before parsing.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# Numbers are bounded: a longer one names no GPU or link (and int() refuses 4,300+ digits).
_GPU = re.compile(r"GPU([0-9]{1,6})")
_NV = re.compile(r"NV([0-9]{1,6})")
_NVIDIA_PCIE = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})
# amd-smi prints amdsmi_link_type_t names; INTERNAL is "within chip" (amdsmi.h).
_AMD_KINDS: Mapping[str, str] = {"XGMI": XGMI, "PCIE": PCIE, "INTERNAL": SAME_BOARD}
_AMD_SELF = frozenset({"SELF", "X", "0"})
_ROCM_NUMA = re.compile(
    r"GPU\[([0-9]{1,6})\]\s*:\s*\(Topology\)\s*Numa Node:\s*(-?[0-9]{1,6})(?![0-9])", re.I)
_NVIDIA_EXTRAS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass(frozen=True)
class Topology:
    source: str  # the command that printed it
    gpus: int
    links: Mapping[tuple[int, int], Link]  # keyed (i, j) with i < j
    numa: Mapping[int, int]  # GPU index -> NUMA node, where the tool said so
    raw: str

    def link(self, a: int, b: int) -> Optional[Link]:
        """The link between two GPUs in either order."""
        return self.links.get((min(a, b), max(a, b)))


def _lines(text: str) -> list[str]:
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _int(token: str) -> Optional[int]:
    token = token.strip()
    return int(token) if token.isascii() and token.isdigit() and len(token) <= 9 else None


# --- nvidia-smi topo -m -----------------------------------------------------------------------
def nvidia_link(label: str) -> Link:
    """Classify one cell of `nvidia-smi topo -m`."""
    bonded = _NV.fullmatch(label)
    if bonded:
        return Link(NVLINK, label, int(bonded.group(1)))
    return Link(PCIE if label in _NVIDIA_PCIE else UNKNOWN, label)


def parse_nvidia_topo(text: str) -> Optional[Topology]:
    """`nvidia-smi topo -m` to a Topology; None when there is no GPU matrix in the text."""
    lines = _lines(text)
    start = next((i for i, line in enumerate(lines)
                  if line.split()[:1] == ["GPU0"] and "X" not in line.split()), None)
    if start is None:
        return None
    header = lines[start]
    devices: list[str] = []
    for token in header.split():
        if not token[-1:].isdigit():  # device labels end in a digit; "CPU Affinity" does not
            break
        devices.append(token)
    columns = {m.group(1): pos for pos, d in enumerate(devices) if (m := _GPU.fullmatch(d))}
    extras = [name for name in _NVIDIA_EXTRAS if name in header]
    rows: dict[int, list[str]] = {}
    numa: dict[int, int] = {}
    for line in lines[start + 1:]:
        tokens = line.split()
        if not tokens:
            if rows:
                break  # the blank line before the legend ends the matrix
            continue
        match = _GPU.fullmatch(tokens[0])
        if tokens[0] == "Legend:" or (match is None and tokens[0] not in devices):
            if rows:
                break
            continue
        if match is None or match.group(1) not in columns:
            continue  # a NIC row
        cells = tokens[1:]
        if _cell(cells, columns[match.group(1)]) != "X":
            continue  # not a topo -m row: a GPU meets itself as "X" on the diagonal
        index = int(match.group(1))
        rows[index] = cells
        # Trailing columns are trusted only when the row has exactly one token per column.
        if "NUMA Affinity" in extras and len(cells) == len(devices) + len(extras):
            node = _int(cells[len(devices) + extras.index("NUMA Affinity")])
            if node is not None:
                numa[index] = node
    if not rows:
        return None
    order = sorted((int(k), pos) for k, pos in columns.items())
    links: dict[tuple[int, int], Link] = {}
    for a, (i, pos_i) in enumerate(order):
        for j, pos_j in order[a + 1:]:
            label = _cell(rows.get(i), pos_j) or _cell(rows.get(j), pos_i)
            if label is not None and label != "X":
                links[(i, j)] = nvidia_link(label)
    return Topology(" ".join(NVIDIA_TOPO_ARGV), len(order), links, numa, text)


def _cell(row: Optional[Sequence[str]], pos: int) -> Optional[str]:
    return row[pos] if row is not None and pos < len(row) else None


# --- AMD tables (amd-smi topology, rocm-smi --showtopo) --------------------------------------
_Matrix = tuple[list[str], dict[str, list[str]]]


def _table(lines: Sequence[str], title: Callable[[str], bool]) -> Optional[_Matrix]:
    """The column labels and rows of the first matrix under a title line."""
    start = next((i for i, line in enumerate(lines) if title(line)), None)
    if start is None:
        return None
    labels: list[str] = []
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1:]:
        tokens = line.split()
        if not labels:
            if tokens and not line.lstrip().startswith("="):  # skip the banner rule
                labels = tokens
            continue
        if not tokens or tokens[0] not in labels:
            break  # a blank line or the next table's title
        rows[tokens[0]] = tokens[1:]
    return (labels, rows) if rows else None


def _amd_topology(source: str, text: str, link_title: Callable[[str], bool],
                  hops_title: Callable[[str], bool], weight_title: Callable[[str], bool],
                  numa: Mapping[int, int]) -> Optional[Topology]:
    lines = _lines(text)
    kinds = _table(lines, link_title)
    if kinds is None:
        return None
    labels, link_rows = kinds
    hops = _table(lines, hops_title)
    weights = _table(lines, weight_title)
    links: dict[tuple[int, int], Link] = {}
    for i, a in enumerate(labels):
        for j in range(i + 1, len(labels)):
            b = labels[j]
            label = _cell(link_rows.get(a), j) or _cell(link_rows.get(b), i)
            if label is None or label.upper() in _AMD_SELF:
                continue
            links[(i, j)] = Link(_AMD_KINDS.get(label.upper(), UNKNOWN), label,
                                 _amd_number(hops, a, b), _amd_number(weights, a, b))
    return Topology(source, len(labels), links, dict(numa), text)


def _amd_number(table: Optional[_Matrix], a: str, b: str) -> Optional[int]:
    """The number a table gives for the pair (a, b), looked up by label in either row."""
    if table is None:
        return None
    labels, rows = table
    if a not in labels or b not in labels:
        return None
    value = _cell(rows.get(a), labels.index(b)) or _cell(rows.get(b), labels.index(a))
    return _int(value) if value is not None else None


def _titled(words: str) -> Callable[[str], bool]:
    return lambda line: words in line.strip().lower()


def parse_amd_smi_topology(text: str) -> Optional[Topology]:
    """`amd-smi topology` (plain output) to a Topology; None without a LINK TYPE TABLE."""
    return _amd_topology(" ".join(AMD_SMI_TOPO_ARGV), text,
                         lambda line: line.strip().upper() == "LINK TYPE TABLE:",
                         lambda line: line.strip().upper() == "HOPS TABLE:",
                         lambda line: line.strip().upper() == "WEIGHT TABLE:", {})


def parse_rocm_showtopo(text: str) -> Optional[Topology]:
    """`rocm-smi --showtopo` to a Topology; None without its "Link Type" table."""
    numa: dict[int, int] = {}
    for gpu, node in _ROCM_NUMA.findall(_ANSI.sub("", text)):
        if int(node) >= 0:
            numa.setdefault(int(gpu), int(node))
    return _amd_topology(" ".join(ROCM_SMI_TOPO_ARGV), text,
                         _titled("link type between two gpus"),
                         _titled("hops between two gpus"),
                         _titled("weight between two gpus"), numa)


# --- reading it from the host -----------------------------------------------------------------
def _run(host: Host, argv: Sequence[str],
         parse: Callable[[str], Optional[Topology]]) -> Optional[Topology]:
    result = host.run(list(argv))
    return parse(result.stdout) if result.ok else None


def read_topology(host: Host, platform: str) -> Optional[Topology]:
    """The GPU topology of a `cuda` or `rocm` machine, once per host; None when unknown.

    On ROCm amd-smi is asked first and rocm-smi only when amd-smi is missing, fails or prints
    no link table (rocm-smi is deprecated in favour of amd-smi).
    """

    def compute() -> Optional[Topology]:
        if platform == "cuda":
            return _run(host, NVIDIA_TOPO_ARGV, parse_nvidia_topo)
        if platform == "rocm":
            return (_run(host, AMD_SMI_TOPO_ARGV, parse_amd_smi_topology)
                    or _run(host, ROCM_SMI_TOPO_ARGV, parse_rocm_showtopo))
        return None

    return host.memo(f"topology:{platform}", compute)
