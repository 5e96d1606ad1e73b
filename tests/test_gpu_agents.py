"""gpu-agents: every real rocminfo capture replayed through a strict SnapshotHost."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import pytest

from rocmdoctor.checks.gpu_agents import GPU_ISOLATION, ROCMINFO_DOC, GpuAgents, size_text
from rocmdoctor.facts.amd_gpus import KFD_NODES, amd_gpus
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.rocminfo_failures import DMESG_KFD, ROCMINFO_FAILURES
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = GpuAgents()
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}
SIGNALS = ("/sys/module/amdgpu", "/dev/kfd", "/proc/driver/nvidia/version", "/dev/nvidiactl")
RULES = {r.key: r for r in ROCMINFO_FAILURES}
NO_ROCM_VERSION = tuple(f"/opt/rocm/{p}" for p in (
    ".info/version", "core/.info/version", "include/rocm-core/rocm_version.h",
    "include/rocm_version.h"))
INFO, HINT, ERR = Finding.info, Finding.hint, Finding.error

# KFD topology of an RX 7900 XTX box in the kernel's format (kfd_topology.c node_show(): one
# "<name> <value>" line per property, CPU nodes report simd_count 0). Values as rocminfo
# shows them for the same card: 96 CUs x 2 SIMDs, location 768, GPU-af80fc06fd8c76ab.
CPU_NODE = """cpu_cores_count 12
simd_count 0
mem_banks_count 1
caches_count 0
io_links_count 1
p2p_links_count 0
cpu_core_id_base 0
simd_id_base 0
max_waves_per_simd 0
lds_size_in_kb 0
gds_size_in_kb 0
num_gws 0
wave_front_size 0
array_count 0
simd_arrays_per_engine 0
cu_per_simd_array 0
simd_per_cu 0
max_slots_scratch_cu 0
gfx_target_version 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0
hive_id 0
num_sdma_engines 0
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 0
num_cp_queues 0
max_engine_clk_ccompute 4267
"""
XTX_NODE = """cpu_cores_count 0
simd_count 192
mem_banks_count 1
caches_count 206
io_links_count 1
p2p_links_count 0
cpu_core_id_base 0
simd_id_base 2147487744
max_waves_per_simd 16
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 32
array_count 12
simd_arrays_per_engine 2
cu_per_simd_array 8
simd_per_cu 2
max_slots_scratch_cu 32
gfx_target_version 110000
vendor_id 4098
device_id 29772
location_id 768
domain 0
drm_render_minor 128
hive_id 0
num_sdma_engines 2
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 6
num_cp_queues 8
max_engine_clk_fcompute 2482
local_mem_size 0
fw_version 2150
capability 671588992
debug_prop 1495
sdma_fw_version 21
unique_id 12646384860610197163
num_xcc 1
max_engine_clk_ccompute 4267
"""
XTX_SYSFS = {f"{KFD_NODES}/0/properties": CPU_NODE, f"{KFD_NODES}/0/name": "\n",
             f"{KFD_NODES}/1/properties": XTX_NODE, f"{KFD_NODES}/1/name": "ip discovery\n"}


def host(rocminfo: Optional[dict[str, Any]] = None, env: Optional[dict[str, str]] = None,
         files: Optional[dict[str, str]] = None, rocm: bool = True,
         absent: tuple[str, ...] = ()) -> SnapshotHost:
    commands = {"rocminfo": rocminfo} if rocminfo is not None else {}
    snap = make_snapshot(env=env, files={**(ROCM if rocm else {}), **(files or {})},
                         commands=commands)
    return SnapshotHost(snap, strict=True,
                        absent=SIGNALS + absent + (() if rocm else NO_ROCM_VERSION))


def ran(text: str, rc: int = 0) -> dict[str, Any]:
    return {"returncode": rc, "stdout": text, "stderr": "", "timed_out": False}


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def mi300x(i: int, uuid: str) -> Finding:
    return INFO(f"GPU {i}: gfx942:sramecc+:xnack- AMD Instinct MI300X, 304 CUs, 192 GiB memory "
             f"pool, KFD node {i + 2}, {uuid}")


def mi25(i: int, uuid: str = "") -> Finding:
    tail = f", {uuid}" if uuid else ""
    return INFO(f"GPU {i}: gfx900:xnack- Radeon Instinct MI25, 64 CUs, 16 GiB memory pool, "
             f"KFD node {i + 1}{tail}")


IGPU_FINDINGS = (
    INFO("GPU 0: gfx1030 AMD Radeon RX 6800 XT, 72 CUs, 16 GiB memory pool, KFD node 1, "
      "GPU-e0ce170bfa1769dd"),
    INFO("GPU 1: gfx1036 AMD Radeon Graphics, 2 CUs, 512 MiB memory pool, KFD node 2, "
      "no unique id (GPU-XX), integrated"))
IGPU_HINT = HINT(
    "GPU 1 (gfx1036 AMD Radeon Graphics, 2 CUs, 512 MiB memory pool, no unique id (GPU-XX)) "
    "is the processor's integrated GPU: HIP programs count it as a device of their own, so "
    "code that uses every GPU or picks one by index can land on it")


def igpu_fix(rocr: str) -> Fix:
    return Fix("Expose only the discrete GPU(s) (gfx1030 AMD Radeon RX 6800 XT) with "
               "ROCR_VISIBLE_DEVICES, which AMD recommends on Linux (or HIP_VISIBLE_DEVICES=0); "
               "add the line to your shell profile to keep it.",
               commands=(f"export ROCR_VISIBLE_DEVICES={rocr}",))


LISTED: dict[str, CheckResult] = {
    "rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt": expect(
        Status.WARN, "integrated GPU beside the discrete one: gfx1036 AMD Radeon Graphics (GPU 1)",
        IGPU_FINDINGS + (IGPU_HINT,), igpu_fix("0"), GPU_ISOLATION),
    "rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt": expect(
        Status.PASS, "1 GPU: gfx1100 Radeon RX 7900 XTX (96 CUs)",
        (INFO("GPU 0: gfx1100 Radeon RX 7900 XTX, 96 CUs, 24 GiB memory pool, KFD node 1, "
           "GPU-af80fc06fd8c76ab"),), source=ROCMINFO_DOC),
    "rocminfo-gfx1103-780m-apu-ryzen7840u-rocm6.1.1.txt": expect(
        Status.PASS, "1 GPU: gfx1103 AMD Radeon Graphics (12 CUs, integrated)",
        (INFO("GPU 0: gfx1103 AMD Radeon Graphics, 12 CUs, 15 GiB memory pool, KFD node 1, "
           "no unique id (GPU-XX), integrated"),), source=ROCMINFO_DOC),
    "rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt": expect(
        Status.PASS, "1 GPU: gfx1150 AMD Radeon Graphics (16 CUs, integrated)",
        (INFO("GPU 0: gfx1150 AMD Radeon Graphics, 16 CUs, 12 GiB memory pool, KFD node 1, "
           "no unique id (GPU-XX), integrated"),), source=ROCMINFO_DOC),
    "rocminfo-gfx900-mi25-x7-threadripper-multigpu.txt": expect(
        Status.PASS, "7 GPUs: 7 × gfx900 Radeon Instinct MI25 (64 CUs)",
        tuple(mi25(i) for i in range(6)) + (mi25(6, "GPU-0213fb02cc8c08a4"),),
        source=ROCMINFO_DOC),
    "rocminfo-gfx902-ryzen2500u-apu-rocm3.x-oldformat.txt": expect(
        Status.PASS, "1 GPU: gfx902 AMD Ryzen 5 2500U with Radeon Vega Mobile Gfx "
        "(11 CUs, integrated)",
        (INFO("GPU 0: gfx902+xnack AMD Ryzen 5 2500U with Radeon Vega Mobile Gfx, 11 CUs, "
           "KFD node 0, integrated"),), source=ROCMINFO_DOC),
    "rocminfo-gfx90c-ryzen4300u-apu-rocm5.7.txt": expect(
        Status.PASS, "1 GPU: gfx90c AMD Radeon Graphics (5 CUs, integrated)",
        (INFO("GPU 0: gfx90c:xnack- AMD Radeon Graphics, 5 CUs, 4.0 GiB memory pool, KFD node 1, "
           "no unique id (GPU-XX), integrated"),), source=ROCMINFO_DOC),
    "rocminfo-gfx942-mi300x-x4-epyc9474f.txt": expect(
        Status.PASS, "4 GPUs: 4 × gfx942 AMD Instinct MI300X (304 CUs)",
        (mi300x(0, "GPU-8d1457e2c20f59d2"), mi300x(1, "GPU-b4fa34630e85d42a"),
         mi300x(2, "GPU-e8986800e182538a"), mi300x(3, "GPU-eff71edc82169115")),
        source=ROCMINFO_DOC),
    "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt": expect(
        Status.WARN, "integrated GPU beside the discrete one: gfx1151 (GPU 1)",
        (INFO("GPU 0: gfx1201"), INFO("GPU 1: gfx1151, integrated"),
         HINT("GPU 1 (gfx1151) is the processor's integrated GPU: HIP programs count it as a "
           "device of their own, so code that uses every GPU or picks one by index can land "
           "on it")),
        Fix("Expose only the discrete GPU(s) (gfx1201) with ROCR_VISIBLE_DEVICES, which AMD "
            "recommends on Linux (or HIP_VISIBLE_DEVICES=0); add the line to your shell "
            "profile to keep it.", commands=("export ROCR_VISIBLE_DEVICES=0",)),
        GPU_ISOLATION),
    "rocminfo-grep-sysinfo-gfx906-radeonvii-x2-rocm6.3.0.txt": expect(
        Status.PASS, "2 GPUs: 2 × gfx906 AMD Radeon VII",
        (INFO("GPU 0: gfx906:sramecc+:xnack- AMD Radeon VII"),
         INFO("GPU 1: gfx906:sramecc+:xnack- AMD Radeon VII")), source=ROCMINFO_DOC),
    "rocminfo-wsl2-gfx1030-rx6800xt-rocm6.1.3.txt": expect(
        Status.PASS, "1 GPU: gfx1030 AMD Radeon RX 6800 XT (72 CUs)",
        (INFO("GPU 0: gfx1030 AMD Radeon RX 6800 XT, 72 CUs, 16 GiB memory pool, KFD node 1"),),
        source=ROCMINFO_DOC),
}


@pytest.mark.parametrize("name", sorted(LISTED))
def test_listed(name: str) -> None:
    assert run(host(ran(fixture_text(name)))) == LISTED[name]


def failed(key: str, said: str, likelihood: str, *extra: Finding) -> CheckResult:
    """`likelihood`: "Likely" for a message with one known cause, "Possible" for several."""
    rule = RULES[key]
    return expect(Status.FAIL, f"rocminfo failed: {said}",
                  (ERR(f"{likelihood} cause: {rule.cause}"), *extra), rule.fix, rule.source)


FAILED: dict[str, CheckResult] = {
    "rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt": failed(
        "kfd-einval", "Unable to open /dev/kfd read-write: Invalid argument", "Likely",
        INFO("rocminfo also said: root is member of nogroup group")),
    "rocminfo-fail-kfd-enomem-navi14-rocm3.10.txt": failed(
        "kfd-enomem", "Unable to open /dev/kfd read-write: Cannot allocate memory", "Possible",
        INFO("rocminfo also said: Failed to get user name to check for render group membership")),
    "rocminfo-fail-kfd-enomem-videogroup-raven-old.txt": failed(
        "kfd-enomem", "Unable to open /dev/kfd read-write: Cannot allocate memory", "Possible",
        INFO("rocminfo also said: Failed to get user name to check for video group membership")),
    "rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt": failed(
        "kfd-eperm", "Unable to open /dev/kfd read-write: Operation not permitted", "Possible",
        INFO("rocminfo also said: padonion is member of render group")),
    "rocminfo-fail-rock-not-loaded-and-rocm-smi-driver-not-initialized-azure-nvv4.txt": failed(
        "rock-not-loaded", "ROCk module is NOT loaded, possibly no GPU devices", "Possible"),
}


@pytest.mark.parametrize("name", sorted(FAILED))
def test_failed(name: str) -> None:
    # rocminfo prints its pre-check errors on stdout and exits 1 (rocminfo.cc).
    assert run(host(ran(fixture_text(name), rc=1), absent=(KFD_NODES,))) == FAILED[name]


def test_failure_with_gpus_still_in_sysfs() -> None:
    h = host(ran(fixture_text("rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt"), rc=1),
             files=XTX_SYSFS)
    assert run(h).findings[-1] == INFO(
        "The KFD topology in sysfs lists 1 GPU: gfx1100 Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800 "
        "(96 CUs)")


def test_einval_cause_is_the_threads() -> None:
    assert RULES["kfd-einval"].cause.startswith("/dev/kfd was not passed into this container")


def test_timed_out() -> None:
    hung = {"returncode": 124, "stdout": "", "stderr": "", "timed_out": True, "duration_s": 10.02}
    assert run(host(hung, files=XTX_SYSFS)) == expect(
        Status.ERROR, "rocminfo did not answer within 10 s",
        (HINT("Possible cause: the amdgpu driver or the GPU is stuck (a GPU reset that failed, a "
              "hung queue), which makes rocminfo hang; the kernel log shows it"),
         INFO("The KFD topology in sysfs lists 1 GPU: gfx1100 Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800 "
           "(96 CUs)")),
        Fix("Read the kernel log for amdgpu errors; a reboot clears a hung GPU.",
            commands=(DMESG_KFD,), needs_root=True), ROCMINFO_DOC)


def test_sysfs_fallback_without_rocminfo() -> None:
    h = host(files=XTX_SYSFS, absent=("rocminfo",))
    assert run(h) == expect(
        Status.PASS, "1 GPU: gfx1100 Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800 (96 CUs)",
        (INFO("rocminfo is not installed: GPUs read from the KFD topology in sysfs"),
         INFO("GPU 0: gfx1100 Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800, 96 CUs, KFD node 1, "
           "GPU-af80fc06fd8c76ab")), source=ROCMINFO_DOC)
    inv = amd_gpus(h)
    assert (inv.source, inv.gpus[0].gfx, inv.gpus[0].uuid) == (
        "kfd-sysfs", "gfx1100", "GPU-af80fc06fd8c76ab")


def test_no_rocminfo_and_no_sysfs() -> None:
    assert run(host(absent=("rocminfo", KFD_NODES))) == expect(
        Status.FAIL, "no GPU agent found: rocminfo is not installed and the KFD topology "
        "(/sys/class/kfd/kfd/topology/nodes) lists no GPU",
        fix=Fix("Install ROCm (it provides rocminfo) and check that the amdgpu driver is "
                "loaded: see the amdgpu-driver and kfd-access checks."),
        source=ROCMINFO_DOC)


def test_only_cpu_agents() -> None:
    # What rocminfo prints when every GPU is hidden: the CPU agent block of a real capture.
    full = fixture_text("rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt")
    cpu_only = full.split("*******                  \nAgent 2")[0] + "*** Done ***\n"
    assert run(host(ran(cpu_only), absent=(KFD_NODES,))) == expect(
        Status.FAIL, "rocminfo lists no GPU agent (1 other agent(s))",
        (ERR("Possible causes: the KFD driver did not add a GPU (the GPU is missing, or not "
             "supported by this kernel), or ROCR_VISIBLE_DEVICES hides it"),),
        Fix("Read the kernel log for why the GPU is missing.", commands=(DMESG_KFD,),
            needs_root=True), ROCMINFO_DOC)


def test_unknown_exit_status() -> None:
    # ROCm/rocminfo#57: "ROCk module is loaded" then a segfault in hsa_init().
    assert run(host(ran("ROCk module is loaded\n", rc=-11), absent=(KFD_NODES,))) == expect(
        Status.FAIL, "rocminfo exited with status -11",
        (ERR("Its last line: ROCk module is loaded"),),
        Fix("Read the kernel log for why the GPU is missing.", commands=(DMESG_KFD,),
            needs_root=True), ROCMINFO_DOC)


def test_cpu_machine_says_what_rocminfo_said() -> None:
    # Debian's rocminfo on this (GPU-less) development machine, captured as it ran.
    debian = {"returncode": 1, "timed_out": False,
              "stdout": "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n",
              "stderr": "libkmod: ERROR ../libkmod/libkmod-module.c:1725 "
                        "kmod_module_new_from_loaded: could not open /proc/modules: No such "
                        "file or directory\nError: could not get list of modules: No such file "
                        "or directory\n"}
    h = host(debian, rocm=False, absent=("/opt/rocm", KFD_NODES))
    assert run(h) == expect(
        Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found; rocminfo says: "
        "ROCk module is NOT loaded, possibly no GPU devices", source=ROCMINFO_DOC)


def test_cpu_machine_without_rocminfo() -> None:
    h = host(rocm=False, absent=("/opt/rocm", "rocminfo", KFD_NODES))
    assert run(h) == expect(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found",
                            source=ROCMINFO_DOC)


IGPU = "rocminfo-gfx1030-rx6800xt-plus-gfx1036-igpu-rocm5.6.txt"


def test_igpu_already_hidden_by_hip_visible_devices() -> None:
    h = host(ran(fixture_text(IGPU)), env={"HIP_VISIBLE_DEVICES": "0"})
    assert run(h) == expect(
        Status.PASS, "2 GPUs: gfx1030 AMD Radeon RX 6800 XT (72 CUs), gfx1036 AMD Radeon "
        "Graphics (2 CUs, integrated)",
        IGPU_FINDINGS + (INFO("HIP_VISIBLE_DEVICES=0 keeps the integrated GPU out of HIP"),),
        source=ROCMINFO_DOC)


def test_igpu_left_visible_by_rocr_visible_devices_gets_a_uuid_value() -> None:
    # rocminfo honours ROCR_VISIBLE_DEVICES; its indices then differ from ROCr's, a UUID not.
    h = host(ran(fixture_text(IGPU)), env={"ROCR_VISIBLE_DEVICES": "0,1"})
    assert run(h) == expect(
        Status.WARN, "integrated GPU beside the discrete one: gfx1036 AMD Radeon Graphics (GPU 1)",
        IGPU_FINDINGS + (IGPU_HINT,), igpu_fix("GPU-e0ce170bfa1769dd"), GPU_ISOLATION)


def test_a_timeout_without_a_recorded_wait_says_timed_out() -> None:
    hung = {"returncode": 124, "stdout": "", "stderr": "", "timed_out": True}
    assert run(host(hung, absent=(KFD_NODES,))) == expect(
        Status.ERROR, "rocminfo did not answer (timed out)",
        (HINT("Possible cause: the amdgpu driver or the GPU is stuck (a GPU reset that failed, a "
              "hung queue), which makes rocminfo hang; the kernel log shows it"),),
        Fix("Read the kernel log for amdgpu errors; a reboot clears a hung GPU.",
            commands=(DMESG_KFD,), needs_root=True), ROCMINFO_DOC)


def test_a_crash_part_way_names_the_last_line_printed() -> None:
    # The real RX 7900 XTX output, cut where a crash would stop it.
    lines = fixture_text("rocminfo-gfx1100-rx7900xtx-ryzen5500-rocm6.0.2.txt").splitlines()[:8]
    assert lines[-1].startswith("Machine Model:")
    assert run(host(ran("\n".join(lines) + "\n\n", rc=-11), absent=(KFD_NODES,))) == expect(
        Status.FAIL, "rocminfo exited with status -11", (ERR(f"Its last line: {lines[-1].strip()}"),),
        Fix("Read the kernel log for why the GPU is missing.", commands=(DMESG_KFD,),
            needs_root=True), ROCMINFO_DOC)


def test_rocr_visible_devices_set_without_uuids_or_topology_falls_back_to_hip() -> None:
    # ROCR_VISIBLE_DEVICES indexes every GPU, rocminfo lists only those it exposes: with no
    # UUID and no KFD topology to map them, the fix uses HIP_VISIBLE_DEVICES.
    name = "rocminfo-grep-gfx-hsa-override-misreport-gfx1201-egpu-plus-gfx1151-rocm7.1.txt"
    h = host(ran(fixture_text(name)), env={"ROCR_VISIBLE_DEVICES": "0,1"}, absent=(KFD_NODES,))
    assert run(h) == expect(
        Status.WARN, "integrated GPU beside the discrete one: gfx1151 (GPU 1)",
        (INFO("GPU 0: gfx1201"), INFO("GPU 1: gfx1151, integrated"),
         HINT("GPU 1 (gfx1151) is the processor's integrated GPU: HIP programs count it as a "
              "device of their own, so code that uses every GPU or picks one by index can land "
              "on it")),
        Fix("Expose only the discrete GPU(s) (gfx1201) to HIP; add the line to your shell "
            "profile to keep it.", commands=("export HIP_VISIBLE_DEVICES=0",)), GPU_ISOLATION)


@pytest.mark.parametrize(("num_bytes", "text"), [
    (10 * 2**30, "10 GiB"), (int(9.96 * 2**30), "10.0 GiB"), (int(4.04 * 2**30), "4.0 GiB"),
    (512 * 2**20, "512 MiB"), (2**30 - 1, "1024 MiB"), (192 * 2**30, "192 GiB"),
])
def test_size_text(num_bytes: int, text: str) -> None:
    assert size_text(num_bytes) == text
