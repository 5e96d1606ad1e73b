"""Recorded `check --deep` runs (tests/fixtures/deep/*.json, the deep child's own JSON shape)
replayed through snapshot hosts built from real captures of the machines they describe."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any, Optional

from rocmdoctor.checks.registry import DEEP_CHECKS, STRESS_CHECKS
from rocmdoctor.cli.deep import collapse_skips
from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import CheckResult, Report
from rocmdoctor.runner import run_checks
from tests.helpers import char_dev, fixture_text, make_snapshot
from tests.test_h200_hardware_replay import DMESG, SMI, sysfs

DEEP = Path(__file__).parent / "fixtures" / "deep"
H200_SNAPSHOT = Path(__file__).parent / "fixtures" / "h200-snapshot.json.gz"
DEEP_KEY = "rocmdoctor-deep"


def recorded(name: str) -> dict[str, Any]:
    return json.loads((DEEP / name).read_text(encoding="utf-8"))


def _h200_snapshot() -> dict[str, Any]:
    with gzip.open(H200_SNAPSHOT, "rt", encoding="utf-8") as fh:
        return dict(json.load(fh))


def h200_python() -> dict[str, Any]:
    return dict(_h200_snapshot()["python"])


def h200_query_gpu() -> tuple[str, Any]:
    """The real H200's `nvidia-smi --query-gpu=...` entry (its PCI address, UUID, limits)."""
    return next((k, v) for k, v in _h200_snapshot()["commands"].items()
                if k.startswith("nvidia-smi --query-gpu="))


def command(result: Optional[dict[str, Any]], returncode: int = 0, stderr: str = "",
            timed_out: bool = False) -> dict[str, Any]:
    return {"returncode": returncode, "stdout": json.dumps(result) + "\n" if result else "",
            "stderr": stderr, "timed_out": timed_out, "duration_s": 25.0}


def h200_host(result: Optional[dict[str, Any]], stress_s: float = 0.0,
              entry: Optional[dict[str, Any]] = None, **files: str) -> SnapshotHost:
    """The real H200 machine (sysfs PCI, nvidia-smi -q, dmesg, its torch probe) with this
    deep result recorded under the deep child's command key."""
    pci_files, paths = sysfs()
    paths["/dev/nvidiactl"] = char_dev("root", "0666")
    key = DEEP_KEY + (f" --stress {stress_s:g}" if stress_s else "")
    query, inventory = h200_query_gpu()
    snap = make_snapshot(
        files={**pci_files, **files}, paths=paths, kernel="6.18.44-fc-v973-gpu",
        python=h200_python(),
        commands={"dmesg": fixture_text(DMESG), "nvidia-smi -q": fixture_text(SMI),
                  "lspci -nn": {"returncode": 127, "stdout": "", "stderr": "lspci: not found"},
                  query: inventory, key: entry if entry is not None else command(result)})
    absent = ["/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", KFD_NODES]
    host = SnapshotHost(snap, absent=absent)
    host.deep_stress_s = stress_s
    return host


def amd_host(result: dict[str, Any], bdf: str, device_id: str, name: str, arch: str,
             speed: str = "32.0 GT/s PCIe", width: str = "16", **files: str) -> SnapshotHost:
    """An AMD machine as the deep checks read it: the GPU's PCI device with its link files,
    /dev/kfd, and a torch probe that sees the GPU."""
    dev = f"/sys/bus/pci/devices/{bdf}"
    pci = {f"{dev}/vendor": "0x1002\n", f"{dev}/device": f"{device_id}\n",
           f"{dev}/class": "0x120000\n", f"{dev}/current_link_speed": speed + "\n",
           f"{dev}/max_link_speed": speed + "\n", f"{dev}/current_link_width": width + "\n",
           f"{dev}/max_link_width": width + "\n"}
    probe = {"executable": "/usr/bin/python3", "version": "3.12.3", "packages": {"torch": result[
        "torch"]}, "torch": {"imported": True, "error": None, "version": result["torch"],
                             "hip": result["hip"], "cuda": None, "available": True,
                             "device_count": len(result["gpus"]), "arch_list": [arch],
                             "devices": [{"index": 0, "name": name, "arch": arch}]}}
    snap = make_snapshot(files={**pci, **files},
                         paths={"/dev/kfd": char_dev(), dev: {"type": "dir", "mode": "0755"}},
                         dirs={"/sys/bus/pci/devices": [bdf]}, python=probe,
                         commands={DEEP_KEY: command(result)})
    return SnapshotHost(snap)


def deep_report(host: SnapshotHost, stress: bool = False) -> Report:
    checks = [cls() for cls in (*DEEP_CHECKS, *(STRESS_CHECKS if stress else ()))]
    return collapse_skips(run_checks(host, checks))


def result_of(report: Report, check_id: str) -> CheckResult:
    from dataclasses import replace

    found = next(r for r in report.results if r.id == check_id)
    return replace(found, duration_ms=0)


def variant(base: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(base)


def gemm(result: dict[str, Any], dtype: str, library: Optional[str] = None) -> dict[str, Any]:
    return next(g for g in result["gpus"][0]["gemm"]
                if g["dtype"] == dtype and g["library"] == library)


def scale(rate: dict[str, Any], factor: float) -> None:
    """Every figure of one measured rate times `factor` (a degraded run)."""
    for key in ("median", "min", "max"):
        rate[key] = round(rate[key] * factor, 4)
    rate["samples"] = [round(s * factor, 4) for s in rate["samples"]]
