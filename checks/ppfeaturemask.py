"""ppfeaturemask: the amdgpu PowerPlay feature mask and what its bits mean.

By hand: `cat /sys/module/amdgpu/parameters/ppfeaturemask` (0xfff7bfff is the default of
current kernels; older kernels print the mask in decimal), `cat /proc/cmdline` for an
`amdgpu.ppfeaturemask=` parameter, and `grep -r ppfeaturemask /etc/modprobe.d/`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amdgpu_module import module_parameter, module_present, parameter_file
from rocmdoctor.facts.boot import ModprobeLine, cmdline_text, modprobe_lines
from rocmdoctor.facts.platform import is_wsl, not_rocm_reason
from rocmdoctor.fixes import comment_out
from rocmdoctor.host import Host
from rocmdoctor.kb.boot import GRUB_COMMANDS
from rocmdoctor.kb.ppfeatures import (
    AMD_SHARED_H,
    AMDGPU_DRV_C,
    DEFAULT_MASK,
    KNOWN_DEFAULTS,
    OVERDRIVE_BIT,
    PPFeature,
    diff_from_default,
    hex_mask,
    parse_mask,
)
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

PARAMETER = "ppfeaturemask"
PARAM_FILE = parameter_file(PARAMETER)
CMDLINE_KEY = "amdgpu.ppfeaturemask="


def _short(feature: PPFeature) -> str:
    name = feature.name[3:] if feature.name.startswith("PP_") else feature.name
    return name[:-5] if name.endswith("_MASK") else name


class PPFeatureMask(Check):
    id = "ppfeaturemask"
    title = "amdgpu PowerPlay feature mask"
    source = AMD_SHARED_H

    def applies(self, host: Host) -> Optional[str]:
        if is_wsl(host):
            return "WSL2 has no amdgpu module"
        reason = not_rocm_reason(host)
        if reason is None and not module_present(host):
            return "amdgpu is not loaded (the amdgpu-driver check says why)"
        return reason

    def run(self, host: Host) -> CheckResult:
        text = module_parameter(host, PARAMETER)
        if text is None:
            return self.skipped(f"{PARAM_FILE} cannot be read")
        mask = parse_mask(text)
        if mask is None:
            return self.result(Status.WARN, f"ppfeaturemask reads {text.strip()!r}, which is "
                               "not a 32-bit number")
        on_cmdline = [t for t in cmdline_text(host).split()
                      if t.startswith(CMDLINE_KEY)]
        in_conf = [m for m in modprobe_lines(host)
                   if m.kind == "options" and "ppfeaturemask=" in m.text]
        findings = [Finding.info(f"set on the kernel command line: {t}") for t in on_cmdline]
        findings += [Finding.info(f"set in {m.path}:{m.lineno}: {m.text}") for m in in_conf]
        shown = hex_mask(mask)
        if mask in KNOWN_DEFAULTS:
            findings.insert(0, Finding.info(f"{shown} is {KNOWN_DEFAULTS[mask]}"))
            return self.passed(f"ppfeaturemask {shown} is the kernel default", findings)
        diff = diff_from_default(mask)
        if diff.undefined_cleared:
            bits = ", ".join(str(b) for b in diff.undefined_cleared)
            findings.append(Finding.info(f"bits {bits} are cleared; no feature uses them"))
        if not diff.turned_on and not diff.turned_off:
            return self.passed(f"ppfeaturemask {shown}: every feature as by default", findings)
        findings += [Finding.error(f"bit {f.bit} ({f.name}, {f.title}) on: {f.effect}")
                     for f in diff.turned_on]
        findings += [Finding.error(f"bit {f.bit} ({f.name}, {f.title}) off: {f.effect}")
                     for f in diff.turned_off]
        parts = []
        if diff.turned_on:
            parts.append(", ".join(_short(f) for f in diff.turned_on) + " on")
        if diff.turned_off:
            parts.append(", ".join(_short(f) for f in diff.turned_off) + " off")
        summary = (f"ppfeaturemask {shown} differs from the default {hex_mask(DEFAULT_MASK)}: "
                   + "; ".join(parts))
        overdrive = any(f.bit == OVERDRIVE_BIT for f in diff.turned_on)
        return self.result(Status.WARN, summary, findings, self._fix(on_cmdline, in_conf),
                           source=AMDGPU_DRV_C if overdrive else AMD_SHARED_H)

    @staticmethod
    def _fix(on_cmdline: list[str], in_conf: list[ModprobeLine]) -> Fix:
        if on_cmdline:
            return Fix(f"Remove {' '.join(on_cmdline)} from GRUB_CMDLINE_LINUX_DEFAULT and "
                       "GRUB_CMDLINE_LINUX in /etc/default/grub, regenerate the GRUB "
                       "configuration (update-grub on Debian/Ubuntu) and reboot; the driver "
                       "then uses its default mask.", GRUB_COMMANDS, needs_root=True)
        if in_conf:
            return Fix("Comment out the options line, rebuild the initramfs "
                       "(update-initramfs -u on Debian/Ubuntu, dracut -f on Fedora/RHEL) and "
                       "reboot; the driver then uses its default mask.",
                       tuple(comment_out(in_conf)), needs_root=True)
        return Fix("The mask is set somewhere other than the kernel command line and "
                   "/etc/modprobe.d (another modprobe.d folder or the initramfs); find it, "
                   "remove it and reboot.",
                   ("grep -rs ppfeaturemask /etc /usr/lib/modprobe.d /lib/modprobe.d",))
