"""Kernel-log lines (amdgpu, KFD, NVIDIA's NVRM, Secure Boot) with their cause and fix: one
catalogue for the kernel-log check and `rocmdoctor explain` (a kernel line pasted to explain gets
the same answer the check gives). Each entry names its source: the kernel source line that
prints the message, or the public report where it was seen with its cause.

The amdgpu line numbers are those of FreeBSD's drm-kmod at 129bf0f2961d, a straight port of
Linux `drivers/gpu/drm/amd`.
"""

from __future__ import annotations

from rocmdoctor.kb import nvidia_xid
from rocmdoctor.kb.messages import DMESG_AMDGPU, DMESG_GPU, KnownMessage, Variant

ROCM_3207 = "https://github.com/ROCm/ROCm/issues/3207"
ROCM_2330 = "https://github.com/ROCm/ROCm/issues/2330"
ROCM_912 = "https://github.com/ROCm/ROCm/issues/912"  # a maintainer: the TA firmware is optional
# kgd2kfd_device_init(): "skipped device %x:%x, PCI rejects atomics %d<%d", "added device %x:%x",
# "device %x:%x NOT added due to errors"; kgd2kfd_probe(): "GC IP %06x %s not supported in kfd".
KFD_DEVICE = ("https://github.com/torvalds/linux/blob/master/drivers/gpu/drm/amd/amdkfd/"
              "kfd_device.c")
ROCM_ATOMICS = ("https://rocm.docs.amd.com/en/latest/understand/"
                "More-about-how-ROCm-uses-PCIe-Atomics.html")
_AMDGPU = "https://github.com/freebsd/drm-kmod/blob/129bf0f2961d/drivers/gpu/drm/amd/amdgpu/"
AMDGPU_KMS = _AMDGPU + "amdgpu_kms.c"  # :148 "Fatal error during GPU init"
AMDGPU_DEVICE = _AMDGPU + "amdgpu_device.c"  # :5516 "VRAM is lost due to GPU reset!"
AMDGPU_RAS = _AMDGPU + "amdgpu_ras.c"  # :1074/1086 per-block counts, :4119 ERREVENT
AMDGPU_GMC = _AMDGPU + "gmc_v11_0.c"  # the [gfxhub]/[mmhub] page-fault report
FIRMWARE_LOADER = ("https://github.com/torvalds/linux/blob/master/drivers/base/firmware_loader/"
                   "main.c")  # _request_firmware(): "Direct firmware load for %s failed ..."
ROCM_2995 = "https://github.com/ROCm/ROCm/issues/2995"  # V620 VF on Azure: PSP load fails
ROCM_5814 = "https://github.com/ROCm/ROCm/issues/5814"  # gfx1201 page faults, MES 0x84
ROCM_2927 = "https://github.com/ROCm/ROCm/issues/2927"  # MI100: AER errors on the root port
# AMD's "IOMMU advisory for AMD Instinct", pointed to in ROCm issue 2198.
IOMMU_ADVISORY = ("https://community.amd.com/t5/knowledge-base/iommu-advisory-for-amd-instinct/"
                  "ta-p/484601")
AWS_MODULES_EXTRA = "https://github.com/awsdocs/amazon-ec2-user-guide/pull/152"
AMDGPU_68 = "https://github.com/ROCm/amdgpu/issues/68"
TUNAOS_103 = "https://github.com/tuna-os/tunaOS/issues/103"
# lockdown_is_locked_down(): "Lockdown: %s: %s is restricted; see man kernel_lockdown.7".
LOCKDOWN = "https://github.com/torvalds/linux/blob/master/security/lockdown/lockdown.c"
# module_sig_check(): "Loading of %s is rejected" and -EKEYREJECTED ("Key was rejected by
# service") when signatures are enforced.
MODULE_SIGNING = "https://github.com/torvalds/linux/blob/master/kernel/module/signing.c"
# Enrolling a Machine Owner Key: `mokutil --import MOK.der`, reboot, "Enroll MOK" in MOK manager.
DEBIAN_SECUREBOOT = "https://wiki.debian.org/SecureBoot"
NVRM_OSAPI = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/src/nvidia/arch/"
              "nvalloc/unix/src/osapi.c")  # :1221 "NVRM: API mismatch: the client '%s' ..."
AER_HOWTO = "https://docs.kernel.org/PCI/pcieaer-howto.html"
# 4x MI210: "PSP create ring failed!" at load; all four came up with the Infinity Fabric
# bridge unplugged (a defective bridge).
ROCM_2747 = "https://github.com/ROCm/legacy-rocm-build/issues/2747"

DMESG_KFD = "sudo dmesg | grep -i kfd"
MEC_FIRMWARE = "sudo grep -H MEC /sys/kernel/debug/dri/*/amdgpu_firmware_info"
# amdgpu_device_init(): "PCIE atomic ops is not supported" when pci_enable_atomic_ops_to_root()
# fails (have_atomics_support = false); KFD may still add the GPU (gfx9, or a GPU whose MEC
# firmware runs without atomics), but the runtime's hostcall (device printf, asserts, device
# malloc) needs them: "Pcie atomics not enabled, hostcall not supported" (ROCm/ROCm#2429).
ROCM_2429 = "https://github.com/ROCm/ROCm/issues/2429"
AMDGPU_NO_ATOMICS = (r"(?:amdgpu (?P<bdf>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): "
                     r"(?:amdgpu: )?)?PCIE atomic ops is not supported")
# kfd_device.c, kfd_device_info_init(): no_atomic_fw_version 145 (GC 10.1.x), 92 (10.3.x), 14
# (10.3.6), 3 (10.3.7); GFX11 with RS64 firmware 509 ("PCIe atomics support acknowledgment in
# GFX11 RS64 CPFW requires MEC version >= 509"); GFX12 2090 (amd-gfx patch "Add MEC version
# from which alternate support for no PCIe atomics is provided ... GFX1200/GFX1201", Cc
# stable 6.11.x). A Navi14 at "123<145" was taken once its firmware reached MEC 156.
NAVI14_MEC = ("https://github.com/weicj/rdna1-gfx101x-rocm-llama-fix/blob/"
              "7c13a01d4c7a15793ca2e14af33b52d9f5780a52/README.md")
LSPCI_ATOMICS = "sudo lspci -vvv | grep -E '^[0-9a-f]|AtomicOps'"
SB_STATE = "mokutil --sb-state"

# KFD's per-device lines (kfd_device.c, newer kernels prefix "amdgpu: "): the pcie-atomics
# check reads them to say why a GPU on the PCI bus is not in the KFD topology. `id` is the
# vendor:device pair, `did` a bare device id.
KFD_ADDED = r"\badded device (?P<id>[0-9a-f]{4}:[0-9a-f]{4})\b"
KFD_EVENTS: tuple[tuple[str, str], ...] = (
    # "skipped device %x:%x, PCI rejects atomics %d<%d": the MEC firmware version, then
    # no_atomic_fw_version, from which KFD takes the GPU without atomics (0: never).
    ("atomics-firmware", r"skipped device (?P<id>[0-9a-f]{4}:[0-9a-f]{4}), PCI rejects atomics "
                         r"(?P<mec>\d+)<(?P<need>[1-9]\d*)"),
    ("atomics", r"skipped device (?P<id>[0-9a-f]{4}:[0-9a-f]{4}), PCI rejects atomics"),
    ("not-added", r"device (?P<id>[0-9a-f]{4}:[0-9a-f]{4}) NOT added due to errors"),
    ("not-supported", r"DID (?P<did>[0-9a-f]{4}) is missing in supported_devices"),
    ("not-supported", r"GC IP [0-9a-f]+ .*not supported in kfd|kfd not supported on this ASIC"),
)

_FIRMWARE_FIX = ("Install the firmware the driver asks for: the distribution's linux-firmware "
                 "package (with AMD's amdgpu-dkms driver, amdgpu-dkms-firmware), at least as new "
                 "as the kernel or driver; then rebuild the initramfs, which carries a copy "
                 "(update-initramfs -u on Debian/Ubuntu, dracut -f on Fedora/RHEL), and reboot.")
_MOK_FIX = ("Sign the module with a key the firmware trusts: enrol DKMS's signing key as a "
            "Machine Owner Key (`sudo mokutil --import` the key DKMS signs with, "
            "/var/lib/dkms/mok.pub, or /var/lib/shim-signed/mok/MOK.der on Ubuntu; reboot and "
            "choose 'Enroll MOK' in the blue MOK manager screen), or turn Secure Boot off in the "
            "firmware setup.")

AMD_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "amdgpu-mes-hang", "MES failed to respond (GPU reset)", "kernel-log",
        (r"MES failed to respond to msg=", r"MES might be in unrecoverable state"),
        "The GPU's scheduler firmware (MES, RDNA3 and newer) stopped answering, so the driver "
        "could not remove queues and reset the GPU (ROCm issue 3207: a Radeon 780M, gfx1103, "
        "run with HSA_OVERRIDE_GFX_VERSION=11.0.0).",
        "Update the kernel and linux-firmware (it carries the MES firmware). On an APU give "
        "the GPU more memory in the BIOS (UMA frame buffer): a commenter on ROCm issue 3207 "
        "stopped the resets on a 780M by raising it from 1 GB to 4 GB.",
        "kernel-version", ROCM_3207, commands=(DMESG_AMDGPU,), needs_root=True,
        context="machine_state"),
    KnownMessage(
        "amdgpu-ring-timeout", "amdgpu ring timeout and GPU reset", "kernel-log",
        (r"amdgpu_job_timedout", r"ring \S+ timeout", r"GPU reset begin"),
        "A GPU job did not finish in time, so the amdgpu driver reset the GPU: the process "
        "using it dies and the desktop may freeze. Seen with driver and firmware bugs, "
        "unstable clocks or power, and GPUs the ROCm release does not support (ROCm issue "
        "2330: RX 6800 under PyTorch load, then the SMU stopped answering).",
        "Update the kernel and linux-firmware, or install the amdgpu-dkms driver of your ROCm "
        "release; use a kernel the installed ROCm supports; undo overclocks, undervolts and "
        "power-limit changes; read the kernel log around the reset.",
        "kernel-version", ROCM_2330, commands=(DMESG_AMDGPU,), needs_root=True,
        yields_to=("amdgpu-mes-hang", "amdgpu-ras-uncorrectable"), context="machine_state",
        # amdgpu's smu_v1x_0.c says "SMU driver if version not matched" and goes on ("not
        # critical as our fw is designed to be backward compatible ... visible only on the
        # paired driver"): the driver and the firmware are from different releases
        variants=(Variant(
            "smu_if_mismatch", "The driver and the GPU's SMU firmware are from different "
            "releases ('SMU driver if version not matched'): pair them, the distribution's "
            "kernel driver with its linux-firmware and no amdgpu-dkms, or AMD's amdgpu-dkms "
            "with the firmware it installs; then undo overclocks and read the log around the "
            "reset.", ("dkms status", "uname -r", DMESG_AMDGPU),
            "amdgpu logs the SMU interface mismatch and goes on (its smu_v1x_0.c: not "
            "critical by itself)."),)),
    KnownMessage(
        "amdgpu-vram-lost", "GPU reset lost VRAM", "kernel-log",
        (r"VRAM is lost due to GPU reset",),
        "The driver had to reset the whole GPU (a MODE1 or BACO reset), which wipes its memory: "
        "every program that was using the GPU lost its data and must be restarted.",
        "Restart the programs that used the GPU; the lines before the reset say what hung.",
        "kernel-log", AMDGPU_DEVICE, commands=(DMESG_AMDGPU,), needs_root=True,
        yields_to=("amdgpu-ring-timeout", "amdgpu-mes-hang", "amdgpu-ras-uncorrectable",
                   "amdgpu-psp-ring-failed")),
    KnownMessage(
        "amdgpu-firmware-missing", "amdgpu firmware file missing", "kernel-log",
        (r"Direct firmware load for amdgpu/\S+ failed with error", r"Failed to load firmware "
         r"\"?amdgpu/", r"fail to request/validate \S+ microcode",
         # FreeBSD's drm-kmod (linuxkpi) says it so
         r"could not load firmware image 'amdgpu/"),
        "The amdgpu driver asked for a firmware file that is not on this machine (error -2 is "
        "'no such file'), so the GPU could not start: the firmware package is older than the "
        "kernel or driver, or the initramfs lacks the file.",
        _FIRMWARE_FIX, "amdgpu-firmware", FIRMWARE_LOADER, commands=(DMESG_AMDGPU,),
        needs_root=True, level="fail", unless=(r"amdgpu/\w+_ta\.bin",)),
    # The PSP's trusted-application firmware is optional (the entry below): not a failure.
    KnownMessage(
        "amdgpu-firmware-ta-harmless", "amdgpu: vega20_ta.bin (PSP TA firmware) not found",
        "kernel-log",
        (r"Direct firmware load for amdgpu/\w+_ta\.bin failed",
         r"Failed to load firmware \"amdgpu/\w+_ta\.bin\""),
        "The PSP's trusted-application firmware (*_ta.bin) is optional: ROCm runs without it "
        "(ROCm issue 912, maintainer: 'you don't need to worry'). It is not why a GPU fails.",
        "Nothing to fix; do not mix PSP firmware files from different packages.", None,
        ROCM_912, yields_to=("*",), threads=2, level="info"),
    KnownMessage(
        "amdgpu-psp-load-failed", "PSP rejected the GPU firmware", "kernel-log",
        (r"PSP firmware loading failed", r"hw_init of IP block <psp> failed",
         r"psp \S+ firmware load failed"),
        "The GPU's security processor (PSP) refused to load firmware, so the GPU did not start "
        "(-22 is 'invalid argument'). The firmware does not match the driver, or the GPU is a "
        "virtual function that needs its cloud vendor's guest driver (ROCm issue 2995: a Radeon "
        "PRO V620 MxGPU on Azure, which needs Microsoft's driver, not amdgpu-dkms).",
        _FIRMWARE_FIX + " On a cloud GPU instance, install the guest driver the provider "
        "documents for it.", "amdgpu-firmware", ROCM_2995, commands=(DMESG_AMDGPU,),
        needs_root=True, level="fail"),
    KnownMessage(
        "amdgpu-fatal-init", "amdgpu could not start a GPU", "kernel-log",
        (r"Fatal error during GPU init", r"amdgpu_device_ip_init failed",
         r"[hs]w_init of IP block <\w+> failed",
         r"amdgpu: probe of \S+ failed with error"),
        "amdgpu gave up on this GPU while starting it; the lines just before name the part "
        "(IP block) that failed and the error number. The GPU is then not usable.",
        "Read the lines before 'Fatal error during GPU init': a missing or rejected firmware is "
        "the usual cause (install linux-firmware matching the kernel or driver); otherwise use "
        "a kernel or amdgpu-dkms release that supports this GPU.",
        "amdgpu-driver", AMDGPU_KMS, commands=(DMESG_AMDGPU,), needs_root=True,
        # error -12 (ENOMEM) at probe: the platform could not map the card's BARs; AMD's
        # answer is the BIOS (ROCm/legacy-rocm-build issue 6281: "Above 4G Decoding +
        # Resizable BAR"; ROCm/rocm-install-on-linux issue 615: fixed in the BIOS)
        variants=(Variant(
            "probe_enomem", "Enable Above 4G Decoding and Resizable BAR (and turn CSM off) in "
            "the BIOS, then reboot: amdgpu could not map the card's memory windows (BARs).",
            ("sudo dmesg | grep -i -e BAR -e 'error -12'",
             "sudo lspci -vv -d 1002: | grep -i -e 'Region' -e 'BAR'"),
            "The probe failed with error -12 (ENOMEM): the space for the card's BARs could "
            "not be given, which the BIOS settings decide."),),
        yields_to=("amdgpu-firmware-missing", "amdgpu-psp-load-failed", "amdgpu-psp-ring-failed"),
        level="fail"),
    KnownMessage(
        "amdgpu-psp-ring-failed", "PSP could not create its ring", "kernel-log",
        (r"PSP create ring failed", r"psp ring create fail", r"Fail to stop psp ring"),
        "The GPU's security processor (PSP) did not set up its command ring, so no firmware "
        "loads and the GPU stays down. When the driver loads, that points at the hardware "
        "around the GPU: a defective Infinity Fabric bridge (ROCm issue 2747: with it "
        "unplugged all four MI210 came up), a card or slot fault. After a GPU reset ('PSP is "
        "resuming', 'GPU reset failed') the reset did not bring the GPU back.",
        "After a failed reset: reboot with a full power cycle. At driver load: power off, "
        "reseat the GPU and any bridge or link card, try without the bridge; if it stays, "
        "the card needs service.", "amdgpu-driver", ROCM_2747, commands=(DMESG_AMDGPU,),
        needs_root=True, context="psp_ring", level="fail"),
    KnownMessage(
        "kfd-atomics-mec-firmware-old", "KFD skipped a GPU: its MEC firmware is too old to run "
        "without PCIe atomics", "kernel-log",
        (r"skipped device \S+, PCI rejects atomics \d+<[1-9]\d*",),
        "The path from the CPU does not pass PCIe atomics, and the GPU's MEC firmware (the "
        "first number) is older than the version from which KFD takes this GPU without them "
        "(the second: 145 for Navi 1x, 92 for Navi 2x, 509 for RDNA3, 2090 for RDNA4), so KFD "
        "left it out. Newer firmware lets KFD add it in the same slot.",
        "Install a newer linux-firmware (with AMD's amdgpu-dkms driver, amdgpu-dkms-firmware) "
        "whose MEC firmware is at least the second number, rebuild the initramfs, which "
        "carries a copy (update-initramfs -u on Debian/Ubuntu, dracut -f on Fedora/RHEL), and "
        "reboot; the firmware the GPU loaded is in amdgpu_firmware_info (MEC).",
        "pcie-atomics", NAVI14_MEC, commands=(DMESG_KFD, MEC_FIRMWARE), needs_root=True,
        level="fail"),
    KnownMessage(
        "kfd-pci-rejects-atomics", "KFD skipped a GPU: PCI rejects atomics", "kernel-log",
        (r"skipped device \S+, PCI rejects atomics",),
        "The GPU needs PCIe atomic operations (ROCm uses them for its queues and signals) and "
        "the path from the CPU to the card does not pass them, so KFD left the GPU out: ROCm "
        "and PyTorch cannot use it. Typical for a slot wired to the chipset rather than the "
        "CPU, an old platform, or a switch or riser without AtomicOps routing. amdkfd needs "
        "atomics on gfx7/gfx8 (Polaris, Fiji, Tonga; not Hawaii), where no firmware removes "
        "the need ('PCI rejects atomics 730<0'), and on Navi, RDNA3 and RDNA4 unless their MEC "
        "firmware is new enough; not on Vega (gfx9).",
        "Put the card in a slot wired to the CPU (not the chipset), without a riser or PCIe "
        "switch in between, and update the motherboard BIOS. For a Navi 1x/2x, RDNA3 or RDNA4 "
        "card, a newer linux-firmware (MEC firmware 145 or newer on gfx101x, 92 on gfx103x, "
        "509 on gfx11, 2090 on gfx12) lets KFD add it without atomics.",
        "pcie-atomics", KFD_DEVICE, commands=(DMESG_KFD, LSPCI_ATOMICS), needs_root=True,
        level="fail", unless=(r"PCI rejects atomics \d+<[1-9]",)),
    KnownMessage(
        "kfd-not-supported", "KFD does not support this GPU", "kernel-log",
        (r"kfd not supported on this ASIC", r"GC IP \S+ .*not supported in kfd",
         r"DID \S+ is missing in supported_devices", r"kgd2kfd_probe failed"),
        "This kernel's amdkfd has no support for the GPU: it is too old for ROCm (GCN 1, "
        "Southern Islands) or newer than the kernel, so ROCm cannot use it.",
        "For a new GPU, use a newer kernel or AMD's amdgpu-dkms driver of a ROCm release that "
        "lists it; an old GPU is not supported by ROCm.",
        "pcie-atomics", KFD_DEVICE, commands=(DMESG_KFD,), needs_root=True, level="fail"),
    KnownMessage(
        "kfd-device-not-added", "KFD could not add a GPU", "kernel-log",
        (r"device \S+ NOT added due to errors",),
        "KFD failed to set up the GPU for compute (memory or firmware setup failed), so ROCm "
        "cannot use it; the lines before it say why.",
        "Read the KFD lines before it; update linux-firmware and the kernel or amdgpu-dkms.",
        "pcie-atomics", KFD_DEVICE, commands=(DMESG_KFD,), needs_root=True, level="fail"),
    KnownMessage(
        "amdgpu-gpu-page-fault", "GPU page fault (amdgpu)", "kernel-log",
        (r"\[(?:gfxhub|mmhub)\d*\] (?:\w+ )?page fault", r"VM_L2_PROTECTION_FAULT_STATUS"),
        "A GPU kernel used an address that is not mapped for its process (the next line names "
        "the process). Usually a bug in the program or a library, such as an out-of-range "
        "index; also firmware bugs: on gfx12 AMD named MES firmware 0x84 as having a known MES "
        "issue (ROCm issue 5814).",
        "Rerun the program with AMD_SERIALIZE_KERNEL=3 and HIP_LAUNCH_BLOCKING=1 to find the "
        "kernel that faults; `rocmdoctor check --only amdgpu-firmware` shows the MES firmware.",
        "amdgpu-firmware", ROCM_5814, commands=(DMESG_AMDGPU,), needs_root=True,
        # a program's own "Memory access fault by GPU node" is the same fault, seen by the
        # runtime: one answer where both are pasted
        yields_to=("memory-access-fault", "memory-access-fault-override"),
        # after a reset the driver has torn down the processes' mappings: a fault logged then
        # (often "for process pid 0") is the reset's, not a second cause
        follows=("amdgpu-ring-timeout", "amdgpu-mes-hang")),
    KnownMessage(
        "amdgpu-ras-uncorrectable", "GPU reported an uncorrectable hardware error", "kernel-log",
        (r"uncorrectable hardware error\(\S+\) detected", r"\d+ (?:new )?uncorrectable hardware "
         r"errors detected in", r"uncorrectable hardware errors detected in total"),
        "The GPU's error reporting (RAS) found an error it could not correct, such as an ECC "
        "error in its memory or a fatal hub event, and the driver reset the GPU.",
        "Read the error counts (`amd-smi metric --ecc --ecc-blocks`) and retired pages "
        "(`amd-smi bad-pages`); errors that return mean the GPU needs service.",
        "gpu-health", AMDGPU_RAS, commands=(DMESG_AMDGPU,), needs_root=True, level="fail"),
    KnownMessage(
        "amdgpu-unknown-symbol", "amdgpu module will not load: unknown symbol", "kernel-log",
        (r"\bamd\w*: Unknown symbol \S+ \(err -?\d+\)",),
        "The kernel refused the amdgpu module (or one of AMD's helper modules) because a "
        "function it needs is not in this kernel: it was built for another kernel, or a module "
        "it needs is missing (on Ubuntu cloud images, amd_iommu_v2 from "
        "linux-modules-extra).",
        "Install the running kernel's extra modules (Ubuntu: linux-modules-extra-$(uname -r)); "
        "with amdgpu-dkms, use a kernel the driver release supports.",
        "amdgpu-driver", AWS_MODULES_EXTRA, commands=(DMESG_AMDGPU,), needs_root=True,
        level="fail"),
    KnownMessage(
        "amdgpu-unknown-parameter", "amdgpu ignored an option it does not have", "kernel-log",
        (r"\bamdgpu: unknown parameter '[^']+' ignored",),
        "An amdgpu option is set (in /etc/modprobe.d, /usr/lib/modprobe.d or on the kernel "
        "command line) that this amdgpu does not have: the setting does nothing (tunaOS issue "
        "103: si_support and cik_support on a kernel built without them).",
        "Remove the option where it is set; `grep -rn` for its name in /etc/modprobe.d, "
        "/usr/lib/modprobe.d and /proc/cmdline.",
        "amdgpu-driver", TUNAOS_103),
    KnownMessage(
        "amdgpu-module-unsigned", "AMD's DKMS module is unsigned (kernel tainted)",
        "kernel-log", (r"\bamd\w*: module verification failed: signature and/or required key",),
        "AMD's DKMS module has no signature the kernel trusts. Without Secure Boot the kernel "
        "loads it anyway and only marks itself tainted: harmless.",
        "Nothing to do unless Secure Boot is turned on; then its key must be enrolled.",
        "amdgpu-driver", AMDGPU_68, level="info"),
    KnownMessage(
        "secure-boot-module-refused", "Secure Boot refused an unsigned module", "kernel-log",
        (r"Lockdown: .*unsigned module loading is restricted",
         r"Loading of unsigned module is (?:restricted|rejected)",
         r"Loading of module with unavailable key is rejected",
         r"Key was rejected by service"),
        "Secure Boot is on, so the kernel (in lockdown) loads only modules signed with a key it "
        "trusts, and an unsigned or self-signed module, such as one DKMS built (amdgpu-dkms, "
        "nvidia), was refused.",
        _MOK_FIX, "amdgpu-driver", MODULE_SIGNING, commands=(SB_STATE,)),
    KnownMessage(
        "iommu-page-fault", "IOMMU page fault from a device", "kernel-log",
        (r"AMD-Vi: Event logged \[IO_PAGE_FAULT", r"DMAR: \[DMA (?:Read|Write)[^\]]*\] Request "
         r"device"),
        "A device (the PCI address in the line) made a memory access the IOMMU had not mapped. "
        "From a GPU it follows a GPU hang or a driver bug, or an IOMMU setup the driver does "
        "not expect.",
        "If the address is a GPU's: update the kernel and driver. AMD's IOMMU advisory for "
        "Instinct GPUs recommends the IOMMU in passthrough mode: add iommu=pt to the kernel "
        "command line.",
        "kernel-log", IOMMU_ADVISORY, commands=(DMESG_GPU,), needs_root=True),
    KnownMessage(
        "pcie-aer-errors", "PCIe errors on a link (AER)", "kernel-log",
        (r"AER: (?:Multiple )?(?:Corrected|Correctable|Uncorrected|Uncorrectable)"
         r"(?: \(\w+\))? error",
         r"PCIe Bus Error: severity=", r"Root Port link has been reset",
         r"\baer_layer=", r"\[Hardware Error\]:\s+section_type: PCIe error",
         # the AER status registers as sysfs (aer_dev_fatal) and firmware error records name them
         r"\baer_uncor_status\b"),
        "The PCIe link of the port or device in the line reported errors (the kernel's "
        "Advanced Error Reporting). On a GPU's link they come from a riser, a cable, a loose "
        "card or a link run faster than it holds (ROCm issue 2927: an MI100 on an AM4 board).",
        "Reseat the card, remove risers or extension cables; if errors continue, set that slot "
        "to a lower PCIe generation in the BIOS.",
        "pcie-link", AER_HOWTO, commands=(DMESG_GPU,), needs_root=True, context="pcie_link"),
)

NVIDIA_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "nvidia-api-mismatch", "NVIDIA driver: user space and kernel module differ",
        "kernel-log", (r"NVRM: API mismatch",),
        "The NVIDIA user-space driver (libraries, nvidia-smi) and the loaded kernel module "
        "have different versions, usually after a driver update without a reboot, or a "
        "container whose driver libraries do not match the host.",
        "Reboot so the updated kernel module loads; if it persists, reinstall the driver so "
        "that every part has the same version (`cat /proc/driver/nvidia/version` shows the "
        "kernel module's).", "nvidia-driver", NVRM_OSAPI, level="fail"),
    KnownMessage(
        "nvidia-gsp-firmware-missing", "NVIDIA GSP firmware file missing", "kernel-log",
        (r"Direct firmware load for nvidia/\S+ failed", r"RmFetchGspRmImages: No firmware image"),
        "The NVIDIA kernel module could not find the GSP firmware of its own version, so it "
        "could not start the GPU: the firmware package belongs to another driver version.",
        "Reinstall the NVIDIA driver so that the kernel module and its firmware "
        "(/lib/firmware/nvidia/<version>/) are the same version, then reboot.",
        "nvidia-driver", FIRMWARE_LOADER, level="fail"),
    KnownMessage(
        "nvidia-init-failed", "NVIDIA driver could not start a GPU", "kernel-log",
        (r"RmInitAdapter failed", r"rm_init_adapter failed", r"NVIDIA probe routine failed"),
        "The NVIDIA kernel module failed to start the GPU; the lines before it say why "
        "(missing firmware, a GPU that fell off the bus, a GPU this driver does not support, "
        "or a BIOS that maps too little of its memory: an RTX 5090 started once Above 4G "
        "Decoding and Resizable BAR were on, open-gpu-kernel-modules issue 862).",
        "Read the NVRM lines before it; reinstall a driver that supports the GPU and reboot; "
        "on a new large GPU, turn on Above 4G Decoding and Resizable BAR in the BIOS.",
        "nvidia-driver", NVRM_OSAPI,
        yields_to=("nvidia-gsp-firmware-missing", "nvidia-xid-79"), level="fail"),
)


def _xid_message(x: nvidia_xid.Xid) -> KnownMessage:
    return KnownMessage(
        f"nvidia-xid-{x.code}", f"NVIDIA Xid {x.code} ({x.mnemonic})", "kernel-log",
        (rf"NVRM: Xid \([^)]*\): {x.code}\b", *x.extra_patterns),
        f"NVIDIA Xid {x.code}: {x.what}.", x.fix, x.check, x.source, level=x.level)


KERNEL_MESSAGES: tuple[KnownMessage, ...] = (
    *AMD_MESSAGES, *NVIDIA_MESSAGES, *(_xid_message(x) for x in nvidia_xid.XIDS))
