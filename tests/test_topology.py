"""GPU interconnect topology: real captures of nvidia-smi, amd-smi and rocm-smi, and link rates."""

from __future__ import annotations

import itertools
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmdoctor.facts.topology import (
    Link,
    Topology,
    parse_amd_smi_topology,
    parse_nvidia_topo,
    parse_rocm_showtopo,
    read_topology,
)
from rocmdoctor.host.snapshot import SnapshotHost, UnexpectedAccess
from rocmdoctor.kb.links import (
    A100_PCIE_BRIEF,
    AMD_SMI_BLOG,
    LINUX_PCIE_ENCODING,
    MLPERF_DGX_H100,
    MLPERF_H200,
    NVIDIA_NVLINK_A100,
    ROCM_MI100,
    ROCM_MI250,
    ROCM_MI300,
    LinkRate,
    nominal_rate,
    pcie_x16_per_direction,
)
from tests.helpers import fixture_text, make_snapshot

H100 = "nvidia-smi-topo-m-h100-x8-nv18-nic-gpu-numa-id-misaligned-columns.txt"
A100 = "nvidia-smi-topo-m-a100-x8-nv12-nic-legend.txt"
PCIE_TRUNCATED = "nvidia-smi-topo-m-pcie-x8-pix-phb-sys-prompt-line-TRUNCATED.txt"
PCIE_TABS = "nvidia-smi-topo-m-pcie-x8-sys-4numa-tabs-nic-trailing-tabs.txt"
TWO_GPU = "nvidia-smi-topo-m-2gpu-phb-tabs-rtx5090.txt"
AMD_2X7900 = "amd-smi-topology-gfx1100-rx7900xtx-x2-pcie-p2p-disabled-rocm7.2.txt"
AMD_MI355X = "amd-smi-topology-mi355x-x8-xgmi-weight0-rocm7.0.2.txt"
COLLECT_ENV_MI300X = "collect_env-vllm-gfx942-mi300x-x8-rocm6.2-topology.txt"

NVIDIA_SRC, AMD_SRC, ROCM_SRC = "nvidia-smi topo -m", "amd-smi topology", "rocm-smi --showtopo"
TWO_SOCKETS = {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}


def rocm_showtopo_text() -> str:
    """The verbatim `rocm-smi --showtopo` block vLLM embeds in its collect_env report."""
    text = fixture_text(COLLECT_ENV_MI300X)
    start = text.index("GPU Topology:\n") + len("GPU Topology:\n")
    end = text.index("End of ROCm SMI Log")
    return text[start:text.index("\n", end) + 1]


def all_pairs(n: int, link: Link) -> dict[tuple[int, int], Link]:
    return {pair: link for pair in itertools.combinations(range(n), 2)}


def from_matrix(rows: list[str], labels: dict[str, Link]) -> dict[tuple[int, int], Link]:
    """The upper triangle of a printed matrix (one row of cell labels per GPU)."""
    cells = [row.split() for row in rows]
    return {(i, j): labels[cells[i][j]] for i, j in itertools.combinations(range(len(rows)), 2)}


# --- nvidia-smi topo -m -----------------------------------------------------------------------
def test_h100_nv18_with_nics_and_gpu_numa_id() -> None:
    text = fixture_text(H100)
    assert parse_nvidia_topo(text) == Topology(
        NVIDIA_SRC, 8, all_pairs(8, Link("nvlink", "NV18", 18)), TWO_SOCKETS, text)


def test_a100_nv12_without_gpu_numa_id_column() -> None:
    text = fixture_text(A100)
    assert parse_nvidia_topo(text) == Topology(
        NVIDIA_SRC, 8, all_pairs(8, Link("nvlink", "NV12", 12)), TWO_SOCKETS, text)


def test_pcie_only_box_after_a_prompt_line_with_a_cut_legend() -> None:
    text = fixture_text(PCIE_TRUNCATED)
    pix, phb, sys_ = Link("pcie", "PIX"), Link("pcie", "PHB"), Link("pcie", "SYS")
    links = from_matrix([
        "X   PIX PHB PHB SYS SYS SYS SYS",
        "PIX X   PHB PHB SYS SYS SYS SYS",
        "PHB PHB X   PIX SYS SYS SYS SYS",
        "PHB PHB PIX X   SYS SYS SYS SYS",
        "SYS SYS SYS SYS X   PIX PHB PHB",
        "SYS SYS SYS SYS PIX X   PHB PHB",
        "SYS SYS SYS SYS PHB PHB X   PIX",
        "SYS SYS SYS SYS PHB PHB PIX X",
    ], {"PIX": pix, "PHB": phb, "SYS": sys_})
    assert links[(0, 1)] == pix and links[(0, 2)] == phb and links[(3, 4)] == sys_
    assert parse_nvidia_topo(text) == Topology(NVIDIA_SRC, 8, links, TWO_SOCKETS, text)


def test_tab_separated_sys_box_over_four_numa_nodes() -> None:
    text = fixture_text(PCIE_TABS)
    assert parse_nvidia_topo(text) == Topology(
        NVIDIA_SRC, 8, all_pairs(8, Link("pcie", "SYS")),
        {0: 0, 1: 0, 2: 0, 3: 1, 4: 2, 5: 2, 6: 2, 7: 3}, text)


def test_two_gpus_behind_one_host_bridge() -> None:
    text = fixture_text(TWO_GPU)
    assert parse_nvidia_topo(text) == Topology(
        NVIDIA_SRC, 2, {(0, 1): Link("pcie", "PHB")}, {0: 0, 1: 0}, text)


def _same_but_raw(found: Optional[Topology], expected: Optional[Topology]) -> bool:
    return (found is not None and expected is not None
            and (found.source, found.gpus, found.links, found.numa)
            == (expected.source, expected.gpus, expected.links, expected.numa))


@pytest.mark.parametrize("name", [H100, A100, PCIE_TRUNCATED, PCIE_TABS, TWO_GPU])
def test_nvidia_pastes_with_colour_crlf_and_no_legend_parse_the_same(name: str) -> None:
    text = fixture_text(name)
    expected = parse_nvidia_topo(text)
    coloured = "".join(f"\x1b[1m{line}\x1b[0m\r\n" for line in text.splitlines())
    no_legend = text.split("Legend:")[0]
    spaced = "\n".join(line.replace("\t", "    ") + "   " for line in text.splitlines())
    for variant in (coloured, no_legend, spaced):
        assert _same_but_raw(parse_nvidia_topo(variant), expected)


def test_a_row_whose_trailing_columns_are_mangled_keeps_its_links_but_not_its_numa() -> None:
    # Pastes merge cells ("NODENODE" in NVIDIA/nccl#820); the GPU columns come first and survive.
    text = fixture_text(A100).replace("PXB     PXB     NODE    NODE    SYS", "PXB PXB NODENODE SYS", 1)
    found = parse_nvidia_topo(text)
    assert found is not None
    assert found.links == all_pairs(8, Link("nvlink", "NV12", 12))
    assert found.numa == {k: v for k, v in TWO_SOCKETS.items() if k != 0}


# --- rocm-smi --showtopo and amd-smi topology ------------------------------------------------
def test_rocm_smi_showtopo_8x_mi300x() -> None:
    text = rocm_showtopo_text()
    assert parse_rocm_showtopo(text) == Topology(
        ROCM_SRC, 8, all_pairs(8, Link("xgmi", "XGMI", 1, 15)), TWO_SOCKETS, text)


def test_rocm_smi_showtopo_inside_the_whole_collect_env_report() -> None:
    text = fixture_text(COLLECT_ENV_MI300X)
    assert _same_but_raw(parse_rocm_showtopo(text), parse_rocm_showtopo(rocm_showtopo_text()))


def test_amd_smi_topology_8x_mi355x_xgmi() -> None:
    text = fixture_text(AMD_MI355X)
    assert parse_amd_smi_topology(text) == Topology(
        AMD_SRC, 8, all_pairs(8, Link("xgmi", "XGMI", 1, 0)), {}, text)


def test_amd_smi_topology_2x_7900xtx_over_pcie() -> None:
    text = fixture_text(AMD_2X7900)
    assert parse_amd_smi_topology(text) == Topology(
        AMD_SRC, 2, {(0, 1): Link("pcie", "PCIE", 2, 40)}, {}, text)


@pytest.mark.parametrize("name", [AMD_MI355X, AMD_2X7900])
def test_amd_smi_pastes_with_colour_and_crlf_parse_the_same(name: str) -> None:
    text = fixture_text(name)
    coloured = "".join(f"\x1b[32m{line}\x1b[0m   \r\n" for line in text.splitlines())
    assert _same_but_raw(parse_amd_smi_topology(coloured), parse_amd_smi_topology(text))


def test_each_parser_refuses_the_other_tools_output() -> None:
    nvidia, amd, rocm = fixture_text(H100), fixture_text(AMD_MI355X), rocm_showtopo_text()
    assert [parse_nvidia_topo(amd), parse_nvidia_topo(rocm)] == [None, None]
    assert [parse_amd_smi_topology(nvidia), parse_amd_smi_topology(rocm)] == [None, None]
    assert [parse_rocm_showtopo(nvidia), parse_rocm_showtopo(amd)] == [None, None]
    assert [p("") for p in (parse_nvidia_topo, parse_amd_smi_topology, parse_rocm_showtopo)] \
        == [None, None, None]


def test_topology_link_answers_in_either_order() -> None:
    found = parse_amd_smi_topology(fixture_text(AMD_2X7900))
    assert found is not None
    assert found.link(1, 0) == found.link(0, 1) == Link("pcie", "PCIE", 2, 40)
    assert found.link(0, 5) is None


# --- read_topology through the snapshot host --------------------------------------------------
def _host(commands: dict[str, Any], absent: tuple[str, ...] = ()) -> SnapshotHost:
    return SnapshotHost(make_snapshot(commands=commands), strict=True, absent=absent)


def test_read_topology_on_cuda_runs_nvidia_smi_once() -> None:
    text = fixture_text(H100)
    host = _host({"nvidia-smi topo -m": text})
    found = read_topology(host, "cuda")
    assert found == parse_nvidia_topo(text)
    assert read_topology(host, "cuda") is found
    assert host.memo("topology:cuda", lambda: None) is found


def test_read_topology_on_rocm_prefers_amd_smi() -> None:
    text = fixture_text(AMD_MI355X)
    # rocm-smi is not in the strict snapshot: asking for it would raise UnexpectedAccess.
    assert read_topology(_host({"amd-smi topology": text}), "rocm") == parse_amd_smi_topology(text)


def test_read_topology_on_rocm_falls_back_to_rocm_smi_when_amd_smi_is_missing() -> None:
    text = rocm_showtopo_text()
    host = _host({"rocm-smi --showtopo": text}, absent=("amd-smi topology",))
    assert read_topology(host, "rocm") == parse_rocm_showtopo(text)


def test_read_topology_on_rocm_falls_back_to_rocm_smi_when_amd_smi_fails() -> None:
    text = rocm_showtopo_text()
    failed = {"returncode": 2, "stdout": "", "stderr": "AMDSMI_STATUS_INIT_ERROR",
              "timed_out": False}
    host = _host({"amd-smi topology": failed, "rocm-smi --showtopo": text})
    assert read_topology(host, "rocm") == parse_rocm_showtopo(text)


@pytest.mark.parametrize("platform, absent", [
    ("cuda", ("nvidia-smi topo -m",)),
    ("rocm", ("amd-smi topology", "rocm-smi --showtopo")),
])
def test_read_topology_without_the_tools_is_none(platform: str, absent: tuple[str, ...]) -> None:
    assert read_topology(_host({}, absent=absent), platform) is None


def test_read_topology_ignores_what_a_timed_out_tool_printed() -> None:
    partial = fixture_text(H100)[:2000]
    hung = {"returncode": 124, "stdout": partial, "stderr": "", "timed_out": True,
            "duration_s": 10.0}
    assert parse_nvidia_topo(partial) is not None
    assert read_topology(_host({"nvidia-smi topo -m": hung}), "cuda") is None


def test_read_topology_on_a_cpu_machine_asks_nothing() -> None:
    assert read_topology(_host({}), "cpu") is None


def test_the_strict_host_would_have_caught_an_unexpected_command() -> None:
    with pytest.raises(UnexpectedAccess):
        read_topology(_host({}), "cuda")


# --- nominal link rates -----------------------------------------------------------------------
NV18, NV12 = Link("nvlink", "NV18", 18), Link("nvlink", "NV12", 12)
XGMI_1 = Link("xgmi", "XGMI", 1, 15)


@pytest.mark.parametrize("link, gpu, expected", [
    (NV18, "NVIDIA H100 80GB HBM3", LinkRate(
        450.0, "NVLink 4, 18 links x 25 GB/s per direction (NVIDIA H100: 18 links, 900 GB/s "
        "bidirectional per GPU; NV18 is the bond between this pair, all 18 when the GPUs meet "
        "through NVSwitch)", MLPERF_DGX_H100)),
    (NV12, "NVIDIA H100 NVL", LinkRate(
        300.0, "NVLink 4, 12 links x 25 GB/s per direction (NVIDIA H100: 18 links, 900 GB/s "
        "bidirectional per GPU; NV12 is the bond between this pair, all 18 when the GPUs meet "
        "through NVSwitch)", MLPERF_DGX_H100)),
    (NV18, "NVIDIA H200", LinkRate(
        450.0, "NVLink 4, 18 links x 25 GB/s per direction (NVIDIA H200: 18 links, 900 GB/s "
        "bidirectional per GPU; NV18 is the bond between this pair, all 18 when the GPUs meet "
        "through NVSwitch)", MLPERF_H200)),
    (NV12, "NVIDIA A100-SXM4-80GB", LinkRate(
        300.0, "NVLink 3, 12 links x 25 GB/s per direction (NVIDIA A100: 12 links, 600 GB/s "
        "bidirectional per GPU; NV12 is the bond between this pair, all 12 when the GPUs meet "
        "through NVSwitch)", NVIDIA_NVLINK_A100)),
    (XGMI_1, "AMD Instinct MI300X", LinkRate(
        64.0, "xGMI on MI300X: 7 links per GPU form a fully connected 8-GPU node, one link per "
        "pair; 32 Gb/s x 16 lanes = 512 Gb/s = 64 GB/s per direction per link", AMD_SMI_BLOG)),
    (Link("pcie", "SYS"), "NVIDIA H100 PCIe", LinkRate(
        63.02, "PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.02 GB/s per direction, "
        "an upper bound for the SYS path", MLPERF_DGX_H100)),
    (Link("pcie", "PHB"), "NVIDIA A100 80GB PCIe", LinkRate(
        31.51, "PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s per direction, "
        "an upper bound for the PHB path", A100_PCIE_BRIEF)),
    (Link("pcie", "PCIE", 3, 52), "AMD Instinct MI300X", LinkRate(
        63.02, "PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.02 GB/s per direction, "
        "an upper bound for the PCIE path", ROCM_MI300)),
    (Link("pcie", "PCIE", 3, 52), "AMD Instinct MI250X/MI250", LinkRate(
        31.51, "PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s per direction, "
        "an upper bound for the PCIE path", ROCM_MI250)),
    (Link("pcie", "PCIE", 2, 40), "AMD Instinct MI100", LinkRate(
        31.51, "PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s per direction, "
        "an upper bound for the PCIE path", ROCM_MI100)),
])
def test_nominal_rate(link: Link, gpu: str, expected: LinkRate) -> None:
    assert nominal_rate(link, gpu) == expected


def test_nominal_rate_of_a_radeon_over_pcie_needs_the_generation() -> None:
    link = Link("pcie", "PCIE", 2, 40)
    assert nominal_rate(link, "Radeon RX 7900 XTX") is None
    assert nominal_rate(link, "Radeon RX 7900 XTX", pcie_gen=4) == LinkRate(
        31.51, "PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s per direction, "
        "an upper bound for the PCIE path", LINUX_PCIE_ENCODING)
    # Gen6 (PAM4, FLIT encoding) is not in the table, whatever the GPU.
    assert nominal_rate(link, "AMD Instinct MI300X", pcie_gen=6) is None


@pytest.mark.parametrize("link, gpu", [
    (NV18, "NVIDIA H800"),  # export part with fewer NVLinks: not in the table
    (NV18, "NVIDIA A800-SXM4-80GB"),
    (NV18, "NVIDIA A100-SXM4-80GB"),  # an A100 has 12 links; NV18 cannot be one
    (Link("nvlink", "NV#"), "NVIDIA H100 80GB HBM3"),  # no count
    (XGMI_1, "AMD Instinct MI250X/MI250"),  # 1, 2 or 4 links per GCD pair: not knowable here
    (XGMI_1, "AMD Instinct MI210"),
    (XGMI_1, "AMD Instinct MI355X"),
    (XGMI_1, "NVIDIA H100 80GB HBM3"),
    (Link("same-board", "INTERNAL"), "AMD Instinct MI300X"),
    (Link("unknown", "N/A"), "AMD Instinct MI300X"),  # a type the tool could not name
])
def test_nominal_rate_is_none_when_not_known(link: Link, gpu: str) -> None:
    assert nominal_rate(link, gpu) is None


def test_pcie_rates_follow_the_linux_encoding_formula() -> None:
    # PCIE_SPEED2MBS_ENC: 16000*128/130 Mb/s per lane for 16 GT/s.
    assert pcie_x16_per_direction(4) == round(16000 * 128 / 130 * 16 / 8 / 1000, 2) == 31.51
    assert [pcie_x16_per_direction(g) for g in (3, 5, 6)] == [15.75, 63.02, None]


def test_every_rate_of_the_real_captures_is_explained() -> None:
    rates = {
        "NVIDIA H100 80GB HBM3": parse_nvidia_topo(fixture_text(H100)),
        "NVIDIA A100-SXM4-80GB": parse_nvidia_topo(fixture_text(A100)),
        "AMD Instinct MI300X": parse_rocm_showtopo(rocm_showtopo_text()),
    }
    for gpu, topology in rates.items():
        assert topology is not None
        found = {nominal_rate(link, gpu) for link in topology.links.values()}
        assert len(found) == 1 and None not in found, gpu


# --- fuzz -------------------------------------------------------------------------------------
_VOCAB = ["GPU0", "GPU1", "GPU2", "NIC0", "mlx5_0", "X", "NV18", "NV", "PIX", "SYS", "CPU",
          "Affinity", "NUMA", "ID", "N/A", "0-47", "0", "1", "-1", "Legend:", "XGMI", "PCIE",
          "SELF", "0000:03:00.0", "LINK TYPE TABLE:", "HOPS TABLE:", "WEIGHT TABLE:",
          "Link Type between two GPUs", "Hops between two GPUs", "=====",
          "GPU[0]\t\t: (Topology) Numa Node: 0", "\x1b[1m", "\t", "\r", "\n", " "]
_PARSERS = (parse_nvidia_topo, parse_amd_smi_topology, parse_rocm_showtopo)


def _check(parsed: Optional[Topology]) -> None:
    if parsed is not None:
        assert all(i < j for i, j in parsed.links)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_arbitrary_text(text: str) -> None:
    for parse in _PARSERS:
        _check(parse(text))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_VOCAB), max_size=80).map(" ".join))
def test_parsers_never_raise_on_topology_shaped_noise(text: str) -> None:
    for parse in _PARSERS:
        _check(parse(text))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([H100, A100, PCIE_TRUNCATED, PCIE_TABS, TWO_GPU, AMD_2X7900,
                        AMD_MI355X, COLLECT_ENV_MI300X]),
       st.integers(min_value=0, max_value=20000), st.text(max_size=20))
def test_parsers_never_raise_on_cut_or_spliced_real_captures(name: str, cut: int,
                                                             junk: str) -> None:
    text = fixture_text(name)
    for parse in _PARSERS:
        _check(parse(text[:cut] + junk + text[cut:cut + 400]))
        _check(parse(text[:cut]))
