"""The measured run of `check --deep`: the deep child (host/deep_child.py) run once per host,
its result parsed (facts/deep_results.py), and why it failed when it did.

The command is `rocmdoctor-deep [--stress SECONDS]`: LiveHost runs deep_child.py for that
name in the Python that trains; a snapshot records it under that key, so a recorded GPU run
replays anywhere (`rocmdoctor snapshot --deep`, then `check --from FILE --deep`).

By hand: the figures each check prints say what was measured; `nvidia-smi -q -d
PERFORMANCE,CLOCK,POWER` or `amd-smi metric` show the telemetry while a job runs.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from typing import Any, Optional

from rocmdoctor import schemas
from rocmdoctor.facts.deep_results import GpuDeep, Peer, num, parse_gpu, parse_peers
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.host.deep import DEEP_TOOL, partial_of

QUICK_S_PER_GPU = 60.0  # about 30 s a GPU on an H200; twice that before it is called hung
START_S = 90.0  # importing torch and starting the GPU runtime


@dataclass(frozen=True)
class DeepRun:
    recorded: bool  # False: a snapshot without a deep run
    error: Optional[str]  # why no result came back
    stage: Optional[str]
    level: str
    stress_s: float
    interrupted: bool
    torch: Optional[str]
    backend: Optional[str]
    blas: Optional[str]
    env: dict[str, str]
    gpus: tuple[GpuDeep, ...]
    peers: tuple[Peer, ...]
    errors: tuple[str, ...]
    elapsed_s: Optional[float]

    def gpu(self, index: int) -> Optional[GpuDeep]:
        return next((g for g in self.gpus if g.index == index), None)


def bus_of(host: Host, gpu: GpuDeep, count: int) -> Optional[str]:
    """The GPU's PCI address: the child's (from torch), else, on NVIDIA, nvidia-smi's for the
    GPU of the same UUID (or the only GPU), as "0000:01:00.0"."""
    if gpu.bus_id:
        return gpu.bus_id.lower()
    if gpu.vendor != "nvidia":
        return None
    from rocmdoctor.facts.nvidia_gpus import nvidia_gpus

    smi = nvidia_gpus(host).gpus
    uid = (gpu.uuid or "").removeprefix("GPU-")
    match = next((g for g in smi if uid and (g.uuid or "").removeprefix("GPU-") == uid), None)
    if match is None and count == 1 and len(smi) == 1:
        match = smi[0]
    bus = match.pci_bus_id if match else None
    return bus[-12:].lower() if bus and len(bus) >= 12 else None


def deep_argv(stress_s: float = 0.0) -> list[str]:
    return [DEEP_TOOL] + (["--stress", f"{stress_s:g}"] if stress_s > 0 else [])


def testing_cpu(host: Host) -> bool:
    """The test suite's CPU devices (ROCMDOCTOR_TESTING=1 ROCMDOCTOR_DEEP_CPU=N)."""
    return host.env.get("ROCMDOCTOR_TESTING") == "1" and host.env.get(
        "ROCMDOCTOR_DEEP_CPU", "").isdigit()


def no_gpu_reason(host: Host) -> Optional[str]:
    """Why there is nothing to measure here, or None when torch sees a GPU."""
    if testing_cpu(host):
        return None
    torch = torch_info(host)
    if not torch.probed:
        return "the Python/PyTorch probe was not run"
    if not torch.imported:
        return "torch does not import in the Python that trains"
    if not torch.available or not torch.device_count:
        return f"no GPU here (torch {torch.version or '?'} sees none): nothing to measure"
    return None


NOT_RECORDED = ("no measured run recorded here (take the snapshot with `rocmdoctor snapshot "
                "--deep`)")


def skip_reason(host: Host) -> Optional[str]:
    """Why a measured check does not apply: no GPU, or a snapshot without a measured run."""
    reason = no_gpu_reason(host)
    if reason is not None:
        return reason
    return None if deep_run(host).recorded else NOT_RECORDED


def timeout_for(host: Host, stress_s: float) -> float:
    count = int(host.env.get("ROCMDOCTOR_DEEP_CPU", "0") or 0) if testing_cpu(host) else (
        torch_info(host).device_count or 1)
    limit = host.env.get("ROCMDOCTOR_DEEP_TIMEOUT", "") if host.env.get(
        "ROCMDOCTOR_TESTING") == "1" else ""
    if limit.replace(".", "", 1).isdigit():
        return float(limit)
    return START_S + QUICK_S_PER_GPU * max(count, 1) + stress_s * 1.1 + 30


def _failure(returncode: int, timed_out: bool, stderr: str, timeout: float) -> tuple[str, str]:
    """(why the child gave no result, the stage it was in)."""
    stage, label = "start", "before reporting anything"
    for line in reversed(stderr.splitlines()):
        value = partial_of(line)
        if value is not None:
            stage = str(value.get("stage") or stage)
            label = str(value.get("label") or stage)
            break
    last = next((ln.strip() for ln in reversed(stderr.splitlines())
                 if ln.strip() and partial_of(ln) is None), "")
    if timed_out:
        why = f"the measurements did not finish within {timeout:g} s (while {label})"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        why = f"the measuring process was killed by {name} while {label}"
    elif returncode in (126, 127):
        why = f"the measuring process could not start: {last or 'no such interpreter'}"
    else:
        why = f"the measuring process exited with status {returncode} while {label}" + (
            f": {last[:300]}" if last else "")
    return why, stage


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def parse_run(data: Any) -> DeepRun:
    d = data if isinstance(data, dict) else {}
    raw_env = d.get("env")
    env: dict[Any, Any] = raw_env if isinstance(raw_env, dict) else {}
    return DeepRun(
        recorded=True, error=None, stage=str(d.get("stage") or "done"),
        level=str(d.get("level") or "quick"),
        stress_s=num(d.get("stress_s")) or 0.0,
        interrupted=d.get("interrupted") is True,
        torch=d.get("torch") if isinstance(d.get("torch"), str) else None,
        backend=d.get("backend") if isinstance(d.get("backend"), str) else None,
        blas=d.get("blas") if isinstance(d.get("blas"), str) else None,
        env={str(k): str(v) for k, v in env.items()},
        gpus=tuple(parse_gpu(g, i) for i, g in enumerate(_list(d.get("gpus")))
                   if isinstance(g, dict)),
        peers=parse_peers(d.get("p2p")),
        errors=tuple(e for e in _list(d.get("errors")) if isinstance(e, str)),
        elapsed_s=num(d.get("elapsed_s")))


def _empty(recorded: bool, error: Optional[str], stage: Optional[str] = None) -> DeepRun:
    return DeepRun(recorded, error, stage, "quick", 0.0, False, None, None, None, {}, (), (),
                   (), None)


def deep_run(host: Host) -> DeepRun:
    """The measured run (memoised): the child's result, or the reason there is none. Its
    stress loop lasts host.deep_stress_s (0: the quick level)."""
    stress_s = host.deep_stress_s

    def compute() -> DeepRun:
        timeout = timeout_for(host, stress_s)
        done = host.run(deep_argv(stress_s), timeout=timeout)
        if done.not_found:
            return _empty(False, None)
        for line in reversed(done.stdout.strip().splitlines()):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("schema") == schemas.DEEP:
                return parse_run(data)
        why, stage = _failure(done.returncode, done.timed_out, done.stderr, timeout)
        return _empty(True, why, stage)

    return host.memo(f"deep:run:{stress_s:g}", compute)
