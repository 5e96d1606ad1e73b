"""Verdicts that come straight from the knowledge base: CUDA rows NVIDIA's table is only quoted
for, CUDA and gfx newer than the tables, RDNA4 on a ROCm release before its support."""

from __future__ import annotations

from rocmdoctor.checks.nvidia_driver import NvidiaDriver
from rocmdoctor.checks.torch_arch_support import TorchArchSupport
from rocmdoctor.facts.nvidia_gpus import QUERY_KEY
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import cuda_driver as cd
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb import torch_wheels as tw
from rocmdoctor.model import Finding, Fix, Status
from tests.test_nvidia_driver import _gpu_lines, nv_host
from tests.test_torch_checks import WSL_ENV, probe_from_collect_env, rocm_host, whole

MISREPORT = "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt"


def h200(driver: str) -> str:
    return "".join(f"{i}, NVIDIA H200, {driver}, 9.0, Enabled, 700.00, 700.00, 143771, GPU-{i}, "
                   f"00000000:{0x18 + i:02X}:00.0\n" for i in range(8))


def test_cuda_11_0_minimum_is_the_ga_driver() -> None:
    # NVIDIA: "CUDA 11.0.2 GA >= 450.51.05", "CUDA 11.0.1 RC >= 450.36.06".
    assert cd.ga_driver("11.0").min_driver == "450.51.05"


def test_a_quoted_cuda_row_warns_and_never_fails() -> None:
    # CUDA 13.3 GA ">= 610.43.02" is quoted from NVIDIA's table, not read in a stored copy.
    r = NvidiaDriver().run(nv_host({QUERY_KEY: h200("590.48.01")}, cuda="13.3"))
    assert r.status is Status.WARN
    assert r.findings[len(_gpu_lines())] == Finding.error(
        "CUDA 13.3 wants driver >= 610.43.02 (a number quoted from NVIDIA's table, not confirmed "
        "in it here); 590.48.01 runs it through CUDA minor version compatibility, where PTX JIT "
        "compilation (and so some kernels) can fail")


def test_a_cuda_release_without_a_driver_row_passes_saying_so() -> None:
    r = NvidiaDriver().run(nv_host({QUERY_KEY: h200("590.48.01")}, cuda="13.5"))
    assert (r.status, r.summary) == (
        Status.PASS, "driver 590.48.01, 8 x NVIDIA H200 (sm_90); torch's CUDA 13.5 is newer "
        "than rocmdoctor's tables")
    assert r.findings[len(_gpu_lines())] == Finding.info(
        f"CUDA 13.5's minimum driver is not in rocmdoctor's tables (tables dated {KB_DATE}; "
        f"NVIDIA: {cd.RELEASE_NOTES}); driver 590.48.01 meets the CUDA 13.x minimum (>= 580)")


def test_a_newer_cuda_still_fails_below_its_majors_minimum() -> None:
    # Table 2: CUDA 13.x needs >= 580 for minor version compatibility.
    r = NvidiaDriver().run(nv_host({QUERY_KEY: h200("570.133.20")}, cuda="13.5"))
    assert r.status is Status.FAIL
    assert r.findings[len(_gpu_lines())] == Finding.error(
        "torch's CUDA 13.5 needs driver >= 580 (CUDA 13.x minor version compatibility); this "
        "is 570.133.20")


def test_a_new_cuda_major_passes_saying_so() -> None:
    r = NvidiaDriver().run(nv_host({QUERY_KEY: h200("620.10")}, cuda="14.0"))
    assert r.status is Status.PASS
    assert r.findings[len(_gpu_lines())] == Finding.info(
        f"CUDA 14.0 is newer than what this rocmdoctor knows, tables dated {KB_DATE}")


def rx9070(torch: str, hip: str, arch: list[str], rocm: str) -> SnapshotHost:
    probe = probe_from_collect_env(WSL_ENV, arch_list=arch)
    probe["torch"].update(version=torch, hip=hip, device_count=1, available=True,
                          devices=[{"index": 0, "name": "AMD Radeon RX 9070 XT",
                                    "arch": "gfx1201"}])
    return rocm_host(probe, rocminfo=MISREPORT, rocm_version=rocm)


def test_rdna4_on_rocm_6_2_4_names_the_release_and_the_wheel() -> None:
    # gfx1201 is AMD-supported from 6.4.1 ("ROCm 6.4.1 introduces support for the RDNA4
    # architecture"); PyTorch compiled it into the rocm6.2.4 wheels from torch 2.7.0
    # (pytorch#148562), not into 2.6.0.
    arch = list(tw.wheel_targets("2.6.0", "6.2.4").targets)
    r = TorchArchSupport().run(rx9070("2.6.0+rocm6.2.4", "6.2.41134", arch, "6.2.4"))
    assert whole(r) == (
        Status.FAIL, "gfx1201 is not among the targets compiled into torch 2.6.0+rocm6.2.4",
        (Finding.error("GPU 0 AMD Radeon RX 9070 XT is gfx1201; torch 2.6.0+rocm6.2.4 was "
                       f"compiled for {', '.join(arch)}"),
         Finding.hint("ROCm 6.2.4 predates AMD's support for gfx1201: AMD lists it from ROCm "
                      "6.4.1 on (https://rocm.docs.amd.com/en/docs-6.4.1/about/release-notes.html"
                      ")")),
        Fix("Install a PyTorch build that includes gfx1201 (the rocm6.2.4 wheels do from torch "
            "2.7.0 on).", ("pip install --force-reinstall torch torchvision --index-url "
                           "https://download.pytorch.org/whl/rocm6.2.4",)))
    assert kb_gfx.first_release_with("gfx1201").first == (6, 4, 1)


def test_torch_newer_than_the_tables_is_noted() -> None:
    from rocmdoctor.checks.torch_install import TorchInstall

    probe = probe_from_collect_env(WSL_ENV)
    probe["torch"].update(version="2.15.0+rocm7.14", hip="7.14.60850-0000000")  # synthetic
    probe["packages"]["torch"] = "2.15.0+rocm7.14"
    r = TorchInstall().run(rocm_host(probe, rocminfo=MISREPORT))
    assert whole(r) == (
        Status.PASS, "torch 2.15.0+rocm7.14 imports; ROCm build fits the AMD GPU",
        (Finding.info(f"torch 2.15.0+rocm7.14 is newer than what this rocmdoctor knows, tables "
                      f"dated {KB_DATE}: its wheel variants and compiled targets are not in "
                      "them"),), None)
    assert not tw.torch_newer_than_known("2.14.1+rocm7.2")
