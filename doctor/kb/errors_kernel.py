"""Driver lines `explain` recognises beyond rocmdoctor.kb.kernel_log, the one catalogue of
kernel-log lines (shared with the kernel-log check): DKMS and modprobe output, lspci's atomics
capability, a KFD refusal worded the way older kernels word it, and any NVIDIA Xid the Xid
table lacks. An entry here whose key the kernel-log catalogue also has is dropped
(rocmdoctor.kb.errors), and a line that catalogue recognises is answered from it
(rocmdoctor.explain). `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import (
    DKMS_STATUS,
    NVIDIA_XID,
    ROCM_INSTALL_FAQ,
    ROCM_SYSTEM_REQUIREMENTS,
)
from rocmdoctor.kb.messages import DMESG_AMDGPU, KnownMessage

ROCM_912 = "https://github.com/ROCm/ROCm/issues/912"
ROCM_PCIE_ATOMICS = ("https://rocm.docs.amd.com/en/latest/understand/"
                     "More-about-how-ROCm-uses-PCIe-Atomics.html")
XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
NVIDIA_507 = "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507"
AMDGPU_192 = "https://github.com/ROCm/amdgpu/issues/192"
DMESG_RESTRICT = "https://docs.kernel.org/admin-guide/sysctl/kernel.html#dmesg-restrict"

_FIRMWARE = ("sudo apt-get install --reinstall linux-firmware  # Fedora: dnf reinstall "
             "linux-firmware", "sudo update-initramfs -u  # Fedora: dracut -f")

# NVIDIA's Xid catalog: what the common event numbers mean and what to do first, for the
# generic Xid entry's notes (79 is left out: the generic entry yields to its own).
XID_MEANINGS: dict[int, str] = {
    13: "Graphics Engine Exception: a kernel faulted (usually the program, e.g. an "
        "out-of-range access); restart the application",
    31: "GPU memory page fault: a kernel touched an unmapped address (usually the program)",
    43: "GPU stopped processing: an application hit a fault; restart it",
    45: "preemptive cleanup after an earlier error: read the Xid before it",
    48: "double-bit ECC error: reset the GPU; if it recurs, the board needs service",
    61: "internal micro-controller breakpoint or warning: reset the GPU, update the driver",
    62: "internal micro-controller halt: reset the GPU, update the driver",
    63: "ECC page retirement or row remapping recorded: reset the GPU to apply it",
    64: "ECC page retirement or row remapping failed: the board needs service",
    74: "NVLink error: check the NVLink bridges and the topology",
    92: "high single-bit ECC error rate: watch it; service if it keeps rising",
    94: "contained ECC error: restart the affected application",
    95: "uncontained ECC error: reset the GPU",
    119: "GSP RPC timeout: reset the GPU, update the driver",
    120: "GSP error: reset the GPU, update the driver",
}

KERNEL_FALLBACK: tuple[KnownMessage, ...] = (
    KnownMessage(
        "pcie-atomics-capability", "lspci: AtomicOpsCap without 32/64-bit completion",
        "kernel-log",
        (r"AtomicOpsCap:[^\n]*32bit- 64bit-",),
        "A bridge on the GPU's path routes atomics but cannot complete them "
        "(AtomicOpsCap 32bit- 64bit-); kernels that need PCIe atomics (hostcall, device "
        "printf) fail behind it.",
        "Use a slot on the CPU's root port for the GPU.", "gpu-agents", ROCM_PCIE_ATOMICS,
        commands=("sudo lspci -tv",), needs_root=True, threads=2),
    KnownMessage(
        "kfd-unsupported-gpu", "kfd: not supported in kfd", "kernel-log",
        (r"\bkfd\b[^\n]*\bnot supported in kfd",),
        "KFD, the kernel's compute interface, does not support this GPU (GCN 1.0 parts such "
        "as PITCAIRN): it works for graphics, but no compute device exists and every ROCm "
        "tool fails to open /dev/kfd. Group and permission advice does not apply.",
        "None in software: ROCm needs a GPU on its supported list.", "gpu-agents",
        ROCM_SYSTEM_REQUIREMENTS, commands=("sudo dmesg | grep -i kfd",), needs_root=True,
        threads=2),
    KnownMessage(
        "nvidia-xid", "NVRM: Xid error", "kernel-log",
        (r"NVRM: Xid \([^)]*\): \d+",),
        "The NVIDIA driver logged an Xid event: a numbered error from the GPU or the driver. "
        "NVIDIA's Xid catalog says, per number, whether it is the program, the driver or the "
        "hardware and what to do first.",
        "Act on the number (below); several different Xids together usually have one cause, "
        "the first one logged.", "nvidia-driver", XID_CATALOG, commands=(NVIDIA_XID,),
        needs_root=True, context="xid", yields_to=("nvidia-xid-79",), threads=6),
    KnownMessage(
        "dkms-build-failed", "amdgpu-dkms: Bad return status for module build", "error",
        (r"Error! Bad return status for module build on kernel: \S+",
         r"(?:amdgpu|rock)-dkms[^\n]*post-installation script[^\n]*(?:error exit status|"
         r"returned error code) 10",
         r"Errors were encountered while processing:\s*\n\s*(?:rock|amdgpu)-dkms",
         r"dma_resv->seq is missing"),
        "The AMD driver package could not compile its kernel module for this kernel: the "
        "kernel is newer (or patched differently, as CentOS Stream's) than that driver "
        "release supports (amdgpu issue 192: ROCm 6.4.1's amdgpu-dkms on the HWE 6.14 "
        "kernel). The rest of the install then fails with it.",
        "Boot a kernel that release supports, install a newer amdgpu-dkms, or install ROCm "
        "without the DKMS driver and use the kernel's own amdgpu.", "amdgpu-driver",
        AMDGPU_192,
        commands=(DKMS_STATUS, "uname -r", "sudo amdgpu-install --usecase=rocm --no-dkms"),
        needs_root=True, unless_text=(r"/dkms/nvidia/|dkms install nvidia",),
        context="dkms", threads=11),
    KnownMessage(
        "nvidia-dkms-build-failed", "nvidia DKMS: Bad return status for module build", "error",
        (r"Error! Bad return status for module build on kernel: \S+",),
        "The NVIDIA driver's kernel module did not compile for this kernel: the driver branch "
        "is older than the kernel (legacy branches such as 390 stop building on new "
        "kernels).",
        "Use a driver branch that supports this kernel, or boot an older kernel it builds "
        "for; make.log names the failing symbol.", "nvidia-driver",
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/526",
        commands=(DKMS_STATUS, "uname -r"), requires=("nvidia_dkms",), threads=2),
    KnownMessage(
        "module-not-found", "modprobe: FATAL: Module amdgpu not found", "error",
        (r"modprobe: FATAL: Module (?:amdgpu|nvidia) not found in directory /lib/modules/\S+",),
        "There is no module for the running kernel: the DKMS build for it failed or never "
        "ran (a new kernel booted after the driver was installed).",
        "Build it for this kernel, or boot the kernel the driver was built for.",
        "amdgpu-driver", ROCM_INSTALL_FAQ,
        commands=(DKMS_STATUS, "uname -r", "sudo dkms autoinstall"), needs_root=True),
    KnownMessage(
        "dmesg-restricted", "dmesg: read kernel buffer failed: Operation not permitted", "error",
        (r"dmesg: read kernel buffer failed: Operation not permitted",),
        "The kernel log is readable by root only (kernel.dmesg_restrict=1, the default on "
        "many distributions); nothing is wrong with the GPU.",
        "Read it with sudo, or from the journal.", None, DMESG_RESTRICT,
        commands=(DMESG_AMDGPU, "journalctl -k -b | grep -iE 'amdgpu|kfd'"), needs_root=True),
)
