"""What a pip-installed ROCm really ships (`rocm-sdk targets`), and an override that threads
report hanging with that ROCm: TheRock#1184 replayed (a Radeon 780M, gfx1103, on the gfx110X
packages)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.gfx_override import GfxOverride
from rocmdoctor.facts.rocm_packages import DIST_INFO, parse_dist_targets, shipped_targets
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_header, fixture_text, make_snapshot
from tests.test_rocm_libraries import CHECK as LIBRARIES
from tests.test_rocm_libraries import child

CAPTURE = ("rocm-sdk-targets-gfx1100-gfx1101-gfx1102-on-gfx1103-override-11.0.0-hangs-therock-"
           "7.0.0rc.txt")
SITE = "/home/u/venv/lib/python3.12/site-packages"
CORE = f"{SITE}/_rocm_sdk_core"
THEROCK_1184 = "https://github.com/ROCm/TheRock/issues/1184"


def the_780m(env: dict[str, str]) -> SnapshotHost:
    """TheRock#1184's machine: rocm + torch from the gfx110X-dgpu index (7.0.0rc20250803) on
    a gfx1103 (KFD gfx_target_version 110003), `rocm-sdk targets` as the capture prints it."""
    text = fixture_text(CAPTURE)
    targets = re.search(r"\$ rocm-sdk targets\n(\S+)\n", text).group(1)  # type: ignore[union-attr]
    release = re.search(r"ROCm Version\s*\n\s*(\S+)", text) or re.search(
        r"pip packages \(rocm \+ torch\), ROCm (\S+),", fixture_header(CAPTURE))
    version = release.group(1) if release else ""
    assert version == "7.0.0rc20250803"
    packages = {"rocm": version, "rocm-sdk-core": version,
                "rocm-sdk-libraries-gfx110x-dgpu": version, "torch": f"2.7.1+rocm{version}"}
    entry = child({"hip": f"{CORE}/lib/libamdhip64.so.7"}, sdk=(f"{CORE}/lib",),
                  torch_lib=f"{SITE}/torch/lib", packages=packages)
    probe: dict[str, Any] = {
        "executable": "/home/u/venv/bin/python", "version": "3.12.3",
        "packages": {"torch": packages["torch"], "rocm-sdk-core": version},
        "rocm_sdk": {"_rocm_sdk_core": CORE, "_rocm_sdk_devel": None},
        "torch": {"imported": True, "version": packages["torch"], "hip": "7.0.0",
                  "cuda": None, "location": f"{SITE}/torch", "available": True,
                  "device_count": 1, "arch_list": ["gfx1100", "gfx1101", "gfx1102"],
                  "devices": [{"index": 0, "name": "AMD Radeon 780M", "arch": "gfx1103"}]}}
    nodes = "/sys/class/kfd/kfd/topology/nodes"
    files = {f"{CORE}/{DIST_INFO}": json.dumps({"dist_amdgpu_targets": targets}),
             f"{nodes}/1/properties": "simd_count 24\ngfx_target_version 110003\n"
                                      "cpu_cores_count 0\n",
             f"{nodes}/0/properties": "cpu_cores_count 16\nsimd_count 0\n"}
    return SnapshotHost(make_snapshot(
        env=env, files=files, dirs={"/sys/module/amdgpu": ["initstate"], nodes: ["0", "1"]},
        commands={"rocmdoctor-libload": entry}, python=probe))


def test_real_the_family_package_ships_no_gfx1103_whatever_its_name_says() -> None:
    host = the_780m({})
    assert shipped_targets(host) == ("gfx1100", "gfx1101", "gfx1102")
    result = replace(run_one(LIBRARIES, host), duration_ms=0)
    gap = ("rocm-sdk-libraries-gfx110x-dgpu holds no code for gfx1103 (`rocm-sdk targets`: "
           "gfx1100;gfx1101;gfx1102)")
    assert Finding.error(gap) in result.findings
    assert (result.status, result.fix) == (Status.FAIL, Fix(
        "Install torch and ROCm from the gfx110X-all index.",
        ("pip install --force-reinstall --index-url https://rocm.nightlies.amd.com/v2/"
         "gfx110X-all/ torch",)))


def test_real_an_override_reported_to_work_but_reported_hanging_with_this_rocm_warns() -> None:
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in fixture_text(CAPTURE)
    assert "hangs the system" in fixture_text(CAPTURE)
    host = the_780m({"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    text = ("11.0.0 is reported to work on gfx1103, but with TheRock's pip-installed ROCm 7.0 "
            "(gfx110X-dgpu packages, which ship no gfx1103 code) it was reported to hang the "
            "system")
    result = replace(run_one(GfxOverride(), host), duration_ms=0)
    assert result == GfxOverride().result(
        Status.WARN, f"HSA_OVERRIDE_GFX_VERSION=11.0.0: {text}",
        [Finding.hint(f"GPU 0 (gfx1103 Radeon 780M/760M/740M (Phoenix, Hawk Point)): {text}")],
        Fix("Unset the override.", ("unset HSA_OVERRIDE_GFX_VERSION",)), THEROCK_1184)


@given(st.text())
def test_dist_info_parser_never_raises(text: str) -> None:
    parse_dist_targets(text)
