"""visible-devices: real rocminfo and nvidia-smi -L captures with selection variables set."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import pytest

from rocmdoctor.checks.visible_devices import (
    CUDA_VISIBLE,
    GPU_ISOLATION,
    VisibleDevices,
    nvidia_gpus,
)
from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = VisibleDevices()
SIGNALS = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl")
INFO, ERR = Finding.info, Finding.error
NO_ROCM_VERSION = tuple(f"/opt/rocm/{p}" for p in (
    ".info/version", "core/.info/version", "include/rocm-core/rocm_version.h",
    "include/rocm_version.h"))
IGPU = "rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt"
MI300X = "rocminfo-gfx942-mi300x-x4-epyc9474f.txt"
# `nvidia-smi -L` on a 4x H100 node, from the FRIDA HPC cluster user guide ("srun -p frida
# --gpus=H100:4 nvidia-smi -L"), verbatim.
H100_X4 = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-875f3ca0-9de4-e78c-9cea-5140b030b627)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1be66b4c-65e2-4a17-80d9-ab9f5bf3bb70)
GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-35cea23a-bdee-e2af-2fda-3b038af47de8)
GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-fe4dde03-0444-6d48-59bc-be28e3fadc52)
"""


def kfd_node(simd: int, simd_per_cu: int, gfx_target_version: int, unique_id: int,
             cpu_cores: int = 0) -> str:
    """A node's properties file in the order kfd_topology.c node_show() writes it."""
    props = [("cpu_cores_count", cpu_cores), ("simd_count", simd), ("mem_banks_count", 1),
             ("caches_count", 0), ("io_links_count", 1), ("p2p_links_count", 0),
             ("cpu_core_id_base", 0), ("simd_id_base", 0), ("max_waves_per_simd", 8),
             ("lds_size_in_kb", 64), ("gds_size_in_kb", 0), ("num_gws", 64),
             ("wave_front_size", 64), ("array_count", 32), ("simd_arrays_per_engine", 1),
             ("cu_per_simd_array", 10), ("simd_per_cu", simd_per_cu), ("max_slots_scratch_cu", 32),
             ("gfx_target_version", gfx_target_version), ("vendor_id", 4098 if simd else 0),
             ("device_id", 29857 if simd else 0), ("location_id", 0), ("domain", 0),
             ("drm_render_minor", 128 if simd else 0), ("hive_id", 0), ("num_sdma_engines", 2),
             ("num_sdma_xgmi_engines", 14), ("num_sdma_queues_per_engine", 8),
             ("num_cp_queues", 24)]
    if simd:
        props += [("max_engine_clk_fcompute", 2100), ("local_mem_size", 0),
                  ("fw_version", 151), ("capability", 746293888), ("debug_prop", 1495),
                  ("sdma_fw_version", 19), ("unique_id", unique_id), ("num_xcc", 8)]
    props.append(("max_engine_clk_ccompute", 3600))
    return "".join(f"{k} {v}\n" for k, v in props)


# The MI300X box of the rocminfo capture: CPU nodes 0-1, GPU nodes 2-5 (gfx942 = 90402,
# 304 CUs x 4 SIMDs), unique ids = the capture's Uuid lines.
MI300X_UUIDS = ("8d1457e2c20f59d2", "b4fa34630e85d42a", "e8986800e182538a", "eff71edc82169115")
MI300X_SYSFS = {
    **{f"{KFD_NODES}/{n}/properties": kfd_node(0, 0, 0, 0, cpu_cores=96) for n in (0, 1)},
    **{f"{KFD_NODES}/{n + 2}/properties": kfd_node(1216, 4, 90402, int(u, 16))
       for n, u in enumerate(MI300X_UUIDS)},
    **{f"{KFD_NODES}/{n}/name": "ip discovery\n" for n in range(2, 6)},
}


def rocm_host(rocminfo: str, env: dict[str, str], files: Optional[dict[str, str]] = None,
              absent: tuple[str, ...] = ()) -> SnapshotHost:
    snap = make_snapshot(env=env, commands={"rocminfo": rocminfo},
                         files={"/opt/rocm/.info/version": "6.2.1\n", **(files or {})})
    return SnapshotHost(snap, strict=True, absent=SIGNALS + absent)


def cuda_host(env: dict[str, str], listing: Optional[dict[str, Any]]) -> SnapshotHost:
    snap = make_snapshot(env=env, files={"/proc/driver/nvidia/version": "NVRM version: 550\n"},
                         commands={"nvidia-smi -L": listing} if listing else {})
    return SnapshotHost(snap, strict=True, absent=(
        "/sys/module/amdgpu", "/dev/kfd", "/opt/rocm", "/dev/nvidiactl", "nvidia-smi -L",
        *NO_ROCM_VERSION))


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = GPU_ISOLATION) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


DGPU, APU = "gfx1030 AMD Radeon RX 6800 XT", "gfx1036 AMD Radeon Graphics"
MI = "gfx942 AMD Instinct MI300X"
UNSET_HIP = Fix("Unset HIP_VISIBLE_DEVICES to make every GPU visible, or set it to GPUs that "
                "exist (gpu-agents lists them).", commands=("unset HIP_VISIBLE_DEVICES",))

ROCM_CASES: list[tuple[str, dict[str, str], CheckResult]] = [
    (IGPU, {"HIP_VISIBLE_DEVICES": "0"}, expect(
        Status.PASS, f"HIP_VISIBLE_DEVICES=0: 1 of 2 GPUs visible ({DGPU})",
        (INFO(f"HIP_VISIBLE_DEVICES=0 selects {DGPU}"),))),
    (IGPU, {"CUDA_VISIBLE_DEVICES": "1"}, expect(
        Status.PASS, f"CUDA_VISIBLE_DEVICES=1: 1 of 2 GPUs visible ({APU})",
        (INFO(f"CUDA_VISIBLE_DEVICES=1 selects {APU}"),))),
    (IGPU, {"HIP_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "7"}, expect(
        Status.PASS, f"HIP_VISIBLE_DEVICES=1: 1 of 2 GPUs visible ({APU})",
        (INFO(f"HIP_VISIBLE_DEVICES=1 selects {APU}"),
         INFO("CUDA_VISIBLE_DEVICES=7 is ignored: on ROCm, HIP reads it only when "
              "HIP_VISIBLE_DEVICES is unset")))),
    (IGPU, {"HIP_VISIBLE_DEVICES": "GPU-e0ce170b"}, expect(
        Status.PASS, f"HIP_VISIBLE_DEVICES=GPU-e0ce170b: 1 of 2 GPUs visible ({DGPU})",
        (INFO(f"HIP_VISIBLE_DEVICES=GPU-e0ce170b selects {DGPU}"),))),
    (IGPU, {"HIP_VISIBLE_DEVICES": "2"}, expect(
        Status.FAIL, "HIP_VISIBLE_DEVICES entry 2 does not exist (2 GPU(s) to choose from: 0-1)",
        (ERR("HIP_VISIBLE_DEVICES entry 2 does not exist (2 GPU(s) to choose from: 0-1)"),),
        UNSET_HIP)),
    (IGPU, {"HIP_VISIBLE_DEVICES": ""}, expect(
        Status.FAIL, "HIP_VISIBLE_DEVICES is set but empty: it selects no GPU",
        (ERR("HIP_VISIBLE_DEVICES is set but empty: it selects no GPU"),), UNSET_HIP)),
    (IGPU, {"HIP_VISIBLE_DEVICES": "1,5,1"}, expect(
        Status.FAIL, "HIP_VISIBLE_DEVICES entry 5 does not exist (2 GPU(s) to choose from: 0-1)",
        (ERR("HIP_VISIBLE_DEVICES entry 5 does not exist (2 GPU(s) to choose from: 0-1)"),
         ERR("HIP_VISIBLE_DEVICES lists GPU 1 twice")),
        Fix("Keep only the entries of HIP_VISIBLE_DEVICES that name a GPU.",
            commands=("export HIP_VISIBLE_DEVICES=1",)))),
    (IGPU, {"GPU_DEVICE_ORDINAL": "GPU-e0ce170b"}, expect(
        Status.FAIL, "GPU_DEVICE_ORDINAL entry 'GPU-e0ce170b' is not an index",
        (ERR("GPU_DEVICE_ORDINAL entry 'GPU-e0ce170b' is not an index"),),
        Fix("Unset GPU_DEVICE_ORDINAL to make every GPU visible, or set it to GPUs that exist "
            "(gpu-agents lists them).", commands=("unset GPU_DEVICE_ORDINAL",)))),
    (IGPU, {"ROCR_VISIBLE_DEVICES": "0"}, expect(
        Status.PASS, "ROCR_VISIBLE_DEVICES=0: 2 of 2 GPUs visible "
        f"({DGPU}, {APU})",
        (INFO(f"ROCR_VISIBLE_DEVICES=0 selects {DGPU}, {APU}"),
         INFO("ROCR_VISIBLE_DEVICES cannot be checked entry by entry without the KFD topology "
              "in sysfs; rocminfo, which honours it, shows 2 GPU(s)")))),
    # ...not even an index past rocminfo's list: rocminfo's list is already the selection
    (IGPU, {"ROCR_VISIBLE_DEVICES": "5"}, expect(
        Status.PASS, "ROCR_VISIBLE_DEVICES=5: 2 of 2 GPUs visible "
        f"({DGPU}, {APU})",
        (INFO(f"ROCR_VISIBLE_DEVICES=5 selects {DGPU}, {APU}"),
         INFO("ROCR_VISIBLE_DEVICES cannot be checked entry by entry without the KFD topology "
              "in sysfs; rocminfo, which honours it, shows 2 GPU(s)")))),
]


@pytest.mark.parametrize("name, env, result", ROCM_CASES)
def test_rocm(name: str, env: dict[str, str], result: CheckResult) -> None:
    assert run(rocm_host(fixture_text(name), env, absent=(KFD_NODES,))) == result


def test_rocr_against_every_gpu_in_sysfs() -> None:
    # ROCR_VISIBLE_DEVICES indexes every GPU; HIP_VISIBLE_DEVICES indexes what it left.
    h = rocm_host(fixture_text(MI300X), {"ROCR_VISIBLE_DEVICES": "GPU-b4fa,3",
                                         "HIP_VISIBLE_DEVICES": "1"}, MI300X_SYSFS)
    assert run(h) == expect(
        Status.PASS, f"ROCR_VISIBLE_DEVICES=GPU-b4fa,3, HIP_VISIBLE_DEVICES=1: 1 of 4 GPUs "
        f"visible ({MI})",
        (INFO(f"ROCR_VISIBLE_DEVICES=GPU-b4fa,3 selects {MI}, {MI}"),
         INFO(f"HIP_VISIBLE_DEVICES=1 selects {MI}")))


def test_rocr_index_beyond_the_gpus() -> None:
    h = rocm_host(fixture_text(MI300X), {"ROCR_VISIBLE_DEVICES": "0,4"}, MI300X_SYSFS)
    assert run(h) == expect(
        Status.FAIL, "ROCR_VISIBLE_DEVICES entry 4 does not exist (4 GPU(s) to choose from: 0-3)",
        (ERR("ROCR_VISIBLE_DEVICES entry 4 does not exist (4 GPU(s) to choose from: 0-3)"),),
        Fix("Keep only the entries of ROCR_VISIBLE_DEVICES that name a GPU.",
            commands=("export ROCR_VISIBLE_DEVICES=0",)))


def test_hip_indexes_only_what_rocr_left() -> None:
    h = rocm_host(fixture_text(MI300X), {"ROCR_VISIBLE_DEVICES": "2",
                                         "HIP_VISIBLE_DEVICES": "1"}, MI300X_SYSFS)
    assert run(h).summary == (
        "HIP_VISIBLE_DEVICES entry 1 does not exist (1 GPU(s) to choose from: 0-0)")


def test_gpu_list_unknown() -> None:
    failed = fixture_text("rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt")
    snap = make_snapshot(env={"HIP_VISIBLE_DEVICES": "0"},
                         commands={"rocminfo": {"returncode": 1, "stdout": failed}},
                         files={"/opt/rocm/.info/version": "6.2.1\n"})
    h = SnapshotHost(snap, strict=True, absent=SIGNALS + (KFD_NODES,))
    assert run(h) == expect(Status.WARN, "HIP_VISIBLE_DEVICES=0 cannot be checked: the GPU "
                            "list is unknown (see gpu-agents)")


def test_nothing_set_or_no_gpu() -> None:
    assert run(rocm_host(fixture_text(IGPU), {})) == expect(
        Status.SKIP, "none of ROCR_/HIP_/CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL is set")
    snap = make_snapshot(env={"CUDA_VISIBLE_DEVICES": "0"})
    h = SnapshotHost(snap, strict=True, absent=SIGNALS + ("/opt/rocm",) + NO_ROCM_VERSION)
    assert run(h) == expect(Status.SKIP, "no AMD or NVIDIA GPU found")


H100 = "NVIDIA H100 80GB HBM3"
LISTED = {"returncode": 0, "stdout": H100_X4, "stderr": "", "timed_out": False}


def test_nvidia_listing() -> None:
    gpus = nvidia_gpus(H100_X4)
    assert [(g.index, g.name, g.uuid) for g in gpus][1] == (
        1, H100, "GPU-1be66b4c-65e2-4a17-80d9-ab9f5bf3bb70")
    assert len(gpus) == 4


def test_cuda_by_index_and_uuid_prefix() -> None:
    h = cuda_host({"CUDA_VISIBLE_DEVICES": "2,GPU-fe4d", "HIP_VISIBLE_DEVICES": "0"}, LISTED)
    assert run(h) == expect(
        Status.PASS, f"CUDA_VISIBLE_DEVICES=2,GPU-fe4d: 2 of 4 GPUs visible ({H100}, {H100})",
        (INFO(f"CUDA_VISIBLE_DEVICES=2,GPU-fe4d selects {H100}, {H100}"),
         INFO("HIP_VISIBLE_DEVICES=0 is read only by AMD's ROCm runtimes; NVIDIA's ignores it")),
        source=CUDA_VISIBLE)


def test_cuda_index_beyond_the_gpus() -> None:
    assert run(cuda_host({"CUDA_VISIBLE_DEVICES": "4"}, LISTED)) == expect(
        Status.FAIL, "CUDA_VISIBLE_DEVICES entry 4 does not exist (4 GPU(s) to choose from: 0-3)",
        (ERR("CUDA_VISIBLE_DEVICES entry 4 does not exist (4 GPU(s) to choose from: 0-3)"),),
        Fix("Unset CUDA_VISIBLE_DEVICES to make every GPU visible, or set it to GPUs that exist "
            "(gpu-agents lists them).", commands=("unset CUDA_VISIBLE_DEVICES",)),
        CUDA_VISIBLE)


def test_cuda_empty_value_hides_every_gpu() -> None:
    assert run(cuda_host({"CUDA_VISIBLE_DEVICES": ""}, LISTED)).summary == (
        "CUDA_VISIBLE_DEVICES is set but empty: it selects no GPU")


def test_cuda_without_listing_or_with_only_rocm_variables() -> None:
    assert run(cuda_host({"CUDA_VISIBLE_DEVICES": "0"}, None)) == expect(
        Status.WARN, "CUDA_VISIBLE_DEVICES=0 cannot be checked: `nvidia-smi -L` listed no GPU",
        source=CUDA_VISIBLE)
    assert run(cuda_host({"ROCR_VISIBLE_DEVICES": "0"}, LISTED)) == expect(
        Status.PASS, "CUDA_VISIBLE_DEVICES is not set; the ROCm variables have no effect on "
        "NVIDIA GPUs",
        (INFO("ROCR_VISIBLE_DEVICES=0 is read only by AMD's ROCm runtimes; NVIDIA's ignores it"),),
        source=CUDA_VISIBLE)
    assert run(cuda_host({"CUDA_VISIBLE_DEVICES": "MIG-1"}, LISTED)).status is Status.WARN
