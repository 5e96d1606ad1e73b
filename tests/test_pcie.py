"""pcie-atomics and pcie-link through a strict SnapshotHost, from real captures: kernel logs,
`lspci -nn`, `lspci -tv` trees, sysfs link values, rocminfo BDFIDs and `nvidia-smi -q`."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.pcie_atomics import PcieAtomics
from rocmdoctor.checks.pcie_link import LACT_593, PcieLink
from rocmdoctor.facts.amd_gpus import KFD_NODES
from rocmdoctor.facts.kernel_log import RESTRICT_FILE
from rocmdoctor.facts.nvidia_smi_q import parse_nvidia_smi_q
from rocmdoctor.facts.pci import (
    PCI_DEVICES,
    device,
    full_bdf,
    parse_lspci_nn,
    parse_speed,
    parse_width,
)
from rocmdoctor.facts.pcie_link import Link, gpu_link, slot_device
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import pcie
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status
from tests.helpers import char_dev, fixture_text, make_snapshot

ENTRY = {e.key: e for e in KERNEL_MESSAGES}
ATOMICS, LINK = PcieAtomics(), PcieLink()
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}
ABSENT = ("dmesg", "journalctl -k -b --no-pager", RESTRICT_FILE, "lspci -nn", "nvidia-smi -q",
          "/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl",
          KFD_NODES)


def pci(bdf: str, vendor: str, device: str, cls: str, parents: tuple[str, ...] = (),
        link: Optional[dict[str, str]] = None, driver: Optional[str] = None
        ) -> tuple[dict[str, str], dict[str, Any]]:
    """sysfs files and the symlink of one PCI device."""
    base = f"{PCI_DEVICES}/{bdf}"
    files = {f"{base}/vendor": vendor + "\n", f"{base}/device": device + "\n",
             f"{base}/class": cls + "\n"}
    files.update({f"{base}/{k}": v + "\n" for k, v in (link or {}).items()})
    root = parents[0][:7] if parents else bdf[:7]
    target = "../../../devices/pci" + root + "/" + "/".join((*parents, bdf))
    paths: dict[str, Any] = {base: {"type": "symlink", "mode": "0777", "target": target}}
    if driver:
        paths[f"{base}/driver"] = {"type": "symlink", "mode": "0777",
                                   "target": f"../../../bus/pci/drivers/{driver}"}
    return files, paths


def kfd_node(node: int, props: dict[str, int]) -> dict[str, str]:
    text = "".join(f"{k} {v}\n" for k, v in props.items())
    return {f"{KFD_NODES}/{node}/properties": text, f"{KFD_NODES}/{node}/name": "\n"}


def machine(devices: list[tuple[dict[str, str], dict[str, Any]]],
            files: Optional[dict[str, str]] = None, commands: Optional[dict[str, Any]] = None,
            nvidia: bool = False) -> SnapshotHost:
    all_files = {} if nvidia else dict(ROCM)
    paths: dict[str, Any] = {"/dev/nvidiactl": char_dev("root", "0666")} if nvidia else {}
    for f, p in devices:
        all_files.update(f)
        paths.update(p)
    all_files.update(files or {})
    absent = [a for a in ABSENT if a not in (commands or {})]
    absent += [f"{PCI_DEVICES}/{b}/{n}" for f, _ in devices for b in {k.split("/")[5] for k in f}
               for n in ("current_link_speed", "max_link_speed", "current_link_width",
                         "max_link_width", "driver")]
    snap = make_snapshot(files=all_files, paths=paths, commands=commands)
    return SnapshotHost(snap, strict=True, absent=absent)


def run(check: Check, h: SnapshotHost) -> CheckResult:
    reason = check.applies(h)
    return replace(check.skipped(reason) if reason else check.run(h), duration_ms=0)


def entry_fix(key: str) -> Fix:
    e = ENTRY[key]
    return Fix(e.fix, e.commands, e.needs_root)


CPU_NODE = kfd_node(0, {"cpu_cores_count": 64, "simd_count": 0})


# --- pcie-atomics ---------------------------------------------------------------------------

RX570 = "dmesg-kfd-added-then-skipped-pci-rejects-atomics-2x-rx570-h270-pch-x4-slot-rocm1.7-TRUNCATED.txt"


def rx570_pair(location: bool) -> SnapshotHost:
    """Two RX 570s (lspci -tv of the capture): 01:00.0 below the CPU's port 00:01.0, 02:00.0
    below the PCH port 00:1c.0; KFD added one 1002:67df and skipped the other."""
    body = fixture_text(RX570)
    dmesg = body.split("# lspci -tv")[0].split("\n", 1)[1]
    props = {"simd_count": 128, "vendor_id": 0x1002, "device_id": 0x67DF,
             "gfx_target_version": 80003}
    if location:
        props |= {"location_id": 0x100, "domain": 0}
    return machine([pci("0000:01:00.0", "0x1002", "0x67df", "0x030000", ("0000:00:01.0",)),
                    pci("0000:02:00.0", "0x1002", "0x67df", "0x030000", ("0000:00:1c.0",))],
                   files={**CPU_NODE, **kfd_node(1, props)}, commands={"dmesg": dmesg})


def test_the_card_behind_the_chipset_port_is_skipped_for_atomics() -> None:
    for location in (True, False):  # kernels without location_id: matched by device id
        assert run(ATOMICS, rx570_pair(location)) == ATOMICS.result(
            Status.FAIL, "1 of 2 AMD GPU(s) on the PCI bus is not in the KFD topology: "
            "0000:02:00.0: the path to it rejects PCIe atomics", (
                Finding.info("0000:01:00.0 [1002:67df]: KFD node 1"),
                Finding.error("0000:02:00.0 [1002:67df]: not in the KFD topology: the path to it "
                              "rejects PCIe atomics (kernel log: kfd kfd: skipped device "
                              "1002:67df, PCI rejects atomics)"),
                Finding.info("0000:02:00.0 sits below 1 bridge(s), from the root port: "
                             "0000:00:1c.0")),
            entry_fix("kfd-pci-rejects-atomics"), ENTRY["kfd-pci-rejects-atomics"].source)


def test_without_location_ids_a_kfd_node_is_matched_by_its_own_device_id() -> None:
    # The capture's kernel log (no location_id in its KFD topology) with an RX 570 skipped
    # and an R9 Fury (1002:7300, gfx803 too) that KFD added.
    dmesg = fixture_text(RX570).split("# lspci -tv")[0].split("\n", 1)[1]
    h = machine([pci("0000:01:00.0", "0x1002", "0x67df", "0x030000", ("0000:00:1c.0",)),
                 pci("0000:02:00.0", "0x1002", "0x7300", "0x030000", ("0000:00:01.0",))],
                files={**CPU_NODE, **kfd_node(1, {"simd_count": 256, "vendor_id": 0x1002,
                                                   "device_id": 0x7300,
                                                   "gfx_target_version": 80003})},
                commands={"dmesg": dmesg})
    assert run(ATOMICS, h) == ATOMICS.result(
        Status.FAIL, "1 of 2 AMD GPU(s) on the PCI bus is not in the KFD topology: "
        "0000:01:00.0: the path to it rejects PCIe atomics", (
            Finding.info("0000:02:00.0 [1002:7300]: KFD node 1"),
            Finding.error("0000:01:00.0 [1002:67df]: not in the KFD topology: the path to it "
                          "rejects PCIe atomics (kernel log: kfd kfd: skipped device 1002:67df, "
                          "PCI rejects atomics)"),
            Finding.info("0000:01:00.0 sits below 1 bridge(s), from the root port: "
                         "0000:00:1c.0")),
        entry_fix("kfd-pci-rejects-atomics"), ENTRY["kfd-pci-rejects-atomics"].source)


def test_every_gpu_after_one_another_driver_drives_is_still_judged() -> None:
    # The capture's kernel log; an older card on radeon first, then two RX 570s, both behind
    # PCH ports and absent from KFD.
    dmesg = fixture_text(RX570).split("# lspci -tv")[0].split("\n", 1)[1]
    h = machine([pci("0000:01:00.0", "0x1002", "0x6779", "0x030000", ("0000:00:01.0",),
                     driver="radeon"),
                 pci("0000:02:00.0", "0x1002", "0x67df", "0x030000", ("0000:00:1c.0",)),
                 pci("0000:03:00.0", "0x1002", "0x67df", "0x030000", ("0000:00:1c.4",))],
                files=CPU_NODE, commands={"dmesg": dmesg})
    rejected = ("[1002:67df]: not in the KFD topology: the path to it rejects PCIe atomics "
                "(kernel log: kfd kfd: skipped device 1002:67df, PCI rejects atomics)")
    assert run(ATOMICS, h) == ATOMICS.result(
        Status.FAIL, "2 of 3 AMD GPU(s) on the PCI bus are not in the KFD topology: "
        "0000:02:00.0: the path to it rejects PCIe atomics", (
            Finding.info("0000:01:00.0 [1002:6779]: driven by radeon, not amdgpu: ROCm does not "
                         "use it"),
            Finding.error(f"0000:02:00.0 {rejected}"),
            Finding.info("0000:02:00.0 sits below 1 bridge(s), from the root port: "
                         "0000:00:1c.0"),
            Finding.error(f"0000:03:00.0 {rejected}"),
            Finding.info("0000:03:00.0 sits below 1 bridge(s), from the root port: "
                         "0000:00:1c.4")),
        entry_fix("kfd-pci-rejects-atomics"), ENTRY["kfd-pci-rejects-atomics"].source)


def session_line(text: str, command: str) -> str:
    lines = text.splitlines()
    return lines[lines.index(next(x for x in lines if x.endswith(command))) + 1]


def test_a_gpu_the_driver_refused_is_named_with_the_firmware_line() -> None:
    """Radeon PRO V620 VF on Azure (ROCm issue 2995): on PCI (lspci -nn), KFD has only the CPU
    node (rocminfo lists one CPU agent), and the kernel log says PSP firmware loading failed."""
    session = fixture_text(
        "session-lspci-gpu-on-pci-absent-from-kfd-cpu-agent-only-and-rocm-smi-no-gpus-v620-mxgpu-azure-rocm6.0.2.txt")
    lspci = session_line(session, "lspci -nn | grep -i amd") + "\n"
    assert "Device Type:             CPU" in session and "Device Type:             GPU" not in session
    dmesg = fixture_text(
        "dmesg-psp-firmware-loading-failed-hw-init-psp-failed-22-fatal-gpu-init-v620-mxgpu-azure-dkms6.3.6-TRUNCATED.txt")
    h = machine([], files=CPU_NODE, commands={"lspci -nn": lspci, "dmesg": dmesg})
    h.absent |= {f"{PCI_DEVICES}/0002:00:00.0/driver"}
    assert run(ATOMICS, h) == ATOMICS.result(
        Status.FAIL, "1 of 1 AMD GPU(s) on the PCI bus is not in the KFD topology: "
        "0002:00:00.0: PSP rejected the GPU firmware", (
            Finding.error("0002:00:00.0 Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 [Radeon "
                          "Pro V620 MxGPU]: not in the KFD topology: PSP rejected the GPU firmware "
                          "(kernel log: [drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading "
                          "failed)"),),
        entry_fix("amdgpu-psp-load-failed"), ENTRY["amdgpu-psp-load-failed"].source)


def test_an_apu_kfd_does_not_support() -> None:
    """Picasso APU + RX 560 (Fedora 29, 4.20): KFD added 1002:67ef; 'DID 15d8 is missing'."""
    body = fixture_text(
        "dmesg-kfd-did-missing-in-supported-devices-kgd2kfd-probe-failed-picasso-plus-rx560-fc29-TRUNCATED.txt")
    dmesg = body.split("uname -a")[0]
    h = machine([pci("0000:01:00.0", "0x1002", "0x67ef", "0x030000", ("0000:00:01.1",)),
                 pci("0000:05:00.0", "0x1002", "0x15d8", "0x030000", ("0000:00:08.1",))],
                files={**CPU_NODE, **kfd_node(1, {"simd_count": 64, "vendor_id": 0x1002,
                                                   "device_id": 0x67EF})},
                commands={"dmesg": dmesg})
    got = run(ATOMICS, h)
    assert (got.status, got.summary) == (
        Status.FAIL, "1 of 2 AMD GPU(s) on the PCI bus is not in the KFD topology: "
        "0000:05:00.0: this kernel's KFD does not support it")
    assert got.findings[1] == Finding.error(
        "0000:05:00.0 [1002:15d8]: not in the KFD topology: this kernel's KFD does not support "
        "it (kernel log: kfd kfd: DID 15d8 is missing in supported_devices)")
    assert got.fix == entry_fix("kfd-not-supported")


def test_four_mi300x_all_in_kfd_by_their_bdfid() -> None:
    """rocminfo's BDFID is KFD's location_id; the four MI300X of the capture."""
    body = fixture_text("rocminfo-gfx942-mi300x-x4-epyc9474f.txt")
    bdfids = [int(b) for b in re.findall(r"BDFID:\s+(\d+)", body) if b != "0"]
    assert len(bdfids) == 4
    bdfs = [f"0000:{b >> 8:02x}:{(b & 0xFF) >> 3:02x}.{b & 7}" for b in bdfids]
    files = dict(CPU_NODE)
    for i, bdfid in enumerate(bdfids, start=1):
        files |= kfd_node(i, {"simd_count": 1216, "vendor_id": 0x1002, "device_id": 0x74A1,
                              "location_id": bdfid, "domain": 0})
    # KFD numbers its nodes in its own order: the last GPU node first, to prove the match is
    # by address.
    files[f"{KFD_NODES}/1/properties"], files[f"{KFD_NODES}/4/properties"] = (
        files[f"{KFD_NODES}/4/properties"], files[f"{KFD_NODES}/1/properties"])
    h = machine([pci(b, "0x1002", "0x74a1", "0x120000") for b in bdfs], files=files)
    assert bdfs[0] == "0000:26:00.0"
    assert run(ATOMICS, h) == ATOMICS.passed(
        "every AMD GPU on the PCI bus that amdgpu drives is in the KFD topology (4 of 4)",
        tuple(Finding.info(f"{b} [1002:74a1]: KFD node {n}") for b, n in zip(bdfs, (4, 2, 3, 1))))


def test_a_gpu_another_driver_drives_is_not_a_failure() -> None:
    h = machine([pci("0000:03:00.0", "0x1002", "0x6779", "0x030000", driver="radeon")],
                files=CPU_NODE)
    assert run(ATOMICS, h) == ATOMICS.passed(
        "every AMD GPU on the PCI bus that amdgpu drives is in the KFD topology (0 of 1)",
        (Finding.info("0000:03:00.0 [1002:6779]: driven by radeon, not amdgpu: ROCm does not "
                      "use it"),))


def test_no_amd_gpu_on_the_bus_skips() -> None:
    assert run(ATOMICS, machine([])) == ATOMICS.skipped(
        "no AMD GPU on the PCI bus (sysfs and lspci -nn list none)")


# --- pcie-link --------------------------------------------------------------------------------


def sysfs_values(name: str) -> dict[str, str]:
    """file -> value of a 'grep . /sys/class/drm/card0/device/*_link_*' capture."""
    found = {}
    for line in fixture_text(name).splitlines():
        m = re.match(r"/sys/class/drm/card\d+/device/(\w+_link_\w+):(.*)$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def test_rx7800xt_at_full_width_passes() -> None:
    link = sysfs_values(
        "sysfs-drm-card-current-max-link-speed-width-16gt-x16-and-lspci-lnksta-rx7800xt-gentoo.txt")
    assert link == {"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
                    "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}
    h = machine([pci("0000:0c:00.0", "0x1002", "0x747e", "0x030000", link=link)])
    assert run(LINK, h) == LINK.passed("1 GPU link(s) at full width", (Finding.info(
        "0000:0c:00.0 [1002:747e]: Gen4 x16 (16 GT/s) of Gen4 x16 (16 GT/s); 31.51 GB/s per "
        "direction at full speed"),))


def navi48(upstream_width: str) -> SnapshotHost:
    """An RDNA card as LACT issue 593 describes it: the GPU function (its LnkSta as captured,
    32GT/s x16) below the card's own switch; the slot link is on the upstream port."""
    lnk = fixture_text("lspci-vv-lnkcap-lnksta-32gt-x16-rx9070xt-navi48-gpu-endpoint-vs-upstream-port.txt")
    assert "LnkSta: Speed 32GT/s, Width x16" in lnk
    gpu_link = {"current_link_speed": "32.0 GT/s PCIe", "current_link_width": "16",
                "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"}
    chain = ("0000:00:01.1", "0000:2d:00.0", "0000:2e:00.0")
    return machine([
        pci("0000:00:01.1", "0x1022", "0x1483", "0x060400", link={
            "current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
            "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}),
        pci("0000:2d:00.0", "0x1002", "0x1478", "0x060400", chain[:1], link={
            "current_link_speed": "16.0 GT/s PCIe", "current_link_width": upstream_width,
            "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"}),
        pci("0000:2e:00.0", "0x1002", "0x1479", "0x060400", chain[:2], link=gpu_link),
        pci("0000:2f:00.0", "0x1002", "0x7550", "0x030000", chain, link=gpu_link)])


def test_the_slot_link_of_an_rdna_card_is_its_upstream_port() -> None:
    assert run(LINK, navi48("16")) == LINK.passed("1 GPU link(s) at full width", (Finding.info(
        "0000:2f:00.0 [1002:7550]: Gen4 x16 (16 GT/s) of Gen4 x16 (16 GT/s), read from "
        "0000:2d:00.0 (the card's upstream port: the GPU function's own link is inside the "
        "card); 31.51 GB/s per direction at full speed"),))
    assert LACT_593.endswith("/593")


def test_a_narrow_upstream_link_warns_with_the_bandwidth_it_costs() -> None:
    got = run(LINK, navi48("8"))
    assert got == LINK.result(
        Status.WARN, "1 GPU link(s) narrower than the card and slot allow: 0000:2f:00.0 runs x8 "
        "of x16", (Finding.error(
            "0000:2f:00.0 [1002:7550]: Gen4 x8 (16 GT/s) of Gen4 x16 (16 GT/s), read from "
            "0000:2d:00.0 (the card's upstream port: the GPU function's own link is inside the "
            "card); at most 15.75 GB/s per direction host-to-device instead of 31.51 GB/s"),),
        Fix("Put the card in a slot wired for all its lanes (the motherboard manual says which "
            "slots share lanes with M.2 drives or other slots), seat it fully without a riser, "
            "and check the slot's lane (bifurcation) setting in the BIOS."))


def nvidia_machine(name: str, bdfs: dict[str, str]) -> SnapshotHost:
    return machine([pci(b, "0x10de", d, "0x030200") for b, d in bdfs.items()],
                   commands={"nvidia-smi -q": fixture_text(name)}, nvidia=True)


def test_l4_at_x8_of_x16_from_nvidia_smi() -> None:
    h = nvidia_machine("nvidia-smi-q-l4-pcie-link-width-8x-of-16x-gen1-idle-ecc-enabled-driver550.90.txt",
                       {"0000:01:00.0": "0x27b8"})
    got = run(LINK, h)
    assert (got.status, got.summary) == (
        Status.WARN, "1 GPU link(s) narrower than the card and slot allow: 0000:01:00.0 runs x8 "
        "of x16")
    assert got.findings == (Finding.error(
        "0000:01:00.0 [10de:27b8]: Gen1 x8 (2.5 GT/s) of Gen4 x16 (16 GT/s), read from "
        "nvidia-smi -q; at most 15.75 GB/s per direction host-to-device instead of 31.51 GB/s"),)


def test_idle_gen1_is_said_not_failed() -> None:
    h = nvidia_machine(
        "nvidia-smi-q-geforce-rtx3090-x2-ecc-na-retired-pages-na-remapped-rows-na-pcie-gen1-idle-driver560.35.txt",
        {"0000:41:00.0": "0x2204", "0000:81:00.0": "0x2204"})
    got = run(LINK, h)
    assert got.status is Status.PASS and got.summary == "2 GPU link(s) at full width"
    assert got.findings[1] == Finding.info(
        "0000:41:00.0 runs below its top speed now: GPUs lower the link speed when idle; read it "
        "again while a job runs: nvidia-smi -q -d PCIE")


def test_h100_replays_are_reported() -> None:
    name = "nvidia-smi-q-h100-80gb-hbm3-x8-sxm-pcie-replays-since-reset-nonzero-driver565.57.txt"
    bdfs = {g.bus_id: "0x2330" for g in parse_nvidia_smi_q(fixture_text(name))}
    got = run(LINK, nvidia_machine(name, bdfs))
    assert got.status is Status.PASS and got.summary == "8 GPU link(s) at full width"
    replays = [f.text for f in got.findings if "Replays" in f.text]
    assert [re.search(r"Reset: (\d+)", t).group(1) for t in replays] == ["7", "4", "15"]  # type: ignore[union-attr]


# --- parsers ----------------------------------------------------------------------------------


def test_lspci_nn_lines() -> None:
    line = fixture_text("lspci-nn-vga-compatible-controller-0300-navi31-rx7900xtx-1002-744c.txt")
    (dev,) = parse_lspci_nn(line)
    assert (dev.bdf, dev.vendor, dev.device, dev.pci_class, dev.is_gpu) == (
        "0000:03:00.0", "0x1002", "0x744c", "0x0300", True)
    assert dev.name == "Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX]"


def test_speed_and_width_values() -> None:
    assert [parse_speed(t) for t in ("16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s PCIe", "Unknown",
                                     "")] == [16.0, 8.0, 2.5, None, None]
    assert [parse_width(t) for t in ("16", "x8", "0", "sixteen", "")] == [16, 8, 0, None, None]
    assert full_bdf("2F:00.0") == "0000:2f:00.0"
    assert pcie.link_gbps(32.0, 16) == 63.02 and pcie.link_gbps(2.5, 1) == 0.25
    assert pcie.link_gbps(64.0, 16) is None


def test_nvidia_smi_q_remapped_rows_pending() -> None:
    gpus = parse_nvidia_smi_q(fixture_text(
        "nvidia-smi-q-a100-sxm4-80gb-x4-ecc-enabled-remapped-rows-pending-yes-driver555.42.txt"))
    assert [g.bus_id for g in gpus] == ["0000:68:00.0", "0000:9e:00.0", "0000:c2:00.0",
                                        "0000:d4:00.0"]
    assert [g.get("Remapped Rows", "Pending") for g in gpus] == ["No", "Yes", "No", "No"]
    assert gpus[1].link == (4, 4, 5, 16, 16)
    assert gpus[1].ecc_enabled is True and gpus[1].ecc_total("Volatile", True) == 0


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_lspci_nn(text)
    parse_speed(text)
    parse_width(text)
    for gpu in parse_nvidia_smi_q("GPU 00000000:01:00.0\n" + text):
        _ = (gpu.link, gpu.ecc_enabled, gpu.throttle_reasons, gpu.ecc_total("Volatile", True))


# --- pcie-link, held by mutation testing ------------------------------------------------------

FULL_GEN4 = {"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
             "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}


def test_the_integrated_gpu_beside_a_discrete_one_is_left_out() -> None:
    # A Ryzen 7000 desktop: RX 7800 XT (gfx1101) at 03:00.0 and the gfx1036 iGPU at 10:00.0,
    # both in KFD with their location_id.
    h = machine([pci("0000:03:00.0", "0x1002", "0x747e", "0x030000", link=FULL_GEN4),
                 pci("0000:10:00.0", "0x1002", "0x164e", "0x030000", link=FULL_GEN4)],
                files={**CPU_NODE,
                       **kfd_node(1, {"simd_count": 120, "vendor_id": 0x1002, "device_id": 0x747E,
                                      "gfx_target_version": 110001, "location_id": 0x300,
                                      "domain": 0}),
                       **kfd_node(2, {"simd_count": 4, "vendor_id": 0x1002, "device_id": 0x164E,
                                      "gfx_target_version": 100306, "location_id": 0x1000,
                                      "domain": 0})})
    assert run(LINK, h) == LINK.passed("1 GPU link(s) at full width", (Finding.info(
        "0000:03:00.0 [1002:747e]: Gen4 x16 (16 GT/s) of Gen4 x16 (16 GT/s); 31.51 GB/s per "
        "direction at full speed"),))


def test_two_narrow_links_name_the_first() -> None:
    h = machine([pci("0000:03:00.0", "0x1002", "0x744c", "0x030000",
                     link={**FULL_GEN4, "current_link_width": "8"}),
                 pci("0000:07:00.0", "0x1002", "0x744c", "0x030000",
                     link={**FULL_GEN4, "current_link_width": "4"})])
    got = run(LINK, h)
    assert (got.status, got.summary) == (
        Status.WARN, "2 GPU link(s) narrower than the card and slot allow: 0000:03:00.0 runs x8 "
        "of x16")
    assert got.findings == (
        Finding.error("0000:03:00.0 [1002:744c]: Gen4 x8 (16 GT/s) of Gen4 x16 (16 GT/s); at most "
                      "15.75 GB/s per direction host-to-device instead of 31.51 GB/s"),
        Finding.error("0000:07:00.0 [1002:744c]: Gen4 x4 (16 GT/s) of Gen4 x16 (16 GT/s); at most "
                      "7.88 GB/s per direction host-to-device instead of 31.51 GB/s"))


def test_a_link_with_only_its_speed_readable_is_still_shown() -> None:
    h = machine([pci("0000:03:00.0", "0x1002", "0x744c", "0x030000",
                     link={"current_link_speed": "16.0 GT/s PCIe",
                           "max_link_speed": "16.0 GT/s PCIe"})])
    assert run(LINK, h) == LINK.passed("1 GPU link(s) at full width", (Finding.info(
        "0000:03:00.0 [1002:744c]: Gen4 (16 GT/s) of Gen4 (16 GT/s)"),))


def test_a_guest_whose_nvidia_smi_hides_every_maximum_generation() -> None:
    # The H200 KVM guest already reports Host Max N/A; here its Max is hidden too.
    text = fixture_text("nvidia-smi-q-h200-kvm-guest-gen5-x16-host-max-na-ecc-enabled-driver580.159.txt")
    shown = "            PCIe Generation\n                Max                                    : 5\n"
    assert shown in text
    h = machine([pci("0000:00:06.0", "0x10de", "0x2335", "0x030200")], nvidia=True,
                commands={"nvidia-smi -q": text.replace(shown, shown.replace(": 5", ": N/A"))})
    assert run(LINK, h) == LINK.passed("1 GPU link(s) at full width", (Finding.info(
        "0000:00:06.0 [10de:2335]: Gen5 x16 (32 GT/s) of speed unknown x16, read from "
        "nvidia-smi -q"),))


def test_the_port_above_a_card_behind_a_switch_is_the_nearest_one() -> None:
    # A PLX switch (vendor 0x10b5) between the root port and the GPU: the slot's port is the
    # switch's downstream port, not the root port.
    chain = ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0")
    h = machine([pci("0000:00:01.1", "0x1022", "0x1483", "0x060400"),
                 pci("0000:01:00.0", "0x10b5", "0x8747", "0x060400", chain[:1]),
                 pci("0000:02:00.0", "0x10b5", "0x8747", "0x060400", chain[:2]),
                 pci("0000:03:00.0", "0x1002", "0x744c", "0x030000", chain)])
    gpu = device(h, "0000:03:00.0")
    assert gpu is not None
    link_dev, port = slot_device(h, gpu)
    assert (link_dev.bdf, port.bdf if port else None) == ("0000:03:00.0", "0000:02:00.0")


def test_the_walk_up_a_cards_own_ports_stops_at_the_first_port_not_its_own() -> None:
    # An AMD bridge (a root port of AMD's chipset, vendor 0x1002 here) above a PLX switch
    # (0x10b5) above the card's own AMD ports: the slot's link is the card's upstream port,
    # and the port above it is the switch's; the AMD bridge above the switch is not the card's.
    chain = ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0")
    link = {"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "8",
            "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}
    h = machine([pci("0000:00:01.1", "0x1002", "0x1478", "0x060400"),
                 pci("0000:01:00.0", "0x10b5", "0x8747", "0x060400", chain[:1]),
                 pci("0000:02:00.0", "0x1002", "0x1478", "0x060400", chain[:2], link=link),
                 pci("0000:03:00.0", "0x1002", "0x1479", "0x060400", chain[:3]),
                 pci("0000:04:00.0", "0x1002", "0x744c", "0x030000", chain)])
    gpu = device(h, "0000:04:00.0")
    assert gpu is not None
    link_dev, port = slot_device(h, gpu)
    assert (link_dev.bdf, port.bdf if port else None) == ("0000:02:00.0", "0000:01:00.0")
    assert gpu_link(h, "0000:04:00.0") == Link(gpu, "0000:02:00.0", 16.0, 8, 16.0, 16)


def test_only_an_nvidia_gpus_link_is_asked_of_nvidia_smi() -> None:
    """An Intel GPU with no link files in sysfs has no link to show; nvidia-smi, which knows
    only NVIDIA's, is not run for it (a strict snapshot without it would refuse)."""
    intel = pci("0000:00:02.0", "0x8086", "0xa780", "0x030000")
    absent = [a for a in ABSENT if a != "nvidia-smi -q"] + [
        f"{PCI_DEVICES}/0000:00:02.0/{n}" for n in (
            "current_link_speed", "max_link_speed", "current_link_width", "max_link_width",
            "driver")]
    h = SnapshotHost(make_snapshot(files=intel[0], paths=intel[1]), strict=True, absent=absent)
    assert gpu_link(h, "0000:00:02.0") is None
