"""rocm-install: where ROCm is, its version, installs side by side, ROCM_PATH/PATH consistency.

By hand: `ls -ld /opt/rocm* /etc/alternatives/rocm; cat /opt/rocm/.info/version;
echo $ROCM_PATH; echo $PATH; echo $LD_LIBRARY_PATH`.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from typing import Optional

from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.facts.rocm_version import (
    ALTERNATIVES_ROCM,
    OPT_ROCM,
    RocmInstall,
    all_rocm_installs,
    distro_rocm_evidence,
    installed_rocm,
    read_install,
)
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb.rocm_support import QUICK_START
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

POST_INSTALL = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/"
                "post-install.html")
SEARCH_VARS = ("PATH", "LD_LIBRARY_PATH")


def link_chain(host: Host, path: str, limit: int = 8) -> list[str]:
    """path, then each symlink target in turn: ['/opt/rocm', '/etc/alternatives/rocm', ...]."""
    chain = [path]
    for _ in range(limit):
        info = host.stat(chain[-1])
        if info is None or info.type != "symlink" or not info.target:
            break
        chain.append(posixpath.normpath(
            posixpath.join(posixpath.dirname(chain[-1]), info.target)))
    return chain


def _aliases(host: Host, installs: list[RocmInstall]) -> dict[str, str]:
    """Path prefix -> the real root of the install it names (roots and their links)."""
    aliases = {i.root: i.root for i in installs}
    for path in (OPT_ROCM, OPT_ROCM + "/core", ALTERNATIVES_ROCM, host.env.get("ROCM_PATH"),
                 host.env.get("ROCM_HOME")):
        if path and path.startswith("/"):
            install = read_install(host, path)
            if install is not None:
                aliases[path.rstrip("/")] = install.root
    return aliases


def _owner(entry: str, aliases: Mapping[str, str]) -> Optional[tuple[str, str]]:
    """(install root, suffix) for a search-path entry inside a known install."""
    entry = entry.rstrip("/")
    best = max((a for a in aliases if entry == a or entry.startswith(a + "/")),
               key=len, default=None)
    return (aliases[best], entry[len(best):]) if best is not None else None


def _consistent(entries: list[str], aliases: Mapping[str, str], root: str) -> list[str]:
    """The entries with each other-install entry moved to `root` (dropped if already there)."""
    out: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        owner = _owner(entry, aliases)
        if owner is None:  # not ROCm: left exactly as it was
            out.append(entry)
            continue
        normal = root + owner[1]
        if owner[0] != root:
            entry = normal
        if normal not in seen:
            seen.add(normal)
            out.append(entry)
    return out


class RocmInstallCheck(Check):
    id = "rocm-install"
    uses_python = True
    title = "ROCm installation"
    source = POST_INSTALL

    def applies(self, host: Host) -> Optional[str]:
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        installs = all_rocm_installs(host)
        active = installed_rocm(host)
        if active is None:
            return self._none_installed(host)
        findings: list[Finding] = []
        fix_commands: list[str] = []
        problems: list[str] = []
        chain = link_chain(host, OPT_ROCM)
        if len(chain) > 1:
            findings.append(Finding.info(" -> ".join(chain)))
        elif not host.exists(OPT_ROCM):
            findings.append(Finding.hint(f"{OPT_ROCM} does not exist; tools that assume it "
                                         "will not find ROCm"))
        if len(installs) > 1:
            listing = ", ".join(f"{i.version} ({i.root})" for i in installs)
            findings.append(Finding.info(f"{len(installs)} ROCm installs side by side: "
                                         f"{listing}"))
        aliases = _aliases(host, installs)
        opt_install = read_install(host, OPT_ROCM)
        # Fixes point everything at what /opt/rocm names, the system default, when it exists.
        target = opt_install or active
        target_name = f"{OPT_ROCM} is" if opt_install else "the active ROCm is"
        rocm_path = (host.env.get("ROCM_PATH") or "").strip()
        if rocm_path:
            env_install = read_install(host, rocm_path)
            if env_install is None:
                what = "does not exist" if not host.exists(rocm_path) else "holds no ROCm"
                problems.append(f"ROCM_PATH={rocm_path} {what}")
                findings.append(Finding.error(f"ROCM_PATH={rocm_path} {what}"))
                fix_commands.append(f"export ROCM_PATH={shlex.quote(target.root)}")
            elif env_install.root != target.root:
                problems.append(f"ROCM_PATH names a different install than {OPT_ROCM}")
                findings.append(Finding.error(
                    f"ROCM_PATH={rocm_path} is ROCm {env_install.version} but {target_name} "
                    f"ROCm {target.version} ({target.root})"))
                fix_commands.append(f"export ROCM_PATH={shlex.quote(target.root)}")
        for var in SEARCH_VARS:
            value = host.env.get(var)
            if not value:
                continue
            entries = value.split(":")
            owners = {o[0] for o in (_owner(e, aliases) for e in entries) if o}
            for entry in entries:
                if entry.startswith(OPT_ROCM) and _owner(entry, aliases) is None \
                        and not host.exists(entry):
                    findings.append(Finding.hint(f"{var} names {entry}, which does not exist"))
            if owners - {target.root}:
                versions = ", ".join(
                    f"{i.version} ({i.root})" for i in installs if i.root in owners)
                problems.append(f"{var} mixes ROCm installs" if len(owners) > 1
                                else f"{var} points at another ROCm install")
                findings.append(Finding.error(
                    f"{var} holds ROCm {versions}; {target_name} ROCm {target.version} "
                    f"({target.root})"))
                fixed = ":".join(_consistent(entries, aliases, target.root))
                fix_commands.append(f"export {var}={shlex.quote(fixed)}")
        summary = f"ROCm {active.version} at {active.root}"
        if len(installs) > 1:
            summary += f" ({len(installs)} installs)"
        if not problems:
            return self.passed(summary, findings)
        return self.result(
            Status.WARN, f"{summary}: {'; '.join(problems)}", findings,
            Fix("Point the environment at one ROCm install (put these lines in your shell "
                "profile to keep them); to switch /opt/rocm itself run "
                "`sudo update-alternatives --config rocm` (needs root).",
                commands=tuple(fix_commands)),
        )

    def _none_installed(self, host: Host) -> CheckResult:
        evidence = distro_rocm_evidence(host)
        if evidence:
            return self.passed(
                "ROCm from the distribution's packages (under /usr), no /opt/rocm",
                [Finding.info(f"found {', '.join(evidence)}"),
                 Finding.info("AMD's compatibility tables cover its own /opt/rocm packages, "
                              "not distribution builds")])
        findings = [Finding.hint("PyTorch's ROCm wheels bundle their own ROCm user-space "
                                 "libraries, so training can work without a system ROCm; "
                                 "rocminfo, rocm-smi and hipcc need one")]
        torch = torch_info(host)
        if torch.hip:
            findings.append(Finding.info(f"torch {torch.version} carries HIP {torch.hip}"))
        return self.result(
            Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH)", findings,
            Fix("Install the amdgpu-install package for your distribution as the quick-start "
                "guide shows, then install ROCm with it.",
                commands=("sudo amdgpu-install --usecase=rocm",), needs_root=True),
            source=QUICK_START,
        )
