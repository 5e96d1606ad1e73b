"""General fixes found while reading the eleventh collection (docs/explain.md), each read from a
real text and from the same text with the one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose, explain_text
from tests.explain_replay import host_for, keys, paste

CDI = paste("c11-cdi-spec-missing-uvm-nodes--podman-p100-torch-cuda-false.txt")


def test_a_cdi_spec_without_the_uvm_node_is_why_torch_sees_no_gpu() -> None:
    [e] = explain_text(CDI, host_for("nvidia-container"))
    assert (e.key, e.confidence) == ("torch-no-gpu", "likely")
    assert e.fix.text.startswith("Create the UVM device nodes on the host")
    assert e.fix.commands == ("ls -l /dev/nvidia-uvm*", "sudo nvidia-modprobe -u -c=0",
                              "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    # the same spec listing /dev/nvidia-uvm: nothing in it says why
    listed = CDI.replace("  - path: /dev/nvidiactl", "  - path: /dev/nvidiactl\n"
                                                     "  - path: /dev/nvidia-uvm")
    [e] = explain_text(listed, host_for("nvidia-container"))
    assert e.key == "torch-no-gpu" and e.fix.text.startswith("Run the checks")


BAKED = paste("c11-container-driver-lib-baked-in-image--lambda-stack-jammy-libnvidia-ml-file-exists"
              ".txt")


def test_driver_libraries_inside_the_image_block_the_toolkits_mount() -> None:
    [e] = explain_text(BAKED, host_for("nvidia"))
    assert (e.key, e.confidence) == ("container-image-driver-libs", "likely")
    assert "libnvidia-*" in e.fix.text
    # another mount error of the toolkit (a socket, nvidia-docker issue 1690) is not this one
    socket = ("nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/"
              "x/merged/run/nvidia-persistenced/socket: no such device or address: unknown.")
    result = diagnose(socket, None)
    assert "container-image-driver-libs" not in [e.key for e in result.explanations]
    assert result.verdict in (UNKNOWN_GPU, "recognized")


def test_any_rocm_library_the_loader_cannot_find_is_a_rocm_library_missing() -> None:
    text = paste("c11-rocm-library-missing--rx580-tensorflow-rocm-librccl-ld-library-path.txt")
    [e] = explain_text(text, None)
    assert e.key == "rocm-library-missing"
    assert "export LD_LIBRARY_PATH=/opt/rocm/lib:$LD_LIBRARY_PATH" in e.fix.commands
    assert keys("ImportError: librocfft.so.0: cannot open shared object file: No such file or "
                "directory")[0][0] == "rocm-library-missing"
    assert keys("ImportError: libfoo.so.1: cannot open shared object file: No such file") == []


def test_ncclsocket_connect_failures_name_the_interface() -> None:
    text = paste("c11-nccl-socket-wrong-interface--ddp-two-nodes-no-route-to-host.txt")
    [e] = explain_text(text, host_for("nvidia"))
    assert e.key == "nccl-socket-error"
    assert "export NCCL_SOCKET_IFNAME=<interface>" in e.fix.commands
    # without NCCL's last error line it is the generic NCCL error
    bare = "\n".join(ln for ln in text.splitlines() if "socketStartConnect" not in ln)
    assert keys(bare)[0] == ("nccl-error", "possible")


STREAM = paste("c11-igpu-visible-hip-stream-oom--framework16-780m-llama-server.txt")


def test_out_of_memory_creating_a_stream_is_doubted_and_names_the_igpu() -> None:
    [e] = explain_text(STREAM, host_for("amd"))
    assert (e.key, e.confidence) == ("cuda-out-of-memory", "possible")
    assert any("HIP_VISIBLE_DEVICES (llama.cpp issue 8618)" in n for n in e.notes)
    assert "export HIP_VISIBLE_DEVICES=<the card's index>" in e.fix.commands
    # an allocation that ran out is memory running out
    alloc = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
             "a total capacity of 23.65 GiB of which 1.02 GiB is free.")
    [e] = explain_text(alloc, None)
    assert e.confidence == "likely" and not any("iGPU" in n for n in e.notes)


def test_hipblaslt_finding_no_kernel_is_a_family_of_causes() -> None:
    text = paste("c11-hipblaslt-heuristic-regression--migraphx-sd21-navi.txt")
    assert keys(text) == [("hipblaslt-no-solution", "possible")]


def test_windows_gpu_dlls_and_tensorflows_cuda_init_are_gpu_errors_even_unknown() -> None:
    for name in ("c11-rocm-windows-wheel-dll-rename--therock-ci-amdhip64-cant-open-0x7e.txt",
                 "c11-wsl-windows-build-regression--insider-20226-cuda-devices-busy.txt"):
        result = diagnose(paste(name), None)
        assert (result.verdict, result.explanations) == (UNKNOWN_GPU, []), name
    other = "Failed to load game.dll: game.dll: Can't open: The specified module could not be found."
    assert diagnose(other, None).verdict == NOT_GPU
