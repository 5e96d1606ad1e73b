"""rocmdoctor explain: real error captures, settings that do not exist, machine-specific answers.

Expected answers take the cause and fix prose from the knowledge table (rocmdoctor.kb.errors)
and spell out everything that is decided per message: which entries match, the line, the
facts from the message or the machine, the commands, the confirming check and the source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rocmdoctor.cli.explain import NOTHING, explain_command
from rocmdoctor.explain import Explanation, explain_text, render_explanations
from rocmdoctor.host.snapshot import SnapshotHost, save_snapshot
from rocmdoctor.kb.errors import KNOWN_MESSAGES
from rocmdoctor.kb.torch_wheels import targets_of_index
from rocmdoctor.model import Fix
from tests.helpers import REAL, fixture_text, make_snapshot

ENTRY = {m.key: m for m in KNOWN_MESSAGES}
CAPTURED = Path(__file__).parent / "fixtures" / "captured"


def expect(key: str, matched: str, notes: tuple[str, ...] = (),
           commands: Optional[tuple[str, ...]] = None,
           needs_root: Optional[bool] = None, line: int = 1,
           confidence: str = "likely", fix: Optional[str] = None) -> Explanation:
    e = ENTRY[key]
    cmds = e.commands if commands is None else commands
    root = e.needs_root if needs_root is None else needs_root
    return Explanation(e.key, e.title, e.kind, matched, e.cause,
                       Fix(e.fix if fix is None else fix, cmds, root, e.needs_relogin),
                       e.check, e.source, notes,
                       confidence=confidence, line=line)


GENERIC_NOTE = "Possible: this message has more than one cause and the text does not say which."


def captured_text(name: str) -> str:
    return (CAPTURED / name).read_text(encoding="utf-8").split("\n#---\n", 1)[1]


def probe(torch: str, hip: Optional[str], arch: Optional[tuple[str, ...]] = None,
          vision: Optional[str] = None) -> dict[str, Any]:
    packages = {"torch": torch, **({"torchvision": vision} if vision else {})}
    return {"executable": "python3", "version": "3", "packages": packages,
            "torch": {"imported": True, "error": None, "version": torch, "hip": hip,
                      "cuda": None, **({"arch_list": list(arch)} if arch else {})}}


# --- real error captures, no machine context ----------------------------------------------


def test_ring_timeout_and_gpu_reset_from_dmesg() -> None:
    text = fixture_text("errors-dmesg-amdgpu-ring-sdma0-timeout-gpu-reset-smu-gfx1030.txt")
    # a hung job has many causes (driver, firmware, clocks, an unsupported GPU): `possible`
    assert explain_text(text) == [expect(
        "amdgpu-ring-timeout", "May 11 13:59:53 crash kernel: [drm:amdgpu_job_timedout "
        "[amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=5509, emitted seq=5512", line=2,
        notes=(GENERIC_NOTE,), confidence="possible")]


def test_mes_hang_replaces_the_generic_gpu_reset() -> None:
    text = fixture_text("errors-dmesg-mes-failed-to-respond-remove-queue-gfx1103-hsa-override.txt")
    assert "GPU reset begin!" in text
    assert explain_text(text) == [expect(
        "amdgpu-mes-hang",
        "[40869.919369] amdgpu 0000:c3:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE",
        line=2)]


def test_out_of_memory_request_larger_than_the_apu_capacity() -> None:
    text = fixture_text("errors-hip-out-of-memory-gfx1151-strix-halo-15gib-cap-vs-96gib-vram.txt")
    line = text.splitlines()[0]
    assert explain_text(text) == [expect(
        "hip-out-of-memory", line[:197] + "...",
        ("The request (16.00 GiB) is larger than the GPU's whole capacity as HIP reports it "
         "(15.24 GiB): no allocator setting can satisfy it.",
         "The kernel log shows 96 GiB of VRAM but HIP reports 15.24 GiB: HIP sees only part of "
         "this GPU's memory, as in TheRock issue 1054."),
        fix=("This APU's memory is not what HIP allocates from: it puts tensors in GTT, not "
             "the VRAM carve-out the kernel log shows. Set the BIOS VRAM (UMA frame buffer) "
             "carve-out to its minimum so the memory is given to GTT, or use a newer ROCm "
             "build for this GPU; a smaller batch only hides it."),
        commands=("sudo dmesg | grep -i -e 'VRAM' -e 'GTT'",
                  "python -c 'import torch; print(torch.cuda.mem_get_info())'"),
        needs_root=True)]


def test_memory_access_fault() -> None:
    text = fixture_text(
        "errors-memory-access-fault-gpu-node-gfx1201-kernel6.18-rocm7.12-nightly.txt")
    assert explain_text(text) == [expect(
        "memory-access-fault", "Memory access fault by GPU node-1 (Agent handle: 0x21df3df0) on "
        "address 0x7fac37a5f000. Reason: Page not present or supervisor privilege.",
        ("Possible: this message has more than one cause and the text does not say which.",),
        confidence="possible")]


def test_torchvision_nms_missing() -> None:
    text = captured_text("torchvision-nms-does-not-exist-tv0.28.0-torch2.13.0cpu.txt")
    assert explain_text(text) == [expect(
        "torchvision-nms", "RuntimeError: operator torchvision::nms does not exist", line=18)]


def test_kfd_in_a_container_is_not_a_group_problem() -> None:
    # The same capture also shows `-bash: /dev/kfd: Permission denied` (the user ran the
    # device node): that line is not a failed open and must not count.
    text = fixture_text("rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt")
    assert explain_text(text) == [expect(
        "kfd-open", "Unable to open /dev/kfd read-write: Invalid argument", line=3)]


def test_rock_module_not_loaded() -> None:
    text = fixture_text(
        "rocminfo-fail-rock-not-loaded-and-rocm-smi-driver-not-initialized-azure-nvv4.txt")
    # no machine, no WSL in the text: the driver missing is one of the known causes
    assert explain_text(text) == [expect(
        "rock-not-loaded", "ROCk module is NOT loaded, possibly no GPU devices", line=2,
        notes=(GENERIC_NOTE,), confidence="possible")]


def test_every_real_error_capture_is_recognised() -> None:
    for path in sorted(REAL.glob("errors-*.txt")):
        assert explain_text(fixture_text(path.name)), path.name


# Verbatim from https://github.com/pytorch/pytorch/issues/164346 (torch nightly, rocm7.0).
INVALID_DEVICE_FUNCTION = """torch.AcceleratorError: HIP error: invalid device function
Search for `hipErrorInvalidDeviceFunction' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__HIPRT__TYPES.html for more information.
HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing AMD_SERIALIZE_KERNEL=3
Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."""

# The first lines of https://gist.github.com/dwf/f071422e3d3e09a4024a70c649b7cd51 (jax-rocm
# on an RX 7900 XTX); the gist's table separators removed.
NO_BINARY = """:1:hip_code_object.cpp :516 : 809713991079 us: [pid:3362424 tid:0x7ffff7eaf740] hipErrorNoBinaryForGpu: Unable to find code object for all current devices!
:1:hip_code_object.cpp :517 : 809713991085 us: [pid:3362424 tid:0x7ffff7eaf740] Devices:
:1:hip_code_object.cpp :520 : 809713991086 us: [pid:3362424 tid:0x7ffff7eaf740] amdgcn-amd-amdhsa--gfx1100 - [Not Found]
:1:hip_code_object.cpp :524 : 809713991091 us: [pid:3362424 tid:0x7ffff7eaf740] Bundled Code Objects:
:1:hip_code_object.cpp :540 : 809713991092 us: [pid:3362424 tid:0x7ffff7eaf740] host-x86_64-unknown-linux-- - [Unsupported]
:1:hip_code_object.cpp :538 : 809713991095 us: [pid:3362424 tid:0x7ffff7eaf740] hipv4-amdgcn-amd-amdhsa--gfx906 - [code object targetID is amdgcn-amd-"""

# Verbatim from https://github.com/pytorch/pytorch/issues/138002 (ComfyUI, 20 GiB Radeon).
FRAGMENTED_OOM = ("!!! Exception during processing !!! HIP out of memory. Tried to allocate 6.64 "
                  "GiB. GPU 0 has a total capacity of 19.92 GiB of which 6.22 GiB is free. Of the "
                  "allocated memory 5.34 GiB is allocated by PyTorch, and 7.10 GiB is reserved by "
                  "PyTorch but unallocated. If reserved but unallocated memory is large try "
                  "setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid "
                  "fragmentation.  See documentation for Memory Management  "
                  "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
FRAGMENTED_NOTE = ("7.10 GiB is reserved by PyTorch but unallocated: the cache is fragmented, so "
                   "an allocator setting helps.")


NO_TARGET = ("Possible: the text names no GPU target (gfx); `rocminfo | grep -m1 gfx` says "
             "which it is.")
GFX1100_NATIVE = ("gfx1100 is a target ROCm supports natively (ROCm 6.0.0 and later list it): it "
                  "needs no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.")
# ...and the fix names no override either: the build of the program that raised it is the fix.
GFX1100_FIX = ("Install a release of the program that raised it built with gfx1100 code; no "
               "HSA_OVERRIDE_GFX_VERSION (ROCm supports gfx1100 itself).")


def test_invalid_device_function_without_a_machine() -> None:
    # torch's own hint "consider passing AMD_SERIALIZE_KERNEL=3" is not a setting left on; the
    # text names no gfx target, so the answer is only possible and says what it lacks
    assert explain_text(INVALID_DEVICE_FUNCTION) == [expect(
        "invalid-device-function", "torch.AcceleratorError: HIP error: invalid device function",
        (NO_TARGET,), confidence="possible")]


def test_no_binary_for_gpu_names_the_missing_target() -> None:
    # gfx1100 is native: no override; the text is JAX's, not torch's, so no torch wheel line
    assert explain_text(NO_BINARY) == [expect(
        "no-binary-for-gpu", NO_BINARY.splitlines()[0],
        ("The runtime found no code for gfx1100; the library carries code for gfx906.",
         GFX1100_NATIVE, "The text does not show torch: the program that raised it needs a "
         "build with gfx1100 code."), fix=GFX1100_FIX)]


# Verbatim from https://github.com/ggml-org/llama.cpp/issues/19949 (llama-server, gfx1152): the
# newer runtime's wording, LogPrintfError in ROCm clr's hipamd/src/hip_fatbin.cpp
FATBIN_NO_CODE = (":1:hip_fatbin.cpp           :687 : 114369963532 us:  No compatible code "
                  "objects found for: gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0")


def test_no_compatible_code_objects_is_the_missing_target_in_the_newer_wording() -> None:
    native = ("gfx1152 is a target ROCm supports natively (ROCm 7.14.0 and later list it): it "
              "needs no HSA_OVERRIDE_GFX_VERSION; the library in use was built without it.")
    assert explain_text(FATBIN_NO_CODE) == [expect(
        "no-binary-for-gpu", FATBIN_NO_CODE,
        (native,), fix=GFX1100_FIX.replace("gfx1100", "gfx1152"))]


def test_fragmented_out_of_memory_without_a_machine() -> None:
    assert explain_text(FRAGMENTED_OOM) == [expect(
        "hip-out-of-memory", FRAGMENTED_OOM[:197] + "...", (FRAGMENTED_NOTE,))]


# --- settings that do not exist, settings left on -----------------------------------------

# Captured from torch 2.13.0+cpu on this machine (test_myth_messages_are_what_torch_says).
TORCH_SAYS = {
    "import torch.backends.roc": "ModuleNotFoundError: No module named 'torch.backends.roc'",
    "torch.backends.rocm": "AttributeError: module 'torch.backends' has no attribute 'rocm'",
    "import torch.utils.roc": "ModuleNotFoundError: No module named 'torch.utils.roc'",
    "torch.autocast(device_type='hip')":
        "RuntimeError: User specified an unsupported autocast device_type 'hip'",
}


@pytest.mark.parametrize(("text", "key"), [
    (TORCH_SAYS["import torch.backends.roc"], "not-a-module-backends"),
    (TORCH_SAYS["torch.backends.rocm"], "not-a-module-backends"),
    ("torch.backends.roc.enable_optimizations = True", "not-a-module-backends"),
    ("torch.backends.rocm.enable_math_ops(True)", "not-a-module-backends"),
    (TORCH_SAYS["import torch.utils.roc"], "not-a-module-dataloader"),
    ("loader = torch.utils.roc.ROCmDataLoader(ds, batch_size=64)", "not-a-module-dataloader"),
    ("export HCC_OPT_LEVEL=3", "not-a-setting-hcc"),
    ("export HSA_OVERSUBSCRIBE=1", "not-a-setting-oversubscribe"),
    (TORCH_SAYS["torch.autocast(device_type='hip')"], "autocast-hip"),
    ("export HIP_LAUNCH_BLOCKING=1", "left-on-hip-launch-blocking"),
    ("MIOPEN_LOG_LEVEL=6 python train.py", "left-on-miopen-log-level"),
])
def test_myths_and_settings_left_on(text: str, key: str) -> None:
    assert explain_text(text) == [expect(key, text)]


def test_a_harmless_log_level_is_not_flagged() -> None:
    assert explain_text("MIOPEN_LOG_LEVEL=4 python train.py") == []


def test_nothing_recognised() -> None:
    assert explain_text("Epoch 3: loss 0.412, 5120 images/s") == []


def test_several_messages_come_in_text_order() -> None:
    text = "export HIP_LAUNCH_BLOCKING=1\n" + NO_BINARY + "\nexport HSA_OVERSUBSCRIBE=1"
    assert [e.key for e in explain_text(text)] == [
        "left-on-hip-launch-blocking", "no-binary-for-gpu", "not-a-setting-oversubscribe"]


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_explain_never_raises(text: str) -> None:
    for e in explain_text(text):
        assert e.key in ENTRY and e.matched
    render_explanations(explain_text(text))


@pytest.mark.live
def test_myth_messages_are_what_torch_says() -> None:
    torch = pytest.importorskip("torch")
    import importlib

    said = {}
    for code, run in [("import torch.backends.roc",
                       lambda: importlib.import_module("torch.backends.roc")),
                      ("torch.backends.rocm", lambda: torch.backends.rocm),
                      ("import torch.utils.roc", lambda: importlib.import_module("torch.utils.roc")),
                      ("torch.autocast(device_type='hip')",
                       lambda: torch.autocast(device_type="hip"))]:
        with pytest.raises(Exception) as info:
            run()
        said[code] = f"{type(info.value).__name__}: {info.value}"
    assert said == TORCH_SAYS


# --- with a machine -------------------------------------------------------------------------

R780M = "rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt"
R890M = "rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt"
R7900 = "rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt"
TORCH_24_ROCM61 = probe("2.4.0+rocm6.1", "6.1.40091-a8dbc0c19", targets_of_index("6.1").targets
                        if targets_of_index("6.1") else None)


def machine(rocminfo: str, python: Optional[dict[str, Any]], env: Optional[dict[str, str]] = None,
            files: Optional[dict[str, str]] = None) -> SnapshotHost:
    return SnapshotHost(make_snapshot(env=env, commands={"rocminfo": fixture_text(rocminfo)},
                                      files=files, python=python))


def test_invalid_device_function_on_a_780m_gives_the_newest_wheel_with_gfx1103() -> None:
    # gfx1103 is in PyTorch's wheel arch list from torch 2.13 (pytorch#179653) and in the
    # rocm7.14 wheels (.ci/docker/manywheel/build.sh); no system ROCm: the newest index.
    host = machine(R780M, TORCH_24_ROCM61)
    assert explain_text(INVALID_DEVICE_FUNCTION, host) == [expect(
        "invalid-device-function", "torch.AcceleratorError: HIP error: invalid device function",
        ("gfx1103 AMD Radeon Graphics: PyTorch's ROCm 7.14 wheels include gfx1103.",),
        ("pip install --force-reinstall torch torchvision --index-url "
         "https://download.pytorch.org/whl/rocm7.14",))]


def test_a_wrong_override_on_a_780m_is_named() -> None:
    host = machine(R780M, TORCH_24_ROCM61, env={"HSA_OVERRIDE_GFX_VERSION": "11.0.2"})
    assert explain_text(INVALID_DEVICE_FUNCTION, host) == [expect(
        "invalid-device-function", "torch.AcceleratorError: HIP error: invalid device function",
        ("HSA_OVERRIDE_GFX_VERSION=11.0.2 is set here: the runtime loads gfx1102 code, which "
         "torch was not compiled for.",
         "gfx1103 AMD Radeon Graphics: PyTorch's ROCm 7.14 wheels include gfx1103."),
        ("unset HSA_OVERRIDE_GFX_VERSION", "pip install --force-reinstall torch torchvision "
         "--index-url https://download.pytorch.org/whl/rocm7.14"))]


def test_invalid_device_function_on_an_890m_gives_the_pip_line_for_a_wheel_with_gfx1150() -> None:
    host = machine(R890M, probe("2.9.1+rocm6.4", "6.4.43482-0f2d60242",
                                targets_of_index("6.4").targets if targets_of_index("6.4")
                                else None),
                   files={"/opt/rocm/.info/version": fixture_text(
                       "rocm-info-version-6.3.4-76-classic-layout.txt")})
    assert explain_text(INVALID_DEVICE_FUNCTION, host) == [expect(
        "invalid-device-function", "torch.AcceleratorError: HIP error: invalid device function",
        ("gfx1150 AMD Radeon Graphics: PyTorch's ROCm 7.14 wheels include gfx1150, those for "
         "ROCm 6.3 do not (ROCm 6.3.4 is installed here); the wheels bring their own ROCm "
         "libraries, the amdgpu driver must support ROCm 7.14.",),
        ("pip install --force-reinstall torch torchvision --index-url "
         "https://download.pytorch.org/whl/rocm7.14",))]


def test_no_binary_when_torch_has_the_target_points_at_the_library() -> None:
    host = machine(R7900, TORCH_24_ROCM61)
    assert explain_text(NO_BINARY, host) == [expect(
        "no-binary-for-gpu", NO_BINARY.splitlines()[0],
        ("The runtime found no code for gfx1100; the library carries code for gfx906.",
         "gfx1100 Radeon RX 7900 XTX: torch's compiled targets include gfx1100."))]


def test_fragmented_oom_with_torch_2_13_for_rocm_7_2_uses_expandable_segments() -> None:
    host = machine(R7900, probe("2.13.0+rocm7.2", "7.2.53211"))
    assert explain_text(FRAGMENTED_OOM, host) == [expect(
        "hip-out-of-memory", FRAGMENTED_OOM[:197] + "...", (FRAGMENTED_NOTE,),
        ("export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True",))]


def test_fragmented_oom_with_torch_2_4_uses_the_settings_it_honours() -> None:
    host = machine(R7900, TORCH_24_ROCM61)
    assert explain_text(FRAGMENTED_OOM, host) == [expect(
        "hip-out-of-memory", FRAGMENTED_OOM[:197] + "...",
        (FRAGMENTED_NOTE, "torch 2.4.0 ignores expandable_segments on ROCm; the allocator "
                          "settings that work here are below."),
        ("export PYTORCH_HIP_ALLOC_CONF=garbage_collection_threshold:0.8,"
         "max_split_size_mb:512",))]


def test_torchvision_nms_with_torch_2_13_cpu_gives_the_paired_wheel() -> None:
    host = SnapshotHost(make_snapshot(python=probe("2.13.0+cpu", None, vision="0.28.0")))
    text = captured_text("torchvision-nms-does-not-exist-tv0.28.0-torch2.13.0cpu.txt")
    assert explain_text(text, host) == [expect(
        "torchvision-nms", "RuntimeError: operator torchvision::nms does not exist",
        ("torch 2.13.0+cpu is installed beside torchvision 0.28.0; torch 2.13.0 pairs with "
         "torchvision 0.28.0.",),
        ("pip install --force-reinstall --no-deps torchvision==0.28.0 --index-url "
         "https://download.pytorch.org/whl/cpu",), line=18)]


def test_kfd_permission_names_the_user_and_the_missing_groups() -> None:
    host = SnapshotHost(make_snapshot(user={"name": "bob", "uid": 1001,
                                            "groups": ["bob", "video"]}))
    text = "Unable to open /dev/kfd read-write: Permission denied"
    assert explain_text(text, host) == [expect(
        "kfd-permission", text, ("bob is in the groups bob, video; not in render.",),
        ("sudo usermod -aG render bob",), needs_root=True)]


def test_mes_hang_with_an_override_set_here() -> None:
    host = SnapshotHost(make_snapshot(env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
                                      kernel="6.10.0-rc1"))
    text = fixture_text("errors-dmesg-mes-failed-to-respond-remove-queue-gfx1103-hsa-override.txt")
    assert explain_text(text, host) == [expect(
        "amdgpu-mes-hang",
        "[40869.919369] amdgpu 0000:c3:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE",
        ("HSA_OVERRIDE_GFX_VERSION=11.0.0 is set here; a wrong target causes exactly this.",
         "This machine runs Linux 6.10.0-rc1; `rocmdoctor check --only kernel-version` compares "
         "it with ROCm's supported kernels."),
        ("unset HSA_OVERRIDE_GFX_VERSION", "sudo dmesg | grep -iE 'amdgpu|kfd'"), line=2)]


def test_a_setting_left_on_says_whether_it_is_set_here() -> None:
    host = SnapshotHost(make_snapshot(env={"HIP_LAUNCH_BLOCKING": "1"}))
    assert explain_text("export HIP_LAUNCH_BLOCKING=1", host) == [expect(
        "left-on-hip-launch-blocking", "export HIP_LAUNCH_BLOCKING=1",
        ("HIP_LAUNCH_BLOCKING=1 is set in this environment.",))]


def test_a_broken_machine_fact_falls_back_to_the_generic_answer() -> None:
    # A strict snapshot raises on anything it was not given: the GPU lookup fails, the
    # answer keeps the facts from the message (the text's own gfx1100) and the generic
    # commands.
    host = SnapshotHost(make_snapshot(python=TORCH_24_ROCM61), strict=True)
    assert explain_text(NO_BINARY, host) == [expect(
        "no-binary-for-gpu", NO_BINARY.splitlines()[0],
        ("The runtime found no code for gfx1100; the library carries code for gfx906.",
         GFX1100_NATIVE, "The text does not show torch: the program that raised it needs a "
         "build with gfx1100 code."), fix=GFX1100_FIX)]


# --- the command line -----------------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(explain_command)
    return app


def snapshot_file(tmp_path: Path) -> str:
    path = str(tmp_path / "snap.json")
    save_snapshot(make_snapshot(env={"HIP_LAUNCH_BLOCKING": "1"}), path)
    return path


def test_cli_text_argument_with_a_snapshot(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["export HIP_LAUNCH_BLOCKING=1", "--from",
                                        snapshot_file(tmp_path)])
    assert result.exit_code == 0
    assert result.stdout == render_explanations([expect(
        "left-on-hip-launch-blocking", "export HIP_LAUNCH_BLOCKING=1",
        ("HIP_LAUNCH_BLOCKING=1 is set in this environment.",))])


def test_cli_reads_stdin_and_prints_json(tmp_path: Path) -> None:
    text = fixture_text("errors-dmesg-amdgpu-ring-sdma0-timeout-gpu-reset-smu-gfx1030.txt")
    result = CliRunner().invoke(cli(), ["--json", "--from", snapshot_file(tmp_path)],
                                input=text)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["schema"] == "rocmdoctor.explain/1" and data["recognized"] is True
    assert [e["key"] for e in data["explanations"]] == ["amdgpu-ring-timeout"]
    assert data["explanations"][0]["check"] == "kernel-version"


def test_cli_reads_a_file(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("export HSA_OVERSUBSCRIBE=1\n", encoding="utf-8")
    result = CliRunner().invoke(cli(), ["--file", str(log), "--from", snapshot_file(tmp_path)])
    assert result.exit_code == 0
    assert result.stdout.startswith("HSA_OVERSUBSCRIBE  [not-a-setting, likely]\n")


def test_cli_unrecognised_text_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["all good", "--from", snapshot_file(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"rocmdoctor: {NOTHING}\n"


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(cli(), ["--file", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    both = CliRunner().invoke(cli(), ["x", "--file", "y"])
    assert both.exit_code == 2 and "not both" in both.stderr
    snap = CliRunner().invoke(cli(), ["x", "--from", str(tmp_path / "none.json")])
    assert snap.exit_code == 2 and "snapshot not found" in snap.stderr


@pytest.mark.live
def test_cli_on_this_machine() -> None:
    result = CliRunner().invoke(cli(), ["export HSA_OVERSUBSCRIBE=1"])
    assert result.exit_code == 0
    assert "HSA_OVERSUBSCRIBE  [not-a-setting, likely]" in result.stdout
