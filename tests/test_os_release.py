"""os-release: the distribution, and whether the installed ROCm supports it."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.os_release import OsReleaseCheck
from rocmdoctor.facts.os_release import (
    OS_RELEASE_SPEC,
    OsRelease,
    os_release_from,
    parse_os_release,
    read_os_release,
)
from rocmdoctor.host import Host
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import rocm_support as kb
from rocmdoctor.kb.rocm_support import DOCS, HISTORICAL_60, MATRIX_LATEST, OS_SUPPORT_YAML
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, host_of, make_snapshot

# `cat /etc/os-release` on Ubuntu 22.04.4 desktop, as posted in a public GitHub capture
# (with `uname -a` showing 6.8.0-52-generic).
UBUNTU_22_04_4 = """PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
"""
# Synthetic, in the format of /etc/os-release, for the lsb_release lines of the real
# capture proc-version-and-dkms-status-vega20-ubuntu18.04-amdgpu3.3.txt.
UBUNTU_18_04_4 = ('NAME="Ubuntu"\nVERSION="18.04.4 LTS (Bionic Beaver)"\nID=ubuntu\n'
                  'ID_LIKE=debian\nPRETTY_NAME="Ubuntu 18.04.4 LTS"\nVERSION_ID="18.04"\n')
RHEL_9_4 = ('NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (Plow)"\nID="rhel"\n'
            'ID_LIKE="fedora"\nVERSION_ID="9.4"\nPRETTY_NAME="Red Hat Enterprise Linux 9.4 '
            '(Plow)"\n')  # synthetic, os-release format
CLASSIC_VERSION = fixture_text("rocm-info-version-6.3.4-76-classic-layout.txt").strip()
THEROCK_VERSION = fixture_text("rocm-info-version-7.14.0-therock-core-layout.txt").strip()


def sysinfo_os_lines() -> str:
    """The two real /etc/os-release lines (NAME, VERSION) of a ROCm issue's system info."""
    body = fixture_text("rocminfo-grep-sysinfo-gfx906-radeonvii-x2-rocm6.3.0.txt")
    return "\n".join(body.splitlines()[1:3]) + "\n"


def check(host: Host) -> CheckResult:
    return replace(run_one(OsReleaseCheck(), host), duration_ms=0)


def expected(status: Status, summary: str, findings: list[Finding], fix: Fix | None = None,
             source: str = MATRIX_LATEST) -> CheckResult:
    return CheckResult("os-release", "Linux distribution supported by the installed ROCm",
                       status, summary, tuple(findings), fix, source)


def with_rocm(os_release: str, version_file: str = CLASSIC_VERSION,
              path: str = "/etc/os-release", kernel: str = "6.8.0-52-generic") -> Host:
    return host_of(files={path: os_release, "/opt/rocm/.info/version": version_file},
                   kernel=kernel)


# --- parsing --------------------------------------------------------------------------------

def test_parse_real_ubuntu_os_release() -> None:
    osr = os_release_from(parse_os_release(UBUNTU_22_04_4), "/etc/os-release")
    assert osr == OsRelease("ubuntu", "22.04", "Ubuntu 22.04.4 LTS", ("debian",),
                            "22.04.4 LTS (Jammy Jellyfish)", "/etc/os-release")
    assert osr.point_release == "22.04.4"


def test_parse_real_partial_lines_without_id() -> None:
    fields = parse_os_release(sysinfo_os_lines())
    assert fields == {"NAME": "Ubuntu", "VERSION": "24.04.1 LTS (Noble Numbat)"}
    osr = os_release_from(fields)
    assert (osr.id, osr.version_id, osr.pretty_name) == (
        "ubuntu", "24.04", "Ubuntu 24.04.1 LTS (Noble Numbat)")


def test_parse_quoting_comments_and_junk() -> None:
    text = ("# comment\nID='sles'\nVERSION_ID=\"15.6\"\nNAME=\"a \\\"b\\\"\"\n"
            "BROKEN=\"unterminated\nnot a line\n")
    assert parse_os_release(text) == {"ID": "sles", "VERSION_ID": "15.6", "NAME": 'a "b"',
                                      "BROKEN": "unterminated"}
    assert os_release_from({}).id == "linux"  # os-release(5): ID defaults to "linux"


@given(st.text())
def test_parser_never_raises(text: str) -> None:
    os_release_from(parse_os_release(text))


def test_usr_lib_fallback() -> None:
    host = host_of(files={"/usr/lib/os-release": RHEL_9_4})
    osr = read_os_release(host)
    assert osr is not None and (osr.id, osr.version_id, osr.source) == (
        "rhel", "9.4", "/usr/lib/os-release")


# --- the check ------------------------------------------------------------------------------

def test_ubuntu_22_04_listed_for_rocm_6_3_4() -> None:
    assert check(with_rocm(UBUNTU_22_04_4)) == expected(
        Status.PASS, "Ubuntu 22.04.4 LTS is supported by ROCm 6.3.4 (listed: Ubuntu 22.04.5)",
        [Finding.info("ROCm 6.3.4 is checked against the matrix column for 6.3.3, the nearest "
                      "release of its series"),
         Finding.info("AMD validated Ubuntu 22.04.5; this system reports 22.04.4")],
        source=HISTORICAL_60)


def test_real_partial_os_release_lines_match_ubuntu_24_04() -> None:
    assert check(with_rocm(sysinfo_os_lines())) == expected(
        Status.PASS, "Ubuntu 24.04.1 LTS (Noble Numbat) is supported by ROCm 6.3.4 "
        "(listed: Ubuntu 24.04.2)",
        [Finding.info("ROCm 6.3.4 is checked against the matrix column for 6.3.3, the nearest "
                      "release of its series"),
         Finding.info("AMD validated Ubuntu 24.04.2; this system reports 24.04.1")],
        source=HISTORICAL_60)


def test_rhel_listed_exactly() -> None:
    host = with_rocm(RHEL_9_4, "6.4.3\n")
    assert check(host) == expected(
        Status.PASS, "Red Hat Enterprise Linux 9.4 (Plow) is supported by ROCm 6.4.3 "
        "(listed: RHEL 9.4)", [], source=DOCS.format(v="6.4.3"))


def test_sles_service_pack_is_not_compared_as_an_ubuntu_point_release() -> None:
    # SLES 15 SP6 says VERSION="15-SP6", VERSION_ID="15.6" (synthetic, os-release format): only
    # Ubuntu's point releases (22.04.4 against 22.04.5) are worth a note.
    sles = ('NAME="SLES"\nVERSION="15-SP6"\nVERSION_ID="15.6"\nPRETTY_NAME="SUSE Linux '
            'Enterprise Server 15 SP6"\nID="sles"\nID_LIKE="suse"\n'
            'CPE_NAME="cpe:/o:suse:sles:15:sp6"\n')
    assert check(with_rocm(sles)) == expected(
        Status.PASS, "SUSE Linux Enterprise Server 15 SP6 is supported by ROCm 6.3.4 (listed: "
        "SLES 15 SP6)",
        [Finding.info("ROCm 6.3.4 is checked against the matrix column for 6.3.3, the nearest "
                      "release of its series")],
        source=HISTORICAL_60)


def test_unlisted_release_warns_with_the_supported_list() -> None:
    assert check(with_rocm(UBUNTU_18_04_4)) == expected(
        Status.WARN, "Ubuntu 18.04.4 LTS is not listed for ROCm 6.3.4",
        [Finding.info("ROCm 6.3.4 is checked against the matrix column for 6.3.3, the nearest "
                      "release of its series"),
         Finding.hint("ROCm 6.3.4 supports: Ubuntu 24.04.2, 22.04.5; RHEL 9.5, 9.4, 8.10; "
                      "SLES 15 SP6, 15 SP5; Oracle Linux 8.10; Debian 12; Azure Linux 3.0"),
         Finding.hint("Ubuntu 18.04.4 LTS is in no OS list of the ROCm releases this "
                      "rocmdoctor knows (6.0.0 to 10.1.0)")],
        Fix("Run ROCm on a listed distribution release, or accept that this combination is "
            "untested by AMD."),
        source=HISTORICAL_60)


NON_LTS = "ubuntu-25.04-non-lts-rocm-7.x-gfx1201-hang-title.txt"
OLDER = "rocm-5.3-5.4.3-older-releases-ubuntu22.04-torch2.0.txt"


def test_real_a_non_lts_ubuntu_is_named_as_never_supported() -> None:
    # ROCm#5581: ROCm 7.0 to 7.1 on Ubuntu 25.04; os-release as Ubuntu writes it for 25.04.
    title = fixture_text(NON_LTS)
    series = re.search(r"on Ubuntu (\d+\.\d+)", title).group(1)  # type: ignore[union-attr]
    rocm = re.search(r"\((\d+\.\d+) /", title).group(1)  # type: ignore[union-attr]
    os_release = (f'PRETTY_NAME="Ubuntu {series}"\nNAME="Ubuntu"\nVERSION_ID="{series}"\n'
                  'ID=ubuntu\nID_LIKE=debian\n')
    result = check(with_rocm(os_release, f"{rocm}.0\n"))
    never = ("Ubuntu 25.04 is not an LTS release: no ROCm release this rocmdoctor knows "
             "(6.0.0 to 10.1.0) lists it; AMD lists Ubuntu LTS releases only")
    assert result == expected(
        Status.WARN, "Ubuntu 25.04 is not listed for ROCm 7.1.0",
        [Finding.hint("ROCm 7.1.0 supports: Ubuntu 24.04.3, 22.04.5; RHEL 10.0, 9.6, 9.4, 8.10; "
                      "SLES 15 SP7; Oracle Linux 10, 9, 8; Debian 13, 12; Rocky Linux 9"),
         Finding.hint(never)],
        Fix("Run ROCm on a listed distribution release, or accept that this combination is "
            "untested by AMD."),
        source="https://rocm.docs.amd.com/en/docs-7.2.3/compatibility/compatibility-matrix.html")
    # ...and without a system ROCm (a wheel that carries its own) it is still named.
    bare = check(host_of(files={"/etc/os-release": os_release}))
    assert bare == expected(Status.PASS, "Ubuntu 25.04", [
        Finding.info("no ROCm install found, so ROCm's OS support was not checked"),
        Finding.hint(never)])


def test_real_a_rocm_older_than_the_tables_is_said_so() -> None:
    # pytorch#99983: ROCm 5.3 to 5.4.3 on Ubuntu 22.04.
    release = re.search(r"- ROCm (5\.4\.3), torch", fixture_text(OLDER)).group(1)  # type: ignore[union-attr]
    assert check(with_rocm(UBUNTU_22_04_4, release + "\n")) == expected(
        Status.PASS, "Ubuntu 22.04.4 LTS; ROCm 5.4.3 is older than what this rocmdoctor knows",
        [Finding.hint("ROCm 5.4.3 is older than what this rocmdoctor knows (its OS lists are for "
                      "ROCm 6.0.0 to 10.1.0), so the distribution was not checked against it; "
                      f"AMD's tables: {MATRIX_LATEST}")])
    # kernel-version says the same of its kernel lists
    from rocmdoctor.checks.kernel_version import KernelVersion

    kernel = replace(run_one(KernelVersion(), with_rocm(UBUNTU_22_04_4, release + "\n")),
                     duration_ms=0)
    assert kernel == KernelVersion().result(
        Status.PASS, "kernel 6.8.0-52-generic meets the 5.15 floor for ROCm 5.4.3",
        [Finding.info("ROCm 5.4.3 is older than what this rocmdoctor knows (its kernel lists are "
                      "for ROCm 6.0.0 to 10.1.0); only their 5.15 floor is checked")],
        source=DOCS.format(v="6.3.1"))


def test_rhel_minor_must_match() -> None:
    host = with_rocm(RHEL_9_4.replace("9.4", "9.2"), "7.1.1\n")
    result = check(host)
    assert result.status is Status.WARN
    assert result.summary == ("Red Hat Enterprise Linux 9.2 (Plow) is not listed for "
                              "ROCm 7.1.1")
    assert result.findings == (Finding.hint(
        "ROCm 7.1.1 supports: Ubuntu 24.04.3, 22.04.5; RHEL 10.1, 10.0, 9.7, 9.6, 9.4, 8.10; "
        "SLES 15 SP7; Oracle Linux 10, 9, 8; Debian 13, 12; Rocky Linux 9"),)


def test_no_rocm_installed_passes_with_information() -> None:
    host = host_of(files={"/etc/os-release": UBUNTU_22_04_4})
    assert check(host) == expected(Status.PASS, "Ubuntu 22.04.4 LTS", [
        Finding.info("no ROCm install found, so ROCm's OS support was not checked")])


def test_therock_7_14_listed_ubuntu_24_04() -> None:
    # AMD's OS table for 7.14 and 10.0 (docs/data/os-support.yaml) lists Ubuntu 24.04.4.
    host = host_of(files={"/etc/os-release": sysinfo_os_lines(),
                          "/opt/rocm/core/.info/version": THEROCK_VERSION})
    assert check(host) == expected(
        Status.PASS, "Ubuntu 24.04.1 LTS (Noble Numbat) is supported by ROCm 7.14.0 (listed: "
        "Ubuntu 24.04.4)",
        [Finding.info("AMD validated Ubuntu 24.04.4; this system reports 24.04.1")],
        source=OS_SUPPORT_YAML)


def test_rocm_newer_than_the_tables_passes_saying_so() -> None:
    host = host_of(files={"/etc/os-release": sysinfo_os_lines(),
                          "/opt/rocm/core/.info/version": "10.2.0"})  # synthetic
    assert check(host) == expected(
        Status.PASS, "Ubuntu 24.04.1 LTS (Noble Numbat); ROCm 10.2.0",
        [Finding.info(f"ROCm 10.2.0 is newer than what this rocmdoctor knows, tables dated "
                      f"{KB_DATE}; check {MATRIX_LATEST}")])


def test_partly_inferred_list_does_not_warn() -> None:
    # 10.1.0's notes name only its Ubuntu changes; Rocky Linux 8 is in none of the lists.
    rocky = ('NAME="Rocky Linux"\nVERSION="8.10 (Green Obsidian)"\nID="rocky"\n'
             'ID_LIKE="rhel centos fedora"\nVERSION_ID="8.10"\n'
             'PRETTY_NAME="Rocky Linux 8.10 (Green Obsidian)"\n')  # synthetic
    result = check(with_rocm(rocky, "10.1.0\n"))
    assert (result.status, result.summary) == (
        Status.PASS, "Rocky Linux 8.10 (Green Obsidian); ROCm 10.1.0")
    assert result.source == "https://rocm.docs.amd.com/en/docs-10.1.0/about/release-notes.html"


def test_wsl_is_noted() -> None:
    # Kernel release from the real WSL2 collect_env capture (Ubuntu 22.04.4 on WSL2).
    body = fixture_text("collect_env-wsl2-gfx1030-rx6800xt-rocm6.1.3-no-gfx-suffix.txt")
    line = next(x for x in body.splitlines() if x.startswith("Python platform: "))
    kernel = line.removeprefix("Python platform: Linux-").split("-x86_64")[0]
    assert kernel == "5.15.153.1-microsoft-standard-WSL2"
    host = host_of(files={"/etc/os-release": UBUNTU_22_04_4}, kernel=kernel)
    assert check(host) == expected(Status.PASS, "Ubuntu 22.04.4 LTS", [
        Finding.info("running under WSL (kernel 5.15.153.1-microsoft-standard-WSL2): ROCm on "
                     "WSL follows AMD's separate WSL support list (https://rocm.docs.amd.com/"
                     "projects/radeon/en/latest/docs/compatibility.html), not the Linux "
                     "matrix"),
        Finding.info("no ROCm install found, so ROCm's OS support was not checked")])


def test_missing_os_release_warns() -> None:
    assert check(host_of()) == expected(
        Status.WARN, "cannot identify the distribution: no /etc/os-release",
        [Finding.hint("Neither /etc/os-release nor /usr/lib/os-release exists, so ROCm's OS "
                      "support cannot be checked.")], source=OS_RELEASE_SPEC)


# --- the support table ----------------------------------------------------------------------

def test_every_release_row_has_a_source_and_versions_sort() -> None:
    versions = [v for r in kb.RELEASES for v in r.versions]
    keys = [kb.version_key(v) for v in versions]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for release in kb.RELEASES:
        assert release.source.startswith("https://"), release
        assert release.systems, release
        for distro, version in release.systems:
            assert distro in kb.DISTRO_NAMES, (release.versions, distro)
            assert re.fullmatch(r"\d+(\.\d+)*", version), (release.versions, version)
        assert len(set(release.systems)) == len(release.systems), release.versions


def test_release_lookup() -> None:
    exact = kb.release_for("6.2.4")
    assert exact is not None and (exact.column, exact.exact) == ("6.2.4", True)
    for version, column in (("6.3.4", "6.3.3"), ("6.4.1", "6.4.0"), ("6.4.4", "6.4.3"),
                            ("7.2.0", "7.2.1"), ("7.2.4", "7.2.3"), ("7.14.2", "7.14.1")):
        match = kb.release_for(version)
        assert match is not None and (match.column, match.exact) == (column, False), version
    # AMD: "no other significant changes ... in ROCm 7.0.1 from ROCm 7.0.0".
    assert kb.release_for("7.0.1") == kb.ReleaseMatch(kb.release_for("7.0.0").release, "7.0.1",
                                                      True)
    assert kb.release_for("5.7.1") is None
    assert kb.release_for("7.5.0") is None
    assert kb.newest_release() == "10.1.0"
    assert kb.newer_than_known("10.2.0") and not kb.newer_than_known("7.14.0")


def test_version_matching_rules() -> None:
    assert kb.version_matches("22.04", "22.04.5")  # Ubuntu VERSION_ID has no point release
    assert kb.version_matches("9.5", "9")  # Oracle/Rocky listed by major
    assert kb.version_matches("7", "7.9")  # CentOS 7's VERSION_ID is "7"
    assert not kb.version_matches("9.2", "9.4")
    assert not kb.version_matches("22.04", "24.04.2")


def test_reads_only_what_it_should() -> None:
    data = make_snapshot(files={"/etc/os-release": UBUNTU_22_04_4,
                                "/opt/rocm/.info/version": CLASSIC_VERSION})
    host = SnapshotHost(data, strict=True, absent=["/proc/version"])
    assert check(host).status is Status.PASS
