"""amdgpu-firmware: the firmware the amdgpu driver loaded (debugfs amdgpu_firmware_info when
readable, else `amd-smi firmware --json`), firmware it could not load (the kernel log), builds
AMD named as faulty, and the distribution's firmware packages.

By hand: `sudo cat /sys/kernel/debug/dri/*/amdgpu_firmware_info`; `amd-smi firmware`;
`sudo dmesg | grep -iE 'firmware|psp'`; `dpkg-query -W linux-firmware amdgpu-dkms-firmware`
(Debian/Ubuntu) or `rpm -q linux-firmware amdgpu-dkms-firmware` (Fedora/RHEL).
"""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.facts.amd_smi import amd_smi
from rocmdoctor.facts.amdgpu_firmware import (
    DEBUGFS_GLOB,
    CardFirmware,
    debugfs_firmware,
    firmware_packages,
)
from rocmdoctor.facts.kernel_log import kernel_log, log_causes
from rocmdoctor.facts.pci import kfd_gpu_nodes
from rocmdoctor.facts.platform import is_wsl, not_rocm_reason
from rocmdoctor.host import Host
from rocmdoctor.kb import firmware as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

FAILURES = ("amdgpu-firmware-missing", "amdgpu-psp-load-failed")
SHOWN = ("MEC", "MES", "MES_KIQ", "RLC", "SMC", "SOS", "VBIOS")
READ_DEBUGFS = f"sudo cat {DEBUGFS_GLOB}"
_FILE = re.compile(r"(amdgpu/[\w.-]+\.bin)")


def _gfx_major(host: Host) -> set[str]:
    """"gfx12" and the like, for the GPUs KFD lists."""
    return {f"gfx{n.gfx_target_version // 10000}" for n in kfd_gpu_nodes(host)
            if n.gfx_target_version}


# amd-smi's firmware ids (AMDSMI_FW_ID_*) under the names amdgpu_firmware_info uses.
AMDSMI_NAMES = {"CP_MEC1": "MEC", "CP_ME": "ME", "CP_PFP": "PFP", "RLC": "RLC", "PM": "SMC",
                "PSP_SOSDRV": "SOS", "MES": "MES", "MES_KIQ": "MES_KIQ"}


def _amd_smi_cards(host: Host) -> list[CardFirmware]:
    cards = []
    for gpu in amd_smi(host, ("static", "firmware")).gpus:
        versions, shown = {}, {}
        for fw_id, version in gpu.firmware_versions.items():
            name = AMDSMI_NAMES.get(fw_id, fw_id)
            shown[name] = version
            # CP engines are decimal, the others dotted hex
            if version.isascii() and version.isdigit() and len(version) <= 18:
                versions[name] = int(version)
        if shown:
            cards.append(CardFirmware(f"amd-smi GPU {gpu.gpu}", gpu.bdf or "", versions, shown))
    return cards


class AmdgpuFirmware(Check):
    id = "amdgpu-firmware"
    title = "amdgpu firmware loaded, missing or known faulty"
    source = kb.COMPATIBILITY
    depends = ("amdgpu-driver",)

    def applies(self, host: Host) -> Optional[str]:
        if is_wsl(host):
            return "WSL2: the Windows driver loads the GPU firmware"
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        findings: list[Finding] = []
        failures = [c for c in log_causes(host) if c.entry.key in FAILURES]
        for cause in failures:
            files = sorted({m for ln in cause.lines for m in _FILE.findall(ln.message)})
            findings.append(Finding.error(
                f"{cause.entry.title} ({cause.count} lines"
                + (f", last at {cause.last_stamp}" if cause.last_stamp else "")
                + f"): {cause.first.message[:200]}" + (f" [files: {', '.join(files)}]"
                                                       if files else "")))
        cards = debugfs_firmware(host) or _amd_smi_cards(host)
        majors = _gfx_major(host)
        faulty = []
        for card in cards:
            label = card.bdf or card.where
            parts = [f"{k} {card.shown[k]}" for k in SHOWN if k in card.shown]
            findings.append(Finding.info(f"{label}: " + ", ".join(parts) if parts
                                         else f"{label}: {len(card.versions)} firmware"))
            for bad in kb.FAULTY:
                version = card.versions.get(bad.firmware)
                if version == bad.version and (not majors or bad.gfx_prefix in majors):
                    faulty.append(bad)
                    findings.append(Finding.hint(
                        f"{label}: {bad.firmware} firmware {card.shown.get(bad.firmware)}: "
                        f"{bad.note}"))
        packages = firmware_packages(host)
        if packages:
            findings.append(Finding.info("firmware packages: " + ", ".join(
                f"{k} {v}" for k, v in sorted(packages.items()))))
        findings.extend(self._instinct(host))
        if failures:
            entry = failures[0].entry
            files = [m for c in failures for ln in c.lines for m in _FILE.findall(ln.message)]
            commands = tuple(dict.fromkeys(f"ls -l /lib/firmware/{f}*" for f in files)) or \
                entry.commands
            return self.result(Status.FAIL, f"{entry.title}: {failures[0].first.message[:160]}",
                               findings, Fix(entry.fix, commands, entry.needs_root),
                               entry.source)
        if faulty:
            bad = faulty[0]
            return self.result(
                Status.WARN, f"{bad.firmware} firmware 0x{bad.version:x} is a build AMD names as "
                "faulty", findings,
                Fix("Update the distribution's firmware package (linux-firmware, or "
                    "amdgpu-dkms-firmware with AMD's driver) to a release with a newer "
                    f"{bad.firmware} firmware, rebuild the initramfs and reboot; ROCm issue 5814 "
                    "tracks it.", (READ_DEBUGFS,), needs_root=True), bad.source)
        log = kernel_log(host)
        if not cards and log.source is None:
            return self.skipped("neither the firmware versions (debugfs, amd-smi) nor the "
                                f"kernel log is readable here; as root: {READ_DEBUGFS}")
        if not cards:
            findings.append(Finding.hint(f"firmware versions need root: {READ_DEBUGFS}"))
            return self.passed("no firmware load failure in the kernel log (versions not "
                               "readable without root)", findings)
        what = "no load failure in the kernel log" if log.source else "kernel log not readable"
        return self.passed(f"firmware of {len(cards)} GPU(s) loaded; {what}", findings)

    @staticmethod
    def _instinct(host: Host) -> list[Finding]:
        names = {g.name for g in amd_smi(host, ("static",)).gpus}
        out = []
        for product, bundle in kb.INSTINCT_FIRMWARE:
            if any(re.search(rf"\b{product}\b", n) for n in names):
                out.append(Finding.info(
                    f"ROCm {kb.FIRMWARE_RELEASE} lists {bundle} for the {product}; amd-smi does "
                    "not report the bundle version, so compare it with your server vendor's "
                    f"firmware ({kb.FIRMWARE_YAML})"))
                break
        return out
