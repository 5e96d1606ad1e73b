"""NVIDIA Xid codes as the kernel logs them (`NVRM: Xid (PCI:0000:01:00): 79, ...`), with what
each means and what to do, as data.

The numbers and mnemonics are the driver's own (`nverror.h` of NVIDIA's open kernel modules,
tag 595.45.04, line of each define beside it); what they mean and the resolution follow NVIDIA's
Xid catalogue and its memory-error documents. `rocmdoctor.kb.kernel_log` turns each row into a
known kernel-log message, so the kernel-log check and `rocmdoctor explain` give the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass

XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
NVERROR_H = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/"
             "src/common/sdk/nvidia/inc/nverror.h")
# "XID 48: A DBE has occurred. XID 63: A page has successfully been retired. XID 64: A page has
# failed retirement due to an error."
PAGE_RETIREMENT = "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html"
# Row remapping (A100 and newer) and the RMA policy: a remapping failure is an RMA criterion.
MEMORY_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
# kern_gpu_error_cont_ga100.c:334-340: "94, pid=7062, Contained: CE User Channel (0x9). RST: No"
# and "95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes".
CONTAINMENT = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/src/nvidia/src/"
               "kernel/gpu/arch/ampere/kern_gpu_error_cont_ga100.c")
# osinit.c:368 logs Xid 79 "GPU has fallen off the bus."; osapi.c:3659-3661 prints the probe-time
# form "...installed in this system has fallen off the bus and is not responding to commands."
FALLEN_OFF = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/src/nvidia/arch/"
              "nvalloc/unix/src/osinit.c")
# kernel_gsp.c:2386 "Timeout after %llus of waiting for RPC response from GPU%d GSP!", logged
# as GSP_RPC_TIMEOUT (:2455).
KERNEL_GSP = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/src/nvidia/src/"
              "kernel/gpu/gsp/kernel_gsp.c")

RESET = "sudo nvidia-smi -r"  # resets every GPU that no process is using (needs root)

# NVIDIA's catalog gives these Xids several causes (the program, the driver, the GPU): the
# program is the likeliest, one GPU of several hitting it with the same program is the GPU's
# (pytorch issue 51382: a faulty card's Xid 31 and 43, gone with it masked off).
APP_FIX = ("Most often the program itself: a kernel with an out-of-bounds access or a bad "
           "argument. Rerun it with CUDA_LAUNCH_BLOCKING=1 (or under compute-sanitizer) to find "
           "the kernel; if unrelated programs hit it too, update the driver and reset the GPU; "
           "if only one GPU of several does, mask it with CUDA_VISIBLE_DEVICES and have it "
           "tested.")
_RESET = ("Stop the programs on that GPU and reset it (nvidia-smi -r, or reboot); if it comes "
          "back, the GPU needs service.")
_NVLINK = ("Reset the GPUs on that link (or reboot); `nvidia-smi nvlink -e` shows the link error "
           "counters; errors that return point at the NVLink bridge or baseboard.")


@dataclass(frozen=True)
class Xid:
    code: int
    mnemonic: str  # as nverror.h names it
    what: str  # one line: what the GPU or driver reports
    fix: str
    level: str  # fail, warn
    source: str
    extra_patterns: tuple[str, ...] = ()  # the same event logged without an Xid line
    check: str = "kernel-log"


XIDS: tuple[Xid, ...] = (
    Xid(13, "ROBUST_CHANNEL_GR_EXCEPTION",  # nverror.h l.37
        "graphics engine exception: a GPU kernel hit an illegal instruction, address or "
        "parameter (the line names the SM and the error)", APP_FIX, "warn", XID_CATALOG),
    Xid(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",  # l.49
        "GPU memory page fault: an engine used an address not mapped for the process (the line "
        "names the process, the engine and the address)", APP_FIX, "warn", XID_CATALOG),
    Xid(32, "ROBUST_CHANNEL_PBDMA_ERROR",  # l.50
        "invalid or corrupted push-buffer stream between the driver and the GPU",
        "Update the driver; if it repeats with different programs, test the system memory and "
        "the PCIe link (reseat the card, no risers).", "warn", XID_CATALOG),
    Xid(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",  # l.59
        "the GPU stopped processing a channel and the driver reset that program's context",
        APP_FIX, "warn", XID_CATALOG),
    Xid(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",  # l.61
        "the driver removed a program's channel after an earlier error; when the line ends in "
        "'caused by previous Xid N', that Xid is the cause",
        "Look at the Xid it names (or the first Xid before it): this one follows from it.",
        "warn", XID_CATALOG),
    Xid(48, "ROBUST_CHANNEL_GPU_ECC_DBE",  # l.63
        "an uncorrectable double-bit ECC error in GPU memory",
        _RESET + " NVIDIA retires (or, on A100 and newer, remaps) the failing memory at the reset.",
        "fail", PAGE_RETIREMENT, check="gpu-health"),
    Xid(61, "PMU_BREAKPOINT",  # l.67
        "an internal micro-controller (PMU) hit a breakpoint: a firmware or driver fault",
        "Reset the GPU or reboot and update the driver; report it to NVIDIA if it returns.",
        "fail", XID_CATALOG),
    Xid(62, "PMU_HALT_ERROR",  # l.68
        "an internal micro-controller (PMU) halted: a firmware or driver fault",
        "Reset the GPU or reboot and update the driver; report it to NVIDIA if it returns.",
        "fail", XID_CATALOG),
    Xid(63, "INFOROM_PAGE_RETIREMENT_EVENT",  # l.69
        "a GPU memory page was retired (a row marked for remapping on A100 and newer) after ECC "
        "errors; it takes effect at the next GPU reset",
        "Reset the GPU (nvidia-smi -r) or reboot so that the retirement or remapping takes "
        "effect.", "warn", PAGE_RETIREMENT, check="gpu-health"),
    Xid(64, "INFOROM_PAGE_RETIREMENT_FAILURE",  # l.71
        "a GPU memory page could not be retired (row remapping failed)",
        "The memory cannot be repaired in place: NVIDIA counts a row-remapping failure as a "
        "reason to return the GPU (RMA).", "fail", MEMORY_ERRORS, check="gpu-health"),
    Xid(74, "NVLINK_ERROR", "an NVLink error between GPUs", _NVLINK, "warn",  # l.80
        XID_CATALOG),
    Xid(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",  # l.85
        "the GPU stopped answering on the PCIe bus (power, heat, the PCIe link or the card "
        "itself)",
        "Reboot. Then check the card's power cables and power supply, reseat the card in a slot "
        "without a riser, and watch its temperature; if it falls off again, the card or slot "
        "needs service. Capping the clocks (sudo nvidia-smi -lgc 300,1500) tests whether boost "
        "power spikes cause it (NVIDIA/open-gpu-kernel-modules issue 507).", "fail", FALLEN_OFF,
        extra_patterns=(r"has fallen off the bus", r"fallen off the bus and is not responding"),
        check="pcie-link"),
    Xid(92, "EXCESSIVE_SBE_INTERRUPTS",  # l.98
        "a high rate of corrected single-bit ECC errors",
        "Watch the counters (nvidia-smi -q -d ECC); reset the GPU when it is idle; service it "
        "if the rate stays high.", "warn", MEMORY_ERRORS, check="gpu-health"),
    Xid(94, "ROBUST_CHANNEL_CONTAINED_ERROR",  # l.100
        "a contained ECC error: only the program using the failing memory was stopped",
        "Restart that program; reset the GPU when it is idle so the memory is repaired.",
        "warn", CONTAINMENT, check="gpu-health"),
    Xid(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR",  # l.101
        "an uncontained ECC error: every program on the GPU is affected",
        "Stop every program on the GPU and reset it (nvidia-smi -r) or reboot.", "fail",
        CONTAINMENT, check="gpu-health"),
    Xid(109, "CTX SWITCH TIMEOUT",  # printed as errorString; no define at this tag
        "a context-switch timeout: a kernel did not yield the GPU in time", APP_FIX, "warn",
        XID_CATALOG),
    Xid(119, "GSP_RPC_TIMEOUT",  # l.114
        "the GPU System Processor (GSP) firmware stopped answering the driver",
        "Reset the GPU or reboot, and update the driver; report it to NVIDIA if it returns.",
        "fail", KERNEL_GSP,
        extra_patterns=(r"_kgspIsHeartbeatTimedOut", r"waiting for RPC response from GPU\d+ GSP",
                        r"\*+ GSP Timeout \*+")),
    Xid(120, "GSP_ERROR", "the GPU System Processor (GSP) firmware reported an error",  # l.115
        "Reset the GPU or reboot, and update the driver; report it to NVIDIA if it returns.",
        "fail", XID_CATALOG),
    Xid(121, "C2C_ERROR", "an error on the chip-to-chip (C2C) link to the CPU",  # l.116
        _RESET, "fail", XID_CATALOG),
    Xid(136, "ALI_TRAINING_FAIL", "an NVLink failed to train", _NVLINK, "warn",  # l.131
        XID_CATALOG),
    Xid(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE",  # l.135
        "an uncorrectable ECC error escaped containment", _RESET, "fail", MEMORY_ERRORS,
        check="gpu-health"),
    Xid(143, "GPU_INIT_ERROR", "the GPU failed to initialise",  # l.138
        "Reboot; if it fails again, update the driver, then reseat or service the card.",
        "fail", XID_CATALOG),
    Xid(144, "NVLINK_SAW_ERROR", "an NVLink error (SAW)", _NVLINK, "warn", XID_CATALOG),
    Xid(145, "NVLINK_RLW_ERROR", "an NVLink error (RLW)", _NVLINK, "warn", XID_CATALOG),
    Xid(149, "NVLINK_NETIR_ERROR", "an NVLink network error (NETIR)", _NVLINK, "warn",
        XID_CATALOG),
    Xid(154, "GPU_RECOVERY_ACTION_CHANGED",  # l.149
        "the driver says the GPU needs a recovery action (a GPU reset, a reboot or service)",
        "Do what `nvidia-smi -q` shows under the GPU's recovery action (reset the GPU or reboot).",
        "fail", XID_CATALOG),
)
