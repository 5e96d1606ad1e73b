"""explain reasons with the facts a paste states: for each resolver a real paste, and the same
paste with one fact contradicted (a natively supported target, a Windows path, an AMD GPU
name, CUDA instead of ROCm ...), and the answer each gets, whole."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from typer.testing import CliRunner

from rocmdoctor.explain import Explanation, explain_text
from rocmdoctor.kb.errors import KNOWN_MESSAGES
from tests.explain_replay import host_for, paste
from tests.helpers import fixture_text, make_snapshot

ENTRY = {m.key: m for m in KNOWN_MESSAGES}
ROCMINFO = "rocminfo | grep -o -m1 'gfx[0-9a-f]*'"
ARCH_LIST = 'python -c "import torch; print(torch.cuda.get_arch_list())"'


def answer(e: Explanation) -> tuple[str, str, str, str, tuple[str, ...], tuple[str, ...]]:
    """The whole answer but the entry's fixed prose (cause, check, source: asserted equal to
    the entry's in tests/test_explain_fixtures.py)."""
    return e.key, e.confidence, e.environment, e.fix.text, e.fix.commands, e.notes


def only(text: str, host: Optional[object] = None) -> tuple[str, str, str, str, tuple[str, ...],
                                                           tuple[str, ...]]:
    [e] = explain_text(text, host)  # type: ignore[arg-type]
    return answer(e)


NATIVE_1100 = ("gfx1100 is a target ROCm supports natively (ROCm 6.0.0 and later list it): it "
               "needs no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.")
WINDOWS_NOTE = ("This log was written on Windows: HSA_OVERRIDE_GFX_VERSION is read only by "
                "ROCm's Linux runtime (libhsakmt); on Windows it changes nothing.")
ROCBLAS = ENTRY["rocblas-tensile-missing"]

# --- rocBLAS inside an application: native target, unsupported target, Windows, iGPU --------

GFX1035 = paste("rocblas-app-missing-arch--ollama-nix-flake-gfx1035-680m.txt")


def test_an_unsupported_target_gets_the_override_a_native_one_never() -> None:
    assert only(GFX1035) == (
        "rocblas-tensile-missing", "likely", "host", ROCBLAS.fix,
        ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",),
        ("The library has no kernels for gfx1035.",
         "No ROCm release from 6.0 to 10.1.0 (those this table knows) lists gfx1035 as "
         "supported: its libraries need not carry code for it.",
         "HSA_OVERRIDE_GFX_VERSION=10.3.0 runs the gfx1030 (RX 6800/6900) code on this RDNA2 "
         "GPU."))
    native = GFX1035.replace("gfx1035", "gfx1100").replace("680M", "RX 7900 XTX")
    assert only(native) == (
        "rocblas-tensile-missing", "likely", "host", ROCBLAS.fix, ROCBLAS.commands,
        ("The library has no kernels for gfx1100.", NATIVE_1100))


OLLAMA_1201 = paste("rocblas-app-missing-arch--ollama-rx9070-hipblaslt-lazy-gfx1201.txt")


def test_a_native_target_inside_ollama_is_an_ollama_update_not_an_override() -> None:
    hip = ENTRY["hipblaslt-tensile-missing"]
    assert only(OLLAMA_1201) == (
        "hipblaslt-tensile-missing", "likely", "host", hip.fix,
        ("curl -fsSL https://ollama.com/install.sh | sh",),
        ("The library has no kernels for gfx1201.",
         "gfx1201 is a target ROCm supports natively (ROCm 6.4.1 and later list it): it needs "
         "no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.",
         "ollama gets libraries with gfx1201 this way "
         "(https://github.com/ollama/ollama/blob/main/docs/linux.md)."))
    unsupported = OLLAMA_1201.replace("gfx1201", "gfx1032")
    assert only(unsupported)[4] == ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",)


WIN_1032 = paste("rocblas-app-missing-arch--llamafile-windows-hip-sdk57-gfx1032.txt")


def test_a_windows_log_gets_the_windows_fix_and_no_override() -> None:
    windows = ENTRY["rocblas-tensile-missing"].variants[0]
    assert only(WIN_1032) == (
        "rocblas-tensile-missing", "likely", "windows", windows.fix, windows.commands,
        ("The log was written on Windows: the Windows fix.",
         "The library has no kernels for gfx1032.", WINDOWS_NOTE,
         "Use rocBLAS built for gfx1032 and this HIP SDK version: replace rocblas.dll and the "
         "rocblas\\library folder with such a build (community builds exist for several "
         "consumer targets), or an application build that bundles one.",
         "This is the Windows HIP SDK 5.7: community rocBLAS libraries (and rocblas.dll) must "
         "be built for that same SDK version (ROCmLibs maintainers)."))
    linux = (WIN_1032.replace(r"C:\Program Files\AMD\ROCm\5.7\bin\rocblas\library\/",
                              "/opt/rocm-5.7.0/lib/rocblas/library/")
             .replace("/C/Users/hiepx/AppData/Local/Temp/.llamafile/ggml-rocm.dll",
                      "/home/hiepx/.llamafile/ggml-rocm.so"))
    assert only(linux)[2:5] == ("host", ROCBLAS.fix, ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",))


def test_a_desktop_cpus_integrated_gpu_is_hidden_not_overridden() -> None:
    text = paste("rocblas-app-missing-arch--llama-cpp-rocm641-gfx1036-igpu.txt")
    assert only(text)[4] == ("rocminfo | grep -E 'Marketing Name|gfx'",
                             "export HIP_VISIBLE_DEVICES=<index of the discrete GPU>")
    laptop = text.replace("gfx1036", "gfx1035")  # a laptop APU on its own: the override
    assert only(laptop)[4] == ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",)


# --- no code object for the GPU: the text's target decides ----------------------------------

NO_BINARY = ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
             "Devices:\n  amdgcn-amd-amdhsa--gfx1032 - [Not Found]\n"
             "  File \"/usr/lib/python3/site-packages/torch/cuda/__init__.py\", line 1, in f")


def test_no_code_object_for_an_unsupported_target_and_for_a_native_one() -> None:
    gpu_code = ENTRY["no-binary-for-gpu"]
    assert only(NO_BINARY) == (
        "no-binary-for-gpu", "likely", "host", gpu_code.fix,
        (ARCH_LIST, "export HSA_OVERRIDE_GFX_VERSION=10.3.0"),
        ("The runtime found no code for gfx1032.",
         "No ROCm release from 6.0 to 10.1.0 (those this table knows) lists gfx1032 as "
         "supported: its libraries need not carry code for it.",
         "HSA_OVERRIDE_GFX_VERSION=10.3.0 runs the gfx1030 (RX 6800/6900) code on this RDNA2 "
         "GPU; torch must carry gfx1030 code for it to help."))
    assert only(NO_BINARY.replace("gfx1032", "gfx1100")) == (
        "no-binary-for-gpu", "likely", "host",
        "Install a release of torch built with gfx1100 code; no HSA_OVERRIDE_GFX_VERSION "
        "(ROCm supports gfx1100 itself).",
        ("pip install --force-reinstall torch torchvision --index-url "
         "https://download.pytorch.org/whl/rocm7.14",),
        ("The runtime found no code for gfx1100.", NATIVE_1100))
    windows = NO_BINARY.replace("/usr/lib/python3/site-packages/torch/cuda/__init__.py",
                                r"C:\Python311\Lib\site-packages\torch\cuda\__init__.py")
    assert only(windows) == (
        "no-binary-for-gpu", "likely", "windows", gpu_code.variants[0].fix,
        gpu_code.variants[0].commands,
        ("The log was written on Windows: the Windows fix.",
         "The runtime found no code for gfx1032.", WINDOWS_NOTE))


def test_the_snapshot_machine_answers_for_a_linux_paste_not_for_a_windows_one(
        tmp_path: Path) -> None:
    import typer

    from rocmdoctor.cli.explain import explain_command
    from rocmdoctor.host.snapshot import save_snapshot

    rocminfo = fixture_text("rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt")
    snap = str(tmp_path / "snap.json")
    save_snapshot(make_snapshot(commands={"rocminfo": rocminfo}), snap)
    app = typer.Typer()
    app.command()(explain_command)
    text = "HIP error: invalid device function"
    linux = CliRunner().invoke(app, [text, "--from", snap])
    assert linux.exit_code == 0
    assert "gfx1100 Radeon RX 7900 XTX: PyTorch's ROCm 7.14 wheels include gfx1100" in linux.stdout
    windows = CliRunner().invoke(app, [text + r" in C:\Users\me\run.py", "--from", snap])
    assert windows.exit_code == 0 and "Radeon RX 7900 XTX" not in windows.stdout
    assert "Note: the text was written on Windows (line 1), so this machine's facts are left " \
           "out." in " ".join(windows.stdout.split())


# --- GPUs too old for the build, and ROCm's placeholder -------------------------------------

K40 = paste("gpu-too-old--gt720-cc35-minimum-37-voice-changer.txt")


def test_sm35_names_the_last_wheels_that_shipped_it_and_an_amd_gpu_gets_the_placeholder() -> None:
    old = ENTRY["cuda-gpu-too-old"]
    assert only(K40) == (
        "cuda-gpu-too-old", "likely", "host", old.fix, old.commands,
        ("The GPU is 3.5; this torch's oldest is 3.7 (line 3).",
         "Compute capability 3.5 (Kepler): torch 1.2.0 is the last release whose official "
         "binaries carry sm_35 (from 1.3 their minimum is 3.7); community builds for sm_35 "
         "exist up to torch 2.0 (https://github.com/nelson-liu/pytorch-manylinux-binaries), or "
         "build torch from source with TORCH_CUDA_ARCH_LIST=3.5."))
    pascal = K40.replace("GeForce GT 720 which is of cuda capability 3.5",
                         "GeForce GTX 1080 which is of cuda capability 6.1")
    assert only(pascal)[4] == ("pip install --force-reinstall torch==2.14.1 torchvision==0.29.1 "
                               "--index-url https://download.pytorch.org/whl/cu126",)
    amd = K40.replace("GeForce GT 720", "Vega 10 XT [Radeon RX Vega 64]").replace("3.5.", "3.0.")
    placeholder = ENTRY["rocm-capability-placeholder"]
    assert only(amd) == ("rocm-capability-placeholder", "likely", "host", placeholder.fix, (), ())


def test_a_gpu_a_minor_version_above_the_build_is_told_to_ignore_it() -> None:
    gb10 = paste("gpu-too-old--gb10-cc121-above-maximum-120-vllm.txt")
    above = ENTRY["cuda-capability-above-build"]
    assert only(gb10) == (
        "cuda-capability-above-build", "likely", "host", above.fix, above.commands,
        ("The GPU is 12.1; this build's newest is 12.0: a 12.1 GPU runs 12.0 code, so the "
         "warning is spurious.",))
    below = gb10.replace("cuda capability 12.1", "cuda capability 6.1")
    assert only(below)[0] == "cuda-gpu-too-old"


# --- libraries: triton, bitsandbytes, headers, libtinfo, hipBLASLt --------------------------


def test_lcuda_on_rocm_is_a_cuda_triton_and_on_cuda_the_missing_driver_library() -> None:
    rocm = ("/usr/bin/ld: cannot find -lcuda\n[pip3] pytorch-triton-rocm==3.1.0\n"
            "[pip3] torch==2.5.1+rocm6.2")
    triton = ENTRY["triton-cuda-on-rocm"]
    assert only(rocm) == (
        "triton-cuda-on-rocm", "likely", "host", triton.fix,
        ("pip list 2>/dev/null | grep -i triton", "pip uninstall -y triton",
         "pip install --force-reinstall torch --index-url "
         "https://download.pytorch.org/whl/rocm6.2"),
        ("pytorch-triton-rocm is installed too (line 2): the PyPI triton shadows it.",))
    cuda = paste("novel-libcuda--inductor-lcuda-v100-cu117-nightly.txt")
    line = 1 + cuda.splitlines().index(next(ln for ln in cuda.splitlines() if "-lcuda" in ln))
    # The linker wants the unversioned name: the link, not the driver (the thread's fix).
    assert only(cuda) == (
        "libcuda-missing", "likely", "host",
        "Where the NVIDIA driver is installed (ldconfig lists libcuda.so.1), add the "
        "unversioned link beside it; without an NVIDIA GPU run the program on the CPU.",
        ("ldconfig -p | grep libcuda", "sudo ln -s /usr/lib/x86_64-linux-gnu/libcuda.so.1 "
         "/usr/lib/x86_64-linux-gnu/libcuda.so"),
        (f"The linker (`-lcuda`, line {line}) looks for libcuda.so with no version; the NVIDIA "
         "driver installs libcuda.so.1, and the unversioned name is only a link that its "
         "development files add.",))
    neither = "/usr/bin/ld: cannot find -lcuda"
    assert only(neither)[:2] == ("libcuda-missing", "possible")


def test_bitsandbytes_on_rocm_gets_the_hip_build_and_on_cuda_the_cuda_fix() -> None:
    rocm = paste("bitsandbytes-no-hip--rocm-lib-path-no-libcudart.txt") + "\nRadeon gfx1030"
    bnb = ENTRY["bitsandbytes-no-gpu-build"]
    assert only(rocm) == (
        "bitsandbytes-no-gpu-build", "likely", "host", bnb.fix,
        ("python -m bitsandbytes",
         "cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=gfx1030 -S . && make && pip install ."), ())
    cuda = paste("bitsandbytes-no-hip--cuda-container-cpu-library-no-libcudart.txt")
    assert only(cuda) == ("bitsandbytes-no-gpu-build", "likely", "nvidia_paste",
                          bnb.variants[0].fix, bnb.variants[0].commands,
                          (bnb.variants[0].note,))


def test_a_missing_standard_header_is_not_mixed_rocm_versions() -> None:
    text = paste("hip-std-headers-missing--miopen-ai-benchmark-gfx908-rocm543.txt")
    headers = ENTRY["hip-std-headers-missing"]
    assert only(text) == (
        "hip-std-headers-missing", "likely", "host", headers.fix,
        ("ls /usr/lib/gcc/x86_64-linux-gnu/", "sudo apt install libstdc++-12-dev"),
        ("The compiler found no <limits>: a C++ standard header.",
         "The text does not say which GCC the compiler picked; `ls "
         "/usr/lib/gcc/x86_64-linux-gnu/` shows the newest (12 on Ubuntu 22.04, where these "
         "reports come from)."))
    with_gcc = text + "\n/usr/lib/gcc/x86_64-linux-gnu/13/../../../../include/c++/13"
    assert only(with_gcc)[4] == ("ls /usr/lib/gcc/x86_64-linux-gnu/",
                                 "sudo apt install libstdc++-13-dev")
    without = "\n".join(ln for ln in text.splitlines() if "file not found" not in ln)
    assert only(without)[0] == "miopen-hiprtc-compile"


def test_libtinfo_5_and_6_get_their_own_packages() -> None:
    five = paste("libtinfo-missing--rocm310-clinfo-ubuntu2004-dlerror.txt")
    assert only(five)[4] == ("sudo apt install libtinfo5", "dnf provides '*/libtinfo.so.5'")
    six = five.replace("libtinfo.so.5", "libtinfo.so.6")
    assert only(six)[4] == ("sudo apt install libtinfo6", "dnf provides '*/libtinfo.so.6'")


def test_hipblaslt_error_against_its_harmless_fallback_warning() -> None:
    error = paste("hipblaslt-unsupported-arch--torch26-nightly-rocm62-regression.txt")
    assert only(error)[:2] == ("hipblaslt-unsupported-arch", "likely")
    assert "torch 2.6.0.dev20241015+rocm6.2 (line 3): one of the October 2024 nightlies " \
           "without the fallback." in only(error)[5]
    warning = error.replace("RuntimeError: Attempting to use hipBLASLt on a unsupported "
                            "architecture!", "UserWarning: Attempting to use hipBLASLt on an "
                            "unsupported architecture! Overriding blas backend to hipblas")
    assert only(warning)[0] == "hipblaslt-arch-fallback"


# --- CUDA 804, the PSP ring, PCIe links -----------------------------------------------------


def test_forward_compatibility_names_what_the_driver_supports() -> None:
    text = paste("cuda-forward-compat--gpustack-vllm-driver-535.txt")
    assert only(text)[5] == ("Driver 535.129.03 (line 2) supports CUDA 12.2 at most (NVIDIA's "
                             "minimum drivers).",)
    inside = only(text, host_for("nvidia-container"))
    assert inside[2] == "container" and inside[3] == ENTRY[
        "cuda-forward-compat-unsupported"].container_fix


def test_a_psp_ring_failure_at_reset_is_a_reboot_at_load_the_hardware() -> None:
    reset = paste("amdgpu-psp-ring--gpu-reset-resume-failed-after-fault.txt")
    assert only(reset)[4] == ("sudo reboot",)
    load = paste("amdgpu-psp-ring--mi210x4-infinity-fabric-bridge-defective.txt")
    assert only(load)[5] == ("This happened while the driver loaded: look at the hardware "
                             "around the GPU (bridge, riser, slot, power).",)


def test_pcie_errors_name_the_devices_and_how_bad() -> None:
    fatal = paste("pcie-link-errors--nvidia-root-port-fatal-completion-timeout.txt")
    aspm = ("A completion timeout: the device behind the link did not answer in time. "
            "Besides the hardware, power-saving link states (ASPM) are a known trigger: booting "
            "with pcie_aspm=off (or pcie_aspm.policy=performance) tells the two apart.")
    assert only(fatal)[4:] == (
        ("sudo dmesg | grep -iE 'amdgpu|kfd|nvrm'",
         "cat /sys/module/pcie_aspm/parameters/policy", "sudo lspci -vvv | grep -i aspm"),
        ("An uncorrectable (fatal) error: the link stopped carrying traffic and the device "
         "behind it hung.", "[8086:6f08] is Intel CPU/chipset.", "Error types: CmpltTO, SDES.",
         aspm))
    corrected = paste("pcie-link-errors--raspberry-pi-riser-badtlp-baddllp.txt")
    got = only(corrected)
    assert got[5][0].startswith("Corrected errors: the link retried them")
    assert aspm not in got[5] and "cat /sys/module/pcie_aspm/parameters/policy" not in got[4]


# --- Windows: the Windows answer, or an honest Linux only -----------------------------------


def test_torch_not_compiled_on_windows_and_on_linux() -> None:
    windows = paste("windows-torch-not-compiled-cuda--stabilitymatrix-comfyui-amd-7900xtx.txt")
    build = ENTRY["torch-not-compiled-cuda"]
    got = only(windows)
    assert got[:5] == ("torch-not-compiled-cuda", "possible", "windows",
                       build.variants[0].fix, build.variants[0].commands)
    linux = windows.replace("W:\\smatrix\\Data\\Packages\\", "/home/me/").replace("\\", "/") \
        + "\nAMD Radeon RX 7900 XTX"
    assert only(linux)[2:5] == ("host", build.fix, (
        build.commands[0], "pip install --force-reinstall torch torchvision --index-url "
        "https://download.pytorch.org/whl/rocm7.14"))


def test_a_kfd_error_in_a_windows_log_is_only_possible_and_says_linux_only() -> None:
    text = r"Unable to open /dev/kfd read-write: Permission denied  (C:\Users\me\train.py)"
    got = only(text)
    assert got[:2] == ("kfd-permission", "possible")
    assert got[5][-1] == ("Possible: the log was written on Windows and this is a Linux message "
                          "(Linux only): it cannot be the cause there as it stands.")
    assert only("Unable to open /dev/kfd read-write: Permission denied")[1] == "likely"
