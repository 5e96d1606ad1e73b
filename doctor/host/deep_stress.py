"""`check --stress DURATION`: the GEMM and bandwidth loops for that long, per one-second
window, each product checked for NaN/Inf and a sampled tile of it against a float64
product on the CPU (a silent data corruption shows as a mismatch, not as a slowdown).

Standalone (standard library and torch; deep_child.py imports it from its own folder).
Tests only (ROCMDOCTOR_TESTING=1): ROCMDOCTOR_DEEP_FAULT=corrupt@stress or nan@stress
damages one product after it is computed, so the checks on the result are exercised.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any, Callable, Optional

import deep_kernels as kernels  # this script's folder, as deep_child.py adds it
import deep_telemetry as telemetry

TILE = 64
WINDOW_S = 1.0


def tile_error(torch: Any, a: Any, b: Any, c: Any, row: int, col: int) -> tuple[float, float]:
    """(worst |error| beyond tolerance, its tolerance) of one TILE x TILE tile of c = a @ b
    against float64 on the CPU. bf16 output rounds to 2^-8 of the value; the sum of k
    products of N(0, 1) inputs has a spread of sqrt(k): the tolerance allows both."""
    k = a.shape[1]
    ref = a[row:row + TILE].double().cpu() @ b[:, col:col + TILE].double().cpu()
    got = c[row:row + TILE, col:col + TILE].double().cpu()
    tol = 0.02 * math.sqrt(k) + 0.01 * ref.abs()
    excess = (got - ref).abs() - tol
    worst = float(excess.max())
    return worst, float(tol.max())


def _fault(env: dict[str, str]) -> str:
    if env.get("ROCMDOCTOR_TESTING") != "1":
        return ""
    kind, _, stage = env.get("ROCMDOCTOR_DEEP_FAULT", "").partition("@")
    return kind if stage == "stress" else ""


def stress(torch: Any, timer: Any, seconds: float, n: int, mem_bytes: int,
           stop: Callable[[], bool], on_window: Callable[[dict[str, Any]], None],
           environ: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Windows of GEMMs then triads until `seconds` pass or `stop()` says so."""
    env = dict(os.environ if environ is None else environ)
    fault = _fault(env)
    dev = timer.device
    kind = torch.bfloat16
    a = torch.randn(n, n, device=dev, dtype=kind)
    b = torch.randn(n, n, device=dev, dtype=kind)
    c = torch.empty(n, n, device=dev, dtype=kind)
    count = mem_bytes // 4
    x, y = torch.rand(count, device=dev), torch.rand(count, device=dev)
    z = torch.empty_like(x)
    flop = 2.0 * n ** 3
    windows: list[dict[str, Any]] = []
    checked = mismatches = nonfinite = 0
    first_bad: Optional[dict[str, Any]] = None
    end = time.monotonic() + seconds
    torch.matmul(a, b, out=c)
    timer.sync()
    while time.monotonic() < end and not stop():
        started = time.monotonic()
        gemms, gemm_s = 0, 0.0
        while gemm_s < WINDOW_S * 0.7 and not stop():
            gemm_s += timer.time(lambda: torch.matmul(a, b, out=c), 4)
            gemms += 4
        row = (len(windows) * TILE) % max(n - TILE, 1)
        col = (len(windows) * 3 * TILE) % max(n - TILE, 1)
        if fault == "corrupt" and len(windows) == 1:
            c[row + 3, col + 5] += 4096.0
        if fault == "nan" and len(windows) == 1:
            c[row, col] = float("nan")
        finite = bool(torch.isfinite(c).all().item())
        worst, tol = tile_error(torch, a, b, c, row, col)
        checked += 1
        if not finite:
            nonfinite += 1
        if worst > 0 or not finite:
            mismatches += 1 if worst > 0 else 0
            if first_bad is None:
                first_bad = {"window": len(windows), "row": row, "col": col,
                             "excess": round(worst, 4), "tolerance": round(tol, 4),
                             "finite": finite}
        triad_s = timer.time(lambda: torch.add(x, y, alpha=3.0, out=z), 4)
        window = {"t": round(started - (end - seconds), 3),
                  "tflops": round(flop * gemms / gemm_s / 1e12, 4) if gemm_s > 0 else None,
                  "gbs": round(3 * count * 4 * 4 / triad_s / 1e9, 3) if triad_s > 0 else None}
        windows.append(window)
        on_window(window)
    return {"seconds": seconds, "windows": windows, "checked_tiles": checked,
            "mismatches": mismatches, "nonfinite": nonfinite, "first_bad": first_bad,
            "n": n, "tile": TILE, "stopped_early": time.monotonic() < end}


def _counters(reader: Any) -> Any:
    try:
        return reader.counters()
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def stress_all(run: Any, torch: Any, devices: list[Any]) -> None:
    """The stress loop on every GPU at once (one thread each: the work runs on the GPUs, and
    torch releases the GIL while it waits for them), telemetry sampled all along."""
    run.mark("stress", f"stress on {len(devices)} GPU(s) for {run.stress_s:g} s")
    sizes = run.sizes
    jobs = []
    for index, device in enumerate(devices):
        gpu = run.result["gpus"][index]
        reader, _ = telemetry.open_reader(gpu["vendor"], index, gpu.get("uuid"),
                                          gpu.get("bus_id"), run.env)
        sampler = telemetry.Sampler(reader)
        sampler.phase = "stress"
        jobs.append((index, device, gpu, reader, sampler.start()))
    last = [time.monotonic()]

    def on_window(window: dict[str, Any]) -> None:
        if time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            run.mark("stress", f"stress, {window['t']:.0f} of {run.stress_s:g} s",
                     with_result=False)

    def work(device: Any, gpu: dict[str, Any]) -> None:
        try:
            if device.type == "cuda":
                torch.cuda.set_device(device)
            gpu["stress"] = stress(
                torch, kernels.Timer(torch, device), run.stress_s, sizes["stress_n"],
                min(sizes["memory"], 256 << 20), run.stopped, on_window, run.env)
        except Exception as exc:  # noqa: BLE001 - this GPU's stress failed: its result says so
            gpu["errors"]["stress"] = f"{type(exc).__name__}: {exc}"[:300]

    threads = [threading.Thread(target=work, args=(device, gpu), daemon=True)
               for _, device, gpu, _, _ in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)
    for _, _, gpu, reader, sampler in jobs:
        gpu["telemetry"]["stress"] = telemetry.summarize_samples(sampler.stop(), "stress")
        gpu["counters"]["after"] = _counters(reader)
        reader.close()
