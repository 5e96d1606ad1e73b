"""PyTorch's caching-allocator settings as data: variables, options, and when they are ignored.

Every entry names its source. The parser that mirrors torch's own (`rocmdoctor.facts.alloc_conf`)
reads the option table; the `allocator-config` check reads the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

ALLOC_CONFIG_CPP = "https://github.com/pytorch/pytorch/blob/main/c10/core/AllocatorConfig.cpp"
CUDA_ALLOC_CONFIG_CPP = (
    "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAAllocatorConfig.cpp"
)
# torch <= 2.7 parsed everything in c10/cuda/CUDAAllocatorConfig.cpp with lexArgs/consumeToken.
LEGACY_CONFIG_CPP = (
    "https://github.com/pytorch/pytorch/blob/v2.7.0/c10/cuda/CUDAAllocatorConfig.cpp"
)
LEGACY_CONFIG_H = "https://github.com/pytorch/pytorch/blob/v2.7.0/c10/cuda/CUDAAllocatorConfig.h"
CUDA_NOTES = "https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management"
ACCEL_CONFIG_PR = "https://github.com/pytorch/pytorch/pull/149601"
ALLOC_CONF_IGNORED_ISSUE = "https://github.com/pytorch/pytorch/issues/183387"
ROCM_EXPANDABLE_PR = "https://github.com/pytorch/pytorch/pull/177974"
ROCM_ZEROS_ISSUE = "https://github.com/ROCm/legacy-rocm-build/issues/6603"

ALLOC_CONF = "PYTORCH_ALLOC_CONF"
CUDA_ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
HIP_ALLOC_CONF = "PYTORCH_HIP_ALLOC_CONF"
ALL_VARIABLES = (ALLOC_CONF, CUDA_ALLOC_CONF, HIP_ALLOC_CONF)

Version = tuple[int, ...]


@dataclass(frozen=True)
class Precedence:
    """Which variables a torch release reads, in order; the first one set wins (even empty)."""

    since: Version  # first torch release with this order
    order: tuple[str, ...]  # ROCm builds
    order_cuda: tuple[str, ...]  # CUDA (and CPU) builds
    dialect: str  # "legacy" (lexArgs/consumeToken) or "modern" (ConfigTokenizer)
    deprecated: tuple[str, ...]  # names torch warns about
    source: str


# Newest first. torch 2.13 (the wheel installed here) was checked by hand: with
# PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF both set, CUDA's value wins, and an empty
# PYTORCH_CUDA_ALLOC_CONF still shadows PYTORCH_ALLOC_CONF.
PRECEDENCE: tuple[Precedence, ...] = (
    Precedence((2, 10), (CUDA_ALLOC_CONF, HIP_ALLOC_CONF, ALLOC_CONF),
               (CUDA_ALLOC_CONF, HIP_ALLOC_CONF, ALLOC_CONF), "modern", (), ALLOC_CONFIG_CPP),
    Precedence((2, 8), (ALLOC_CONF, CUDA_ALLOC_CONF, HIP_ALLOC_CONF),
               (ALLOC_CONF, CUDA_ALLOC_CONF, HIP_ALLOC_CONF), "modern",
               (CUDA_ALLOC_CONF, HIP_ALLOC_CONF), ACCEL_CONFIG_PR),
    Precedence((0,), (CUDA_ALLOC_CONF, HIP_ALLOC_CONF), (CUDA_ALLOC_CONF,), "legacy", (),
               LEGACY_CONFIG_H),
)


def precedence_for(torch_version: Optional[Version]) -> Precedence:
    """The precedence rule of a torch release (the newest rule when the version is unknown)."""
    if torch_version is None:
        return PRECEDENCE[0]
    for rule in PRECEDENCE:
        if torch_version >= rule.since:
            return rule
    return PRECEDENCE[-1]


@dataclass(frozen=True)
class AllocOption:
    name: str
    kind: str  # how torch parses the value; rocmdoctor.facts.alloc_conf implements each kind
    scope: str  # "generic": AcceleratorAllocatorConfig; "device": CUDAAllocatorConfig only
    valid: str  # what torch accepts, in words
    effect: str
    source: str
    aliases: tuple[str, ...] = ()
    since: Optional[Version] = None  # None: present in torch 2.13; first release not verified
    legacy: bool = True  # also parsed by the torch <= 2.7 parser
    native_only: bool = False  # ignored by backend:cudaMallocAsync (torch's own warning)


OPTIONS: tuple[AllocOption, ...] = (
    AllocOption("max_split_size_mb", "split_mb", "generic",
                "an integer number of MB, at least large_segment_size_mb (20); > 20 before 2.8",
                "blocks larger than this are never split", ALLOC_CONFIG_CPP, native_only=True),
    AllocOption("max_non_split_rounding_mb", "split_mb", "generic",
                "an integer number of MB, at least large_segment_size_mb (20)",
                "how much larger a cached unsplit block may be than the request",
                ALLOC_CONFIG_CPP),
    AllocOption("large_segment_size_mb", "large_mb", "generic", "an integer number of MB > 10",
                "size of the segments large allocations are packed into (default 20)",
                ALLOC_CONFIG_CPP, legacy=False),
    AllocOption("garbage_collection_threshold", "fraction_open", "generic",
                "a number strictly between 0 and 1",
                "reclaim cached blocks once this fraction of the allowed memory is used",
                ALLOC_CONFIG_CPP, native_only=True),
    AllocOption("roundup_power2_divisions", "divisions", "generic",
                "a power of 2, or a list [256:1,512:2,>:8] of power-of-2 sizes (MB) to "
                "power-of-2 (or 0) divisions",
                "round allocation sizes to 1/N steps between powers of two", ALLOC_CONFIG_CPP,
                native_only=True),
    AllocOption("expandable_segments", "bool", "generic", "exactly True or False",
                "grow one virtual-memory segment instead of allocating new blocks",
                ALLOC_CONFIG_CPP, since=(2, 1)),  # pytorch PR 96995, merged April 2023
    AllocOption("pinned_use_background_threads", "bool", "generic", "exactly True or False",
                "process pinned-memory events on a background thread", ALLOC_CONFIG_CPP),
    AllocOption("pinned_max_round_threshold_mb", "size", "generic", "an integer number of MB",
                "pinned allocations above this are not rounded to a power of two",
                ALLOC_CONFIG_CPP, legacy=False),
    AllocOption("pinned_max_cached_size_mb", "size", "generic", "an integer number of MB",
                "pinned blocks above this are not cached", ALLOC_CONFIG_CPP, legacy=False),
    AllocOption("backend", "backend", "device",
                "native or cudaMallocAsync (ROCm builds also accept hipMallocAsync)",
                "which allocator serves device memory; fixed when the allocator loads",
                CUDA_ALLOC_CONFIG_CPP),
    AllocOption("release_lock_on_cudamalloc", "bool", "device", "exactly True or False",
                "drop the allocator lock around cudaMalloc/hipMalloc", CUDA_ALLOC_CONFIG_CPP,
                aliases=("release_lock_on_hipmalloc",)),
    AllocOption("pinned_use_cuda_host_register", "bool", "device", "exactly True or False",
                "pin host memory with malloc + cudaHostRegister", CUDA_ALLOC_CONFIG_CPP,
                aliases=("pinned_use_hip_host_register",)),
    AllocOption("pinned_num_register_threads", "threads", "device",
                "a power of 2 no larger than 128",
                "threads that page-lock large pinned buffers", CUDA_ALLOC_CONFIG_CPP),
    AllocOption("pinned_reserve_segment_size_mb", "positive", "device",
                "an integer number of MB > 0", "pre-reserve a pinned segment for small buffers",
                CUDA_ALLOC_CONFIG_CPP),
    AllocOption("graph_capture_record_stream_reuse", "bool", "device", "exactly True or False",
                "reuse record_stream blocks during CUDA-graph capture", CUDA_ALLOC_CONFIG_CPP),
    AllocOption("per_process_memory_fraction", "fraction_closed", "device",
                "a number from 0 to 1", "cap this process at a fraction of device memory",
                CUDA_ALLOC_CONFIG_CPP, legacy=False),
    AllocOption("pinned_free_catch_all", "bool", "device", "exactly True or False",
                "pinned-memory free fallback", CUDA_ALLOC_CONFIG_CPP, legacy=False),
    AllocOption("throw_on_cudamalloc_oom", "bool", "device", "exactly True or False",
                "raise out-of-memory before calling cudaMalloc when it would fail",
                CUDA_ALLOC_CONFIG_CPP, legacy=False),
)

ASYNC_BACKENDS = ("cudaMallocAsync", "hipMallocAsync")


def option(name: str) -> Optional[AllocOption]:
    """The option a key names (its main name or an alias), or None when torch has none."""
    for opt in OPTIONS:
        if name == opt.name or name in opt.aliases:
            return opt
    return None


def option_names(dialect: str, torch_version: Optional[Version] = None) -> frozenset[str]:
    """Every key (names and aliases) the parser of a dialect and torch release knows."""
    names: set[str] = set()
    for opt in OPTIONS:
        if dialect == "legacy" and not opt.legacy:
            continue
        if torch_version is not None and opt.since is not None and torch_version < opt.since:
            continue
        names.add(opt.name)
        names.update(opt.aliases)
    return frozenset(names)


# expandable_segments on ROCm: before torch 2.12 (and on builds against ROCm < 7.0) torch warns
# "expandable_segments not supported on this platform" and ignores it: the guard
# `!defined(USE_ROCM) || ROCM_VERSION < 70000` in c10/cuda/CUDAAllocatorConfig.h (torch 2.13
# wheel), set by https://github.com/pytorch/pytorch/pull/179930. AMD's own 2.11 builds carry
# the change too (https://github.com/ROCm/pytorch/pull/3106).
ROCM_EXPANDABLE_TORCH: Version = (2, 12)
ROCM_EXPANDABLE_ROCM: Version = (7, 0)
EXPANDABLE_UNSUPPORTED_WARNING = "expandable_segments not supported on this platform"
ASYNC_IGNORES_WARNING = (
    "backend:cudaMallocAsync ignores max_split_size_mb,roundup_power2_divisions, and "
    "garbage_collect_threshold."
)
# torch 2.8-2.9 read PYTORCH_ALLOC_CONF first, yet 2.9.1 ignored expandable_segments given
# there (reported on CUDA; fixed by 2.11 per the reporter, and 2.10+ reads the CUDA name first).
ALLOC_CONF_IGNORED_RANGE: tuple[Version, Version] = ((2, 8), (2, 10))
