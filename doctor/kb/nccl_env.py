"""NCCL / RCCL environment variables that turn off or force the fast paths between GPUs.

RCCL reads the same NCCL_* names (its reference lists them). Each entry: the variable, the
values that matter, the severity, what it costs, and the document that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
RCCL_ENV = "https://rocm.docs.amd.com/projects/rccl/en/latest/api-reference/env-variables.html"


def _truthy(value: str) -> bool:
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _below(value: str, limit: int) -> bool:
    """A whole decimal number under `limit` (leading zeros allowed, any length)."""
    digits = value.strip()
    if not (digits.isascii() and digits.isdigit()):
        return False
    digits = digits.lstrip("0") or "0"
    return len(digits) <= len(str(limit)) and int(digits) < limit


@dataclass(frozen=True)
class NcclVar:
    name: str
    applies: Callable[[str], bool]  # does this value take a fast path away?
    severity: str  # "warn": slows the GPUs of one machine; "info": matters across machines
    cost: str
    source: str


NCCL_VARS: tuple[NcclVar, ...] = (
    NcclVar("NCCL_P2P_DISABLE", _truthy, "warn",
            "disables direct GPU-to-GPU transfers over NVLink / xGMI / PCIe: traffic goes "
            "through host memory", NCCL_ENV),
    NcclVar("NCCL_P2P_LEVEL", lambda v: v.strip().upper() in ("LOC", "0"), "warn",
            "LOC (or 0) never uses peer-to-peer between GPUs", NCCL_ENV),
    NcclVar("NCCL_SHM_DISABLE", _truthy, "warn",
            "disables the shared-memory transport that GPUs without peer access use; "
            "NCCL falls back to the network stack", NCCL_ENV),
    NcclVar("NCCL_PROTO", lambda v: bool(v.strip()), "warn",
            "forces the protocols NCCL may use; the docs discourage it except to rule out a "
            "suspected protocol bug", NCCL_ENV),
    NcclVar("NCCL_ALGO", lambda v: bool(v.strip()), "warn",
            "forces the collective algorithm instead of NCCL's choice per message size",
            NCCL_ENV),
    NcclVar("NCCL_MAX_NCHANNELS", lambda v: _below(v, 4), "warn",
            "caps the channels (parallel rings / trees) NCCL uses, which caps bandwidth",
            NCCL_ENV),
    NcclVar("NCCL_IB_DISABLE", _truthy, "info",
            "disables InfiniBand / RoCE between machines (sockets instead); no effect "
            "within one machine", NCCL_ENV),
    NcclVar("NCCL_NVLS_ENABLE", lambda v: v.strip() == "0", "info",
            "turns off NVLink SHARP (in-switch reductions on NVSwitch systems); all-reduce "
            "uses the plain NVLink paths", NCCL_ENV),
    NcclVar("NCCL_DEBUG", lambda v: v.strip().upper() in ("INFO", "TRACE"), "info",
            "prints NCCL's log at every communicator setup; harmless for speed once running",
            NCCL_ENV),
)


def risky_settings(env: dict[str, str]) -> list[tuple[NcclVar, str]]:
    """The variables set in `env` that take a fast path away, in table order."""
    return [(var, env[var.name]) for var in NCCL_VARS
            if var.name in env and var.applies(env[var.name])]
