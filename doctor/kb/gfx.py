"""AMD GPU targets (gfx): family, product examples, APU or not, native ROCm support per
release, and the HSA_OVERRIDE_GFX_VERSION values reported to work, each with its source.

Sources:
- LLVM_PROCESSORS: the AMDGPU processor table (dGPU/APU column, example products) and the
  generic processor table, whose families group the targets that share one instruction set
  (code built for one member runs on the others).
- ROCM_MATRIX / ROCM_MATRIX_PAST: the GPU / LLVM target rows of the ROCm compatibility
  matrix; for the 7.9-7.13 technology previews and the TheRock releases from 7.14 on, the
  "AMD hardware support" table of each release's notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

LLVM_PROCESSORS = "https://llvm.org/docs/AMDGPUUsage.html#processors"
LLVM_GENERIC = "https://llvm.org/docs/AMDGPUUsage.html#amdgpu-generic-processor-table"
ROCM_MATRIX = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"
ROCM_MATRIX_PAST = (
    "https://github.com/ROCm/ROCm/blob/develop/docs/compatibility/"
    "compatibility-matrix-historical-6.0.csv"
)
# libhsakmt parses the override as "%u.%u.%u" (major <= 63, minor and stepping <= 255) and
# fails topology discovery, so every HSA application, on any other value.
THEROCK_TARGETS = ("https://github.com/ROCm/TheRock/blob/main/cmake/"
                   "therock_amdgpu_targets.cmake")
HSAKMT_TOPOLOGY = (
    "https://github.com/ROCm/rocm-systems/blob/develop/projects/rocr-runtime/libhsakmt/src/"
    "topology.c"
)


@dataclass(frozen=True)
class GfxTarget:
    gfx: str
    family: str  # marketing architecture: "RDNA3", "CDNA3", "GCN5 (Vega)" ...
    isa_group: str  # LLVM generic family, or the target itself when it has none
    apu: bool  # integrated GPU (LLVM table "APU" column)
    products: str
    source: str = LLVM_PROCESSORS


def _t(gfx: str, family: str, group: str, apu: bool, products: str) -> GfxTarget:
    return GfxTarget(gfx, family, group, apu, products)


# isa_group: LLVM's generic processors gfx9-generic, gfx9-4-generic (gfx942 and gfx950; an
# older revision of the table also lists gfx940 and gfx941), gfx10-1-generic,
# gfx10-3-generic, gfx11-generic, gfx12-generic and gfx12-5-generic (LLVM_GENERIC). gfx908 and
# gfx90a belong to none.
GFX_TARGETS: dict[str, GfxTarget] = {t.gfx: t for t in (
    _t("gfx801", "GCN3 (Carrizo)", "gfx801", True, "A10-8700P, FX-8800P APUs"),
    _t("gfx803", "GCN4 (Polaris/Fiji)", "gfx803", False,
       "Radeon RX 470/480/460, R9 Fury/Nano, Instinct MI6/MI8"),
    _t("gfx900", "GCN5 (Vega)", "gfx9", False, "Radeon RX Vega 56/64, Instinct MI25"),
    _t("gfx902", "GCN5 (Vega)", "gfx9", True, "Ryzen 2200G/2400G, Ryzen 2000U Vega graphics"),
    _t("gfx904", "GCN5 (Vega)", "gfx9", False, "Vega 12"),
    _t("gfx906", "GCN5 (Vega 7nm)", "gfx9", False,
       "Instinct MI50/MI60, Radeon VII, Radeon Pro VII"),
    _t("gfx908", "CDNA1", "gfx908", False, "Instinct MI100"),
    _t("gfx909", "GCN5 (Vega)", "gfx9", True, "Raven 2 APU graphics"),
    _t("gfx90a", "CDNA2", "gfx90a", False, "Instinct MI210/MI250/MI250X"),
    _t("gfx90c", "GCN5 (Vega)", "gfx9", True,
       "Ryzen 4000/5000 APU graphics (Renoir, Cezanne)"),
    _t("gfx940", "CDNA3", "gfx9-4", False, "Instinct MI300 (early)"),
    _t("gfx941", "CDNA3", "gfx9-4", False, "Instinct MI300 (early)"),
    _t("gfx942", "CDNA3", "gfx9-4", False, "Instinct MI300X/MI300A/MI325X"),
    _t("gfx950", "CDNA4", "gfx9-4", False, "Instinct MI350X/MI355X"),
    _t("gfx1010", "RDNA1", "gfx10-1", False, "Radeon RX 5700/5700 XT, Pro 5600M"),
    _t("gfx1011", "RDNA1", "gfx10-1", False, "Radeon Pro V520"),
    _t("gfx1012", "RDNA1", "gfx10-1", False, "Radeon RX 5500/5500 XT"),
    _t("gfx1013", "RDNA1", "gfx10-1", True, "APU graphics (Cyan Skillfish)"),
    _t("gfx1030", "RDNA2", "gfx10-3", False,
       "Radeon RX 6800/6800 XT/6900 XT/6950 XT, PRO W6800, V620"),
    _t("gfx1031", "RDNA2", "gfx10-3", False, "Radeon RX 6700 XT/6750 XT/6800M"),
    _t("gfx1032", "RDNA2", "gfx10-3", False, "Radeon RX 6600/6600 XT/6650 XT, PRO W6600"),
    _t("gfx1033", "RDNA2", "gfx10-3", True, "Van Gogh APU graphics (Steam Deck)"),
    _t("gfx1034", "RDNA2", "gfx10-3", False, "Radeon RX 6500 XT/6400"),
    _t("gfx1035", "RDNA2", "gfx10-3", True, "Radeon 680M/660M (Ryzen 6000 APUs)"),
    _t("gfx1036", "RDNA2", "gfx10-3", True,
       "AMD Radeon Graphics of Ryzen 7000/9000 desktop CPUs (Raphael, Granite Ridge)"),
    _t("gfx1100", "RDNA3", "gfx11", False,
       "Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800"),
    _t("gfx1101", "RDNA3", "gfx11", False, "Radeon RX 7800 XT/7700 XT, PRO W7700"),
    _t("gfx1102", "RDNA3", "gfx11", False, "Radeon RX 7600/7600 XT, PRO W7600/W7500"),
    _t("gfx1103", "RDNA3", "gfx11", True, "Radeon 780M/760M/740M (Phoenix, Hawk Point)"),
    _t("gfx1150", "RDNA3.5", "gfx11", True, "Radeon 890M/880M (Strix Point)"),
    _t("gfx1151", "RDNA3.5", "gfx11", True, "Radeon 8060S/8050S (Strix Halo)"),
    _t("gfx1152", "RDNA3.5", "gfx11", True, "Radeon 860M/840M (Krackan Point)"),
    _t("gfx1153", "RDNA3.5", "gfx11", True, "RDNA 3.5 APU graphics"),
    _t("gfx1200", "RDNA4", "gfx12", False, "Radeon RX 9060/9060 XT"),
    _t("gfx1201", "RDNA4", "gfx12", False,
       "Radeon RX 9070/9070 XT/9070 GRE, AI PRO R9700"),
    # Not in the stored LLVM table yet: TheRock builds it ("AMD Instinct MI450/MI450X/MI455X
    # CDNA", FAMILY dcgpu-all gfx125X-all); LLVM groups it with gfx1251 in gfx12-5-generic.
    GfxTarget("gfx1250", "CDNA5", "gfx12-5", False, "Instinct MI450/MI450X/MI455X",
              THEROCK_TARGETS),
)}


@dataclass(frozen=True)
class RocmRelease:
    first: tuple[int, int, int]  # first release with this list (inclusive)
    last: tuple[int, int, int]  # last release with this list (inclusive)
    targets: frozenset[str]
    source: str
    preview: bool = False  # a 7.9-7.13 technology-preview release


def _notes(version: str) -> str:
    return f"https://rocm.docs.amd.com/en/docs-{version}/about/release-notes.html"


_BASE_6 = frozenset({"gfx1100", "gfx1030", "gfx942", "gfx90a", "gfx908"})
_RDNA4 = frozenset({"gfx1201", "gfx1200", "gfx1101"})
_P79 = frozenset({"gfx950", "gfx942", "gfx1151"})
# 7.10 adds MI250X/MI250/MI210, W7900/W7800, RX 7900, W7700/RX 7800 XT, Ryzen AI 300 (gfx1150).
_P710 = _P79 | {"gfx90a", "gfx1100", "gfx1101", "gfx1150"}
_P711 = _P710 | {"gfx1201", "gfx1200"}  # "adds support for RDNA 4 and other GPUs"
# 7.12 adds MI100, RX 7600, Ryzen AI 400 (gfx1150, gfx1152) and Ryzen 200 (gfx1103).
_P712 = _P711 | {"gfx908", "gfx1102", "gfx1152", "gfx1103"}
_P713 = _P712 | {"gfx1030"}  # adds MI350P, Radeon PRO W6800/V620, more gfx1152 APUs
# 7.14 adds Ryzen AI 400 parts with gfx1153; 10.0 keeps the list (data/gpus.yaml of AMD's
# documentation, the revision with the RX 9050 that 10.0 added).
_R714 = _P713 | {"gfx1153"}
PRODUCTION_MATRIX_TO = (7, 2, 99)
ROCM_GPUS_YAML = "https://github.com/ROCm/rocm-docs/blob/develop/docs/data/gpus.yaml"

# Official Linux support lists ("GPU / LLVM target" rows; for 7.9 on the release notes'
# hardware tables). Releases outside these ranges are not known here.
ROCM_RELEASES: tuple[RocmRelease, ...] = (
    RocmRelease((6, 0, 0), (6, 3, 99), _BASE_6, ROCM_MATRIX_PAST),
    RocmRelease((6, 4, 0), (6, 4, 0), _BASE_6, ROCM_MATRIX),
    # "ROCm 6.4.1 introduces support for the RDNA4 architecture-based Radeon AI PRO R9700,
    # Radeon RX 9070, ... and Radeon RX 9060 XT" (with the W7700 / RX 7800 XT, gfx1101).
    RocmRelease((6, 4, 1), (6, 4, 99), _BASE_6 | _RDNA4, _notes("6.4.1")),
    RocmRelease((7, 0, 0), (7, 2, 99), _BASE_6 | _RDNA4 | {"gfx950"}, ROCM_MATRIX),
    RocmRelease((7, 9, 0), (7, 9, 99), _P79,
                "https://github.com/ROCm/ROCm/releases/tag/therock-7.9.0", preview=True),
    RocmRelease((7, 10, 0), (7, 10, 99), _P710, _notes("7.10.0"), preview=True),
    RocmRelease((7, 11, 0), (7, 11, 99), _P711, _notes("7.11.0"), preview=True),
    RocmRelease((7, 12, 0), (7, 12, 99), _P712, _notes("7.12.0"), preview=True),
    RocmRelease((7, 13, 0), (7, 13, 99), _P713, _notes("7.13.0"), preview=True),
    RocmRelease((7, 14, 0), (7, 14, 99), _R714, _notes("7.14.0")),
    RocmRelease((10, 0, 0), (10, 0, 99), _R714, ROCM_GPUS_YAML),
    # 10.1.0 "adds support for AMD Radeon AI PRO R9600 GPUs" (no new target named).
    RocmRelease((10, 1, 0), (10, 1, 99), _R714, _notes("10.1.0")),
)


@dataclass(frozen=True)
class HangReport:
    """A thread where a value reported to work hung with a given ROCm or package family."""

    sdk_from: tuple[int, int]  # with the pip-installed ROCm SDK (TheRock) of this release on
    families: tuple[str, ...]  # or with these per-family packages (pip's lower-case names)
    note: str
    source: str


@dataclass(frozen=True)
class OverrideRule:
    """An HSA_OVERRIDE_GFX_VERSION value reported for a real target, and whether it works."""

    value: str  # "10.3.0"
    target: str  # the target the value makes the runtime report: "gfx1030"
    source: str
    note: str
    works: bool = True
    hangs: tuple[HangReport, ...] = ()


_ROCM_2353 = "https://github.com/ROCm/ROCm/issues/2353"
_ROCM_1756 = "https://github.com/ROCm/ROCm/issues/1756"
_ROCM_2216 = "https://github.com/ROCm/ROCm/issues/2216"
_OLLAMA_GPU = "https://github.com/ollama/ollama/blob/main/docs/gpu.md"
# An AMD engineer (schung-amd, 2025-04-07): "there are some issues on gfx1102 and gfx1103 when
# overriding to gfx1100 or gfx1101. Although the ISA is compatible, these architectures have
# less VGPRs ... if you override a gfx1103 card to gfx1100 some workloads may invoke a kernel
# which requires more VGPRs than are available." (ROCm's tracker, now ROCm/legacy-rocm-build)
_ROCM_4557 = "https://github.com/ROCm/ROCm/issues/4557"
_UNSLOTH_8480 = "https://github.com/unslothai/unsloth/issues/8480"
_LLAMA_CPP_19949 = "https://github.com/ggml-org/llama.cpp/issues/19949"
_ROCBLAS_1398 = "https://github.com/ROCm/rocBLAS/issues/1398"
_ROCBLAS_1331 = "https://github.com/ROCm/rocBLAS/issues/1331"
_LIKELOVEWANT_10 = "https://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/10"
_LIKELOVEWANT_37 = "https://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/37"


def _rdna2(gfx: str, source: str) -> tuple[str, tuple[OverrideRule, ...]]:
    return gfx, (OverrideRule("10.3.0", "gfx1030", source,
                              "runs the gfx1030 (RX 6800/6900) code on this RDNA2 GPU"),)


def _rdna3(gfx: str, source: str, caveat: str = "", hangs: tuple[HangReport, ...] = ()
           ) -> tuple[str, tuple[OverrideRule, ...]]:
    return gfx, (OverrideRule("11.0.0", "gfx1100", source,
                              "runs the gfx1100 (RX 7900) code on this RDNA3 GPU" + caveat,
                              hangs=hangs),)


# TheRock#1184 (Radeon 780M, TheRock pip rocm + torch 7.0.0rc20250803, Fedora 42): "If I try to
# use the variable HSA_OVERRIDE_GFX_VERSION=11.0.0 then the device is recognized but using
# pytorch ... hangs the system"; `rocm-sdk targets` there: gfx1100;gfx1101;gfx1102.
_THEROCK_1184 = "https://github.com/ROCm/TheRock/issues/1184"
_GFX1103_HANGS = (HangReport((7, 0), ("gfx110x-dgpu",),
                             "with TheRock's pip-installed ROCm 7.0 (gfx110X-dgpu packages, "
                             "which ship no gfx1103 code) it was reported to hang the system",
                             _THEROCK_1184),)


# gfx1100, gfx1101 and gfx1151 have the 1536-VGPR register file; the other gfx11 parts 1024.
_FEWER_VGPRS = ("; the instruction set is the same, but {gfx} has fewer registers than "
                "gfx1100, so gfx1100 kernels that need them fail on it (AMD, ROCm#4557)")


# gfx1033/1035/1036: LLVM lists every gfx103x in gfx10-3-generic with "no restrictions",
# so gfx1030 code runs on them unchanged.
OVERRIDE_RULES: dict[str, tuple[OverrideRule, ...]] = dict((
    _rdna2("gfx1031", _ROCM_2353),
    _rdna2("gfx1032", _ROCM_1756),
    _rdna2("gfx1033", LLVM_GENERIC),
    _rdna2("gfx1034", _OLLAMA_GPU),
    _rdna2("gfx1035", LLVM_GENERIC),
    _rdna2("gfx1036", LLVM_GENERIC),
    _rdna3("gfx1101", _LIKELOVEWANT_10),
    _rdna3("gfx1102", _LIKELOVEWANT_10, _FEWER_VGPRS.format(gfx="gfx1102")),
    _rdna3("gfx1103", _ROCM_4557, _FEWER_VGPRS.format(gfx="gfx1103"), _GFX1103_HANGS),
    # LLVM's gfx10-1-generic holds gfx1010-gfx1013 (RDNA1); rocBLAS's maintainer: "gfx1013's
    # ISA is a superset of gfx1010's: HSA_OVERRIDE_GFX_VERSION=10.1.0 will probably work", and
    # for gfx101x in ROCm 5.5 "set HSA_OVERRIDE_GFX_VERSION=10.1.0" (rocBLAS issue 1331). It
    # helps only where the library carries gfx1010 code (ROCm 5's rocBLAS; no ROCm 6 wheel).
    *((gfx, (OverrideRule("10.1.0", "gfx1010", _ROCBLAS_1331,
                          "runs the gfx1010 (RX 5700) code on this RDNA1 GPU, where the "
                          "library carries gfx1010 code (ROCm 5's rocBLAS)"),))
      for gfx in ("gfx1011", "gfx1012", "gfx1013")),
    ("gfx90c", (OverrideRule("9.0.0", "gfx900", _ROCBLAS_1398,
                             "runs the gfx900 (Vega 10) code on this Vega APU"),)),
    ("gfx902", (OverrideRule("9.0.0", "gfx900", _ROCM_2216,
                             "runs the gfx900 (Vega 10) code on this Vega APU; reports are "
                             "mixed ('HIP error: shared object initialization failed' on "
                             "some ROCm 6 installs)"),)),
    ("gfx1150", (OverrideRule("11.0.0", "gfx1100", _LIKELOVEWANT_37,
                              "reported to fail with HSA_STATUS_ERROR_INVALID_ISA on gfx1150; "
                              "use a PyTorch build that includes gfx1150 instead",
                              works=False),)),
    # "The first real allocation runs gfx1100 kernels on gfx1151 silicon and the process dies
    # with SIGSEGV" (unsloth#8480); one pytorch#164346 reporter ran with it. gfx1151 is
    # compiled into the rocm7.2 wheels.
    ("gfx1151", (OverrideRule("11.0.0", "gfx1100", _UNSLOTH_8480,
                              "reported to crash with SIGSEGV at the first allocation on "
                              "gfx1151 (and to run for others); use a PyTorch build that "
                              "includes gfx1151 instead", works=False),)),
    # "If I manually set the HSA override to 11.5.0, models load and run fine." gfx1150 has
    # gfx1152's 1024-VGPR register file (regsPerBlock 131072 for both,
    # https://github.com/ROCm/rocm-libraries/pull/4117), unlike gfx1151 (11.5.1).
    ("gfx1152", (OverrideRule("11.5.0", "gfx1150", _LLAMA_CPP_19949,
                              "runs the gfx1150 (Radeon 890M) code on this RDNA3.5 APU, which "
                              "has the same register file"),)),
))

_GFX_RE = re.compile(r"gfx[0-9a-f]{3,4}", re.IGNORECASE)
_OVERRIDE_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# Families for targets this table does not list yet, by name prefix.
_PREFIX_FAMILY = (("gfx125", "CDNA5", "gfx12-5"), ("gfx120", "RDNA4", "gfx12"),
                  ("gfx115", "RDNA3.5", "gfx11"),
                  ("gfx110", "RDNA3", "gfx11"), ("gfx103", "RDNA2", "gfx10-3"),
                  ("gfx101", "RDNA1", "gfx10-1"))


def base_target(gfx_full: str) -> str:
    """`gfx90a` from `gfx90a:sramecc+:xnack-`, `gfx902+xnack` or `amdgcn-amd-amdhsa--gfx90a`."""
    name = gfx_full.strip().lower()
    if "--" in name:
        name = name.rsplit("--", 1)[1]
    return re.split(r"[:+]", name, maxsplit=1)[0]


def is_gfx_name(name: str) -> bool:
    return _GFX_RE.fullmatch(base_target(name)) is not None


def target_info(gfx: str) -> Optional[GfxTarget]:
    return GFX_TARGETS.get(base_target(gfx))


def family_of(gfx: str) -> Optional[str]:
    """"RDNA2", "RDNA3", "CDNA3" ... or None for a target this table does not know."""
    info = target_info(gfx)
    if info is not None:
        return info.family
    base = base_target(gfx)
    return next((fam for prefix, fam, _ in _PREFIX_FAMILY if base.startswith(prefix)), None)


def isa_group(gfx: str) -> Optional[str]:
    """The family of targets that run each other's code (LLVM generic processor)."""
    info = target_info(gfx)
    if info is not None:
        return info.isa_group
    base = base_target(gfx)
    return next((grp for prefix, _, grp in _PREFIX_FAMILY if base.startswith(prefix)), None)


def is_apu(gfx: str) -> bool:
    info = target_info(gfx)
    return bool(info and info.apu)


def parse_override(value: str) -> Optional[tuple[int, int, int]]:
    """(major, minor, stepping) as libhsakmt accepts it, or None when it would reject it."""
    m = _OVERRIDE_RE.fullmatch(value)
    if m is None:
        return None
    # Leading zeros read as sscanf's %u reads them; a number of more than 3 digits is over
    # every limit below (and int() refuses 4,300+ digits, leading zeros included).
    major, minor, step = (int(d) if len(d) <= 3 else 1000
                          for d in (g.lstrip("0") or "0" for g in m.groups()))
    if major > 63 or minor > 255 or step > 255:
        return None
    return major, minor, step


def target_from_version(major: int, minor: int, stepping: int) -> str:
    """gfx name of a version triple: (9, 0, 10) -> gfx90a, (11, 0, 0) -> gfx1100."""
    return f"gfx{major}{minor:x}{stepping:x}"


def override_value_target(value: str) -> Optional[str]:
    """"11.0.0" -> "gfx1100"; None for a value libhsakmt would reject."""
    parsed = parse_override(value)
    return target_from_version(*parsed) if parsed else None


def kfd_target_version(number: int) -> Optional[str]:
    """gfx name of KFD's gfx_target_version (major*10000 + minor*100 + stepping)."""
    if number <= 0:
        return None
    return target_from_version(number // 10000, (number // 100) % 100, number % 100)


def override_reports(gfx: str) -> tuple[OverrideRule, ...]:
    return OVERRIDE_RULES.get(base_target(gfx), ())


def override_for(gfx: str) -> Optional[OverrideRule]:
    """The override value reported to work for this real target, or None."""
    return next((r for r in override_reports(gfx) if r.works), None)


def rocm_native_targets(version: tuple[int, int, int]) -> Optional[RocmRelease]:
    """The official support list of a ROCm release, or None when this table does not know it."""
    return next((r for r in ROCM_RELEASES if r.first <= version <= r.last), None)


def rocm_newer_than_known(version: tuple[int, int, int]) -> bool:
    return version > max(r.last for r in ROCM_RELEASES)


def first_release_with(gfx: str) -> Optional[RocmRelease]:
    """The first release of AMD's production matrix (6.0 to 7.2) that lists a target, or None.

    Later firsts are left out on purpose: the technology previews and TheRock releases list
    APUs (gfx1103, gfx115x) that AMD's separate Radeon/Ryzen pages may list earlier.
    """
    rows = [r for r in ROCM_RELEASES if base_target(gfx) in r.targets and not r.preview
            and r.first <= PRODUCTION_MATRIX_TO]
    return min(rows, key=lambda r: r.first, default=None)


def release_name(release: RocmRelease) -> str:
    """"6.4.1", or "7.12.0 (technology preview)"."""
    name = ".".join(str(p) for p in release.first)
    return f"{name} (technology preview)" if release.preview else name
