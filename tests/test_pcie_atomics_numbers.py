"""pcie-atomics reads the kernel's own numbers: `PCI rejects atomics 123<145` is the MEC
firmware against the version KFD needs without atomics (a firmware update, not another slot),
`730<0` a GPU that always needs them; and a GPU KFD took whose path passes no atomics."""

from __future__ import annotations

from rocmdoctor.kb.kernel_log import LSPCI_ATOMICS, NAVI14_MEC, ROCM_2429
from rocmdoctor.model import Finding, Fix, Status
from tests.helpers import fixture_text
from tests.test_pcie import ATOMICS, CPU_NODE, ENTRY, entry_fix, kfd_node, machine, pci, run

NAVI14 = "dmesg-kfd-skipped-device-pci-rejects-atomics-123-lt-145-navi14-w5500-mec-firmware-too-old.txt"
RX570 = "dmesg-kfd-pci-rejects-atomics-730-lt-0-rx570-gfx803-ubuntu22.04-rocm5.4.3.txt"
RX550 = "dmesg-kfd-pci-rejects-atomics-730-lt-0-rx550-gfx803-thinkpad-e580.txt"
NAVI31 = ("hip-log-hostcall-not-supported-and-dmesg-pcie-atomic-ops-not-supported-gfx1100-"
          "rx7900xt-rocm5.6.txt")


def test_real_mec_firmware_below_what_kfd_needs_calls_for_a_firmware_update() -> None:
    log = fixture_text(NAVI14)
    h = machine([pci("0000:05:00.0", "0x1002", "0x7341", "0x030000", ("0000:00:03.0",))],
                files=CPU_NODE, commands={"dmesg": log})
    why = ("its MEC firmware 123 is older than 145, from which KFD takes it without the PCIe "
           "atomics the path to it does not pass")
    assert run(ATOMICS, h) == ATOMICS.result(
        Status.FAIL, f"1 of 1 AMD GPU(s) on the PCI bus is not in the KFD topology: "
        f"0000:05:00.0: {why}",
        (Finding.error(f"0000:05:00.0 [1002:7341]: not in the KFD topology: {why} (kernel log: "
                       "kfd kfd: amdgpu: skipped device 1002:7341, PCI rejects atomics "
                       "123<145)"),),
        entry_fix("kfd-atomics-mec-firmware-old"), NAVI14_MEC)
    assert ENTRY["kfd-atomics-mec-firmware-old"].fix.startswith("Install a newer linux-firmware")


def test_real_a_gpu_that_always_needs_atomics_is_blamed_on_the_path() -> None:
    for name, device, bdf in ((RX570, "0x67df", "0000:01:00.0"),
                              (RX550, "0x699f", "0000:01:00.0")):
        h = machine([pci(bdf, "0x1002", device, "0x030000", ("0000:00:1c.0",))],
                    files=CPU_NODE, commands={"dmesg": fixture_text(name)})
        line = fixture_text(name).strip().split("] ", 1)[1]
        assert line.endswith("PCI rejects atomics 730<0")
        assert run(ATOMICS, h) == ATOMICS.result(
            Status.FAIL, f"1 of 1 AMD GPU(s) on the PCI bus is not in the KFD topology: {bdf}: "
            "the path to it rejects PCIe atomics",
            (Finding.error(f"{bdf} [1002:{device[2:]}]: not in the KFD topology: the path to "
                           f"it rejects PCIe atomics (kernel log: {line})"),
             Finding.info(f"{bdf} sits below 1 bridge(s), from the root port: 0000:00:1c.0")),
            entry_fix("kfd-pci-rejects-atomics"), ENTRY["kfd-pci-rejects-atomics"].source)


def test_real_a_gpu_kfd_took_without_atomics_on_its_path_warns() -> None:
    # ROCm#2429: RX 7900 XT at 0000:03:00.0 behind two bridges; no "PCI rejects atomics", but
    # "amdgpu 0000:03:00.0: amdgpu: PCIE atomic ops is not supported" and HIP's hostcall fails.
    text = fixture_text(NAVI31)
    assert "Pcie atomics not enabled, hostcall not supported" in text
    dmesg = "[    4.512345] " + next(ln for ln in text.splitlines() if "PCIE atomic ops" in ln)
    node = kfd_node(1, {"simd_count": 168, "vendor_id": 0x1002, "device_id": 0x744C,
                        "location_id": 0x300, "domain": 0, "gfx_target_version": 110000})
    h = machine([pci("0000:03:00.0", "0x1002", "0x744c", "0x030000",
                     ("0000:00:01.0", "0000:01:00.0", "0000:02:00.0"))],
                files={**CPU_NODE, **node}, commands={"dmesg": dmesg})
    assert run(ATOMICS, h) == ATOMICS.result(
        Status.WARN, "every AMD GPU on the PCI bus that amdgpu drives is in the KFD topology "
        "(1 of 1), but the path to 0000:03:00.0 passes no PCIe atomics (hostcall fails)",
        (Finding.info("0000:03:00.0 [1002:744c]: KFD node 1"),
         Finding.error("0000:03:00.0 [1002:744c]: in the KFD topology, but amdgpu found no PCIe "
                       "atomics on the path to it (kernel log: amdgpu 0000:03:00.0: amdgpu: "
                       "PCIE atomic ops is not supported): GPU code that calls back to the "
                       "host (device printf, assert, device-side malloc: HIP's hostcall) fails "
                       "with 'Pcie atomics not enabled, hostcall not supported'")),
        Fix("Put the card in a slot wired to the CPU (not the chipset), without a riser or "
            "PCIe switch in between, and update the motherboard BIOS; under a hypervisor, pass "
            "the GPU through as a single function.", (LSPCI_ATOMICS,), needs_root=True),
        ROCM_2429)
