"""rocm-permissions: the ROCm tree is readable by the user and not world-writable.

A ROCm folder the user cannot read or enter makes rocminfo "command not found" and makes
libamdhip64.so fail to load; a world-writable one lets any local user replace what every
GPU program loads.

By hand: `ls -ld /opt/rocm/ /opt/rocm/bin /opt/rocm/lib /opt/rocm/bin/rocminfo
/opt/rocm/lib/libamdhip64.so*` and look for `w` in the last triplet (others may write).
"""

from __future__ import annotations

import shlex
from typing import Optional

from rocmdoctor.facts.account import account
from rocmdoctor.facts.paths import path_info
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.host import Host, PathInfo
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

# What using ROCm touches: the folders (read + enter), the tools (read + run), the libraries.
DIRS = ("", "/bin", "/lib")
PROGRAMS = ("/bin/rocminfo",)
LIBRARIES = ("/lib/libamdhip64.so", "/lib/libhsa-runtime64.so")
WORLD_WRITABLE = 0o002
STICKY = 0o1000
CHMOD_DOCS = "https://man7.org/linux/man-pages/man1/chmod.1.html"


def _problem(info: PathInfo, need_exec: bool) -> Optional[str]:
    missing = [name for name, ok in (("read", info.readable),
                                     ("enter" if info.type == "dir" else "run",
                                      info.executable or not need_exec)) if not ok]
    return " or ".join(missing) if missing else None


class RocmPermissions(Check):
    id = "rocm-permissions"
    depends = ("rocm-install",)
    title = "ROCm files readable and not world-writable"
    source = CHMOD_DOCS

    def applies(self, host: Host) -> Optional[str]:
        return None if installed_rocm(host) is not None else "no ROCm install found"

    def run(self, host: Host) -> CheckResult:
        rocm = installed_rocm(host)
        assert rocm is not None  # applies() said so
        root = rocm.root
        user = account(host).name
        unreadable: list[str] = []
        writable: list[str] = []
        absent: list[str] = []
        findings: list[Finding] = []
        checked = 0
        targets = ([(d, True) for d in DIRS] + [(p, True) for p in PROGRAMS]
                   + [(lib, False) for lib in LIBRARIES])
        for rel, need_exec in targets:
            path = root + rel
            info = path_info(host, path)
            if info is None:
                absent.append(path)
                continue
            checked += 1
            # A symlink's own mode is always 0777; access() already follows it.
            if info.type != "symlink" and info.mode_bits & WORLD_WRITABLE \
                    and not (info.type == "dir" and info.mode_bits & STICKY):
                writable.append(path)
                findings.append(Finding.error(
                    f"{path} is world-writable (mode {info.mode}, owner {info.owner}): any "
                    "local user can change what GPU programs load"))
            problem = _problem(info, need_exec)
            if problem:
                unreadable.append(path)
                findings.append(Finding.error(
                    f"{user} cannot {problem} {path} (mode {info.mode}, owner "
                    f"{info.owner}:{info.group})"))
        for path in absent:
            findings.append(Finding.hint(f"{path} does not exist"))
        if not unreadable and not writable:
            return self.passed(
                f"{checked} ROCm path{'' if checked == 1 else 's'} under {root} "
                f"{'is' if checked == 1 else 'are'} readable by {user} and none is "
                "world-writable", findings)
        commands: list[str] = []
        if unreadable:
            commands.append(f"sudo chmod -R a+rX {shlex.quote(root)}")
        if writable:
            commands.append("sudo chmod o-w " + " ".join(shlex.quote(p) for p in writable))
        parts = []
        if unreadable:
            parts.append(f"{user} cannot use {len(unreadable)} ROCm path(s)")
        if writable:
            parts.append(f"{len(writable)} world-writable ROCm path(s)")
        return self.result(
            Status.FAIL, f"{'; '.join(parts)} under {root}", findings,
            Fix("Give everyone read (and enter/run) access to the ROCm tree and take write "
                "access away from others. Needs root.", commands=tuple(commands),
                needs_root=True))
