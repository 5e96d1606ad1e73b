"""rocm-libraries: the HIP runtime, HSA runtime, rocBLAS, hipBLASLt and MIOpen that torch really
loads, where each copy comes from, and why one does not load.

In a child process of the Python that trains (crash- and hang-safe), torch's HIP library is
loaded the way importing torch loads it, with every symbol resolved (RTLD_NOW), and the
mapped copies are read from /proc/self/maps (rocmdoctor.host.libload_child).

By hand: `LD_DEBUG=libs python -c "import torch" 2>&1 | grep -E 'amdhip64|hsa-runtime|rocblas|
hipblaslt|MIOpen'`, `echo $LD_LIBRARY_PATH $LD_PRELOAD; cat /etc/ld.so.preload` and
`pip list 2>/dev/null | grep -E '^(rocm|amd-torch-device)'`.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Optional

from rocmdoctor.facts.amd_gpus import amd_gpus
from rocmdoctor.facts.libload import (
    BOUND,
    CONDA,
    LD_PRELOAD_FILE,
    LIBLOAD_TIMEOUT_S,
    ORIGIN_TEXT,
    SDK,
    TORCH,
    LibLoad,
    LoadedLibrary,
    LoaderError,
    ld_so_conf_entries,
    ld_so_preload,
    origin_of,
    parse_loader_errors,
    rocm_libraries,
)
from rocmdoctor.facts.os_release import read_os_release
from rocmdoctor.facts.paths import path_exists
from rocmdoctor.facts.rocm_packages import device_package_gaps, shipped_targets
from rocmdoctor.facts.torch import imported_skip_reason, probe_skip_reason, torch_info
from rocmdoctor.facts.torch_wheel import rocm_index_line
from rocmdoctor.facts.wsl import wsl_advice
from rocmdoctor.fixes import sudo_note
from rocmdoctor.host import Host
from rocmdoctor.kb import containers as kb_containers
from rocmdoctor.kb import rocm_sdk as kb_sdk
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

LD_SO = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
# "Which package owns this file", per distribution family (os-release ID / ID_LIKE):
# dpkg(1) -S, rpm(8) -qf, pacman(8) -Qo.
OWNER_COMMANDS = (("debian", "dpkg -S"), ("ubuntu", "dpkg -S"), ("fedora", "rpm -qf"),
                  ("rhel", "rpm -qf"), ("centos", "rpm -qf"), ("suse", "rpm -qf"),
                  ("opensuse", "rpm -qf"), ("sles", "rpm -qf"), ("arch", "pacman -Qo"))
ROCM_NAMES = ("libamdhip64", "libhsa-runtime64", "librocblas", "libhipblaslt", "libMIOpen",
              "libhsakmt", "librccl", "libstdc++")


def _describe(lib: LoadedLibrary) -> Finding:
    if lib.path is None:
        return Finding.info(f"{lib.label}: not loaded ({lib.error or 'not found'})")
    return Finding.info(f"{lib.label}: {lib.path} ({ORIGIN_TEXT.get(lib.origin or '', '?')})")


def _why_here(host: Host, load: LibLoad, path: str) -> str:
    folder = posixpath.dirname(path)
    if any(folder == d.rstrip("/") for d in load.ld_library_path):
        return f"the LD_LIBRARY_PATH entry {folder}"
    conf = next((c for c, d in ld_so_conf_entries(host) if d.rstrip("/") == folder), None)
    if conf is not None:
        return f"the loader configuration {conf} ({folder})"
    return folder


def _without(entries: tuple[str, ...], drop: set[str]) -> str:
    kept = [e for e in entries if e.rstrip("/") not in drop]
    return (f"export LD_LIBRARY_PATH={shlex.quote(':'.join(kept))}" if kept
            else "unset LD_LIBRARY_PATH")


class RocmLibraries(Check):
    id = "rocm-libraries"
    uses_python = True
    title = "ROCm libraries torch loads"
    source = LD_SO
    deadline_s = 60.0 + LIBLOAD_TIMEOUT_S + 30  # the probe, then the library-load child

    def applies(self, host: Host) -> Optional[str]:
        torch = torch_info(host)
        reason = probe_skip_reason(torch)
        if reason:
            return reason
        if not torch.package and not torch.imported:
            return imported_skip_reason(torch) or "torch is not installed"
        build = torch.build
        if build in ("cuda", "cpu"):
            return f"torch is a {'CUDA' if build == 'cuda' else 'CPU'} build, not a ROCm build"
        return None

    def run(self, host: Host) -> CheckResult:
        load = rocm_libraries(host)
        if load.absent:
            return self.skipped(load.failure or "no record of the library-load check")
        if not load.ran:
            status = Status.FAIL if "killed by signal" in (load.failure or "") else Status.ERROR
            return self.result(status, load.failure or "the library-load check failed")
        findings = [_describe(lib) for lib in load.libraries]
        hip = load.library("hip")
        kind = load.kind or "unknown (no HIP runtime loaded)"
        summary_bits: list[str] = []
        fixes: list[tuple[Status, Fix, Optional[str]]] = []
        # A torch that does not import tells the same loader's message through the probe.
        errors = (*load.errors, *(e for e in parse_loader_errors(torch_info(host).error or "")
                                  if e not in load.errors))
        self._errors(host, load, errors, findings, summary_bits, fixes)
        self._shadows(host, load, findings, summary_bits, fixes)
        self._packages(host, load, findings, summary_bits, fixes)
        self._preload(host, load, findings, summary_bits, fixes)
        advice = wsl_advice(host)
        if advice is not None:
            findings += advice.findings
            if advice.fix is not None:
                summary_bits.append("on WSL torch needs AMD's WSL runtime")
                fixes.append((Status.WARN, advice.fix, advice.source))
        note = sudo_note(host)
        if note:
            findings.append(Finding.error(note))
            summary_bits.append("run as root through sudo")
            fixes.append((Status.WARN, Fix(
                "Run rocmdoctor as the account that trains, without sudo.",
                ("rocmdoctor check",)), kb_containers.SUDOERS_ENV))
        where = f"{hip.path} ({kind})" if hip is not None and hip.path else kind
        summary = f"torch loads the HIP runtime from {where}"
        if not fixes:
            return self.passed(summary, findings)
        worst = Status.FAIL if any(s is Status.FAIL for s, _, _ in fixes) else Status.WARN
        status, fix, source = next(f for f in fixes if f[0] is worst)
        return self.result(worst, f"{summary}; {'; '.join(summary_bits)}", findings, fix,
                           source)

    def _errors(self, host: Host, load: LibLoad, errors: tuple[LoaderError, ...],
                findings: list[Finding], bits: list[str],
                fixes: list[tuple[Status, Fix, Optional[str]]]) -> None:
        for err in errors:
            findings.append(Finding.error(_error_text(err)))
        if not errors:
            return
        err = errors[0]
        bits.append(f"the loader fails: {_error_text(err)}")
        shadowing = [lib for lib in load.libraries if lib.shadowed]
        if shadowing:
            return  # the shadow's fix below is the one
        fixes.append((Status.FAIL, *self._repair(host, load, err)))

    def _repair(self, host: Host, load: LibLoad, err: LoaderError) -> tuple[Fix, Optional[str]]:
        lacking = err.library
        origin = _origin(load, lacking)
        if BOUND in (origin, _origin(load, err.required_by or "")):
            return Fix("Apptainer's --rocm binds the host's ROCm libraries, which need a newer "
                       "libstdc++ than the image has: start the container without --rocm and "
                       "bind only the devices: apptainer run --containall "
                       "--bind=/dev/kfd,/dev/dri <image.sif>"), kb_containers.APPTAINER_GLIBCXX
        if err.kind == "version" and origin == CONDA:
            return Fix(f"The conda environment's {posixpath.basename(lacking)} is older than "
                       f"{err.required_by} needs ({err.what}): update it in the environment.",
                       ("conda install -c conda-forge libstdcxx-ng",)), None
        if origin == TORCH or (err.kind == "missing" and load.torch_lib):
            line, why = rocm_index_line(host)
            return Fix(f"Reinstall torch ({why}).", (line,)), None
        if origin == SDK:
            version = load.packages.get("rocm") or load.packages.get(kb_sdk.SDK_PACKAGE)
            pin = f"=={version}" if version else ""
            return Fix("Reinstall the pip-installed ROCm at its version, from the index it "
                       "came from.", (f'pip install --force-reinstall "rocm[libraries]{pin}"',)
                       ), kb_sdk.THEROCK_RELEASES
        owner = _owner_command(host)
        return Fix(f"{lacking} comes from outside torch: find the package that owns it and "
                   "reinstall that package with your package manager (a library rebuilt or "
                   "copied over by hand is the usual cause).",
                   (f"{owner} {lacking}",) if owner else ()), None

    def _shadows(self, host: Host, load: LibLoad, findings: list[Finding], bits: list[str],
                 fixes: list[tuple[Status, Fix, Optional[str]]]) -> None:
        drop: set[str] = set()
        confs: list[str] = []
        for lib in load.libraries:
            if lib.also:
                findings.append(Finding.error(
                    f"two copies of the {lib.label} in one process: {lib.path} and "
                    f"{', '.join(lib.also)}"))
                bits.append(f"two copies of the {lib.label} are loaded")
            if not lib.shadowed or lib.path is None:
                continue
            why = _why_here(host, load, lib.path)
            findings.append(Finding.error(
                f"{lib.label}: {lib.path}, found through {why}, is loaded instead of "
                f"{lib.shadowed[0]}"))
            bits.append(f"the {lib.label} from {posixpath.dirname(lib.path)} shadows torch's own")
            folder = posixpath.dirname(lib.path)
            if why.startswith("the LD_LIBRARY_PATH"):
                drop.add(folder)
            elif why.startswith("the loader configuration"):
                confs.append(why)
        status = Status.FAIL if load.errors else Status.WARN
        if drop:
            fixes.append((status, Fix(
                "Take the folders that hold other ROCm copies out of LD_LIBRARY_PATH, so that "
                "torch finds its own (in your shell profile too).",
                (_without(load.ld_library_path, drop),)), LD_SO))
        elif confs:
            fixes.append((status, Fix(
                f"Remove the folder from {confs[0]} (needs root) and rebuild the loader's "
                "cache with `sudo ldconfig`."), LD_SO))
        elif any(c not in load.ld_preload for lib in load.libraries for c in lib.also):
            # (a second copy LD_PRELOAD brings is fixed by removing the entry, below)
            fixes.append((Status.WARN, Fix(
                "Build the extensions that load another ROCm against torch's own ROCm release "
                "(torch.version.hip), or use a torch built for the system ROCm."), None))

    def _packages(self, host: Host, load: LibLoad, findings: list[Finding], bits: list[str],
                  fixes: list[tuple[Status, Fix, Optional[str]]]) -> None:
        torch = torch_info(host)
        targets = [g.gfx for g in amd_gpus(host).gpus] + [d.arch or "" for d in torch.devices]
        gaps = device_package_gaps(load.packages, targets, torch.any_version,
                                   shipped_targets(host))
        for gap in gaps:
            findings.append(Finding.error(gap.text))
        if gaps:
            bits.append(f"no GPU code installed for {', '.join(sorted({g.target for g in gaps}))}")
            fixes.append((Status.FAIL, gaps[0].fix, kb_sdk.THEROCK_RELEASES))

    def _preload(self, host: Host, load: LibLoad, findings: list[Finding], bits: list[str],
                 fixes: list[tuple[Status, Fix, Optional[str]]]) -> None:
        entries = [("LD_PRELOAD", e) for e in load.ld_preload]
        entries += [(LD_PRELOAD_FILE, e) for e in ld_so_preload(host)]
        bad = []
        for where, entry in entries:
            name = posixpath.basename(entry)
            if entry.startswith("/") and not path_exists(host, entry):
                findings.append(Finding.error(f"{where} names {entry}, which does not exist: "
                                              "the loader ignores it with an error in every "
                                              "process"))
                bad.append(where)
            elif name.startswith(ROCM_NAMES):
                findings.append(Finding.error(f"{where} injects {entry} into every process, "
                                              "ahead of the copy torch brings"))
                bad.append(where)
            else:
                findings.append(Finding.info(f"{where} injects {entry} into every process"))
        if bad:
            bits.append(f"{bad[0]} injects a library")
            command = ("unset LD_PRELOAD" if bad[0] == "LD_PRELOAD" else None)
            fixes.append((Status.WARN, Fix(
                f"Remove the entry from {bad[0]}" + ("" if command else " (needs root)") + ".",
                (command,) if command else ()), LD_SO))


def _owner_command(host: Host) -> Optional[str]:
    """The package manager's "which package owns this file" for this distribution, or None."""
    osr = read_os_release(host)
    families = osr.families if osr else ()
    return next((command for family, command in OWNER_COMMANDS if family in families), None)


def _origin(load: LibLoad, path: str) -> Optional[str]:
    return origin_of(path, load.torch_lib, load.sdk_lib_dirs, None) if path.startswith(
        "/") else None


def _error_text(err: LoaderError) -> str:
    if err.kind == "undefined-symbol":
        return (f"{err.library} needs the symbol {err.what}, which no library loaded with it "
                "provides")
    if err.kind == "version":
        return f"{err.library} lacks {err.what}, which {err.required_by} needs"
    return f"{err.library} is not found on the loader's path"
