"""torch-rocm-match on the ROCm torch really runs on: a TheRock torch beside an older system
ROCm, LD_LIBRARY_PATH ahead of a wheel's own ROCm, a +rocm tag the HIP table does not know."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch, tag_rocm, wheel_rocm
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb.torch_wheels import LD_LIBRARY_PATH_OVER_RUNPATH
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_header, fixture_text, make_snapshot
from tests.test_rocm_libraries import child

THEROCK = ("uv-pip-install-rocm-sdk-core-libraries-gfx110x-dgpu-and-ldd-libtorch-therock-rocm7.0.0"
           "rc20250731-TRUNCATED.txt")
CLASSIC = "rocm-info-version-6.3.4-76-classic-layout.txt"
RUNPATH = "ld-library-path-overrides-torch-wheel-runpath-system-rocm-pytorch-builder.txt"
HIP_65 = "therock-7.0rc-wheels-report-hip-6.5.txt"
INBOX = ("amdgpu is the kernel's own driver (kernel 6.8.0-45-generic); AMD validates ROCm with "
         "its amdgpu-dkms driver, and new ROCm releases may need a newer kernel")
CHECK = TorchRocmMatch()
HIP = "6.5.0"  # TheRock#1025: "our 7.0rc wheels report a HIP version of 6.5"


def probe(version: str, hip: str, location: str, *, bundles: Optional[bool],
          sdk: Optional[str] = None, packages: Optional[dict[str, str]] = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "executable": "/root/venv/bin/python", "version": "3.12.3",
        "packages": {"torch": version, **(packages or {})},
        "torch": {"imported": True, "version": version, "hip": hip, "cuda": None,
                  "location": location, "available": True, "device_count": 1, "devices": [],
                  "arch_list": []}}
    if bundles is not None:
        data["torch"]["bundles_rocm"] = bundles
    if sdk:
        data["rocm_sdk"] = {"_rocm_sdk_core": sdk, "_rocm_sdk_devel": None}
    return data


def run(host: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, host), duration_ms=0)


def classic_version() -> str:
    return fixture_text(CLASSIC).strip().splitlines()[-1] + "\n"


def test_real_therock_torch_beside_an_older_system_rocm_runs_on_its_own_sdk() -> None:
    # TheRock#1113: torch 2.7.1+rocm7.0.0rc20250731 with rocm-sdk-core 7.0.0rc20250731 in a
    # venv, libamdhip64.so.7 from site-packages/_rocm_sdk_core/lib; /opt/rocm is ROCm 6.3.4
    # (pytorch#147669's version file). No library-load record (a snapshot from before it):
    # torch/lib carries no HIP runtime, the SDK beside it is what torch loads.
    text = fixture_text(THEROCK)
    torch = re.search(r"\+ torch==(\S+)", text).group(1)  # type: ignore[union-attr]
    sdk_version = re.search(r"\+ rocm-sdk-core==(\S+)", text).group(1)  # type: ignore[union-attr]
    site = "/root/venv/lib/python3.12/site-packages"
    assert f"{site}/torch/lib/libtorch_hip.so" in text
    host = SnapshotHost(make_snapshot(
        files={"/opt/rocm/.info/version": classic_version()},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe(torch, HIP, f"{site}/torch", bundles=False,
                     sdk=f"{site}/_rocm_sdk_core", packages={"rocm-sdk-core": sdk_version})))
    built = wheel_rocm(HIP, torch)[0]
    assert built == "ROCm 7.0.0 (the +rocm tag; HIP 6.5.0 is not in rocmdoctor's table)"
    assert run(host) == CHECK.result(
        Status.PASS, f"torch built for {built}; the pip-installed ROCm 7.0.0 matches",
        [Finding.info(f"torch loads the pip-installed ROCm SDK beside it ({site}/_rocm_sdk_core);"
                      " its own torch/lib carries no HIP runtime"),
         Finding.info(f"rocm-sdk-core {sdk_version}"),
         Finding.info(INBOX)])


def test_real_ld_library_path_ahead_of_the_wheel_s_own_rocm_warns() -> None:
    # pytorch/builder#1468: LD_LIBRARY_PATH pointing at the system ROCm overrides the wheel's
    # RUNPATH. torch 2.5.1+rocm6.2 carries ROCm 6.2 in torch/lib; LD_LIBRARY_PATH=/opt/rocm/lib
    # (ROCm 6.3.4) is searched first, so the system's libamdhip64 is the one mapped.
    assert "it will override the RUNPATH setting" in fixture_text(RUNPATH)
    site = "/usr/lib/python3/dist-packages"
    torch_lib = f"{site}/torch/lib"
    entry = child({"hip": "/opt/rocm/lib/libamdhip64.so.6"}, torch_lib=torch_lib,
                  ld_library_path=("/opt/rocm/lib", "/usr/local/lib"),
                  candidates={"hip": ["/opt/rocm/lib/libamdhip64.so.6",
                                      f"{torch_lib}/libamdhip64.so"]})
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": entry},
        files={"/opt/rocm/.info/version": classic_version()},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe("2.5.1+rocm6.2", "6.2.41133-dd7f95766", f"{site}/torch", bundles=True)))
    assert run(host) == CHECK.result(
        Status.WARN, "torch built for ROCm 6.2.0 (HIP 6.2.41133); loads ROCm 6.3.4; "
        "LD_LIBRARY_PATH makes torch load ROCm 6.3.4 instead of its own",
        [Finding.info("torch loads its HIP runtime from /opt/rocm/lib/libamdhip64.so.6"),
         Finding.error("LD_LIBRARY_PATH puts /opt/rocm/lib ahead of the ROCm torch "
                       "2.5.1+rocm6.2 carries: the loader searches LD_LIBRARY_PATH before the "
                       "wheel's RUNPATH, so torch runs on ROCm 6.3.4's libamdhip64.so.6, not "
                       "its own"),
         Finding.info(INBOX)],
        Fix("Take the ROCm folder out of LD_LIBRARY_PATH (in your shell profile too), so torch "
            "loads the ROCm it carries.", ("export LD_LIBRARY_PATH=/usr/local/lib",)),
        LD_LIBRARY_PATH_OVER_RUNPATH)


def test_real_a_hip_number_outside_the_table_takes_the_release_from_the_tag() -> None:
    # TheRock#1025: the 7.0rc wheels report HIP 6.5; the +rocm7.0.0rc20250731 tag (TheRock#1113)
    # names the release. A HIP past the table with no tag is said to be newer than the tables.
    assert "report a HIP version of 6.5" in fixture_text(HIP_65)
    version = re.search(r"torch (\S+\+rocm\S+), pytorch", fixture_header(THEROCK)).group(1)  # type: ignore[union-attr]
    assert tag_rocm(version) == "7.0.0"
    assert wheel_rocm(HIP, version) == (
        "ROCm 7.0.0 (the +rocm tag; HIP 6.5.0 is not in rocmdoctor's table)", "7.0")
    assert wheel_rocm("7.17.26500-0", "2.14.0a0+git1") == (
        f"ROCm ? (HIP 7.17.26500 is newer than what this rocmdoctor knows, tables dated "
        f"{KB_DATE})", "?")
    # and the known table still wins where it speaks
    assert wheel_rocm("6.2.41133-dd7f95766", "2.5.1+rocm6.2") == (
        "ROCm 6.2.0 (HIP 6.2.41133)", "6.2")
