"""Where ROCm is (facts/rocm_root.py), replayed from real layouts: every install kind, the
candidates passed over, one answer in check and in the report header."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocmdoctor.checks.rocm_install import POST_INSTALL, RocmInstallCheck
from rocmdoctor.checks.rocm_permissions import RocmPermissions
from rocmdoctor.facts.collect_env import report_readings
from rocmdoctor.facts.rocm_root import (
    FEDORA_ROCM_CORE_SPEC,
    TARBALL_INSTALL,
    discover_rocm,
    installed_rocm,
)
from rocmdoctor.facts.rocm_version import RocmInstall
from rocmdoctor.host import Host
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.torch_wheels import WHEEL_NEEDS_NO_SYSTEM_ROCM
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.render.report_facts import header_rows
from rocmdoctor.runner import run_one
from tests.helpers import fixture_header, fixture_text, host_of, make_snapshot

AMDGPU = {"/sys/module/amdgpu": {"type": "dir"}}
TARBALL = "therock-tarball-rocm-path-must-be-install-subfolder-hipcc-clang-not-found-rocm7.9.txt"
FEDORA = "fedora-rocm-core-spec-7.2.0-usr-include-rocm_version-h-no-info-version.txt"
FRUGALWARE = "frugalware-rocm-core-6.4.1-files-opt-rocm-distribution-package.txt"
FEDORA_HIPCC = "fedora-hipcc-usr-bin-no-opt-rocm-distribution-rocm.txt"
DISTRO_FILES = "distro-rocm-under-usr-rocminfo-usr-bin-no-opt-rocm-makefile-TRUNCATED.txt"
PIP_ONLY = "pip-therock-rocm-7.12-sdk-in-usr-local-site-packages-rocm-sdk-core-no-opt-rocm.txt"
HIPCONFIG = "hipconfig-rocmpath-pip-rocm-sdk-core-then-devel-therock-gfx110x.txt"
BUNDLED = "torch-wheel-bundles-rocm-6.0.0-no-system-rocm-needed-amd-answer.txt"
H200 = Path(__file__).parent / "fixtures" / "h200-snapshot.json.gz"


def check(host: Host) -> CheckResult:
    return replace(run_one(RocmInstallCheck(), host), duration_ms=0)


def header(host: Host, platform: str = "rocm") -> dict[str, str]:
    return dict(header_rows(report_readings(host, platform), "0.1.0"))


def rocm_version_h(version: str) -> str:
    """rocm_version.h as rocm-core's rocm_version.h.in renders it for `version`."""
    major, minor, patch = version.split(".")
    return (f"#define ROCM_VERSION_MAJOR   {major}\n#define ROCM_VERSION_MINOR   {minor}\n"
            f"#define ROCM_VERSION_PATCH   {patch}\n")


# --- a TheRock tarball: ROCM_PATH one folder above install/ ---------------------------------

def test_real_rocm_path_above_a_tarball_s_install_folder_is_named_and_fixed() -> None:
    text = fixture_text(TARBALL)
    # The guide's ROCM_PATH=$PWD: the folder hipcc looked in; AMD: export ROCM_PATH=$PWD/install.
    folder = re.search(r"(/home/\S+/therock-tarball)/bin/rocm_agent_enumerator", text).group(1)  # type: ignore[union-attr]
    assert "export ROCM_PATH=$PWD/install" in text
    version = re.search(r"ROCm (\d+\.\d+\.\d+) Tarbell", fixture_header(TARBALL)).group(1)  # type: ignore[union-attr]
    install = f"{folder}/install"
    host = host_of(env={"ROCM_PATH": folder},
                   files={f"{install}/.info/version": version + "\n"},
                   paths={**AMDGPU, folder: {"type": "dir"}, install: {"type": "dir"}})
    passed = (f"ROCM_PATH={folder} holds no ROCm; its install/ folder does (ROCm 7.9.0, "
              "where a TheRock tarball unpacks)")
    assert check(host) == CheckResult(
        "rocm-install", "ROCm installation", Status.WARN,
        f"ROCm 7.9.0 at {install}: ROCM_PATH={folder} is the folder above the tarball's "
        "install/",
        (Finding.info(f"ROCm root: {install} (ROCm 7.9.0; found by ROCM_PATH's install/ "
                      "folder; TheRock tarball)"),
         Finding.info(f"{install} was chosen: $ROCM_PATH names the folder above it; ROCm is "
                      "in its install/ folder, where a TheRock tarball unpacks"),
         Finding.hint("/opt/rocm does not exist; tools that assume it will not find ROCm"),
         Finding.error(f"ROCM_PATH={folder} holds no ROCm: the TheRock tarball's ROCm 7.9.0 "
                       f"is in {install}, so tools that use $ROCM_PATH (hipcc, clang) look in "
                       "the wrong folder")),
        Fix("Point the environment at the TheRock tarball's install/ folder, where its ROCm is "
            "(put these lines in your shell profile to keep them).",
            (f"export ROCM_PATH={install}",)),
        TARBALL_INSTALL)
    # The report header names the same root and the candidate passed over.
    assert header(host)["ROCm"] == (
        f"7.9.0 at {install} (found by ROCM_PATH's install/ folder; TheRock tarball); "
        f"passed over: {passed}")
    assert installed_rocm(host) == RocmInstall("7.9.0", None, install,
                                               f"{install}/.info/version")


# --- a distribution's packages ----------------------------------------------------------------

def test_real_fedora_rocm_core_moves_its_header_to_usr_include() -> None:
    spec = fixture_text(FEDORA)
    # The spec installs under /usr, drops /usr/.info and moves include/rocm-core/*.h up.
    assert "%global pkg_prefix %{_prefix}\n" in spec
    assert "rm -rf %{buildroot}/%{pkg_prefix}/.info" in spec
    assert "mv  %{buildroot}/%{pkg_prefix}/include/rocm-core/*.h %{buildroot}/%{pkg_prefix}/include/" in spec
    release = re.search(r"%else\n%global rocm_release (\S+)\n%global rocm_patch (\S+)", spec)
    version = f"{release.group(1)}.{release.group(2)}"  # type: ignore[union-attr]
    # ROCm/HIP-Examples#42: "On Fedora hipcc is installed from an rpm to a system location
    # /usr/bin/hipcc. There is no /opt/rocm directory."
    hipcc = re.search(r"to a system location (\S+)\. There is no /opt/rocm", fixture_text(FEDORA_HIPCC)).group(1)  # type: ignore[union-attr]
    host = host_of(files={"/usr/include/rocm_version.h": rocm_version_h(version),
                          "/etc/os-release": 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=43\n'},
                   paths={**AMDGPU, "/usr/lib64/libamdhip64.so.7": {"type": "file"},
                          hipcc: {"type": "file", "mode": "0755"}})
    assert check(host) == CheckResult(
        "rocm-install", "ROCm installation", Status.PASS, "ROCm 7.2.0 at /usr",
        (Finding.info("ROCm root: /usr (ROCm 7.2.0; found by the distribution's ROCm version "
                      "files; distribution packages)"),), None, POST_INSTALL)
    assert header(host)["ROCm"] == ("7.2.0 at /usr (found by the distribution's ROCm version "
                                    "files; distribution packages)")
    assert installed_rocm(host) == RocmInstall("7.2.0", None, "/usr",
                                               "/usr/include/rocm_version.h")
    assert FEDORA_ROCM_CORE_SPEC.endswith("specs/rocm-core.spec")


def test_real_frugalware_s_own_packages_under_opt_rocm_are_distribution_packages() -> None:
    files = fixture_text(FRUGALWARE)
    version = re.search(r"librocm-core\.so\.1\.0\.(\d)0(\d)0(\d)", files).groups()  # type: ignore[union-attr]
    assert "* /opt/rocm/.info/version" in files
    host = host_of(files={"/opt/rocm/.info/version": ".".join(version) + "\n",
                          "/etc/os-release": "NAME=Frugalware\nID=frugalware\nVERSION_ID=2.2\n"},
                   paths=AMDGPU)
    root = discover_rocm(host).root
    assert root is not None
    assert (root.path, root.kind, root.version) == ("/opt/rocm", "distribution packages", "6.4.1")


def test_real_rocm_files_under_usr_without_a_release_record_are_named_not_counted() -> None:
    # koboldcpp-rocm#37: ROCm under /usr (rocminfo in /usr/bin, ROCm libraries in /usr/lib64),
    # no /opt/rocm; none of the release files a distribution's packages leave is there.
    text = fixture_text(DISTRO_FILES)
    rocminfo = re.search(r"> (/usr/bin/rocminfo)$", text, re.M).group(1)  # type: ignore[union-attr]
    libs = re.search(r"`ls /usr/lib64/libroc (\S+)", text).group(1)  # type: ignore[union-attr]
    host = host_of(paths={**AMDGPU, rocminfo: {"type": "file", "mode": "0755"},
                          f"/usr/lib64/{libs}": {"type": "file"}})
    why = ("/usr holds /usr/bin/rocminfo but no ROCm release record (rocm_version.h, HIP's "
           "CMake version file): without one a library or tool is not counted as a ROCm "
           "install")
    result = check(host)
    assert (result.status, result.summary, result.findings[1:]) == (
        Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH, the "
        "distribution's release files under /usr)", (Finding.error(why),))
    assert header(host)["ROCm"] == f"not installed; passed over: {why}"


def test_a_stray_doc_folder_is_no_install_and_every_command_says_the_same() -> None:
    # The H200 (NVIDIA, no ROCm) with Debian's rocminfo documentation under /usr: the report
    # header and check agree that no ROCm is installed, naming what /usr holds.
    data: dict[str, Any] = json.loads(gzip.decompress(H200.read_bytes()))
    data["paths"]["/usr/share/doc/rocminfo"] = {"type": "dir", "mode": "0755"}
    host = SnapshotHost(data)
    why = ("/usr holds /usr/share/doc/rocminfo but no ROCm release record (rocm_version.h, "
           "HIP's CMake version file): without one a library or tool is not counted as a ROCm "
           "install")
    assert header(host, "cuda")["ROCm"] == f"not installed; passed over: {why}"
    assert run_one(RocmPermissions(), host).summary == "no ROCm install found"
    assert installed_rocm(host) is None


# --- Python packages, and ROCm bundled in torch -----------------------------------------------

def sdk_probe(core: str, version: str) -> dict[str, Any]:
    return {"executable": "/usr/local/bin/python3", "version": "3.10.12",
            "packages": {"rocm-sdk-core": version, "rocm": version},
            "rocm_sdk": {"_rocm_sdk_core": core, "_rocm_sdk_devel": None},
            "torch": {"imported": False, "error": "No module named 'torch'"}}


def test_real_pip_only_rocm_with_a_stale_rocm_path_is_fixed_with_the_sdk_folder() -> None:
    # ROCm/aiter#2157: ROCm 7.12 from pip on a vanilla ubuntu:22.04 image, the SDK in
    # /usr/local/lib/python3.10/site-packages/_rocm_sdk_core; the image's ROCM_PATH=/opt/rocm
    # is left from the tarball era (pytorch#179639 removes it for wheels).
    core = re.search(r"^(/usr/local/\S+/_rocm_sdk_core)$", fixture_text(PIP_ONLY), re.M).group(1)  # type: ignore[union-attr]
    assert re.search(r"hipconfig --rocmpath\n# \S+_rocm_sdk_core\n", fixture_text(HIPCONFIG))
    host = host_of(env={"ROCM_PATH": "/opt/rocm"}, paths={**AMDGPU, core: {"type": "dir"}},
                   python=sdk_probe(core, "7.12.0"))
    assert check(host) == CheckResult(
        "rocm-install", "ROCm installation", Status.WARN,
        f"ROCm 7.12.0 from Python packages at {core}: ROCM_PATH=/opt/rocm does not exist",
        (Finding.info(f"ROCm root: {core} (ROCm 7.12.0; found by rocm-sdk path --root; Python "
                      "packages)"),
         Finding.error("ROCM_PATH=/opt/rocm does not exist"),
         Finding.info(f"{core} was chosen: the Python that trains imports this pip-installed "
                      "ROCm SDK, which comes before the system folders")),
        Fix("Point the variable at the pip-installed ROCm, the folder `rocm-sdk path --root` "
            "prints (put the line in your shell profile to keep it), or unset it.",
            (f"export ROCM_PATH={core}",)),
        POST_INSTALL)
    assert header(host)["ROCm"] == (f"7.12.0 at {core} (found by rocm-sdk path --root; Python "
                                    "packages); passed over: ROCM_PATH=/opt/rocm does not exist")


def test_real_torch_that_bundles_its_rocm_with_no_system_rocm_passes() -> None:
    # pytorch#118457: AMD: "don't install ROCm yourself and let the wheel install ROCm for you".
    assert "let the wheel install ROCm for you" in fixture_text(BUNDLED)
    version = re.search(r"torch nightly (\S+)$", fixture_header(BUNDLED), re.M).group(1)  # type: ignore[union-attr]
    assert version == "2.3.0.dev20240126+rocm6.0"
    location = "/home/u/venv/lib/python3.10/site-packages/torch"
    probe = {"executable": "/home/u/venv/bin/python", "version": "3.10.12",
             "packages": {"torch": version},
             "torch": {"imported": True, "version": version, "hip": "6.0.32830-d62f6a171",
                       "cuda": None, "location": location, "bundles_rocm": True}}
    host = host_of(paths=AMDGPU, python=probe)
    lib = f"{location}/lib"
    assert check(host) == CheckResult(
        "rocm-install", "ROCm installation", Status.PASS,
        f"no system ROCm; torch {version} carries its own ROCm 6.0.0 in {lib}",
        (Finding.info(f"ROCm root: {lib} (ROCm 6.0.0; found by torch's own libraries "
                      "(torch/lib); bundled with torch)"),
         Finding.info("a torch wheel that carries its own ROCm needs no system ROCm (AMD: "
                      "\"let the wheel install ROCm for you\")"),
         Finding.hint("rocminfo, rocm-smi and hipcc come with a system ROCm, which training "
                      "with this wheel does not need")),
        None, WHEEL_NEEDS_NO_SYSTEM_ROCM)
    assert header(host)["ROCm"] == (f"6.0.0 at {lib} (found by torch's own libraries "
                                    "(torch/lib); bundled with torch)")
    # The machine checks (OS, kernel, driver window) use the system's ROCm: there is none.
    assert installed_rocm(host) is None


def test_a_snapshot_without_the_probe_finds_the_system_root_only() -> None:
    data = make_snapshot(files={"/opt/rocm/.info/version": "6.3.4-76\n"}, paths=AMDGPU)
    host = SnapshotHost(data)
    assert discover_rocm(host, with_python=False).root == discover_rocm(host).root
