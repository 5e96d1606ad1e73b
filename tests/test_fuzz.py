"""Fuzzing: every text parser, and whole snapshots through `check` and `report`.

Each parser below is documented (or required by docs/architecture.md) never to raise on
arbitrary text. It gets three kinds of input: arbitrary text, real captures from
tests/fixtures/real mutated (a number replaced by one of thousands of digits, `1e999`,
`nan`, a superscript digit; lines cut, doubled or swapped; garbage inserted), and runs of
nasty tokens. Snapshots start from real ones (the H200 captures and the AMD machines the
report tests build from real captures) and are mutated (a field's type changed, a key
dropped or added, a string mutated as above, the JSON cut short): `check --json` and
`report --from` must answer with results or one clean error line, never a crashed check,
a hang or an internal error.

CI runs a small count. The full count (docs/testing.md, "Fuzzing"):

    ROCMDOCTOR_FUZZ_EXAMPLES=5000 python -m pytest -q -p no:cacheprovider tests/test_fuzz.py

runs that many inputs per parser and 2/5 as many mutated snapshots.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rocmdoctor.facts import (
    alloc_conf,
    amd_gpus,
    amd_smi,
    amdgpu_firmware,
    amdgpu_module,
    boot,
    collect_env,
    cpu,
    kernel_log,
    nvidia_gpus,
    nvidia_smi_q,
    os_release,
    pci,
    rocm_version,
    rocminfo,
    secure_boot,
    topology,
)
from rocmdoctor.facts import torch as torch_facts
from rocmdoctor.facts.alloc_conf import LEGACY, MODERN
from rocmdoctor.kb import (
    cuda_driver,
    debug_vars,
    driver_support,
    gfx,
    hip_builds,
    links,
    nccl_env,
    peaks,
    perf_levels,
    ppfeatures,
    rocm_support,
    rocminfo_failures,
    torch_wheels,
)
from rocmdoctor.kb.allocator import option_names
from rocmdoctor.render import machine
from tests.helpers import REAL, fixture_text

FULL = int(os.environ.get("ROCMDOCTOR_FUZZ_EXAMPLES", "0") or 0)
PARSER_EXAMPLES = FULL or 25
SNAPSHOT_EXAMPLES = FULL * 2 // 5 or 6

settings.register_profile(
    "fuzz", deadline=None, derandomize=not FULL, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example],
)
FUZZ = settings(settings.get_profile("fuzz"), max_examples=PARSER_EXAMPLES)
FUZZ_SNAPSHOTS = settings(settings.get_profile("fuzz"), max_examples=SNAPSHOT_EXAMPLES)

# --- nasty values ---------------------------------------------------------------------------
# Python's int() refuses more than 4,300 digits (ValueError); float() gives inf for 1e999;
# str.isdigit() is true for superscripts that int() refuses; int() takes fullwidth digits.
NASTY_NUMBERS = [
    "9" * 4301, "1" + "0" * 5000, "-" + "7" * 4400, "0x" + "f" * 5000, "1e999", "-1e999",
    "1e309", "1E400", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e-400", "²", "³³",
    "１２", "٣", "𝟗", "4294967296", "18446744073709551616", "-1", "-0", "0", "00", "0.",
    ".5", "1_000", "0b101", "0o17", "+5", "5.5.5", "", " ", "1,5", "99999999999999999999",
]
NASTY_TEXT = ["\x00", "\ufffd", "\r", "\r\n", "\t", "\u2028", "\x1b[31m",
              ":", "=", ",", ";", "|", "\"", "'", "[", "]", "{", "}", "(", ")", "0x", "gfx",
              "GPU", "N/A", "[N/A]", "MiB", "%", "\\", "/"]
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _pos(draw: st.DrawFn, text: str) -> int:
    return draw(st.integers(0, len(text)))


def _replace_number(draw: st.DrawFn, text: str) -> str:
    found = list(NUMBER.finditer(text[:200_000]))
    if not found:
        return text + draw(st.sampled_from(NASTY_NUMBERS))
    m = found[draw(st.integers(0, len(found) - 1))]
    return text[:m.start()] + draw(st.sampled_from(NASTY_NUMBERS)) + text[m.end():]


def _cut(draw: st.DrawFn, text: str) -> str:
    return text[:_pos(draw, text)]


def _delete(draw: st.DrawFn, text: str) -> str:
    a = _pos(draw, text)
    return text[:a] + text[a + draw(st.integers(0, 200)):]


def _insert(draw: st.DrawFn, text: str) -> str:
    a = _pos(draw, text)
    junk = draw(st.one_of(st.text(max_size=40), st.sampled_from(NASTY_TEXT + NASTY_NUMBERS)))
    return text[:a] + junk + text[a:]


def _lines(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    i = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["double", "drop", "swap", "strip"]))
    if op == "double":
        lines.insert(i, lines[i])
    elif op == "drop":
        del lines[i]
    elif op == "swap":
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines[i] = lines[i].strip()
    return "".join(lines)


MUTATIONS = [_replace_number, _replace_number, _cut, _delete, _insert, _lines]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    return text


def inputs(seeds: list[str]) -> st.SearchStrategy[str]:
    tokens = st.lists(st.sampled_from(NASTY_TEXT + NASTY_NUMBERS + [" ", "\n"]), max_size=30)
    return st.one_of(st.text(max_size=500), tokens.map("".join), mutated(seeds))


def seeds(*prefixes: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The real captures whose names start with one of `prefixes`, without their headers."""
    names = sorted(p.name for p in REAL.iterdir() if p.is_file() and p.name.startswith(prefixes))
    return [fixture_text(n) for n in names] + list(extra)


def pastes() -> list[str]:
    """The real error pastes `explain` is tested on (tests/fixtures/real/errors)."""
    return [fixture_text(f"errors/{p.name}") for p in sorted((REAL / "errors").iterdir())
            if p.is_file() and p.suffix == ".txt"]


# --- every text parser ----------------------------------------------------------------------
# name -> (call, seed captures). A call takes one text and may return anything but raise.
GPUS = amd_gpus.gpus_from_report(rocminfo.parse_rocminfo(
    fixture_text("rocminfo-gfx942-mi300x-x4-epyc9474f.txt")))
KNOWN = option_names(MODERN)
KERNELS = seeds("dmesg", "journalctl", "syslog", "errors-dmesg")
ROCMINFO = seeds("rocminfo", "wsl-rocminfo", "container-rocminfo", "podman", "docker-run")
VERSIONS = ["2.5.1+rocm6.2", "6.2.41133-dd7f95766", "6.16.6", "570.144", "12.4", "gfx90a",
            "gfx1100:sramecc+:xnack-", "10.3.0", "0xffffffff", "sm_90", "auto", "1"]
ALLOC = ["expandable_segments:True,max_split_size_mb:512",
         "garbage_collection_threshold:0.8,roundup_power2_divisions:[256:1,>:4]",
         "max_split_size_mb=1e999", "backend:native,pinned_use_cuda_host_register:True"]


def _output_pattern(text: str) -> Any:
    """A usage check: an unknown %-sequence is its one documented ValueError."""
    try:
        return machine.expand_output_pattern(text, {"SLURMD_NODENAME": text[:8]}, "node")
    except ValueError as exc:
        assert "unknown pattern" in str(exc)
        return None


def _explain(text: str) -> Any:
    from rocmdoctor.explain import diagnose, explain_text, render_explanations

    render_explanations(explain_text(text))
    return diagnose(text)


def _checks_parsers() -> dict[str, Callable[[str], Any]]:
    from rocmdoctor.checks import (
        kernel_version,
        kfd_access,
        torch_arch_support,
        torch_rocm_match,
        torchvision_match,
        visible_devices,
    )
    return {
        "checks.kernel_version.parse_kernel_release": kernel_version.parse_kernel_release,
        "checks.kfd_access.parse_etc_group": kfd_access.parse_etc_group,
        "checks.visible_devices.nvidia_gpus": visible_devices.nvidia_gpus,
        "checks.torch_rocm_match.wheel_rocm": torch_rocm_match.wheel_rocm,
        "checks.torchvision_match.variant": torchvision_match.variant,
        "checks.torchvision_match.is_official": torchvision_match.is_official,
        "checks.torchvision_match.variants_clash": lambda t: torchvision_match.variants_clash(
            t, t[::-1]),
        "checks.torch_arch_support.cuda_support": lambda t: torch_arch_support.cuda_support(
            t, t.split()),
    }


PARSERS: dict[str, tuple[Callable[[str], Any], list[str]]] = {
    "facts.boot.parse_cmdline": (boot.parse_cmdline, seeds("proc-version")),
    "facts.boot.parse_modprobe_conf": (lambda t: boot.parse_modprobe_conf("/etc/x.conf", t),
                                       ["options amdgpu ppfeaturemask=0xffffffff\nblacklist "
                                        "amdgpu\ninstall amdgpu /bin/false\n"]),
    "facts.torch.release_of": (torch_facts.release_of, VERSIONS),
    "facts.torch.build_of_version": (torch_facts.build_of_version, VERSIONS),
    "facts.torch.torch_info_of": (lambda t: torch_facts.torch_info_of(_json_or_text(t)),
                                  [json.dumps({"torch": {"imported": True, "devices": [
                                      {"index": 0, "total_memory": 1}], "version": "2.5.1"},
                                      "cpu_count": 8, "probe": {"returncode": 0}})]),
    "facts.collect_env.rocminfo_summary": (collect_env.rocminfo_summary, ROCMINFO),
    "facts.rocm_version.parse_version_file": (rocm_version.parse_version_file,
                                              seeds("rocm-info-version")),
    "facts.rocm_version.parse_version_header": (
        rocm_version.parse_version_header,
        ["#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 2\n"
         "#define ROCM_VERSION_PATCH 1\n"]),
    "facts.amd_gpus.parse_kfd_properties": (
        amd_gpus.parse_kfd_properties,
        ["cpu_cores_count 0\nsimd_count 304\ngfx_target_version 90402\nvendor_id 4098\n"
         "device_id 29857\nlocation_id 1280\ndomain 0\nunique_id 1234567890\n"]),
    "facts.amd_gpus.select": (lambda t: amd_gpus.select("HIP_VISIBLE_DEVICES", t, GPUS),
                              ["0,1", "GPU-1234abcd", "-1", "3,2,0"]),
    "facts.amd_gpus.hip_selection": (
        lambda t: amd_gpus.hip_selection({"HIP_VISIBLE_DEVICES": t,
                                          "ROCR_VISIBLE_DEVICES": t[::-1]}, GPUS),
        ["0,1", "1", "GPU-abc"]),
    "facts.amd_gpus.override_for_node": (
        lambda t: amd_gpus.override_for_node({"HSA_OVERRIDE_GFX_VERSION": t,
                                              "HSA_OVERRIDE_GFX_VERSION_" + t[:5]: t}, 1),
        ["10.3.0", "11.0.0"]),
    "facts.cpu.parse_cpuinfo": (cpu.parse_cpuinfo, ["processor\t: 0\nmodel name\t: AMD EPYC\n"
                                                    "cpu cores\t: 48\nsiblings\t: 96\n"]),
    "facts.rocminfo.parse_rocminfo": (rocminfo.parse_rocminfo, ROCMINFO),
    "facts.rocminfo.rocminfo_section": (rocminfo.rocminfo_section, ROCMINFO),
    "facts.amdgpu_firmware.parse_firmware_info": (amdgpu_firmware.parse_firmware_info,
                                                  seeds("debugfs")),
    "facts.amdgpu_firmware.parse_package_list": (
        amdgpu_firmware.parse_package_list,
        ["ii  linux-firmware  20240318.git3b128b60-0ubuntu2.10  all  Firmware\n"]),
    "facts.nvidia_smi_q.parse_nvidia_smi_q": (nvidia_smi_q.parse_nvidia_smi_q,
                                              seeds("nvidia-smi-q")),
    "facts.amd_smi.parse_amd_smi_json": (amd_smi.parse_amd_smi_json, seeds("amd-smi")),
    "facts.amd_smi.number": (amd_smi.number, VERSIONS + ["1024 MB", "N/A", "42"]),
    "render.machine.short_hostname": (machine.short_hostname, ["gpu-node-07.example.org"]),
    "render.machine.expand_output_pattern": (_output_pattern, ["out/%N.json", "%h-100%%.txt"]),
    "facts.os_release.parse_os_release": (
        lambda t: os_release.os_release_from(os_release.parse_os_release(t)),
        ['NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n']),
    "facts.amdgpu_module.parse_proc_modules": (
        amdgpu_module.parse_proc_modules,
        ["amdgpu 15241216 0 - Live 0x0000000000000000\ndrm 741376 1 amdgpu, Live 0x0\n"]),
    "facts.amdgpu_module.parse_dkms_status": (amdgpu_module.parse_dkms_status,
                                              seeds("dkms", "proc-version")),
    "facts.amdgpu_module.parse_make_log": (
        lambda t: amdgpu_module.parse_make_log("/var/lib/dkms/amdgpu/6.16.6/build/make.log", t),
        seeds("amdgpu-install", "apt-amdgpu")),
    "facts.alloc_conf.parse_alloc_conf": (
        lambda t: (alloc_conf.parse_alloc_conf(t), alloc_conf.parse_alloc_conf(t, LEGACY),
                   alloc_conf.parse_alloc_conf(t, MODERN, "cuda")), ALLOC),
    "facts.alloc_conf.tokenize": (lambda t: (alloc_conf.tokenize(t),
                                             alloc_conf.tokenize(t, LEGACY)), ALLOC),
    "facts.alloc_conf.split_items": (alloc_conf.split_items, ALLOC),
    "facts.alloc_conf.repair": (
        lambda t: (alloc_conf.repair(t, MODERN, "rocm", KNOWN),
                   alloc_conf.repair(t, LEGACY, "cuda", option_names(LEGACY))), ALLOC),
    "facts.nvidia_gpus.parse_query_gpu": (
        nvidia_gpus.parse_query_gpu,
        ["0, NVIDIA H200, 580.159.04, 9.0, Enabled, 700.00, 700.00, 143771, GPU-1a2b, "
         "00000000:00:05.0\n", "0, NVIDIA A100, 555.42, 8.0, Disabled, [N/A], [N/A], 1e309,"
                               " GPU-x, 0000:3b:00.0\n"]),
    "facts.pci.parse_speed": (pci.parse_speed, ["16.0 GT/s PCIe", "32.0 GT/s", "Unknown"]),
    "facts.pci.parse_width": (pci.parse_width, ["16", "8", "x16"]),
    "facts.pci.parse_lspci_nn": (pci.parse_lspci_nn, seeds("lspci", "session-lspci")),
    "facts.secure_boot.parse_sb_state": (secure_boot.parse_sb_state, seeds("mokutil")),
    "facts.secure_boot.parse_efi_var": (secure_boot.parse_efi_var, ["\x06\x00\x00\x00\x01"]),
    "facts.secure_boot.parse_lockdown": (secure_boot.parse_lockdown,
                                         ["none [integrity] confidentiality\n"]),
    "facts.topology.parse_nvidia_topo": (topology.parse_nvidia_topo, seeds("nvidia-smi-topo")),
    "facts.topology.parse_amd_smi_topology": (topology.parse_amd_smi_topology,
                                              seeds("amd-smi-topology")),
    "facts.topology.parse_rocm_showtopo": (topology.parse_rocm_showtopo, seeds("rocm-smi")),
    "facts.topology.nvidia_link": (topology.nvidia_link, ["NV18", "PIX", "SYS", "NV1"]),
    "facts.kernel_log.parse_kernel_log": (
        lambda t: kernel_log.known_causes(kernel_log.parse_kernel_log(t)), KERNELS),
    "kb.gfx.parse_override": (lambda t: (gfx.parse_override(t), gfx.override_value_target(t)),
                              ["10.3.0", "11.0.0", "9.4.2"]),
    "kb.gfx.target_info": (lambda t: (gfx.target_info(t), gfx.family_of(t), gfx.isa_group(t),
                                      gfx.is_apu(t), gfx.base_target(t), gfx.override_for(t)),
                           VERSIONS),
    "kb.perf_levels.lookup": (perf_levels.lookup, ["auto", "high", "manual", "profile_peak"]),
    "kb.driver_support.version_numbers": (driver_support.version_numbers, VERSIONS),
    "kb.driver_support.kmd_verdict": (
        lambda t: (driver_support.kmd_verdict(t, t[::-1]), driver_support.module_release(t),
                   driver_support.module_newer_than_known(t), driver_support.driver_of_rocm(t)),
        VERSIONS),
    "kb.rocminfo_failures.diagnose": (rocminfo_failures.diagnose, ROCMINFO),
    "kb.cuda_driver.driver_at_least": (
        lambda t: (cuda_driver.driver_at_least(t, "525.60.13"), cuda_driver.ga_driver(t),
                   cuda_driver.cuda_newer_than_table(t), cuda_driver.minor_compat_driver(t),
                   cuda_driver.newest_cuda_for_driver(t, ("12.4", "11.8"))), VERSIONS),
    "kb.ppfeatures.parse_mask": (ppfeatures.parse_mask, ["0xffffffff", "0xfff7bfff", "4294967295"]),
    "kb.peaks.peak_for": (lambda t: (peaks.peak_for(t, "bf16"), peaks.peak_for("NVIDIA H200", t)),
                          ["NVIDIA H200", "AMD Instinct MI300X", "Radeon RX 7900 XTX"]),
    "kb.debug_vars.level": (debug_vars.level, ["1", "0x3", "4", "info"]),
    "kb.torch_wheels.version_tuple": (
        lambda t: (torch_wheels.version_tuple(t), torch_wheels.split_local(t),
                   torch_wheels.wheel_release(t), torch_wheels.expected_torchvision_minor(t),
                   torch_wheels.torch_for_torchvision(t), torch_wheels.torch_newer_than_known(t),
                   torch_wheels.rocm_index_for(t)), VERSIONS),
    "kb.rocm_support.release_for": (
        lambda t: (rocm_support.release_for(t), rocm_support.newer_than_known(t),
                   rocm_support.version_matches(t, "22.04"), rocm_support.version_key(t)),
        VERSIONS),
    "kb.hip_builds.rocm_of_hip": (lambda t: (hip_builds.hip_build(t), hip_builds.rocm_of_hip(t)),
                                  VERSIONS),
    "kb.nccl_env.risky_settings": (
        lambda t: nccl_env.risky_settings({"NCCL_MAX_NCHANNELS": t, "NCCL_P2P_DISABLE": t,
                                           "NCCL_IB_DISABLE": t, "NCCL_DEBUG": t}), ["1", "4"]),
    "kb.links.gpu_links": (links.gpu_links, ["NVIDIA H200", "AMD Instinct MI300X"]),
    "explain.explain_text": (_explain, pastes() + seeds("errors", "import", "miopen", "ld-",
                                                        "dmesg-amd", "wsl-torch", "hipconfig")),
    **{name: (call, seeds("errors", "import", "rocminfo-fail", "uv-pip", "k8s", "proc-"))
       for name, call in _checks_parsers().items()},
}


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_takes_any_text(name: str) -> None:
    call, seed_texts = PARSERS[name]
    assert seed_texts, f"{name} has no seed capture"

    @FUZZ
    @given(inputs(seed_texts))
    def fuzz(text: str) -> None:
        call(text)

    fuzz()


# --- whole snapshots through check and report -----------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures"


def _snapshot_seeds() -> list[dict[str, Any]]:
    from tests.test_report import MACHINES

    found = [json.loads(gzip.decompress((FIXTURES / n).read_bytes()))
             for n in ("h200-snapshot.json.gz", "h200x2-snapshot.json.gz")]
    return found + [make() for _, make in sorted(MACHINES.items())]


SNAPSHOT_SEEDS = _snapshot_seeds()
JSON_VALUES = st.one_of(
    st.sampled_from([0, -1, 1, 10**30, 1.5, float("inf"), float("nan"), "", "abc", "0660",
                     None, True, False, [], {}, [1, "x"], {"a": 1}, "9" * 4400, "1e999"]),
    st.text(max_size=30),
)


def _walk(draw: st.DrawFn, node: Any) -> tuple[Any, Any]:
    """A container somewhere in the tree and one of its keys (or indices)."""
    parent, key = None, None
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)) > 0:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, keys[draw(st.integers(0, len(keys) - 1))]
        node = node[key]
    return parent, key


@st.composite
def mutated_snapshot(draw: st.DrawFn) -> bytes:
    data = copy.deepcopy(draw(st.sampled_from(SNAPSHOT_SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        parent, key = _walk(draw, data)
        if parent is None:
            parent, key = data, draw(st.sampled_from(sorted(data)))
        op = draw(st.sampled_from(["type", "drop", "add", "text", "text", "text"]))
        if op == "drop" and isinstance(parent, dict):
            parent.pop(key, None)
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=20))] = draw(JSON_VALUES)
        elif op == "text" and isinstance(parent[key], str):
            parent[key] = draw(st.sampled_from(MUTATIONS))(draw, parent[key])
        else:
            parent[key] = draw(JSON_VALUES)
    raw = json.dumps(data, allow_nan=True).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # the file cut short
        raw = raw[:draw(st.integers(0, len(raw)))]
    return gzip.compress(raw, compresslevel=1) if draw(st.booleans()) else raw


CRASHED = re.compile(r"the check crashed|did not finish within")


def _replay(path: str) -> int:
    """`check --json` and `report` (Markdown and JSON) on the file; check's exit code."""
    from rocmdoctor.cli.app import app

    check = CliRunner().invoke(app, ["check", "--json", "--from", path])
    _answered(check)
    if check.exit_code != 2:
        results = json.loads(check.stdout)["checks"]
        crashed = [f"{r['id']}: {r['summary']}" for r in results
                   if CRASHED.search(r.get("summary") or "")]
        assert not crashed, crashed
    for fmt in ("markdown", "json"):
        _answered(CliRunner().invoke(app, ["report", "--format", fmt, "--from", path]))
    return int(check.exit_code)


def _answered(result: Any) -> None:
    """Results (exit 0/1) or one clean error line (exit 2); never an exception."""
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("rocmdoctor: error: "), result.stderr


@FUZZ_SNAPSHOTS
@given(mutated_snapshot())
def test_mutated_snapshots_give_results_or_one_clean_error(raw: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="rocmdoctor-fuzz-") as folder:
        path = os.path.join(folder, "snap.json")
        Path(path).write_bytes(raw)
        _replay(path)


def test_the_seed_snapshots_replay_cleanly() -> None:
    """Every seed, unmutated, is a valid snapshot that replays with results."""
    with tempfile.TemporaryDirectory(prefix="rocmdoctor-fuzz-") as folder:
        for i, data in enumerate(SNAPSHOT_SEEDS):
            path = os.path.join(folder, f"seed{i}.json")
            Path(path).write_text(json.dumps(data))
            assert _replay(path) in (0, 1), i
