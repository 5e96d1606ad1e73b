"""amdgpu-driver when the kernel refused the module or DKMS could not build it: Secure Boot
(mokutil, the EFI variable, lockdown, "Key was rejected"), unknown symbols, a failed DKMS build
for the running kernel, a broken `dkms status`; real captures through a strict SnapshotHost."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.amdgpu_driver import KERNEL_SUPPORT, ROCM_3701, AmdgpuDriver
from rocmdoctor.facts.amdgpu_module import parse_make_log
from rocmdoctor.facts.kernel_log import RESTRICT_FILE
from rocmdoctor.facts.secure_boot import (
    DKMS_KEYS,
    LOCKDOWN_FILE,
    SB_VAR,
    parse_efi_var,
    parse_lockdown,
    parse_sb_state,
)
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.kernel_log import AWS_MODULES_EXTRA, DEBIAN_SECUREBOOT, KERNEL_MESSAGES
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot

CHECK = AmdgpuDriver()
ENTRY = {e.key: e for e in KERNEL_MESSAGES}
ROCM = {"/opt/rocm/.info/version": "6.3.0\n"}
ABSENT = ("/dev/kfd", "/dev/dxg", "/proc/1/cgroup", "/.dockerenv", "/run/.containerenv",
          "/proc/cmdline", "/proc/modules", "/sys/module/amdgpu", "/sys/module/amdgpu/initstate",
          "/sys/module/amdgpu/version", "/proc/version", "dkms status", "modinfo -n amdgpu",
          "/proc/driver/nvidia/version", "/dev/nvidiactl", "mokutil --sb-state", SB_VAR,
          LOCKDOWN_FILE, *DKMS_KEYS, "dmesg", "journalctl -k -b --no-pager", RESTRICT_FILE,
          "/etc/os-release", "/usr/lib/os-release",
          # the container fact (rocmdoctor.facts.container)
          "/proc/self/cgroup", "/proc/mounts", "/.singularity.d", "/proc/self/uid_map",
          "/proc/self/status")
LIVE = {"/sys/module/amdgpu/initstate": "live\n",
        "/proc/modules": "amdgpu 12828672 0 - Live 0x0000000000000000\n"}


def host(files: Optional[dict[str, str]] = None, commands: Optional[dict[str, Any]] = None,
         paths: Optional[dict[str, Any]] = None, kernel: str = "6.8.0-1017-azure") -> SnapshotHost:
    snap = make_snapshot(files={**ROCM, **(files or {})}, commands=commands, paths=paths,
                         kernel=kernel)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def output_of(text: str, command: str) -> str:
    """The lines after `... command` in a captured terminal session, up to the next prompt."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.rstrip().endswith(command)) + 1
    out = []
    for line in lines[start:]:
        if line.startswith(("$ ", "# ", "[root@", "azureuser@", "rocm@")) or line.endswith("$"):
            break
        out.append(line)
    return "\n".join(out).strip() + "\n"


DKMS_AZURE = output_of(fixture_text(
    "dkms-status-installed-azure-kernel-rocminfo-rock-not-loaded-lspci-v620-ubuntu24.04-rocm6.3.txt"),
    "dkms status")
SB_ON = output_of(fixture_text("mokutil-sb-state-secureboot-enabled-sosreport-request.txt"),
                  "mokutil --sb-state")
LOCKDOWN_LOG = fixture_text(
    "dmesg-lockdown-systemd-udevd-unsigned-module-loading-is-restricted-ubuntu20.04.txt")
MODULE = "/lib/modules/6.8.0-1017-azure/updates/dkms/amdgpu.ko.zst\n"


def test_secure_boot_refuses_the_dkms_module_and_the_mok_steps_follow() -> None:
    assert DKMS_AZURE == "amdgpu/6.10.5-2095006.24.04, 6.8.0-1017-azure, x86_64: installed\n"
    assert SB_ON == "SecureBoot enabled\n"
    h = host(commands={"dkms status": DKMS_AZURE, "mokutil --sb-state": SB_ON,
                       "modinfo -n amdgpu": MODULE, "dmesg": LOCKDOWN_LOG},
             paths={"/var/lib/shim-signed/mok/MOK.der": {"type": "file", "mode": "0644"}})
    assert run(h) == CHECK.result(
        Status.FAIL, "amdgpu is not loaded: Secure Boot refuses the unsigned amdgpu-dkms module", (
            Finding.info("dkms: amdgpu 6.10.5-2095006.24.04 for 6.8.0-1017-azure: installed"),
            Finding.info("amdgpu-dkms is installed for this kernel (6.8.0-1017-azure)"),
            Finding.info("module file: /lib/modules/6.8.0-1017-azure/updates/dkms/amdgpu.ko.zst"),
            Finding.info("Secure Boot: SecureBoot enabled"),
            Finding.error("kernel log: Lockdown: systemd-udevd: unsigned module loading is "
                          "restricted; see man kernel_lockdown.7")),
        Fix("Enrol the key DKMS signs its modules with (/var/lib/shim-signed/mok/MOK.der) as a "
            "Machine Owner Key: import it (mokutil asks for a one-time password), reboot, choose "
            "'Enroll MOK' in the blue MOK manager screen and type that password. Or turn Secure "
            "Boot off in the firmware setup.",
            ("sudo mokutil --import /var/lib/shim-signed/mok/MOK.der", "sudo reboot"),
            needs_root=True), DEBIAN_SECUREBOOT)


def test_the_efi_variable_and_lockdown_decide_without_mokutil() -> None:
    efi = "\x06\x00\x00\x00\x01"  # attributes, then 1: Secure Boot on
    h = host(files={SB_VAR: efi, LOCKDOWN_FILE: "none [integrity] confidentiality\n"},
             commands={"dkms status": DKMS_AZURE, "modinfo -n amdgpu": MODULE})
    got = run(h)
    assert got.summary == "amdgpu is not loaded: Secure Boot refuses the unsigned amdgpu-dkms module"
    assert got.findings[3:] == (
        Finding.info(f"Secure Boot: {SB_VAR}: Secure Boot on"),
        Finding.info(f"Secure Boot: {LOCKDOWN_FILE}: none [integrity] confidentiality"))
    assert got.fix is not None and got.fix.commands == ()


def test_validation_disabled_in_shim_does_not_enforce() -> None:
    state = output_of(fixture_text(
        "mokutil-sb-state-secureboot-enabled-validation-disabled-in-shim-systemd-commit.txt"),
        "mokutil --sb-state")
    h = host(commands={"dkms status": DKMS_AZURE, "mokutil --sb-state": state,
                       "modinfo -n amdgpu": MODULE})
    assert run(h).summary == "amdgpu is not loaded"


def test_key_was_rejected_in_the_journal_counts_without_mokutil() -> None:
    journal = fixture_text(
        "systemctl-status-modules-load-key-was-rejected-by-service-fedora38-secureboot.txt")
    h = host(commands={"dmesg": {"returncode": 1, "stdout": "", "stderr": "not permitted"},
                       "journalctl -k -b --no-pager": journal})
    got = run(h)
    assert got.summary == "amdgpu is not loaded: Secure Boot refuses the unsigned amdgpu-dkms module"
    assert got.findings[-1] == Finding.error(
        "kernel log: Failed to insert module 'gasket': Key was rejected by service")


def test_unknown_symbols_on_ubuntu_name_linux_modules_extra() -> None:
    dmesg = fixture_text(
        "dmesg-amdgpu-unknown-symbol-amd-iommu-err-2-missing-linux-modules-extra-ubuntu18.04-ec2.txt")
    before = dmesg.split("$ find")[0]
    h = host(files={"/etc/os-release": 'ID=ubuntu\nVERSION_ID="18.04"\n'},
             commands={"dmesg": before, "modinfo -n amdgpu": MODULE})
    assert run(h) == CHECK.result(
        Status.FAIL, "amdgpu is not loaded: the module does not fit kernel 6.8.0-1017-azure "
        "(unknown symbols)", (
            Finding.info("module file: /lib/modules/6.8.0-1017-azure/updates/dkms/amdgpu.ko.zst"),
            Finding.error("kernel log (5 lines): amdgpu: Unknown symbol amd_iommu_bind_pasid "
                          "(err -2)")),
        Fix(ENTRY["amdgpu-unknown-symbol"].fix,
            ("sudo apt install linux-modules-extra-$(uname -r)",), needs_root=True),
        AWS_MODULES_EXTRA)


MAKE_LOG_SESSION = fixture_text(
    "amdgpu-install-dkms-bad-return-status-centos8-stream-4.18.0-490-dma-resv-seq-missing-amdgpu5.18.13.txt")
MAKE_LOG = "\n".join(ln for ln in MAKE_LOG_SESSION.splitlines()
                     if ln.startswith(("DKMS make.log", "make:"))) + "\n"
MAKE_LOG_PATH = "/var/lib/dkms/amdgpu/5.18.13-1538762.el8/build/make.log"
CENTOS = "4.18.0-490.el8.x86_64"
ERROR_LINE = ("make: ディレクトリ '/usr/src/kernels/4.18.0-490.el8.x86_64'　に入ります "
              "/var/lib/dkms/amdgpu/5.18.13-1538762.el8/build/Makefile:16: *** dma_resv->seq is "
              "missing., exit.... 中止.")


def failed_build_fix() -> Fix:
    return Fix(f"amdgpu-dkms 5.18.13-1538762.el8 does not build against {CENTOS}: boot a kernel "
               "this amdgpu-dkms release supports, or install an amdgpu-dkms release whose "
               f"supported kernels include {CENTOS}. Running `dkms autoinstall` again rebuilds "
               "the same source and fails the same way.",
               (f"grep -n -m5 -iE 'error|[*]{{3}}' {MAKE_LOG_PATH}",))


def failure_finding() -> Finding:
    return Finding.error(f"amdgpu-dkms 5.18.13-1538762.el8 failed to build for {CENTOS} "
                         f"({MAKE_LOG_PATH}): {ERROR_LINE[:200]}")


def test_a_failed_dkms_build_leaves_the_inbox_driver_and_says_not_to_rebuild() -> None:
    assert parse_make_log(MAKE_LOG_PATH, MAKE_LOG) is not None
    h = host(files={**LIVE, MAKE_LOG_PATH: MAKE_LOG}, kernel=CENTOS)
    assert run(h) == CHECK.result(
        Status.WARN, f"amdgpu loaded and live (inbox driver of kernel {CENTOS})", (
            failure_finding(), Finding.hint("the inbox driver of the kernel is in use instead")),
        failed_build_fix(), KERNEL_SUPPORT)


def test_a_failed_dkms_build_and_no_module_fails() -> None:
    h = host(files={MAKE_LOG_PATH: MAKE_LOG}, kernel=CENTOS,
             commands={"modinfo -n amdgpu": {"returncode": 1, "stdout": "",
                                             "stderr": "modinfo: ERROR: Module amdgpu not found.\n"}})
    assert run(h) == CHECK.result(
        Status.FAIL, f"amdgpu is not loaded: the amdgpu-dkms build for kernel {CENTOS} failed",
        (failure_finding(),), failed_build_fix(), KERNEL_SUPPORT)


def test_a_failed_build_for_another_kernel_is_not_blamed_on_the_running_one() -> None:
    # The same make.log (built against 4.18.0-490), booted into the previous 4.18.0-477.
    older = "4.18.0-477.el8.x86_64"
    with_log = run(host(files={**LIVE, MAKE_LOG_PATH: MAKE_LOG}, kernel=older))
    assert with_log == run(host(files=LIVE, kernel=older))
    assert with_log.status is Status.PASS
    assert with_log.summary == f"amdgpu loaded and live (inbox driver of kernel {older})"


def test_a_stale_dkms_tree_breaks_dkms_status() -> None:
    session = fixture_text(
        "dkms-status-error-could-not-locate-dkms.conf-stale-amdgpu6.7.0-tree-kernel6.8.0-45-ubuntu22.04.txt")
    out = output_of(session, "dkms status").split("---")[0]
    h = host(files=LIVE, commands={"dkms status": {"returncode": 4, "stdout": "", "stderr": out}},
             kernel="6.8.0-45-generic")
    stale = "/var/lib/dkms/amdgpu/6.7.0-1787201.22.04"
    assert run(h) == CHECK.result(
        Status.WARN, "amdgpu loaded and live (inbox driver of kernel 6.8.0-45-generic)",
        (Finding.error("`dkms status` fails: Error! Could not locate dkms.conf file."),),
        Fix(f"Remove the stale DKMS tree {stale} (left by an amdgpu-dkms that was removed) so "
            "that dkms works again.", (f"sudo rm -r {stale}",), needs_root=True), ROCM_3701)


def test_secure_boot_readers() -> None:
    setup = output_of(fixture_text(
        "mokutil-sb-state-secureboot-disabled-platform-is-in-setup-mode-ubuntu-clevo.txt"),
        "mokutil --sb-state")
    assert parse_sb_state(setup) == (False, False, True, ["SecureBoot disabled",
                                                           "Platform is in Setup Mode"])
    assert parse_sb_state("EFI variables are not supported on this system\n")[0] is None
    assert [parse_efi_var(v) for v in ("\x06\x00\x00\x00\x01", "\x06\x00\x00\x00\x00", "", None,
                                       "garbage!")] == [True, False, None, None, None]
    assert parse_lockdown("[none] integrity confidentiality\n") == "none"


@given(st.text())
def test_readers_never_raise(text: str) -> None:
    parse_sb_state(text)
    parse_efi_var(text)
    parse_lockdown(text)
    parse_make_log("/x/make.log", text)


def test_the_make_log_header_of_dkms_3() -> None:
    # dkms.in do_build(): "DKMS ($RELEASE_STRING) make.log for $module/$module_version for
    # kernel $kernelver ($arch)"; the kernel and release of ROCm/amdgpu issue 192.
    text = ("DKMS (dkms-3.0.11) make.log for amdgpu/6.12.12-2164967.24.04 for kernel "
            "6.14.0-24-generic (x86_64)\nSun Jul 13 10:00:00 2025\n"
            "drm/amd/amdgpu/amdgpu_drv.c:1: error: implicit declaration\n")
    failure = parse_make_log("/var/lib/dkms/amdgpu/6.12.12-2164967.24.04/build/make.log", text)
    assert failure is not None
    assert (failure.version, failure.kernel, failure.error) == (
        "6.12.12-2164967.24.04", "6.14.0-24-generic",
        "drm/amd/amdgpu/amdgpu_drv.c:1: error: implicit declaration")
