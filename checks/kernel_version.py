"""kernel-version: the running kernel against the installed ROCm's supported kernels.

AMD lists, per ROCm release, the distribution releases it supports and their kernels
(Ubuntu 22.04.5: 5.15 GA, 6.8 HWE). A kernel older than 5.15 on a distribution with
mainline-numbered kernels fails; a kernel AMD does not list warns (it may well work, it is
simply not validated). Enterprise kernels (RHEL 4.18/5.14, SLES) carry backported drivers,
so only their listed series count.

By hand: `uname -r`, `cat /proc/version /etc/os-release /opt/rocm/.info/version`.
"""

from __future__ import annotations

import re
from typing import Optional

from rocmdoctor.facts.os_release import OsRelease, read_os_release, wsl_kernel
from rocmdoctor.facts.platform import not_rocm_reason, proc_version, uname_release
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import rocm_support as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

# Bounded: a longer number is no kernel series (and int() refuses 4,300+ digits).
_RELEASE = re.compile(r"^(\d{1,9})\.(\d{1,9})(?!\d)")
_PROC_VERSION = re.compile(r"Linux version (\S+)")


def parse_kernel_release(text: str) -> Optional[tuple[int, int]]:
    """(major, minor) of '6.8.0-45-generic' or of a /proc/version line. Never raises."""
    text = text.strip()
    m = _PROC_VERSION.search(text)
    if m:
        text = m.group(1)
    m = _RELEASE.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def running_kernel(host: Host) -> tuple[str, Optional[tuple[int, int]]]:
    release = uname_release(host).strip()
    series = parse_kernel_release(release) if release else None
    if series is None:
        m = _PROC_VERSION.search(proc_version(host))
        if m:
            release, series = m.group(1), parse_kernel_release(m.group(1))
    return release, series


def _fmt(series: tuple[int, int]) -> str:
    return f"{series[0]}.{series[1]}"


def _series(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _enterprise(osr: Optional[OsRelease]) -> bool:
    return osr is not None and any(f in kb.ENTERPRISE_FAMILIES for f in osr.families)


class KernelVersion(Check):
    id = "kernel-version"
    title = "Kernel supported by the installed ROCm"
    source = kb.MATRIX_LATEST

    def applies(self, host: Host) -> Optional[str]:
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        release, series = running_kernel(host)
        if series is None:
            return self.result(Status.WARN, "cannot read the running kernel's version",
                               [Finding.hint("uname -r and /proc/version gave no version")])
        wsl = wsl_kernel(host)
        if wsl:
            return self.passed(f"WSL kernel {release}", [Finding.info(
                "under WSL the GPU is reached through the Windows driver (/dev/dxg), so the "
                "Linux kernel table does not apply")])
        osr = read_os_release(host)
        rocm = installed_rocm(host)
        match = kb.release_for(rocm.version) if rocm else None
        newest = ".".join(kb.newest_release().split(".")[:2])
        rocm_name = f"ROCm {rocm.version}" if rocm else f"current ROCm (6.0-{newest})"
        findings: list[Finding] = []
        if rocm is not None and match is None:
            findings.append(Finding.info(
                f"ROCm {rocm.version} is newer than what this rocmdoctor knows, tables dated "
                f"{KB_DATE}; only the {_fmt(kb.KERNEL_FLOOR)} floor is checked"
                if kb.newer_than_known(rocm.version) else
                f"ROCm {rocm.version} is older than what this rocmdoctor knows (its kernel "
                f"lists are for ROCm {kb.oldest_release()} to {kb.newest_release()}); only "
                f"their {_fmt(kb.KERNEL_FLOOR)} floor is checked"
                if kb.older_than_known(rocm.version) else
                f"rocmdoctor has no kernel list for ROCm {rocm.version}; only the "
                f"{_fmt(kb.KERNEL_FLOOR)} floor is checked"))
        listed: list[kb.DistroKernels] = []
        if match is not None and osr is not None:
            versions = kb.matching_systems(match.release, osr.id, osr.version_id)
            listed = kb.kernels_for(osr.id, versions)
        kernels = sorted({k for row in listed for k in row.kernels}, key=_series)
        where = "this distribution" if osr is None else (
            kb.display(osr.id, osr.version_id) if osr.id in kb.DISTRO_NAMES else osr.pretty_name)
        source = listed[0].source if listed else (match.release.source if match else None)
        if _fmt(series) in kernels:
            return self.passed(
                f"kernel {release} is validated for {rocm_name} on {where} "
                f"({', '.join(kernels)})", findings, source=source)
        if not _enterprise(osr) and series < kb.KERNEL_FLOOR:
            findings.append(Finding.error(
                f"kernel {_fmt(series)} is older than {_fmt(kb.KERNEL_FLOOR)}, the oldest "
                f"kernel {rocm_name} supports on a distribution with mainline kernels"))
            return self.result(
                Status.FAIL, f"kernel {release} is too old for {rocm_name}", findings,
                Fix("Move to a supported distribution release and kernel (for Ubuntu 22.04, "
                    "the 5.15 GA or HWE kernel), then reboot.", needs_root=True),
                source=kb.KERNEL_FLOOR_SOURCE)
        if match is not None and not match.release.verified:
            findings.append(Finding.info(
                f"rocmdoctor's list for {rocm_name} is partly inferred from the release notes "
                f"({match.release.source}); kernel {_fmt(series)} is not in it"))
            return self.passed(f"kernel {release} meets the {_fmt(kb.KERNEL_FLOOR)} floor for "
                               f"{rocm_name}", findings, source=match.release.source)
        if kernels:
            findings.append(Finding.hint(
                f"AMD lists {', '.join(kernels)} for {rocm_name} on {where}"))
            return self.result(
                Status.WARN, f"kernel {release} is not validated for {rocm_name} on {where}",
                findings, source=source)
        if match is not None:
            findings.append(Finding.hint(
                f"{where} is not in {rocm_name}'s list, so its kernel is not validated"))
            return self.result(Status.WARN, f"kernel {release} is not validated for {rocm_name}",
                               findings, source=source)
        if _enterprise(osr):
            findings.append(Finding.info(
                "enterprise kernels carry backported drivers; the version alone says little"))
        return self.passed(f"kernel {release} meets the {_fmt(kb.KERNEL_FLOOR)} floor for "
                           f"{rocm_name}", findings, source=kb.KERNEL_FLOOR_SOURCE)
