"""The causes the seventh collection of real pastes taught (docs/explain.md, "A seventh
collection"), each read from its real text and from the same text with the one fact that
decides it changed: bitsandbytes finding no libcuda, a GPU the kernel's KFD refused under
rocminfo's failures, Docker Desktop's VM, the Xids and driver starts with several causes,
ollama's older "is not supported by" and CTranslate2's missing cuBLAS DLL."""

from __future__ import annotations

from rocmdoctor.explain import explain_text
from rocmdoctor.kb.errors import GENERIC_KEYS
from tests.explain_replay import WSL_UNAME, keys, paste
from tests.test_explain_reasoning import only

BNB_WSL = paste("c7-wsl-cuda--bitsandbytes-libcuda-not-found.txt")


def test_bitsandbytes_finding_no_libcuda_is_the_driver_library_not_its_build() -> None:
    [e] = explain_text(BNB_WSL + WSL_UNAME, None)
    assert (e.key, e.environment) == ("libcuda-missing", "wsl")
    assert e.fix.commands[0] == "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"
    # without that line it is bitsandbytes' CPU library again
    cpu = "\n".join(ln for ln in BNB_WSL.splitlines() if "libcuda.so not found" not in ln)
    assert [k for k, _ in keys(cpu)] == ["bitsandbytes-no-gpu-build"]


NAVI14 = paste("c7-rocm-kfd--navi14-missing-supported-devices.txt")


def test_a_gpu_kfd_refused_is_the_root_of_rocminfos_failures() -> None:
    assert [k for k, _ in keys(NAVI14)] == ["kfd-not-supported"]
    # without the kernel's lines, rocminfo's own failures are what the text shows
    alone = NAVI14.split("$ sudo dmesg")[0]
    assert [k for k, _ in keys(alone)] == ["kfd-enomem", "container-kfd-groups"]


def test_nvidia_container_cli_without_libnvidia_ml_names_docker_desktops_vm() -> None:
    key, confidence, _, fix, commands, _ = only(
        paste("c7-nvidia-docker--docker-desktop-libnvidia-ml.txt"))
    assert (key, confidence) == ("nvidia-container-library", "likely")
    assert "not Docker Desktop's VM" in fix and "docker context ls" in commands


def test_xids_and_driver_starts_with_several_causes_are_only_possible() -> None:
    xids = paste("c7-nvidia-xid--faulty-gpu-xid31-xid43.txt")
    assert keys(xids) == [("nvidia-xid-43", "possible"), ("nvidia-xid-31", "possible")]
    assert "mask it with CUDA_VISIBLE_DEVICES" in explain_text(xids, None)[0].fix.text
    assert {"nvidia-xid-13", "nvidia-xid-31", "nvidia-xid-43", "nvidia-init-failed"} <= \
        GENERIC_KEYS
    assert "nvidia-xid-79" not in GENERIC_KEYS  # fallen off the bus has one cause
    start = explain_text(paste("c7-nvidia-driver--5090-no-devices-rebar.txt"), None)
    assert [(e.key, e.confidence) for e in start] == [("nvidia-init-failed", "possible")]
    assert "Above 4G Decoding and Resizable BAR" in start[0].fix.text


OLLAMA = paste("c7-ollama-apu--gfx1103-780m-not-supported-docker.txt")


def test_ollamas_older_wording_names_the_target_and_the_image_to_pull() -> None:
    key, confidence, where, fix, commands, _ = only(OLLAMA)
    assert (key, confidence, where) == ("ollama-amdgpu-not-supported", "likely", "container")
    assert fix.startswith("Pull a newer ollama/ollama:rocm image (its bundled ROCm libraries "
                          "lack gfx1103)")
    assert commands == ("docker pull ollama/ollama:rocm",)
    # on the host, the same line gets ollama's own update
    host = OLLAMA.replace("$ docker run -ti --device /dev/kfd --device /dev/dri -v "
                          "ollama:/root/.ollama -p 11434:11434 --name ollama ollama/ollama:rocm",
                          "$ ollama serve")
    assert only(host)[4] == ("curl -fsSL https://ollama.com/install.sh | sh",)


def test_ctranslate2s_missing_cublas_dll_is_a_cuda_library_on_windows() -> None:
    key, confidence, _, fix, commands, notes = only(
        paste("c7-windows-cuda--cublas64-11-dll-missing.txt"))
    assert (key, confidence) == ("cuda-library-missing", "likely")
    assert fix.startswith("Install the CUDA libraries of the version the DLL's name gives")
    assert commands == ("where cublas64*.dll cudnn*.dll",)
    assert keys("RuntimeError: Library cufoo64_11.dll is not found or cannot be loaded") != [
        ("cuda-library-missing", "likely")]
