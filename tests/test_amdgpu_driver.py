"""amdgpu-driver through a strict SnapshotHost: every branch, whole results."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.amdgpu_driver import AMDGPU_INSTALL, LIBROCDXG, AmdgpuDriver
from rocmdoctor.facts.amdgpu_module import DkmsEntry, parse_dkms_status, parse_proc_modules
from rocmdoctor.facts.boot import parse_cmdline, parse_modprobe_conf
from rocmdoctor.facts.kernel_log import RESTRICT_FILE
from rocmdoctor.facts.secure_boot import DKMS_KEYS, LOCKDOWN_FILE, SB_VAR
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.boot import GRUB_COMMANDS
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_header, fixture_text, make_snapshot

CHECK = AmdgpuDriver()
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}  # makes the machine a ROCm one
# Things a test may leave out: they then do not exist on the replayed machine.
ABSENT = ("/dev/kfd", "/dev/dxg", "/proc/1/cgroup", "/.dockerenv", "/run/.containerenv",
          "/proc/cmdline", "/proc/modules", "/sys/module/amdgpu", "/sys/module/amdgpu/initstate",
          "/sys/module/amdgpu/version", "/proc/version", "dkms status", "modinfo -n amdgpu",
          "/proc/driver/nvidia/version", "/dev/nvidiactl",
          # the Secure Boot state and the kernel log, read when amdgpu is not loaded
          "mokutil --sb-state", SB_VAR, LOCKDOWN_FILE, *DKMS_KEYS, "dmesg",
          "journalctl -k -b --no-pager", RESTRICT_FILE, "/etc/os-release", "/usr/lib/os-release",
          # the container fact (rocmdoctor.facts.container)
          "/proc/self/cgroup", "/proc/mounts", "/.singularity.d", "/proc/self/uid_map",
          "/proc/self/status")
LIVE = {"/sys/module/amdgpu/initstate": "live\n"}
# /proc/modules lines in the kernel's format (kernel/module/procfs.c): DKMS modules are (OE).
MODULES_INBOX = "amdgpu 12828672 0 - Live 0x0000000000000000\ndrm 700416 9 - Live 0x0\n"
MODULES_DKMS = "amdgpu 19070976 0 - Live 0x0000000000000000 (OE)\n"
VEGA20 = "proc-version-and-dkms-status-vega20-ubuntu18.04-amdgpu3.3.txt"


def host(files: Optional[dict[str, str]] = None, commands: Optional[dict[str, Any]] = None,
         kernel: str = "6.8.0-45-generic", env: Optional[dict[str, str]] = None) -> SnapshotHost:
    snap = make_snapshot(files={**ROCM, **(files or {})}, commands=commands, kernel=kernel,
                         env=env)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def session_line(text: str, command: str) -> str:
    """The output line that follows `$ command` in a captured terminal session."""
    lines = text.splitlines()
    return lines[lines.index(next(x for x in lines if x.endswith("$ " + command))) + 1]


MODPROBE_FIX = Fix("Load the driver; if that fails, the kernel log says why.",
                   ("sudo modprobe amdgpu", "sudo dmesg | grep -i amdgpu"), needs_root=True)


def test_skips_a_machine_without_amd() -> None:
    h = SnapshotHost(make_snapshot(), strict=True, absent=ABSENT)
    assert run(h) == expect(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found")


def test_dkms_driver_live_reports_its_version() -> None:
    # rocminfo prints /sys/module/amdgpu/version verbatim: "ROCk module version 6.7.0 is loaded".
    body = fixture_text("rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt")
    version = re.search(r"ROCk module version (\S+) is loaded", body)
    assert version is not None
    h = host({**LIVE, "/sys/module/amdgpu/version": version.group(1) + "\n",
              "/proc/modules": MODULES_DKMS})
    assert run(h) == expect(Status.PASS, "amdgpu 6.7.0 loaded and live (AMD amdgpu-dkms driver)")


def test_dkms_status_of_the_new_format_is_listed() -> None:
    # The sample line of AMD's post-install guide (ROCm/amdgpu-docs, post-install.rst).
    dkms = "amdgpu/6.12.12-2133686.22.04, 6.8.0-52-generic, x86_64: installed\n"
    h = host({**LIVE, "/sys/module/amdgpu/version": "6.12.12\n", "/proc/modules": MODULES_DKMS,
              "/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro quiet amdgpu.ppfeaturemask=0xffffffff\n"},
             {"dkms status": dkms}, kernel="6.8.0-52-generic")
    assert run(h) == expect(Status.PASS, "amdgpu 6.12.12 loaded and live (AMD amdgpu-dkms driver)", (
        Finding.info("dkms: amdgpu 6.12.12-2133686.22.04 for 6.8.0-52-generic: installed"),
        Finding.info("kernel command line: amdgpu.ppfeaturemask=0xffffffff"),
    ))


def test_inbox_driver_names_the_kernel() -> None:
    # With the inbox driver rocm-smi's "Driver version" is the kernel release.
    csv = fixture_text("rocm-smi-csv-driverversion-productname-gfx908-mi100-x2-inbox-driver.txt")
    lines = csv.splitlines()
    kernel = lines[lines.index("device,Driver version") + 1].split(",")[1]
    h = host({**LIVE, "/proc/modules": MODULES_INBOX}, kernel=kernel)
    assert run(h) == expect(
        Status.PASS, "amdgpu loaded and live (inbox driver of kernel 4.18.0-348.12.2.el8_5.x86_64)")


def test_real_dkms_install_whose_module_is_not_loaded() -> None:
    body = fixture_text(VEGA20)
    proc_version = session_line(body, "cat /proc/version") + "\n"
    dkms = session_line(body, "dkms status") + "\n"
    module = "/lib/modules/5.0.0-23-generic/updates/dkms/amdgpu.ko\n"
    h = host({"/proc/version": proc_version, "/proc/modules": MODULES_INBOX.splitlines()[1]},
             {"dkms status": dkms, "modinfo -n amdgpu": module}, kernel="")
    assert run(h) == expect(Status.FAIL, "amdgpu is not loaded", (
        Finding.info("dkms: amdgpu 3.3-19 for 5.0.0-23-generic: installed"),
        Finding.info("amdgpu-dkms is installed for this kernel (5.0.0-23-generic)"),
        Finding.info("module file: /lib/modules/5.0.0-23-generic/updates/dkms/amdgpu.ko"),
    ), MODPROBE_FIX)


def test_dkms_built_for_another_kernel_leaves_the_inbox_driver() -> None:
    dkms = session_line(fixture_text(VEGA20), "dkms status") + "\n"
    h = host({**LIVE, "/proc/modules": MODULES_INBOX}, {"dkms status": dkms},
             kernel="5.3.0-28-generic")
    assert run(h) == expect(Status.WARN, "amdgpu loaded and live (inbox driver of kernel 5.3.0-28-generic)", (
        Finding.info("dkms: amdgpu 3.3-19 for 5.0.0-23-generic: installed"),
        Finding.hint("amdgpu-dkms is installed for other kernels, not for the running "
                     "5.3.0-28-generic: its build for this kernel failed or never ran, so the "
                     "inbox driver is in use"),
    ), Fix("Build the DKMS driver for the running kernel (its kernel headers must be installed), "
           "then reboot.", ("sudo dkms autoinstall", "sudo reboot"), needs_root=True))


def test_blacklisted_on_the_kernel_command_line() -> None:
    cmdline = ("BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=0b1c ro quiet splash "
               "modprobe.blacklist=nouveau,amdgpu\n")
    h = host({"/proc/cmdline": cmdline})
    assert run(h) == expect(
        Status.FAIL,
        "amdgpu is not loaded: blocked by modprobe.blacklist=nouveau,amdgpu on the kernel command line",
        (Finding.error("blocked by modprobe.blacklist=nouveau,amdgpu on the kernel command line"),),
        Fix("Remove modprobe.blacklist=nouveau,amdgpu from GRUB_CMDLINE_LINUX_DEFAULT and "
            "GRUB_CMDLINE_LINUX in /etc/default/grub, regenerate the GRUB configuration "
            "(update-grub on Debian/Ubuntu) and reboot.", GRUB_COMMANDS, needs_root=True))


def test_nomodeset_and_a_modprobe_blacklist_line_are_both_named() -> None:
    h = host({"/proc/cmdline": "root=/dev/sda1 ro nomodeset\n",
              "/etc/modprobe.d/blacklist-amdgpu.conf": "# keep the iGPU off\nblacklist amdgpu\n"})
    assert run(h) == expect(
        Status.FAIL, "amdgpu is not loaded: blocked by nomodeset on the kernel command line", (
            Finding.error("blocked by nomodeset on the kernel command line"),
            Finding.error("blocked by 'blacklist amdgpu' in /etc/modprobe.d/blacklist-amdgpu.conf"),
        ),
        Fix("Remove nomodeset from GRUB_CMDLINE_LINUX_DEFAULT and GRUB_CMDLINE_LINUX in "
            "/etc/default/grub, regenerate the GRUB configuration (update-grub on Debian/Ubuntu) "
            "and reboot. Comment out the blocking lines in /etc/modprobe.d first.",
            ("sudo sed -i '2s/^/# /' /etc/modprobe.d/blacklist-amdgpu.conf", *GRUB_COMMANDS),
            needs_root=True))


def test_modprobe_install_line_blocks_loading() -> None:
    h = host({"/etc/modprobe.d/no gpu.conf": "install amdgpu /bin/false\n"})
    assert run(h) == expect(
        Status.FAIL, "amdgpu is not loaded: blocked by 'install amdgpu /bin/false' in /etc/modprobe.d/no gpu.conf",
        (Finding.error("blocked by 'install amdgpu /bin/false' in /etc/modprobe.d/no gpu.conf"),),
        Fix("Comment out the lines that block amdgpu, then load it. The initramfs keeps a copy: "
            "rebuild it (update-initramfs -u on Debian/Ubuntu, dracut -f on Fedora/RHEL).",
            ("sudo sed -i '1s/^/# /' '/etc/modprobe.d/no gpu.conf'", "sudo modprobe amdgpu"),
            needs_root=True))


def test_loaded_but_blacklisted_warns_about_the_next_boot() -> None:
    h = host({**LIVE, "/proc/modules": MODULES_INBOX,
              "/etc/modprobe.d/amdgpu.conf": "options amdgpu ppfeaturemask=0xffffffff\nblacklist amdgpu\n"})
    assert run(h) == expect(
        Status.WARN, "amdgpu loaded and live (inbox driver of kernel 6.8.0-45-generic), but "
        "blacklisted: it may not load at the next boot",
        (Finding.error("/etc/modprobe.d/amdgpu.conf:2: blacklist amdgpu"),),
        Fix("Comment out the lines that block amdgpu, then rebuild the initramfs "
            "(update-initramfs -u on Debian/Ubuntu, dracut -f on Fedora/RHEL).",
            ("sudo sed -i '2s/^/# /' /etc/modprobe.d/amdgpu.conf",), needs_root=True))


def test_loaded_but_not_live() -> None:
    h = host({"/sys/module/amdgpu/initstate": "coming\n",
              "/proc/modules": "amdgpu 12828672 1 - Loading 0x0000000000000000\n"})
    not_live = Fix("The driver did not finish starting; the kernel log says why.",
                   ("sudo dmesg | grep -i amdgpu",), needs_root=True)
    assert run(h) == expect(
        Status.FAIL, "amdgpu is loaded but not live (initstate: coming)", (), not_live)
    # Without a readable initstate, /proc/modules' state tells the same.
    h = host({"/proc/modules": "amdgpu 12828672 1 - Loading 0x0000000000000000\n"})
    assert run(h) == expect(
        Status.FAIL, "amdgpu is loaded but not live (initstate: loading)", (), not_live)


def test_built_into_the_kernel() -> None:
    h = host({"/sys/module/amdgpu/parameters/ppfeaturemask": "0xfff7bfff\n",
              "/proc/modules": MODULES_INBOX.splitlines()[1]})
    assert run(h) == expect(
        Status.PASS, "amdgpu loaded and live (inbox driver of kernel 6.8.0-45-generic)",
        (Finding.info("amdgpu is built into the kernel"),))


def test_no_module_for_this_kernel() -> None:
    modinfo = {"returncode": 1, "stdout": "",
               "stderr": "modinfo: ERROR: Module amdgpu not found.\n", "timed_out": False}
    h = host(commands={"modinfo -n amdgpu": modinfo}, kernel="6.8.0-1015-aws")
    assert run(h) == expect(
        Status.FAIL, "amdgpu is not loaded: no amdgpu module for kernel 6.8.0-1015-aws",
        (Finding.error("no amdgpu module is installed for kernel 6.8.0-1015-aws"),),
        Fix("Install the amdgpu module for this kernel: the distribution's extra kernel modules "
            "(on Ubuntu: linux-modules-extra-$(uname -r)) or AMD's driver (amdgpu-install "
            "--usecase=dkms), then reboot.", needs_root=True), AMDGPU_INSTALL)


def test_container_without_the_driver_points_at_the_host() -> None:
    # modinfo is not asked: the container's /lib/modules says nothing about the host.
    h = host({"/proc/1/cgroup": "0::/\n", "/.dockerenv": ""},
             {"modinfo -n amdgpu": {"returncode": 1, "stdout": "", "stderr": "not found"}})
    assert run(h) == expect(Status.FAIL, "amdgpu is not loaded on the host", (
        Finding.hint("this is a container: the host's kernel loads the driver, not the container"),
    ), Fix("Load the driver on the host, not in the container; run rocmdoctor there if it will "
           "not load.", ("sudo modprobe amdgpu",), needs_root=True))


def wsl_kernel() -> str:
    header = fixture_header("collect_env-wsl2-gfx1030-rx6800xt-rocm6.1.3-no-gfx-suffix.txt")
    found = re.search(r"kernel (\S+-WSL2)", header)
    assert found is not None
    return found.group(1)


def test_wsl_with_dxg_passes() -> None:
    h = SnapshotHost(make_snapshot(files=ROCM, kernel=wsl_kernel(),
                                   paths={"/dev/dxg": {"type": "char", "mode": "0666"}}),
                     strict=True, absent=ABSENT)
    assert run(h) == expect(Status.PASS, "WSL2: no amdgpu module here; ROCm reaches the GPU "
                            "through /dev/dxg and the Windows driver", source=LIBROCDXG)


def test_wsl_without_dxg_warns() -> None:
    h = host({}, kernel=wsl_kernel())
    assert run(h) == expect(
        Status.WARN, "WSL2 without /dev/dxg: no GPU is shared with this Linux",
        fix=Fix("In Windows, update WSL (wsl --update) and install an AMD driver that supports "
                "ROCm on WSL, then restart WSL (wsl --shutdown)."), source=LIBROCDXG)


# --- parsers ----------------------------------------------------------------------------
def test_parsers_read_the_real_formats() -> None:
    assert parse_dkms_status(session_line(fixture_text(VEGA20), "dkms status")) == [
        DkmsEntry("amdgpu", "3.3-19", "5.0.0-23-generic", "installed")]
    assert parse_dkms_status("amdgpu/6.8.5-2009582.22.04: added\nError! bad\n") == [
        DkmsEntry("amdgpu", "6.8.5-2009582.22.04", None, "added")]
    assert parse_proc_modules(MODULES_DKMS + "short line\n") == {"amdgpu": "Live"}
    facts = parse_cmdline("ro module_blacklist=amdgpu rd.driver.blacklist=radeon amdgpu.modeset=0")
    assert facts.blacklist_tokens == ("module_blacklist=amdgpu",)
    assert facts.amdgpu_options == ("amdgpu.modeset=0",) and facts.modeset_off
    assert [m.text for m in parse_modprobe_conf("f", "blacklist amdgpu2\n#blacklist amdgpu\n"
                                                     "options amdgpu  dc=0 # x\n")] == [
        "options amdgpu dc=0"]


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_proc_modules(text)
    parse_dkms_status(text)
    parse_cmdline(text)
    parse_modprobe_conf("/etc/modprobe.d/x.conf", text)
