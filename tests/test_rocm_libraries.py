"""rocm-libraries replayed from real captures: what the loader said, where each copy came from.

The library-load child's report (`rocmdoctor-libload` in a snapshot) is built from each
capture: its loader message as the failed step's error, its ldd/find paths as the mapped
copies, its pip list as the packages.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.rocm_libraries import LD_SO, RocmLibraries
from rocmdoctor.facts.libload import (
    LIBLOAD_TOOL,
    SDK,
    TORCH,
    LoaderError,
    interpret,
    parse_ld_so_conf,
    parse_loader_errors,
)
from rocmdoctor.host import CommandResult
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import containers as kb_containers
from rocmdoctor.kb import rocm_sdk as kb_sdk
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = RocmLibraries()
KEYS = ("hip", "hsa", "rocblas", "hipblaslt", "miopen")
LABELS = {"hip": "HIP runtime", "hsa": "HSA runtime", "rocblas": "rocBLAS",
          "hipblaslt": "hipBLASLt", "miopen": "MIOpen"}
SITE = "/usr/lib/python3.12/site-packages"
TORCH_LIB = f"{SITE}/torch/lib"
WHEEL = {"hip": f"{TORCH_LIB}/libamdhip64.so", "hsa": f"{TORCH_LIB}/libhsa-runtime64.so",
         "rocblas": f"{TORCH_LIB}/librocblas.so", "hipblaslt": f"{TORCH_LIB}/libhipblaslt.so",
         "miopen": f"{TORCH_LIB}/libMIOpen.so"}


def child(libraries: dict[str, Optional[str]], *, errors: tuple[str, ...] = (),
          torch_lib: Optional[str] = TORCH_LIB, sdk: tuple[str, ...] = (),
          candidates: Optional[dict[str, list[str]]] = None, packages: Optional[dict[str, str]] = None,
          ld_library_path: tuple[str, ...] = (), ld_preload: tuple[str, ...] = ()
          ) -> dict[str, Any]:
    """The `rocmdoctor-libload` command entry a snapshot holds."""
    report = {
        "schema": "rocmdoctor.libload/1", "python": "/usr/bin/python3",
        "ld_library_path": list(ld_library_path), "ld_preload": list(ld_preload),
        "torch_dir": torch_lib.rsplit("/", 1)[0] if torch_lib else None,
        "torch_lib": torch_lib, "torch_hip": bool(torch_lib), "sdk_lib_dirs": list(sdk),
        "packages": packages or {"torch": "2.5.1+rocm6.2"},
        "candidates": candidates or {k: [] for k in KEYS},
        "steps": [{"load": f"{torch_lib}/libtorch_hip.so", "how": "torch", "ok": not errors,
                   "error": "\n".join(errors) or None}],
        "torch_hip_loaded": not errors,
        "libraries": {k: {"path": libraries.get(k), "error": None if libraries.get(k)
                          else "not found"} for k in KEYS},
        "mapped": [p for p in libraries.values() if p],
    }
    return {"returncode": 0, "stdout": json.dumps(report) + "\n", "stderr": "",
            "timed_out": False}


def probe(version: str = "2.5.1+rocm6.2", devices: tuple[str, ...] = (),
          packages: Optional[dict[str, str]] = None) -> dict[str, Any]:
    return {"executable": "/usr/bin/python3", "version": "3.12.3",
            "packages": packages or {"torch": version},
            "torch": {"imported": True, "version": version, "hip": "6.2.41133-dd7f95766",
                      "cuda": None, "location": TORCH_LIB[:-4], "available": bool(devices),
                      "device_count": len(devices),
                      "devices": [{"index": i, "name": "GPU", "arch": a}
                                  for i, a in enumerate(devices)]}}


def host(entry: dict[str, Any], *, files: Optional[dict[str, str]] = None,
         env: Optional[dict[str, str]] = None, paths: Optional[dict[str, Any]] = None,
         python: Optional[dict[str, Any]] = None, user: Optional[dict[str, Any]] = None
         ) -> SnapshotHost:
    return SnapshotHost(make_snapshot(commands={LIBLOAD_TOOL: entry}, files=files, env=env,
                                      paths=paths, python=python or probe(), user=user))


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def listing(paths: dict[str, Optional[str]], origins: dict[str, str]) -> list[Finding]:
    out = []
    for key in KEYS:
        path = paths.get(key)
        out.append(Finding.info(f"{LABELS[key]}: {path} ({origins[key]})") if path else
                   Finding.info(f"{LABELS[key]}: not loaded (not found)"))
    return out


def loader_line(name: str, marker: str) -> str:
    """The capture's line holding the loader's message (a traceback's last line)."""
    line = next(x for x in fixture_text(name).splitlines() if marker in x)
    return re.sub(r"^\S*Z ", "", line)  # a CI log's timestamp


OWN = "torch's own copy (torch/lib)"


# --- the parsers ----------------------------------------------------------------------------

def test_real_loader_messages_parse() -> None:
    ck = loader_line("import-torch-undefined-symbol-libMIOpen-opt-rocm-7.2.0-composable-kernel-rebuilt-gfx1030.txt",
                     "undefined symbol")
    (err,) = parse_loader_errors(ck)
    assert (err.kind, err.library) == ("undefined-symbol", "/opt/rocm-7.2.0/lib/libMIOpen.so.1")
    assert err.what.startswith("_ZN2ck16tensor_operation6device8instance")
    conda = loader_line("importerror-conda-libstdcxx-glibcxx-3.4.30-not-found-libmigraphx-gfx1201.txt",
                        "GLIBCXX")
    assert parse_loader_errors(conda) == [LoaderError(
        "version", "/opt/conda/bin/../lib/libstdc++.so.6", "GLIBCXX_3.4.30",
        "/workspace/AMDMIGraphX/build/lib/libmigraphx_gpu.so.2011000", conda)]
    missing = loader_line("import-torch-importerror-libamdhip64.so.7-cannot-open-therock-rocm7.0-built-torch2.7.1-ci.txt",
                          "cannot open")
    assert [(e.kind, e.library) for e in parse_loader_errors(missing)] == [
        ("missing", "libamdhip64.so.7")]


def test_ld_so_conf_forms() -> None:
    text = fixture_text("ld-so-conf-d-hsa-rocr-dev-conf-stale-opt-rocm-path-versioned-install-rocm3.5.txt")
    assert parse_ld_so_conf(text.split("\n", 1)[1]) == (["/opt/rocm/hsa/lib"], [])
    assert parse_ld_so_conf("include /etc/ld.so.conf.d/*.conf\n# c\n/usr/local/lib\n") == (
        ["/usr/local/lib"], ["/etc/ld.so.conf.d/*.conf"])


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_loader_errors(text)
    parse_ld_so_conf(text)
    interpret(CommandResult(0, text, text))


def test_wrong_typed_child_reports_give_a_result() -> None:
    for stdout in ('{"schema": "rocmdoctor.libload/1", "libraries": [1], "steps": {"a": 2}, '
                   '"candidates": "x", "packages": [], "mapped": 3, "torch_lib": 7}\n',
                   '{"schema": "rocmdoctor.libload/1", "libraries": {"hip": {"path": 5}}}\n',
                   '{"schema": 3}\n', "[]\n", "not json\n"):
        load = interpret(CommandResult(0, stdout, ""))
        assert load.kind is None


def test_a_crash_while_loading_names_the_library() -> None:
    partial = json.dumps({"stage": "load:/opt/rocm/lib/libamdhip64.so", "result": {
        "schema": "rocmdoctor.libload/1", "libraries": {}}})
    res = CommandResult(-11, "", f"ROCMDOCTOR_LIBLOAD_PARTIAL {partial}\nSegmentation fault\n")
    assert run(host(res.to_dict())) == CHECK.result(
        Status.FAIL, "the library-load check was killed by signal 11 while loading "
        "/opt/rocm/lib/libamdhip64.so")


# --- the check ------------------------------------------------------------------------------

def test_skips_cpu_and_cuda_builds() -> None:
    cpu = host(child(WHEEL), python=probe("2.13.0+cpu") | {"torch": {"imported": True,
                                                                      "version": "2.13.0+cpu"}})
    assert run(cpu).summary == "torch is a CPU build, not a ROCm build"


def test_wheel_with_its_own_libraries_passes() -> None:
    assert run(host(child(WHEEL))) == CHECK.result(
        Status.PASS, f"torch loads the HIP runtime from {WHEEL['hip']} (bundled with torch)",
        listing(WHEEL, dict.fromkeys(KEYS, OWN)))


def test_real_system_miopen_with_an_undefined_ck_symbol() -> None:
    # rocm-libraries#4547: a rebuilt composable_kernel under /opt/rocm broke the system MIOpen.
    line = loader_line("import-torch-undefined-symbol-libMIOpen-opt-rocm-7.2.0-composable-kernel-rebuilt-gfx1030.txt",
                       "undefined symbol")
    libs = {k: f"/opt/rocm-7.2.0/lib/{v.rsplit('/', 1)[1]}.7" for k, v in WHEEL.items()
            if k != "miopen"}
    entry = child(libs, errors=(line,), torch_lib=TORCH_LIB)
    result = run(host(entry, files={"/etc/os-release": "ID=ubuntu\nVERSION_ID=24.04\n"}))
    lib = "/opt/rocm-7.2.0/lib/libMIOpen.so.1"
    symbol = line.rsplit("undefined symbol: ", 1)[1]
    text = f"{lib} needs the symbol {symbol}, which no library loaded with it provides"
    assert result == CHECK.result(
        Status.FAIL, f"torch loads the HIP runtime from {libs['hip']} (system packages); the "
        f"loader fails: {text}",
        [*listing(libs, dict.fromkeys(KEYS, "the system ROCm")), Finding.error(text)],
        Fix(f"{lib} comes from outside torch: find the package that owns it and reinstall "
            "that package with your package manager (a library rebuilt or copied over by hand "
            "is the usual cause).", (f"dpkg -S {lib}",)))


def test_real_distro_source_build_that_does_not_import() -> None:
    # pytorch#158725: a source build installed under /usr/lib64 lacks rsmi_init. The child
    # finds no libtorch_hip.so in torch/lib and loads each library alone; the probe's import
    # error carries the loader's message.
    name = "import-torch-undefined-symbol-rsmi_init-usr-lib64-libtorch_hip-distro-source-build.txt"
    line = loader_line(name, "undefined symbol")
    assert line == "ImportError: /usr/lib64/libtorch_hip.so: undefined symbol: rsmi_init"
    libs = {k: f"/usr/lib64/{v.rsplit('/', 1)[1]}.6" for k, v in WHEEL.items()}
    entry = child(libs, torch_lib=None)
    python = {"executable": "/usr/bin/python3", "version": "3.13.5",
              "packages": {"torch": "2.10.0a0+git0b8b5f3"},
              "torch": {"imported": False, "error": line}}
    fedora = {"/etc/os-release": 'ID=fedora\nVERSION_ID=42\nPRETTY_NAME="Fedora Linux 42"\n'}
    text = ("/usr/lib64/libtorch_hip.so needs the symbol rsmi_init, which no library loaded "
            "with it provides")
    fix = Fix("/usr/lib64/libtorch_hip.so comes from outside torch: find the package that "
              "owns it and reinstall that package with your package manager (a library "
              "rebuilt or copied over by hand is the usual cause).",
              ("rpm -qf /usr/lib64/libtorch_hip.so",))
    assert run(host(entry, files=fedora, python=python)) == CHECK.result(
        Status.FAIL, "torch loads the HIP runtime from /usr/lib64/libamdhip64.so.6 "
        f"(distribution packages); the loader fails: {text}",
        [*listing(libs, dict.fromkeys(KEYS, "the distribution's packages")),
         Finding.error(text)], fix)
    # Without an os-release that names a known package manager, no command is guessed.
    assert run(host(entry, python=python)).fix == Fix(fix.text)


def test_real_second_rocblas_in_one_process() -> None:
    # ROCm/pytorch#1340: a rocm5.6 wheel with the system's ROCm 6.0.0 rocBLAS in the same
    # process aborts ("Could not load /opt/rocm-6.0.0/lib/rocblas/library/..."). Here the
    # system copy comes in through LD_PRELOAD, beside torch's own.
    text = fixture_text("rocblas-could-not-load-opt-rocm-6.0.0-tensilelibrary-wheel-rocm5.6-"
                        "mixed-system-libs-gfx1030.txt")
    assert "Could not load /opt/rocm-6.0.0/lib/rocblas/library/" in text
    system = "/opt/rocm-6.0.0/lib/librocblas.so.4"
    entry = child(WHEEL, ld_preload=(system,))
    report = json.loads(entry["stdout"])
    report["libraries"]["rocblas"]["also"] = [system]
    report["mapped"].append(system)
    entry["stdout"] = json.dumps(report) + "\n"
    two = f"two copies of the rocBLAS in one process: {WHEEL['rocblas']} and {system}"
    preload = f"LD_PRELOAD injects {system} into every process, ahead of the copy torch brings"
    unset = Fix("Remove the entry from LD_PRELOAD.", ("unset LD_PRELOAD",))
    h = host(entry, paths={system: {"type": "file", "mode": "0644"}})
    assert run(h) == CHECK.result(
        Status.WARN, f"torch loads the HIP runtime from {WHEEL['hip']} (bundled with torch); "
        "two copies of the rocBLAS are loaded; LD_PRELOAD injects a library",
        [*listing(WHEEL, dict.fromkeys(KEYS, OWN)), Finding.error(two), Finding.error(preload)],
        unset, LD_SO)
    # Brought in by something else (an extension built for the system ROCm): rebuild that.
    report["ld_preload"] = []
    entry["stdout"] = json.dumps(report) + "\n"
    result = run(host(entry))
    assert (result.status, result.fix) == (Status.WARN, Fix(
        "Build the extensions that load another ROCm against torch's own ROCm release "
        "(torch.version.hip), or use a torch built for the system ROCm."))


def test_real_conda_libstdcxx_too_old() -> None:
    # AMDMIGraphX#3405: conda's libstdc++ lacks GLIBCXX_3.4.30.
    line = loader_line("importerror-conda-libstdcxx-glibcxx-3.4.30-not-found-libmigraphx-gfx1201.txt",
                       "GLIBCXX")
    result = run(host(child(WHEEL, errors=(line,))))
    assert (result.status, result.fix) == (Status.FAIL, Fix(
        "The conda environment's libstdc++.so.6 is older than "
        "/workspace/AMDMIGraphX/build/lib/libmigraphx_gpu.so.2011000 needs (GLIBCXX_3.4.30): "
        "update it in the environment.", ("conda install -c conda-forge libstdcxx-ng",)))


def test_real_apptainer_host_libraries_need_a_newer_libstdcxx() -> None:
    # apptainer#1622: --rocm bound the host's libhsa-runtime64 into /.singularity.d/libs.
    line = loader_line("apptainer-rocm-host-libhsa-runtime64-glibcxx-3.4.29-not-found-containall-bind-fix.txt",
                       "GLIBCXX")
    libs = {**WHEEL, "hsa": "/.singularity.d/libs/libhsa-runtime64.so.1"}
    result = run(host(child(libs, errors=(line,)), env={"APPTAINER_CONTAINER": "/x/tf.sif"}))
    assert result.findings[1] == Finding.info(
        "HSA runtime: /.singularity.d/libs/libhsa-runtime64.so.1 (the host, bound in by "
        "Apptainer/Singularity (/.singularity.d/libs))")
    assert Finding.error("/lib/x86_64-linux-gnu/libstdc++.so.6 lacks GLIBCXX_3.4.29, which "
                         "/.singularity.d/libs/libhsa-runtime64.so.1 needs") in result.findings
    assert (result.status, result.source) == (Status.FAIL, kb_containers.APPTAINER_GLIBCXX)


def test_real_ld_library_path_to_opt_rocm_shadows_the_wheel() -> None:
    # rocm-systems#7701: LD_LIBRARY_PATH=/opt/rocm/lib is searched before anything else.
    text = fixture_text("ld-debug-libs-ldd-ld-library-path-opt-rocm-lib-search-order-libamd_smi.so.26-not-found-TRUNCATED.txt")
    assert "search path=/opt/rocm/lib              (LD_LIBRARY_PATH)" in text
    libs = {**WHEEL, "hip": "/opt/rocm/lib/libamdhip64.so.6"}
    entry = child(libs, ld_library_path=("/opt/rocm/lib",),
                  candidates={"hip": ["/opt/rocm/lib/libamdhip64.so.6", WHEEL["hip"]]})
    origins = {**dict.fromkeys(KEYS, OWN), "hip": "the system ROCm"}
    assert run(host(entry)) == CHECK.result(
        Status.WARN, "torch loads the HIP runtime from /opt/rocm/lib/libamdhip64.so.6 (system "
        "packages); the HIP runtime from /opt/rocm/lib shadows torch's own",
        [*listing(libs, origins),
         Finding.error("HIP runtime: /opt/rocm/lib/libamdhip64.so.6, found through the "
                       f"LD_LIBRARY_PATH entry /opt/rocm/lib, is loaded instead of {WHEEL['hip']}")],
        Fix("Take the folders that hold other ROCm copies out of LD_LIBRARY_PATH, so that torch "
            "finds its own (in your shell profile too).", ("unset LD_LIBRARY_PATH",)), LD_SO)


def test_a_shadow_through_the_loader_configuration_is_named_beside_ld_library_path() -> None:
    # AMD's post-install step writes /opt/rocm/lib and /opt/rocm/lib64 to
    # /etc/ld.so.conf.d/rocm.conf; LD_LIBRARY_PATH holds an unrelated folder.
    libs = {**WHEEL, "hip": "/opt/rocm/lib/libamdhip64.so.6"}
    entry = child(libs, ld_library_path=("/usr/local/lib",),
                  candidates={"hip": ["/opt/rocm/lib/libamdhip64.so.6", WHEEL["hip"]]})
    conf = "/etc/ld.so.conf.d/rocm.conf"
    h = host(entry, files={"/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n",
                           conf: "/opt/rocm/lib\n/opt/rocm/lib64\n"},
             paths={conf: {"type": "file"}})
    origins = {**dict.fromkeys(KEYS, OWN), "hip": "the system ROCm"}
    assert run(h) == CHECK.result(
        Status.WARN, "torch loads the HIP runtime from /opt/rocm/lib/libamdhip64.so.6 (system "
        "packages); the HIP runtime from /opt/rocm/lib shadows torch's own",
        [*listing(libs, origins),
         Finding.error(f"HIP runtime: /opt/rocm/lib/libamdhip64.so.6, found through the loader "
                       f"configuration {conf} (/opt/rocm/lib), is loaded instead of "
                       f"{WHEEL['hip']}")],
        Fix(f"Remove the folder from the loader configuration {conf} (/opt/rocm/lib) (needs "
            "root) and rebuild the loader's cache with `sudo ldconfig`."), LD_SO)


def test_the_deadline_covers_the_probe_and_the_library_load_child() -> None:
    # Run alone (`--only rocm-libraries`) the check waits for the probe, then for its child.
    from rocmdoctor.facts.libload import LIBLOAD_TIMEOUT_S
    from rocmdoctor.host.probe import PROBE_TIMEOUT_S

    assert CHECK.deadline_s is not None
    assert CHECK.deadline_s > PROBE_TIMEOUT_S + LIBLOAD_TIMEOUT_S


def test_real_therock_venv_loads_the_sdk() -> None:
    # TheRock#1113: libamdhip64.so.7 from site-packages/_rocm_sdk_core/lib; gfx110X-dgpu on gfx1100.
    name = "uv-pip-install-rocm-sdk-core-libraries-gfx110x-dgpu-and-ldd-libtorch-therock-rocm7.0.0rc20250731-TRUNCATED.txt"
    text = fixture_text(name)
    packages = dict(re.findall(r"^ \+ (\S+)==(\S+)$", text, re.MULTILINE))
    hip = re.search(r"libamdhip64.so.7 => (\S+)", text).group(1)  # type: ignore[union-attr]
    core = hip.rsplit("/", 1)[0]
    torch_lib = "/root/venv/lib/python3.12/site-packages/torch/lib"
    entry = child({"hip": hip}, torch_lib=torch_lib, sdk=(core,), packages=packages)
    h = host(entry, python=probe("2.7.1+rocm7.0.0rc20250731", devices=("gfx1100",)))
    result = run(h)
    assert result.summary == f"torch loads the HIP runtime from {hip} (Python packages)"
    assert result.status is Status.PASS
    assert packages["rocm-sdk-libraries-gfx110x-dgpu"] == "7.0.0rc20250731"


def test_real_gfx1150_with_the_gfx1151_family_package() -> None:
    # TheRock#3046: the gfx1150 index resolved rocm-sdk-libraries-gfx1151.
    text = fixture_text("uv-pip-install-torch-gfx1150-index-pulls-rocm-sdk-libraries-gfx1151-therock-rocm7.11.txt")
    names = re.findall(r"^(rocm-sdk-\S+)\s+-", text, re.MULTILINE)
    assert names == ["rocm-sdk-libraries-gfx1151", "rocm-sdk-core"]
    packages = {n: "7.11.0a20260112" for n in names} | {"torch": "2.9.1+rocm7.11.0a20260112"}
    core = f"{SITE}/_rocm_sdk_core/lib"
    entry = child({"hip": f"{core}/libamdhip64.so.7"}, sdk=(core,), packages=packages)
    result = run(host(entry, python=probe("2.9.1+rocm7.11.0a20260112", devices=("gfx1150",))))
    assert Finding.error("rocm-sdk-libraries-gfx1151 holds no code for gfx1150") in result.findings
    assert (result.status, result.fix) == (Status.FAIL, Fix(
        "Install torch and ROCm from the gfx1150 index.",
        ("pip install --force-reinstall --index-url https://rocm.nightlies.amd.com/v2/gfx1150/ "
         "torch",)))


def test_real_multi_arch_torch_device_packages() -> None:
    # ROCm/pytorch#3518: one amd-torch-device-<gfx> per target; gfx90a (the MI250) is there.
    text = fixture_text("collect_env-pip3-amd-torch-device-gfx-split-wheels-torch2.12-rocm7.14-mi250-TRUNCATED.txt")
    packages = dict(re.findall(r"^\[pip3\] (\S+)==(\S+)$", text, re.MULTILINE))
    packages["torch"] = "2.12.0+rocm7.14.0"
    entry = child(WHEEL, packages=packages)
    assert run(host(entry, python=probe("2.12.0+rocm7.14.0", devices=("gfx90a:sramecc+:xnack-",)))
               ).status is Status.PASS
    # The capture's list stops before gfx950: an MI355X would lack its package.
    result = run(host(entry, python=probe("2.12.0+rocm7.14.0", devices=("gfx950",))))
    assert (result.status, result.fix) == (Status.FAIL, Fix(
        "Install torch's device package for gfx950 (it brings rocm-sdk-device-gfx950 too).",
        (f'pip install --index-url {kb_sdk.MULTI_ARCH_INDEX} "torch[device-gfx950]==2.12.0+rocm7.14.0"',)))


def test_real_ld_preload_of_a_missing_file() -> None:
    # ROCm/pytorch#2231: "... from LD_PRELOAD cannot be preloaded ...: ignored."
    text = fixture_text("ld-preload-libiomp5-cannot-be-preloaded-venv-bin-lib-rocm-pytorch-ci.txt")
    path = re.search(r"object '([^']+)' from LD_PRELOAD", text).group(1)  # type: ignore[union-attr]
    result = run(host(child(WHEEL, ld_preload=(path,))))
    assert Finding.error(f"LD_PRELOAD names {path}, which does not exist: the loader ignores "
                         "it with an error in every process") in result.findings
    assert (result.status, result.fix) == (Status.WARN, Fix("Remove the entry from LD_PRELOAD.",
                                                             ("unset LD_PRELOAD",)))
    # with /etc/ld.so.preload injecting a ROCm library too, the variable (no root) goes first
    system = "/opt/rocm/lib/libamdhip64.so.6"
    both = run(host(child(WHEEL, ld_preload=(path,)), files={"/etc/ld.so.preload": system + "\n"},
                    paths={system: {"type": "file"}}))
    assert (both.status, both.findings[-1], both.fix) == (
        Status.WARN, Finding.error(f"/etc/ld.so.preload injects {system} into every process, "
                                   "ahead of the copy torch brings"),
        Fix("Remove the entry from LD_PRELOAD.", ("unset LD_PRELOAD",)))
    only_file = run(host(child(WHEEL), files={"/etc/ld.so.preload": system + "\n"},
                         paths={system: {"type": "file"}}))
    assert only_file.fix == Fix("Remove the entry from /etc/ld.so.preload (needs root).")


def test_sudo_is_named() -> None:
    result = run(host(child(WHEEL), env={"SUDO_USER": "user"},
                      user={"name": "root", "uid": 0, "groups": ["root"]}))
    assert (result.status, result.fix, result.source) == (
        Status.WARN, Fix("Run rocmdoctor as the account that trains, without sudo.",
                         ("rocmdoctor check",)), kb_containers.SUDOERS_ENV)


def test_origins() -> None:
    load = interpret(CommandResult(0, child(WHEEL, sdk=(f"{SITE}/_rocm_sdk_core/lib",))["stdout"]))
    assert {lib.origin for lib in load.libraries} == {TORCH}
    sdk = interpret(CommandResult(0, child({"hip": f"{SITE}/_rocm_sdk_core/lib/libamdhip64.so.7"},
                                           sdk=(f"{SITE}/_rocm_sdk_core/lib",))["stdout"]))
    assert sdk.library("hip").origin == SDK  # type: ignore[union-attr]


@pytest.mark.parametrize(("os_release", "command"), [
    ('ID=ubuntu\nID_LIKE=debian\n', "dpkg -S"),
    ('ID=debian\n', "dpkg -S"),
    ('ID=fedora\n', "rpm -qf"),
    ('ID="rhel"\nID_LIKE="fedora"\n', "rpm -qf"),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "rpm -qf"),
    ('ID="opensuse-leap"\nID_LIKE="suse opensuse"\n', "rpm -qf"),
    ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n', "rpm -qf"),
    ('ID="sles"\nID_LIKE="suse"\n', "rpm -qf"),
    ('ID="sle-micro"\nID_LIKE="suse"\n', "rpm -qf"),
    ('ID=arch\n', "pacman -Qo"),
    ('ID=manjaro\nID_LIKE=arch\n', "pacman -Qo"),
    ('ID=alpine\n', None),
])
def test_the_package_owner_command_follows_the_distribution_family(
        os_release: str, command: Optional[str]) -> None:
    from rocmdoctor.checks.rocm_libraries import _owner_command
    h = SnapshotHost(make_snapshot(files={"/etc/os-release": os_release}))
    assert _owner_command(h) == command
