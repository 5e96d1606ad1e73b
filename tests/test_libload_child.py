"""The library-load child for real: a fake torch whose libraries are built here with `cc`.

libtorch_hip.so needs the five ROCm libraries (RUNPATH $ORIGIN, as torch's wheels are
linked); a second libamdhip64.so.6 on LD_LIBRARY_PATH shadows torch's own, once without a
symbol libtorch_hip needs, once complete. The child runs through LiveHost (pseudo-command
`rocmdoctor-libload`), the check reads its report, and the snapshot replays it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.checks.rocm_libraries import LD_SO, RocmLibraries
from rocmdoctor.facts.libload import TORCH, LoaderError, rocm_libraries
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.snapshot import SnapshotHost, build_snapshot
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(shutil.which("cc") is None or not sys.platform.startswith(
                  "linux"), reason="needs cc on Linux")]

SONAMES = {"hip": "libamdhip64.so.6", "hsa": "libhsa-runtime64.so.1",
           "rocblas": "librocblas.so.4", "hipblaslt": "libhipblaslt.so.0",
           "miopen": "libMIOpen.so.1"}
LABELS = {"hip": "HIP runtime", "hsa": "HSA runtime", "rocblas": "rocBLAS",
          "hipblaslt": "hipBLASLt", "miopen": "MIOpen"}


def cc(out: Path, source: str, *args: str) -> None:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src), *args], check=True,
                   capture_output=True, timeout=120)
    src.unlink()


def fake_torch(tmp: Path) -> tuple[Path, Path, Path]:
    """(site folder, torch/lib, a folder with a shadowing libamdhip64 lacking hipMalloc)."""
    site, shadow = tmp / "site", tmp / "shadow"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    shadow.mkdir()
    (site / "torch" / "__init__.py").write_text("raise ImportError('never imported')\n")
    for key, soname in SONAMES.items():
        body = f"int {key}_entry(void) {{ return 1; }}\n"
        if key == "hip":
            body += "int hipMalloc(void) { return 0; }\n"
        cc(lib / soname, body, f"-Wl,-soname,{soname}")
    cc(shadow / SONAMES["hip"], "int hip_entry(void) { return 2; }\n",
       f"-Wl,-soname,{SONAMES['hip']}")
    needs = "".join(f"extern int {k}_entry(void);\n" for k in SONAMES)
    calls = " + ".join(f"{k}_entry()" for k in SONAMES)
    cc(lib / "libtorch_hip.so",
       f"{needs}extern int hipMalloc(void);\nint torch_hip(void) {{ return {calls} + "
       "hipMalloc(); }\n", f"-L{lib}", *(f"-l:{s}" for s in SONAMES.values()),
       "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
    return site, lib, shadow


def probe(python: str) -> dict[str, Any]:
    return {"executable": python, "version": "3.11", "packages": {"torch": "2.5.1+rocm6.2"},
            "torch": {"imported": False, "error": "ImportError: never imported"}}


def live(site: Path, ld_library_path: str = "") -> LiveHost:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(site),
           "HOME": str(site)}
    if ld_library_path:
        env["LD_LIBRARY_PATH"] = ld_library_path
    return LiveHost(probe=lambda: probe(sys.executable), environ=env)


def check(host: Any) -> CheckResult:
    return replace(run_one(RocmLibraries(), host), duration_ms=0)


def described(lib: Path, shadow: Path | None = None) -> list[Finding]:
    out = []
    for key, soname in SONAMES.items():
        if key == "hip" and shadow is not None:
            out.append(Finding.info(f"HIP runtime: {shadow / soname} (a ROCm tree outside the "
                                    "packages)"))
        else:
            out.append(Finding.info(f"{LABELS[key]}: {lib / soname} (torch's own copy "
                                    "(torch/lib))"))
    return out


def test_torch_own_libraries_load_and_replay(tmp_path: Path) -> None:
    site, lib, _ = fake_torch(tmp_path)
    host = live(site)
    load = rocm_libraries(host)
    assert load.ran and load.errors == () and load.torch_hip_loaded is True
    assert [(x.key, x.path, x.origin) for x in load.libraries] == [
        (k, str(lib / s), TORCH) for k, s in SONAMES.items()]
    assert load.kind == "bundled with torch"
    expected = RocmLibraries().result(
        Status.PASS, f"torch loads the HIP runtime from {lib / SONAMES['hip']} (bundled with "
        "torch)", described(lib))
    assert check(host) == expected
    # What the live run read replays to the same result.
    assert "rocmdoctor-libload" in build_snapshot(host)["commands"]
    # replayed as recorded (--no-redact); a published snapshot hides the home folder ($HOME
    # is the site folder here) and replays with it hidden
    assert check(SnapshotHost(build_snapshot(host, redact=False))) == expected
    redacted = check(SnapshotHost(build_snapshot(host)))
    assert str(site) not in repr(redacted)
    assert redacted.summary == expected.summary.replace(str(site), "~")


def test_a_shadow_without_a_symbol_fails_and_names_ld_library_path(tmp_path: Path) -> None:
    site, lib, shadow = fake_torch(tmp_path)
    host = live(site, f"{shadow}:/nonexistent/lib")
    load = rocm_libraries(host)
    assert load.torch_hip_loaded is False
    assert load.errors == (LoaderError(
        "undefined-symbol", str(lib / "libtorch_hip.so"), "hipMalloc", None,
        f"{lib / 'libtorch_hip.so'}: undefined symbol: hipMalloc"),)
    assert load.library("hip") is not None
    assert load.library("hip").shadowed == (str(lib / SONAMES["hip"]),)  # type: ignore[union-attr]
    needs = (f"{lib / 'libtorch_hip.so'} needs the symbol hipMalloc, which no library loaded "
             "with it provides")
    assert check(host) == RocmLibraries().result(
        Status.FAIL,
        f"torch loads the HIP runtime from {shadow / SONAMES['hip']} (standalone); the loader "
        f"fails: {needs}; the HIP runtime from {shadow} shadows torch's own",
        [*described(lib, shadow), Finding.error(needs),
         Finding.error(f"HIP runtime: {shadow / SONAMES['hip']}, found through the "
                       f"LD_LIBRARY_PATH entry {shadow}, is loaded instead of "
                       f"{lib / SONAMES['hip']}")],
        Fix("Take the folders that hold other ROCm copies out of LD_LIBRARY_PATH, so that "
            "torch finds its own (in your shell profile too).",
            ("export LD_LIBRARY_PATH=/nonexistent/lib",)), LD_SO)


def test_a_complete_shadow_still_warns(tmp_path: Path) -> None:
    site, lib, shadow = fake_torch(tmp_path)
    cc(shadow / SONAMES["hip"], "int hip_entry(void) { return 2; }\n"
       "int hipMalloc(void) { return 0; }\n", f"-Wl,-soname,{SONAMES['hip']}")
    host = live(site, str(shadow))
    result = check(host)
    assert (result.status, result.fix) == (Status.WARN, Fix(
        "Take the folders that hold other ROCm copies out of LD_LIBRARY_PATH, so that torch "
        "finds its own (in your shell profile too).", ("unset LD_LIBRARY_PATH",), ))
    assert rocm_libraries(host).torch_hip_loaded is True


def test_a_shadow_lacking_a_symbol_version_names_both_libraries(tmp_path: Path) -> None:
    # The glibc message of GLIBCXX_3.4.30-style failures ("version `X' not found (required by
    # Y)"), made for real: torch's libamdhip64 defines the version node HIP_6.2 and
    # libtorch_hip links against it; the copy on LD_LIBRARY_PATH defines only HIP_6.0.
    site, lib, shadow = fake_torch(tmp_path)
    hip = "int hip_entry(void) { return 1; }\nint hipMalloc(void) { return 0; }\n"
    for folder, node in ((lib, "HIP_6.2"), (shadow, "HIP_6.0")):
        script = tmp_path / f"{node}.map"
        script.write_text(f"{node} {{ global: hip_entry; hipMalloc; local: *; }};\n")
        cc(folder / SONAMES["hip"], hip, f"-Wl,-soname,{SONAMES['hip']}",
           f"-Wl,--version-script={script}")
    needs = "".join(f"extern int {k}_entry(void);\n" for k in SONAMES)
    cc(lib / "libtorch_hip.so",
       f"{needs}extern int hipMalloc(void);\nint torch_hip(void) {{ return "
       f"{' + '.join(f'{k}_entry()' for k in SONAMES)} + hipMalloc(); }}\n", f"-L{lib}",
       *(f"-l:{s}" for s in SONAMES.values()), "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
    host = live(site, str(shadow))
    load = rocm_libraries(host)
    assert load.torch_hip_loaded is False
    assert [(e.kind, e.library, e.what, e.required_by) for e in load.errors] == [
        ("version", str(shadow / SONAMES["hip"]), "HIP_6.2", str(lib / "libtorch_hip.so"))]
    result = check(host)
    lacks = (f"{shadow / SONAMES['hip']} lacks HIP_6.2, which {lib / 'libtorch_hip.so'} "
             "needs")
    assert result == RocmLibraries().result(
        Status.FAIL,
        f"torch loads the HIP runtime from {shadow / SONAMES['hip']} (standalone); the loader "
        f"fails: {lacks}; the HIP runtime from {shadow} shadows torch's own",
        [*described(lib, shadow), Finding.error(lacks),
         Finding.error(f"HIP runtime: {shadow / SONAMES['hip']}, found through the "
                       f"LD_LIBRARY_PATH entry {shadow}, is loaded instead of "
                       f"{lib / SONAMES['hip']}")],
        Fix("Take the folders that hold other ROCm copies out of LD_LIBRARY_PATH, so that "
            "torch finds its own (in your shell profile too).", ("unset LD_LIBRARY_PATH",)),
        LD_SO)


def test_a_library_that_crashes_or_hangs_on_load_is_survived(tmp_path: Path) -> None:
    # A constructor that kills the process (as a broken runtime's initialiser can) and one
    # that never returns: the child dies or is cut off, rocmdoctor goes on and says where.
    from rocmdoctor.facts.libload import LIBLOAD_TOOL, interpret

    site, lib, _ = fake_torch(tmp_path)
    crash = ("#include <signal.h>\nint miopen_entry(void) { return 1; }\n"
             "__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }\n")
    cc(lib / SONAMES["miopen"], crash, f"-Wl,-soname,{SONAMES['miopen']}")
    host = live(site)
    assert check(host) == RocmLibraries().result(
        Status.FAIL, "the library-load check was killed by signal 11 while loading "
        f"{lib / 'libtorch_hip.so'}")
    hang = ("#include <unistd.h>\nint miopen_entry(void) { return 1; }\n"
            "__attribute__((constructor)) static void stuck(void) { for (;;) pause(); }\n")
    cc(lib / SONAMES["miopen"], hang, f"-Wl,-soname,{SONAMES['miopen']}")
    res = live(site).run([LIBLOAD_TOOL], timeout=5)
    assert res.timed_out and res.duration_s < 30
    load = interpret(res)
    assert not load.ran and load.failure is not None
    assert load.failure.endswith(f"while loading {lib / 'libtorch_hip.so'}")


def test_the_child_dies_with_rocmdoctor() -> None:
    # LiveHost passes its pid; a child whose parent is already gone exits at once, silently.
    from rocmdoctor.host.live import LIBLOAD_SCRIPT, LIBLOAD_TOOL

    host = LiveHost(probe=lambda: probe(sys.executable), environ={"PATH": "/usr/bin:/bin"})
    argv = host._resolve([LIBLOAD_TOOL])
    assert argv == [sys.executable, LIBLOAD_SCRIPT, "--parent-pid", str(os.getpid())]
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    r = subprocess.run([sys.executable, LIBLOAD_SCRIPT, "--parent-pid", gone],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "")
