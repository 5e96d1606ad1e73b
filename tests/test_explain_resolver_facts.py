"""The resolvers that read numbers and names out of the message itself (the driver's found
version, a CUDA error number, NCCL's last error, the DKMS package and kernel, the web UI's
exit code, the GPU's sm_XX, an override written as a gfx name, a visibility mask): for each a
real paste or a real message, and the same text with that one fact changed, with the answers
each gets."""

from __future__ import annotations

from typing import Optional

import pytest

from rocmdoctor.explain import explain_text
from rocmdoctor.explain.targets import newest_known
from tests.explain_replay import paste
from tests.test_explain_fixtures import ENTRY
from tests.test_explain_reasoning import ARCH_LIST, only

NVIDIA_SMI = "nvidia-smi"
TORCH_BUILD = ('python -c "import torch; print(torch.__version__, torch.version.cuda, '
               'torch.version.hip, torch.cuda.is_available())"')


def test_the_found_version_says_which_cuda_the_driver_supports() -> None:
    text = paste("cuda-driver-too-old--fastfcn-found-9000-traceback.txt")
    assert only(text)[4:] == ((NVIDIA_SMI, TORCH_BUILD),
                              ("'found version 9000': this driver supports CUDA 9.0 at most.",))
    newer = only(text.replace("found version 9000", "found version 11040"))
    assert newer[5] == ("'found version 11040': this driver supports CUDA 11.4 at most.",)


GETDEVICECOUNT = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
                  "functions before calling NumCudaDevices() that might have already set an "
                  "error? Error {}")


def test_the_cuda_error_number_decides_what_getdevicecount_means() -> None:
    mismatch = only(GETDEVICECOUNT.format("803: system has unsupported display driver / cuda "
                                          "driver combination"))
    assert mismatch[4:] == ((NVIDIA_SMI,), (
        "Error 803 (system has unsupported display driver / cuda driver combination): the "
        "display driver and the CUDA driver versions differ: reboot after a driver update, or "
        "remove a forward-compatibility package that does not match.",))
    fabric = explain_text(GETDEVICECOUNT.format("802: system not yet initialized"))
    assert [e.key for e in fabric] == ["cuda-fabric-manager"]


def test_nccls_last_error_is_quoted_and_without_it_nothing_is_made_up() -> None:
    text = paste("nccl-unhandled-cuda-error--nccl-2.20.5-invalid-argument.txt")
    assert only(text)[5] == ("NCCL's last error: Cuda failure 1 'invalid argument'.",)
    cut = text.replace("[rank7]: Cuda failure 1 'invalid argument'", "")
    assert only(cut)[5] == ()


def test_dkms_names_the_package_and_the_kernel_it_failed_for() -> None:
    text = paste("dkms-build-failed--amdgpu-5.18-on-kernel-6.5.txt")
    assert only(text)[5] == ("amdgpu 5.18.13-1538762.20.04 did not build for kernel "
                             "6.5.0-41-generic.",)
    other = text.replace("6.5.0-41-generic", "6.8.0-45-generic")
    assert only(other)[5] == ("amdgpu 5.18.13-1538762.20.04 did not build for kernel "
                              "6.8.0-45-generic.",)


def test_the_web_uis_exit_code_134_is_an_abort_and_1_is_not() -> None:
    text = paste("hip-no-binary-for-gpu--docker-rx580-error-code-134.txt")
    assert only(text)[5] == (
        "Error code 134 is SIGABRT: the test process aborted instead of answering False; with "
        "a ROCm torch that is the HIP runtime finding no code for the GPU.",)
    assert only(text.replace("Error code: 134", "Error code: 1"))[5] == ()


def test_the_gpus_sm_decides_the_wheels_new_blackwell_against_old_kepler() -> None:
    text = paste("cuda-arch-not-in-build--rtx5060ti-container-cu128-fix.txt")
    blackwell = only(text)
    assert blackwell[4] == ("pip install --force-reinstall torch torchvision --index-url "
                            "https://download.pytorch.org/whl/cu128",)
    kepler = only(text.replace("NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120",
                               "Tesla K40m with CUDA capability sm_35"))
    assert kepler[4] == (ARCH_LIST,)
    assert kepler[5][0] == ("Tesla K40m is sm_35; this torch has code for sm_50 sm_60 sm_70 "
                            "sm_75 sm_80 sm_86 sm_90.")
    assert kepler[5][1].startswith("Compute capability 3.5 (Kepler): torch 1.2.0 is the last "
                                   "release whose official binaries carry sm_35")


def test_an_override_written_as_a_gfx_name_gets_its_own_number() -> None:
    assert only("export HSA_OVERRIDE_GFX_VERSION=gfx1030")[4:] == (
        ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",), ("gfx1030 is written 10.3.0.",))
    assert only("export HSA_OVERRIDE_GFX_VERSION=gfx1100")[4:] == (
        ("export HSA_OVERRIDE_GFX_VERSION=11.0.0",), ("gfx1100 is written 11.0.0.",))


def test_a_visibility_mask_in_the_text_is_unset_and_without_one_only_listed() -> None:
    error = "RuntimeError: CUDA error: invalid device ordinal"
    listing = ('python -c "import torch; print(torch.cuda.device_count())"',
               "env | grep VISIBLE_DEVICES")
    assert only(error)[4:] == (listing, ())
    assert only("export CUDA_VISIBLE_DEVICES=1\n" + error)[4:] == (
        ("unset CUDA_VISIBLE_DEVICES", *listing), ("Set: CUDA_VISIBLE_DEVICES=1.",))


LINK_NOTE = ("The linker (`-lcuda`, line 1) looks for libcuda.so with no version; the NVIDIA "
             "driver installs libcuda.so.1, and the unversioned name is only a link that its "
             "development files add.")
NO_NVIDIA = ("Possible: the text shows no NVIDIA GPU, driver or CUDA build; on a ROCm machine a "
             "package built for CUDA (a CUDA triton) asks for libcuda.")


def test_the_linker_asking_for_lcuda_gets_the_link_and_the_loader_not() -> None:
    text = paste("c3-libcuda--inductor-ld-cannot-find-lcuda-runfile.txt")
    assert only(text) == (
        "libcuda-missing", "possible", "host",
        "Where the NVIDIA driver is installed (ldconfig lists libcuda.so.1), add the "
        "unversioned link beside it; without an NVIDIA GPU run the program on the CPU.",
        ("ldconfig -p | grep libcuda", "sudo ln -s /usr/lib/x86_64-linux-gnu/libcuda.so.1 "
         "/usr/lib/x86_64-linux-gnu/libcuda.so"), (LINK_NOTE, NO_NVIDIA))
    # The same library missing when a program starts is the loader's: the driver, not a link.
    loader = only("OSError: libcuda.so.1: cannot open shared object file: No such file or "
                  "directory")
    assert loader == (
        "libcuda-missing", "possible", "host",
        "Install the NVIDIA driver; without an NVIDIA GPU run the program on the CPU.",
        (NVIDIA_SMI, "ldconfig -p | grep libcuda"), (NO_NVIDIA,))
    # Under WSL the linker's answer is WSL's driver folder.
    wsl = only(text + "\nLinux DESKTOP-1 5.15.153.1-microsoft-standard-WSL2 #1 SMP x86_64\n")
    assert wsl[2] == "wsl" and wsl[4][0].startswith("export LD_LIBRARY_PATH=/usr/lib/wsl/lib")


def test_rocminfo_failing_on_a_gpu_rocm_never_supported_says_so_before_the_groups() -> None:
    text = paste("c3-rocminfo--rx560-laptop-rocm53-unsupported.txt")
    entry = ENTRY["rocminfo-out-of-resources"]
    assert only(text) == (
        "rocminfo-out-of-resources", "likely", "host",
        "gfx803 is not a GPU ROCm supports: the runtime fails to open it this way whatever the "
        "groups. Use a GPU on ROCm's support list (or a ROCm release old enough to have "
        "supported it); the groups below matter only then.", entry.commands,
        ("The text names the GPU, Radeon RX560 (line 9): its target is gfx803 (ROCm's and "
         "LLVM's GPU lists).",
         f"No ROCm release from 6.0 to {newest_known()} (those this table knows) lists gfx803 as "
         "supported: its libraries need not carry code for it. No override is known to run it."))
    # A GPU ROCm supports, or one an override runs, keeps the permissions story.
    for card in ("AMD Radeon RX 7900 XTX", "AMD Radeon RX 6600"):
        assert only(text.replace("AMD Radeon RX560", card))[3:5] == (entry.fix, entry.commands)
    # No GPU named: nothing is assumed.
    assert only(text.replace("AMD Radeon RX560", ""))[3:] == (entry.fix, entry.commands, ())


def test_inside_a_container_the_render_group_goes_in_by_its_host_number() -> None:
    from tests.explain_replay import host_for

    text = paste("c3-container--vllm-toolbox-no-hip-gpus-render-gid.txt")
    inside = only(text, host_for("amd-container"))
    # The image's /etc/group need not have the host's render number (ROCm/ROCm-docker#116).
    assert inside[2] == "container" and inside[4][0] == (
        "docker run --device=/dev/kfd --device=/dev/dri --group-add video --group-add "
        "$(getent group render | cut -d: -f3) --security-opt seccomp=unconfined <image>")
    assert only(text, host_for("amd"))[2] == "host"


def test_a_graph_file_left_set_is_the_cause_of_ncclsystemerror_in_the_text_or_here() -> None:
    from tests.explain_replay import host_for

    text = paste("c3-nccl--system-error-graph-file-set-azure.txt")
    fix = ("Unset NCCL_GRAPH_FILE (in the job's environment, or its line in /etc/nccl.conf) "
           "and run again.")
    commands = ("unset NCCL_GRAPH_FILE", "grep -s NCCL_GRAPH_FILE /etc/nccl.conf")

    def note(value: str, where: str) -> str:
        return (f"NCCL_GRAPH_FILE={value} is set {where}: NCCL then builds its rings from that "
                f"file instead of this machine's topology, which fails when the file is another "
                f"machine's (NVIDIA/nccl issue 1240: unsetting it fixed the error; it is not "
                f"meant to be set in production).")

    # NCCL's INFO line names the variable: that is the cause, and the answer is sure of it.
    assert only(text) == ("nccl-error", "likely", "host", fix, commands,
                          (note("/opt/microsoft/ncv4/graph.xml", "in the text"),))
    alone = text.splitlines()[0]
    entry = ENTRY["nccl-error"]
    assert only(alone) == ("nccl-error", "possible", "host", entry.fix, entry.commands,
                           ("Possible: this message has more than one cause and the text does "
                            "not say which.",))
    exported = only("export NCCL_GRAPH_FILE=/opt/g.xml\n" + alone)
    assert exported[1] == "likely" and exported[5] == (note("/opt/g.xml", "in the text"),)
    here = only(alone, host_for("nvidia", {"NCCL_GRAPH_FILE": "/etc/graph.xml"}))
    assert here == ("nccl-error", "likely", "host", fix, commands,
                    (note("/etc/graph.xml", "on this machine"),))


def test_a_bf16_product_cublas_refuses_is_the_old_gpus_and_a_new_gpu_doubts_it() -> None:
    text = paste("cublas-bf16-unsupported--mineru-tesla-m40-windows.txt")
    entry = ENTRY["cublas-bf16-unsupported"]
    assert only(text) == (
        "cublas-bf16-unsupported", "likely", "host", entry.fix, entry.commands,
        ("The text names the GPU, M40 (line 1): compute capability 5.2 (NVIDIA's CUDA "
         "GPUs list).",
         "Compute capability 5.2 (line 1): a GPU older than Volta, whose cuBLAS has no bf16 "
         "product."))
    newer = only(text.replace("M40", "RTX 4090"))
    assert newer[:2] == ("cublas-bf16-unsupported", "possible") and newer[5][-1] == (
        "Possible: compute capability 8.9 (line 1) is one whose cuBLAS has bf16 products as "
        "far as the reports go; another cause (shape, library version) is as likely.")
    # a capability read by its major number: 8.0 is newer than Volta although its minor is 0
    a100 = only(text.replace("M40", "A100"))
    assert a100[:2] == ("cublas-bf16-unsupported", "possible") and a100[5][-1].startswith(
        "Possible: compute capability 8.0 (line 1) is one whose cuBLAS has bf16 products")
    unnamed = only(text.splitlines()[1])
    assert unnamed[1] == "possible" and unnamed[5] == (
        "Possible: the text names no GPU; `nvidia-smi --query-gpu=name,compute_cap "
        "--format=csv` shows its compute capability (cuBLAS has bf16 products from Turing, "
        "7.5, on).",)
    # An fp16 product refused is not this entry's.
    assert [e.key for e in explain_text(text.replace("CUDA_R_16BF", "CUDA_R_16F"))] != [
        "cublas-bf16-unsupported"]


def test_a_gpu_named_against_cjk_text_is_still_read() -> None:
    from rocmdoctor.explain.paste import read_facts

    facts = read_facts("我的显卡是RX 7900 XTX，报错了\n旧显卡如M40出现")
    assert [(f.value, f.line) for f in facts.all("gfx", role="name")] == [("gfx1100", 1)]
    assert [(f.value, f.line) for f in facts.all("capability", role="name")] == [("5.2", 2)]


def test_pytorch_holding_four_fifths_of_the_gpu_is_a_workload_too_big() -> None:
    """21.65 of 23.98 GiB allocated by PyTorch (90 %): the workload does not fit; at 9.65 GiB
    (40 %) that is not the story, and no such note is given."""
    text = paste("hip-out-of-memory--z-image-24gib-card.txt")
    held = ("PyTorch itself holds 21.65 GiB of 23.98 GiB: the workload does not fit this GPU "
            "as it is; make it smaller.")
    assert only(text)[5] == (held,)
    assert only(text.replace("21.65 GiB is allocated", "19.19 GiB is allocated"))[5] == (
        held.replace("21.65", "19.19"),)  # 80.0 % of the card: the edge itself
    less = only(text.replace("21.65 GiB is allocated", "9.65 GiB is allocated"))
    assert not any("PyTorch itself holds" in n for n in less[5]), less[5]


@pytest.mark.parametrize(("code", "message", "keys", "note"), [
    ("803", "system has unsupported display driver / cuda driver combination",
     ["cuda-getdevicecount"], "Error 803 (system has unsupported display driver / cuda driver "
     "combination): the display driver and the CUDA driver versions differ: reboot after a "
     "driver update, or remove a forward-compatibility package that does not match."),
    ("100", "no CUDA-capable device is detected", ["cuda-getdevicecount", "cuda-no-device"],
     "Error 100 (no CUDA-capable device is detected): no CUDA-capable device was detected."),
    ("999", "unknown error", ["cuda-getdevicecount"], "Error 999 (unknown error)."),
    ("804", "forward compatibility was attempted on non supported HW",
     ["cuda-forward-compat-unsupported"], None),
    ("802", "system not yet initialized", ["cuda-fabric-manager"], None),
])
def test_cudagetdevicecounts_code_is_named_with_its_meaning(code: str, message: str,
                                                           keys: list[str],
                                                           note: Optional[str]) -> None:
    """The code cudaGetDeviceCount() failed with, with what it means where the codes list has
    it; 802 and 804 are their own entries' (the generic one yields to them)."""
    text = paste("fresh-cuda-803--easydiffusion-gtx1070-needs-recent-driver.txt").replace(
        "Error 803: system has unsupported display driver / cuda driver combination",
        f"Error {code}: {message}")
    found = explain_text(text)
    assert [e.key for e in found] == keys
    assert found[0].notes == ((note,) if note else ())


def test_bitsandbytes_without_a_gpu_build_doubts_rocms_fix_where_the_text_shows_no_stack() -> None:
    line = "UserWarning: The installed version of bitsandbytes was compiled without GPU support.\n"
    entry = ENTRY["bitsandbytes-no-gpu-build"]
    assert only(line) == ("bitsandbytes-no-gpu-build", "possible", "host", entry.fix,
                          entry.commands, ("Possible: the text shows neither ROCm nor CUDA; the "
                                           "fix below is ROCm's.",))
    rocm = only(line + "torch 2.3.0+rocm6.0\n")
    assert rocm[1] == "likely" and rocm[5] == ()


def test_torch_seeing_no_gpu_is_answered_with_the_checks_and_stands_back_for_a_cause() -> None:
    """`print(torch.cuda.is_available())` then `False` (as pasted in ROCm/hip issue 3465), or
    collect_env's "Is CUDA available: False", alone: the checks that tell why; beside a message
    that names the cause, that message's answer alone."""
    entry = ENTRY["torch-no-gpu"]
    asked = '$ python -c "import torch; print(torch.cuda.is_available())"\nFalse\n'
    for text in (asked, "Is CUDA available: False\n"):
        assert only(text) == ("torch-no-gpu", "likely", "host", entry.fix, entry.commands, ())
    assert [e.key for e in explain_text(asked + "RuntimeError: No HIP GPUs are available\n")
            ] == ["hip-no-gpus-available"]


def test_a_queue_aborted_by_a_hardware_exception_points_at_the_kernels_own_message() -> None:
    line = (":0:rocdevice.cpp            :2778: 1958784824956 us: 3375 : [tid:0x7f9943fff640] "
            "Callback: Queue 0x7f9840200000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: "
            "An HSAIL operation resulted in a hardware exception. code: 0x1016\n")
    entry = ENTRY["hsa-exception"]
    assert only(line)[:5] == ("hsa-exception", "possible", "host", entry.fix, entry.commands)
    assert entry.fix == ("Look above this line for the kernel's own message (an assertion); "
                         "rerun once with AMD_SERIALIZE_KERNEL=3 to find the kernel.")


def test_xids_the_generic_entry_reads_are_named_with_their_meanings() -> None:
    """An Xid the kernel-log catalogue has no entry for (8) comes first: the generic entry
    names every Xid of the text, each with its meaning where the table has it."""
    text = ("[ 100.1] NVRM: Xid (PCI:0000:01:00): 8, pid=1234, name=python, Channel 00000010\n"
            "[ 200.2] NVRM: Xid (PCI:0000:01:00): 13, pid=1234, name=python, Graphics SM Warp "
            "Exception\n")
    found = explain_text(text)
    assert [(e.key, e.notes) for e in found] == [
        ("nvidia-xid", ("Xid 8: look it up in NVIDIA's Xid catalog.",
                        "Xid 13: Graphics Engine Exception: a kernel faulted (usually the "
                        "program, e.g. an out-of-range access); restart the application.")),
        # Xid 13 is the program's, the driver's or the GPU's by NVIDIA's catalog: possible
        ("nvidia-xid-13", ("Possible: this message has more than one cause and the text does "
                           "not say which.",))]


def test_every_xid_meaning_can_be_reached() -> None:
    """The generic Xid entry yields to some codes' own entries: the table holds none of
    those (its meaning would never be shown)."""
    from rocmdoctor.kb.errors import KNOWN_MESSAGES, XID_MEANINGS
    generic = next(m for m in KNOWN_MESSAGES if m.key == "nvidia-xid")
    assert [c for c in XID_MEANINGS if f"nvidia-xid-{c}" in generic.yields_to] == []
