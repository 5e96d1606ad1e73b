"""What a benchmark child's crash means to the tuner: crashes that a second run may not repeat
(`TRANSIENT`), and crashes whose cause lies outside rocmdoctor, in a library or the machine,
with what the tuner does about them (`KNOWN_CAUSES`). Each entry carries its source.

Read by rocmdoctor.tuners.crashes. Patterns are regular expressions, case-insensitive, searched
in the trial's one-line message and the tail of its stderr.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrashPattern:
    key: str
    patterns: tuple[str, ...]
    what: str  # one sentence: what happened
    source: str
    avoided: str = ""  # what rocmdoctor does so that it does not happen again ("" nothing)


# A crash matching one of these may not happen again: the trial is run once more.
TRANSIENT: tuple[CrashPattern, ...] = (
    CrashPattern(
        "working-folder-gone",
        (r"Intel (?:one)?MKL FATAL ERROR: Cannot load .*libtorch_cpu",
         r"getcwd\(\) failed", r"error retrieving current directory"),
        "the child started in a working folder that no longer exists",
        "https://github.com/InternLM/lmdeploy/issues/2258",
        "rocmdoctor starts each child in a folder that exists"),
    CrashPattern(
        "device-busy",
        (r"CUDA-capable device\(s\) is/are busy or unavailable",
         r"cudaErrorDevicesUnavailable", r"hipErrorDevicesUnavailable"),
        "the GPU was held by another process (exclusive-process compute mode)",
        "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),
    CrashPattern(
        "no-resources",
        (r"Resource temporarily unavailable", r"can't start new thread",
         r"fork: retry", r"BlockingIOError"),
        "the machine had no room for another thread or process at that moment (EAGAIN)",
        "https://man7.org/linux/man-pages/man3/pthread_create.3.html"),
    CrashPattern(
        "killed",
        (r"killed by SIGKILL",),
        "the process was killed from outside (the kernel's out-of-memory killer, or a user)",
        "https://docs.kernel.org/admin-guide/mm/concepts.html#oom-killer"),
)

# Crashes with a known cause outside rocmdoctor: the tune names it, with its source.
KNOWN_CAUSES: tuple[CrashPattern, ...] = (
    CrashPattern(
        "onemkl-getcwd",
        (r"Intel (?:one)?MKL FATAL ERROR: Cannot load .*libtorch_cpu",),
        "the oneMKL inside torch's libtorch_cpu calls getcwd() while torch is imported and "
        "aborts with exit code 2 when it fails, which it does once the process's working "
        "folder has been deleted (also when a new folder of the same name replaced it); "
        "seen with the same message in InternLM/lmdeploy#2258 and hitfeelee/Yolo3D#9",
        "https://github.com/InternLM/lmdeploy/issues/2258",
        "rocmdoctor starts each child in a folder that exists: the folder of the same name "
        "when it was replaced, else the temporary folder"),
    # torch/csrc/DataLoader.cpp prints the first line from a worker's SIGBUS handler; the
    # loader then raises "DataLoader worker (pid N) is killed by signal: Bus error"
    # (torch/utils/data/_utils/signal_handling.py). Docker's default /dev/shm is 64 MB
    # (https://docs.docker.com/reference/cli/docker/container/run/).
    CrashPattern(
        "dataloader-shm",
        (r"insufficient shared memory \(shm\)",
         r"DataLoader worker \(pid.*\) is killed by signal: Bus error",
         r"unable to open shared memory object </torch_",
         r"unable to write to file </torch_.*No space left on device"),
        "a DataLoader worker found no room in /dev/shm, through which workers hand their "
        "batches over (a container gets 64 MB unless started with a larger --shm-size): "
        "docker run --shm-size=16g ... (or --ipc=host), or fewer workers",
        "https://github.com/pytorch/pytorch/blob/main/torch/csrc/DataLoader.cpp"),
)
