"""Load the ROCm libraries torch uses, the way importing torch loads them; print one JSON object.

    python libload_child.py [--parent-pid PID]

Run by the Python that trains (standard library only: an interpreter without rocmdoctor runs
it by path). It finds torch without importing it, then:

1. when torch/lib has no HIP runtime of its own but a pip-installed ROCm SDK does
   (site-packages/_rocm_sdk_*/lib), loads the SDK's copies first with RTLD_GLOBAL, as
   torch's `rocm_sdk.preload_libraries()` does on import;
2. loads torch/lib/libtorch_hip.so with RTLD_NOW, so the dynamic loader resolves every
   library and symbol it needs exactly as it will in training (LD_LIBRARY_PATH, RUNPATH,
   ld.so.cache, LD_PRELOAD);
3. reads /proc/self/maps for the copy of each library that was mapped;
4. loads, one by one with RTLD_NOW, each library that step 2 did not bring in (or when it
   failed), so that every library gets its own verdict.

By hand: `LD_DEBUG=libs python -c "import torch" 2>&1 | grep -E 'amdhip64|hsa-runtime|rocblas|
hipblaslt|MIOpen'` or `grep -E 'amdhip64|hsa-runtime|rocblas|hipblaslt|MIOpen'
/proc/<pid of a training process>/maps`.

Progress goes to stderr as ROCMDOCTOR_LIBLOAD_PARTIAL lines, so that a library whose
constructor crashes the process still leaves what was learned before it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

SCHEMA = "rocmdoctor.libload/1"
PARTIAL_MARK = "ROCMDOCTOR_LIBLOAD_PARTIAL "
# (key, file name prefix): the HIP runtime, the HSA runtime, rocBLAS, hipBLASLt and MIOpen.
# Old wheels renamed their bundled copies with a hash (libMIOpen-12425ccb.so.1), so a name
# matches the prefix followed by "." or "-".
TARGETS = (
    ("hip", "libamdhip64"),
    ("hsa", "libhsa-runtime64"),
    ("rocblas", "librocblas"),
    ("hipblaslt", "libhipblaslt"),
    ("miopen", "libMIOpen"),
)
TORCH_HIP = "libtorch_hip.so"
MAX_MAPPED = 2000


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


def matches(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and name[len(prefix):len(prefix) + 1] in (".", "-")


def _listdir(path: Optional[str]) -> list[str]:
    if not path:
        return []
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _spec_dir(name: str) -> Optional[str]:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return str(locations[0])
    return os.path.dirname(spec.origin) if spec.origin else None


def _sdk_lib_dirs(torch_dir: Optional[str]) -> list[str]:
    """lib folders of the pip-installed ROCm SDK packages (_rocm_sdk_core, _rocm_sdk_libraries*,
    _rocm_sdk_device*), in site-packages folders on sys.path and beside torch."""
    roots = [p for p in sys.path if p and os.path.isdir(p)]
    if torch_dir:
        roots.insert(0, os.path.dirname(torch_dir))
    found: list[str] = []
    for root in dict.fromkeys(os.path.abspath(r) for r in roots):
        for name in _listdir(root):
            lib = os.path.join(root, name, "lib")
            if name.startswith("_rocm_sdk_") and os.path.isdir(lib) and lib not in found:
                found.append(lib)
    # _rocm_sdk_core first: it holds the HIP and HSA runtimes the others link to.
    return sorted(found, key=lambda d: (not d.endswith(os.sep + "_rocm_sdk_core" + os.sep + "lib"),
                                        d))


def mapped_libraries() -> list[str]:
    """Every shared object mapped into this process, in load order."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            lines = fh.readlines()
    except OSError:
        return []
    seen: dict[str, None] = {}
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        if path.startswith("/") and ".so" in os.path.basename(path):
            seen.setdefault(path, None)
    return list(seen)[:MAX_MAPPED]


def _packages() -> dict[str, str]:
    try:
        from importlib import metadata
    except ImportError:
        return {}
    found: dict[str, str] = {}
    try:
        for dist in metadata.distributions():
            name = str(dist.metadata["Name"] or "").strip().lower().replace("_", "-")
            wanted = name in ("rocm", "torch") or name.startswith(("rocm-", "amd-torch-device-"))
            if wanted and name not in found:
                found[name] = str(dist.version)
    except Exception:
        return found
    return dict(sorted(found.items()))


class LibLoad:
    def __init__(self) -> None:
        self.result: dict[str, Any] = {
            "schema": SCHEMA,
            "python": sys.executable,
            "ld_library_path": [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p],
            "ld_preload": [p for p in os.environ.get("LD_PRELOAD", "").replace(" ", ":").split(":")
                           if p],
            "steps": [],
            "libraries": {},
        }

    def mark(self, stage: str) -> None:
        line = PARTIAL_MARK + json.dumps({"stage": stage, "result": self.result}) + "\n"
        try:
            os.write(2, line.encode("utf-8", "replace"))
        except OSError:
            pass

    def load(self, path: str, how: str, global_: bool = True) -> bool:
        import ctypes

        self.mark(f"load:{path}")
        mode = os.RTLD_NOW | (ctypes.RTLD_GLOBAL if global_ else ctypes.RTLD_LOCAL)
        step: dict[str, Any] = {"load": path, "how": how, "ok": True, "error": None}
        try:
            ctypes.CDLL(path, mode=mode)
        except OSError as exc:
            step["ok"] = False
            step["error"] = str(exc)[:2000]
        self.result["steps"].append(step)
        return bool(step["ok"])

    def candidates(self, dirs: list[str]) -> dict[str, list[str]]:
        """For each library, the copies in these folders (in search order)."""
        out: dict[str, list[str]] = {key: [] for key, _ in TARGETS}
        for folder in dirs:
            for name in _listdir(folder):
                for key, prefix in TARGETS:
                    if matches(name, prefix):
                        out[key].append(os.path.join(folder, name))
        return out

    def run(self) -> None:
        self.mark("start")
        torch_dir = _spec_dir("torch")
        torch_lib = os.path.join(torch_dir, "lib") if torch_dir else None
        sdk_dirs = _sdk_lib_dirs(torch_dir)
        torch_files = _listdir(torch_lib)
        self.result.update({
            "torch_dir": torch_dir,
            "torch_lib": torch_lib if torch_lib and os.path.isdir(torch_lib) else None,
            "torch_hip": TORCH_HIP in torch_files,
            "sdk_lib_dirs": sdk_dirs,
            "packages": _packages(),
        })
        search = [*self.result["ld_library_path"], *([torch_lib] if torch_lib else []),
                  *sdk_dirs]
        self.result["candidates"] = self.candidates(search)
        bundles_hip = any(matches(n, "libamdhip64") for n in torch_files)
        if not bundles_hip and sdk_dirs:
            # torch/__init__ preloads the SDK's libraries by path (rocm_sdk.preload_libraries)
            for _key, prefix in TARGETS:
                for folder in sdk_dirs:
                    names = [n for n in _listdir(folder) if matches(n, prefix)]
                    if names:
                        self.load(os.path.join(folder, min(names, key=len)), "preload")
                        break
        if torch_lib and TORCH_HIP in torch_files:
            self.result["torch_hip_loaded"] = self.load(os.path.join(torch_lib, TORCH_HIP),
                                                        "torch")
        self.collect()
        for key, prefix in TARGETS:
            if self.result["libraries"][key]["path"] is not None:
                continue
            copies = self.result["candidates"][key]  # in search order
            if copies:
                first = os.path.dirname(copies[0])
                target: Optional[str] = min(
                    (c for c in copies if os.path.dirname(c) == first), key=len)
            else:
                target = self._soname(prefix)
            if target is None:
                self.result["libraries"][key]["error"] = "not found"
                continue
            ok = self.load(target, "alone", global_=False)
            self.collect()
            if not ok and self.result["libraries"][key]["path"] is None:
                self.result["libraries"][key]["error"] = self.result["steps"][-1]["error"]
                self.result["libraries"][key]["tried"] = target
        self.mark("done")

    @staticmethod
    def _soname(prefix: str) -> Optional[str]:
        """The name the loader's cache knows for a library found nowhere else."""
        try:
            import ctypes.util

            return ctypes.util.find_library(prefix[3:])
        except Exception:
            return None

    def collect(self) -> None:
        mapped = mapped_libraries()
        self.result["mapped"] = mapped
        for key, prefix in TARGETS:
            entry = self.result["libraries"].setdefault(key, {"path": None, "error": None})
            if entry["path"] is None:
                hits = [p for p in mapped if matches(os.path.basename(p), prefix)]
                if hits:
                    entry["path"] = hits[0]
                    entry["error"] = None
                    if len(hits) > 1:
                        entry["also"] = hits[1:]


def main(argv: list[str]) -> int:
    setup = _child_setup()
    setup.die_with_parent(setup.parent_pid_from_argv(argv))
    setup.leave_own_folder(__file__)
    out_fd = setup.keep_stdout()  # whatever a library's constructor prints goes to stderr
    job = LibLoad()
    try:
        job.run()
    except BaseException as exc:  # report what was learned, with the reason it stopped
        job.result["error"] = f"{type(exc).__name__}: {exc}"[:500]
    setup.hand_over(out_fd, json.dumps(job.result) + "\n")
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # skip unloading the libraries: their destructors may hang
