"""torch-rocm-match: the ROCm release torch was built for, against the system ROCm and driver.

By hand: `python -c "import torch; print(torch.version.hip)"` (e.g. `6.2.41133-dd7f95766`:
HIP 6.2, build 41133 = ROCm 6.2.0), `cat /opt/rocm/.info/version`, and
`cat /sys/module/amdgpu/version` (present with AMD's amdgpu-dkms driver only).

Official wheels carry their own ROCm user space (libamdhip64, rocBLAS, MIOpen ... in
torch/lib), so a different system ROCm does not matter to them; the kernel driver does, and
AMD tests each driver with a window of user-space releases. Which ROCm torch really runs on
is what rocm-libraries found loaded: torch's own copy, a pip-installed ROCm SDK beside it
(compared with the rocm-sdk-core package), or a system install (its version files; for a
distribution's packages under /usr, their version files).
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Optional

from rocmdoctor.facts.amdgpu_module import dkms_version, module_present
from rocmdoctor.facts.libload import (
    DISTRO,
    LIBLOAD_TIMEOUT_S,
    SDK,
    TORCH,
    LibLoad,
    origin_of,
    rocm_libraries,
)
from rocmdoctor.facts.platform import uname_release
from rocmdoctor.facts.rocm_root import distro_install, distro_rocm_evidence, installed_rocm
from rocmdoctor.facts.rocm_version import RocmInstall, read_install, release_of_package
from rocmdoctor.facts.torch import TorchInfo, imported_skip_reason, torch_info
from rocmdoctor.facts.torch_wheel import rocm_index_line
from rocmdoctor.host import Host
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


def tag_rocm(torch_version: Optional[str]) -> Optional[str]:
    """The ROCm release a wheel's local tag names: "7.0.0" for 2.7.1+rocm7.0.0rc20250731."""
    local = (torch_version or "").partition("+")[2]
    if not (local.startswith("rocm") and local[4:5].isdigit()):
        return None
    return release_of_package(local[4:])


def wheel_rocm(hip: str, torch_version: Optional[str] = None) -> tuple[str, str]:
    """(ROCm release text, major.minor) for a torch.version.hip string. A HIP build the table
    does not know says nothing sure about the ROCm release (TheRock's 7.0rc wheels report HIP
    6.5: TheRock#1025), so the +rocmX.Y tag of torch's version, when it has one, names it."""
    row = wheels.hip_build(hip)
    base = hip.split("-", 1)[0]
    if row is None:
        tagged = tag_rocm(torch_version)
        minor = wheels.rocm_of_hip(hip) or "?"
        if tagged is not None and ".".join(tagged.split(".")[:2]) != minor:
            minor = ".".join(tagged.split(".")[:2])
            return f"ROCm {tagged} (the +rocm tag; HIP {base} is not in rocmdoctor's table)", minor
        if minor == "?":
            return (f"ROCm ? (HIP {base} is newer than what this rocmdoctor knows, tables "
                    f"dated {_kb_date()})"), minor
        return f"ROCm {minor} (HIP {base})", minor
    releases = row.releases
    text = releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"
    return f"ROCm {text} (HIP {base})", row.releases[0].rsplit(".", 1)[0]


def _kb_date() -> str:
    from rocmdoctor.kb import KB_DATE

    return KB_DATE


def _minor(version: str) -> tuple[int, ...]:
    return wheels.version_tuple(version)[:2]


class TorchRocmMatch(Check):
    id = "torch-rocm-match"
    depends = ("torch-install",)
    uses_python = True
    title = "ROCm release torch was built for vs system ROCm and driver"
    source = wheels.KMD_MATRIX
    deadline_s = 60.0 + LIBLOAD_TIMEOUT_S + 30  # the probe, then the library-load child

    def applies(self, host: Host) -> Optional[str]:
        torch = torch_info(host)
        reason = imported_skip_reason(torch)
        if reason:
            return reason
        if not torch.hip:
            kind = "a CUDA" if torch.cuda else "a CPU"
            return f"torch {torch.version} is {kind} build, not a ROCm build"
        return None

    def run(self, host: Host) -> CheckResult:
        torch = torch_info(host)
        version = str(torch.version)
        built, built_minor = wheel_rocm(str(torch.hip), torch.any_version)
        load = rocm_libraries(host)
        hip = load.library("hip") if load.ran else None
        loaded_from = hip.origin if hip is not None and hip.path else None
        system = installed_rocm(host)
        # A TheRock torch loads the pip-installed ROCm SDK beside it (no libamdhip64 in
        # torch/lib); without a record of what it loaded, that SDK is still the one it runs on.
        if loaded_from == SDK or (loaded_from is None and torch.bundles_rocm is not True
                                  and torch.rocm_sdk_root):
            return self._sdk(host, load, built, built_minor, system)
        bundled = torch.bundles_rocm if loaded_from is None else loaded_from == TORCH
        findings: list[Finding] = []
        status, fix = Status.PASS, None
        used = self._loaded_install(host, hip.path) if hip and hip.path and not bundled else None
        if hip is not None and hip.path:
            findings.append(Finding.info(f"torch loads its HIP runtime from {hip.path}"))
        if bundled is True:
            findings.append(Finding.info(
                f"torch {version} carries its own ROCm user-space libraries, so the system "
                "ROCm version need not match it"))
        shadow = self._shadowed(torch, load, hip.path if hip else None)
        against = used or system
        # A build without its own ROCm that loads a distribution's libraries under /usr.
        distro_libs = loaded_from == DISTRO or (loaded_from is None and bundled is not True
                                                and bool(distro_rocm_evidence(host)))
        if against is None and distro_libs:
            summary = (f"torch built for {built}; the distribution's ROCm under /usr (its "
                       "release is not recorded)")
        elif against is None:
            summary = f"torch built for {built}; no system ROCm (not needed by the wheel)"
        elif _minor(against.version) == _minor(built_minor):
            what = "loaded ROCm" if used is not None else "system ROCm"
            summary = f"torch built for {built}; {what} {against.version} matches"
        else:
            what = "loads ROCm" if used is not None else "system ROCm"
            summary = f"torch built for {built}; {what} {against.version}"
            if bundled is False and shadow is None:
                status = Status.WARN
                line, why = rocm_index_line(host)
                findings.append(Finding.error(
                    f"this torch loads the system's ROCm {against.version} libraries but was "
                    f"built for ROCm {built_minor}"))
                fix = Fix(f"Install the official wheel ({why}) or rebuild torch against "
                          f"ROCm {against.version}.", (line,))
        if shadow is not None:
            entry, line = shadow
            release = f"ROCm {used.version}" if used is not None else "another ROCm"
            same = used is not None and _minor(used.version) == _minor(built_minor)
            findings.append((Finding.hint if same else Finding.error)(
                f"LD_LIBRARY_PATH puts {entry} ahead of the ROCm torch {version} carries: the "
                f"loader searches LD_LIBRARY_PATH before the wheel's RUNPATH, so torch runs on "
                f"{release}'s {posixpath.basename(str(hip.path if hip else ''))}, not its own"))
            if not same:
                status = Status.WARN
                summary += f"; LD_LIBRARY_PATH makes torch load {release} instead of its own"
                fix = Fix("Take the ROCm folder out of LD_LIBRARY_PATH (in your shell profile "
                          "too), so torch loads the ROCm it carries.", (line,))
        user_space = (built_minor if bundled is not False or against is None
                      else against.version)
        driver_status, driver_notes, driver_fix = self._driver(host, system, user_space)
        findings.extend(driver_notes)
        if driver_status is Status.WARN and status is Status.PASS:
            status, fix = Status.WARN, driver_fix
            summary += f"; the amdgpu driver is not tested with ROCm {built_minor}"
        source = wheels.LD_LIBRARY_PATH_OVER_RUNPATH if shadow and status is Status.WARN \
            and fix is not None and fix.commands[:1] == (shadow[1],) else None
        return self.result(status, summary, findings, fix, source=source)

    @staticmethod
    def _shadowed(torch: TorchInfo, load: LibLoad, path: Optional[str]
                  ) -> Optional[tuple[str, str]]:
        """(the LD_LIBRARY_PATH entry, the export line without it) when a wheel that carries
        its own ROCm loads its HIP runtime from an LD_LIBRARY_PATH folder instead
        (pytorch/builder#1468: LD_LIBRARY_PATH overrides the wheel's RUNPATH)."""
        if torch.bundles_rocm is not True or not path or not load.ld_library_path:
            return None
        folder = posixpath.dirname(path)
        entry = next((e for e in load.ld_library_path if e.rstrip("/") == folder), None)
        if entry is None or (load.torch_lib and folder == load.torch_lib.rstrip("/")):
            return None
        rest = [e for e in load.ld_library_path if e != entry]
        line = (f"export LD_LIBRARY_PATH={shlex.quote(':'.join(rest))}" if rest
                else "unset LD_LIBRARY_PATH")
        return entry, line

    @staticmethod
    def _loaded_install(host: Host, path: str) -> Optional[RocmInstall]:
        """The ROCm release of the install a loaded library belongs to."""
        folder = posixpath.dirname(path)
        root = posixpath.dirname(folder) if posixpath.basename(folder) in (
            "lib", "lib64") else folder
        if origin_of(path, None, (), None) == DISTRO:
            return distro_install(host)
        return read_install(host, root)

    def _sdk(self, host: Host, load: LibLoad, built: str, built_minor: str,
             system: Optional[RocmInstall]) -> CheckResult:
        torch = torch_info(host)
        package = load.packages.get("rocm-sdk-core") or torch.packages.get("rocm-sdk-core")
        sdk = release_of_package(package or "")
        hip = load.library("hip")
        findings = [Finding.info(f"torch loads the pip-installed ROCm SDK's HIP runtime "
                                 f"({hip.path})") if hip and hip.path else Finding.info(
            f"torch loads the pip-installed ROCm SDK beside it ({torch.rocm_sdk_root}); its "
            "own torch/lib carries no HIP runtime")]
        if sdk is None:
            summary = f"torch built for {built}; the pip-installed ROCm SDK's version is unknown"
            return self.result(Status.PASS, summary, findings)
        findings.append(Finding.info(f"rocm-sdk-core {package}"))
        status, fix = Status.PASS, None
        if _minor(sdk) == _minor(built_minor):
            summary = f"torch built for {built}; the pip-installed ROCm {sdk} matches"
        else:
            summary = f"torch built for {built}; the pip-installed ROCm is {sdk}"
            status = Status.WARN
            local = str(torch.any_version or "").partition("+")[2]
            pin = local[4:] if local.startswith("rocm") and local[4:5].isdigit() else None
            findings.append(Finding.error(
                f"two ROCm releases in one environment: torch was built for ROCm {built_minor}, "
                f"the ROCm SDK beside it is {sdk} (a second installer replaced one of them)"))
            fix = Fix("Install the ROCm SDK release torch pins (or the torch built for "
                      f"ROCm {sdk}) from the index torch came from.",
                      (f'pip install --force-reinstall "rocm[libraries]=={pin}"',) if pin
                      else ())
        driver_status, notes, driver_fix = self._driver(host, system, sdk)
        findings.extend(notes)
        if driver_status is Status.WARN and status is Status.PASS:
            status, fix = Status.WARN, driver_fix
            summary += f"; the amdgpu driver is not tested with ROCm {sdk}"
        return self.result(status, summary, findings, fix)

    def _driver(self, host: Host, system: Optional[RocmInstall], user_space: str
                ) -> tuple[Status, list[Finding], Optional[Fix]]:
        """Is the kernel driver supported with the user space torch runs on?

        The driver release is read from /sys/module/amdgpu/version through AMD's package
        numbers (kb.driver_support), else taken to be the one of the installed ROCm; the
        verdict is AMD's driver / ROCm table, row for row.
        """
        from rocmdoctor.kb import driver_support as drivers

        dkms = dkms_version(host)
        if not dkms:
            kernel_release = uname_release(host)
            if "microsoft" in kernel_release.lower():
                return Status.PASS, [Finding.info(
                    "WSL: the Windows AMD driver runs the GPU (through /dev/dxg); check its "
                    "version against AMD's WSL support table")], None
            if module_present(host):
                kernel = kernel_release or "?"
                return Status.PASS, [Finding.info(
                    f"amdgpu is the kernel's own driver (kernel {kernel}); AMD validates ROCm "
                    "with its amdgpu-dkms driver, and new ROCm releases may need a newer "
                    "kernel")], None
            return Status.PASS, [Finding.info(
                "the amdgpu driver is not loaded (see amdgpu-driver)")], None
        known = _driver_release(dkms, system)
        if known is None:
            if drivers.module_newer_than_known(dkms):
                return Status.PASS, [Finding.info(
                    f"the amdgpu-dkms driver {dkms} is {_newer()}; AMD's driver / ROCm table: "
                    f"{drivers.AMDGPU_DOCS_MATRIX}")], None
            return Status.PASS, [Finding.info(
                f"amdgpu-dkms driver {dkms} is loaded; its release is unknown (no ROCm "
                "install records it)")], None
        driver, where, firm = known
        user = ".".join(str(p) for p in wheels.version_tuple(user_space)[:2])
        verdict = drivers.kmd_verdict(driver, user_space)
        if verdict.tested is True:
            return Status.PASS, [Finding.info(f"{where} is tested with ROCm {user} user "
                                              "space")], None
        if verdict.tested is False and firm:
            line, why = rocm_index_line(host, driver=driver)
            text = (f"{where}: the ROCm {user} release notes list AMD GPU Driver "
                    f"{', '.join(verdict.listed)}, not {driver}"
                    if verdict.basis in ("preview-notes", "release-notes") else
                    f"{where} is tested with ROCm {', '.join(verdict.listed)} user space, not "
                    f"{user}")
            return Status.WARN, [Finding.error(text)], Fix(
                f"Install the torch build for the driver's ROCm ({why}), or upgrade the "
                "driver with amdgpu-install.", (line,))
        return Status.PASS, [Finding.info(_untold(where, user, verdict))], None


from typing import TYPE_CHECKING  # noqa: E402  (the driver helpers below)

if TYPE_CHECKING:
    from rocmdoctor.kb.driver_support import KmdVerdict


def _newer() -> str:
    from rocmdoctor.kb import KB_DATE

    return f"newer than what this rocmdoctor knows, tables dated {KB_DATE}"


def _driver_release(dkms: str, system: Optional[RocmInstall]
                    ) -> Optional[tuple[str, str, bool]]:
    """(driver release, how the finding names the driver, whether a "not tested" may warn)."""
    from rocmdoctor.kb import driver_support as drivers

    row = drivers.module_release(dkms)
    if row is not None:
        return (row.driver, f"the amdgpu-dkms driver {dkms} (AMD GPU Driver {row.driver}.x)",
                row.verified)
    bundled = drivers.driver_of_rocm(str(system.version)) if system is not None else None
    if system is None or bundled is None:
        return None
    return (bundled, f"the amdgpu-dkms driver {dkms} (assumed to be the {bundled}.x driver of "
            f"the installed ROCm {system.version})", True)


def _untold(where: str, user: str, verdict: KmdVerdict) -> str:
    """The finding for a pair AMD's tables do not judge, saying why."""
    from rocmdoctor.kb import driver_support as drivers

    basis = verdict.basis
    table = f"AMD's driver / ROCm table: {drivers.AMDGPU_DOCS_MATRIX}"
    if basis == "user-unknown":
        return f"{where}: the ROCm release torch was built for is unknown, so it was not checked"
    if basis == "user-newer":
        return f"{where}: ROCm {user} user space is {_newer()}; {table}"
    if basis == "driver-newer":
        return f"{where} is {_newer()}; {table}"
    if basis == "user-preview":
        return (f"{where}: ROCm {user} is a technology-preview release, which AMD's driver "
                "table does not list")
    floor = drivers.KMD_ONE_YEAR_RULE_FROM
    year = ("; from ROCm 6.4 on AMD supports driver and user space up to a year apart"
            if wheels.version_tuple(user)[:2] >= floor else "")
    if basis == "driver-unlisted":
        return f"{where}: AMD's table lists no ROCm release for this preview driver{year}"
    if basis == "table":  # a "not tested" read through an unconfirmed module number
        return (f"{where}: AMD's table does not list it with ROCm {user} user space, but "
                "this module number is not confirmed by an AMD package name")
    return f"{where}: AMD's table does not list it with ROCm {user} user space{year}"
