"""Where MIOpen keeps its user databases and kernel cache, and the variables that move them."""

from __future__ import annotations

# User perf/find db: "by default is found in ~/.config/miopen", moved with MIOPEN_USER_DB_PATH.
TUNING_DB = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/conceptual/tuningdb.html"
# Kernel cache: "$HOME/.cache/miopen by default"; MIOPEN_DISABLE_CACHE=true turns it off;
# src/binary_cache.cpp: "If MIOPEN_CUSTOM_CACHE_DIR is set ... use exactly that path".
KERNEL_CACHE = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/cache.html"
USER_DB_VAR = "MIOPEN_USER_DB_PATH"
CACHE_VAR = "MIOPEN_CUSTOM_CACHE_DIR"
DISABLE_CACHE_VAR = "MIOPEN_DISABLE_CACHE"
DEFAULT_USER_DB = ".config/miopen"  # under $HOME
DEFAULT_CACHE = ".cache/miopen"  # under $HOME
# Ranks of one job sharing a db on a network home: ROCm/MIOpen#114 (GPFS, multi-node),
# #1878 (SLURM jobs, "database disk image is malformed"), hpcfund#87 ("disk I/O error");
# per-user folders on node-local /tmp made beforehand: LUMI-AI-Guide PR #108.
SHARED_HOME = "https://github.com/ROCm/MIOpen/issues/114"
LOCAL_EXPORTS = "https://github.com/Lumi-supercomputer/LUMI-AI-Guide/pull/108"
# rocmdoctor's own threshold: below it the kernel cache may fail to grow.
LOW_FREE_BYTES = 1 << 30
