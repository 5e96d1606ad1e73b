"""torch-rocm-match judged on the ROCm torch really loads, and torch-device's WSL fix."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

from rocmdoctor.checks.torch_device import TorchDevice
from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch, wheel_rocm
from rocmdoctor.facts.libload import LIBLOAD_TIMEOUT_S
from rocmdoctor.facts.wsl import wsl_advice
from rocmdoctor.host.probe import PROBE_TIMEOUT_S
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import rocm_sdk as kb
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot
from tests.test_rocm_libraries import child

WSL_KERNEL = "6.6.87.2-microsoft-standard-WSL2"
INBOX = ("amdgpu is the kernel's own driver (kernel 6.8.0-45-generic); AMD validates ROCm with "
         "its amdgpu-dkms driver, and new ROCm releases may need a newer kernel")
AMDGPU = {"/sys/module/amdgpu": {"type": "dir"}}


def probe(version: str, hip: str, *, location: str = "/venv/lib/python3.12/site-packages/torch",
          devices: int = 0, packages: Optional[dict[str, str]] = None) -> dict[str, Any]:
    return {"executable": "/venv/bin/python", "version": "3.12.3",
            "packages": {"torch": version, **(packages or {})},
            "torch": {"imported": True, "version": version, "hip": hip, "cuda": None,
                      "location": location, "available": devices > 0, "device_count": devices,
                      "devices": [], "arch_list": []}}


def run(check: Any, host: SnapshotHost) -> CheckResult:
    return replace(run_one(check, host), duration_ms=0)


def test_real_second_installer_leaves_two_rocm_releases() -> None:
    # rocm-cli PR #314: the SDK phase installed torch 2.11.0+rocm7.13.0 (HIP 7.13); a second
    # installer replaced it with a torch built for HIP 7.2.
    text = fixture_text("torch-replaced-by-second-installer-hip-7.13-vs-7.2-rocm-cli-install-sdk-gfx94X.txt")
    sdk_torch, sdk_hip = re.search(r"torch==(\S+)\s+\(hip (\S+)\)", text).groups()  # type: ignore[union-attr]
    end_torch, end_hip = re.search(r"end state:\s+torch-(\S+)\s+\(hip (\S+)\)", text).groups()  # type: ignore[union-attr]
    sdk_version = sdk_torch.split("+rocm", 1)[1]  # the SDK the first installer put in: 7.13.0
    core = "/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib"
    entry = child({"hip": f"{core}/libamdhip64.so.7"}, sdk=(core,),
                  packages={"rocm-sdk-core": sdk_version, "torch": end_torch},
                  torch_lib="/venv/lib/python3.12/site-packages/torch/lib")
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": entry}, dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe(end_torch, end_hip, packages={"rocm-sdk-core": sdk_version})))
    result = run(TorchRocmMatch(), host)
    assert result == TorchRocmMatch().result(
        Status.WARN, f"torch built for {wheel_rocm(end_hip)[0]}; the pip-installed ROCm is 7.13.0",
        [Finding.info(f"torch loads the pip-installed ROCm SDK's HIP runtime "
                      f"({core}/libamdhip64.so.7)"),
         Finding.info("rocm-sdk-core 7.13.0"),
         Finding.error("two ROCm releases in one environment: torch was built for ROCm 7.2, the "
                       "ROCm SDK beside it is 7.13.0 (a second installer replaced one of them)"),
         Finding.info(INBOX)],
        Fix("Install the ROCm SDK release torch pins (or the torch built for ROCm 7.13.0) from "
            "the index torch came from.", ()))
    assert sdk_hip.startswith("7.13")


def test_source_build_loading_a_system_release_is_judged_on_it() -> None:
    # pytorch#147669-style: /opt/rocm is 6.3.4, but torch's libamdhip64 comes from 6.2.0.
    libs = {"hip": "/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200"}
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": child(libs, torch_lib=None)},
        files={"/opt/rocm/.info/version": "6.3.4-76\n", "/opt/rocm-6.2.0/.info/version": "6.2.0\n"},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe("2.5.0a0+gitcedc116", "6.2.41133-dd7f95766")))
    result = run(TorchRocmMatch(), host)
    assert (result.status, result.summary, result.findings[0]) == (
        Status.PASS, "torch built for ROCm 6.2.0 (HIP 6.2.41133); loaded ROCm 6.2.0 matches",
        Finding.info("torch loads its HIP runtime from "
                     "/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200"))


def test_a_conda_environment_s_rocm_is_judged_on_its_own_version_file() -> None:
    # A source build in a conda environment that holds its own ROCm (rocm-core installs
    # .info/version under its prefix): that tree's release counts, not /opt/rocm's 6.3.4 nor
    # the distribution's files.
    env = "/opt/conda/envs/build"
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": child({"hip": f"{env}/lib/libamdhip64.so.6"},
                                              torch_lib=None)},
        files={"/opt/rocm/.info/version": fixture_text(
            "rocm-info-version-6.3.4-76-classic-layout.txt"),
            f"{env}/.info/version": "6.2.0\n"},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe("2.5.0a0+gitcedc116", "6.2.41133-dd7f95766")))
    result = run(TorchRocmMatch(), host)
    assert (result.status, result.summary, result.findings, result.fix) == (
        Status.PASS, "torch built for ROCm 6.2.0 (HIP 6.2.41133); loaded ROCm 6.2.0 matches",
        (Finding.info(f"torch loads its HIP runtime from {env}/lib/libamdhip64.so.6"),
         Finding.info(INBOX)), None)


def test_the_deadline_covers_the_probe_and_the_library_load_child() -> None:
    # Run alone (`--only torch-rocm-match`) the check waits for the probe, then for
    # rocm-libraries' child: the runner must not give up on it before both time out.
    assert TorchRocmMatch.deadline_s is not None
    assert TorchRocmMatch.deadline_s > PROBE_TIMEOUT_S + LIBLOAD_TIMEOUT_S


def test_distribution_rocm_is_not_no_system_rocm() -> None:
    cmake = 'set(PACKAGE_VERSION "6.0.0")\n'
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": child({"hip": "/usr/lib64/libamdhip64.so.6"},
                                              torch_lib=None)},
        files={"/usr/lib64/cmake/hip/hip-config-version.cmake": cmake},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe("2.3.0a0+git1", "6.0.32830-d62f6a171")))
    built = wheel_rocm("6.0.32830-d62f6a171")[0]
    assert run(TorchRocmMatch(), host).summary == f"torch built for {built}; loaded ROCm 6.0.0 matches"
    unversioned = SnapshotHost(make_snapshot(
        paths={"/usr/lib64/libamdhip64.so.6": {"type": "file"}},
        dirs={"/sys/module/amdgpu": ["initstate"]},
        python=probe("2.3.0a0+git1", "6.0.32830-d62f6a171") | {}))
    assert run(TorchRocmMatch(), unversioned).summary == (
        f"torch built for {built}; the distribution's ROCm under /usr (its release is not "
        "recorded)")


# --- WSL ------------------------------------------------------------------------------------

def wsl_host(torch_version: str, hip: str, *, bundled: bool = True,
             runtime: Optional[str] = "libhsa-runtime64.so.1.14.0",
             env: Optional[dict[str, str]] = None) -> SnapshotHost:
    location = "/home/u/.local/lib/python3.12/site-packages/torch"
    paths: dict[str, Any] = {"/dev/dxg": {"type": "char", "mode": "0666"},
                             "/opt/rocm/lib": {"type": "dir"}}
    if bundled:
        paths[f"{location}/lib/libhsa-runtime64.so"] = {"type": "file"}
    if runtime:
        paths[f"/opt/rocm/lib/{runtime}"] = {"type": "file"}
        paths["/opt/rocm/lib/libhsa-runtime64.so.1"] = {"type": "symlink", "target": runtime}
    return SnapshotHost(make_snapshot(
        paths=paths, files={"/opt/rocm/.info/version": "6.3.4\n"}, kernel=WSL_KERNEL, env=env,
        commands={"rocminfo": fixture_text("rocminfo-wsl2-gfx1030-rx6800xt-rocm6.1.3.txt")},
        python=probe(torch_version, hip, location=location)))


def test_real_wsl_wheel_with_its_own_hsa_runtime_gets_the_documented_swap() -> None:
    # ROCm#4749: torch 2.4.0+rocm6.3.4 on WSL; the fix copies the WSL runtime (from
    # hsa-runtime-rocr4wsl-amdgpu, ROCm#4682: libhsa-runtime64.so.1.14.0) into torch/lib.
    fix_lines = fixture_text("wsl-torch-cuda-available-false-fix-replace-wheel-libhsa-runtime64-with-opt-rocm-wsl-runtime-rocm6.3.4-gfx1100.txt").splitlines()
    runtime = fixture_text("wsl-dpkg-L-hsa-runtime-rocr4wsl-amdgpu-libhsa-runtime64.so.1.14.0-rocm6.4.0-ubuntu24.04.txt")
    assert "/opt/rocm-6.4.0/lib/libhsa-runtime64.so.1.14.0" in runtime
    host = wsl_host("2.4.0+rocm6.3.4", "6.3.42134-a9a80e791")
    lib = "/home/u/.local/lib/python3.12/site-packages/torch/lib"
    expected_fix = Fix(
        "Replace torch's libhsa-runtime64 with the WSL runtime, as AMD's WSL guide for ROCm "
        "before 6.4.1 says.", (f"cd {lib}", *fix_lines[2:]))
    assert fix_lines[2:] == ["rm libhsa-runtime64.so*",
                             "cp /opt/rocm/lib/libhsa-runtime64.so.1.14.0 .",
                             "ln -sf libhsa-runtime64.so.1.14.0 libhsa-runtime64.so.1",
                             "ln -sf libhsa-runtime64.so.1 libhsa-runtime64.so"]
    result = run(TorchDevice(), host)
    assert result == TorchDevice().result(
        Status.FAIL, "torch sees no GPU; rocminfo lists 1; on WSL torch needs AMD's WSL runtime",
        [Finding.error("rocminfo lists gfx1030 AMD Radeon RX 6800 XT"),
         Finding.error(f"WSL with /dev/dxg, torch built for ROCm 6.3.4: torch loads its own "
                       f"libhsa-runtime64.so ({lib}/libhsa-runtime64.so), not the WSL runtime")],
        expected_fix, kb.WSL_PYTORCH_DOC)


def test_wsl_with_only_the_wheel_is_a_rocm_machine_for_torch_device() -> None:
    # /dev/dxg and a ROCm wheel, no ROCm for WSL installed: no PCI GPU and no ROCm install
    # (the platform reads as a CPU machine), yet torch-device runs and names the runtime.
    location = "/home/u/.local/lib/python3.12/site-packages/torch"
    host = SnapshotHost(make_snapshot(
        paths={"/dev/dxg": {"type": "char", "mode": "0666"},
               f"{location}/lib/libhsa-runtime64.so": {"type": "file"}},
        kernel=WSL_KERNEL, python=probe("2.4.0+rocm6.3.4", "6.3.42134-a9a80e791",
                                        location=location)))
    assert run(TorchDevice(), host) == TorchDevice().result(
        Status.FAIL, "torch sees no GPU; the system lists 0; on WSL torch needs AMD's WSL runtime",
        [Finding.error("no GPU is listed by the system either"),
         Finding.error(f"WSL with /dev/dxg, torch built for ROCm 6.3.4: torch loads its own "
                       f"libhsa-runtime64.so ({location}/lib/libhsa-runtime64.so), not the WSL "
                       "runtime"),
         Finding.hint("no WSL runtime in /opt/rocm/lib (hsa-runtime-rocr4wsl-amdgpu is not "
                      "installed)")],
        Fix("Install ROCm for WSL (it brings the WSL runtime), then swap torch's runtime for it "
            "as AMD's WSL guide shows.", ("sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms",),
            needs_root=True),
        "https://rocm.docs.amd.com/projects/radeon/en/docs-6.3.4/docs/install/wsl/"
        "install-pytorch.html")


def test_real_wsl_from_6_4_1_needs_no_swap() -> None:
    # HOWTO-7900XTX-Win-ROCM#4: torch 2.6.0+rocm6.4.2; AMD: no longer needed from 6.4.1.
    text = fixture_text("wsl-rocminfo-ok-gfx1100-but-torch-cuda-false-bundled-libhsa-runtime64-conflicts-dev-dxg-rocm6.4.2.txt")
    assert "False" in text
    advice = wsl_advice(wsl_host("2.6.0+rocm6.4.2", "6.4.43482-0f2d60242"))
    assert advice is not None and not advice.needed
    assert advice.findings == (Finding.info(
        "WSL with /dev/dxg, torch built for ROCm 6.4.2: from ROCm 6.4.1 on, AMD's WSL "
        "wheels need no runtime swap"),)


def test_real_wsl_rocdxg_before_7_13_needs_dxg_detection() -> None:
    # librocdxg#46: torch 2.11.0+rocm7.13.0 in a venv; before 7.13 HSA_ENABLE_DXG_DETECTION=1.
    text = fixture_text("wsl-venv-ld-library-path-empty-find-libhsa-runtime64-in-rocm-sdk-core-rocm7.13-librocdxg.txt")
    assert "_rocm_sdk_core/lib/libhsa-runtime64.so.1" in text
    assert not wsl_advice(wsl_host("2.11.0+rocm7.13.0", "7.13.99004")).needed  # type: ignore[union-attr]
    advice = wsl_advice(wsl_host("2.9.1+rocm7.2.0", "7.2.26015-fc0010cf6a"))
    assert advice is not None and advice.fix == Fix(
        "Set HSA_ENABLE_DXG_DETECTION=1 (in your shell profile to keep it).",
        ("export HSA_ENABLE_DXG_DETECTION=1",))
    set_already = wsl_advice(wsl_host("2.9.1+rocm7.2.0", "7.2.26015-fc0010cf6a",
                                      env={"HSA_ENABLE_DXG_DETECTION": "1"}))
    assert set_already is not None and not set_already.needed


def test_wsl_without_the_wsl_runtime_installs_it_first() -> None:
    advice = wsl_advice(wsl_host("2.4.0+rocm6.3.4", "6.3.42134-a9a80e791", runtime=None))
    assert advice is not None and advice.fix == Fix(
        "Install ROCm for WSL (it brings the WSL runtime), then swap torch's runtime for it as "
        "AMD's WSL guide shows.", ("sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms",),
        needs_root=True)


def test_off_wsl_there_is_no_advice() -> None:
    host = SnapshotHost(make_snapshot(paths=AMDGPU, python=probe("2.4.0+rocm6.3.4", "6.3.4")))
    assert wsl_advice(host) is None


def test_the_sdk_torch_loads_is_judged_against_the_driver() -> None:
    """torch 2.10+rocm7.0.2 on the pip-installed ROCm SDK 7.0.2 (they match) with the
    amdgpu-dkms of ROCm 6.0 (module 6.3.6, AMD GPU Driver 6.0.x, tested with user space 5.6
    to 6.2): the SDK's user space is the one the driver serves, so the driver warns."""
    core = "/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib"
    version = "2.10.0+rocm7.0.2"
    entry = child({"hip": f"{core}/libamdhip64.so.7"}, sdk=(core,),
                  packages={"rocm-sdk-core": "7.0.2", "torch": version},
                  torch_lib="/venv/lib/python3.12/site-packages/torch/lib")
    host = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": entry}, dirs={"/sys/module/amdgpu": ["initstate"]},
        files={"/sys/module/amdgpu/version": "6.3.6\n"},
        python=probe(version, "7.0.51831", packages={"rocm-sdk-core": "7.0.2"})))
    result = run(TorchRocmMatch(), host)
    assert (result.status, result.summary) == (
        Status.WARN, "torch built for ROCm 7.0.1-7.0.2 (HIP 7.0.51831); the pip-installed ROCm "
        "7.0.2 matches; the amdgpu driver is not tested with ROCm 7.0.2")
    assert result.findings[-1] == Finding.error(
        "the amdgpu-dkms driver 6.3.6 (AMD GPU Driver 6.0.x) is tested with ROCm 5.6, 5.7, 6.0, "
        "6.1, 6.2 user space, not 7.0")
    assert result.fix is not None and result.fix.text.startswith(
        "Install the torch build for the driver's ROCm (")
    # the same SDK on a driver tested with it: no warning
    fine = SnapshotHost(make_snapshot(
        commands={"rocmdoctor-libload": entry}, dirs={"/sys/module/amdgpu": ["initstate"]},
        files={"/sys/module/amdgpu/version": "6.12.12\n"},
        python=probe(version, "7.0.51831", packages={"rocm-sdk-core": "7.0.2"})))
    assert run(TorchRocmMatch(), fine).status is Status.PASS


def test_the_newest_of_several_wsl_runtimes_is_the_one_copied() -> None:
    # Numbers in file names sort as numbers (issue 28): .so.1.14.0 is newer than .so.1.9.0.
    data = wsl_host("2.4.0+rocm6.3.4", "6.3.42134-a9a80e791").data
    data["paths"]["/opt/rocm/lib/libhsa-runtime64.so.1.9.0"] = {"type": "file"}
    advice = wsl_advice(SnapshotHost(data))
    assert advice is not None and advice.fix is not None
    assert [c for c in advice.fix.commands if c.startswith("cp ")] == [
        "cp /opt/rocm/lib/libhsa-runtime64.so.1.14.0 ."]
