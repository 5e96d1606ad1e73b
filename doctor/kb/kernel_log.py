"""Kernel-log lines (amdgpu, KFD, NVIDIA's NVRM) with their cause and fix: one catalogue for
the kernel-log check and `rocmdoctor explain` (a kernel line pasted to explain gets the same
answer the check gives). Each entry names its source."""

from __future__ import annotations

from rocmdoctor.kb.messages import DMESG_AMDGPU, KnownMessage

ROCM_3207 = "https://github.com/ROCm/ROCm/issues/3207"
ROCM_2330 = "https://github.com/ROCm/ROCm/issues/2330"

KERNEL_MESSAGES: tuple[KnownMessage, ...] = (
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
        yields_to=("amdgpu-mes-hang",), context="machine_state"),
)
