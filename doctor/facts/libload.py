"""Which copy of each ROCm library torch really loads, as the library-load child found it.

The child (rocmdoctor.host.libload_child) runs in the Python that trains through the
pseudo-command `rocmdoctor-libload` (LiveHost maps it onto the script; a snapshot records it
under that key): it loads torch's HIP library the way importing torch does and reads
/proc/self/maps. This module is the only reader of its output: the copy and origin of the
HIP runtime, HSA runtime, rocBLAS, hipBLASLt and MIOpen; the loader's errors, each with the
library that lacks a symbol or a GLIBCXX/GLIBC version; the copies that shadow torch's own.

By hand: `LD_DEBUG=libs python -c "import torch" 2>&1 | grep -E 'amdhip64|hsa-runtime|
rocblas|hipblaslt|MIOpen'`.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.facts.rocm_version import (
    KIND_DISTRO,
    KIND_NEWER,
    KIND_PYTHON,
    KIND_STANDALONE,
    KIND_SYSTEM,
)
from rocmdoctor.host import CommandResult, Host

LIBLOAD_TOOL = "rocmdoctor-libload"  # LiveHost runs host/libload_child.py for this name
LIBLOAD_TIMEOUT_S = 60.0
PARTIAL_MARK = "ROCMDOCTOR_LIBLOAD_PARTIAL "  # keep equal to libload_child.PARTIAL_MARK
LIBRARIES = (("hip", "HIP runtime", "libamdhip64"), ("hsa", "HSA runtime", "libhsa-runtime64"),
             ("rocblas", "rocBLAS", "librocblas"), ("hipblaslt", "hipBLASLt", "libhipblaslt"),
             ("miopen", "MIOpen", "libMIOpen"))
# Where a copy comes from.
TORCH, SDK, SYSTEM, NEWER, DISTRO, CONDA, BOUND, OTHER = (
    "torch", "rocm-sdk", "system", "newer-system", "distribution", "conda", "container-host",
    "standalone")
ORIGIN_TEXT = {
    TORCH: "torch's own copy (torch/lib)", SDK: "the pip-installed ROCm SDK",
    SYSTEM: "the system ROCm", NEWER: "the system ROCm (newer packages)",
    DISTRO: "the distribution's packages", CONDA: "the conda environment",
    BOUND: "the host, bound in by Apptainer/Singularity (/.singularity.d/libs)",
    OTHER: "a ROCm tree outside the packages",
}
# The install kind of the ROCm torch runs on, from where its HIP runtime came.
KIND_OF_ORIGIN = {TORCH: "bundled with torch", SDK: KIND_PYTHON, SYSTEM: KIND_SYSTEM,
                  NEWER: KIND_NEWER, DISTRO: KIND_DISTRO, CONDA: "conda packages",
                  BOUND: "the container host's", OTHER: KIND_STANDALONE}

# ld.so's messages (glibc elf/dl-lookup.c, dl-version.c, dl-load.c).
_UNDEFINED = re.compile(r"(?P<lib>/?[^\s:]+): undefined symbol: (?P<sym>\S+)")
_VERSION = re.compile(r"(?P<lib>/?[^\s:]+): version [`'](?P<ver>[A-Za-z_]+[0-9.]*)' not found "
                      r"\(required by (?P<by>[^)\s]+)\)")
_MISSING = re.compile(r"(?P<lib>[^\s:]+): cannot open shared object file")


@dataclass(frozen=True)
class LoaderError:
    kind: str  # "undefined-symbol", "version", "missing"
    library: str  # the library that lacks the symbol/version, or the one not found
    what: str  # the symbol, the version (GLIBCXX_3.4.30), or ""
    required_by: Optional[str]  # for a version: the library that needs it
    text: str


def parse_loader_errors(text: str) -> list[LoaderError]:
    """The dynamic loader's errors in a dlopen/ImportError message. Never raises."""
    found: list[LoaderError] = []
    for raw in str(text).splitlines():
        line = raw.strip()[:4000]
        errors = [LoaderError("version", m["lib"], m["ver"], m["by"], line)
                  for m in _VERSION.finditer(line)]
        errors += [LoaderError("undefined-symbol", m["lib"], m["sym"], None, line)
                   for m in _UNDEFINED.finditer(line)]
        errors += [LoaderError("missing", m["lib"], "", None, line)
                   for m in _MISSING.finditer(line)]
        found += [e for e in errors if e not in found]
    return found


@dataclass(frozen=True)
class LoadedLibrary:
    key: str
    label: str  # "HIP runtime"
    path: Optional[str]  # the mapped copy
    origin: Optional[str]  # TORCH, SDK, ...
    error: Optional[str]  # why it did not load on its own
    also: tuple[str, ...] = ()  # other copies mapped at the same time
    shadowed: tuple[str, ...] = ()  # copies torch/the SDK carry that lost to this one


@dataclass(frozen=True)
class LibLoad:
    ran: bool
    failure: Optional[str]  # why the child gave no result
    libraries: tuple[LoadedLibrary, ...] = ()
    errors: tuple[LoaderError, ...] = ()
    torch_lib: Optional[str] = None
    sdk_lib_dirs: tuple[str, ...] = ()
    ld_library_path: tuple[str, ...] = ()
    ld_preload: tuple[str, ...] = ()
    packages: Mapping[str, str] = field(default_factory=dict)
    torch_hip_loaded: Optional[bool] = None
    mapped: tuple[str, ...] = ()
    absent: bool = False  # no record of it: a snapshot taken before it existed

    def library(self, key: str) -> Optional[LoadedLibrary]:
        return next((lib for lib in self.libraries if lib.key == key), None)

    @property
    def kind(self) -> Optional[str]:
        """The install kind of the ROCm torch runs on (where its HIP runtime came from)."""
        hip = self.library("hip")
        return KIND_OF_ORIGIN.get(hip.origin or "") if hip and hip.path else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def origin_of(path: str, torch_lib: Optional[str], sdk_dirs: tuple[str, ...],
              conda_prefix: Optional[str]) -> str:
    folder = posixpath.dirname(path)
    if torch_lib and folder == torch_lib.rstrip("/"):
        return TORCH
    if any(folder == d.rstrip("/") for d in sdk_dirs) or "/_rocm_sdk_" in path:
        return SDK
    if path.startswith("/.singularity.d/"):
        return BOUND
    if conda_prefix and path.startswith(conda_prefix.rstrip("/") + "/"):
        return CONDA
    if re.search(r"/(?:mini|ana|micro)?(?:conda|forge|mamba)\d*/", path):
        return CONDA
    if re.match(r"^/opt/rocm/core", path):
        return NEWER
    if path.startswith("/opt/rocm"):
        return SYSTEM
    if re.match(r"^/(?:usr/)?lib(?:64|/[a-z0-9_]+-linux-gnu[a-z0-9_]*)?/", path):
        return DISTRO
    return OTHER


def _result_json(res: CommandResult) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    for line in reversed(res.stdout.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        schema = value.get("schema") if isinstance(value, dict) else None
        if isinstance(value, dict) and isinstance(schema, str) and schema.startswith(
                "rocmdoctor.libload"):
            return value, None
    stage = None
    partial = None
    for line in reversed(res.stderr.splitlines()):
        if line.startswith(PARTIAL_MARK):
            try:
                value = json.loads(line[len(PARTIAL_MARK):])
            except ValueError:
                continue
            if isinstance(value, dict):
                stage = value.get("stage") if isinstance(value.get("stage"), str) else None
                partial = value.get("result") if isinstance(value.get("result"), dict) else None
                break
    where = f" while loading {stage[5:]}" if stage and stage.startswith("load:") else ""
    if res.timed_out:
        reason = f"the library-load check did not finish within {LIBLOAD_TIMEOUT_S:g} s{where}"
    elif res.returncode < 0:
        reason = f"the library-load check was killed by signal {-res.returncode}{where}"
    elif res.returncode == 127:
        reason = "no record of the library-load check (a snapshot taken before it existed)"
    else:
        tail = [ln for ln in res.stderr.splitlines() if ln.strip()
                and not ln.startswith(PARTIAL_MARK)]
        reason = "the library-load check printed no result" + (
            f": {tail[-1][:300]}" if tail else "")
    return partial, reason


def interpret(res: CommandResult, conda_prefix: Optional[str] = None) -> LibLoad:
    """A LibLoad from the child's CommandResult (or a snapshot's). Never raises."""
    data, failure = _result_json(res)
    if res.not_found:
        return LibLoad(False, failure, absent=True)
    if data is None or failure is not None:  # a partial report says only how far it got
        return LibLoad(False, failure)
    torch_lib = _str(data.get("torch_lib"))
    sdk_dirs = _texts(data.get("sdk_lib_dirs"))
    raw = _dict(data.get("libraries"))
    candidates = _dict(data.get("candidates"))
    libs = []
    for key, label, _ in LIBRARIES:
        entry = _dict(raw.get(key))
        path = _str(entry.get("path"))
        error = _str(entry.get("error"))
        origin = origin_of(path, torch_lib, sdk_dirs, conda_prefix) if path else None
        own = [c for c in _texts(candidates.get(key))
               if origin_of(c, torch_lib, sdk_dirs, None) in (TORCH, SDK)]
        shadowed = tuple(c for c in own if path and origin not in (TORCH, SDK)
                         and posixpath.dirname(c) != posixpath.dirname(path))
        libs.append(LoadedLibrary(key, label, path, origin, error, _texts(entry.get("also")),
                                  shadowed))
    errors: list[LoaderError] = []
    steps = data.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and isinstance(step.get("error"), str):
            for err in parse_loader_errors(step["error"]):
                if err not in errors:
                    errors.append(err)
    packages = _dict(data.get("packages"))
    loaded = data.get("torch_hip_loaded")
    return LibLoad(
        True, failure, tuple(libs), tuple(errors),
        torch_lib, sdk_dirs, _texts(data.get("ld_library_path")), _texts(data.get("ld_preload")),
        {str(k): str(v) for k, v in packages.items() if isinstance(v, str)},
        loaded if isinstance(loaded, bool) else None, _texts(data.get("mapped")),
    )


def rocm_libraries(host: Host) -> LibLoad:
    """Run (or replay) the library-load child once per host."""

    def compute() -> LibLoad:
        res = host.run([LIBLOAD_TOOL], timeout=LIBLOAD_TIMEOUT_S)
        return interpret(res, host.env.get("CONDA_PREFIX"))

    return host.memo("facts:libload", compute)


def libload_known(host: Host) -> bool:
    """Whether the library-load child already ran (or was replayed) for this host: a caller
    that only wants what the checks paid for never starts it."""
    return host.known("facts:libload")


LD_SO_CONF = "/etc/ld.so.conf"
LD_PRELOAD_FILE = "/etc/ld.so.preload"


def ld_so_preload(host: Host) -> tuple[str, ...]:
    """The libraries /etc/ld.so.preload injects into every process (ld.so(8): separated by
    white space or colons), read once; none when the file is absent or empty."""

    def compute() -> tuple[str, ...]:
        text = host.read_file(LD_PRELOAD_FILE)
        if not text:
            return ()
        return tuple(e for e in text.replace(":", " ").split() if not e.startswith("#"))

    return host.memo("facts:ld_so_preload", compute)


def parse_ld_so_conf(text: str) -> tuple[list[str], list[str]]:
    """(folders, include patterns) of an ld.so.conf text (ldconfig(8)). Never raises."""
    folders: list[str] = []
    includes: list[str] = []
    for raw in str(text).splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include") and line[7:8] in (" ", "\t"):
            includes += line[8:].split()
        elif line.startswith("/"):
            folders.append(line.split("=", 1)[0].strip())  # old "dir=TYPE" form
    return folders, includes


def ld_so_conf_entries(host: Host) -> list[tuple[str, str]]:
    """(file, folder) for every folder the loader's configuration adds, in order."""

    def compute() -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        todo: list[str] = [LD_SO_CONF]
        seen: set[str] = set()
        while todo and len(seen) < 200:
            path = todo.pop(0)
            if path in seen:
                continue
            seen.add(path)
            folders, includes = parse_ld_so_conf(host.read_file(path) or "")
            found += [(path, f) for f in folders]
            for pattern in includes:
                if not pattern.startswith("/"):
                    pattern = posixpath.join(posixpath.dirname(path), pattern)
                todo += host.glob(pattern) if "*" in pattern else [pattern]
        return found

    return host.memo("facts:ld_so_conf", compute)
