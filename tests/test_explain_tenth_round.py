"""General fixes found while reading the tenth collection (docs/explain.md), each read from a real
text and from the same text with the one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose, explain_text
from rocmdoctor.host.snapshot import SnapshotHost
from tests.explain_replay import WSL_UNAME, host_for, keys, paste
from tests.helpers import make_snapshot
from tests.test_torch_checks import QUERY_KEY, plain_host

NVRTC = ("c10-nvrtc-arch--footstep-planning-rtx4090-torch-cuda-mismatch.txt",
         "c10-nvrtc-arch--hyperreenact-old-torch-cu-build.txt",
         "c10-nvrtc-arch--walk-these-ways-rtx4090-cuda113-torchscript.txt")


def test_nvrtc_not_knowing_the_gpus_architecture_asks_for_a_newer_cuda_build() -> None:
    for name in NVRTC:
        [e] = explain_text(paste(name), None)
        assert (e.key, e.confidence) == ("nvrtc-arch-unknown", "likely")
        assert "cu118 or newer" in e.fix.text
        # the wheel as the checks choose it: no driver known, the CUDA most drivers run
        assert e.fix.commands[-2:] == ("nvidia-smi", "pip install torch torchvision "
                                       "--index-url https://download.pytorch.org/whl/cu126")
        assert "Wheel index: cu126 is torch 2.14.1's oldest CUDA: it runs on the oldest " \
               "drivers and GPUs." in e.notes
    # on a machine whose driver is known, the newest build that driver runs (as the checks say)
    smi = ("0, NVIDIA GeForce RTX 4090, 580.65.06, 8.9, Enabled, 450.00, 450.00, 24564, GPU-1, "
           "0:01:00.0\n")
    machine = plain_host(commands={QUERY_KEY: smi},
                         paths={"/dev/nvidiactl": {"type": "char", "mode": "0666"}})
    [e] = explain_text(paste(NVRTC[1]), machine)
    assert e.fix.commands[-1] == ("pip install torch torchvision --index-url "
                                  "https://download.pytorch.org/whl/cu132")
    assert "Wheel index: cu132 is the newest build driver 580.65.06 can run." in e.notes
    # NVRTC failing for another reason is not this entry
    other = "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1."
    assert "nvrtc-arch-unknown" not in [k for k, _ in keys(other)]


ROCK_WSL = paste("c10-rocm-wsl-no-kfd--rx6700s-rocm523-wsl2-rock-not-loaded.txt")
ROCK = paste("c10-rocminfo-lsmod-builtin--amdgpu-built-into-kernel-rock-not-loaded.txt")


def _no_amdgpu() -> SnapshotHost:
    # an AMD machine whose amdgpu is not loaded: no /sys/module/amdgpu
    return SnapshotHost(make_snapshot(paths={"/opt/rocm": {"type": "dir"}}))


def test_rocminfo_finding_no_rock_module_is_decided_by_wsl_and_the_machines_module() -> None:
    # the line alone: three known causes, none decided
    [e] = explain_text(ROCK, None)
    assert (e.key, e.confidence) == ("rock-not-loaded", "possible")
    # WSL has no amdgpu module at all
    [e] = explain_text(ROCK_WSL + WSL_UNAME, None)
    assert (e.key, e.confidence, e.environment) == ("rock-not-loaded", "likely", "wsl")
    assert "AMD's WSL guide" in e.fix.text and "modprobe" not in " ".join(e.fix.commands)
    # this machine's amdgpu is live: it is rocminfo's own check that missed it
    [e] = explain_text(ROCK, host_for("amd"))
    assert (e.key, e.confidence) == ("rock-not-loaded", "likely")
    assert e.fix.text.startswith("The driver is loaded")
    assert e.fix.commands == ("ls -l /dev/kfd", "cat /sys/module/amdgpu/initstate", "groups")
    # and where it is not there, the driver is what is missing
    [e] = explain_text(ROCK, _no_amdgpu())
    assert (e.key, e.confidence) == ("rock-not-loaded", "likely")
    assert e.fix.commands[0] == "sudo modprobe amdgpu"
    assert any("does not exist" in n for n in e.notes)


RING = paste("c10-amdgpu-dkms-smu-mismatch--r9700-rocm72-ring-timeout-boot-lag.txt")


def test_a_ring_timeout_after_an_smu_mismatch_pairs_driver_and_firmware() -> None:
    [e] = explain_text(RING, host_for("amd"))
    assert (e.key, e.confidence) == ("amdgpu-ring-timeout", "possible")
    assert e.fix.text.startswith("The driver and the GPU's SMU firmware are from different")
    assert "dkms status" in e.fix.commands
    # the timeout alone: the many causes, amdgpu-dkms among the fixes
    alone = "\n".join(ln for ln in RING.splitlines() if "not matched" not in ln)
    [e] = explain_text(alone, host_for("amd"))
    assert e.key == "amdgpu-ring-timeout" and "install the amdgpu-dkms driver" in e.fix.text


def test_jax_hipcc_selinux_and_torch_compile_failures_are_gpu_errors_even_unknown() -> None:
    for name in ("c10-jax-platform-name--v100-jax-platforms-gpu-tries-rocm.txt",
                 "c10-hipcc-env-not-loaded--gentoo-hipcc-cant-exec-usr-llvm-clang.txt",
                 "c10-container-selinux-dri--podman-fedora-iot-avc-denied-renderd128.txt",
                 "c10-triton-rocm-version-mismatch--inductor-rocm55-nonetype-not-subscriptable"
                 ".txt"):
        result = diagnose(paste(name), None)
        assert (result.verdict, result.explanations) == (UNKNOWN_GPU, []), name
    # an SELinux denial on a file that is no GPU's is not one
    denial = ('type=AVC msg=audit(1683468487.052:3337): avc:  denied  { read } for  pid=699282 '
              'comm="nginx" path="/srv/www/index.html" dev="sda1" ino=947')
    assert diagnose(denial, None).verdict == NOT_GPU

