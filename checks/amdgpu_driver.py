"""amdgpu-driver: the amdgpu kernel driver is loaded and live, its version, and blacklisting.

By hand: `cat /sys/module/amdgpu/initstate` prints `live`; `cat /sys/module/amdgpu/version`
prints a version only with AMD's amdgpu-dkms driver (the kernel's own driver has no such
file); `dkms status`; `grep amdgpu /proc/modules`; `cat /proc/cmdline`;
`grep -rw amdgpu /etc/modprobe.d/`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amdgpu_module import amdgpu_module, dkms_entries
from rocmdoctor.facts.boot import (
    CmdlineFacts,
    ModprobeLine,
    comment_out,
    kernel_cmdline,
    modprobe_lines,
)
from rocmdoctor.facts.platform import container_signals, is_wsl, kernel_release, not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb.boot import GRUB_COMMANDS
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

POST_INSTALL = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/post-install.html"
AMDGPU_INSTALL = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/amdgpu-install.html"
)
LIBROCDXG = "https://github.com/ROCm/librocdxg"


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
        if not version and dkms and not dkms_here:
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
                  needs_root=True)
        return self.result(Status.WARN, summary, findings, fix)

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
        modinfo = host.run(["modinfo", "-n", "amdgpu"])
        if modinfo.ok and modinfo.stdout.strip():
            findings.append(Finding.info(f"module file: {modinfo.stdout.strip()}"))
        elif modinfo.returncode == 1 and not modinfo.timed_out:  # "Module amdgpu not found"
            findings.append(Finding.error(f"no amdgpu module is installed for kernel {kernel}"))
            fix = Fix("Install the amdgpu module for this kernel: the distribution's extra "
                      "kernel modules (on Ubuntu: linux-modules-extra-$(uname -r)) or AMD's "
                      "driver (amdgpu-install --usecase=dkms), then reboot.", needs_root=True)
            return self.result(Status.FAIL, "amdgpu is not loaded: no amdgpu module for kernel "
                               f"{kernel}", findings, fix, source=AMDGPU_INSTALL)
        fix = Fix("Load the driver; if that fails, the kernel log says why.",
                  ("sudo modprobe amdgpu", "sudo dmesg | grep -i amdgpu"), needs_root=True)
        return self.result(Status.FAIL, "amdgpu is not loaded", findings, fix)

    def _wsl(self, host: Host) -> CheckResult:
        if host.exists("/dev/dxg"):
            return self.passed("WSL2: no amdgpu module here; ROCm reaches the GPU through "
                               "/dev/dxg and the Windows driver", source=LIBROCDXG)
        return self.result(
            Status.WARN, "WSL2 without /dev/dxg: no GPU is shared with this Linux",
            fix=Fix("In Windows, update WSL (wsl --update) and install an AMD driver that "
                    "supports ROCm on WSL, then restart WSL (wsl --shutdown)."),
            source=LIBROCDXG)
