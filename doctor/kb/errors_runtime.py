"""HIP and CUDA runtime errors as PyTorch surfaces them: no code for the GPU, out of memory,
faulting kernels, device-side asserts. The `threads` counts are the distinct public tracker
threads showing the message in the error catalogue the fixtures under
tests/fixtures/real/errors/ were collected with (0: not counted there)."""

from __future__ import annotations

from rocmdoctor.kb.allocator import CUDA_NOTES
from rocmdoctor.kb.errors_base import (
    ARCH_LIST,
    CUDA_RUNTIME_TYPES,
    DOCKER_ROCM,
    GFX_OF_GPU,
    HIP_ERRORS,
    HIP_TEXT,
    NVIDIA_XID,
    TORCH_CUDA_INIT,
    WINDOWS_GPU_CODE,
)
from rocmdoctor.kb.messages import DMESG_AMDGPU, KnownMessage

ROCM_3207 = "https://github.com/ROCm/ROCm/issues/3207"
ROCM_5990 = "https://github.com/ROCm/ROCm/issues/5990"
ROCM_5238 = "https://github.com/ROCm/ROCm/issues/5238"
ROCM_2153 = "https://github.com/ROCm/ROCm/issues/2153"
CLR_CODE_OBJECT = "https://github.com/ROCm/clr/blob/develop/hipamd/src/hip_code_object.cpp"
TORCH_150733 = "https://github.com/pytorch/pytorch/issues/150733"
CUPY_8045 = "https://github.com/cupy/cupy/issues/8045"
INDEXING_CU = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/Indexing.cu"
ROCM_VLLM_959 = "https://github.com/ROCm/vllm/pull/959"
KRITA_930 = "https://github.com/Acly/krita-ai-diffusion/issues/930"
CLR_MODULE = "https://github.com/ROCm/clr/blob/develop/hipamd/src/hip_module.cpp"

_GPU_CODE = ("Install a torch build whose compiled targets include your GPU's gfx target; for "
             "a consumer GPU that no build includes, HSA_OVERRIDE_GFX_VERSION can map it onto "
             "a compiled target of the same family.")
_GPU_CODE_CONTAINER = ("Use an image built for your GPU's gfx target (the tag or its docs name "
                       "the targets), or pass the override when the container starts: "
                       "-e HSA_OVERRIDE_GFX_VERSION=<x.y.z> (in compose list syntax without "
                       "quotes around the value).")
_SERIALIZE = "AMD_SERIALIZE_KERNEL=3 python <your script>"
_LAUNCH_BLOCKING = "CUDA_LAUNCH_BLOCKING=1 python <your script>"

RUNTIME_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        # hip_module.cpp: a launch whose block is larger than the kernel's workgroup size
        # (its launch bounds) fails with hipErrorLaunchFailure after this log line.
        "hip-launch-bounds", "HIP: Launch params are larger than launch bounds", "error",
        (r"Launch params \(\d+, \d+, \d+\) are larger than launch bounds \(\d+\)",),
        "HIP refused a kernel launch whose block has more threads than the kernel was compiled "
        "for (its __launch_bounds__, or the compiler's maximum threads per block): code written "
        "for a larger block, or a build that does not match this GPU (a torch for Navi 21 "
        "built without AMD's changes for it failed so on gfx1030: python-pytorch-rocm issue "
        "41, fixed by the next build).",
        "For a kernel of your own: give it __launch_bounds__ of at least the block size it is "
        "launched with, or build with --gpu-max-threads-per-block; for one inside torch or "
        "another library: install that library's build for this GPU and ROCm release.",
        "torch-install", CLR_MODULE,
        commands=('python -c "import torch; print(torch.__version__, torch.version.hip)"',),
        threads=4),
    KnownMessage(
        "invalid-device-function", "HIP error: invalid device function", "error",
        (r"invalid device function", r"hipErrorInvalidDeviceFunction"),
        "A GPU kernel was launched that has no code for the GPU's gfx target: torch (or an "
        "extension) was not compiled for it, or HSA_OVERRIDE_GFX_VERSION makes the runtime ask "
        "for a target the build lacks (in ROCm issue 3207, HSA_OVERRIDE_GFX_VERSION=11.0.2 on a "
        "gfx1103 gave this error: the wheel has no gfx1102 code).",
        _GPU_CODE, "torch-arch-support", ROCM_3207,
        commands=(ARCH_LIST, GFX_OF_GPU), context="gpu_code",
        container_fix=_GPU_CODE_CONTAINER, container_commands=(GFX_OF_GPU, DOCKER_ROCM),
        variants=(WINDOWS_GPU_CODE,), threads=18),
    KnownMessage(
        "no-binary-for-gpu", "hipErrorNoBinaryForGpu", "error",
        (r"hipErrorNoBinaryForGpu", r"Unable to find code object for all current devices",
         r"Coudn't find binary for current devices", r"HIP error: no kernel image is available",
         r"No compatible code objects found for"),
        "The HIP runtime found no code object for the GPU's gfx target in the program or "
        "library it loaded; it lists the devices it looked for as [Not Found].",
        _GPU_CODE, "torch-arch-support", CLR_CODE_OBJECT,
        commands=(ARCH_LIST, GFX_OF_GPU), context="gpu_code",
        container_fix=_GPU_CODE_CONTAINER, container_commands=(GFX_OF_GPU, DOCKER_ROCM),
        variants=(WINDOWS_GPU_CODE,), yields_to=("rocm-on-nvidia",), threads=19),
    KnownMessage(
        "hip-shared-object-init-failed", "HIP error: shared object initialization failed",
        "error",
        (r"shared object initialization failed", r"hipErrorSharedObjectInitFailed",
         r"(?:HIP|CUDA) error: device kernel image is invalid", r"hipErrorInvalidImage"),
        "HIP could not load a code object into the GPU: the library carries no code (or code "
        "the loader rejects) for this gfx target (pytorch issue 111601 reports it on an RX "
        "7700 XT, gfx1101, with the ROCm 5.7 wheels).",
        _GPU_CODE, "torch-arch-support", HIP_ERRORS,
        commands=(ARCH_LIST, GFX_OF_GPU), context="gpu_code",
        container_fix=_GPU_CODE_CONTAINER, container_commands=(GFX_OF_GPU, DOCKER_ROCM),
        variants=(WINDOWS_GPU_CODE,), yields_to=("cuda-invalid-kernel-image",),
        threads=1),
    KnownMessage(
        "hip-out-of-memory", "HIP out of memory", "error",
        (r"HIP out of memory", r"hipErrorOutOfMemory", r"HIP error: ?out of memory"),
        "An allocation needed more GPU memory than was free. Much memory 'reserved by PyTorch "
        "but unallocated' means the cache is fragmented and an allocator setting helps; a "
        "single request larger than the GPU's total capacity only a smaller request fixes. On "
        "APUs the capacity HIP reports can be far below the VRAM carve-out in the kernel log "
        "(TheRock issue 1054).",
        "Lower the batch size or sequence length, use mixed precision or activation "
        "checkpointing. Against fragmentation: expandable_segments:True where torch supports "
        "it on ROCm (torch 2.12 and newer built for ROCm 7.0 or newer), otherwise "
        "garbage_collection_threshold:0.8,max_split_size_mb:512.",
        "allocator-config", CUDA_NOTES, context="out_of_memory", threads=8),
    KnownMessage(
        "cuda-out-of-memory", "CUDA out of memory", "error",
        (r"CUDA out of memory", r"cudaErrorMemoryAllocation", r"CUDA error: ?out of memory"),
        "An allocation needed more GPU memory than was free. The numbers in the message say "
        "which case it is: memory 'allocated by PyTorch' close to the capacity means the "
        "workload does not fit; much 'reserved by PyTorch but unallocated' means the cache is "
        "fragmented; 'Process N has ... in use' names another process holding memory. "
        "'CUDA error: out of memory' (no numbers) is the CUDA runtime's own allocation "
        "failing outside torch's allocator (a library workspace, a context): the GPU is full "
        "just the same.",
        "Lower the batch size or resolution, use mixed precision, activation checkpointing or "
        "CPU offload; stop other processes using the GPU. Against fragmentation set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (torch 2.1 and newer).",
        "allocator-config", CUDA_NOTES,
        commands=("nvidia-smi --query-compute-apps=pid,used_memory --format=csv",),
        context="out_of_memory", unless_text=(HIP_TEXT,), threads=14),
    KnownMessage(
        "memory-access-fault-override", "Memory access fault with HSA_OVERRIDE_GFX_VERSION set",
        "error",
        (r"Memory access fault by GPU node-\d+",),
        "HSA_OVERRIDE_GFX_VERSION is set, so the runtime loads code for another gfx target "
        "than the GPU's own; on a GPU that is supported without it (ROCm issue 5238: a "
        "leftover override made an MI210 run gfx1030 code, 'on address (nil). Reason: "
        "unknown') the kernels fault. AMD calls the variable a debugging aid, not a setting.",
        "Unset the override (also in shell profiles, systemd units and container "
        "definitions) and rerun; keep it only for a GPU that no build supports.",
        "gfx-override", ROCM_5238,
        commands=("env | grep HSA_OVERRIDE", "unset HSA_OVERRIDE_GFX_VERSION"),
        requires=("override_set",), context="machine_state", threads=4),
    KnownMessage(
        "memory-access-fault", "Memory access fault by GPU node", "error",
        (r"Memory access fault by GPU node-\d+", r"HSA_STATUS_ERROR_MEMORY_FAULT"),
        "A GPU kernel touched an address that is not mapped and the HSA runtime aborted the "
        "process. Causes seen: code built for another target run through "
        "HSA_OVERRIDE_GFX_VERSION, driver or kernel regressions (ROCm issue 5990: crashes on "
        "Linux 6.18.9, not on 6.17.9), and out-of-bounds bugs in a kernel.",
        "Unset HSA_OVERRIDE_GFX_VERSION if it is set and use a build for your GPU; try a "
        "kernel the installed ROCm supports; to find the failing kernel, rerun once with "
        "AMD_SERIALIZE_KERNEL=3 (debugging only, slow), and read the kernel log.",
        "gfx-override", ROCM_5990, commands=(DMESG_AMDGPU,), needs_root=True,
        container_fix="The kernel and driver are the host's: read the kernel log on the "
                      "host; inside the container unset HSA_OVERRIDE_GFX_VERSION if it is "
                      "set, or try a newer image of the same stack (rocm/pytorch issue 499: "
                      "a newer image fixed a fault on gfx803).",
        container_commands=("env | grep HSA_OVERRIDE",),
        context="machine_state", yields_to=("memory-access-fault-override",), threads=14),
    KnownMessage(
        "hsa-aperture-violation", "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", "error",
        (r"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",),
        "A GPU kernel accessed memory beyond the largest legal address and the queue was "
        "aborted: a kernel or driver bug, or a faulty card (ROCm issue 2153: the maintainer "
        "pointed at a driver fix in newer ROCm; the reporter's card turned out faulty).",
        "Update ROCm and the driver; if it persists on one card only while the same program "
        "runs on others, suspect the card. Read the kernel log around the abort.",
        "kernel-version", ROCM_2153, commands=(DMESG_AMDGPU,), needs_root=True, threads=4),
    KnownMessage(
        "hip-illegal-address", "HIP error: an illegal memory access was encountered", "error",
        (r"hipErrorIllegalAddress", r"HIP error: an illegal memory access",
         r"HIP error: misaligned address", r"HIP error: an illegal instruction"),
        "A GPU kernel read or wrote out of bounds. HIP reports it at a later API call, so the "
        "Python frame in the traceback is usually not the culprit; it is a bug in a kernel "
        "(ROCm/vllm pull 959 reverted a kernel tuning that read out of bounds on gfx11) or in "
        "how a library combination drives it, rarely the system.",
        "Rerun once with AMD_SERIALIZE_KERNEL=3 to make the error point at the failing "
        "kernel, then update or downgrade the library that owns it and report it with that "
        "traceback. AMD_SERIALIZE_KERNEL slows every launch: debugging only.",
        "debug-env", ROCM_VLLM_959, commands=(_SERIALIZE,), threads=14),
    KnownMessage(
        "cuda-illegal-address", "CUDA error: an illegal memory access was encountered", "error",
        (r"CUDA error: an illegal memory access", r"cudaErrorIllegalAddress",
         r"CUDA error: misaligned address", r"CUDA error: an illegal instruction"),
        "A GPU kernel read or wrote out of bounds. CUDA reports it at a later API call, so the "
        "Python frame is usually not where it happened; it is a bug in a kernel or in how a "
        "program drives it (a static-graph DDP setting in the ARoFace thread), rarely the "
        "hardware (then the kernel log shows an Xid).",
        "Rerun once with CUDA_LAUNCH_BLOCKING=1 to see the failing operation, then update or "
        "pin the library that owns it; check the kernel log for an NVRM Xid.",
        "debug-env", CUDA_RUNTIME_TYPES, commands=(_LAUNCH_BLOCKING, NVIDIA_XID),
        unless_text=(HIP_TEXT,), threads=14),
    KnownMessage(
        "hip-launch-failure", "HIP error: unspecified launch failure", "error",
        (r"HIP error: unspecified launch failure", r"hipErrorLaunchFailure"),
        "A GPU kernel died while running, without a more precise reason: a kernel bug, a GPU "
        "hang the driver reset, or unstable hardware.",
        "Rerun once with AMD_SERIALIZE_KERNEL=3 to find the kernel; read the kernel log for a "
        "ring timeout or GPU reset at that time.",
        "kernel-version", HIP_ERRORS, commands=(_SERIALIZE, DMESG_AMDGPU), needs_root=True),
    KnownMessage(
        "cuda-launch-failure", "CUDA error: unspecified launch failure", "error",
        (r"CUDA error: unspecified launch failure",
         r"cuda runtime error \(4\) : unspecified launch failure", r"cudaErrorLaunchFailure"),
        "A GPU kernel died while running, without a more precise reason. Maintainers read it "
        "as 'something went wrong' (krita-ai-diffusion issue 930: usually a GPU or driver too "
        "old); other threads traced it to a faulty card (MinerU issue 426) or a driver left "
        "in a bad state by suspend and resume (pytorch issue 2567).",
        "Read the kernel log for an NVRM Xid at that time; restart the process (after a "
        "suspend, reload the driver or reboot); update the driver; if it follows one card, "
        "test or replace that card.",
        "nvidia-driver", KRITA_930, commands=(NVIDIA_XID, "nvidia-smi -q -d ECC,TEMPERATURE"),
        needs_root=True, unless_text=(HIP_TEXT,), threads=12),
    KnownMessage(
        "cuda-device-side-assert", "CUDA error: device-side assert triggered", "error",
        (r"Assertion `srcIndex < srcSelectDimSize` failed", r"device-side assert triggered",
         r"cudaErrorAssert"),
        "A kernel's own bounds check failed. The common one, `srcIndex < srcSelectDimSize` in "
        "index_select, is an embedding lookup past the table: a token id at or above the "
        "vocabulary size, or a sequence longer than the model's position table. The "
        "assertion lines printed before the RuntimeError are the cause.",
        "Truncate inputs to the model's maximum length and check that tokenizer and model "
        "agree on the vocabulary; running the same step on the CPU turns the assert into a "
        "Python IndexError that names the tensor.",
        "debug-env", INDEXING_CU, commands=(_LAUNCH_BLOCKING,),
        unless_text=(r"Indexing\.hip|Device-side assertion",), threads=5),
    KnownMessage(
        "hip-device-side-assert", "HIP device-side assertion", "error",
        (r"Device-side assertion `[^'`]+' failed", r"HIP error: device-side assert triggered"),
        "A kernel's own bounds check failed; on ROCm the assertion aborts the queue "
        "(HSA_STATUS_ERROR_EXCEPTION follows). `srcIndex < srcSelectDimSize` is an embedding "
        "lookup past the table: a token id beyond the vocabulary, a position beyond the "
        "maximum, or buffers left uninitialised after to_empty() (pytorch issue 112012).",
        "Check the indices fed to the embedding (vocabulary size, maximum length) and "
        "initialise parameters and buffers after to_empty(), e.g. by loading the state dict; "
        "the same step on the CPU raises a Python IndexError instead.",
        "debug-env", INDEXING_CU, commands=(_SERIALIZE,), threads=2),
    KnownMessage(
        "hsa-exception", "HSA_STATUS_ERROR_EXCEPTION", "error",
        (r"HSA_STATUS_ERROR_EXCEPTION",),
        "A GPU queue was aborted because a kernel raised a hardware exception (a trap, an "
        "assert, an illegal instruction).",
        "Look above this line for the kernel's own message (an assertion); rerun once with "
        "AMD_SERIALIZE_KERNEL=3 to find the kernel.", "debug-env", HIP_ERRORS,
        commands=(_SERIALIZE,), yields_to=("hip-device-side-assert",)),
    KnownMessage(
        "hsa-queue-out-of-resources", "HSA_STATUS_ERROR_OUT_OF_RESOURCES on a running queue",
        "error",
        (r"callbackQueue aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES",),
        "A running GPU queue was aborted because the runtime could not get a resource it "
        "needed: most often a kernel asking for more scratch (private) memory or registers "
        "than the device can give, at run time rather than at start-up.",
        "Rerun with AMD_LOG_LEVEL=3 to see the kernel launched last and report it to the "
        "library or program that owns it; smaller problem sizes avoid it meanwhile.",
        "debug-env", HIP_ERRORS, commands=("AMD_LOG_LEVEL=3 python <your script> 2>&1 | tail",),
        threads=1),
    KnownMessage(
        "hsa-invalid-isa", "HSA_STATUS_ERROR_INVALID_ISA", "error",
        (r"HSA_STATUS_ERROR_INVALID_ISA",),
        "The runtime was given code for an instruction set the GPU agent does not run. With "
        "two AMD GPUs (a Radeon card and the processor's integrated GPU) the work, or an "
        "HSA_OVERRIDE_GFX_VERSION meant for the card, lands on the agent it does not fit "
        "(ROCm issue 3054: an RX 7600 XT beside a gfx1103 iGPU).",
        "Hide the integrated GPU from ROCm (disable it in the BIOS, or list only the card in "
        "ROCR_VISIBLE_DEVICES) and set an override only for a GPU that needs one.",
        "gpu-agents", "https://github.com/ROCm/ROCm/issues/3054",
        commands=("rocminfo | grep -E '^ *Name: *gfx'", "export ROCR_VISIBLE_DEVICES=0"),
        threads=1),
    KnownMessage(
        "cuda-no-kernel-image", "CUDA error: no kernel image is available", "error",
        (r"no kernel image is available for execution on the device",
         r"cudaErrorNoKernelImageForDevice"),
        "The torch build (or an extension) has no code for this GPU's compute capability: a "
        "new GPU (sm_120, RTX 50 series, needs a CUDA 12.8 or newer build), an old one that "
        "current wheels dropped (Kepler sm_35/sm_37), or a one-click installer's bundled old "
        "torch. When torch itself lists the capability, the kernel missing is in an "
        "extension or custom node.",
        "Compare the GPU's capability with the build's list; install a torch built for it, "
        "rebuild your own extensions with the right TORCH_CUDA_ARCH_LIST.",
        "torch-arch-support", TORCH_150733,
        commands=(ARCH_LIST, "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
        container_fix="Use an image whose torch is built for this GPU (for RTX 50 series one "
                      "with CUDA 12.8 or newer).",
        unless_text=(HIP_TEXT,), yields_to=("cuda-capability-not-compatible", "cuda-gpu-too-old"),
        context="kernel_image",
        threads=30),
    KnownMessage(
        "cuda-capability-not-compatible", "CUDA capability sm_XX is not compatible", "error",
        (r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation",),
        "The installed torch has no code for this GPU's compute capability; torch warns at "
        "start-up and every kernel then fails with 'no kernel image is available'.",
        "Install a torch build whose list includes the capability (sm_120 needs CUDA 12.8 or "
        "newer wheels; Kepler sm_35/sm_37 need an old release).",
        "torch-arch-support", TORCH_CUDA_INIT, commands=(ARCH_LIST,),
        container_fix="Use an image whose torch is built for this capability (the "
                      "wyoming-xtts maintainer published a cu128 image for sm_120).",
        # torch prints this right after its too-old warning for the same GPU; that one says
        # more (the build's range).
        context="cuda_capability", yields_to=("cuda-gpu-too-old",), threads=30),
    KnownMessage(
        "cuda-invalid-kernel-image", "CUDA error: device kernel image is invalid", "error",
        (r"device kernel image is invalid", r"CUDA_ERROR_INVALID_IMAGE",
         r"CUDA_ERROR_INVALID_SOURCE", r"cudaErrorInvalidKernelImage"),
        "The GPU could not load a kernel binary: the library (or its generated PTX) is too "
        "old for this compute capability or newer than the driver can JIT-compile (cupy "
        "issue 8045: compute capability 8.9 needs CuPy 11 or newer).",
        "Upgrade the library that owns the kernel to a release that supports the GPU, and the "
        "driver; for torch, a build that lists the GPU's capability.",
        "torch-arch-support", CUPY_8045, commands=(ARCH_LIST, "nvidia-smi"),
        unless_text=(HIP_TEXT,), threads=12),
    KnownMessage(
        "invalid-device-ordinal", "invalid device ordinal", "error",
        (r"invalid device ordinal", r"hipErrorInvalidDevice\b", r"cudaErrorInvalidDevice\b",
         r"device >= 0 && device < num_gpus"),
        "The program asked for a GPU index that does not exist in this process: more ranks "
        "than visible GPUs, a hard-coded cuda:N, or a visibility mask (CUDA_VISIBLE_DEVICES, "
        "HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES) that leaves fewer GPUs; masks renumber "
        "the GPUs they keep from 0.",
        "Count the GPUs the process sees and use indices below that; set one mask, before "
        "torch is imported.", "visible-devices", CUDA_RUNTIME_TYPES,
        commands=('python -c "import torch; print(torch.cuda.device_count())"',
                  "env | grep VISIBLE_DEVICES"),
        context="masks", yields_to=("hip-getdevicecount",)),
    KnownMessage(
        "hip-invalid-argument", "HIP error: invalid argument", "error",
        (r"HIP error: invalid argument", r"hipErrorInvalidValue"),
        "A HIP call rejected its arguments. When the first call that names a device fails "
        "(vLLM's torch.cuda.mem_get_info in a Kubernetes pod, vllm issue 10855), the device "
        "the process asks for is not one the pod or the masks give it.",
        "Check which GPUs the process sees and that the device index it uses is among them "
        "(device plugins renumber the GPUs a pod gets from 0).",
        "visible-devices", HIP_ERRORS,
        commands=('python -c "import torch; print(torch.cuda.device_count())"',
                  "env | grep VISIBLE_DEVICES"), context="masks", threads=1),
    KnownMessage(
        "hostcall-pcie-atomics", "Pcie atomics not enabled, hostcall not supported", "error",
        (r"Pcie atomics not enabled, hostcall not supported",),
        "Device-side printf and other hostcall services need PCIe atomics between the GPU "
        "and the CPU; the GPU's PCIe path does not pass them, so the runtime disables "
        "hostcall and kernels that use it fail (HIP 5.7 added a printf that needs no "
        "hostcall).",
        "Put the GPU in a slot wired to the CPU's root port (not behind the chipset or a "
        "switch without atomics), or avoid printf in kernels.",
        "gpu-agents", "https://github.com/ROCm/clr/blob/develop/rocclr/device/rocm/rocvirtual.cpp",
        commands=("sudo lspci -vvv | grep -iE 'AtomicOps|^[0-9a-f]{2}:'",), needs_root=True,
        threads=2),
)
