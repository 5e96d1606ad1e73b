"""The probe child: run by the Python that will train; prints one JSON object on stdout.

Standard library and torch only, so an interpreter without rocmdoctor installed can run it
by path. rocmdoctor's `rocmdoctor.host.probe` starts it with a timeout and reads the result (the
snapshot contract's `python` section). Progress goes to stderr as `ROCMDOCTOR_PROBE_PARTIAL`
lines, so that a crash or a hang still tells how far it got.

By hand: `python -c "import torch; print(torch.__version__, torch.version.hip,
torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_arch_list())"`.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any, Optional

PARTIAL_MARK = "ROCMDOCTOR_PROBE_PARTIAL "
PACKAGES = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton-rocm", "numpy",
            "rocm-sdk-core")
# fp32 with TF32 off: a 64-term dot product of values in [-1, 1] is exact to ~1e-6; TF32 or a
# broken kernel is off by 1e-3 or more.
SMOKE_TOLERANCE = 1e-3
# The pip-installed ROCm SDK (TheRock's `rocm` packages): `rocm-sdk path --root` prints the
# devel package's folder, or the core package's when rocm[devel] is absent (TheRock PR #7108).
ROCM_SDK_MODULES = ("_rocm_sdk_devel", "_rocm_sdk_core", "rocm_sdk")


def _child_setup() -> Any:
    """child_setup.py (die with the parent, keep stdout), loaded by path from this script's
    folder: rocmdoctor itself need not be importable in the Python that trains."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_setup.py")
    spec = importlib.util.spec_from_file_location("rocmdoctor_child_setup", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask), as torch's thread pool sees."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _libc() -> Optional[str]:
    import platform

    try:
        lib, version = platform.libc_ver()
    except Exception:
        return None
    return f"{lib}-{version}" if lib else None


def _platform() -> Optional[str]:
    import platform

    try:
        return platform.platform()
    except Exception:
        return None


def _in_venv(prefix: str, base_prefix: str) -> bool:
    """A virtual environment's sys.prefix differs from the interpreter's base_prefix
    (https://docs.python.org/3/library/venv.html#how-venvs-work)."""
    return prefix != base_prefix


def _last_line(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip().splitlines()
    return text[-1] if text else type(exc).__name__


class Probe:
    def __init__(self) -> None:
        self.result: dict[str, Any] = {
            "executable": sys.executable,
            "version": ".".join(str(p) for p in sys.version_info[:3]),
            "prefix": sys.prefix,
            "in_venv": _in_venv(sys.prefix, getattr(sys, "base_prefix", sys.prefix)),
            # What torch.utils.collect_env prints as "Libc version" and "Python platform".
            "libc": _libc(),
            "platform": _platform(),
            "cpu_count": _cpu_count(),
            "packages": {},
            "torch": {"imported": False, "error": None},
        }
        self.stage = "start"

    def mark(self, stage: str) -> None:
        """Record progress on stderr (fd 2, unbuffered) so a crash still reports it."""
        self.stage = stage
        line = PARTIAL_MARK + json.dumps({"stage": stage, "result": self.result}) + "\n"
        try:
            os.write(2, line.encode("utf-8", "replace"))
        except OSError:
            pass

    def packages(self) -> None:
        self.mark("packages")
        self.rocm_sdk()
        try:
            from importlib import metadata
        except ImportError:  # Python < 3.8
            return
        found: dict[str, str] = {}
        for name in PACKAGES:
            try:
                found[name] = metadata.version(name)
            except Exception:
                continue
        self.result["packages"] = found

    def torch(self, smoke: bool = True) -> None:
        info: dict[str, Any] = self.result["torch"]
        self.mark("import")
        try:
            import importlib

            torch: Any = importlib.import_module("torch")
        except BaseException as exc:  # ImportError, OSError from a missing .so, SystemExit
            info["error"] = _last_line(exc)
            info["traceback"] = traceback.format_exc()[-4000:]
            return
        info["imported"] = True
        self.mark("info")
        self.build_info(torch, info)
        self.mark("init")
        info["available"] = bool(torch.cuda.is_available())
        info["device_count"] = int(torch.cuda.device_count()) if info["available"] else 0
        if info["available"]:
            info["arch_list"] = [str(a) for a in torch.cuda.get_arch_list()]
        self.cudnn(torch, info)
        self.mark("devices")
        info["devices"] = [self.device(torch, i, info) for i in range(info["device_count"])]
        smokes = []
        for index, device in enumerate(info["devices"] if smoke else []):
            self.mark(f"smoke:{index}")
            device["smoke"] = self.smoke(torch, index)
            smokes.append(device["smoke"])
        if smokes:
            failed = [s for s in smokes if not s["ok"]]
            info["smoke"] = {"ok": not failed, "error": failed[0]["error"] if failed else None}
        else:  # the contract's shape, with ok unknown
            reason = "not asked for" if info["devices"] and not smoke else (
                "no GPU visible to torch")
            info["smoke"] = {"ok": None, "error": None, "reason": reason}

    def build_info(self, torch: Any, info: dict[str, Any]) -> None:
        version = getattr(torch, "version", None)
        info["version"] = str(getattr(torch, "__version__", ""))
        try:
            info["num_threads"] = int(torch.get_num_threads())
        except Exception:
            info["num_threads"] = None
        info["location"] = os.path.dirname(str(getattr(torch, "__file__", "") or ""))
        for key in ("hip", "cuda", "git_version", "rocm", "debug"):
            value = getattr(version, key, None)
            info[key] = value if value is None or isinstance(value, bool) else str(value)
        # The compiled target list, read directly so that it is known even when no GPU is
        # visible (torch.cuda.get_arch_list() returns [] then).
        flags = getattr(torch._C, "_cuda_getArchFlags", None)
        try:
            info["arch_list"] = str(flags()).split() if flags is not None else []
        except Exception:
            info["arch_list"] = []
        if info["hip"]:
            info.update(self.rocm_config(torch))
            # Official wheels carry their own ROCm user space in torch/lib (build_rocm.sh);
            # source builds load the system's /opt/rocm libraries instead.
            lib = os.path.join(info["location"], "lib")
            try:
                names = os.listdir(lib)
            except OSError:
                names = []
            info["bundles_rocm"] = any(n.startswith("libamdhip64.so") for n in names)

    @staticmethod
    def rocm_config(torch: Any) -> dict[str, Any]:
        """HIP runtime and MIOpen versions, read the way torch.utils.collect_env does."""
        try:
            config = str(torch._C._show_config()).splitlines()
        except Exception:
            return {}
        found: dict[str, Any] = {}
        for key, prefix in (("hip_runtime", "HIP Runtime"), ("miopen", "MIOpen")):
            lines = [line.rsplit(None, 1)[-1] for line in config if prefix in line]
            found[key] = lines[0] if lines else None
        return found

    @staticmethod
    def cudnn(torch: Any, info: dict[str, Any]) -> None:
        """cuDNN's version on CUDA builds, MIOpen's on ROCm builds (torch.backends.cudnn);
        whether XNNPACK is built in (collect_env's "Is XNNPACK available")."""
        try:
            import importlib

            info["xnnpack"] = bool(importlib.import_module("torch.backends.xnnpack").enabled)
        except Exception:
            info["xnnpack"] = None
        try:
            version = torch.backends.cudnn.version()
            info["cudnn_version"] = int(version) if version is not None else None
        except Exception as exc:
            info["cudnn_version"] = None
            info["cudnn_error"] = _last_line(exc)

    @staticmethod
    def device(torch: Any, index: int, info: dict[str, Any]) -> dict[str, Any]:
        props = torch.cuda.get_device_properties(index)
        major, minor = int(props.major), int(props.minor)
        gcn = getattr(props, "gcnArchName", None)
        device: dict[str, Any] = {
            "index": index,
            "name": str(props.name),
            "arch": str(gcn) if info.get("hip") and gcn else f"sm_{major}{minor}",
            "total_memory": int(props.total_memory),
            "cuda_capability": [major, minor],
            "multi_processor_count": int(getattr(props, "multi_processor_count", 0) or 0),
        }
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            device["uuid"] = str(uuid)
        return device

    @staticmethod
    def smoke(torch: Any, index: int) -> dict[str, Any]:
        """A matmul and a conv2d on the device, compared with the CPU in fp32 (TF32 off)."""
        start = time.perf_counter()
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            gen = torch.Generator().manual_seed(1234 + index)
            a = torch.rand((64, 64), generator=gen) * 2 - 1
            b = torch.rand((64, 64), generator=gen) * 2 - 1
            x = torch.rand((2, 3, 16, 16), generator=gen) * 2 - 1
            w = torch.rand((4, 3, 3, 3), generator=gen) * 2 - 1
            conv = torch.nn.functional.conv2d
            dev = torch.device("cuda", index)
            got_mm = (a.to(dev) @ b.to(dev)).cpu()
            got_conv = conv(x.to(dev), w.to(dev), padding=1).cpu()
            torch.cuda.synchronize(dev)
            err_mm = float((got_mm - a @ b).abs().max())
            err_conv = float((got_conv - conv(x, w, padding=1)).abs().max())
        except Exception as exc:
            return {"ok": False, "error": _last_line(exc),
                    "seconds": round(time.perf_counter() - start, 3)}
        bad = [name for name, err in (("matmul", err_mm), ("conv2d", err_conv))
               if not err <= SMOKE_TOLERANCE]  # NaN fails too
        error = None
        if bad:
            verb = "differs" if len(bad) == 1 else "differ"
            error = (f"{' and '.join(bad)} {verb} from the CPU result (max error matmul "
                     f"{err_mm:.3g}, conv2d {err_conv:.3g}; tolerance {SMOKE_TOLERANCE:g})")
        return {"ok": not bad, "error": error, "matmul_max_abs_err": err_mm,
                "conv_max_abs_err": err_conv, "seconds": round(time.perf_counter() - start, 3)}

    def rocm_sdk(self) -> None:
        """Where the pip-installed ROCm SDK's packages are, found without importing them."""
        import importlib.util

        found: dict[str, Optional[str]] = {}
        for name in ROCM_SDK_MODULES:
            try:
                spec = importlib.util.find_spec(name)
            except Exception:  # a broken package must not stop the probe
                spec = None
            where = None
            if spec is not None:
                locations = list(spec.submodule_search_locations or [])
                where = locations[0] if locations else (
                    os.path.dirname(spec.origin) if spec.origin else None)
            found[name] = where
        if any(found.values()):
            self.result["rocm_sdk"] = found


def main(argv: list[str]) -> int:
    setup = _child_setup()
    setup.die_with_parent(setup.parent_pid_from_argv(argv))  # no orphaned GPU probes
    setup.leave_own_folder(__file__)
    # Anything torch or a driver prints goes to stderr; stdout carries only the result.
    out_fd = setup.keep_stdout()
    probe = Probe()
    try:
        probe.packages()
        probe.torch(smoke="--no-smoke" not in argv)
    except BaseException as exc:  # report what was learned, with the reason it stopped
        probe.result["torch"]["error"] = _last_line(exc)
        probe.result["torch"]["failed_stage"] = probe.stage
    probe.mark("done")
    setup.hand_over(out_fd, json.dumps(probe.result) + "\n")
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # The result is written: skip the interpreter's teardown (unloading torch's libraries and
    # the CUDA/HIP runtime takes a noticeable part of the probe's time).
    sys.stderr.flush()
    os._exit(status)
