"""torch-install, torch-rocm-match, torch-arch-support, torch-device and torchvision-match.

ROCm machines are replayed from real captures: `torch.utils.collect_env` outputs
(tests/fixtures/real/collect_env-*.txt) turned into the probe's `python` section by
`probe_from_collect_env`, with the rocminfo capture of the same machine or GPU. What a
collect_env capture does not show (the compiled target list) is passed explicitly, with its
source.
"""

from __future__ import annotations

import re
from typing import Any, Optional

import pytest

from rocmdoctor.checks.torch_arch_support import TorchArchSupport
from rocmdoctor.checks.torch_device import TorchDevice
from rocmdoctor.checks.torch_install import TorchInstall
from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch
from rocmdoctor.checks.torchvision_match import TorchvisionMatch
from rocmdoctor.facts.nvidia_gpus import QUERY_KEY
from rocmdoctor.facts.rocm_root import DISTRO_VERSION_FILES
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import torch_wheels as tw
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from tests.helpers import char_dev, fixture_text, make_snapshot

GFX1150_ENV = "collect_env-gfx1150-890m-rocm7.2-container-torch2.9.1.txt"
MI300X_ENV = "collect_env-vllm-gfx942-mi300x-x8-rocm6.2-topology.txt"
WSL_ENV = "collect_env-wsl2-gfx1030-rx6800xt-rocm6.1.3-no-gfx-suffix.txt"
# Asked for and absent on the replayed machines (strict hosts fail on anything else).
ABSENT: tuple[str, ...] = (
    "rocminfo", "/dev/kfd", "/sys/module/amdgpu", "/sys/module/amdgpu/version", "/proc/modules",
    "/sys/module/amdgpu/initstate",
    "/sys/class/kfd/kfd/topology/nodes", "/opt/rocm/.info/version",
    "/opt/rocm/core/.info/version", "/opt/rocm/include/rocm-core/rocm_version.h",
    "/opt/rocm/include/rocm_version.h", "/proc/driver/nvidia/version", "/dev/nvidiactl",
    QUERY_KEY, "/proc/modules", "/sys/module/amdgpu/initstate",
    # rocm-libraries' child, the distribution's version files, the WSL runtime, /proc/1/cgroup
    "rocmdoctor-libload", "/usr/include/rocm-core/rocm_version.h",
    "/usr/lib64/cmake/hip/hip-config-version.cmake",
    "/usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/aarch64-linux-gnu/cmake/hip/hip-config-version.cmake",
    "/usr/lib/cmake/hip/hip-config-version.cmake", "/dev/dxg",
    # where ROCm is (facts/rocm_root.py): /opt/rocm itself, Fedora's and rocm-core's files
    "/opt/rocm", *DISTRO_VERSION_FILES,
)
PACKAGES = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton-rocm", "numpy")
# The targets PyTorch's build script compiles into current ROCm wheels
# (.ci/docker/manywheel/build.sh, PYTORCH_ROCM_ARCH) and uv's per-index lists (kb).
ROCM64_TARGETS = list(tw.INDEX_TARGETS[5].targets)
ROCM62_TARGETS = list(tw.INDEX_TARGETS[2].targets)
assert (tw.INDEX_TARGETS[5].rocm, tw.INDEX_TARGETS[2].rocm) == ("6.4", "6.2")


def probe_from_collect_env(name: str, *, device_count: Optional[int] = None,
                           arch_list: Optional[list[str]] = None,
                           bundles_rocm: Optional[bool] = None) -> dict[str, Any]:
    """The snapshot `python` section a probe would give on the machine of a collect_env capture."""
    text = fixture_text(name)
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and not key.startswith(("[", " ")) and key not in fields:
            fields[key] = value.strip()
    packages = {}
    for m in re.finditer(r"^\[pip3\] ([A-Za-z0-9_.-]+)==(\S+)$", text, re.MULTILINE):
        if m.group(1) in PACKAGES:
            packages[m.group(1)] = m.group(2)
    hip = fields.get("ROCM used to build PyTorch", "N/A")
    cuda = fields.get("CUDA used to build PyTorch", "N/A")
    available = fields.get("Is CUDA available") == "True"
    gpu_line = fields.get("GPU models and configuration", "")
    named = re.fullmatch(r"(.*?)\s*\((gfx[^)]+)\)", gpu_line)
    gpu_name, arch = (named.group(1), named.group(2)) if named else (gpu_line, None)
    count = device_count if device_count is not None else int(available and bool(gpu_line))
    devices = [{"index": i, "name": gpu_name, "arch": arch} for i in range(count)]
    torch: dict[str, Any] = {
        "imported": True, "error": None, "version": fields["PyTorch version"],
        "hip": None if hip == "N/A" else hip, "cuda": None if cuda == "N/A" else cuda,
        "available": available, "device_count": count, "arch_list": arch_list or [],
        "devices": devices,
    }
    if hip != "N/A":
        torch["miopen"] = fields.get("MIOpen runtime version")
        torch["hip_runtime"] = fields.get("HIP runtime version")
        if bundles_rocm is not None:
            torch["bundles_rocm"] = bundles_rocm
    return {"executable": "/usr/bin/python3",
            "version": fields["Python version"].split()[0], "packages": packages,
            "torch": torch}


def rocm_host(probe: dict[str, Any], *, rocminfo: Optional[str] = None,
              rocm_version: Optional[str] = None, kernel: str = "6.8.0-45-generic",
              dkms: Optional[str] = None, amdgpu: bool = True, kfd: bool = True,
              env: Optional[dict[str, str]] = None) -> SnapshotHost:
    """An AMD machine: /dev/kfd, amdgpu (inbox unless `dkms`), ROCm at /opt/rocm."""
    files: dict[str, str] = {}
    paths: dict[str, dict[str, Any]] = {}
    dirs: dict[str, list[str]] = {}
    commands: dict[str, Any] = {}
    if kfd:
        paths["/dev/kfd"] = char_dev()
    if amdgpu:
        dirs["/sys/module/amdgpu"] = ["initstate", "parameters"]
    if dkms:
        files["/sys/module/amdgpu/version"] = dkms + "\n"
    if rocm_version:
        files["/opt/rocm/.info/version"] = rocm_version + "\n"
    if rocminfo:
        commands["rocminfo"] = {"returncode": 0, "stdout": fixture_text(rocminfo),
                                "stderr": "", "timed_out": False}
    data = make_snapshot(files=files, paths=paths, dirs=dirs, commands=commands, kernel=kernel,
                         python=probe, env=env or {})
    return SnapshotHost(data, strict=True, absent=ABSENT)


def plain_host(**kw: Any) -> SnapshotHost:
    return SnapshotHost(make_snapshot(**kw), strict=True, absent=ABSENT)


def whole(r: CheckResult) -> tuple[Any, ...]:
    return (r.status, r.summary, r.findings, r.fix)


# --- Radeon 890M (gfx1150), AMD's rocm/pytorch 7.2 container, torch 2.9.1 ----------------------

def gfx1150_host(**kw: Any) -> SnapshotHost:
    probe = kw.pop("probe", None) or probe_from_collect_env(GFX1150_ENV, bundles_rocm=False)
    return rocm_host(probe, rocminfo="rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt",
                     rocm_version="7.2.0", kernel="6.17.0-1012-oem", **kw)


def test_helper_reads_the_collect_env_capture() -> None:
    probe = probe_from_collect_env(GFX1150_ENV)
    assert probe["version"] == "3.12.3"
    assert probe["packages"] == {
        "numpy": "2.4.1", "torch": "2.9.1+rocm7.2.0.lw.git7e1940d4",
        "torchaudio": "2.9.0+rocm7.2.0.gite3c6ee2b",
        "torchvision": "0.24.0+rocm7.2.0.gitb919bd0c", "triton": "3.5.1+rocm7.2.0.gita272dfa8"}
    assert probe["torch"] == {
        "imported": True, "error": None, "version": "2.9.1+rocm7.2.0.git7e1940d4",
        "hip": "7.2.26015-fc0010cf6a", "cuda": None, "available": True, "device_count": 1,
        "arch_list": [], "devices": [{"index": 0, "name": "AMD Radeon Graphics",
                                      "arch": "gfx1150"}],
        "miopen": "3.5.1", "hip_runtime": "7.2.26015"}


def test_gfx1150_container_torch_install_passes() -> None:
    assert whole(TorchInstall().run(gfx1150_host())) == (
        Status.PASS, "torch 2.9.1+rocm7.2.0.git7e1940d4 imports; ROCm build fits the AMD GPU",
        (), None)


def test_gfx1150_container_torch_rocm_match_with_the_inbox_driver() -> None:
    assert whole(TorchRocmMatch().run(gfx1150_host())) == (
        Status.PASS, "torch built for ROCm 7.2.0 (HIP 7.2.26015); system ROCm 7.2.0 matches",
        (Finding.info("amdgpu is the kernel's own driver (kernel 6.17.0-1012-oem); AMD "
                      "validates ROCm with its amdgpu-dkms driver, and new ROCm releases may "
                      "need a newer kernel"),), None)


def test_gfx1150_container_torchvision_is_a_vendor_pair() -> None:
    assert whole(TorchvisionMatch().run(gfx1150_host())) == (
        Status.PASS, "torchvision 0.24.0+rocm7.2.0.gitb919bd0c with torch "
        "2.9.1+rocm7.2.0.git7e1940d4: same minor release (vendor build)",
        (Finding.info("torchvision 0.24.0+rocm7.2.0.gitb919bd0c was released for another torch "
                      "patch release; torch 2.9.1+rocm7.2.0.git7e1940d4 pairs with torchvision "
                      "0.24.1"),), None)


def test_gfx1150_container_torch_device() -> None:
    assert whole(TorchDevice().run(gfx1150_host())) == (
        Status.PASS, "torch sees 1 GPU; no smoke test ran",
        (Finding.info("GPU 0: AMD Radeon Graphics (gfx1150)"),), None)


def test_gfx1150_with_the_official_rocm64_wheel_needs_a_newer_index() -> None:
    # The same 890M with what `pip install torch --index-url .../rocm6.4` gives (2.9.1).
    probe = probe_from_collect_env(GFX1150_ENV, arch_list=ROCM64_TARGETS, bundles_rocm=True)
    probe["torch"]["version"] = "2.9.1+rocm6.4"
    probe["torch"]["hip"] = "6.4.43484-0f2d60242"
    r = TorchArchSupport().run(gfx1150_host(probe=probe))
    assert whole(r) == (
        Status.FAIL, "gfx1150 is not among the targets compiled into torch 2.9.1+rocm6.4",
        (Finding.error("GPU 0 AMD Radeon Graphics is gfx1150; torch 2.9.1+rocm6.4 was "
                       f"compiled for {', '.join(ROCM64_TARGETS)}"),),
        Fix("Install a PyTorch build that includes gfx1150 (the rocm7.2 wheels do).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm7.2",)))
    # The newest rocm7.2 wheels are torch 2.14.x; their list is PyTorch's build script's.
    assert r.source == tw.MANYWHEEL_BUILD
    # ...and the bundled 6.4 user space on the 30.20 driver (amdgpu-dkms 6.16.6.302xxxxx):
    # AMD's table lists 6.4 for it.
    m = TorchRocmMatch().run(gfx1150_host(probe=probe, dkms="6.16.6"))
    assert whole(m) == (
        Status.PASS, "torch built for ROCm 6.4.2-6.4.3 (HIP 6.4.43484); system ROCm 7.2.0",
        (Finding.info("torch 2.9.1+rocm6.4 carries its own ROCm user-space libraries, so the "
                      "system ROCm version need not match it"),
         Finding.info("the amdgpu-dkms driver 6.16.6 (AMD GPU Driver 30.20.x) is tested with "
                      "ROCm 6.4 user space")), None)


# --- 8x MI300X (gfx942), vLLM's ROCm 6.2 container, torch 2.5.0a0 built from source ----------

def mi300x_host() -> SnapshotHost:
    # PYTORCH_ROCM_ARCH=gfx90a;gfx942 is printed in the capture's environment section, and its
    # topology section shows GPU0..GPU7.
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=["gfx90a", "gfx942"],
                                   bundles_rocm=False)
    return rocm_host(probe, rocm_version="6.2.0", kernel="6.8.0-48-generic")


def test_mi300x_arch_support_from_the_build_arch_list() -> None:
    assert whole(TorchArchSupport().run(mi300x_host())) == (
        Status.PASS, "gfx942 (AMD Instinct MI300X) in torch 2.5.0a0+gitcedc116's compiled "
        "targets", (), None)


def test_mi300x_source_build_against_matching_system_rocm() -> None:
    assert whole(TorchRocmMatch().run(mi300x_host())) == (
        Status.PASS, "torch built for ROCm 6.2.0 (HIP 6.2.41133); system ROCm 6.2.0 matches",
        (Finding.info("amdgpu is the kernel's own driver (kernel 6.8.0-48-generic); AMD "
                      "validates ROCm with its amdgpu-dkms driver, and new ROCm releases may "
                      "need a newer kernel"),), None)


def test_mi300x_source_built_torchvision_one_minor_behind_warns() -> None:
    assert whole(TorchvisionMatch().run(mi300x_host())) == (
        Status.WARN, "torchvision 0.19.1a0+6194369 with torch 2.5.0a0+gitcedc116: not a "
        "released pair",
        (Finding.error("torchvision 0.19.1a0+6194369; torch 2.5.0a0+gitcedc116 pairs with "
                       "torchvision 0.20.0"),
         Finding.hint("a mismatched pair typically fails at import with \"operator "
                      "torchvision::nms does not exist\" or an undefined symbol"),
         Finding.info("torchvision 0.19.1a0+6194369 is a source build: it works only if it was "
                      "built against this torch")),
        Fix("Install torchvision==0.20.0 built for this torch build (from the same source as "
            "torch, e.g. the container or AMD's wheels), or build it from source."))


def test_mi300x_torch_device_without_a_system_gpu_list() -> None:
    r = TorchDevice().run(mi300x_host())
    assert (r.status, r.summary) == (Status.PASS, "torch sees 8 GPUs; no smoke test ran")
    assert r.findings[0] == Finding.info("GPU 0: AMD Instinct MI300X (gfx942:sramecc+:xnack-)")


def test_mi300x_with_a_new_system_rocm_warns_for_a_source_build() -> None:
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=["gfx942"],
                                   bundles_rocm=False)
    r = TorchRocmMatch().run(rocm_host(probe, rocm_version="6.3.4-76"))
    assert whole(r) == (
        Status.WARN, "torch built for ROCm 6.2.0 (HIP 6.2.41133); system ROCm 6.3.4",
        (Finding.error("this torch loads the system's ROCm 6.3.4 libraries but was built for "
                       "ROCm 6.2"),
         Finding.info("amdgpu is the kernel's own driver (kernel 6.8.0-45-generic); AMD "
                      "validates ROCm with its amdgpu-dkms driver, and new ROCm releases may "
                      "need a newer kernel")),
        Fix("Install the official wheel (rocm6.3 fits the installed ROCm 6.3.4) or rebuild "
            "torch against ROCm 6.3.4.",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm6.3",)))


# --- RX 6800 XT (gfx1030) through WSL2, torch 2.1.2+rocm6.1.3 (ROCm issue #3581) --------------

def wsl_host(probe: Optional[dict[str, Any]] = None) -> SnapshotHost:
    return rocm_host(probe or probe_from_collect_env(WSL_ENV),
                     rocminfo="rocminfo-wsl2-gfx1030-rx6800xt-rocm6.1.3.txt",
                     rocm_version="6.1.3", kernel="5.15.153.1-microsoft-standard-WSL2",
                     amdgpu=False, kfd=False)


def test_wsl_torch_rocm_match() -> None:
    assert whole(TorchRocmMatch().run(wsl_host())) == (
        Status.PASS, "torch built for ROCm 6.1.2-6.1.5 (HIP 6.1.40093); system ROCm 6.1.3 "
        "matches", (Finding.info("WSL: the Windows AMD driver runs the GPU (through /dev/dxg); "
                                 "check its version against AMD's WSL support table"),), None)


def test_wsl_gpu_target_comes_from_rocminfo_when_collect_env_lacks_it() -> None:
    probe = probe_from_collect_env(WSL_ENV, arch_list=["gfx1030", "gfx1100"])
    probe["torch"]["devices"] = []
    assert whole(TorchArchSupport().run(wsl_host(probe))) == (
        Status.PASS, "gfx1030 (AMD Radeon RX 6800 XT) in torch 2.1.2+rocm6.1.3's compiled "
        "targets", (), None)


def test_wsl_smoke_test_hang_is_a_torch_device_failure() -> None:
    # Issue #3581: the GPU is listed but kernels never finish under WSL.
    probe = probe_from_collect_env(WSL_ENV)
    probe["torch"]["error"] = ("the probe did not finish within 60 s (while running the smoke "
                               "test on device 0)")
    probe["torch"]["failed_stage"] = "smoke:0"
    assert whole(TorchDevice().run(wsl_host(probe))) == (
        Status.FAIL, "torch failed on the GPU: the probe did not finish within 60 s (while "
        "running the smoke test on device 0)",
        (Finding.error("the probe did not finish within 60 s (while running the smoke test on "
                       "device 0)"),
         Finding.hint("check dmesg for amdgpu/nvidia errors (GPU reset, page fault)")), None)


# --- torch-install: builds that do not fit -------------------------------------------------

def cpu_wheel_probe(torchvision: Optional[str] = None) -> dict[str, Any]:
    packages = {"torch": "2.13.0+cpu", "numpy": "2.4.6"}
    if torchvision:
        packages["torchvision"] = torchvision
    return {"executable": "/home/alice/venv/bin/python", "version": "3.11.7",
            "packages": packages,
            "torch": {"imported": True, "error": None, "version": "2.13.0+cpu", "hip": None,
                      "cuda": None, "available": False, "device_count": 0, "arch_list": [],
                      "devices": [], "smoke": None}}


def test_cpu_wheel_on_an_amd_machine_gets_the_rocm_index_of_the_system_rocm() -> None:
    host = rocm_host(cpu_wheel_probe(), rocm_version=fixture_text(
        "rocm-info-version-6.3.4-76-classic-layout.txt").strip())
    assert whole(TorchInstall().run(host)) == (
        Status.FAIL, "torch 2.13.0+cpu is a CPU build on an AMD machine",
        (Finding.error("torch 2.13.0+cpu is a CPU build, but this is an AMD machine (the amdgpu "
                       "driver is loaded, /dev/kfd exists, ROCm is installed): torch cannot use "
                       "the GPU"),),
        Fix("Install the ROCm build of PyTorch with the pip of /home/alice/venv/bin/python "
            "(rocm6.3 fits the installed ROCm 6.3.4).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm6.3",)))


def test_a_cpu_torch_shadowing_a_rocm_one_says_the_wrong_build_first() -> None:
    # A CPU wheel in the user's site-packages imported before the ROCm wheel pip recorded.
    probe = cpu_wheel_probe()
    probe["packages"]["torch"] = "2.5.1+rocm6.2"
    probe["torch"]["location"] = "/home/alice/.local/lib/python3.11/site-packages/torch"
    host = rocm_host(probe, rocm_version=fixture_text(
        "rocm-info-version-6.3.4-76-classic-layout.txt").strip())
    assert whole(TorchInstall().run(host)) == (
        Status.FAIL, "torch 2.13.0+cpu is a CPU build on an AMD machine",
        (Finding.error("torch 2.13.0+cpu is a CPU build, but this is an AMD machine (the amdgpu "
                       "driver is loaded, /dev/kfd exists, ROCm is installed): torch cannot use "
                       "the GPU"),
         Finding.hint("the imported torch (/home/alice/.local/lib/python3.11/site-packages/"
                      "torch) is 2.13.0+cpu, but pip's metadata says 2.5.1+rocm6.2: two installs "
                      "shadow each other")),
        Fix("Install the ROCm build of PyTorch with the pip of /home/alice/venv/bin/python "
            "(rocm6.3 fits the installed ROCm 6.3.4).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm6.3",)))


def test_cpu_wheel_on_a_cpu_machine_passes() -> None:
    host = plain_host(python=cpu_wheel_probe())
    assert whole(TorchInstall().run(host)) == (
        Status.PASS, "torch 2.13.0+cpu imports; CPU build; no GPU expected", (), None)


def test_rocm_wheel_on_an_nvidia_machine_gets_a_cuda_index_for_its_driver() -> None:
    probe = probe_from_collect_env(GFX1150_ENV)
    smi = "0, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00, 700.00, 143771, GPU-1, 0:18:00.0\n"
    host = plain_host(
        python=probe, commands={QUERY_KEY: smi},
        paths={"/dev/nvidiactl": {"type": "char", "mode": "0666"}})
    assert whole(TorchInstall().run(host)) == (
        Status.FAIL, "torch 2.9.1+rocm7.2.0.git7e1940d4 is a ROCm build on an NVIDIA machine",
        (Finding.error("torch 2.9.1+rocm7.2.0.git7e1940d4 is a ROCm build, but this is an "
                       "NVIDIA machine (/dev/nvidiactl exists): torch cannot use the GPU"),),
        Fix("Install the CUDA build of PyTorch with the pip of /usr/bin/python3 (cu126 is the "
            "newest build driver 570.133.20 can run).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/cu126",)))


@pytest.mark.parametrize(("nvidia", "why", "index"), [
    (False, "cpu: no GPU here", "cpu"),
    (True, "cu126 is the newest build driver 570.133.20 can run", "cu126"),
])
def test_torch_not_installed_gets_the_index_of_the_machine(nvidia: bool, why: str,
                                                           index: str) -> None:
    probe = {"executable": "/usr/bin/python3", "version": "3.12.3", "packages": {},
             "torch": {"imported": False, "error": "ModuleNotFoundError: No module named "
                       "'torch'", "traceback": "..."}}
    smi = "0, NVIDIA H200, 570.133.20, 9.0, Enabled, 700.00, 700.00, 143771, GPU-1, 0:18:00.0\n"
    host = plain_host(python=probe, **(
        {"commands": {QUERY_KEY: smi}, "paths": {"/dev/nvidiactl": {"type": "char",
                                                                    "mode": "0666"}}}
        if nvidia else {}))
    assert whole(TorchInstall().run(host)) == (
        Status.FAIL, "torch is not installed in /usr/bin/python3",
        (Finding.error("ModuleNotFoundError: No module named 'torch'"),),
        Fix(f"Install PyTorch with the pip of /usr/bin/python3 ({why}).",
            (f"pip install torch torchvision --index-url https://download.pytorch.org/whl/"
             f"{index}",)))


def test_an_imported_torch_other_than_pips_is_two_installs() -> None:
    # The MI300X container's source build imported, while pip's metadata names another torch.
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=["gfx90a", "gfx942"],
                                   bundles_rocm=False)
    probe["packages"]["torch"] = "2.4.1+rocm6.1"
    probe["torch"]["location"] = "/usr/local/lib/python3.10/dist-packages/torch"
    assert whole(TorchInstall().run(rocm_host(probe, rocm_version="6.2.0"))) == (
        Status.PASS, "torch 2.5.0a0+gitcedc116 imports; ROCm build fits the AMD GPU",
        (Finding.hint("the imported torch (/usr/local/lib/python3.10/dist-packages/torch) is "
                      "2.5.0a0+gitcedc116, but pip's metadata says 2.4.1+rocm6.1: two installs "
                      "shadow each other"),), None)


def test_torch_not_installed() -> None:
    probe = {"executable": "/usr/bin/python3", "version": "3.12.3", "packages": {},
             "torch": {"imported": False, "error": "ModuleNotFoundError: No module named "
                       "'torch'", "traceback": "..."}}
    r = TorchInstall().run(rocm_host(probe, rocm_version="7.2.0"))
    assert whole(r) == (
        Status.FAIL, "torch is not installed in /usr/bin/python3",
        (Finding.error("ModuleNotFoundError: No module named 'torch'"),),
        Fix("Install PyTorch with the pip of /usr/bin/python3 (rocm7.2 fits the installed "
            "ROCm 7.2.0).", ("pip install torch torchvision --index-url "
                             "https://download.pytorch.org/whl/rocm7.2",)))


def test_torch_that_does_not_import() -> None:
    probe = {"executable": "/usr/bin/python3", "version": "3.12.3",
             "packages": {"torch": "2.5.1+rocm6.2"},
             "torch": {"imported": False, "error": "OSError: libamdhip64.so: cannot open shared "
                       "object file: No such file or directory", "failed_stage": None}}
    r = TorchInstall().run(rocm_host(probe))
    assert whole(r) == (
        Status.FAIL, "torch 2.5.1+rocm6.2 is installed in /usr/bin/python3 but does not import",
        (Finding.error("import torch: OSError: libamdhip64.so: cannot open shared object file: "
                       "No such file or directory"),),
        Fix("Reinstall PyTorch with the pip of /usr/bin/python3 (rocm7.14 is the newest ROCm "
            "index; the wheel brings its own ROCm libraries).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm7.14",)))


def test_probe_that_hung_while_importing_has_no_reinstall_fix() -> None:
    probe = {"executable": "/usr/bin/python3", "packages": {"torch": "2.5.1+rocm6.2"},
             "torch": {"imported": False, "failed_stage": "import",
                       "error": "the probe did not finish within 60 s (while importing torch)"},
             "probe": {"returncode": 124, "timed_out": True}}
    assert whole(TorchInstall().run(rocm_host(probe))) == (
        Status.FAIL, "the PyTorch probe failed: the probe did not finish within 60 s (while "
        "importing torch)",
        (Finding.error("the probe did not finish within 60 s (while importing torch)"),), None)


def test_no_probe_skips_every_torch_check() -> None:
    host = plain_host()
    for check in (TorchInstall(), TorchRocmMatch(), TorchArchSupport(), TorchDevice(),
                  TorchvisionMatch()):
        assert check.applies(host) == "the Python/PyTorch probe was not run"


# --- torchvision-match ---------------------------------------------------------------------

def test_captured_pypi_torchvision_beside_a_cpu_torch() -> None:
    # tests/fixtures/captured/torchvision-nms-does-not-exist-tv0.28.0-torch2.13.0cpu.txt
    host = plain_host(python=cpu_wheel_probe("0.28.0"))
    assert whole(TorchvisionMatch().run(host)) == (
        Status.FAIL, "torchvision 0.28.0 with torch 2.13.0+cpu: different builds",
        (Finding.error("torch is a CPU build, torchvision a default (CUDA) build: "
                       "torchvision's compiled operators will not load"),),
        Fix("Install the torchvision that pairs with torch 2.13.0+cpu.",
            ("pip install torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cpu",)))


@pytest.mark.parametrize(("torch", "vision", "line"), [
    ("2.9.1", "0.15.2", "pip install torchvision==0.24.1"),
    ("2.9.1+rocm6.4", "0.15.2+rocm5.4.2",
     "pip install torchvision==0.24.1 --index-url https://download.pytorch.org/whl/rocm6.4"),
])
def test_torch_2_9_1_with_torchvision_0_15_2(torch: str, vision: str, line: str) -> None:
    probe = cpu_wheel_probe(vision)
    probe["torch"]["version"] = torch
    r = TorchvisionMatch().run(plain_host(python=probe))
    assert whole(r) == (
        Status.FAIL, f"torchvision {vision} with torch {torch}: not a pair",
        (Finding.error(f"torchvision {vision} (pins torch==2.0.1); torch {torch} pairs with "
                       "torchvision 0.24.1"),
         Finding.hint("a mismatched pair typically fails at import with \"operator "
                      "torchvision::nms does not exist\" or an undefined symbol")),
        Fix(f"Install the torchvision that pairs with torch {torch}.", (line,)))


@pytest.mark.parametrize(("torch", "vision", "what", "index"), [
    ("2.5.1+cu124", "0.20.1+cu121", "a CUDA (cu124) build, torchvision a CUDA (cu121)", "cu124"),
    ("2.5.1+rocm6.2", "0.20.1+cpu", "a ROCm 6.2 build, torchvision a CPU", "rocm6.2"),
    # torch 2.6's ROCm index has three parts (rocm6.2.4)
    ("2.6.0+rocm6.2.4", "0.21.0+cpu", "a ROCm 6.2 build, torchvision a CPU", "rocm6.2.4"),
])
def test_a_pair_from_two_indexes_fails(torch: str, vision: str, what: str, index: str) -> None:
    probe = cpu_wheel_probe(vision)
    probe["torch"]["version"] = torch
    want = vision.split("+")[0]
    assert whole(TorchvisionMatch().run(plain_host(python=probe))) == (
        Status.FAIL, f"torchvision {vision} with torch {torch}: different builds",
        (Finding.error(f"torch is {what} build: torchvision's compiled operators will not "
                       "load"),),
        Fix(f"Install the torchvision that pairs with torch {torch}.",
            (f"pip install torchvision=={want} --index-url https://download.pytorch.org/whl/"
             f"{index}",)))


@pytest.mark.parametrize(("torch", "vision"), [
    ("2.5.1", "0.20.1+cu124"),  # PyPI's untagged torch is the default CUDA (12.4) build
    ("2.5.1+rocm6.2", "0.20.1a0+6194369"),  # torchvision built from source against it
])
def test_a_pair_of_one_build_passes(torch: str, vision: str) -> None:
    probe = cpu_wheel_probe(vision)
    probe["torch"]["version"] = torch
    assert whole(TorchvisionMatch().run(plain_host(python=probe))) == (
        Status.PASS, f"torchvision {vision} with torch {torch}: a matching pair", (), None)


def test_matching_official_pair_passes_and_patch_mismatch_warns() -> None:
    probe = cpu_wheel_probe("0.20.1+rocm6.2")
    probe["torch"]["version"] = "2.5.1+rocm6.2"
    host = plain_host(python=probe)
    assert whole(TorchvisionMatch().run(host)) == (
        Status.PASS, "torchvision 0.20.1+rocm6.2 with torch 2.5.1+rocm6.2: a matching pair",
        (), None)
    probe["packages"]["torchvision"] = "0.20.0+rocm6.2"
    r = TorchvisionMatch().run(plain_host(python=probe))
    assert (r.status, r.summary, r.fix) == (
        Status.WARN, "torchvision 0.20.0+rocm6.2 with torch 2.5.1+rocm6.2: patch releases differ",
        Fix("Install the torchvision that pairs with torch 2.5.1+rocm6.2.",
            ("pip install torchvision==0.20.1 --index-url "
             "https://download.pytorch.org/whl/rocm6.2",)))


def test_torchvision_not_installed_skips() -> None:
    host = plain_host(python=cpu_wheel_probe())
    assert TorchvisionMatch().applies(host) == "torchvision is not installed"


# --- torch-arch-support: integrated GPUs, overrides, CUDA capabilities ----------------------------

def test_igpu_outside_the_targets_beside_a_supported_card_warns() -> None:
    probe = probe_from_collect_env(WSL_ENV, arch_list=ROCM62_TARGETS)
    probe["torch"].update(version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766", device_count=2,
                          devices=[{"index": 0, "name": "AMD Radeon RX 6800 XT", "arch": "gfx1030"},
                                   {"index": 1, "name": "AMD Radeon Graphics", "arch": "gfx1036"}])
    host = rocm_host(probe, rocminfo="rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt")
    assert whole(TorchArchSupport().run(host)) == (
        Status.WARN, "the integrated GPU (gfx1036) is not in torch's targets; GPU 0 is",
        (Finding.error("GPU 1 AMD Radeon Graphics is gfx1036; torch 2.5.1+rocm6.2 was compiled "
                       f"for {', '.join(ROCM62_TARGETS)}"),),
        Fix("Hide the integrated GPU from PyTorch.", ("export HIP_VISIBLE_DEVICES=0",)))


def test_780m_gets_the_newest_wheel_with_gfx1103_and_the_override_as_a_hint() -> None:
    # gfx1103 entered PyTorch's wheel arch list for torch 2.13 (pytorch#179653); with no system
    # ROCm the newest index is the one to install from. The override carries AMD's register-
    # file caveat (ROCm#4557).
    probe = probe_from_collect_env(WSL_ENV, arch_list=ROCM62_TARGETS)
    probe["torch"].update(version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766", device_count=0,
                          available=False, devices=[])
    host = rocm_host(probe, rocminfo="rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt")
    r = TorchArchSupport().run(host)
    assert whole(r) == (
        Status.FAIL, "gfx1103 is not among the targets compiled into torch 2.5.1+rocm6.2",
        (Finding.error("GPU 0 AMD Radeon Graphics is gfx1103; torch 2.5.1+rocm6.2 was compiled "
                       f"for {', '.join(ROCM62_TARGETS)}"),
         Finding.hint("unofficial: export HSA_OVERRIDE_GFX_VERSION=11.0.0 runs the gfx1100 "
                      "(RX 7900) code on this RDNA3 GPU; the instruction set is the same, but "
                      "gfx1103 has fewer registers than gfx1100, so gfx1100 kernels that need "
                      "them fail on it (AMD, ROCm#4557) "
                      "(https://github.com/ROCm/ROCm/issues/4557)")),
        Fix("Install a PyTorch build that includes gfx1103 (the rocm7.14 wheels do).",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm7.14",)))
    assert r.source == tw.MANYWHEEL_BUILD
    assert whole(TorchDevice().run(host)) == (
        Status.FAIL, "torch sees no GPU; rocminfo lists 1",
        (Finding.error("rocminfo lists gfx1103 AMD Radeon Graphics"),),
        Fix("See the kfd-access, gfx-override, visible-devices and torch-arch-support results "
            "for why the runtime hides the GPU."))


@pytest.mark.parametrize(("arch", "name", "fix"), [
    # RDNA1: in no ROCm wheel's list (kb.torch_wheels.INDEX_TARGETS) and no override reported.
    ("gfx1010", "AMD Radeon RX 5700 XT", "No official PyTorch wheel includes gfx1010: build "
     "PyTorch from source with PYTORCH_ROCM_ARCH=gfx1010."),
    # a target newer than the tables
    ("gfx1300", "AMD Radeon Graphics", f"gfx1300 is newer than what this rocmdoctor knows, "
     f"tables dated {KB_DATE}: no wheel in its tables includes it. Check PyTorch's current ROCm "
     "wheels, or build PyTorch from source with PYTORCH_ROCM_ARCH=gfx1300."),
])
def test_a_target_no_wheel_has_is_built_from_source(arch: str, name: str, fix: str) -> None:
    probe = probe_from_collect_env(WSL_ENV, arch_list=ROCM62_TARGETS)
    probe["torch"].update(version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766", device_count=1,
                          devices=[{"index": 0, "name": name, "arch": arch}])
    assert whole(TorchArchSupport().run(rocm_host(probe))) == (
        Status.FAIL, f"{arch} is not among the targets compiled into torch 2.5.1+rocm6.2",
        (Finding.error(f"GPU 0 {name} is {arch}; torch 2.5.1+rocm6.2 was compiled for "
                       f"{', '.join(ROCM62_TARGETS)}"),), Fix(fix))


@pytest.mark.parametrize(("rocm", "index", "hint"), [
    # ROCm 6.2.0's index has no gfx1201: the newest index that has it (its wheels bundle ROCm)
    ("6.2.0", "7.14", (Finding.hint(
        "ROCm 6.2.0 predates AMD's support for gfx1201: AMD lists it from ROCm 6.4.1 on "
        "(https://rocm.docs.amd.com/en/docs-6.4.1/about/release-notes.html)"),)),
    # ROCm 6.4.1, the first release AMD lists gfx1201 in: its own index, no hint
    ("6.4.1", "6.4", ()),
])
def test_rx9070_on_a_rocm62_wheel_gets_an_index_with_gfx1201(
        rocm: str, index: str, hint: tuple[Finding, ...]) -> None:
    probe = probe_from_collect_env(WSL_ENV, arch_list=ROCM62_TARGETS)
    probe["torch"].update(version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766", device_count=1,
                          devices=[{"index": 0, "name": "AMD Radeon RX 9070 XT",
                                    "arch": "gfx1201"}])
    assert whole(TorchArchSupport().run(rocm_host(probe, rocm_version=rocm))) == (
        Status.FAIL, "gfx1201 is not among the targets compiled into torch 2.5.1+rocm6.2",
        (Finding.error("GPU 0 AMD Radeon RX 9070 XT is gfx1201; torch 2.5.1+rocm6.2 was "
                       f"compiled for {', '.join(ROCM62_TARGETS)}"), *hint),
        Fix(f"Install a PyTorch build that includes gfx1201 (the rocm{index} wheels do).",
            ("pip install --force-reinstall torch torchvision --index-url "
             f"https://download.pytorch.org/whl/rocm{index}",)))


def test_arch_support_applies_on_a_gpu_machine_and_not_on_a_cpu_one() -> None:
    assert TorchArchSupport().applies(mi300x_host()) is None
    probe = probe_from_collect_env(GFX1150_ENV, arch_list=ROCM64_TARGETS)
    assert TorchArchSupport().applies(plain_host(python=probe)) == "no GPU on this machine"


# --- torch-device --------------------------------------------------------------------------

def test_torch_sees_fewer_gpus_than_rocminfo_warns() -> None:
    probe = probe_from_collect_env(WSL_ENV)
    host = rocm_host(probe, rocminfo="rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt")
    r = TorchDevice().run(host)
    assert (r.status, r.summary) == (Status.WARN, "torch sees 1 GPU; rocminfo lists 2")
    assert r.findings[-1] == Finding.error(
        "rocminfo lists 2: gfx1030 AMD Radeon RX 6800 XT; gfx1036 AMD Radeon Graphics")


def test_hip_visible_devices_explains_the_count() -> None:
    probe = probe_from_collect_env(WSL_ENV)
    host = rocm_host(probe, rocminfo="rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt",
                     env={"HIP_VISIBLE_DEVICES": "0"})
    assert whole(TorchDevice().run(host)) == (
        Status.PASS, "torch sees 1 GPU (HIP_VISIBLE_DEVICES=0); no smoke test ran",
        (Finding.info("GPU 0: AMD Radeon RX 6800 XT"),), None)


def test_rocr_visible_devices_applies_to_the_gpus_sysfs_lists() -> None:
    """Without rocminfo the GPUs come from the KFD topology in sysfs, which does not apply
    ROCR_VISIBLE_DEVICES (rocminfo does): the check applies it. The MI300X box of the vLLM
    capture, its four GPU nodes as tests/test_visible_devices.py writes them."""
    from tests.test_visible_devices import MI300X_SYSFS

    def host(count: int) -> SnapshotHost:
        probe = probe_from_collect_env(MI300X_ENV, device_count=count,
                                       arch_list=["gfx90a", "gfx942"], bundles_rocm=False)
        return SnapshotHost(make_snapshot(
            files={**MI300X_SYSFS, "/opt/rocm/.info/version": "6.2.0\n"},
            paths={"/dev/kfd": char_dev()}, dirs={"/sys/module/amdgpu": ["initstate"]},
            python=probe, env={"ROCR_VISIBLE_DEVICES": "0,1"},
            commands={"rocminfo": {"returncode": 127, "stdout": "", "not_found": True,
                                   "stderr": "rocminfo: command not found"}}))

    gpu = "AMD Instinct MI300X (gfx942:sramecc+:xnack-)"
    assert whole(TorchDevice().run(host(2))) == (
        Status.PASS, "torch sees 2 GPUs (ROCR_VISIBLE_DEVICES=0,1); no smoke test ran",
        (Finding.info(f"GPU 0: {gpu}"), Finding.info(f"GPU 1: {gpu}")), None)
    mi300 = "gfx942 Instinct MI300X/MI300A/MI325X"
    assert whole(TorchDevice().run(host(1))) == (
        Status.WARN, "torch sees 1 GPU; the KFD topology lists 2 (ROCR_VISIBLE_DEVICES=0,1)",
        (Finding.info(f"GPU 0: {gpu}"),
         Finding.error(f"the KFD topology lists 2 (ROCR_VISIBLE_DEVICES=0,1): {mi300}; "
                       f"{mi300}")),
        Fix("Check HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (see visible-devices)."))


def test_torch_device_applies_to_a_gpu_torch_can_use() -> None:
    assert TorchDevice().applies(mi300x_host()) is None
    # the 890M's ROCm torch on a machine with no GPU, and a CPU wheel on an AMD machine
    assert TorchDevice().applies(plain_host(python=probe_from_collect_env(GFX1150_ENV))) == (
        "no GPU on this machine")
    assert TorchDevice().applies(rocm_host(cpu_wheel_probe(), rocm_version="7.2.0")) == (
        "torch is a CPU build (see torch-install)")


def test_smoke_failure_names_the_device() -> None:
    probe = probe_from_collect_env(GFX1150_ENV)
    probe["torch"]["devices"][0]["smoke"] = {
        "ok": False, "error": "matmul differs from the CPU result (max error matmul 3.2, "
        "conv2d 0; tolerance 0.001)"}
    r = TorchDevice().run(gfx1150_host(probe=probe))
    assert (r.status, r.summary) == (
        Status.FAIL, "the smoke test failed on GPU 0 (AMD Radeon Graphics)")
    assert r.findings[-1] == Finding.error(
        "GPU 0 AMD Radeon Graphics: matmul differs from the CPU result (max error matmul 3.2, "
        "conv2d 0; tolerance 0.001)")



def test_wheel_newer_than_the_dkms_driver_is_tested_with_warns() -> None:
    # The 6.0.x driver is tested with 5.6-6.2 user space (user/kernel-space support matrix).
    probe = probe_from_collect_env(MI300X_ENV, device_count=8, arch_list=ROCM64_TARGETS,
                                   bundles_rocm=True)
    probe["torch"].update(version="2.9.1+rocm6.4", hip="6.4.43484-0f2d60242")
    r = TorchRocmMatch().run(rocm_host(probe, rocm_version="6.0.2-115", dkms="6.3.6"))
    assert whole(r) == (
        Status.WARN, "torch built for ROCm 6.4.2-6.4.3 (HIP 6.4.43484); system ROCm 6.0.2; the "
        "amdgpu driver is not tested with ROCm 6.4",
        (Finding.info("torch 2.9.1+rocm6.4 carries its own ROCm user-space libraries, so the "
                      "system ROCm version need not match it"),
         Finding.error("the amdgpu-dkms driver 6.3.6 (AMD GPU Driver 6.0.x) is tested with ROCm "
                       "5.6, 5.7, 6.0, 6.1, 6.2 user space, not 6.4")),
        Fix("Install the torch build for the driver's ROCm (rocm6.0 fits the installed ROCm "
            "6.0.2), or upgrade the driver with amdgpu-install.",
            ("pip install --force-reinstall torch torchvision --index-url "
             "https://download.pytorch.org/whl/rocm6.0",)))
    assert r.source == tw.KMD_MATRIX


def test_an_interpreter_that_cannot_run_is_named_not_blamed_on_torch() -> None:
    from rocmdoctor.host import CommandResult
    from rocmdoctor.host.probe import interpret

    probe = interpret("/opt/missing/bin/python",
                      CommandResult(returncode=127, stderr="python: command not found"))
    result = TorchInstall().run(plain_host(python=probe))
    error = "cannot run /opt/missing/bin/python: no such interpreter (or it is not executable)"
    assert whole(result) == (
        Status.FAIL, error, (Finding.error(error),),
        Fix("Point rocmdoctor at the Python that will train.",
            ("rocmdoctor check --python /path/to/venv/bin/python",)))
