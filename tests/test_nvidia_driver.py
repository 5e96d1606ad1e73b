"""nvidia-driver and the nvidia-smi CSV parser.

The outputs below are written in NVIDIA's documented `--format=csv,noheader,nounits` query
format (https://docs.nvidia.com/deploy/nvidia-smi/index.html): fields in the order asked,
", " between them, "[N/A]" / "[Not Supported]" where a value is missing. They are not
captures; the real H200 capture will be replayed from tests/fixtures/h200-snapshot.json.gz.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.nvidia_driver import NvidiaDriver
from rocmdoctor.checks.torch_arch_support import TorchArchSupport, cuda_support
from rocmdoctor.facts.nvidia_gpus import (
    LEGACY_FIELDS,
    LEGACY_KEY,
    QUERY_KEY,
    NvidiaGpu,
    parse_query_gpu,
)
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import Finding, Fix, Status
from tests.helpers import make_snapshot

H200_UUIDS = [f"GPU-{i}a2b3c4d-0000-1111-2222-33334444555{i}" for i in range(8)]
H200 = "".join(
    f"{i}, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00, 700.00, 143771, {u}, "
    f"00000000:{0x18 + i:02X}:00.0\n" for i, u in enumerate(H200_UUIDS))
ABSENT = ("/sys/module/amdgpu", "/dev/kfd", "/opt/rocm")


def _torch(cuda: Optional[str]) -> dict[str, Any]:
    return {"executable": "/usr/bin/python3", "version": "3.11.7", "packages": {},
            "torch": {"imported": True, "error": None, "version": "2.9.1+cu128", "hip": None,
                      "cuda": cuda}}


def nv_host(commands: dict[str, Any], cuda: Optional[str] = "12.8",
            absent: tuple[str, ...] = ()) -> SnapshotHost:
    data = make_snapshot(
        commands=commands, python=_torch(cuda),
        paths={"/dev/nvidiactl": {"type": "char", "mode": "0666", "readable": True,
                                  "writable": True}},
        files={"/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module"
               "  570.133.20\n"})
    return SnapshotHost(data, strict=True, absent=ABSENT + absent)


def _gpu_lines() -> tuple[Finding, ...]:
    return tuple(Finding.info(f"GPU {i}: NVIDIA H200, compute capability 9.0, 143771 MiB, "
                              "power limit 700 W, persistence mode on") for i in range(8))


def test_h200_driver_supports_cuda_12_8() -> None:
    r = NvidiaDriver().run(nv_host({QUERY_KEY: H200}))
    assert (r.status, r.summary, r.findings, r.fix) == (
        Status.PASS, "driver 570.133.20, 8 x NVIDIA H200 (sm_90); supports torch's CUDA 12.8",
        _gpu_lines(), None)


def test_driver_that_needs_minor_version_compatibility_warns() -> None:
    out = H200.replace("570.133.20", "550.127.08")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}))
    assert r.status is Status.WARN
    assert r.summary == ("driver 550.127.08, 8 x NVIDIA H200 (sm_90); older than CUDA 12.8 "
                         "wants")
    assert r.findings[-1] == Finding.error(
        "CUDA 12.8 wants driver >= 570.26; 550.127.08 runs it through CUDA minor version "
        "compatibility, where PTX JIT compilation (and so some kernels) can fail")
    # No CUDA of the newest torch (12.6, 13.0, 13.2) has its GA driver <= 550.127.08.
    assert r.fix == Fix("Install NVIDIA driver 570.26 or newer (https://www.nvidia.com/drivers).")


def test_too_old_driver_gets_the_newest_torch_cuda_it_can_run() -> None:
    out = H200.replace("570.133.20", "565.57.01")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}, cuda="13.0"))
    assert (r.status, r.summary) == (
        Status.FAIL, "driver 565.57.01, 8 x NVIDIA H200 (sm_90); too old for torch's CUDA 13.0")
    assert r.fix == Fix(
        "Install NVIDIA driver 580.65.06 or newer (https://www.nvidia.com/drivers), or install "
        "a torch build for a CUDA this driver supports (cu126).",
        ("pip install --force-reinstall torch torchvision --index-url "
         "https://download.pytorch.org/whl/cu126",))


def test_driver_too_old_for_the_runtime_fails() -> None:
    out = H200.replace("570.133.20", "470.82.01")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}))
    assert (r.status, r.summary) == (
        Status.FAIL, "driver 470.82.01, 8 x NVIDIA H200 (sm_90); too old for torch's CUDA 12.8")
    assert r.findings[-1] == Finding.error(
        "torch's CUDA 12.8 needs driver >= 525.60.13 (>= 570.26 for every feature); this is "
        "470.82.01")
    assert r.fix == Fix("Install NVIDIA driver 570.26 or newer (https://www.nvidia.com/drivers).")


def test_old_driver_without_compute_cap_field_is_asked_again() -> None:
    legacy = "".join(f"{i}, Tesla V100-SXM2-16GB, 470.82.01, Disabled, 300.00, 300.00, 16160, "
                     f"GPU-00000000-0000-0000-0000-00000000000{i}, 00000000:0{i}:00.0\n"
                     for i in range(2))
    host = nv_host({QUERY_KEY: {"returncode": 2, "stdout": 'Field "compute_cap" is not a '
                                "valid field to query.\n\n", "stderr": ""},
                    LEGACY_KEY: legacy}, cuda="11.8")
    r = NvidiaDriver().run(host)
    # 470.82.01 meets Table 2's 11.x minimum (450.80.02) but not 11.8's GA driver.
    assert (r.status, r.summary, r.fix) == (
        Status.WARN, "driver 470.82.01, 2 x Tesla V100-SXM2-16GB; older than CUDA 11.8 wants",
        Fix("Install NVIDIA driver 520.61.05 or newer (https://www.nvidia.com/drivers)."))
    assert r.findings == (
        Finding.info("GPU 0: Tesla V100-SXM2-16GB, compute capability ?, 16160 MiB, power limit "
                     "300 W, persistence mode off"),
        Finding.info("GPU 1: Tesla V100-SXM2-16GB, compute capability ?, 16160 MiB, power limit "
                     "300 W, persistence mode off"),
        Finding.error("CUDA 11.8 wants driver >= 520.61.05; 470.82.01 runs it through CUDA minor "
                      "version compatibility, where PTX JIT compilation (and so some kernels) "
                      "can fail"),
        Finding.hint("persistence mode is off on GPU 0, 1: the driver sets the GPU up again for "
                     "each new process (slower start); `sudo nvidia-smi -pm 1` turns it on until "
                     "reboot (needs root)"),
    )


def test_power_capped_gpu_warns_with_the_root_command() -> None:
    out = H200.replace("0, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00",
                       "0, NVIDIA H200, 570.133.20, 9.0, Enabled, 500.00")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}))
    assert (r.status, r.summary) == (
        Status.WARN, "driver 570.133.20, 8 x NVIDIA H200 (sm_90); supports torch's CUDA 12.8; "
        "GPU 0 is power-capped")
    assert r.findings[-1] == Finding.error(
        "GPU 0 power limit 500 W is below its default 700 W: it runs slower")
    assert r.fix == Fix("Restore the default power limit (needs root; lasts until reboot).",
                        ("sudo nvidia-smi -i 0 -pl 700",), needs_root=True)


def test_two_capped_gpus_are_both_restored_and_the_first_is_named() -> None:
    out = H200.replace("0, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00",
                       "0, NVIDIA H200, 570.133.20, 9.0, Enabled, 500.00").replace(
        "3, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00",
        "3, NVIDIA H200, 570.133.20, 9.0, Enabled, 450.00")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}))
    assert (r.status, r.summary, r.findings[8:], r.fix) == (
        Status.WARN, "driver 570.133.20, 8 x NVIDIA H200 (sm_90); supports torch's CUDA 12.8; "
        "GPU 0 is power-capped",
        (Finding.error("GPU 0 power limit 500 W is below its default 700 W: it runs slower"),
         Finding.error("GPU 3 power limit 450 W is below its default 700 W: it runs slower")),
        Fix("Restore the default power limit (needs root; lasts until reboot).",
            ("sudo nvidia-smi -i 0 -pl 700", "sudo nvidia-smi -i 3 -pl 700"), needs_root=True))


def test_a_power_limit_raised_above_the_default_and_an_unknown_persistence_pass() -> None:
    # One RTX 4090 (default 450 W, raised to 600 W, which its maximum allows); GeForce boards
    # report persistence mode as [N/A] where the driver has none (the parser test's line).
    rtx = ("0, NVIDIA GeForce RTX 4090, 570.133.20, 8.9, [N/A], 600.00, 450.00, 24564, GPU-aaaa, "
           "00000000:01:00.0\n")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: rtx}))
    assert (r.status, r.summary, r.findings, r.fix) == (
        Status.PASS, "driver 570.133.20, NVIDIA GeForce RTX 4090 (sm_89); supports torch's CUDA "
        "12.8",
        (Finding.info("GPU 0: NVIDIA GeForce RTX 4090, compute capability 8.9, 24564 MiB, power "
                      "limit 600 W, persistence mode ?"),), None)


def test_a_driver_warning_keeps_its_fix_on_a_power_capped_gpu() -> None:
    # The driver is what to fix first: the power cap does not replace its warning and fix.
    out = H200.replace("570.133.20", "550.127.08").replace(
        "0, NVIDIA H200, 550.127.08, 9.0, Enabled, 700.00",
        "0, NVIDIA H200, 550.127.08, 9.0, Enabled, 500.00")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: out}))
    assert (r.status, r.summary, r.findings[8:], r.fix) == (
        Status.WARN, "driver 550.127.08, 8 x NVIDIA H200 (sm_90); older than CUDA 12.8 wants",
        (Finding.error("CUDA 12.8 wants driver >= 570.26; 550.127.08 runs it through CUDA minor "
                       "version compatibility, where PTX JIT compilation (and so some kernels) "
                       "can fail"),),
        Fix("Install NVIDIA driver 570.26 or newer (https://www.nvidia.com/drivers)."))


def test_cuda_10_2_has_no_minor_version_compatibility_to_fall_back_on() -> None:
    # Minor version compatibility starts with CUDA 11 (Table 2); 10.2 needs its GA 440.33.
    v100 = "".join(f"{i}, Tesla V100-SXM2-16GB, 418.87.01, 7.0, Enabled, 300.00, 300.00, 16160, "
                   f"GPU-{i}, 00000000:0{i}:00.0\n" for i in range(2))
    r = NvidiaDriver().run(nv_host({QUERY_KEY: v100}, cuda="10.2"))
    assert (r.status, r.summary, r.findings[2:], r.fix) == (
        Status.FAIL, "driver 418.87.01, 2 x Tesla V100-SXM2-16GB (sm_70); too old for torch's "
        "CUDA 10.2",
        (Finding.error("torch's CUDA 10.2 needs driver >= 440.33 (>= 440.33 for every feature); "
                       "this is 418.87.01"),),
        Fix("Install NVIDIA driver 440.33 or newer (https://www.nvidia.com/drivers)."))


def test_an_unconfirmed_ga_driver_is_said_to_be_so() -> None:
    # 13.2's 595.45.04 is quoted, not confirmed in NVIDIA's table here (kb.cuda_driver).
    r = NvidiaDriver().run(nv_host({QUERY_KEY: H200.replace("570.133.20", "590.44.01")},
                                   cuda="13.2"))
    assert (r.status, r.summary, r.findings[8:], r.fix) == (
        Status.WARN, "driver 590.44.01, 8 x NVIDIA H200 (sm_90); older than CUDA 13.2 wants",
        (Finding.error("CUDA 13.2 wants driver >= 595.45.04 (a number quoted from NVIDIA's table, "
                       "not confirmed in it here); 590.44.01 runs it through CUDA minor version "
                       "compatibility, where PTX JIT compilation (and so some kernels) can fail"),),
        Fix("Install NVIDIA driver 595.45.04 or newer (https://www.nvidia.com/drivers), or "
            "install a torch build for a CUDA this driver supports (cu130).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/cu130",)))


def test_below_the_major_minimum_an_unconfirmed_ga_driver_still_fails() -> None:
    # 570.133.20 is under CUDA 13.x's minor-version minimum (580): no compatibility to run on.
    r = NvidiaDriver().run(nv_host({QUERY_KEY: H200}, cuda="13.2"))
    assert (r.status, r.summary, r.findings[8:], r.fix) == (
        Status.FAIL, "driver 570.133.20, 8 x NVIDIA H200 (sm_90); too old for torch's CUDA 13.2",
        (Finding.error("torch's CUDA 13.2 needs driver >= 580 (>= 595.45.04 for every feature); "
                       "this is 570.133.20"),),
        Fix("Install NVIDIA driver 595.45.04 or newer (https://www.nvidia.com/drivers), or "
            "install a torch build for a CUDA this driver supports (cu126).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/cu126",)))


@pytest.mark.parametrize(("cuda", "why"), [
    ("13.4", "CUDA 13.4's minimum driver is not in rocmdoctor's tables (tables dated {date}; "
             "NVIDIA: https://docs.nvidia.com/cuda/archive/13.4.1/cuda-toolkit-release-notes/"
             "index.html)"),
    ("13.6", "CUDA 13.6 is newer than what this rocmdoctor knows, tables dated {date}"),
])
def test_a_cuda_without_a_ga_row_is_judged_by_its_major(cuda: str, why: str) -> None:
    from rocmdoctor.kb import KB_DATE

    r = NvidiaDriver().run(nv_host({QUERY_KEY: H200.replace("570.133.20", "590.44.01")},
                                   cuda=cuda))
    assert (r.status, r.summary, r.findings[8:], r.fix) == (
        Status.PASS, f"driver 590.44.01, 8 x NVIDIA H200 (sm_90); torch's CUDA {cuda} is newer "
        "than rocmdoctor's tables",
        (Finding.info(why.format(date=KB_DATE) + "; driver 590.44.01 meets the CUDA 13.x minimum "
                      "(>= 580)"),), None)
    old = NvidiaDriver().run(nv_host({QUERY_KEY: H200}, cuda=cuda))
    assert (old.status, old.findings[8:]) == (Status.FAIL, (Finding.error(
        f"torch's CUDA {cuda} needs driver >= 580 (CUDA 13.x minor version compatibility); this "
        "is 570.133.20"),))


def test_driver_not_talking() -> None:
    said = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.")
    r = NvidiaDriver().run(nv_host({QUERY_KEY: {"returncode": 9, "stdout": said + "\n\n",
                                                "stderr": ""}}))
    assert (r.status, r.summary, r.findings) == (
        Status.FAIL, f"nvidia-smi: {said}", (Finding.error(said),))
    assert r.fix is not None and r.fix.commands == () and "reboot" in r.fix.text


def test_nvidia_smi_not_installed() -> None:
    r = NvidiaDriver().run(nv_host({}, absent=(QUERY_KEY,)))
    assert (r.status, r.summary) == (Status.FAIL, "nvidia-smi: nvidia-smi is not installed")


def test_nvidia_smi_hangs_is_an_error() -> None:
    r = NvidiaDriver().run(nv_host({QUERY_KEY: {"returncode": 124, "stdout": "", "stderr": "",
                                                "timed_out": True}}))
    assert (r.status, r.summary) == (Status.ERROR, "nvidia-smi did not answer")


def test_unknown_cuda_runtime_passes_on_the_driver_alone() -> None:
    r = NvidiaDriver().run(nv_host({QUERY_KEY: H200}, cuda=None))
    assert (r.status, r.summary) == (Status.PASS, "driver 570.133.20, 8 x NVIDIA H200 (sm_90)")
    assert r.findings[-1] == Finding.info(
        "torch's CUDA runtime is unknown (no CUDA build of torch probed)")


def test_skips_off_nvidia() -> None:
    amd = SnapshotHost(make_snapshot(paths={"/dev/kfd": {"type": "char"}}))
    cpu = SnapshotHost(make_snapshot())
    assert NvidiaDriver().applies(amd) == "not an NVIDIA machine (AMD GPU found)"
    assert NvidiaDriver().applies(cpu) == "no NVIDIA GPU or driver found"
    assert NvidiaDriver().applies(nv_host({QUERY_KEY: H200})) is None


def test_parser_reads_units_and_missing_values() -> None:
    text = ("0, NVIDIA GeForce RTX 4090, 550.54.14, 8.9, [N/A], 450.00 W, 450.00 W, 24564 MiB, "
            "GPU-aaaa, 00000000:01:00.0\n"
            "1, \"NVIDIA A100-SXM4-80GB, MIG\", 535.104.05, 8.0, Enabled, [Not Supported], "
            "[N/A], 81920, GPU-bbbb, 00000000:02:00.0\n"
            "garbage line\n")
    assert parse_query_gpu(text) == [
        NvidiaGpu(0, "NVIDIA GeForce RTX 4090", "550.54.14", "8.9", None, 450.0, 450.0, 24564,
                  "GPU-aaaa", "00000000:01:00.0"),
        NvidiaGpu(1, "NVIDIA A100-SXM4-80GB, MIG", "535.104.05", "8.0", True, None, None, 81920,
                  "GPU-bbbb", "00000000:02:00.0"),
    ]
    assert parse_query_gpu(text)[0].sm == "sm_89"


def test_legacy_parser_field_list() -> None:
    gpus = parse_query_gpu("0, Tesla T4, 450.80.02, Enabled, 70.00, 70.00, 15109, GPU-c, "
                           "00000000:00:04.0\n", LEGACY_FIELDS)
    assert gpus == [NvidiaGpu(0, "Tesla T4", "450.80.02", None, True, 70.0, 70.0, 15109,
                              "GPU-c", "00000000:00:04.0")]
    assert gpus[0].sm is None


@given(st.text())
def test_parser_never_raises(text: str) -> None:
    for gpu in parse_query_gpu(text):
        assert gpu.index >= 0 and gpu.name


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=12),
                min_size=10, max_size=10))
def test_parser_never_raises_on_ten_field_rows(fields: list[str]) -> None:
    parse_query_gpu(", ".join(fields))


# --- torch-arch-support on CUDA: compute capability against sm_XY / compute_XY ---------------

# PyTorch's CUDA support matrix (RELEASE.md): CUDA 13.0 builds target Turing 7.5, Ampere 8.0 and
# 8.6, Hopper 9.0, Blackwell 10.0 and 12.0+PTX.
CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.mark.parametrize(("target", "how"), [
    ("sm_90", "native"), ("sm_89", "compatible"), ("sm_121", "compatible"),
    ("sm_70", None), ("sm_50", None),
])
def test_cuda_support_rules(target: str, how: Optional[str]) -> None:
    assert cuda_support(target, CU130) == how
    assert cuda_support("sm_90", ["sm_80", "compute_80"]) == "ptx"
    # Arch-specific "a" binaries run on that exact capability only.
    assert cuda_support("sm_90", ["sm_90a"]) == "native"
    assert cuda_support("sm_103", ["sm_100a"]) is None
    # ...and a binary for a later major does not run on an earlier one.
    assert cuda_support("sm_86", ["sm_90", "sm_100"]) is None


def cuda_host(arch_list: list[str], cap: list[int], name: str) -> SnapshotHost:
    probe = {"executable": "/usr/bin/python3", "packages": {"torch": "2.13.0+cu130"},
             "torch": {"imported": True, "error": None, "version": "2.13.0+cu130", "hip": None,
                       "cuda": "13.0", "arch_list": arch_list, "device_count": 1,
                       "devices": [{"index": 0, "name": name, "arch": f"sm_{cap[0]}{cap[1]}",
                                    "cuda_capability": cap}]}}
    data = make_snapshot(python=probe, paths={"/dev/nvidiactl": {"type": "char", "mode": "0666"}})
    return SnapshotHost(data, strict=True, absent=ABSENT + ("/proc/driver/nvidia/version",
                                                            QUERY_KEY))


def test_cuda_h200_is_native() -> None:
    r = TorchArchSupport().run(cuda_host(CU130, [9, 0], "NVIDIA H200"))
    assert (r.status, r.summary, r.findings, r.fix) == (
        Status.PASS, "sm_90 (NVIDIA H200) supported by torch 2.13.0+cu130", (), None)


def test_cuda_v100_is_not_in_cuda13_builds() -> None:
    r = TorchArchSupport().run(cuda_host(CU130, [7, 0], "Tesla V100-SXM2-16GB"))
    assert (r.status, r.summary, r.findings) == (
        Status.FAIL, "sm_70 is not supported by torch 2.13.0+cu130",
        (Finding.error(f"GPU 0 Tesla V100-SXM2-16GB is sm_70; torch 2.13.0+cu130 has "
                       f"{', '.join(CU130)}"),))
    assert r.fix is not None and r.fix.commands == (
        "pip install --force-reinstall torch torchvision --index-url "
        "https://download.pytorch.org/whl/cu126",)


def test_cuda_blackwell_on_a_cuda_12_6_build_gets_the_newest_cuda() -> None:
    # CUDA 12.6 builds: Maxwell 5.0 ... Hopper 9.0 (RELEASE.md), no PTX for newer GPUs.
    cu126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    r = TorchArchSupport().run(cuda_host(cu126, [12, 0], "NVIDIA GeForce RTX 5090"))
    assert (r.status, r.summary) == (Status.FAIL, "sm_120 is not supported by torch "
                                     "2.13.0+cu130")
    assert r.fix == Fix(
        "Install a PyTorch build whose CUDA version supports sm_120 (cu132 has torch 2.14.1's "
        "newest CUDA).", ("pip install --force-reinstall torch torchvision --index-url "
                          "https://download.pytorch.org/whl/cu132",))
