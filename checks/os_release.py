"""os-release: the distribution and release, and whether the installed ROCm supports it.

By hand: `cat /etc/os-release`, `cat /opt/rocm/.info/version`, then find the distribution in
AMD's compatibility matrix for that ROCm
(https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html).
"""

from __future__ import annotations

from rocmdoctor.facts.os_release import OS_RELEASE_SPEC, read_os_release, wsl_kernel
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import rocm_support as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

WSL_DOCS = "https://rocm.docs.amd.com/projects/radeon/en/latest/docs/compatibility.html"


class OsReleaseCheck(Check):
    id = "os-release"
    title = "Linux distribution supported by the installed ROCm"
    source = kb.MATRIX_LATEST

    def run(self, host: Host) -> CheckResult:
        osr = read_os_release(host)
        if osr is None:
            return self.result(
                Status.WARN, "cannot identify the distribution: no /etc/os-release",
                [Finding.hint("Neither /etc/os-release nor /usr/lib/os-release exists, so "
                              "ROCm's OS support cannot be checked.")],
                source=OS_RELEASE_SPEC)
        findings: list[Finding] = []
        wsl = wsl_kernel(host)
        if wsl:
            findings.append(Finding.info(
                f"running under WSL (kernel {wsl}): ROCm on WSL follows AMD's separate WSL "
                f"support list ({WSL_DOCS}), not the Linux matrix"))
        rocm = installed_rocm(host)
        never = kb.never_listed_text(osr.id, osr.version_id, osr.pretty_name)
        if rocm is None:
            findings.append(Finding.info("no ROCm install found, so ROCm's OS support was "
                                         "not checked"))
            if never:
                findings.append(Finding.hint(never))
            return self.passed(osr.pretty_name, findings)
        match = kb.release_for(rocm.version)
        if match is None and kb.older_than_known(rocm.version):
            findings.append(Finding.hint(
                f"ROCm {rocm.version} is older than what this rocmdoctor knows (its OS lists "
                f"are for ROCm {kb.oldest_release()} to {kb.newest_release()}), so the "
                f"distribution was not checked against it; AMD's tables: {kb.MATRIX_LATEST}"))
            if never:
                findings.append(Finding.hint(never))
            return self.passed(f"{osr.pretty_name}; ROCm {rocm.version} is older than what "
                               "this rocmdoctor knows", findings)
        if match is None:
            findings.append(Finding.info(
                f"ROCm {rocm.version} is newer than what this rocmdoctor knows, tables dated "
                f"{KB_DATE}; check {kb.MATRIX_LATEST}" if kb.newer_than_known(rocm.version) else
                f"rocmdoctor has no OS list for ROCm {rocm.version} (it knows "
                f"{kb.oldest_release()} to {kb.newest_release()}); check {kb.MATRIX_LATEST}"))
            if never:
                findings.append(Finding.hint(never))
            return self.passed(f"{osr.pretty_name}; ROCm {rocm.version}", findings)
        if not match.exact:
            findings.append(Finding.info(
                f"ROCm {rocm.version} is checked against the matrix column for "
                f"{match.column}, the nearest release of its series"))
        listed = kb.matching_systems(match.release, osr.id, osr.version_id)
        if listed:
            names = ", ".join(kb.display(osr.id, v) for v in listed)
            if osr.id == "ubuntu" and osr.point_release not in listed:
                findings.append(Finding.info(
                    f"AMD validated {names}; this system reports {osr.point_release}"))
            return self.passed(
                f"{osr.pretty_name} is supported by ROCm {rocm.version} (listed: {names})",
                findings, source=match.release.source)
        if not match.release.verified:
            findings.append(Finding.info(
                f"{osr.pretty_name} is not in rocmdoctor's list for ROCm {rocm.version} "
                f"({kb.describe_systems(match.release)}), which is partly inferred from the "
                f"release notes; check them: {match.release.source}"))
            return self.passed(f"{osr.pretty_name}; ROCm {rocm.version}", findings,
                               source=match.release.source)
        findings.append(Finding.hint(
            f"ROCm {rocm.version} supports: {kb.describe_systems(match.release)}"))
        if never:
            findings.append(Finding.hint(never))
        return self.result(
            Status.WARN,
            f"{osr.pretty_name} is not listed for ROCm {rocm.version}",
            findings,
            Fix("Run ROCm on a listed distribution release, or accept that this combination "
                "is untested by AMD."),
            source=match.release.source,
        )
