"""The measurements of `check --deep`, one function each: matrix products, a convolution,
device memory copies, host copies, kernel launches, peer copies.

Standalone (standard library and torch; deep_child.py imports it from its own folder). Each
measurement warms up first, then times `repeats` runs of `iters` back-to-back operations
between two device events (on the CPU device, between two perf_counter reads: its work is
synchronous), and reports the rate of every run, their median and their spread. Inputs are
random: a product's rate depends on its data (zeros run faster), which would flatter the card.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Any, Callable, Optional

GIB = 1 << 30


def sig(value: float, digits: int = 6) -> float:
    """`value` to `digits` significant figures (0.000812345 stays 0.000812345)."""
    return float(f"{value:.{digits}g}")


def stats(samples: list[float], unit: str) -> dict[str, Any]:
    """Median, min, max and spread ((max - min) / median, in %) of per-run rates."""
    clean = [s for s in samples if s == s and not math.isinf(s) and s > 0]
    if not clean:
        return {"unit": unit, "median": None, "min": None, "max": None, "spread_pct": None,
                "n": 0, "samples": []}
    med = statistics.median(clean)
    return {"unit": unit, "median": sig(med), "min": sig(min(clean)), "max": sig(max(clean)),
            "spread_pct": sig((max(clean) - min(clean)) / med * 100, 4),
            "n": len(clean), "samples": [sig(s) for s in clean]}


class Timer:
    """Seconds for `iters` calls of `fn`, by device events after a synchronize."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.device = device
        self.gpu = device.type == "cuda"
        self.name = "device events" if self.gpu else "perf_counter (CPU device)"

    def sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize(self.device)

    def time(self, fn: Callable[[], Any], iters: int) -> float:
        if not self.gpu:
            start = time.perf_counter()
            for _ in range(iters):
                fn()
            return time.perf_counter() - start
        begin = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        self.sync()
        begin.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1000.0


def rates(timer: Timer, fn: Callable[[], Any], work: float, plan: dict[str, Any],
          min_s: float = 0.0, stop: Optional[Callable[[], bool]] = None) -> list[float]:
    """Work per second of each timed run: `plan` gives warmup, repeats and iters; with
    `min_s`, runs continue until that many seconds have been timed (a sustained load)."""
    for _ in range(int(plan["warmup"])):
        fn()
    timer.sync()
    out: list[float] = []
    spent = 0.0
    while len(out) < int(plan["repeats"]) or spent < min_s:
        seconds = timer.time(fn, int(plan["iters"]))
        spent += seconds
        if seconds > 0:
            out.append(work * int(plan["iters"]) / seconds)
        if stop is not None and stop():
            break
        if len(out) > 10000:
            break
    return out


DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _blas_names(torch: Any) -> dict[str, str]:
    if getattr(torch.version, "hip", None):
        return {"cublas": "hipBLAS/rocBLAS", "cublaslt": "hipBLASLt"}
    return {"cublas": "cuBLAS", "cublaslt": "cuBLASLt"}


def blas_library(torch: Any) -> Optional[str]:
    """The BLAS library torch now prefers, by torch's name for it ("cublas", "cublaslt")."""
    try:
        value = torch.backends.cuda.preferred_blas_library()
    except Exception:  # noqa: BLE001 - older torch, or no CUDA/HIP build
        return None
    return str(getattr(value, "name", value)).split(".")[-1].lower()


# The (M, N, K) of every class reference that names one (kb/deep_refs.py CLASS_REFERENCES:
# MAMF's best shapes, the ROCm Validation Suite's test shapes), by dtype; a test keeps the two
# equal. Each is measured as well as the n x n x n product, so a card is graded at the shape
# its reference was measured at.
REFERENCE_SHAPES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "bf16": ((1024, 10240, 5120), (1024, 15360, 4096), (1024, 19968, 14080),
             (2048, 2048, 13312), (2048, 5120, 6144), (4864, 4096, 8192),
             (13312, 10240, 8192)),
    "fp16": ((4864, 4096, 8192),),
    "fp8": ((1024, 9216, 14336), (1024, 14336, 14336), (4864, 4096, 8192)),
    "fp32": ((3072, 3072, 3072),),
}
# A reference shape whose runs would take longer than this (estimated from the n x n x n
# rate) is left out: it belongs to a faster card than this one.
SHAPE_BUDGET_S = 2.0


def shape_seconds(shape: tuple[int, int, int], tflops: float, plan: dict[str, Any]) -> float:
    """Estimated seconds of the warm-up and timed runs of `shape` at `tflops`."""
    m, n, k = shape
    products = int(plan["warmup"]) + int(plan["repeats"]) * int(plan["iters"])
    return 2.0 * m * n * k * products / (tflops * 1e12) if tflops > 0 else float("inf")


def gemm(torch: Any, timer: Timer, dtype: str, n: int, plan: dict[str, Any],
         library: Optional[str] = None, min_s: float = 0.0,
         stop: Optional[Callable[[], bool]] = None,
         shape: Optional[tuple[int, int, int]] = None) -> dict[str, Any]:
    """An n x n x n product in `dtype` (fp32 strict, tf32, bf16, fp16, fp8), or an
    (M, N, K) `shape`: an M x K matrix times a K x N one."""
    dev = timer.device
    m, n, k = shape or (n, n, n)
    out: dict[str, Any] = {"dtype": dtype, "m": m, "n": n, "k": k, "library": library}
    if shape is not None:
        out["reference_shape"] = True
    before_tf32 = torch.backends.cuda.matmul.allow_tf32
    before_lib = blas_library(torch) if library else None
    try:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if library:
            torch.backends.cuda.preferred_blas_library(library)
        if dev.type == "cuda":
            out["library_name"] = _blas_names(torch).get(library or blas_library(torch) or "")
        if dtype == "fp8":
            fn = _fp8_product(torch, dev, m, n, k)
        else:
            kind = getattr(torch, DTYPES[dtype])
            a = torch.randn(m, k, device=dev, dtype=kind)
            b = torch.randn(k, n, device=dev, dtype=kind)
            c = torch.empty(m, n, device=dev, dtype=kind)

            def fn() -> Any:
                return torch.matmul(a, b, out=c)
        out["tflops"] = stats(rates(timer, fn, 2.0 * m * n * k / 1e12, plan, min_s, stop),
                              "TFLOP/s")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before_tf32
        if before_lib:
            try:
                torch.backends.cuda.preferred_blas_library(before_lib)
            except Exception:  # noqa: BLE001
                pass
    return out


def fp8_kind(torch: Any, dev: Any) -> Any:
    """float8_e4m3fnuz on gfx942 (MI300), float8_e4m3fn elsewhere (torch's own rule for
    _scaled_mm on ROCm)."""
    if getattr(torch.version, "hip", None) and dev.type == "cuda":
        arch = str(getattr(torch.cuda.get_device_properties(dev), "gcnArchName", ""))
        if arch.startswith("gfx942"):
            return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def _fp8_product(torch: Any, dev: Any, m: int, n: int, k: int) -> Callable[[], Any]:
    kind = fp8_kind(torch, dev)
    a = torch.randn(m, k, device=dev).to(kind)
    b = torch.randn(n, k, device=dev).to(kind).t()  # _scaled_mm wants b column-major
    one = torch.ones((), device=dev, dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def conv(torch: Any, timer: Timer, dtype: str, channels_last: bool, shape: dict[str, int],
         plan: dict[str, Any]) -> dict[str, Any]:
    """A ResNet-50 3x3 convolution (layer3: 256 channels at 14x14), forward and backward
    (input and weight gradients), and the matrix product of the same size (implicit GEMM:
    M = N*H*W, N = C_out, K = C_in*9), timed alike in the same dtype."""
    import torch.nn.functional as functional

    dev = timer.device
    kind = getattr(torch, DTYPES[dtype])
    n, c, h, w, k = shape["batch"], shape["channels"], shape["size"], shape["size"], shape["out"]
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(n, c, h, w, device=dev, dtype=kind).to(memory_format=fmt).requires_grad_()
    weight = torch.randn(k, c, 3, 3, device=dev, dtype=kind).to(memory_format=fmt)
    weight.requires_grad_()
    grad = torch.randn(n, k, h, w, device=dev, dtype=kind).to(memory_format=fmt)

    def step() -> None:
        y = functional.conv2d(x, weight, padding=1)
        y.backward(grad)
        x.grad = None
        weight.grad = None

    start = time.perf_counter()
    step()
    timer.sync()
    first = time.perf_counter() - start
    flops = 3 * 2.0 * n * k * h * w * c * 9
    out: dict[str, Any] = {"dtype": dtype, "layout": "channels_last" if channels_last else
                           "NCHW", "shape": dict(shape), "first_call_s": round(first, 4),
                           "tflops": stats(rates(timer, step, flops / 1e12, plan), "TFLOP/s")}
    m_, n_, k_ = n * h * w, k, c * 9
    a = torch.randn(m_, k_, device=dev, dtype=kind)
    b = torch.randn(k_, n_, device=dev, dtype=kind)
    prod = torch.empty(m_, n_, device=dev, dtype=kind)
    before = torch.backends.cuda.matmul.allow_tf32
    # an fp32 convolution may use TF32 by PyTorch's default (cudnn.allow_tf32): so may its GEMM
    torch.backends.cuda.matmul.allow_tf32 = bool(torch.backends.cudnn.allow_tf32)
    try:
        out["gemm_equivalent"] = {"m": m_, "n": n_, "k": k_, "tflops": stats(rates(
            timer, lambda: torch.matmul(a, b, out=prod), 2.0 * m_ * n_ * k_ / 1e12, plan),
            "TFLOP/s")}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return out


def memory(torch: Any, timer: Timer, size: int, plan: dict[str, Any]) -> dict[str, Any]:
    """Device-to-device copy (bytes read + written) and a STREAM triad a = b + s*c (two read,
    one written: McCalpin's STREAM counting), in GB/s (10^9)."""
    dev = timer.device
    count = size // 4
    src = torch.rand(count, device=dev)
    dst = torch.empty_like(src)
    b, c = torch.rand(count, device=dev), torch.rand(count, device=dev)
    a = torch.empty_like(b)
    return {"bytes": count * 4,
            "copy": stats(rates(timer, lambda: dst.copy_(src), 2 * count * 4 / 1e9, plan),
                          "GB/s"),
            "triad": stats(rates(timer, lambda: torch.add(b, c, alpha=3.0, out=a),
                                 3 * count * 4 / 1e9, plan), "GB/s")}


def numa_nodes() -> dict[int, list[int]]:
    """NUMA node -> its CPUs this process may use (sysfs), nodes without such CPUs left out."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    out: dict[int, list[int]] = {}
    base = "/sys/devices/system/node"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return out
    for name in names:
        if not name.startswith("node") or not name[4:].isdigit():
            continue
        try:
            with open(os.path.join(base, name, "cpulist"), encoding="ascii") as fh:
                cpus = parse_cpulist(fh.read())
        except OSError:
            continue
        usable = [c for c in cpus if not allowed or c in allowed]
        if usable:
            out[int(name[4:])] = usable
    return out


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            lo, _, hi = part.partition("-")
            if lo.isdigit() and hi.isdigit():
                cpus.extend(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            cpus.append(int(part))
    return cpus


def host_copies(torch: Any, timer: Timer, size: int, plan: dict[str, Any]) -> dict[str, Any]:
    """Pinned host-to-device and device-to-host copies, GB/s (10^9). On the CPU device the
    "host" buffer is an ordinary one: the same code path, no PCIe."""
    dev = timer.device
    pinned = timer.gpu
    host = torch.empty(size, dtype=torch.uint8, pin_memory=pinned)
    host.fill_(1)
    gpu = torch.empty(size, dtype=torch.uint8, device=dev)
    return {"bytes": size, "pinned": pinned, "_keep": host,
            "h2d": stats(rates(timer, lambda: gpu.copy_(host, non_blocking=True), size / 1e9,
                               plan), "GB/s"),
            "d2h": stats(rates(timer, lambda: host.copy_(gpu, non_blocking=True), size / 1e9,
                               plan), "GB/s")}


def host_link(torch: Any, timer: Timer, size: int, plan: dict[str, Any]) -> dict[str, Any]:
    """Host copies as this process runs, then, on a machine of several NUMA nodes, with this
    thread bound to each node in turn (pinned memory is placed on the node of the thread that
    allocates it, so each run reads that node's memory)."""
    out = host_copies(torch, timer, size, plan)
    keep = [out.pop("_keep")]
    out["process_nodes"] = sorted(numa_nodes())
    nodes = numa_nodes()
    if len(nodes) > 1 and hasattr(os, "sched_setaffinity"):
        before = os.sched_getaffinity(0)
        per_node = []
        try:
            for node, cpus in sorted(nodes.items()):
                os.sched_setaffinity(0, cpus)
                measured = host_copies(torch, timer, size, plan)
                keep.append(measured.pop("_keep"))  # no reuse of another node's buffer
                per_node.append({"node": node, "h2d": measured["h2d"], "d2h": measured["d2h"]})
        finally:
            os.sched_setaffinity(0, before)
        out["numa"] = per_node
    del keep
    return out


def launches(torch: Any, timer: Timer, plan: dict[str, Any]) -> dict[str, Any]:
    """Microseconds per launch of a one-element kernel: queued back to back (the launch rate
    a training step sees), and each waited for (what CUDA_LAUNCH_BLOCKING=1 or
    AMD_SERIALIZE_KERNEL make of every launch)."""
    dev = timer.device
    x = torch.zeros(1, device=dev)
    queued = [1e6 / r for r in rates(timer, lambda: x.add_(1.0), 1.0, plan) if r > 0]

    def waited() -> None:
        x.add_(1.0)
        timer.sync()

    synced = []
    for _ in range(int(plan["repeats"])):
        start = time.perf_counter()
        for _ in range(int(plan["iters"]) // 4 or 1):
            waited()
        synced.append((time.perf_counter() - start) * 1e6 / (int(plan["iters"]) // 4 or 1))
    return {"queued_us": stats(queued, "us"), "waited_us": stats(synced, "us")}


def peer_copies(torch: Any, devices: list[Any], size: int, plan: dict[str, Any],
                cpu: bool) -> list[dict[str, Any]]:
    """GB/s of copies from each device to each other one, and whether peer access is on."""
    out = []
    for i, src_dev in enumerate(devices):
        for j, dst_dev in enumerate(devices):
            if i == j:
                continue
            src = torch.empty(size, dtype=torch.uint8, device=src_dev).fill_(3)
            dst = torch.empty(size, dtype=torch.uint8, device=dst_dev)
            access = True if cpu else bool(torch.cuda.can_device_access_peer(i, j))

            def sync(a: Any = src_dev, b: Any = dst_dev) -> None:
                if not cpu:
                    torch.cuda.synchronize(a)
                    torch.cuda.synchronize(b)

            for _ in range(int(plan["warmup"])):
                dst.copy_(src)
            samples = []
            for _ in range(int(plan["repeats"])):
                sync()
                start = time.perf_counter()
                for _ in range(int(plan["iters"])):
                    dst.copy_(src)
                sync()
                seconds = time.perf_counter() - start
                if seconds > 0:
                    samples.append(size * int(plan["iters"]) / seconds / 1e9)
            out.append({"src": i, "dst": j, "access": access, "bytes": size,
                        "gbs": stats(samples, "GB/s")})
            del src, dst
    return out
