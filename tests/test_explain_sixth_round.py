"""The causes the sixth collection of real pastes taught (docs/explain.md, "A sixth
collection"), each read from its real text and from the same text with the one fact that
decides it changed: a fault logged after a GPU reset, the WSL VM's memory, hipBLASLt's empty
library folder, /dev/shm refused rather than full, a ZLUDA launcher's own exception, the
torch xformers found, and the HIP runtime's error-level log lines."""

from __future__ import annotations

from rocmdoctor.explain import UNKNOWN_GPU, diagnose, explain_text
from rocmdoctor.explain.resolvers import WSL_VM_MEMORY
from tests.explain_replay import WSL_UNAME, keys, paste
from tests.test_explain_fixtures import ENTRY
from tests.test_explain_reasoning import only

# --- a page fault after a ring timeout is the reset's ----------------------------------------

RESET = paste("c6-amdgpu-ring-timeout--7900xtx-svd-rocm56.txt")


def test_a_page_fault_logged_after_a_gpu_reset_is_not_a_second_cause() -> None:
    assert keys(RESET) == [("amdgpu-ring-timeout", "possible")]
    # the same fault logged before the timeout caused it: both are said, the fault first
    lines = RESET.splitlines()
    fault = next(ln for ln in lines if "page fault" in ln)
    first = "\n".join([fault] + [ln for ln in lines if ln != fault])
    assert [k for k, _ in keys(first)] == ["amdgpu-gpu-page-fault", "amdgpu-ring-timeout"]


# --- the CUDA runtime out of memory under WSL -----------------------------------------------

MOSS = paste("c6-cuda-oom-wsl-ram--moss-wslconfig.txt")


def test_the_runtime_out_of_memory_under_wsl_names_the_vm_memory() -> None:
    [e] = explain_text(MOSS + WSL_UNAME, None)
    assert e.key == "cuda-out-of-memory"
    assert WSL_VM_MEMORY in e.notes and "%UserProfile%\\.wslconfig" in WSL_VM_MEMORY
    # on Linux itself, or with torch's own "Tried to allocate", the VM is not the question
    assert WSL_VM_MEMORY not in explain_text(MOSS, None)[0].notes
    torch_oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                 "has a total capacity of 7.75 GiB of which 1.06 GiB is free.")
    assert WSL_VM_MEMORY not in explain_text(torch_oom + WSL_UNAME, None)[0].notes


# --- hipBLASLt finds no library file for the GPU ---------------------------------------------

RADEON_VII = paste("c6-hipblaslt-no-kernels--radeonvii-sd3-nightly.txt")


def test_hipblaslts_no_paths_matched_is_its_missing_kernels_for_that_target() -> None:
    key, confidence, _, fix, commands, notes = only(RADEON_VII)
    assert (key, confidence) == ("hipblaslt-tensile-missing", "likely")
    assert "export TORCH_BLAS_PREFER_HIPBLASLT=0" in commands
    assert notes[0] == "The library has no kernels for gfx906."
    # the same warning for a folder that is not hipBLASLt's library is not this entry
    other = RADEON_VII.replace("torch/lib/hipblaslt/library/*gfx906*co", "models/*.bin")
    assert "hipblaslt-tensile-missing" not in [k for k, _ in keys(other)]


# --- NCCL's shared memory: refused, not full -------------------------------------------------

SHM_DENIED = paste("c6-nccl-shm-permission--pytorch12-4gpu.txt")


def test_shm_open_refused_is_the_folders_permissions_not_its_size() -> None:
    key, confidence, _, fix, commands, notes = only(SHM_DENIED)
    assert (key, confidence) == ("nccl-shm-exhausted", "likely")
    assert fix.startswith("Make /dev/shm writable for every user again: its mode is 1777")
    assert commands == ("ls -ld /dev/shm", "sudo chmod 1777 /dev/shm",
                        "export NCCL_SHM_DISABLE=1")
    assert notes[0].startswith("shm_open was refused (Permission denied)")
    full = SHM_DENIED.replace("Permission denied", "No space left on device")
    key, _, _, fix, commands, _ = only(full)
    assert key == "nccl-shm-exhausted" and fix == ENTRY["nccl-shm-exhausted"].fix
    assert "docker run --shm-size=16g <image>" in commands


# --- a ZLUDA launcher that fell back to CPU torch -------------------------------------------

ZLUDA = paste("c6-zluda-load-failed--7900xt-pro-driver.txt")


def test_a_zluda_launchers_own_exception_is_said_and_not_taken_for_a_missing_sdk() -> None:
    key, confidence, _, _, _, notes = only(ZLUDA)
    assert (key, confidence) == ("webui-zluda-cpu-torch", "possible")
    assert notes[0] == ('The launcher\'s ZLUDA set-up raised "list index out of range" and '
                        'then installed CPU-only torch: that error is the cause.')
    # where the launcher says it found no ROCm, the missing HIP SDK is the answer
    sdk = ZLUDA.replace("Failed to load ZLUDA: list index out of range",
                        "ROCm: version=None\nFailed to load ZLUDA: list index out of range")
    assert only(sdk)[:2] == ("webui-zluda-cpu-torch", "likely")


# --- xformers built for another torch --------------------------------------------------------

XFORMERS = paste("c6-xformers-cpu-torch--pia-windows.txt")


def test_xformers_says_which_torch_it_found() -> None:
    key, confidence, _, fix, _, notes = only(XFORMERS)
    assert (key, confidence) == ("xformers-build-mismatch", "likely")
    assert notes == ("You have torch 2.1.2+cpu, the CPU-only build: no GPU extension loads "
                     "with it, whatever xformers you install.",)
    assert fix.startswith("Install the CUDA build of torch")
    rocm = only(XFORMERS.replace("(you have 2.1.2+cpu)", "(you have 2.3.1+rocm6.0)"))
    assert rocm[3].startswith("Install an xformers built for ROCm")
    other = only(XFORMERS.replace("(you have 2.1.2+cpu)", "(you have 2.2.0+cu121)"))
    assert other[3] == ENTRY["xformers-build-mismatch"].fix
    assert other[5] == ("xformers was built for torch 2.1.2+cu121; you have 2.2.0+cu121.",)


# --- the HIP runtime's error-level log -------------------------------------------------------

IPC = paste("c6-hip-ipc-legacy--r9700-vllm-image.txt")


def test_the_hip_runtimes_error_level_log_is_a_gpu_error_nothing_explains() -> None:
    d = diagnose(IPC, None)
    assert d.verdict == UNKNOWN_GPU and d.explanations == []
    # the same line at the runtime's info level (3) is no error
    quiet = "\n".join(line.replace(":1:", ":3:", 1) for line in IPC.splitlines()
                      if "hipIpcGetMemHandle" not in line)
    assert diagnose(quiet, None).verdict != UNKNOWN_GPU
