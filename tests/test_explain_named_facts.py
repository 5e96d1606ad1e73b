"""explain reasons with facts a paste states in other words than a target: a GPU's product
name, a version that says which build a package is, the system a path was written on, the
frame that raised. For each, a real paste of the third collection's train split and the same
paste with that one fact contradicted, and both whole answers."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose, explain_text
from rocmdoctor.explain.paste import read_facts
from rocmdoctor.kb.errors import KNOWN_MESSAGES
from rocmdoctor.kb.gpu_names import named_gpus, target_of
from tests.explain_replay import paste
from tests.test_explain_reasoning import ARCH_LIST, answer, only

ENTRY = {m.key: m for m in KNOWN_MESSAGES}


# --- a product name is a target where the text states none ---------------------------------


def test_the_name_table_reads_names_as_people_write_them_and_nothing_ambiguous() -> None:
    found = {text: [(row.target, name) for row, name in named_gpus(text)] for text in (
        "I have an 7900xtx and 7800xt", "Radeon RX 6600", "AMD 4800u", "GTX 1080 Ti",
        "RX 6750 GRE", "A10-8700P", "RTX 3090")}
    assert found == {
        "I have an 7900xtx and 7800xt": [("gfx1100", "7900xtx"), ("gfx1101", "7800xt")],
        "Radeon RX 6600": [("gfx1032", "Radeon RX 6600")],
        "AMD 4800u": [("gfx90c", "4800u")],
        "GTX 1080 Ti": [("6.1", "GTX 1080 Ti")],
        "RX 6750 GRE": [],  # sold as more than one target: no answer rather than a wrong one
        "A10-8700P": [],
        "RTX 3090": [("8.6", "RTX 3090")]}
    assert target_of("7900xtx and 7800xt") is None and target_of("RX 580").target == "gfx803"


KOBOLD = paste("c3-hip-no-binary--koboldai-rx6600-arch-aur.txt")
NO_BINARY = ENTRY["no-binary-for-gpu"]


def test_an_rx6600_named_in_the_text_gets_its_override_a_native_card_none() -> None:
    assert only(KOBOLD) == (
        "no-binary-for-gpu", "likely", "host", NO_BINARY.fix,
        (ARCH_LIST, "export HSA_OVERRIDE_GFX_VERSION=10.3.0"),
        ("The text names the GPU, rx 6600 (line 1): its target is gfx1032 (ROCm's and LLVM's "
         "GPU lists).",
         "No ROCm release from 6.0 to 10.1.0 (those this table knows) lists gfx1032 as "
         "supported: its libraries need not carry code for it.",
         "HSA_OVERRIDE_GFX_VERSION=10.3.0 runs the gfx1030 (RX 6800/6900) code on this RDNA2 "
         "GPU; torch must carry gfx1030 code for it to help."))
    native = only(KOBOLD.replace("rx 6600", "rx 7900 xtx"))
    assert native[:2] == ("no-binary-for-gpu", "likely")
    assert not any("HSA_OVERRIDE" in c for c in native[4])
    assert native[5][:2] == (
        "The text names the GPU, rx 7900 xtx (line 1): its target is gfx1100 (ROCm's and "
        "LLVM's GPU lists).",
        "gfx1100 is a target ROCm supports natively (ROCm 6.0.0 and later list it): it needs "
        "no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.")
    stated = only(KOBOLD + "\nrocminfo: Name: gfx1100")  # a target stated beats the name
    assert stated[5][0].startswith("gfx1100 is a target ROCm supports natively")
    both = only(KOBOLD.replace("rx 6600", "rx 6600 and an RX 7900 XTX"))
    assert both[1] == "possible"  # two named GPUs: which one failed is not said


GTX1080_WINDOWS = paste("c3-cuda-gpu-too-old--gtx1080ti-windows-torch291-cu130.txt")


def test_a_gtx_1080_ti_named_beside_no_kernel_image_gets_the_wheels_that_carry_sm61() -> None:
    kernel = ENTRY["cuda-no-kernel-image"]
    assert only(GTX1080_WINDOWS) == (
        "cuda-no-kernel-image", "likely", "host", kernel.fix,
        (ARCH_LIST, "pip install --force-reinstall torch==2.14.1 torchvision==0.29.1 "
                    "--index-url https://download.pytorch.org/whl/cu126"),
        ("The text names the GPU, GTX 1080 Ti (line 10): compute capability 6.1 (NVIDIA's "
         "CUDA GPUs list).",
         "Compute capability 6.1 (Maxwell/Pascal): PyTorch's CUDA 12.6 wheels carry sm_50 and "
         "sm_60 code (Maxwell and Pascal cards run it); the CUDA 12.8 and newer wheels do not, "
         "from torch 2.8 on."))
    # a GPU the current wheels carry: torch is not the one missing the kernel
    current = only(GTX1080_WINDOWS.replace("GTX 1080 Ti", "RTX 3090"))
    assert current[4:] == (kernel.commands, (
        "The text names the GPU, RTX 3090 (line 10): compute capability 8.6 (NVIDIA's CUDA "
        "GPUs list).",
        "PyTorch's current wheels carry code for 8.6: the kernel missing is in an extension or "
        "custom node, or in an old torch that a program bundles."))


# --- a version that says which build a package is --------------------------------------------

STRIX = paste("c3-hipblaslt--strix-halo-gfx1151-fallback-torch28-rocm71.txt")


def test_a_triton_whose_version_says_rocm_is_not_pypis_cuda_triton() -> None:
    fallback = ENTRY["hipblaslt-arch-fallback"]
    assert only(STRIX) == (
        "hipblaslt-arch-fallback", "likely", "host", fallback.fix, (),
        ("torch 2.8.0+rocm7.1.0.lw.git7a520360 (line 7).", "The GPU is gfx1151 (line 1)."))
    pypi = STRIX.replace("3.4.0+rocm7.1.0.gitf9e5bf54", "3.4.0")
    assert [e.key for e in explain_text(pypi)] == ["triton-cuda-on-rocm"]


BNB_OLD = paste("c3-bitsandbytes--centos-cuda-setup-failed-upgrade.txt")


def test_bitsandbytes_old_cuda_setup_is_an_upgrade_and_on_an_amd_gpu_the_rocm_build() -> None:
    assert only(BNB_OLD) == (
        "bitsandbytes-no-gpu-build", "likely", "bnb_cuda_setup",
        "This is the CUDA setup of a bitsandbytes older than 0.43, which found no library it "
        "could load: upgrade bitsandbytes (newer releases ship their GPU libraries in the "
        "wheel and say which backend they load), then run `python -m bitsandbytes`.",
        ("pip install -U bitsandbytes", "python -m bitsandbytes"),
        ("The text shows bitsandbytes' old CUDA setup.",))
    amd = only(BNB_OLD + "\nGPU: AMD Radeon RX 6900 XT")
    bnb = ENTRY["bitsandbytes-no-gpu-build"]
    assert amd[:5] == ("bitsandbytes-no-gpu-build", "likely", "host", bnb.fix, (
        "python -m bitsandbytes", "cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=gfx1030 -S . "
        "&& make && pip install ."))


# --- the frame that raised ---------------------------------------------------------------------

GDS = paste("c3-deepspeed--gds-builder-cuda-home-none-rocm.txt")


def test_a_none_cuda_home_inside_deepspeeds_op_builder_is_deepspeeds_and_elsewhere_not() -> None:
    deepspeed = ENTRY["deepspeed-rocm-build"]
    assert only(GDS) == (
        "deepspeed-rocm-build", "likely", "host", deepspeed.fix, deepspeed.commands,
        ("DeepSpeed's op builder reads torch's CUDA_HOME, which is None on ROCm (torch sets "
         "ROCM_HOME there): DeepSpeed pulls 6456 (the GDS builder) and 7224 fixed these "
         "builders; update DeepSpeed.",))
    own = GDS.replace("op_builder/gds.py", "mylib/paths.py").replace("CUDA_HOME", "DATA_DIR")
    result = diagnose(own)
    assert (result.verdict, result.explanations) == (NOT_GPU, [])
    assert result.error_line == ("TypeError: expected str, bytes or os.PathLike object, not "
                                 "NoneType")


# --- the system the text was written on --------------------------------------------------------

WSL = paste("c3-wsl--rocminfo-out-of-resources-rocm642-rx7800xt.txt")


def test_rocminfo_failing_under_wsl_gets_wsls_answer_and_on_linux_the_groups() -> None:
    entry = ENTRY["rocminfo-out-of-resources"]
    assert only(WSL) == (
        "rocminfo-out-of-resources", "likely", "wsl", entry.wsl_fix, entry.wsl_commands,
        ("This is WSL (the text shows 'WSL'): the fix is the wsl's.",))
    linux = WSL.replace("WSL environment detected.\n", "").replace("WSL 2 ", "")
    assert only(linux)[2:5] == ("host", entry.fix, entry.commands)


OLLAMA_WINDOWS = paste("c3-windows--ollama-invalid-device-function-override-ignored.txt")


def test_a_c_slash_path_and_an_ntstatus_code_are_windows_and_a_home_path_linux() -> None:
    assert read_facts(OLLAMA_WINDOWS).os == "windows"
    windows = ENTRY["invalid-device-function"].variants[0]
    assert only(OLLAMA_WINDOWS) == (
        "invalid-device-function", "possible", "windows", windows.fix, windows.commands,
        ("The log was written on Windows: the Windows fix.",
         "Possible: the text names no GPU target (gfx); `hipInfo` (the HIP SDK's) says which "
         "it is."))
    linux = (OLLAMA_WINDOWS.replace("C:/a/ollama", "/home/a/ollama")
             .replace("exit status 0xc0000409 ", ""))
    assert read_facts(linux).os == "linux"
    assert only(linux)[2] == "host"
    assert read_facts("see https://github.com/a/b and file:///tmp/x").os != "windows"


def test_found_no_nvidia_driver_beside_an_amd_gpu_is_a_cuda_torch_not_a_driver() -> None:
    text = "RuntimeError: Found no NVIDIA driver on your system."
    entry = ENTRY["cuda-no-driver"]
    assert only(text)[2:5] == ("host", entry.fix, entry.commands)
    amd = only(text + "\nI have an RX 7900 XTX")
    assert amd[2:4] == ("amd_paste", entry.variants[0].fix)
    assert "ZLUDA" in amd[3] and amd[5] == (
        "The text shows an AMD GPU: not an NVIDIA driver problem.",)


def test_the_remote_error_names_the_interface_to_set() -> None:
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, "
            "remote process exited or there was a network error, NCCL version 2.18.6")
    assert only(text)[4] == ("export NCCL_DEBUG=INFO", "ip -br addr",
                             "export NCCL_SOCKET_IFNAME=<interface>")


def test_torchs_own_gpu_warning_and_a_rocm_library_compile_error_are_gpu_stack_errors() -> None:
    warning = ("/opt/torch/cuda/__init__.py:87: UserWarning: Found GPU0 Quadro P1 which "
               "requires CUDA_VERSION >= 8000 for optimal performance")
    compile_error = ("/src/rocm_smi_lib/include/rocm_smi/rocm_smi_common.h:149:5: error: "
                     "'uintptr_t' does not name a type")
    for text in (warning, compile_error):
        assert diagnose(text).verdict == UNKNOWN_GPU
    own = "/home/me/app/main.cpp:10:5: error: 'uintptr_t' does not name a type"
    assert diagnose(own).verdict == NOT_GPU


def test_the_answers_rest_on_their_lines() -> None:
    [e] = explain_text(KOBOLD)
    assert answer(e)[0] == "no-binary-for-gpu" and e.line == 1
