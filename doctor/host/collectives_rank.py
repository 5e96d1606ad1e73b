"""One rank of `rocmdoctor check --collectives`: all-reduce bus bandwidth; or, run alone
afterwards, peer-to-peer copies between every pair of local GPUs.

Started by `collectives.py` with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and joined with `init_method="env://"`, as a
training script under torchrun joins. Standalone: it imports torch and nothing of rocmdoctor,
so it runs in whichever Python trains. Progress and results are JSON lines on stdout:
  {"event": "stage", "stage": "..."}     what the rank is about to do (a hang names it)
  {"event": "info", ...}                  backend, device, NCCL/RCCL version (rank 0)
  {"event": "allreduce", "bytes": n, "time_s": t, "algbw_gbs": a, "busbw_gbs": b}  (rank 0)
  {"event": "done", "correct": bool}
With ROCMDOCTOR_COLL_MODE=p2p, started once after the ranks have exited, it times copies
between every ordered pair of GPUs instead:
  {"event": "p2p", "src": i, "dst": j, "access": bool, "gbs": x}

By hand, the same measurement: nccl-tests' all_reduce_perf (github.com/NVIDIA/nccl-tests),
or rccl-tests on ROCm; bus bandwidth is defined as in its doc/PERFORMANCE.md.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
import os
import sys
import time
from typing import Any

WARMUP = 5
ITERS = 20
P2P_BYTES = 256 * 2**20
P2P_ITERS = 10


def emit(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def stage(name: str) -> None:
    emit(event="stage", stage=name)


def fault(rank: int, where: str) -> None:
    """Test-only: ROCMDOCTOR_COLL_FAULT="1:die@allreduce" makes rank 1 die (or hang) there."""
    spec = os.environ.get("ROCMDOCTOR_COLL_FAULT", "") if \
        os.environ.get("ROCMDOCTOR_TESTING") == "1" else ""
    for item in filter(None, spec.split(",")):
        who, _, what = item.partition(":")
        action, _, place = what.partition("@")
        if who.strip() == str(rank) and (place or "allreduce") == where:
            if action == "die":
                os._exit(7)
            if action == "hang":
                time.sleep(3600)


def timed(torch: Any, device: Any, fn: Any, iters: int) -> float:
    """Seconds per call of fn, after warm-up: device events on a GPU, the clock on the CPU."""
    for _ in range(WARMUP):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0 / iters
    begin = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - begin) / iters


def allreduce_sweep(torch: Any, dist: Any, device: Any, rank: int, world: int,
                    sizes: list[int]) -> None:
    for nbytes in sizes:
        stage(f"all-reduce {nbytes} bytes")
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
        seconds = timed(torch, device, functools.partial(dist.all_reduce, x), ITERS)
        # The slowest rank sets the pace, as nccl-tests reports it.
        slowest = torch.tensor([seconds], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = float(slowest.item())
        algbw = x.numel() * 4 / seconds / 1e9
        if rank == 0:
            emit(event="allreduce", bytes=x.numel() * 4, time_s=seconds, algbw_gbs=algbw,
                 busbw_gbs=algbw * 2 * (world - 1) / world)


def p2p_pairs(torch: Any) -> None:
    """Every ordered pair of local GPUs: can they access each other, and copy speed."""
    count = torch.cuda.device_count()
    for src in range(count):
        for dst in range(count):
            if src == dst:
                continue
            stage(f"p2p copy {src} -> {dst}")
            access = bool(torch.cuda.can_device_access_peer(src, dst))
            a = torch.empty(P2P_BYTES, dtype=torch.uint8, device=f"cuda:{src}")
            b = torch.empty(P2P_BYTES, dtype=torch.uint8, device=f"cuda:{dst}")
            copy = functools.partial(b.copy_, a)
            for _ in range(WARMUP):
                copy()
            # A copy between devices waits on streams of both, so one device's events do not
            # bracket it: both devices are synchronised around the timed copies instead
            # (10 x 256 MiB, milliseconds long, so the clock's resolution does not matter).
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            begin = time.perf_counter()
            for _ in range(P2P_ITERS):
                copy()
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            seconds = (time.perf_counter() - begin) / P2P_ITERS
            emit(event="p2p", src=src, dst=dst, access=access, gbs=P2P_BYTES / seconds / 1e9)
            del a, b, copy


def main() -> int:
    if os.environ.get("ROCMDOCTOR_COLL_MODE") == "p2p":  # after the ranks, alone on the GPUs
        stage("import torch")
        import torch

        fault(0, "p2p")
        p2p_pairs(torch)
        emit(event="done", correct=True)
        return 0
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    backend = os.environ.get("ROCMDOCTOR_COLL_BACKEND", "nccl")
    sizes = [int(s) for s in os.environ.get("ROCMDOCTOR_COLL_SIZES", "1048576").split(",")]
    limit = float(os.environ.get("ROCMDOCTOR_COLL_TIMEOUT", "60"))
    stage("import torch")
    import torch
    import torch.distributed as dist

    fault(rank, "import")
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    stage("init_process_group")
    kwargs: dict[str, Any] = {}
    if device.type == "cuda" and "device_id" in \
            inspect.signature(dist.init_process_group).parameters:  # torch >= 2.2
        kwargs["device_id"] = device
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=limit), **kwargs)
    if rank == 0:
        nccl = None
        if device.type == "cuda":
            version = torch.cuda.nccl.version()
            nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        emit(event="info", backend=backend, world_size=world, torch=torch.__version__,
             hip=torch.version.hip, nccl=nccl, device=str(device),
             names=[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
             if device.type == "cuda" else [])
    stage("all-reduce correctness")
    fault(rank, "allreduce")
    probe = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(probe)
    correct = bool((probe == world * (world + 1) / 2).all().item())
    allreduce_sweep(torch, dist, device, rank, world, sizes)
    stage("barrier")
    dist.barrier()
    dist.destroy_process_group()
    emit(event="done", correct=correct)
    fault(rank, "exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
