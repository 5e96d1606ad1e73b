"""torch-rocm-match: torch's bundled ROCm user space judged against the loaded amdgpu driver.

The driver release comes from /sys/module/amdgpu/version through the module-version table
(kb.driver_support, from AMD's amdgpu-dkms package names), and the verdict from AMD's
driver / user-space table (amdgpu-docs compatibility matrix). The machine is the MI300X of the
vLLM collect_env capture with an official wheel swapped in, as in tests/test_torch_checks.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import driver_support as drivers
from rocmdoctor.kb import torch_wheels as tw
from rocmdoctor.model import Finding, Fix, Status
from tests.test_torch_checks import MI300X_ENV, probe_from_collect_env, rocm_host, whole

BUNDLED = ("torch {} carries its own ROCm user-space libraries, so the system ROCm version need "
           "not match it")


def official(version: str, hip: str) -> dict[str, Any]:
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=["gfx942"],
                                   bundles_rocm=True)
    probe["torch"].update(version=version, hip=hip)
    return probe


def test_torch_2_11_rocm72_on_rocm_643_and_its_own_driver_is_tested() -> None:
    # AMD's table: "6.4.x", "6.1.x, 6.2.x, 6.3.x, 6.4.x, 7.0.x, 7.1.x, 7.2.x". ROCm 6.4's
    # amdgpu-dkms is 6.12.12.604xx, so /sys/module/amdgpu/version reads 6.12.12.
    host = rocm_host(official("2.11.0+rocm7.2", "7.2.53211"), rocm_version="6.4.3-128",
                     dkms="6.12.12")
    result = TorchRocmMatch().run(host)
    assert whole(result) == (
        Status.PASS, "torch built for ROCm 7.2.1-7.2.4 (HIP 7.2.53211); system ROCm 6.4.3",
        (Finding.info(BUNDLED.format("2.11.0+rocm7.2")),
         Finding.info("the amdgpu-dkms driver 6.12.12 (AMD GPU Driver 6.4.x) is tested with "
                      "ROCm 7.2 user space")), None)


def test_torch_2_10_rocm70_on_a_624_driver_is_tested() -> None:
    # "6.2.x", "6.0.x, 6.1.x, 6.2.x, 6.3.x, 6.4.x, 7.0.x". No module number here is mapped, so
    # the driver is the one of the installed ROCm 6.2.4.
    host = rocm_host(official("2.10.0+rocm7.0", "7.0.51831"), rocm_version="6.2.4-120",
                     dkms="6.8.99")
    result = TorchRocmMatch().run(host)
    assert whole(result) == (
        Status.PASS, "torch built for ROCm 7.0.1-7.0.2 (HIP 7.0.51831); system ROCm 6.2.4",
        (Finding.info(BUNDLED.format("2.10.0+rocm7.0")),
         Finding.info("the amdgpu-dkms driver 6.8.99 (assumed to be the 6.2.x driver of the "
                      "installed ROCm 6.2.4) is tested with ROCm 7.0 user space")), None)


def test_a_30_20_driver_is_not_tested_with_rocm_62_wheels() -> None:
    # 30.20.x supports "6.3.x, 6.4.x, 7.0.x, 7.1.x, 7.2.x, 7.14.x, 10.0.0": not 6.2.
    host = rocm_host(official("2.5.1+rocm6.2", "6.2.41133-dd7f95766"), rocm_version="7.1.1",
                     dkms="6.16.6")
    result = TorchRocmMatch().run(host)
    assert whole(result) == (
        Status.WARN, "torch built for ROCm 6.2.0 (HIP 6.2.41133); system ROCm 7.1.1; the amdgpu "
        "driver is not tested with ROCm 6.2",
        (Finding.info(BUNDLED.format("2.5.1+rocm6.2")),
         Finding.error("the amdgpu-dkms driver 6.16.6 (AMD GPU Driver 30.20.x) is tested with "
                       "ROCm 6.3, 6.4, 7.0, 7.1, 7.2, 7.14, 10.0 user space, not 6.2")),
        Fix("Install the torch build for the driver's ROCm (rocm7.1 fits the installed ROCm "
            "7.1.1), or upgrade the driver with amdgpu-install.",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm7.1",)))
    assert result.source == tw.KMD_MATRIX


def test_a_driver_newer_than_the_tables_is_said_so() -> None:
    host = rocm_host(official("2.14.1+rocm7.14", "7.14.60850-0000000"), dkms="7.4.2")
    result = TorchRocmMatch().run(host)
    assert whole(result) == (
        Status.PASS, "torch built for ROCm 7.14.0-7.14.1 (HIP 7.14.60850); no system ROCm (not "
        "needed by the wheel)",
        (Finding.info(BUNDLED.format("2.14.1+rocm7.14")),
         Finding.info(f"the amdgpu-dkms driver 7.4.2 is newer than what this rocmdoctor knows, "
                      f"tables dated {KB_DATE}; AMD's driver / ROCm table: "
                      f"{drivers.AMDGPU_DOCS_MATRIX}")), None)


def test_user_space_newer_than_the_tables_is_said_so() -> None:
    # ROCm 10.1.0 ships HIP 7.16.26385; AMD's matrix (31.50.x row) stops at 10.0.0, but the
    # 10.1.0 release notes' driver table lists 31.40.x.
    host = rocm_host(official("2.14.1+rocm10.1.0", "7.16.26385"), dkms="6.19.14")
    result = TorchRocmMatch().run(host)
    assert result.status is Status.PASS
    assert result.findings[-1] == Finding.info(
        "the amdgpu-dkms driver 6.19.14 (AMD GPU Driver 31.40.x) is tested with ROCm 10.1 user "
        "space")
    # A release past both: said to be newer than the tables.
    newer = TorchRocmMatch().run(rocm_host(official("2.15.0+rocm10.2.0", "7.17.26500"),
                                           dkms="6.19.14"))
    assert newer.findings[-1] == Finding.info(
        f"the amdgpu-dkms driver 6.19.14 (AMD GPU Driver 31.40.x): ROCm 10.2 user space is newer "
        f"than what this rocmdoctor knows, tables dated {KB_DATE}; AMD's driver / ROCm table: "
        f"{drivers.AMDGPU_DOCS_MATRIX}")


@pytest.mark.parametrize(("module", "driver"), [
    ("6.3.6", "6.0"), ("6.7.0", "6.1"), ("6.10.5", "6.3"), ("6.12.12", "6.4"),
    ("6.14.14", "30.10"), ("6.16.6", "30.20"), ("6.16.13", "30.30"), ("6.19.4", "31.30"),
    ("6.19.14", "31.40"),
])
def test_module_versions_map_to_driver_releases(module: str, driver: str) -> None:
    row = drivers.module_release(module)
    assert row is not None and row.driver == driver


def test_a_torch_on_the_system_rocm_has_the_driver_judged_against_that_rocm() -> None:
    """A torch that does not bundle ROCm (a source build) runs on the system's ROCm 7.1.1
    libraries: the user space the driver serves is 7.1, not the 6.2 torch was built for, so
    the 30.20.x driver (tested with 7.1, not 6.2) is fine; the mismatch of torch and its
    libraries is the warning."""
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=["gfx942"],
                                   bundles_rocm=False)
    probe["torch"].update(version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766")
    result = TorchRocmMatch().run(rocm_host(probe, rocm_version="7.1.1", dkms="6.16.6"))
    assert whole(result) == (
        Status.WARN, "torch built for ROCm 6.2.0 (HIP 6.2.41133); system ROCm 7.1.1",
        (Finding.error("this torch loads the system's ROCm 7.1.1 libraries but was built for "
                       "ROCm 6.2"),
         Finding.info("the amdgpu-dkms driver 6.16.6 (AMD GPU Driver 30.20.x) is tested with "
                      "ROCm 7.1 user space")),
        Fix("Install the official wheel (rocm7.1 fits the installed ROCm 7.1.1) or rebuild "
            "torch against ROCm 7.1.1.",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm7.1",)))


def test_a_driver_assumed_from_the_installed_rocm_can_warn() -> None:
    """An unlisted module number (6.1.99) is taken to be the driver of the installed ROCm
    5.5.1 (AMD GPU Driver 5.5.x, tested with user space 5.3 to 5.7): a 6.2 wheel warns."""
    host = rocm_host(official("2.5.1+rocm6.2", "6.2.41133-dd7f95766"), rocm_version="5.5.1",
                     dkms="6.1.99")
    assert whole(TorchRocmMatch().run(host)) == (
        Status.WARN, "torch built for ROCm 6.2.0 (HIP 6.2.41133); system ROCm 5.5.1; the amdgpu "
        "driver is not tested with ROCm 6.2",
        (Finding.info(BUNDLED.format("2.5.1+rocm6.2")),
         Finding.error("the amdgpu-dkms driver 6.1.99 (assumed to be the 5.5.x driver of the "
                       "installed ROCm 5.5.1) is tested with ROCm 5.3, 5.4, 5.5, 5.6, 5.7 user "
                       "space, not 6.2")),
        Fix("Install the torch build for the driver's ROCm (rocm5.5 fits the installed ROCm "
            "5.5.1), or upgrade the driver with amdgpu-install.",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm5.5",)))


@pytest.mark.parametrize(("cuda", "kind"), [("12.4", "a CUDA"), (None, "a CPU")])
def test_a_torch_without_rocm_is_named_by_its_build(cuda: Any, kind: str) -> None:
    probe = official("2.5.1+cu124" if cuda else "2.5.1+cpu", "")
    probe["torch"].update(hip=None, cuda=cuda)
    version = probe["torch"]["version"]
    assert TorchRocmMatch().applies(rocm_host(probe)) == (
        f"torch {version} is {kind} build, not a ROCm build")


# --- verdicts AMD's tables do not give -----------------------------------------------------

def test_an_unconfirmed_module_number_does_not_warn() -> None:
    """6.8.5 was seen on a ROCm 6.2 host (ollama#6685) but is in no AMD package name: the 6.2.x
    driver's row stops at 7.0, yet a 7.2 wheel on it is only noted."""
    host = rocm_host(official("2.10.0+rocm7.2", "7.2.53211"), rocm_version="6.2.4-120",
                     dkms="6.8.5")
    assert whole(TorchRocmMatch().run(host)) == (
        Status.PASS, "torch built for ROCm 7.2.1-7.2.4 (HIP 7.2.53211); system ROCm 6.2.4",
        (Finding.info(BUNDLED.format("2.10.0+rocm7.2")),
         Finding.info("the amdgpu-dkms driver 6.8.5 (AMD GPU Driver 6.2.x): AMD's table does not "
                      "list it with ROCm 7.2 user space, but this module number is not confirmed "
                      "by an AMD package name")), None)


@pytest.mark.parametrize(("version", "hip", "built", "year"), [
    ("2.10.0+rocm7.2", "7.2.53211", "ROCm 7.2.1-7.2.4 (HIP 7.2.53211)",
     "; from ROCm 6.4 on AMD supports driver and user space up to a year apart"),
    ("2.5.1+rocm6.2", "6.2.41133-dd7f95766", "ROCm 6.2.0 (HIP 6.2.41133)", ""),
])
def test_a_preview_driver_is_not_judged(version: str, hip: str, built: str, year: str) -> None:
    """The 31.30 driver (amdgpu-dkms 6.19.4.31300000) is a preview AMD's table leaves out; the
    one-year rule holds from ROCm 6.4 on, so it is named for a 7.2 wheel, not for a 6.2 one."""
    host = rocm_host(official(version, hip), dkms="6.19.4")
    assert whole(TorchRocmMatch().run(host)) == (
        Status.PASS, f"torch built for {built}; no system ROCm (not needed by the wheel)",
        (Finding.info(BUNDLED.format(version)),
         Finding.info("the amdgpu-dkms driver 6.19.4 (AMD GPU Driver 31.30.x): AMD's table lists "
                      f"no ROCm release for this preview driver{year}")), None)


def test_a_technology_preview_wheel_is_not_judged() -> None:
    # 7.11-7.13 are technology previews whose notes name no driver (7.9 and 7.10 do).
    host = rocm_host(official("2.11.0+rocm7.13.0", "7.13.99004"), dkms="6.16.6")
    assert whole(TorchRocmMatch().run(host)) == (
        Status.PASS, "torch built for ROCm 7.13 (HIP 7.13.99004); no system ROCm (not needed by "
        "the wheel)",
        (Finding.info(BUNDLED.format("2.11.0+rocm7.13.0")),
         Finding.info("the amdgpu-dkms driver 6.16.6 (AMD GPU Driver 30.20.x): ROCm 7.13 is a "
                      "technology-preview release, which AMD's driver table does not list")), None)


def test_a_hip_newer_than_the_tables_leaves_the_driver_unchecked() -> None:
    # Past HIP 7.14 the ROCm release no longer follows the HIP number (ROCm 10.0 ships HIP 7.15).
    # The wheel's +rocm11.0 tag still names the release it was built for.
    host = rocm_host(official("2.15.0.dev0+rocm11.0", "7.17.26500"), dkms="6.19.14")
    assert whole(TorchRocmMatch().run(host)) == (
        Status.PASS, "torch built for ROCm 11.0.0 (the +rocm tag; HIP 7.17.26500 is not in "
        "rocmdoctor's table); no system ROCm (not needed by the wheel)",
        (Finding.info(BUNDLED.format("2.15.0.dev0+rocm11.0")),
         Finding.info(f"the amdgpu-dkms driver 6.19.14 (AMD GPU Driver 31.40.x): ROCm 11.0 user "
                      f"space is newer than what this rocmdoctor knows, tables dated {KB_DATE}; "
                      f"AMD's driver / ROCm table: {drivers.AMDGPU_DOCS_MATRIX}")), None)
    # Without a tag the ROCm release is not known, and nothing is judged on it.
    untagged = rocm_host(official("2.15.0.dev0+git1", "7.17.26500"), dkms="6.19.14")
    assert whole(TorchRocmMatch().run(untagged))[1] == (
        f"torch built for ROCm ? (HIP 7.17.26500 is newer than what this rocmdoctor knows, "
        f"tables dated {KB_DATE}); no system ROCm (not needed by the wheel)")


@pytest.mark.parametrize(("rocm_version", "why"), [
    # ROCm 6.4 installed on the 6.0 driver: the wheel that fits it would fail the same way
    ("6.4.1", "rocm6.2.4 is the newest ROCm index AMD tests with the 6.0.x driver; the wheel "
              "brings its own ROCm libraries"),
    # no system ROCm: not the newest index (7.14), which this driver cannot run either
    (None, "rocm6.2.4 is the newest ROCm index AMD tests with the 6.0.x driver; the wheel "
           "brings its own ROCm libraries"),
    # a system ROCm the driver is tested with: its index, as before
    ("6.1.3", "rocm6.1 fits the installed ROCm 6.1.3"),
])
def test_the_fix_for_an_old_driver_is_a_wheel_that_driver_is_tested_with(
        rocm_version: Any, why: str) -> None:
    # amdgpu-dkms 6.3.6 is AMD GPU Driver 6.0.x: "5.6.x, 5.7.x, 6.0.x, 6.1.x, 6.2.x" (AMD's
    # table). The wheel's ROCm 6.4 is not among them.
    host = rocm_host(official("2.7.1+rocm6.4", "6.4.43482-0f2d60242"),
                     rocm_version=rocm_version, dkms="6.3.6")
    result = TorchRocmMatch().run(host)
    assert result.status is Status.WARN
    assert result.findings[-1] == Finding.error(
        "the amdgpu-dkms driver 6.3.6 (AMD GPU Driver 6.0.x) is tested with ROCm 5.6, 5.7, 6.0, "
        "6.1, 6.2 user space, not 6.4")
    index = why.split(" ", 1)[0]
    assert result.fix == Fix(
        f"Install the torch build for the driver's ROCm ({why}), or upgrade the driver with "
        "amdgpu-install.",
        (f"pip install --force-reinstall torch torchvision --index-url "
         f"https://download.pytorch.org/whl/{index}",))
    assert index[4:] in tw.rocm_indexes()
    assert drivers.kmd_verdict("6.0", index[4:]).tested is True
