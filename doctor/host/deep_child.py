"""The measured checks of `rocmdoctor check --deep`, run in the Python that trains; prints one
JSON object (schema rocmdoctor.deep/1) on stdout.

    python deep_child.py --parent-pid PID [--stress SECONDS]

Per GPU, one after the other: kernel launches queued and waited for; matrix products in
fp32 (TF32 off), tf32, bf16, fp16 and fp8 where the device has them, each also at the shapes
its class references were measured at (deep_kernels.REFERENCE_SHAPES), bf16 again through the
other BLAS library torch can choose (cuBLASLt / hipBLASLt); a ResNet-50 convolution forward
and backward; device memory copy and triad; pinned host copies (per NUMA node where there
are several); with --stress, the stress loop. Telemetry (deep_telemetry.py) is sampled all
along; error counters are read before and after. With several GPUs, copies between each
pair. Standard library and torch only, so an interpreter without rocmdoctor runs it by path.

Progress goes to stderr as ROCMDOCTOR_DEEP_PARTIAL lines (the stage, and the result so far),
so a crash or a hang still tells how far it got. It dies with rocmdoctor (PR_SET_PDEATHSIG);
SIGINT or SIGTERM ends it early with the figures so far ("interrupted": true).

Tests only (ROCMDOCTOR_TESTING=1): ROCMDOCTOR_DEEP_CPU=N measures N CPU "devices" at tiny
sizes; ROCMDOCTOR_DEEP_FAULT=KIND@STAGE (crash, exit, hang, raise; corrupt and nan at stress)
injects a failure; ROCMDOCTOR_DEEP_TELEMETRY=throttled simulates a throttled card.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # imported as a module (tests): after everything else
    sys.path.append(HERE)

import deep_kernels as kernels  # noqa: E402 - this script's own folder, added just above
import deep_stress  # noqa: E402
import deep_telemetry as telemetry  # noqa: E402

SCHEMA = "rocmdoctor.deep/1"  # keep equal to rocmdoctor.schemas.DEEP
PARTIAL_MARK = "ROCMDOCTOR_DEEP_PARTIAL "
# Variables that change what is measured; the verdicts name them as causes.
ENV_NAMES = ("CUDA_LAUNCH_BLOCKING", "HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL",
             "AMD_SERIALIZE_COPY", "AMD_LOG_LEVEL", "NVIDIA_TF32_OVERRIDE",
             "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_BLAS_PREFER_HIPBLASLT",
             "TORCH_BLAS_PREFER_CUBLASLT", "PYTORCH_TUNABLEOP_ENABLED", "MIOPEN_FIND_MODE",
             "MIOPEN_FIND_ENFORCE", "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR",
             "MIOPEN_DISABLE_CACHE", "MIOPEN_DEBUG_DISABLE_FIND_DB", "HSA_OVERRIDE_GFX_VERSION",
             "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
             "CUDA_DEVICE_MAX_CONNECTIONS", "GPU_MAX_HW_QUEUES")
FULL: dict[str, Any] = {
        "gemm_n": 8192, "sustain_s": 6.0, "shape_scale": 1,
        "conv": {"batch": 256, "channels": 256, "size": 14, "out": 256},
        "memory": 1 << 30, "host": 256 << 20, "peer": 256 << 20, "stress_n": 8192,
        "plan": {"warmup": 3, "repeats": 10, "iters": 10},
        # a convolution step is about 1 ms on an H200: 10 x 10 of them varied 2.7-4.6 % from
        # one process to the next (docs/benchmarks.md); longer warm-up and more of them
        "conv_plan": {"warmup": 10, "repeats": 15, "iters": 20},
        "slow": {"warmup": 1, "repeats": 5, "iters": 2},
        "host_plan": {"warmup": 1, "repeats": 7, "iters": 4},
        "launch": {"warmup": 200, "repeats": 7, "iters": 2000}}
TINY: dict[str, Any] = {
        "gemm_n": 128, "sustain_s": 0.3, "shape_scale": 64,
        "conv": {"batch": 2, "channels": 16, "size": 8, "out": 16},
        "memory": 4 << 20, "host": 1 << 20, "peer": 1 << 20, "stress_n": 128,
        "plan": {"warmup": 1, "repeats": 5, "iters": 3},
        "conv_plan": {"warmup": 1, "repeats": 4, "iters": 3},
        "slow": {"warmup": 1, "repeats": 3, "iters": 2},
        "host_plan": {"warmup": 1, "repeats": 3, "iters": 2},
        "launch": {"warmup": 20, "repeats": 3, "iters": 200}}


def _child_setup() -> Any:
    """child_setup.py (die with the parent), loaded by path from this script's folder:
    rocmdoctor itself need not be importable in the Python that trains."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_setup.py")
    spec = importlib.util.spec_from_file_location("rocmdoctor_child_setup", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def die_with_parent(parent_pid: Optional[int]) -> None:
    """Have Linux kill this process when rocmdoctor goes away (no GPU left loaded)."""
    _child_setup().die_with_parent(parent_pid)


def _last_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


class Run:
    def __init__(self, env: dict[str, str], stress_s: float) -> None:
        self.env = env
        self.testing = env.get("ROCMDOCTOR_TESTING") == "1"
        cpu = env.get("ROCMDOCTOR_DEEP_CPU", "") if self.testing else ""
        self.cpu_devices = int(cpu) if cpu.isdigit() and int(cpu) > 0 else 0
        self.sizes = TINY if self.cpu_devices else FULL
        self.fault = env.get("ROCMDOCTOR_DEEP_FAULT", "") if self.testing else ""
        self.stop_event = threading.Event()
        self.started = time.monotonic()
        self.result: dict[str, Any] = {
            "schema": SCHEMA, "level": "stress" if stress_s > 0 else "quick",
            "stress_s": stress_s, "interrupted": False, "stage": "start",
            "env": {k: env[k] for k in ENV_NAMES if k in env}, "gpus": [], "errors": []}
        self.stress_s = stress_s

    def stopped(self) -> bool:
        return self.stop_event.is_set()

    def mark(self, stage: str, label: str = "", with_result: bool = True) -> None:
        self.result["stage"] = stage
        self.result["elapsed_s"] = round(time.monotonic() - self.started, 3)
        line: dict[str, Any] = {"stage": stage, "label": label or stage}
        if with_result:
            line["result"] = self.result
        try:
            os.write(2, (PARTIAL_MARK + json.dumps(line) + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        self._inject(stage)

    def _inject(self, stage: str) -> None:
        kind, _, where = self.fault.partition("@")
        if not where or not (stage == where or stage.startswith(where + ":")):
            return
        if kind == "crash":
            os.abort()
        if kind == "exit":
            os._exit(3)
        if kind == "hang":
            time.sleep(3600)
        if kind == "raise":
            raise RuntimeError(f"injected failure at {stage}")

    def attempt(self, gpu: dict[str, Any], key: str, label: str,
                fn: Callable[[], Any]) -> Any:
        """Run one measurement; an exception is that measurement's error, not the run's."""
        if self.stopped():
            return None
        try:
            self.mark(f"{key}", label)
            return fn()
        except Exception as exc:  # noqa: BLE001 - a measurement that fails is a result
            gpu["errors"][key] = _last_line(exc)
            return None


def _bdf(props: Any) -> Optional[str]:
    bus = getattr(props, "pci_bus_id", None)
    if not isinstance(bus, int):
        return None
    return (f"{int(getattr(props, 'pci_domain_id', 0) or 0):04x}:{bus:02x}:"
            f"{int(getattr(props, 'pci_device_id', 0) or 0):02x}.0")


def _numa_node(bdf: Optional[str]) -> Optional[int]:
    if not bdf:
        return None
    try:
        with open(f"/sys/bus/pci/devices/{bdf}/numa_node", encoding="ascii") as fh:
            value = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return value if value >= 0 else None


def describe_gpu(torch: Any, index: int, cpu: bool) -> dict[str, Any]:
    if cpu:
        return {"index": index, "name": "CPU (test device)", "arch": "cpu", "vendor": "cpu",
                "uuid": None, "bus_id": None, "numa_node": None, "total_memory": None}
    props = torch.cuda.get_device_properties(index)
    hip = bool(getattr(torch.version, "hip", None))
    arch = str(getattr(props, "gcnArchName", "")) if hip else f"sm_{props.major}{props.minor}"
    bdf = _bdf(props)
    return {"index": index, "name": str(props.name), "arch": arch,
            "vendor": "amd" if hip else "nvidia", "uuid": str(getattr(props, "uuid", "")) or None,
            "bus_id": bdf, "numa_node": _numa_node(bdf), "total_memory": int(props.total_memory),
            "multi_processor_count": int(getattr(props, "multi_processor_count", 0) or 0),
            "capability": [int(props.major), int(props.minor)]}


def measure_gpu(run: Run, torch: Any, index: int, device: Any, gpu: dict[str, Any]) -> None:
    sizes = run.sizes
    timer = kernels.Timer(torch, device)
    gpu["timer"] = timer.name
    cpu = device.type == "cpu"
    reader, reasons = telemetry.open_reader(gpu["vendor"], index, gpu.get("uuid"),
                                            gpu.get("bus_id"), run.env)
    tele: dict[str, Any] = {"source": reader.name, "unavailable": reasons}
    gpu["telemetry"] = tele
    try:
        tele["static"] = reader.static()
    except Exception as exc:  # noqa: BLE001
        tele["static"] = {}
        tele["unavailable"].append(f"static: {_last_line(exc)}")
    gpu["counters"] = {"before": _safe(reader.counters)}
    sampler = telemetry.Sampler(reader).start()
    label = f"GPU {index} ({gpu['name']})"
    try:
        gpu["launch"] = run.attempt(gpu, "launch", f"{label}: kernel launches",
                                    lambda: kernels.launches(torch, timer, sizes["launch"]))
        gpu["gemm"] = []
        for dtype in gemm_dtypes(torch, device):
            plan = sizes["slow"] if dtype == "fp32" else sizes["plan"]
            sustain = sizes["sustain_s"] if dtype == "bf16" else 0.0
            sampler.phase = "gemm" if dtype == "bf16" else ""
            n = sizes["gemm_n"]
            done = run.attempt(gpu, f"gemm:{dtype}", f"{label}: {dtype} GEMM {n}x{n}x{n}",
                               functools.partial(kernels.gemm, torch, timer, dtype, n, plan,
                                                 min_s=sustain, stop=run.stopped))
            sampler.phase = ""
            if done:
                gpu["gemm"].append(done)
                gpu["gemm"].extend(reference_shapes(run, gpu, torch, timer, dtype, done, plan,
                                                    label))
        other = other_library(torch, device)
        if other:
            done = run.attempt(gpu, f"gemm:bf16:{other}", f"{label}: bf16 GEMM via {other}",
                               lambda: kernels.gemm(torch, timer, "bf16", sizes["gemm_n"],
                                                    sizes["plan"], library=other))
            if done:
                gpu["gemm"].append(done)
        gpu["conv"] = []
        for dtype, cl in (("bf16", True), ("fp16", True), ("fp32", False)):
            done = run.attempt(gpu, f"conv:{dtype}", f"{label}: {dtype} convolution",
                               functools.partial(kernels.conv, torch, timer, dtype, cl,
                                                 sizes["conv"], sizes["conv_plan"]))
            if done:
                gpu["conv"].append(done)
        gpu["conv_settings"] = conv_settings(torch)
        gpu["memory"] = run.attempt(gpu, "memory", f"{label}: memory copy and triad",
                                    lambda: kernels.memory(torch, timer, memory_size(
                                        torch, device, sizes["memory"]), sizes["plan"]))
        gpu["host_link"] = run.attempt(gpu, "host", f"{label}: host copies",
                                       lambda: kernels.host_link(torch, timer, sizes["host"],
                                                                 sizes["host_plan"]))
    finally:
        samples = sampler.stop()
        gpu["counters"]["after"] = _safe(reader.counters)
        tele["under_load"] = telemetry.summarize_samples(samples, "gemm")
        tele["all"] = telemetry.summarize_samples(samples, "")
        reader.close()
        if not cpu:
            torch.cuda.empty_cache()


def reference_shapes(run: Run, gpu: dict[str, Any], torch: Any, timer: Any, dtype: str,
                     square: dict[str, Any], plan: dict[str, Any], label: str
                     ) -> list[dict[str, Any]]:
    """The dtype's products at the class references' shapes (kernels.REFERENCE_SHAPES; each
    dimension divided by the sizes' shape_scale), those the n x n x n rate says fit in
    kernels.SHAPE_BUDGET_S; a shape left out is listed with the seconds it would take."""
    rate = ((square.get("tflops") or {}).get("median") or 0.0)
    scale = int(run.sizes.get("shape_scale", 1))
    out: list[dict[str, Any]] = []
    for full in kernels.REFERENCE_SHAPES.get(dtype, ()):
        if run.stopped():
            break
        shape = (max(8, full[0] // scale), max(8, full[1] // scale), max(8, full[2] // scale))
        seconds = kernels.shape_seconds(shape, rate, plan)
        if seconds > kernels.SHAPE_BUDGET_S:
            m, n, k = shape
            out.append({"dtype": dtype, "m": m, "n": n, "k": k, "library": None,
                        "reference_shape": True, "left_out": f"~{seconds:.0f} s at this rate"})
            continue
        name = "x".join(map(str, shape))
        done = run.attempt(gpu, f"gemm:{dtype}:{name}", f"{label}: {dtype} GEMM {name}",
                           functools.partial(kernels.gemm, torch, timer, dtype, 0, plan,
                                             shape=shape, stop=run.stopped))
        if done:
            out.append(done)
    return out


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return {"error": _last_line(exc)}


def gemm_dtypes(torch: Any, device: Any) -> list[str]:
    """fp32 (strict), tf32 where torch uses it (CUDA, compute capability 8.0 and up: PyTorch's
    HIP notes say ROCm has none), bf16, fp16, fp8 where _scaled_mm exists (it raises on a
    device without fp8; that error is the result)."""
    if device.type == "cpu":
        return ["fp32", "bf16"]
    out = ["fp32"]
    hip = bool(getattr(torch.version, "hip", None))
    if not hip and torch.cuda.get_device_capability(device)[0] >= 8:
        out.append("tf32")
    out += ["bf16", "fp16"]
    if hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        if hip or torch.cuda.get_device_capability(device) >= (8, 9):
            out.append("fp8")
    return out


def other_library(torch: Any, device: Any) -> Optional[str]:
    """The BLAS library torch can also choose, when it is not the one it prefers now."""
    if device.type == "cpu":
        return None
    now = kernels.blas_library(torch)
    if now is None:
        return None
    return "cublas" if now == "cublaslt" else "cublaslt"


def conv_settings(torch: Any) -> dict[str, Any]:
    cudnn = torch.backends.cudnn
    return {"benchmark": bool(cudnn.benchmark), "allow_tf32": bool(cudnn.allow_tf32),
            "library": "MIOpen" if getattr(torch.version, "hip", None) else "cuDNN",
            "version": _safe(cudnn.version) if cudnn.is_available() else None}


def memory_size(torch: Any, device: Any, wanted: int) -> int:
    """Four buffers of this size must fit in an eighth of the free memory."""
    if device.type == "cpu":
        return wanted
    free, _ = torch.cuda.mem_get_info(device)
    return max(16 << 20, min(wanted, free // 8))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parent-pid", type=int)
    parser.add_argument("--stress", type=float, default=0.0)
    args = parser.parse_args(argv)
    die_with_parent(args.parent_pid)
    run = Run(dict(os.environ), max(0.0, args.stress))

    def interrupted(signum: int, frame: Any) -> None:
        run.result["interrupted"] = True
        run.stop_event.set()

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        run.mark("import", "importing torch")
        import torch

        run.result["torch"] = torch.__version__
        run.result["hip"] = getattr(torch.version, "hip", None)
        run.result["cuda"] = getattr(torch.version, "cuda", None)
        run.mark("init", "initialising the GPU runtime")
        cpu = run.cpu_devices > 0
        if cpu:
            torch.set_num_threads(1)
            devices = [torch.device("cpu")] * run.cpu_devices
        elif torch.cuda.is_available():
            devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
        else:
            devices = []
        run.result["backend"] = "cpu" if cpu else ("rocm" if run.result["hip"] else "cuda")
        run.result["blas"] = None if cpu else kernels.blas_library(torch)
        run.result["matmul_precision"] = torch.get_float32_matmul_precision()
        for index, device in enumerate(devices):
            if run.stopped():
                break
            gpu = describe_gpu(torch, index, cpu)
            gpu["errors"] = {}
            run.result["gpus"].append(gpu)
            measure_gpu(run, torch, index, device, gpu)
        if run.stress_s > 0 and not run.stopped() and devices:
            deep_stress.stress_all(run, torch, devices)
        if len(devices) > 1 and not run.stopped():
            run.mark("peer", "copies between each pair of GPUs")
            try:
                run.result["p2p"] = kernels.peer_copies(torch, devices, run.sizes["peer"],
                                                        run.sizes["host_plan"], cpu)
            except Exception as exc:  # noqa: BLE001
                run.result["errors"].append(f"peer copies: {_last_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - reported, with the stage it happened in
        run.result["errors"].append(f"{run.result['stage']}: {_last_line(exc)}")
    run.result["elapsed_s"] = round(time.monotonic() - run.started, 3)
    run.result["stage"] = "done"
    sys.stdout.write(json.dumps(run.result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
