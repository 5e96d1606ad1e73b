"""The facts explain reads from a paste before matching (rocmdoctor.explain.paste): whole real
pastes in, every fact they state asserted with its line; arbitrary text never raises."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmdoctor.explain.paste import (
    Fact,
    Frame,
    PasteFacts,
    is_amd_paste,
    is_nvidia_paste,
    read_facts,
)
from tests.helpers import fixture_text


def facts_of(name: str) -> PasteFacts:
    return read_facts(fixture_text("errors/" + name))


def kinds(facts: PasteFacts, *names: str) -> list[tuple[str, str, str, int]]:
    return [(f.kind, f.value, f.role, f.line) for f in facts.facts if f.kind in names]


def test_a_collect_env_paste_gives_target_torch_rocm_and_both_tritons() -> None:
    facts = facts_of("triton-cuda-on-rocm--vllm-mi300x-triton-330-beside-rocm-triton.txt")
    assert kinds(facts, "gfx", "torch", "library") == [
        ("torch", "2.7.0+rocm6.4.1.lw.git6fd40786", "gpu", 1),
        ("gfx", "gfx942", "gpu", 3),
        ("library", "pytorch-triton-rocm", "gpu", 5),
        ("torch", "2.7.0+rocm6.4.1.lw.git6fd40786", "gpu", 6),
        ("library", "triton", "gpu", 7)]
    assert facts.values("rocm") == ("6.4.1", "6.4")
    assert facts.os is None and is_amd_paste(facts) and not is_nvidia_paste(facts)


def test_nvidia_smi_gives_the_driver_and_the_cuda_it_supports() -> None:
    facts = facts_of("cuda-forward-compat--mistral-inference-driver-525-cuda12.txt")
    assert kinds(facts, "driver", "driver_cuda", "cuda") == [
        ("driver", "525.147.05", "gpu", 5), ("driver", "525.147.05", "gpu", 5),
        ("driver_cuda", "12.0", "gpu", 5)]
    assert is_nvidia_paste(facts) and not is_amd_paste(facts)


def test_a_capability_warning_gives_the_gpu_and_the_build_range() -> None:
    facts = facts_of("gpu-too-old--gb10-cc121-above-maximum-120-vllm.txt")
    assert kinds(facts, "capability", "cc_min", "cc_max") == [
        ("capability", "12.1", "gpu", 1), ("cc_min", "8.0", "build", 1),
        ("cc_max", "12.0", "build", 1)]
    assert facts.capability == (12, 1)


def test_older_wordings_of_the_capability_and_its_minimum() -> None:
    facts = facts_of("gpu-too-old--gt720-cc35-minimum-37-voice-changer.txt")
    assert kinds(facts, "capability", "cc_min") == [("capability", "3.5", "gpu", 1),
                                                    ("cc_min", "3.7", "build", 3)]


def test_a_windows_traceback_gives_windows_the_app_and_the_raising_frame() -> None:
    facts = facts_of("windows-torch-not-compiled-cuda--forge-classic-7900xt-conda-env.txt")
    assert facts.os == "windows"
    assert facts.first("os") == Fact(
        "os", "windows", 2, r'File "E:\sd-webui-forge-classic\launch.py", line 52, in <module>')
    assert facts.values("app") == ("stable-diffusion-webui",)
    assert facts.frame == Frame(
        r"C:\Users\*****\miniconda3\envs\neo\Lib\site-packages\torch\cuda\__init__.py", 403,
        "_lazy_init", "torch", 9)


def test_a_comfyui_traceback_raised_in_the_programs_own_file() -> None:
    facts = facts_of("hipblaslt-unsupported-arch--comfyui-clip-encode-traceback.txt")
    assert facts.os == "linux" and facts.values("library") == ("hipBLASLt",)
    assert facts.values("app") == ("ComfyUI",)
    assert facts.frame == Frame("/home/n/ComfyUI/comfy/sd.py", 125, "encode_from_tokens", None, 9)


def test_pci_ids_and_addresses_of_an_aer_log() -> None:
    facts = facts_of("pcie-link-errors--navi-upstream-bridge-badtlp-then-kiq-ring-fail.txt")
    assert facts.values("pci_id") == ("1002:1478", "8086:9a01")
    assert facts.values("pci_addr")[:3] == ("0000:00:01.0", "0000:01:00.0", "0000:03:00.0")


def test_targets_a_build_lists_are_not_the_gpus() -> None:
    text = ("export PYTORCH_ROCM_ARCH=gfx1030\n"
            "hipv4-amdgcn-amd-amdhsa--gfx906 - [code object targetID is amdgcn-amd-amdhsa--gfx906]\n"
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1201.dat\n"
            "HSA_OVERRIDE_GFX_VERSION=10.3.0 python main.py   # on a gfx120X-all index")
    facts = read_facts(text)
    assert kinds(facts, "gfx", "override") == [
        ("gfx", "gfx1030", "build", 1), ("gfx", "gfx906", "build", 2),
        ("gfx", "gfx906", "build", 2), ("gfx", "gfx1201", "gpu", 3),
        ("override", "10.3.0", "gpu", 4)]
    assert facts.gfx == ("gfx1201",)


def test_wsl_wins_over_the_windows_paths_it_shows() -> None:
    facts = read_facts("/mnt/c/Users/me/train.py\nLinux 5.15.153.1-microsoft-standard-WSL2")
    assert facts.os == "wsl"


def test_line_numbers_of_a_text_read_in_part() -> None:
    facts = read_facts("hello\nHIP error on gfx1100", numbers=(10, 4711))
    assert facts.first("gfx") == Fact("gfx", "gfx1100", 4711, "HIP error on gfx1100")


@given(st.text(max_size=500))
@settings(max_examples=300)
def test_any_text_gives_facts_and_never_raises(text: str) -> None:
    facts = read_facts(text)
    assert isinstance(facts, PasteFacts)
    lines = len(text.splitlines())
    assert all(1 <= f.line <= max(lines, 1) for f in facts.facts)


def test_a_windows_game_in_a_linux_kernel_log_is_linux() -> None:
    facts = facts_of("amdgpu-mes-hang--steam-machine-navi33-mode1-reset.txt")
    assert "WoWClassic.exe" in fixture_text(
        "errors/amdgpu-mes-hang--steam-machine-navi33-mode1-reset.txt")
    assert facts.os == "linux"
    assert read_facts("Loaded C:\\Games\\app.exe").os == "windows"
    assert read_facts("crash in game.exe").os == "windows"  # nothing says Linux


def test_a_rocm_version_alone_makes_a_paste_amd_even_beside_cuda_words() -> None:
    """No gfx target and no AMD GPU name, only a +rocm build or a rocm wheel: still AMD."""
    for text in ("torch 2.3.1+rocm6.0 CUDA available: True\n",
                 "RuntimeError: CUDA error: out of memory (built with rocm6.2 wheels)\n"):
        facts = read_facts(text)
        assert not facts.gfx and not facts.has("amd_gpu") and facts.has("rocm"), text
        assert is_amd_paste(facts) and not is_nvidia_paste(facts), text


def test_adjacent_string_literals_of_a_pasted_raise_line_are_one_message() -> None:
    from rocmdoctor.explain import RECOGNIZED, diagnose
    raised = 'raise RuntimeError("Distributed package doesn\'t have NCCL " "built in")\nnext\n'
    result = diagnose(raised)
    assert (result.verdict, [e.key for e in result.explanations]) == (
        RECOGNIZED, ["nccl-not-available"])
    assert result.explanations[0].line == 1
    # two literals with a comma between them are two strings: not joined
    assert diagnose(raised.replace('" "', '", "')).explanations == []


@pytest.mark.parametrize(("line", "verdict"), [
    (" rocm-hip-runtime : Depends: rocminfo (= 1.0.0.50400-72~22.04) but 5.0.0-1 is to be "
     "installed", "unknown-gpu-error"),
    (" cuda-drivers-535 : Depends: nvidia-driver-535 (>= 535.54.03) but it is not going to be "
     "installed", "unknown-gpu-error"),
    (" python3-foo : Depends: libbar (= 1.2) but 1.3 is to be installed", "not-gpu"),
    ("sh: 1: /opt/therock/bin/rocm_agent_enumerator: not found", "unknown-gpu-error"),
    ("bash: hipcc: command not found", "unknown-gpu-error"),
    ("bash: make: command not found", "not-gpu"),
])
def test_the_stacks_own_packages_and_programs_are_gpu_stack_errors(line: str,
                                                                 verdict: str) -> None:
    """A package manager refusing a ROCm, CUDA or NVIDIA package, or one of the stack's own
    programs not found, is a GPU-stack error even where no entry knows it; the same shapes
    about any other package or program are not."""
    from rocmdoctor.explain import diagnose
    result = diagnose("The following packages have unmet dependencies:\n" + line + "\n")
    assert result.verdict == verdict, (line, result.explanations)


def test_a_capability_written_as_sm_digits_is_major_and_minor() -> None:
    """"CUDA capability sm_86" is 8.6 and "sm_120" is 12.0, read the same as "8.6"."""
    assert read_facts("NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible"
                      ).values("capability") == ("8.6",)
    assert read_facts("GPU with CUDA capability sm_120 is not compatible").values(
        "capability") == ("12.0",)
    assert read_facts("compute capability: 7.5").values("capability") == ("7.5",)


@pytest.mark.parametrize(("package", "tracker", "repo"), [
    ("triton", "triton", "triton-lang/triton"),
    ("bitsandbytes", "bitsandbytes", "bitsandbytes-foundation/bitsandbytes"),
    ("flash_attn", "flash-attn", "Dao-AILab/flash-attention"),
    ("xformers", "xformers", "facebookresearch/xformers"),
    ("deepspeed", "DeepSpeed", "deepspeedai/DeepSpeed"),
    ("vllm", "vLLM", "vllm-project/vllm"),
    ("numpy", None, None),
])
def test_an_unknown_error_raised_inside_a_gpu_library_asks_that_librarys_tracker(
        package: str, tracker: Optional[str], repo: Optional[str]) -> None:
    from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose
    text = (f'Traceback (most recent call last):\n  File "/usr/lib/python3.11/site-packages/'
            f'{package}/core.py", line 10, in run\n    raise RuntimeError("x")\n'
            "RuntimeError: an odd thing happened here\n")
    result = diagnose(text)
    if tracker is None:  # not a GPU library: the program's own error
        assert (result.verdict, result.unknown) == (NOT_GPU, None)
        return
    query = "%22an+odd+thing+happened+here%22"
    assert result.verdict == UNKNOWN_GPU and result.unknown is not None
    assert result.unknown.searches == (
        (tracker, f"https://github.com/{repo}/issues?q={query}"),
        ("PyTorch", f"https://github.com/pytorch/pytorch/issues?q={query}"))


NO_BINARY_LINE = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"


@pytest.mark.parametrize(("text", "keys"), [
    # set for the one command that reproduces the error: a debugging run, not the answer
    ("HIP_LAUNCH_BLOCKING=1 AMD_LOG_LEVEL=3 python repro.py\n" + NO_BINARY_LINE,
     ["no-binary-for-gpu"]),
    # exported (or set in Python) to stay: a setting left on, answered beside the error
    ("export HIP_LAUNCH_BLOCKING=1\n" + NO_BINARY_LINE,
     ["left-on-hip-launch-blocking", "no-binary-for-gpu"]),
    ("os.environ['AMD_LOG_LEVEL'] = '4'\n" + NO_BINARY_LINE,
     ["left-on-amd-log-level", "no-binary-for-gpu"]),
    # no error in the text: the variable is all there is to answer
    ("AMD_LOG_LEVEL=4 python train.py\n", ["left-on-amd-log-level"]),
])
def test_a_debugging_variable_set_for_the_failing_run_is_not_the_answer(
        text: str, keys: list[str]) -> None:
    from rocmdoctor.explain import explain_text
    assert [e.key for e in explain_text(text)] == keys


@pytest.mark.parametrize(("text", "verdict"), [
    ("I am using a radeon instinct mi25, which is gfx900.\nDuring generation the display "
     "server and the gpu crash.\n", "unknown-gpu-error"),
    ("My RTX 3090 hangs after an hour of training.\n", "unknown-gpu-error"),
    ("During generation the display server crashes.\n", "not-gpu"),  # no GPU stack named
    ("On my RTX 3090 it crashes:\nValueError: bad shape (3, 4)\n", "not-gpu"),  # its own error
])
def test_a_gpu_failure_told_in_words_is_an_unknown_gpu_error(text: str, verdict: str) -> None:
    from rocmdoctor.explain import diagnose
    assert diagnose(text).verdict == verdict


@pytest.mark.parametrize(("line", "verdict"), [
    ("CMake Error at cmake/FindROCM.cmake:43 (message):", "unknown-gpu-error"),
    ("CMake Error at /usr/share/cmake/Modules/FindCUDAToolkit.cmake:12 (message):",
     "unknown-gpu-error"),
    ("CMake Error at cmake/FindBoost.cmake:43 (message):", "not-gpu"),
])
def test_cmake_failing_to_find_the_gpu_stack_is_a_gpu_stack_error(line: str,
                                                                  verdict: str) -> None:
    from rocmdoctor.explain import diagnose
    assert diagnose(line + "\n  Not found lib/'hip_hcc'\n").verdict == verdict


def test_nvidias_ptx_assembler_run_on_rocm_is_a_cuda_triton() -> None:
    from rocmdoctor.explain import explain_text
    ptxas = ("RuntimeError: Internal Triton PTX codegen error:\nptxas fatal   : Value 'sm_110' "
             "is not defined for option 'gpu-name'\n")
    assert [e.key for e in explain_text("ROCm Version: ROCm 6.0.0\n" + ptxas)] == [
        "triton-cuda-on-rocm"]
    assert "triton-cuda-on-rocm" not in [e.key for e in explain_text(
        "CUDA Version: 12.4\n" + ptxas)]


def test_nccl_finding_no_interface_is_that_not_an_internal_error() -> None:
    from rocmdoctor.explain import explain_text
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2588, "
            "internal error - please report this issue to the NCCL developers, NCCL version "
            "2.21.5\nncclInternalError: Internal check failed.\nLast error:\n")
    assert [e.key for e in explain_text(text)] == ["nccl-internal-error"]
    [found] = explain_text(text + "Bootstrap : no socket interface found\n")
    assert (found.key, found.fix.commands) == ("nccl-no-socket-interface", (
        "ip -br addr", "echo $NCCL_SOCKET_IFNAME", "export NCCL_SOCKET_IFNAME=<interface>"))


def test_the_gpu_of_a_capability_warning_is_named_without_the_words_before_it() -> None:
    from rocmdoctor.explain import explain_text
    warning = ("{}NVIDIA GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the "
               "current PyTorch installation.\n")
    for before in ("", "UserWarning: ", "I got this info :**"):
        [found] = explain_text(warning.format(before))
        assert found.notes[0] == "NVIDIA GeForce RTX 4090 is sm_89.", before


def test_no_cuda_device_under_wsl_names_the_linux_driver_that_shadows_windows() -> None:
    from rocmdoctor.explain import explain_text
    from rocmdoctor.kb.errors import KNOWN_MESSAGES
    entry = next(m for m in KNOWN_MESSAGES if m.key == "cuda-no-device")
    line = "CUDA Error CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected (cuInit)\n"
    [linux] = explain_text(line)
    assert (linux.fix.text, linux.fix.commands) == (entry.fix, entry.commands)
    [wsl] = explain_text("I run it under wsl2\n" + line)
    assert (wsl.fix.text, wsl.fix.commands) == (entry.wsl_fix, entry.wsl_commands)
