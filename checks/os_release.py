"""os-release: the distribution and release, and whether the installed ROCm supports it.

By hand: `cat /etc/os-release`, `cat /opt/rocm/.info/version`, then find the distribution in
AMD's compatibility matrix for that ROCm
(https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.platform import is_wsl, kernel_release
from rocmdoctor.facts.rocm_version import installed_rocm
from rocmdoctor.host import Host
from rocmdoctor.kb import rocm_support as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

OS_RELEASE_PATHS = ("/etc/os-release", "/usr/lib/os-release")
OS_RELEASE_SPEC = "https://www.freedesktop.org/software/systemd/man/latest/os-release.html"
WSL_DOCS = "https://rocm.docs.amd.com/projects/radeon/en/latest/docs/compatibility.html"

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_LEADING_VERSION = re.compile(r"^(\d+(?:\.\d+)*)")


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines, values unquoted the shell way (the os-release format). Never raises."""
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        key, value = m.groups()
        try:
            words = shlex.split(value, comments=False)
        except ValueError:  # unbalanced quote: keep the text without its quote marks
            words = [value.strip().strip("\"'")]
        fields[key] = " ".join(words)
    return fields


@dataclass(frozen=True)
class OsRelease:
    id: str
    version_id: str
    pretty_name: str
    id_like: tuple[str, ...] = ()
    version: str = ""
    source: str = ""

    @property
    def point_release(self) -> str:
        """'22.04.4' from VERSION='22.04.4 LTS (Jammy Jellyfish)', else VERSION_ID."""
        m = _LEADING_VERSION.match(self.version)
        return m.group(1) if m else self.version_id

    @property
    def families(self) -> tuple[str, ...]:
        return (self.id, *self.id_like)


def os_release_from(fields: dict[str, str], source: str = "") -> OsRelease:
    name = fields.get("NAME", "")
    version = fields.get("VERSION", "")
    # ID defaults to "linux" (os-release(5)); a bare NAME="Ubuntu" still names the distro.
    guess = name.split()[0].lower() if name.split() else ""
    distro = fields.get("ID") or (guess if guess in kb.DISTRO_NAMES else "linux")
    version_id = fields.get("VERSION_ID", "")
    if not version_id:  # "24.04.1 LTS (Noble Numbat)" -> "24.04", as VERSION_ID would say
        m = _LEADING_VERSION.match(version)
        version_id = ".".join(m.group(1).split(".")[:2]) if m else ""
    pretty = fields.get("PRETTY_NAME") or " ".join(p for p in (name, version) if p) or distro
    return OsRelease(distro.lower(), version_id, pretty,
                     tuple(fields.get("ID_LIKE", "").lower().split()), version, source)


def read_os_release(host: Host) -> Optional[OsRelease]:
    """/etc/os-release, else /usr/lib/os-release (the spec's fallback); None when neither."""

    def compute() -> Optional[OsRelease]:
        for path in OS_RELEASE_PATHS:
            text = host.read_file(path)
            if text is not None:
                return os_release_from(parse_os_release(text), path)
        return None

    return host.memo("os_release", compute)


def wsl_kernel(host: Host) -> Optional[str]:
    """The kernel release when it is a WSL kernel (…-microsoft-standard-WSL2), else None."""
    return kernel_release(host) if is_wsl(host) else None


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
        if rocm is None:
            findings.append(Finding.info("no ROCm install found, so ROCm's OS support was "
                                         "not checked"))
            return self.passed(osr.pretty_name, findings)
        match = kb.release_for(rocm.version)
        if match is None:
            findings.append(Finding.info(
                f"rocmdoctor has no OS list for ROCm {rocm.version} (it knows 6.0 to "
                f"{kb.newest_release()}); check {kb.MATRIX_LATEST}"))
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
        findings.append(Finding.hint(
            f"ROCm {rocm.version} supports: {kb.describe_systems(match.release)}"))
        return self.result(
            Status.WARN,
            f"{osr.pretty_name} is not listed for ROCm {rocm.version}",
            findings,
            Fix("Run ROCm on a listed distribution release, or accept that this combination "
                "is untested by AMD."),
            source=match.release.source,
        )
