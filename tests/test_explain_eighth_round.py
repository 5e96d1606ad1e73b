"""General fixes found while reading the seventh collection's remaining misses and the eighth
collection (docs/explain.md), each read from its real text and from the same text with the
one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import explain_text
from tests.explain_replay import WSL_UNAME, paste

ROOTLESS = paste("c7-rootless-container--kfd-permission-buildah-subgid.txt")


def test_kfd_refused_in_a_rootless_engine_keeps_the_groups_not_adds_them() -> None:
    [e] = explain_text(ROOTLESS, None)
    assert e.key == "kfd-permission"
    assert "--group-add keep-groups" in e.fix.text and "/etc/subgid" in e.fix.text
    assert "podman run --group-add keep-groups --device /dev/kfd --device /dev/dri <image>" \
        in e.fix.commands
    # the same refusal without a rootless engine in sight: the groups of the user
    plain = "\n".join(ln for ln in ROOTLESS.splitlines()
                      if "buildah" not in ln and "podman" not in ln)
    [e] = explain_text(plain, None)
    assert e.key == "kfd-permission" and "keep-groups" not in e.fix.text
    assert e.fix.text.startswith("Add your user to the render and video groups")


NO_KFD = paste("c7-wsl-docker--no-dev-kfd-use-dxg.txt")


def test_docker_without_dev_kfd_under_wsl_passes_dev_dxg() -> None:
    [e] = explain_text(NO_KFD + WSL_UNAME, None)
    assert (e.key, e.environment) == ("container-no-dev-kfd", "wsl")
    assert "--device=/dev/dxg" in e.fix.text
    run = [c for c in e.fix.commands if c.startswith("docker run")]
    assert run == ["docker run -it --device=/dev/dxg -v /usr/lib/wsl/lib/libdxcore.so:"
                   "/usr/lib/libdxcore.so -v /opt/rocm/lib/librocdxg.so:/usr/lib/librocdxg.so "
                   "--cap-add=SYS_PTRACE --security-opt seccomp=unconfined --ipc=host "
                   "--shm-size 8G rocm/pytorch:latest"]
    # on a Linux docker host it is the driver that gives /dev/kfd
    [e] = explain_text(NO_KFD, None)
    assert "/dev/dxg" not in e.fix.text and "sudo modprobe amdgpu" in e.fix.commands


def _without(text: str, *marks: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not any(m in ln for m in marks))


SMI_WSL = paste("c8-amd-smi-wsl--driver-not-initialized.txt")
SMI_BUILTIN = paste("c8-amd-smi-builtin-amdgpu--debian13-custom-kernel.txt")


def test_amd_smi_finding_no_amdgpu_module_is_its_own_check_under_wsl() -> None:
    [e] = explain_text(SMI_WSL, None)
    assert (e.key, e.confidence) == ("smi-driver-check", "likely")
    assert "amd-smi is not supported" in e.fix.text
    assert e.fix.commands == ("rocminfo | grep -i gfx", "ls -l /dev/dxg")
    # the same lines with no WSL in sight, and no rocminfo: the driver may really be missing
    [e] = explain_text(SMI_BUILTIN, None)
    assert (e.key, e.confidence) == ("smi-driver-check", "possible")
    assert e.fix.text.startswith("Ask rocminfo: if it lists the GPU")
    # rocminfo listing a GPU in the same text: the driver works, amd-smi's check is wrong
    [e] = explain_text(SMI_BUILTIN + "\n  Name:                    gfx1100\n", None)
    assert (e.key, e.confidence) == ("smi-driver-check", "likely")
    assert any("the driver works, and amd-smi's own check is what is wrong" in n
               for n in e.notes)
    # rocminfo's own "ROCk module is NOT loaded" beside it: the driver is not loaded
    assert [x.key for x in explain_text(SMI_BUILTIN + "\nROCk module is NOT loaded\n",
                                        None)] == ["rock-not-loaded"]


BNB = paste("c8-bitsandbytes-rocm-version-name--almalinux-rx9070xt.txt")


def test_bitsandbytes_missing_the_rocm_library_of_torchs_version_names_bnb_rocm_version(
        ) -> None:
    [e] = explain_text(BNB, None)
    assert e.key == "bitsandbytes-no-gpu-build"
    assert "BNB_ROCM_VERSION" in e.fix.text and "libbitsandbytes_rocmNN" in e.fix.text
    assert "export BNB_ROCM_VERSION=<digits of the library built, e.g. 64>" in e.fix.commands
    # the CPU library missing alone: the package has no ROCm build
    [e] = explain_text(_without(BNB, "ROCm binary at"), None)
    assert e.key == "bitsandbytes-no-gpu-build" and "BNB_ROCM_VERSION" not in e.fix.text


def test_cudarc_finding_no_libcuda_is_the_driver_library_on_the_loader_path() -> None:
    text = paste("c8-libcuda-missing--wsl-cudarc-mistralrs.txt")
    [e] = explain_text(text + WSL_UNAME, None)
    assert (e.key, e.environment) == ("libcuda-missing", "wsl")
    assert e.fix.commands[0] == "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"
    assert explain_text(_without(text, "Unable to find cuda lib"), None) == []


def test_a_gpu_hang_and_a_torch_gpu_dll_are_gpu_errors_not_known_ones() -> None:
    from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose

    hang = paste("c8-gpu-hang-gfx1103-override--comfyui-780m-fedora.txt")
    assert diagnose(hang).verdict == UNKNOWN_GPU
    assert diagnose(_without(hang, "HW Exception")).verdict == NOT_GPU
    dll = paste("c8-zluda-windows-dll--comfyui-caffe2-nvrtc.txt")
    assert diagnose(dll).verdict == UNKNOWN_GPU
    # torch's CPU library failing the same way is not the GPU stack
    assert diagnose(dll.replace("caffe2_nvrtc.dll", "c10.dll")).verdict == NOT_GPU


def test_kfd_refused_is_why_hip_saw_no_device() -> None:
    text = paste("c8-kfd-permission-rootless--distrobox-strix-halo-toolbox.txt")
    assert [e.key for e in explain_text(text, None)] == ["kfd-permission"]
    assert [e.key for e in explain_text(_without(text, "/dev/kfd"), None)] == ["hip-no-device"]


APU_OOM = paste("c8-hip-oom-apu-gtt-cap--therock-gfx1151-evo-x2.txt")


def test_hip_oom_on_an_apu_that_hip_sees_a_fraction_of_is_the_carve_out_not_the_batch() -> None:
    [e] = explain_text(APU_OOM, None)
    assert e.key == "hip-out-of-memory"
    assert "carve-out to its minimum" in e.fix.text and "GTT" in e.fix.text
    # without the kernel log's VRAM size, it is an allocation larger than the GPU
    [e] = explain_text(_without(APU_OOM, "VRAM"), None)
    assert e.fix.text.startswith("Lower the batch size")


PROBE = paste("c8-amdgpu-fatal-init--mi210-error12-bios.txt")


def test_amdgpu_probe_failing_with_enomem_is_the_bios_bar_settings() -> None:
    [e] = explain_text(PROBE, None)
    assert e.key == "amdgpu-fatal-init"
    assert e.fix.text.startswith("Enable Above 4G Decoding and Resizable BAR")
    [e] = explain_text(PROBE.replace("error -12", "error -22"), None)
    assert "Above 4G" not in e.fix.text and "firmware" in e.fix.text


TE = paste("c8-invalid-device-function--transformerengine-ck-mi300x.txt")


def test_invalid_device_function_inside_an_extension_rebuilds_that_extension() -> None:
    [e] = explain_text(TE, None)
    assert e.key == "invalid-device-function"
    assert e.fix.text.startswith("Rebuild transformer_engine with code for this GPU's gfx target")
    assert "export PYTORCH_ROCM_ARCH=<that gfx target>" in e.fix.commands
    # a target ROCm supports named in the text: the same, for that target
    [e] = explain_text(TE + "\nGPU: gfx942\n", None)
    assert e.fix.text.startswith("Rebuild transformer_engine with gfx942 code")
    # raised in torch itself: torch's build
    in_torch = TE.replace("transformer_engine/pytorch/attention.py", "torch/nn/functional.py")
    in_torch = in_torch.replace("transformer_engine/pytorch/cpp_extensions/fused_attn.py",
                                "torch/nn/functional.py")
    [e] = explain_text(in_torch + "\nGPU: gfx942\n", None)
    assert "Rebuild" not in e.fix.text and "torch" in e.fix.text
