"""General fixes found while reading the ninth collection (docs/explain.md), each read from a real
text and from the same text with the one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose, explain_text
from rocmdoctor.explain.paste import read_facts
from tests.explain_replay import WSL_UNAME, keys, paste

# cupy's wording, from d-li14/involution issue 52; the CUDA runtime's name of the same error 222,
# from NVIDIA/nvbandwidth issue 61 (driver 580, CUDA 13.2 build)
PTX_CUPY = ("cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION: "
            "the provided PTX was compiled with an unsupported toolchain.")
PTX_RUNTIME = ("[cudaErrorUnsupportedPtxVersion] the provided PTX was compiled with an "
               "unsupported toolchain. in expression cudaGetLastError() in CUresult "
               "memsetKernel(CUstream, CUdeviceptr, CUdeviceptr, long long unsigned int, "
               "unsigned int)() : /home/diag/nvbandwidth/kernels.cu:406")


def test_ptx_from_a_newer_toolchain_is_a_driver_older_than_the_build() -> None:
    for text in (PTX_CUPY, PTX_RUNTIME,
                 paste("c9-cuda-ptx-toolchain--dfdx-rust-driver525-needs-530.txt")):
        [e] = explain_text(text, None)
        assert (e.key, e.confidence) == ("cuda-driver-insufficient", "likely")
        assert e.fix.text.startswith("Update the NVIDIA driver")
    # PTX that failed for another reason is not this one
    assert "cuda-driver-insufficient" not in [
        k for k, _ in keys("RuntimeError: CUDA error: a PTX JIT compilation failed")]


RUNTIME = paste("c9-container-runtime-not-registered--wsl2-compose-ollama-daemon-restart.txt")


def test_an_unregistered_nvidia_runtime_is_registered_and_the_daemon_restarted() -> None:
    [e] = explain_text(RUNTIME, None)
    assert (e.key, e.environment) == ("container-nvidia-toolkit-missing", "host")
    assert e.fix.commands == ("sudo apt-get install -y nvidia-container-toolkit",
                              "sudo nvidia-ctk runtime configure --runtime=docker",
                              "sudo systemctl restart docker")
    # under WSL a Docker Engine inside the distribution is one of the two ways, not wrong
    [e] = explain_text(RUNTIME + WSL_UNAME, None)
    assert e.environment == "wsl"
    assert "Docker Desktop's WSL 2 backend, or a Docker Engine installed in the WSL " \
           "distribution" in e.fix.text
    assert e.fix.commands == ("docker info | grep -i runtimes",
                              "sudo nvidia-ctk runtime configure --runtime=docker",
                              "sudo systemctl restart docker")


WRAPPED = paste("c9-undefined-symbol--flash-attn-258-wheel-torch212-cow-deleter.txt")


def test_an_undefined_symbol_wrapped_after_undefined_is_still_one() -> None:
    assert WRAPPED.splitlines()[-1].startswith(" symbol: _ZN3c10")
    assert keys(WRAPPED) == [("undefined-symbol", "likely")]
    assert keys(" ".join(WRAPPED.split("\n"))) == [("undefined-symbol", "likely")]
    # a symbol named in prose is not a loader's error
    assert keys("the symbol: _ZN3c104impl3cow11cow_deleterEPv is exported by libc10.so") == []


OLLAMA_WIN = paste("c9-ollama-no-compatible-gpu--windows-gfx1031-replace-rocblas.txt")


def test_ollamas_override_hint_alone_names_the_unsupported_gpu() -> None:
    # the log was cut before "amdgpu is not supported": the hint ollama writes only after it
    assert "amdgpu is not supported" not in OLLAMA_WIN
    [e] = explain_text(OLLAMA_WIN, None)
    assert e.key == "ollama-amdgpu-not-supported"
    assert "HSA_OVERRIDE_GFX_VERSION" not in e.fix.text and "rocblas.dll" in e.fix.text
    # ollama's Linux build logs source=amd_linux.go: there the override is the fix
    [e] = explain_text(OLLAMA_WIN.replace("amd_windows.go", "amd_linux.go"), None)
    assert e.key == "ollama-amdgpu-not-supported"
    assert e.fix.text.startswith("Give the ollama service an HSA_OVERRIDE_GFX_VERSION")


def test_no_compatible_gpu_in_a_windows_log_gets_no_dev_kfd_advice() -> None:
    line = ('time=2024-08-09T00:25:59.237+08:00 level=INFO source=gpu.go:347 msg="no compatible '
            'GPUs were discovered"')
    windows = ('time=2024-08-09T00:25:59.172+08:00 level=INFO source=gpu_windows.go:167 '
               'msg=packages count=1\n' + line)
    [e] = explain_text(windows, None)
    assert e.key == "ollama-no-compatible-gpu" and "/dev/kfd" not in " ".join(e.fix.commands)
    assert e.fix.text.startswith("Read the WARN lines above it")
    [e] = explain_text(line, None)
    assert "ls -ln /dev/kfd /dev/dri" in e.fix.commands


def test_a_go_source_file_for_windows_says_the_log_was_written_there() -> None:
    assert read_facts('level=WARN source=amd_windows.go:99 msg="See x"').os == "windows"
    assert read_facts('level=WARN source=amd_linux.go:342 msg="See x"').os is None
    assert read_facts("source=windows.go:12 msg=x").os is None


HASHCAT = paste("c9-hiprtc-compilation--hashcat-hip-options-rx6900xt.txt")


def test_a_hiprtc_failure_outside_miopen_is_not_miopens() -> None:
    result = diagnose(HASHCAT, None)
    assert (result.verdict, result.explanations) == (UNKNOWN_GPU, [])
    miopen = ("MIOpen(HIP): Error [BuildHip] HIPRTC status = HIPRTC_ERROR_COMPILATION (6), "
              "source file: MIOpenIm2d2Col.cpp\n" + HASHCAT)
    assert keys(miopen)[0] == ("miopen-hiprtc-compile", "likely")
    assert diagnose("nvrtc: error: NVRTC_ERROR_COMPILATION", None).verdict == UNKNOWN_GPU


def test_nccl_tests_and_rocm_smi_failures_are_gpu_errors_even_unknown() -> None:
    for name in ("c9-nccl-unhandled-cuda--nccl10-p100-tests-upgrade.txt",
                 "c9-rocm-smi-returned-8--container-rocm310-library-path.txt"):
        result = diagnose(paste(name), None)
        assert (result.verdict, result.explanations) == (UNKNOWN_GPU, [])
    # the same words in a program's own failure message are not the GPU stack's
    assert diagnose("Test failure common.cu:891 'invalid argument'", None).verdict == NOT_GPU


def test_nvidia_smi_without_its_driver_checks_secure_boot() -> None:
    [e] = explain_text(paste("c9-nvidia-smi-no-driver--fedora34-rtx2060s-secure-boot.txt"), None)
    assert e.key == "nvidia-smi-no-driver" and "Secure Boot" in e.cause
    assert "mokutil --sb-state" in e.fix.commands
