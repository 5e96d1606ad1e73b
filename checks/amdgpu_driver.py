"""amdgpu-driver: the amdgpu kernel driver is loaded and live, its version, and blacklisting.

By hand: `cat /sys/module/amdgpu/initstate` prints `live`; `cat /sys/module/amdgpu/version`
prints a version only with AMD's amdgpu-dkms driver (the kernel's own driver has no such
file); `dkms status`; `grep amdgpu /proc/modules`; `cat /proc/cmdline`;
`grep -rw amdgpu /etc/modprobe.d/`. When it is not loaded: `mokutil --sb-state`,
`cat /sys/kernel/security/lockdown`, `sudo dmesg | grep -iE 'lockdown|amdgpu: Unknown symbol'`,
`ls /var/lib/dkms/amdgpu/*/build/make.log` (a failed DKMS build leaves it).
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amdgpu_module import (
    DkmsBuildFailure,
    DkmsEntry,
    amdgpu_module,
    dkms_build_failures,
    dkms_entries,
    dkms_error,
    module_file,
)
from rocmdoctor.facts.boot import (
    CmdlineFacts,
    ModprobeLine,
    kernel_cmdline,
    modprobe_lines,
)
from rocmdoctor.facts.kernel_log import cause
from rocmdoctor.facts.os_release import read_os_release
from rocmdoctor.facts.platform import container_signals, is_wsl, kernel_release, not_rocm_reason
from rocmdoctor.facts.secure_boot import secure_boot
from rocmdoctor.facts.wsl import dxg_present
from rocmdoctor.fixes import comment_out
from rocmdoctor.host import Host
from rocmdoctor.kb.boot import GRUB_COMMANDS
from rocmdoctor.kb.kernel_log import AWS_MODULES_EXTRA, DEBIAN_SECUREBOOT, MODULE_SIGNING
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

POST_INSTALL = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/post-install.html"
AMDGPU_INSTALL = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/amdgpu-install.html"
)
LIBROCDXG = "https://github.com/ROCm/librocdxg"
# AMD's kernel support table for each amdgpu-dkms release (ROCm's Linux support matrix).
KERNEL_SUPPORT = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/"
                  "system-requirements.html")
# A stale /var/lib/dkms/amdgpu/<version> tree breaks `dkms status`: remove it (AMD in ROCm
# issue 3701).
ROCM_3701 = "https://github.com/ROCm/ROCm/issues/3701"


def _failed_here(host: Host, kernel: str, dkms: list[DkmsEntry]) -> Optional[DkmsBuildFailure]:
    """The failed amdgpu-dkms build for the running kernel, unless it got installed later."""
    if any(e.kernel == kernel and e.status.startswith("installed") for e in dkms):
        return None
    return next((f for f in dkms_build_failures(host) if f.kernel == kernel), None)


def _failed_build_fix(failure: DkmsBuildFailure, dkms: list[DkmsEntry]) -> Fix:
    built = sorted({e.kernel for e in dkms if e.kernel and e.status.startswith("installed")})
    where = (f"a kernel it is built for ({', '.join(built)})" if built
             else "a kernel this amdgpu-dkms release supports")
    return Fix(f"amdgpu-dkms {failure.version} does not build against {failure.kernel}: boot "
               f"{where}, or install an amdgpu-dkms release whose supported kernels include "
               f"{failure.kernel}. Running `dkms autoinstall` again rebuilds the same source "
               "and fails the same way.", (f"grep -n -m5 -iE 'error|[*]{{3}}' {failure.log}",))


def _failure_finding(failure: DkmsBuildFailure) -> Finding:
    error = f": {failure.error}" if failure.error else ""
    return Finding.error(f"amdgpu-dkms {failure.version} failed to build for {failure.kernel} "
                         f"({failure.log}){error}")


class AmdgpuDriver(Check):
    id = "amdgpu-driver"
    title = "amdgpu kernel driver"
    source = POST_INSTALL

    def applies(self, host: Host) -> Optional[str]:
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        if is_wsl(host):
            return self._wsl(host)
        kernel = kernel_release(host)
        cmdline = kernel_cmdline(host)
        blocks = [m for m in modprobe_lines(host) if m.kind in ("blacklist", "install")]
        dkms = dkms_entries(host)
        dkms_here = any(e.kernel == kernel and e.status.startswith("installed") for e in dkms)
        findings = [Finding.info(f"dkms: amdgpu {e.version} for {e.kernel or 'no kernel'}: "
                                 f"{e.status}") for e in dkms]
        findings += [Finding.info(f"kernel command line: {o}") for o in cmdline.amdgpu_options]
        module = amdgpu_module(host)
        loaded = module.proc_state
        if not module.loaded:
            return self._not_loaded(host, kernel, cmdline, blocks, dkms_here, findings)
        initstate = module.state
        if initstate and initstate != "live":
            return self.result(
                Status.FAIL, f"amdgpu is loaded but not live (initstate: {initstate})",
                findings, Fix("The driver did not finish starting; the kernel log says why.",
                              ("sudo dmesg | grep -i amdgpu",), needs_root=True))
        if not initstate and loaded is None:
            findings.append(Finding.info("amdgpu is built into the kernel"))
        version = module.version
        if version:
            summary = f"amdgpu {version} loaded and live (AMD amdgpu-dkms driver)"
        else:
            summary = f"amdgpu loaded and live (inbox driver of kernel {kernel})"
        fixes = []
        failure = _failed_here(host, kernel, dkms) if not version else None
        broken = dkms_error(host)
        if broken is not None:
            findings.append(Finding.error(f"`dkms status` fails: {broken.said}"))
            if broken.stale:
                fixes.append(Fix(f"Remove the stale DKMS tree {broken.stale} (left by an "
                                 "amdgpu-dkms that was removed) so that dkms works again.",
                                 (f"sudo rm -r {broken.stale}",), needs_root=True))
        if failure is not None:
            findings.append(_failure_finding(failure))
            findings.append(Finding.hint("the inbox driver of the kernel is in use instead"))
            fixes.append(_failed_build_fix(failure, dkms))
        elif not version and dkms and not dkms_here:
            findings.append(Finding.hint(
                f"amdgpu-dkms is installed for other kernels, not for the running {kernel}: "
                "its build for this kernel failed or never ran, so the inbox driver is in use"))
            fixes.append(Fix("Build the DKMS driver for the running kernel (its kernel headers "
                             "must be installed), then reboot.",
                             ("sudo dkms autoinstall", "sudo reboot"), needs_root=True))
        if blocks:
            summary += ", but blacklisted: it may not load at the next boot"
            findings += [Finding.error(f"{b.path}:{b.lineno}: {b.text}") for b in blocks]
            fixes.insert(0, Fix("Comment out the lines that block amdgpu, then rebuild the "
                                "initramfs (update-initramfs -u on Debian/Ubuntu, dracut -f on "
                                "Fedora/RHEL).", tuple(comment_out(blocks)), needs_root=True))
        if cmdline.nomodeset:
            findings.append(Finding.info("the kernel was booted with nomodeset"))
        if not fixes:
            return self.passed(summary, findings)
        fix = Fix(" ".join(f.text for f in fixes), tuple(c for f in fixes for c in f.commands),
                  needs_root=any(f.needs_root for f in fixes))
        source = KERNEL_SUPPORT if failure is not None else ROCM_3701 if broken else None
        return self.result(Status.WARN, summary, findings, fix, source)

    def _not_loaded(self, host: Host, kernel: str, cmdline: CmdlineFacts,
                    blocks: list[ModprobeLine], dkms_here: bool,
                    findings: list[Finding]) -> CheckResult:
        on_cmdline = list(cmdline.blacklist_tokens) + ["nomodeset"] * cmdline.nomodeset
        on_cmdline += ["amdgpu.modeset=0"] * cmdline.modeset_off
        reasons = [f"{t} on the kernel command line" for t in on_cmdline]
        reasons += [f"'{b.text}' in {b.path}" for b in blocks]
        findings = [Finding.error(f"blocked by {r}") for r in reasons] + findings
        in_container = bool(container_signals(host))
        if in_container:
            findings.append(Finding.hint(
                "this is a container: the host's kernel loads the driver, not the container"))
        if dkms_here:
            findings.append(Finding.info(f"amdgpu-dkms is installed for this kernel ({kernel})"))
        if reasons:
            if on_cmdline:
                text = (f"Remove {', '.join(on_cmdline)} from GRUB_CMDLINE_LINUX_DEFAULT and "
                        "GRUB_CMDLINE_LINUX in /etc/default/grub, regenerate the GRUB "
                        "configuration (update-grub on Debian/Ubuntu) and reboot.")
                if blocks:
                    text += " Comment out the blocking lines in /etc/modprobe.d first."
                commands = (*comment_out(blocks), *GRUB_COMMANDS)
            else:
                text = ("Comment out the lines that block amdgpu, then load it. The initramfs "
                        "keeps a copy: rebuild it (update-initramfs -u on Debian/Ubuntu, "
                        "dracut -f on Fedora/RHEL).")
                commands = (*comment_out(blocks), "sudo modprobe amdgpu")
            return self.result(Status.FAIL, f"amdgpu is not loaded: blocked by {reasons[0]}",
                               findings, Fix(text, commands, needs_root=True))
        if in_container:  # the container's /lib/modules says nothing about the host
            return self.result(Status.FAIL, "amdgpu is not loaded on the host", findings, Fix(
                "Load the driver on the host, not in the container; run rocmdoctor there if "
                "it will not load.", ("sudo modprobe amdgpu",), needs_root=True))
        installed = module_file(host)
        if installed.path:
            findings.append(Finding.info(f"module file: {installed.path}"))
        refused = self._refused(host, kernel, installed.path, dkms_here, findings)
        if refused is not None:
            return refused
        failure = _failed_here(host, kernel, dkms_entries(host))
        if failure is not None:
            findings.append(_failure_finding(failure))
        if not installed.path and installed.none_installed and failure:
            return self.result(
                Status.FAIL, f"amdgpu is not loaded: the amdgpu-dkms build for kernel {kernel} "
                "failed", findings, _failed_build_fix(failure, dkms_entries(host)),
                source=KERNEL_SUPPORT)
        if not installed.path and installed.none_installed:
            findings.append(Finding.error(f"no amdgpu module is installed for kernel {kernel}"))
            fix = Fix("Install the amdgpu module for this kernel: the distribution's extra "
                      "kernel modules (on Ubuntu: linux-modules-extra-$(uname -r)) or AMD's "
                      "driver (amdgpu-install --usecase=dkms), then reboot.", needs_root=True)
            return self.result(Status.FAIL, "amdgpu is not loaded: no amdgpu module for kernel "
                               f"{kernel}", findings, fix, source=AMDGPU_INSTALL)
        fix = Fix("Load the driver; if that fails, the kernel log says why.",
                  ("sudo modprobe amdgpu", "sudo dmesg | grep -i amdgpu"), needs_root=True)
        return self.result(Status.FAIL, "amdgpu is not loaded", findings, fix)

    def _refused(self, host: Host, kernel: str, module_path: str, dkms_here: bool,
                 findings: list[Finding]) -> Optional[CheckResult]:
        """The kernel refused the module: Secure Boot (an unsigned DKMS module) or symbols the
        module needs that this kernel lacks."""
        sb = secure_boot(host)
        refused = cause(host, "secure-boot-module-refused")
        dkms_module = dkms_here or "/updates/" in module_path or "/dkms/" in module_path
        if refused is not None or (sb.enforcing and dkms_module):
            findings.extend(Finding.info(f"Secure Boot: {e}") for e in sb.evidence)
            if refused is not None:
                findings.append(Finding.error(f"kernel log: {refused.first.message[:200]}"))
            if sb.key:
                commands: tuple[str, ...] = (f"sudo mokutil --import {sb.key}", "sudo reboot")
                text = (f"Enrol the key DKMS signs its modules with ({sb.key}) as a Machine "
                        "Owner Key: import it (mokutil asks for a one-time password), reboot, "
                        "choose 'Enroll MOK' in the blue MOK manager screen and type that "
                        "password. Or turn Secure Boot off in the firmware setup.")
            else:
                commands = ()
                text = ("No DKMS signing key was found (/var/lib/dkms/mok.pub, "
                        "/var/lib/shim-signed/mok/MOK.der): create one as your distribution's "
                        "Secure Boot guide says, rebuild amdgpu-dkms so that DKMS signs it, and "
                        "enrol the key with `sudo mokutil --import`; or turn Secure Boot off in "
                        "the firmware setup.")
            return self.result(
                Status.FAIL, "amdgpu is not loaded: Secure Boot refuses the unsigned amdgpu-dkms "
                "module", findings, Fix(text, commands, needs_root=True), source=MODULE_SIGNING
                if sb.key is None else DEBIAN_SECUREBOOT)
        symbol = cause(host, "amdgpu-unknown-symbol")
        if symbol is not None:
            findings.append(Finding.error(f"kernel log ({symbol.count} lines): "
                                          f"{symbol.first.message[:200]}"))
            distro = read_os_release(host)
            ubuntu = distro is not None and "ubuntu" in distro.families
            return self.result(
                Status.FAIL, f"amdgpu is not loaded: the module does not fit kernel {kernel} "
                "(unknown symbols)", findings,
                Fix(symbol.entry.fix, ("sudo apt install linux-modules-extra-$(uname -r)",)
                    if ubuntu else (), needs_root=True),
                source=AWS_MODULES_EXTRA)
        return None

    def _wsl(self, host: Host) -> CheckResult:
        if dxg_present(host):
            return self.passed("WSL2: no amdgpu module here; ROCm reaches the GPU through "
                               "/dev/dxg and the Windows driver", source=LIBROCDXG)
        return self.result(
            Status.WARN, "WSL2 without /dev/dxg: no GPU is shared with this Linux",
            fix=Fix("In Windows, update WSL (wsl --update) and install an AMD driver that "
                    "supports ROCm on WSL, then restart WSL (wsl --shutdown)."),
            source=LIBROCDXG)
