"""amdgpu-driver: the amdgpu kernel driver is loaded and live, its version, and blacklisting.

By hand: `cat /sys/module/amdgpu/initstate` prints `live`; `cat /sys/module/amdgpu/version`
prints a version only with AMD's amdgpu-dkms driver (the kernel's own driver has no such
file); `dkms status`; `grep amdgpu /proc/modules`; `cat /proc/cmdline`;
`grep -rw amdgpu /etc/modprobe.d/`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.platform import container_signals, is_wsl, kernel_release, not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

POST_INSTALL = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/post-install.html"
AMDGPU_INSTALL = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/amdgpu-install.html"
)
LIBROCDXG = "https://github.com/ROCm/librocdxg"
GRUB_COMMANDS = ("sudoedit /etc/default/grub", "sudo update-grub", "sudo reboot")
# Kernel command-line parameters that keep a module from loading: module_blacklist (kernel,
# https://docs.kernel.org/admin-guide/kernel-parameters.html), modprobe.blacklist (kmod,
# https://man7.org/linux/man-pages/man5/modprobe.d.5.html), rd.driver.blacklist (dracut).
BLACKLIST_PARAMS = ("module_blacklist", "modprobe.blacklist", "rd.driver.blacklist")
MODPROBE_GLOB = "/etc/modprobe.d/*.conf"


# Facts that kfd-access and ppfeaturemask share.
@dataclass(frozen=True)
class CmdlineFacts:
    blacklist_tokens: tuple[str, ...]  # the tokens that blacklist amdgpu
    amdgpu_options: tuple[str, ...]  # every amdgpu.* token
    nomodeset: bool
    modeset_off: bool  # amdgpu.modeset=0


def parse_cmdline(text: str) -> CmdlineFacts:
    tokens = text.split()
    blacklist = tuple(t for t in tokens if t.partition("=")[0] in BLACKLIST_PARAMS
                      and "amdgpu" in t.partition("=")[2].split(","))
    options = tuple(t for t in tokens if t.startswith("amdgpu."))
    return CmdlineFacts(blacklist, options, "nomodeset" in tokens, "amdgpu.modeset=0" in tokens)


@dataclass(frozen=True)
class ModprobeLine:
    path: str
    lineno: int
    text: str
    kind: str  # blacklist, install or options


def parse_modprobe_conf(path: str, text: str) -> list[ModprobeLine]:
    """The `blacklist amdgpu`, `install amdgpu ...` and `options amdgpu ...` lines."""
    found = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if len(words) >= 2 and words[1] == "amdgpu" and words[0] in (
                "blacklist", "install", "options"):
            found.append(ModprobeLine(path, lineno, " ".join(words), words[0]))
    return found


def modprobe_lines(host: Host) -> list[ModprobeLine]:
    def compute() -> list[ModprobeLine]:
        found = []
        for path in host.glob(MODPROBE_GLOB):
            found += parse_modprobe_conf(path, host.read_file(path) or "")
        return found

    return host.memo("amdgpu:modprobe.d", compute)


def comment_out(lines: Sequence[ModprobeLine]) -> list[str]:
    """Exact commands that comment out these lines of /etc/modprobe.d files."""
    return [f"sudo sed -i '{m.lineno}s/^/# /' {shlex.quote(m.path)}" for m in lines]


def parse_proc_modules(text: str) -> dict[str, str]:
    """Module name -> state (Live, Loading, Unloading) from /proc/modules lines
    `name size refcount deps state address [(taints)]`."""
    return {p[0]: p[4] for p in (line.split() for line in text.splitlines()) if len(p) >= 5}


@dataclass(frozen=True)
class DkmsEntry:
    module: str
    version: str
    kernel: Optional[str]
    status: str  # installed, built or added, possibly with a note after it


def parse_dkms_status(text: str) -> list[DkmsEntry]:
    """Old `amdgpu, 3.3-19, 5.0.0-23-generic, x86_64: installed` lines and new
    `amdgpu/6.12.12-2133686.22.04, 6.8.0-52-generic, x86_64: installed` ones."""
    entries = []
    for line in text.splitlines():
        head, sep, status = line.strip().rpartition(": ")
        fields = [f.strip() for f in head.split(",")]
        if not sep:
            continue
        if "/" in fields[0]:
            module, version = fields[0].split("/", 1)
            rest = fields[1:]
        elif len(fields) >= 2:
            module, version, rest = fields[0], fields[1], fields[2:]
        else:
            continue
        if module and version and " " not in module:
            entries.append(DkmsEntry(module, version, rest[0] if rest else None, status.strip()))
    return entries


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
        cmdline = parse_cmdline(host.read_file("/proc/cmdline") or "")
        blocks = [m for m in modprobe_lines(host) if m.kind in ("blacklist", "install")]
        dkms = [e for e in parse_dkms_status(host.run(["dkms", "status"]).stdout)
                if e.module == "amdgpu"]
        dkms_here = any(e.kernel == kernel and e.status.startswith("installed") for e in dkms)
        findings = [Finding.info(f"dkms: amdgpu {e.version} for {e.kernel or 'no kernel'}: "
                                 f"{e.status}") for e in dkms]
        findings += [Finding.info(f"kernel command line: {o}") for o in cmdline.amdgpu_options]
        modules_text = host.read_file("/proc/modules")
        loaded = parse_proc_modules(modules_text).get("amdgpu") if modules_text else None
        if loaded is None and not host.exists("/sys/module/amdgpu"):
            return self._not_loaded(host, kernel, cmdline, blocks, dkms_here, findings)
        initstate = (host.read_file("/sys/module/amdgpu/initstate") or "").strip() or (
            loaded or "").lower()
        if initstate and initstate != "live":
            return self.result(
                Status.FAIL, f"amdgpu is loaded but not live (initstate: {initstate})",
                findings, Fix("The driver did not finish starting; the kernel log says why.",
                              ("sudo dmesg | grep -i amdgpu",), needs_root=True))
        if not initstate and loaded is None:
            findings.append(Finding.info("amdgpu is built into the kernel"))
        version = (host.read_file("/sys/module/amdgpu/version") or "").strip()
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
