"""The amdgpu kernel module: loaded or not, live or not, its version, and what DKMS built.

/sys/module/amdgpu/version exists only for AMD's out-of-tree (DKMS) module; the kernel's own
amdgpu carries no version of its own.

By hand: `cat /sys/module/amdgpu/initstate` prints `live`; `cat /sys/module/amdgpu/version`;
`grep amdgpu /proc/modules`; `dkms status`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host

MODULE_DIR = "/sys/module/amdgpu"
VERSION_FILE = "/sys/module/amdgpu/version"
INITSTATE_FILE = "/sys/module/amdgpu/initstate"
PARAMETERS = "/sys/module/amdgpu/parameters"


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


@dataclass(frozen=True)
class AmdgpuModule:
    """What the kernel says about amdgpu right now."""

    present: bool  # /sys/module/amdgpu exists (loaded, or built into the kernel)
    proc_state: Optional[str]  # its /proc/modules state (Live, Loading, ...); None: not listed
    initstate: Optional[str]  # /sys/module/amdgpu/initstate, lower case
    version: Optional[str]  # AMD's DKMS driver version; None for the kernel's own driver

    @property
    def loaded(self) -> bool:
        return self.present or self.proc_state is not None

    @property
    def state(self) -> Optional[str]:
        """"live", "coming", "going", ...: the initstate, else the /proc/modules state."""
        return self.initstate or (self.proc_state.lower() if self.proc_state else None)


def dkms_version(host: Host) -> Optional[str]:
    """AMD's DKMS driver version (/sys/module/amdgpu/version); None for the kernel's own
    driver or none loaded."""
    return (host.read_file(VERSION_FILE) or "").strip() or None


def module_present(host: Host) -> bool:
    """Whether /sys/module/amdgpu exists (amdgpu is loaded or built in), read once."""
    return host.memo("amdgpu:present", lambda: host.exists(MODULE_DIR))


def parameter_file(name: str) -> str:
    """The sysfs file of one amdgpu module parameter."""
    return f"{PARAMETERS}/{name}"


def module_parameter(host: Host, name: str) -> Optional[str]:
    """An amdgpu module parameter's value as sysfs prints it (None: unreadable)."""
    return host.read_file(parameter_file(name))


@dataclass(frozen=True)
class ModuleFile:
    """The amdgpu module installed for the running kernel, as `modinfo -n amdgpu` names it."""

    path: str  # "" when modinfo named none
    none_installed: bool  # modinfo answered that there is none (exit 1, not a timeout)


def module_file(host: Host) -> ModuleFile:
    result = host.run(["modinfo", "-n", "amdgpu"])
    return ModuleFile(result.stdout.strip() if result.ok else "",
                      result.returncode == 1 and not result.timed_out)


def amdgpu_module(host: Host) -> AmdgpuModule:
    """The amdgpu module's facts, read once per host."""

    def compute() -> AmdgpuModule:
        modules = host.read_file("/proc/modules")
        state = parse_proc_modules(modules).get("amdgpu") if modules else None
        return AmdgpuModule(
            present=module_present(host),
            proc_state=state,
            initstate=(host.read_file(INITSTATE_FILE) or "").strip().lower() or None,
            version=dkms_version(host),
        )

    return host.memo("amdgpu:module", compute)


def dkms_entries(host: Host) -> list[DkmsEntry]:
    """The amdgpu lines of `dkms status` (none when DKMS is not installed)."""
    return host.memo("amdgpu:dkms", lambda: [
        e for e in parse_dkms_status(host.run(["dkms", "status"]).stdout) if e.module == "amdgpu"])


def describe_driver(host: Host) -> str:
    """'6.8.5 (AMD DKMS)', 'inbox driver of kernel X' or 'not loaded'."""
    if not module_present(host):
        return "not loaded"
    version = dkms_version(host)
    if version:
        return f"{version} (AMD DKMS)"
    return f"inbox driver of kernel {host.platform.kernel_release or 'unknown'}"


DKMS_MAKE_LOGS = "/var/lib/dkms/amdgpu/*/build/make.log"
# "DKMS make.log for amdgpu-5.18.13-1538762.el8 for kernel 4.18.0-490.el8.x86_64 (x86_64)";
# dkms 3 writes "DKMS (dkms-3.2.1) make.log for amdgpu/6.12.12-... for kernel ... (x86_64)"
# (dell/dkms dkms.in @793fdab5, do_build(), l.1439).
DKMS_SOURCE = "https://github.com/dell/dkms/blob/793fdab5eba9d6b6e9295b18e44a23824e7da44f/dkms.in"
_MAKE_LOG_HEAD = re.compile(r"DKMS (?:\([^)\n]{0,40}\) )?make\.log for amdgpu[-/](\S+) for kernel "
                            r"(\S+)")
_MAKE_ERROR = re.compile(r"\berror\b|\*\*\*", re.IGNORECASE)


@dataclass(frozen=True)
class DkmsBuildFailure:
    """A DKMS build of amdgpu that failed: dkms leaves build/make.log behind only then (a
    build that succeeds moves it to <kernel>/<arch>/log/ and removes the build folder,
    do_build() l.1552-1555 of DKMS_SOURCE)."""

    version: str
    kernel: str
    log: str  # the make.log path
    error: Optional[str]  # its first error line


def parse_make_log(path: str, text: str) -> Optional[DkmsBuildFailure]:
    head = _MAKE_LOG_HEAD.search(text[:2000])
    if head is None:
        return None
    error = next((ln.strip()[:200] for ln in text.splitlines()[1:]
                  if _MAKE_ERROR.search(ln) and ln.strip()), None)
    return DkmsBuildFailure(head.group(1), head.group(2), path, error)


def dkms_build_failures(host: Host) -> list[DkmsBuildFailure]:
    """Failed amdgpu DKMS builds whose make.log is still there (memoised)."""

    def compute() -> list[DkmsBuildFailure]:
        found = []
        for path in host.glob(DKMS_MAKE_LOGS):
            failure = parse_make_log(path, host.read_file(path) or "")
            if failure is not None:
                found.append(failure)
        return found

    return host.memo("amdgpu:dkms-failures", compute)


@dataclass(frozen=True)
class DkmsError:
    said: str  # dkms's own error line
    stale: Optional[str]  # the /var/lib/dkms/amdgpu/<version> tree it names, if any


def dkms_error(host: Host) -> Optional[DkmsError]:
    """`dkms status` failing on amdgpu's tree ("Error! Could not locate dkms.conf file." /
    "File: /var/lib/dkms/amdgpu/<version>/source/dkms.conf does not exist.")."""
    result = host.run(["dkms", "status"])
    text = result.stdout + "\n" + result.stderr
    said = next((ln.strip() for ln in text.splitlines() if ln.strip().startswith("Error!")), None)
    if said is None:
        return None
    stale = re.search(r"(/var/lib/dkms/amdgpu/[^/\s]+)/source/dkms\.conf does not exist", text)
    return DkmsError(said[:200], stale.group(1) if stale else None)
