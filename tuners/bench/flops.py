"""FLOPs of one training step (counted on the real model) and a measured GEMM peak.

FLOPs come from torch.utils.flop_counter.FlopCounterMode, which counts a multiply-add as
2 FLOPs (ResNet-50 forward at 224x224: 8.18 GFLOP = torchvision's "4.09 GFLOPS", which are
multiply-adds). Only matmuls, convolutions and attention are counted, which is the MFU
convention. The GEMM peak is a short large-matmul measurement in the benchmark's dtype: the
realistic ceiling of this GPU with this torch, beside the vendor figure in peaks.py.

Runs in the benchmark worker only (imports torch).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def training_step_flops(model: nn.Module, inputs: Any, targets: Any,
                        loss_fn: Callable[[Any, Any], torch.Tensor],
                        autocast: Callable[[], contextlib.AbstractContextManager[Any]],
                        ) -> tuple[int, int]:
    """(forward FLOPs, forward+backward FLOPs) of one batch; gradients are cleared after."""
    counter = FlopCounterMode(display=False)
    with counter:
        with autocast():
            loss = loss_fn(model(inputs), targets)
        forward = counter.get_total_flops()
        loss.backward()
    total = counter.get_total_flops()
    model.zero_grad(set_to_none=True)
    return int(forward), int(total)


GEMM_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
               "fp16": torch.float16}


def measure_gemm_tflops(device: torch.device, precision: str, n: int,
                        seconds: float = 0.5) -> dict[str, Any]:
    """Time square n x n matmuls for about `seconds`; TFLOP/s = 2 n^3 / time.

    TF32 follows the process's current setting (the benchmark already applied its
    precision), so "fp32" here is whatever FP32 matmul the training ran with.
    """
    dtype = GEMM_DTYPES[precision]
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    for _ in range(3):  # warm-up: library heuristics, clocks
        c = a @ b
    sync()
    start = time.perf_counter()
    c = a @ b
    sync()
    one = max(time.perf_counter() - start, 1e-6)
    reps = max(3, min(200, int(seconds / one)))
    if cuda:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(reps):
            c = a @ b
        end.record()
        end.synchronize()
        elapsed = begin.elapsed_time(end) / 1000.0
    else:
        start = time.perf_counter()
        for _ in range(reps):
            c = a @ b
        elapsed = time.perf_counter() - start
    del a, b, c
    return {"tflops": 2.0 * n ** 3 * reps / elapsed / 1e12, "n": n, "reps": reps,
            "dtype": str(dtype).replace("torch.", ""), "seconds": elapsed}
