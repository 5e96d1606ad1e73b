"""Replay of a real NVIDIA H200 machine: `rocmdoctor snapshot` taken there on 2026-11-30
(driver 580.159.04, torch 2.11.0+cu130, torchvision 0.26.0), redacted, committed as a fixture."""

from __future__ import annotations

from pathlib import Path

from rocmdoctor.checks.registry import all_checks
from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot
from rocmdoctor.model import Finding, Fix, Status
from rocmdoctor.runner import run_checks

SNAPSHOT = Path(__file__).parent / "fixtures" / "h200-snapshot.json.gz"
NOT_AMD = "not an AMD machine (NVIDIA GPU found)"


def test_every_check_on_the_real_h200() -> None:
    report = run_checks(SnapshotHost(load_snapshot(str(SNAPSHOT))), all_checks())
    assert report.platform == "cuda"
    got = {r.id: (r.status, r.summary, r.findings, r.fix) for r in report.results}
    assert got == {
        "os-release": (Status.PASS, "Ubuntu 24.04.3 LTS", (Finding.info(
            "no ROCm install found, so ROCm's OS support was not checked"),), None),
        "kernel-version": (Status.SKIP, NOT_AMD, (), None),
        # The snapshot predates these reads: no dmesg, link files or nvidia-smi -q in it.
        "kernel-log": (Status.SKIP, "the kernel log is not readable here: `dmesg` is not "
                       "installed; `journalctl -k -b --no-pager` is not installed; read it with "
                       "`sudo dmesg | grep -iE 'amdgpu|kfd|nvrm'`", (), Fix(
                           "Read the kernel log as root and paste it into rocmdoctor explain.",
                           ("sudo dmesg | rocmdoctor explain",), needs_root=True)),
        "amdgpu-driver": (Status.SKIP, NOT_AMD, (), None),
        "amdgpu-firmware": (Status.SKIP, NOT_AMD, (), None),
        "container": (Status.SKIP, "not running in a container", (), None),
        "kfd-access": (Status.SKIP, NOT_AMD, (), None),
        "pcie-atomics": (Status.SKIP, NOT_AMD, (), None),
        "rocm-install": (Status.SKIP, NOT_AMD, (), None),
        "rocm-permissions": (Status.SKIP, "no ROCm install found", (), None),
        "gpu-agents": (Status.SKIP, NOT_AMD, (), None),
        "pcie-link": (Status.SKIP, "no PCIe link speed or width is readable for 0000:00:06.0 "
                      "[10de:?]", (), None),
        "gpu-health": (Status.SKIP, "nvidia-smi is not installed (it reports ECC and row "
                       "remapping)", (), None),
        "perf-level": (Status.SKIP, NOT_AMD, (), None),
        "ppfeaturemask": (Status.SKIP, NOT_AMD, (), None),
        "torch-install": (Status.PASS,
                          "torch 2.11.0+cu130 imports; CUDA build fits the NVIDIA GPU", (), None),
        "rocm-libraries": (Status.SKIP, "torch is a CUDA build, not a ROCm build", (), None),
        "torch-rocm-match": (Status.SKIP,
                             "torch 2.11.0+cu130 is a CUDA build, not a ROCm build", (), None),
        "torch-arch-support": (Status.PASS,
                               "sm_90 (NVIDIA H200) supported by torch 2.11.0+cu130", (), None),
        "torch-device": (Status.PASS, "torch sees 1 GPU; matmul and conv2d match the CPU on each",
                         (Finding.info("GPU 0: NVIDIA H200 (sm_90)"),), None),
        "torchvision-match": (Status.PASS,
                              "torchvision 0.26.0 with torch 2.11.0+cu130: a matching pair", (),
                              None),
        "debug-env": (Status.PASS, "no debugging variables that slow the GPU are set", (), None),
        "gfx-override": (Status.SKIP, NOT_AMD, (), None),
        "visible-devices": (Status.SKIP, "none of ROCR_/HIP_/CUDA_VISIBLE_DEVICES or "
                            "GPU_DEVICE_ORDINAL is set", (), None),
        "allocator-config": (Status.SKIP, "none of PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF, "
                             "PYTORCH_HIP_ALLOC_CONF is set", (), None),
        "miopen-db": (Status.SKIP, "torch does not use MIOpen (not a ROCm build)", (), None),
        "nvidia-driver": (Status.PASS,
                          "driver 580.159.04, NVIDIA H200 (sm_90); supports torch's CUDA 13.0",
                          (Finding.info("GPU 0: NVIDIA H200, compute capability 9.0, 143771 MiB, "
                                        "power limit 700 W, persistence mode on"),), None),
    }


def test_the_committed_snapshot_is_redacted() -> None:
    raw = SNAPSHOT.read_bytes()
    import gzip

    text = gzip.decompress(raw).decode()
    assert '"hostname": "<redacted>"' in text
    assert "5b33dbc6" not in text  # the GPU's UUID as the probe and nvidia-smi reported it
    assert text.count("<uuid>") == 2
