"""The knobs `rocmdoctor tune` may search, as data.

Each knob says what it changes, its choices (the first one is "as you have it now"), the
platforms and versions where it acts, which model operations it touches, and the document that
justifies it. `rocmdoctor.tuners.space` reads this table; it holds no rule of its own.

Kinds of knob:
  env        environment variables, read once when the runtime starts (each trial is a fresh
             process, so the parent's environment never changes)
  alloc      one option of the caching allocator's configuration variable
  setting    a run-time switch the benchmark worker sets (BenchSpec.settings)
  spec       a code-level field of the BenchSpec (precision, channels_last, compile, batch size)
  tunableop  PyTorch TunableOp: a tuning run writes a results file, the measured run replays it

Verify a knob by hand: run the same benchmark twice, e.g.
  rocmdoctor bench --model resnet50 ; MIOPEN_FIND_MODE=FAST rocmdoctor bench --model resnet50
"""

from __future__ import annotations

from typing import Any, Optional

from rocmdoctor.kb.debug_vars import DEBUG_VARS
from rocmdoctor.tuners.model import Knob

ENV = "env"
ALLOC = "alloc"
SETTING = "setting"
SPEC = "spec"
TUNABLEOP = "tunableop"
DEFAULT = "default"
SPACES = ("default", "env", "full")
PLATFORMS = ("rocm", "cuda", "cpu")

# Sources (original documents; /work/shared/research/knobs.md summarises them).
ALLOC_DOC = ("https://docs.pytorch.org/docs/stable/notes/cuda.html"
             "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf")
ALLOC_ROCM = "https://github.com/pytorch/pytorch/pull/177974"  # gated to ROCm >= 7.0: #179930
ALLOC_ROCM_ZEROS = "https://github.com/ROCm/legacy-rocm-build/issues/6603"
ALLOC_SPLIT_GROWTH = "https://github.com/pytorch/pytorch/issues/123548"
ALLOC_VAR_BUG = "https://github.com/pytorch/pytorch/issues/183387"
MIOPEN_FIND = ("https://rocm.docs.amd.com/projects/MIOpen/en/latest/how-to/"
               "find-and-immediate.html")
ROCM_WORKLOAD = ("https://rocm.docs.amd.com/en/latest/how-to/rocm-for-ai/"
                 "inference-optimization/workload.html")
MIOPEN_BENCHMARK = "https://github.com/pytorch/pytorch/pull/145294"
MIOPEN_IMMEDIATE = "https://github.com/pytorch/pytorch/pull/158951"
TUNABLEOP_DOC = "https://docs.pytorch.org/docs/stable/cuda.tunable.html"
ROCR_FLAGS = "https://github.com/ROCm/ROCR-Runtime/blob/master/src/core/util/flag.h"
MIOPEN_NHWC = "https://github.com/pytorch/pytorch/pull/170780"
AOTRITON = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/"
            "cuda/sdp_utils.cpp")
CUDNN_BENCHMARK = "https://docs.pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark"
CPU_THREADS = "https://docs.pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html"
CHANNELS_LAST = "https://docs.pytorch.org/tutorials/intermediate/memory_format_tutorial.html"
AMP = "https://docs.pytorch.org/docs/stable/amp.html"
TF32 = ("https://docs.pytorch.org/docs/stable/notes/cuda.html"
        "#tensorfloat-32-tf32-on-ampere-and-later-devices")
TF32_ROCM = "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py"
COMPILE = "https://docs.pytorch.org/docs/stable/generated/torch.compile.html"
OPTIM_IMPL = "https://docs.pytorch.org/docs/stable/optim.html#algorithms"
SDPA_KERNEL = ("https://docs.pytorch.org/docs/stable/generated/"
               "torch.nn.attention.sdpa_kernel.html")
ROCM_FA_LIBRARY = ("https://docs.pytorch.org/docs/stable/backends.html"
                   "#torch.backends.cuda.preferred_rocm_fa_library")
ROCR_ENV = "https://rocm.docs.amd.com/en/latest/reference/env-variables.html"
BATCH = ("https://nvlabs.github.io/eccv2020-mixed-precision-tutorial/files/"
         "szymon_migacz-pytorch-performance-tuning-guide.pdf")
LOADER_WORKERS = "https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading"
LOADER_PIN = "https://docs.pytorch.org/docs/stable/data.html#memory-pinning"
LOADER_API = "https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader"
TUNING_GUIDE = "https://docs.pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
GPU_JPEG = "https://docs.pytorch.org/vision/stable/generated/torchvision.io.decode_jpeg.html"
DDP_DOC = ("https://docs.pytorch.org/docs/stable/generated/"
           "torch.nn.parallel.DistributedDataParallel.html")
TORCH_NCCL_ENV = "https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
RCCL_ENV = "https://rocm.docs.amd.com/projects/rccl/en/latest/api-reference/env-variables.html"
HSA_OVERRIDE = ("https://github.com/ROCm/ROCT-Thunk-Interface/blob/master/src/topology.c")


def _env_choices(var: str, *values: str) -> tuple[tuple[str, Any], ...]:
    return ((DEFAULT, {}),) + tuple((v, {var: v}) for v in values)


KNOBS: tuple[Knob, ...] = (
    Knob("precision", "math precision", SPEC,
         (("fp32", "fp32"), ("tf32", "tf32"), ("bf16", "bf16"), ("fp16", "fp16"),
          # never searched (PRECISION_SUPPORT leaves it out), only a user's baseline
          ("fp32-strict", "fp32-strict")),
         PLATFORMS, ("default", "full"), AMP,
         "autocast to bf16/fp16 (fp16 with a GradScaler) or TF32 matmuls; changes numerics",
         changes_numerics=True, choices_from="precisions", kept_by="keep_precision"),
    Knob("channels_last", "channels_last memory format", SPEC, (("off", False), ("on", True)),
         PLATFORMS, ("default", "full"), CHANNELS_LAST,
         "model and inputs in NHWC; convolution kernels avoid transposes", uses=("conv",),
         fast="on"),
    Knob("compile", "torch.compile", SPEC, (("off", False), ("on", True)),
         PLATFORMS, ("default", "full"), COMPILE,
         "compiles the training step with TorchInductor; long first step", one_time_cost=True,
         fast="on"),
    # reduce-overhead replays the step as CUDA (HIP) graphs; the max-autotune modes benchmark
    # kernel choices at compile time (minutes), so they are searched only in --space full.
    Knob("compile_mode", "torch.compile mode", SETTING,
         ((DEFAULT, None), ("reduce-overhead", "reduce-overhead")), ("rocm", "cuda"),
         ("default",), COMPILE,
         "reduce-overhead: CUDA/HIP graphs replay each step, less launch overhead, more memory",
         requires=(("compile", "on"),), one_time_cost=True, fast="reduce-overhead"),
    Knob("compile_mode", "torch.compile mode", SETTING,
         ((DEFAULT, None), ("reduce-overhead", "reduce-overhead"),
          ("max-autotune", "max-autotune"),
          ("max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs")), ("rocm", "cuda"),
         ("full",), COMPILE,
         "reduce-overhead (graphs); max-autotune modes benchmark kernels while compiling "
         "(minutes of one-time cost)",
         requires=(("compile", "on"),), one_time_cost=True, fast="reduce-overhead"),
    Knob("optimizer_impl", "optimizer implementation (foreach / fused)", SETTING,
         ((DEFAULT, None), ("for-loop", "for-loop"), ("foreach", "foreach"),
          ("fused", "fused")), PLATFORMS, ("default", "full"), OPTIM_IMPL,
         "one kernel per parameter (for-loop), batched over parameters (foreach), or one fused "
         "kernel for the whole update (fused)", fast="fused"),
    Knob("sdpa_backend", "scaled_dot_product_attention kernel", SETTING,
         ((DEFAULT, None), ("flash", "flash"), ("efficient", "efficient"), ("math", "math")),
         ("rocm", "cuda"), ("default", "full"), SDPA_KERNEL,
         "restricts attention to one kernel (torch.nn.attention.sdpa_kernel); by default "
         "torch picks per call", uses=("sdpa",), min_versions=(("rocm", "2.3", None),
                                                               ("cuda", "2.3", None))),
    Knob("rocm_fa_library", "flash-attention library on ROCm", SETTING,
         ((DEFAULT, None), ("aotriton", "aotriton"), ("ck", "ck")), ("rocm",),
         ("default", "full"), ROCM_FA_LIBRARY,
         "which library serves flash attention on ROCm: AOTriton or Composable Kernel",
         uses=("sdpa",)),
    Knob("batch_size", "batch size", SPEC, (), PLATFORMS, ("default", "full"), BATCH,
         "samples per step, from yours up to the largest that fits; a new batch size needs a "
         "new learning rate (scale it with the batch)", fast="max", choices_from="batch_sizes",
         kept_by="keep_batch_size"),
    Knob("threads", "CPU threads (OMP_NUM_THREADS)", ENV, (), ("cpu",), SPACES, CPU_THREADS,
         "intra-op threads; PyTorch reads OMP_NUM_THREADS at start",
         choices_from="thread_counts"),
    Knob("cudnn_benchmark", "torch.backends.cudnn.benchmark", SETTING,
         ((DEFAULT, None), ("on", True), ("off", False)), ("rocm", "cuda"), ("default", "full"),
         CUDNN_BENCHMARK,
         "searches the fastest convolution algorithm per shape (on ROCm: an exhaustive MIOpen "
         "find that updates its databases)", uses=("conv",), one_time_cost=True),
    Knob("miopen_immediate", "torch.backends.miopen.immediate", SETTING,
         ((DEFAULT, None), ("on", True)), ("rocm",), ("default", "full"), MIOPEN_IMMEDIATE,
         "MIOpen immediate mode: no find step, a database or heuristic solution",
         min_versions=(("rocm", "2.9", None),), uses=("conv",)),
    Knob("miopen_find_mode", "MIOPEN_FIND_MODE", ENV,
         _env_choices("MIOPEN_FIND_MODE", "FAST", "NORMAL", "HYBRID"), ("rocm",), SPACES,
         MIOPEN_FIND, "how MIOpen picks convolution solutions: database, heuristic or benchmark",
         uses=("conv",), one_time_cost=True),
    Knob("miopen_find_enforce", "MIOPEN_FIND_ENFORCE", ENV,
         _env_choices("MIOPEN_FIND_ENFORCE", "SEARCH"), ("rocm",), ("env", "full"),
         ROCM_WORKLOAD, "auto-tunes convolution kernels missing from the performance database",
         uses=("conv",), one_time_cost=True),
    Knob("miopen_nhwc", "PYTORCH_MIOPEN_SUGGEST_NHWC (+ _BATCHNORM)", ENV,
         ((DEFAULT, {}), ("1", {"PYTORCH_MIOPEN_SUGGEST_NHWC": "1",
                               "PYTORCH_MIOPEN_SUGGEST_NHWC_BATCHNORM": "1"})),
         ("rocm",), SPACES, MIOPEN_NHWC,
         "lets channels_last convolutions and batch norm run as NHWC in MIOpen (opt-in)",
         uses=("conv",), requires=(("channels_last", "on"),)),
    Knob("tunableop", "PyTorch TunableOp (tune, then replay)", TUNABLEOP,
         (("off", False), ("on", True)), ("rocm",), SPACES, TUNABLEOP_DOC,
         "benchmarks every rocBLAS/hipBLASLt GEMM solution once, then replays the fastest",
         min_versions=(("rocm", "2.3", None),), uses=("gemm",), one_time_cost=True),
    Knob("tunableop", "PyTorch TunableOp (tune, then replay)", TUNABLEOP,
         (("off", False), ("on", True)), ("cuda",), ("full",), TUNABLEOP_DOC,
         "GEMM tuning; on CUDA few candidates exist, so it is searched only in --space full",
         min_versions=(("cuda", "2.3", None),), uses=("gemm",), one_time_cost=True),
    Knob("blas_prefer_hipblaslt", "TORCH_BLAS_PREFER_HIPBLASLT", ENV,
         _env_choices("TORCH_BLAS_PREFER_HIPBLASLT", "1", "0"), ("rocm",), SPACES,
         ROCM_WORKLOAD, "hipBLASLt or hipBLAS (rocBLAS) for matrix multiplies", uses=("gemm",)),
    Knob("hip_force_dev_kernarg", "HIP_FORCE_DEV_KERNARG", ENV,
         _env_choices("HIP_FORCE_DEV_KERNARG", "1"), ("rocm",), SPACES, ROCM_WORKLOAD,
         "kernel arguments in device memory: a few microseconds less per launch"),
    Knob("gpu_max_hw_queues", "GPU_MAX_HW_QUEUES", ENV,
         _env_choices("GPU_MAX_HW_QUEUES", "2"), ("rocm",), ("env", "full"), ROCM_WORKLOAD,
         "hardware queues the HIP runtime uses per device (default 4)"),
    Knob("hsa_no_scratch_reclaim", "HSA_NO_SCRATCH_RECLAIM", ENV,
         _env_choices("HSA_NO_SCRATCH_RECLAIM", "1"), ("rocm",), SPACES, ROCR_ENV,
         "1 keeps scratch memory assigned to its queue instead of reclaiming it between "
         "dispatches"),
    Knob("hsa_enable_sdma", "HSA_ENABLE_SDMA", ENV, _env_choices("HSA_ENABLE_SDMA", "0"),
         ("rocm",), ("env", "full"), ROCR_FLAGS,
         "0 copies with shader blit kernels instead of the SDMA engines"),
    Knob("aotriton_experimental", "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL", ENV,
         _env_choices("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL", "1"), ("rocm",), SPACES,
         AOTRITON, "flash and memory-efficient attention on GPUs AOTriton calls experimental",
         uses=("sdpa",)),
    Knob("alloc", "caching allocator: expandable_segments", ALLOC,
         ((DEFAULT, None), ("expandable_segments", "expandable_segments:True")),
         ("rocm", "cuda"), SPACES, ALLOC_DOC,
         "growable memory segments: less fragmentation, usually a memory knob more than a speed "
         "knob; on ROCm only torch >= 2.12 built for ROCm >= 7.0 honours it (" + ALLOC_ROCM + ")",
         min_versions=(("rocm", "2.12", "7.0"), ("cuda", "2.1", None))),
    # The input pipeline, searched only with --data ("data": the workload reads images).
    # PyTorch's tuning guide asks for workers and pinned memory first (TUNING_GUIDE).
    Knob("num_workers", "DataLoader worker processes", SETTING, (), PLATFORMS,
         ("default", "full"), LOADER_WORKERS,
         "processes that read, decode and transform images beside the training step (0: the "
         "training process does it between steps)", uses=("data",), fast="max",
         choices_from="worker_counts"),
    Knob("pin_memory", "DataLoader(pin_memory=)", SETTING, ((DEFAULT, None), ("on", True)),
         ("rocm", "cuda"), ("default", "full"), LOADER_PIN,
         "batches in page-locked host memory: copies to the GPU that do not wait",
         uses=("data",), fast="on"),
    Knob("persistent_workers", "DataLoader(persistent_workers=)", SETTING,
         ((DEFAULT, None), ("on", True)), PLATFORMS, ("default", "full"), LOADER_API,
         "keeps the worker processes from one epoch to the next instead of starting them anew "
         "(acts with workers only)", uses=("data",), fast="on"),
    Knob("prefetch_factor", "DataLoader(prefetch_factor=)", SETTING,
         ((DEFAULT, None), ("4", 4), ("8", 8)), PLATFORMS, ("default", "full"), LOADER_API,
         "batches each worker prepares ahead (default 2; acts with workers only)",
         uses=("data",)),
    # Not in the default space: on an H200 (torchvision 0.26) it ran at 2,258 images/s with
    # num_workers=0, under the 4,015 of 16 CPU workers, and with 8 workers the first batch
    # never came (docs/benchmarks.md, "Real data on an NVIDIA H200").
    Knob("gpu_decode", "JPEG decoding on the GPU (torchvision.io.decode_jpeg)", SETTING,
         ((DEFAULT, None), ("on", True)), ("cuda",), ("full",), GPU_JPEG,
         "the loader hands over the files' bytes and the GPU decodes them (nvJPEG), which "
         "frees the CPUs from decoding", uses=("data",), choices_from="gpu_decoders"),
    Knob("loader_channels_last", "channels_last made in the loader", SETTING,
         ((DEFAULT, None), ("on", True)), PLATFORMS, ("full",), CHANNELS_LAST,
         "the workers hand over NHWC batches, so the training step does not convert them",
         uses=("data",), requires=(("channels_last", "on"),)),
    # Data parallelism, searched only with --nproc 2 or more ("ddp": the workload runs as
    # ranks of DistributedDataParallel). torch.compile is searched with DDP as without.
    Knob("bucket_cap_mb", "DDP(bucket_cap_mb=)", SETTING,
         ((DEFAULT, None), ("10", 10), ("50", 50), ("100", 100)), PLATFORMS,
         ("default", "full"), DDP_DOC,
         "the size of the gradient buckets all-reduced together (default 25 MB): larger "
         "buckets, fewer collectives; smaller, more overlap with the backward pass",
         uses=("ddp",)),
    Knob("gradient_as_bucket_view", "DDP(gradient_as_bucket_view=)", SETTING,
         ((DEFAULT, None), ("on", True)), PLATFORMS, ("default", "full"), DDP_DOC,
         "gradients are views into the all-reduce buckets: no copy in or out, less memory",
         uses=("ddp",), fast="on"),
    Knob("static_graph", "DDP(static_graph=)", SETTING, ((DEFAULT, None), ("on", True)),
         PLATFORMS, ("default", "full"), DDP_DOC,
         "tells DDP the graph is the same every step, so it can skip searching for unused "
         "parameters and plan the buckets once", uses=("ddp",), fast="on"),
    Knob("broadcast_buffers", "DDP(broadcast_buffers=)", SETTING,
         ((DEFAULT, None), ("off", False)), PLATFORMS, ("default", "full"), DDP_DOC,
         "off: no broadcast of rank 0's buffers each step; each rank keeps its own batch-norm "
         "statistics", uses=("ddp",)),
    Knob("nccl_min_nchannels", "NCCL_MIN_NCHANNELS", ENV,
         _env_choices("NCCL_MIN_NCHANNELS", "16", "32"), ("rocm", "cuda"), SPACES, NCCL_ENV,
         "the fewest channels (parallel rings) NCCL or RCCL uses for a collective (RCCL reads "
         "the same variable: " + RCCL_ENV + ")", uses=("ddp",)),
    Knob("torch_nccl_high_priority", "TORCH_NCCL_HIGH_PRIORITY", ENV,
         _env_choices("TORCH_NCCL_HIGH_PRIORITY", "1"), ("rocm", "cuda"), SPACES,
         TORCH_NCCL_ENV, "the communicator's work on a high-priority stream, ahead of compute",
         uses=("ddp",)),
    Knob("torch_nccl_async_error_handling", "TORCH_NCCL_ASYNC_ERROR_HANDLING", ENV,
         _env_choices("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", "1"), ("rocm", "cuda"),
         ("full",), TORCH_NCCL_ENV,
         "what the watchdog does on a collective's error: 0 nothing, 1 abort the communicator "
         "and end the process (default 3: end the process)", uses=("ddp",)),
    Knob("test_fault", "test-only fault injection", ENV,
         (("none", {}), ("crash", {"ROCMDOCTOR_TEST_FAULT": "crash"}),
          ("hang", {"ROCMDOCTOR_TEST_FAULT": "hang"}), ("oom", {"ROCMDOCTOR_TEST_FAULT": "oom"})),
         PLATFORMS, (), "https://github.com/optuna/optuna/blob/master/optuna/study/_optimize.py",
         "makes the benchmark worker crash, hang or run out of memory (tests only)",
         test_only=True),
)

# What each built-in workload spends its time in (tuners/models.py). A custom
# "pkg.module:factory" workload is unknown and gets every knob.
MODEL_USES: dict[str, tuple[str, ...]] = {
    "resnet50": ("conv", "gemm"),
    "tinycnn": ("conv", "gemm"),
    "vit_b_16": ("conv", "gemm", "sdpa"),  # one patch-embedding convolution
    "gpt2": ("gemm", "sdpa"),
}

# Precisions each platform can run, and the reason a precision is left out.
PRECISION_SUPPORT: dict[str, tuple[str, ...]] = {
    "cpu": ("fp32", "bf16"),
    "cuda": ("fp32", "tf32", "bf16", "fp16"),
    "rocm": ("fp32", "bf16", "fp16"),
}
PRECISION_NOT_SUPPORTED: dict[tuple[str, str], str] = {
    ("cpu", "tf32"): "TF32 is a GPU tensor-core format",
    ("cpu", "fp16"): "fp16 autocast on the CPU is slower than bf16 on most CPUs",
    ("rocm", "tf32"): "torch.cuda.is_tf32_supported() is False on ROCm builds (" + TF32_ROCM + ")",
}
# CUDA compute capability below which a precision runs without tensor-core support (TF32 and
# native bf16 arrived with Ampere, sm_80: TF32 doc above).
CUDA_MIN_SM: dict[str, int] = {"tf32": 80, "bf16": 80}

# Defaults of run-time settings where the platform or version decides them: MIOpen benchmark
# mode was on by default on ROCm from torch 1.13 (pytorch#82656) until 2.7 (pytorch#145294).
SETTING_DEFAULTS: tuple[tuple[str, str, Optional[str], Optional[str], Any], ...] = (
    # (setting, platform, from torch, before torch, default value)
    ("cudnn_benchmark", "rocm", "1.13", "2.7", True),
    ("cudnn_benchmark", "rocm", "2.7", None, False),
    ("cudnn_benchmark", "cuda", None, None, False),
    ("miopen_immediate", "rocm", None, None, False),
    # torch.optim picks foreach when every parameter is on a device with foreach kernels (the
    # GPUs), the for-loop otherwise: torch/optim/optimizer.py _default_to_fused_or_foreach.
    ("optimizer_impl", "rocm", None, None, "foreach"),
    ("optimizer_impl", "cuda", None, None, "foreach"),
    ("optimizer_impl", "cpu", None, None, "for-loop"),
)

# Never searched: debugging switches that serialise or slow work, and compatibility hacks.
NEVER_SEARCHED: tuple[tuple[str, str, str], ...] = tuple(
    (var.name, f"debugging only: {var.cost}", var.source) for var in DEBUG_VARS
) + (
    ("HSA_OVERRIDE_GFX_VERSION", "a compatibility override (which GPU code objects load), "
     "not a performance knob; a wrong value hangs or computes garbage", HSA_OVERRIDE),
) + tuple(
    (var, "NVLink multicast stays as the machine's owner configured it: every trial keeps "
     "what the environment has", source) for var, source in (
        ("NCCL_NVLS_ENABLE", NCCL_ENV),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST",
         "https://docs.pytorch.org/docs/stable/symmetric_memory.html"),
        ("NVSHMEM_DISABLE_NVLS",
         "https://docs.nvidia.com/nvshmem/api/gen/env.html")))

# Knobs of one part of a workload (Knob.uses): searched only where the workload has it, and
# not even listed as "not searched" otherwise (unless named in --space): with the reason.
WORKLOAD_PARTS: dict[str, str] = {
    "data": "only with --data (images read through a DataLoader)",
    "ddp": "only with --nproc 2 or more (DistributedDataParallel)",
}


def knobs_named(name: str) -> tuple[Knob, ...]:
    return tuple(k for k in KNOBS if k.name == name)


def knob_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(k.name for k in KNOBS if not k.test_only))
