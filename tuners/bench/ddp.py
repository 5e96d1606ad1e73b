"""One rank of a data-parallel benchmark (in the worker: imports torch): the process group
joined as a script launched by torchrun joins it (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT; rocmdoctor.tuners.bench.ddp_launch sets them), its GPU, and the model wrapped in
DistributedDataParallel with the spec's DDP settings.

NCCL on a GPU (RCCL on ROCm, under the same name), gloo on the CPU
(https://docs.pytorch.org/docs/stable/distributed.html#which-backend-to-use).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

# The spec's settings that are DistributedDataParallel's own arguments
# (https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
DDP_ARGS = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "broadcast_buffers")
# A collective that waits longer than this fails on its own; the launcher's deadline and the
# trial's timeout come first.
JOIN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Rank:
    rank: int
    local_rank: int
    world_size: int


def rank_of(environ: Mapping[str, str]) -> Optional[Rank]:
    """This process's rank where it is one of several (WORLD_SIZE > 1), else None."""
    try:
        world = int(environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return None
        return Rank(int(environ["RANK"]), int(environ.get("LOCAL_RANK", environ["RANK"])),
                    world)
    except (KeyError, ValueError):
        return None


def ddp_args(settings: Mapping[str, Any]) -> dict[str, Any]:
    """DistributedDataParallel's keyword arguments that the settings give."""
    return {name: settings[name] for name in DDP_ARGS if settings.get(name) is not None}


def set_device(torch: Any, rank: Rank, wanted: str) -> Optional[str]:
    """A rank's GPU is its local rank (before the device is picked); why it cannot be,
    where torch sees fewer GPUs than ranks."""
    if wanted != "cpu" and torch.cuda.is_available():
        count = torch.cuda.device_count()
        if rank.local_rank >= count:
            return (f"--nproc {rank.world_size}: one process a GPU, but torch sees {count} "
                    f"GPU(s) here (--device cpu runs the ranks on the CPU)")
        torch.cuda.set_device(rank.local_rank)
    return None


def join(torch: Any, rank: Rank, device: Any) -> str:
    """Join the process group; the backend's name."""
    import torch.distributed as dist

    backend = "nccl" if device.type == "cuda" else "gloo"
    kwargs: dict[str, Any] = {}
    if device.type == "cuda":
        kwargs["device_id"] = device  # binds the communicator to this GPU (torch >= 2.3)
    try:
        dist.init_process_group(backend, init_method="env://", rank=rank.rank,
                                world_size=rank.world_size,
                                timeout=datetime.timedelta(seconds=JOIN_TIMEOUT_S), **kwargs)
    except TypeError:  # an older torch without device_id
        dist.init_process_group(backend, init_method="env://", rank=rank.rank,
                                world_size=rank.world_size,
                                timeout=datetime.timedelta(seconds=JOIN_TIMEOUT_S))
    return backend


def wrap(torch: Any, model: Any, device: Any, settings: Mapping[str, Any]) -> Any:
    """The model in DistributedDataParallel with the settings' arguments."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index if device.index is not None else torch.cuda.current_device()] \
        if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids, **ddp_args(settings))


def agreed(torch: Any, value: int, device: Any, most: bool = True) -> int:
    """The largest (or smallest) of `value` over the ranks. Every rank must take as many
    steps as the others, or one waits for ever in a gradient all-reduce: a count that rests
    on each rank's own clock (the warm-up until the clocks settle, the steps that fit in the
    CPU's time) is agreed first."""
    import torch.distributed as dist

    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX if most else dist.ReduceOp.MIN)
    return int(tensor.item())


def leave(torch: Any) -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
