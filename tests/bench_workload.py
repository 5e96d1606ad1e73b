"""A user workload for the bench tests, imported by the worker as "tests.bench_workload:...".

`make_workload` shows the documented factory contract (docs/bench.md): it returns
(model, make_batch, loss_fn). `make_limited` runs out of host memory above the batch size in
BENCH_TEST_MEMORY_LIMIT, the way a GPU does, so the out-of-memory paths can be exercised on
a machine without a GPU.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def make_workload(spec: Any) -> tuple[nn.Module, Any, Any]:
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 16), nn.ReLU(), nn.Linear(16, 4))

    def make_batch(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randn(batch, 3, 8, 8, device=device),
                torch.randint(0, 4, (batch,), device=device))

    print("a stray print from user code must not break the protocol")
    return model, make_batch, F.cross_entropy


def make_limited(spec: Any) -> tuple[nn.Module, Any, Any]:
    model, make_batch, loss = make_workload(spec)
    limit = int(os.environ.get("BENCH_TEST_MEMORY_LIMIT", "32"))

    def limited(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if batch > limit:
            raise MemoryError(f"cannot allocate a batch of {batch} (limit {limit})")
        return make_batch(batch, device)

    return model, limited, loss


def make_broken(spec: Any) -> tuple[nn.Module, Any, Any]:
    model, _, loss = make_workload(spec)

    def broken(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        raise ValueError("the data loader of this workload is broken")

    return model, broken, loss


def make_deep(spec: Any) -> Any:
    """A factory whose error comes from deep in user code: its traceback is longer than the
    stderr the benchmark keeps."""
    def descend(depth: int) -> Any:
        if depth == 0:
            raise LookupError("no such dataset split: 'validation'")
        return descend(depth - 1)

    return descend(40)
