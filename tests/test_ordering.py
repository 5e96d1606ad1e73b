"""Every list of devices, cards and nodes comes in numeric order (issue 28): with twelve of
each, card10 comes after card2, KFD node 10 after node 2, /dev/nvidia10 after /dev/nvidia2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocmdoctor.facts.amd_gpus import KFD_NODES, kfd_gpus
from rocmdoctor.facts.amd_smi import amd_smi
from rocmdoctor.facts.amdgpu_firmware import debugfs_firmware
from rocmdoctor.facts.container import gpu_nodes, render_devices
from rocmdoctor.facts.pci import PCI_DEVICES, kfd_gpu_nodes, pci_devices
from rocmdoctor.facts.perf_level import perf_levels
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.snapshot import SnapshotHost, build_snapshot
from tests.helpers import char_dev, fixture_text, make_snapshot

COUNT = 12  # card0 .. card11: past 10, where text order and numeric order part
GFX1100_FIRMWARE = "debugfs-amdgpu-firmware-info-gfx1100-rx7900xtx-mes-0x34-mec-0x1fe-smc-78.85.0.txt"
CPU_NODE = "cpu_cores_count 12\nsimd_count 0\n"


def _gpu_node(i: int) -> str:
    # A gfx1100 node at PCI bus i+1 (location_id = bus << 8 | devfn).
    return (f"cpu_cores_count 0\nsimd_count 192\nsimd_per_cu 2\ngfx_target_version 110000\n"
            f"vendor_id 4098\ndevice_id 29772\nlocation_id {(i + 1) << 8}\ndomain 0\n"
            f"unique_id {1000 + i}\n")


def _kfd_host() -> SnapshotHost:
    files = {f"{KFD_NODES}/0/properties": CPU_NODE, f"{KFD_NODES}/0/name": "\n"}
    for i in range(COUNT):
        files[f"{KFD_NODES}/{i + 1}/properties"] = _gpu_node(i)
        files[f"{KFD_NODES}/{i + 1}/name"] = "ip discovery\n"
    return SnapshotHost(make_snapshot(files=files))


def test_kfd_gpus_come_in_node_order() -> None:
    gpus = kfd_gpus(_kfd_host())
    assert [g.node for g in gpus] == list(range(1, COUNT + 1))
    assert [g.index for g in gpus] == list(range(COUNT))
    assert [g.uuid for g in gpus] == [f"GPU-{1000 + i:016x}" for i in range(COUNT)]


def test_kfd_gpu_nodes_come_in_node_order() -> None:
    nodes = kfd_gpu_nodes(_kfd_host())
    assert [n.node for n in nodes] == list(range(1, COUNT + 1))
    assert [n.bdf for n in nodes] == [f"0000:{i + 1:02x}:00.0" for i in range(COUNT)]


def test_drm_cards_come_in_card_order() -> None:
    files = {}
    for i in range(COUNT):
        files[f"/sys/class/drm/card{i}/device/vendor"] = "0x1002\n"
        files[f"/sys/class/drm/card{i}/device/power_dpm_force_performance_level"] = "auto\n"
    levels = perf_levels(SnapshotHost(make_snapshot(files=files)))
    assert [c.card for c in levels] == [f"card{i}" for i in range(COUNT)]


def test_nvidia_device_nodes_come_in_number_order() -> None:
    paths = {p: char_dev("root", "0666") for p in ("/dev/nvidiactl", "/dev/nvidia-uvm")}
    paths.update({f"/dev/nvidia{i}": char_dev("root", "0666") for i in range(COUNT)})
    nodes = gpu_nodes(SnapshotHost(make_snapshot(paths=paths)), "nvidia")
    cards = [p for p, _ in nodes.present if p[len("/dev/nvidia"):].isdigit()]
    assert cards == [f"/dev/nvidia{i}" for i in range(COUNT)]


def test_render_nodes_come_in_number_order() -> None:
    # renderD128 .. renderD139, and renderD1000 past them (text order puts it first).
    numbers = [*range(128, 128 + COUNT), 1000]
    paths = {f"/dev/dri/renderD{n}": char_dev() for n in numbers}
    found = render_devices(SnapshotHost(make_snapshot(paths=paths)))
    assert [p for p, _ in found] == [f"/dev/dri/renderD{n}" for n in numbers]


def test_debugfs_firmware_comes_in_card_order() -> None:
    body = "\n".join(ln for ln in fixture_text(GFX1100_FIRMWARE).splitlines()
                     if "#" not in ln and "❯" not in ln) + "\n"
    files = {}
    for i in range(COUNT):
        files[f"/sys/kernel/debug/dri/{i}/amdgpu_firmware_info"] = body
        files[f"/sys/kernel/debug/dri/{i}/name"] = f"amdgpu dev=0000:{i + 1:02x}:00.0 unique=0\n"
    cards = debugfs_firmware(SnapshotHost(make_snapshot(files=files)))
    assert [c.bdf for c in cards] == [f"0000:{i + 1:02x}:00.0" for i in range(COUNT)]


def test_pci_devices_come_in_address_order() -> None:
    files, paths = {}, {}
    for domain, bus in [(d, b) for d in (0, 1) for b in range(COUNT)]:
        bdf = f"{domain:04x}:{bus + 1:02x}:00.0"
        paths[f"{PCI_DEVICES}/{bdf}"] = {"type": "symlink", "target":
                                         f"../../../devices/pci{domain:04x}:00/{bdf}"}
        files.update({f"{PCI_DEVICES}/{bdf}/vendor": "0x1002\n",
                      f"{PCI_DEVICES}/{bdf}/device": "0x744c\n",
                      f"{PCI_DEVICES}/{bdf}/class": "0x030000\n"})
    devices = pci_devices(SnapshotHost(make_snapshot(files=files, paths=paths)))
    assert [d.bdf for d in devices] == [f"{d:04x}:{b + 1:02x}:00.0" for d in (0, 1)
                                        for b in range(COUNT)]


def test_amd_smi_gpus_come_in_index_order() -> None:
    # amd-smi may print them in any order; the report keeps the index order.
    entries = [{"gpu": i, "asic": {"market_name": f"gpu {i}"}} for i in range(COUNT)]
    printed = sorted(entries, key=lambda e: str(e["gpu"]))  # 0, 1, 10, 11, 2, ...
    host = SnapshotHost(make_snapshot(commands={"amd-smi static --json": json.dumps(printed)}))
    report = amd_smi(host, ("static",))
    assert [g.gpu for g in report.gpus] == list(range(COUNT))
    assert [g.static["asic"]["market_name"] for g in report.gpus] == [
        f"gpu {i}" for i in range(COUNT)]


def test_snapshot_glob_and_listdir_are_in_numeric_order() -> None:
    files = {f"/sys/class/drm/card{i}/dev": "226:0\n" for i in range(COUNT)}
    host = SnapshotHost(make_snapshot(files=files))
    cards = [f"card{i}" for i in range(COUNT)]
    assert host.glob("/sys/class/drm/card*") == [f"/sys/class/drm/{c}" for c in cards]
    assert host.listdir("/sys/class/drm") == cards


@pytest.mark.live
def test_live_glob_and_listdir_are_in_numeric_order(tmp_path: Path) -> None:
    cards = [f"card{i}" for i in range(COUNT)]
    for name in reversed(cards):
        os.mkdir(tmp_path / name)
    host = LiveHost()
    assert host.glob(str(tmp_path / "card*")) == [str(tmp_path / c) for c in cards]
    assert host.listdir(str(tmp_path)) == cards
    # ...and the snapshot it records answers the same.
    replay = SnapshotHost(build_snapshot(host, redact=False))
    assert replay.glob(str(tmp_path / "card*")) == [str(tmp_path / c) for c in cards]
