"""rocm-install: where ROCm is, its version, installs side by side, and what the environment
still says about ROCm releases that are gone (ROCM_PATH, ROCM_HOME, ROCM_DIR, HIP_PATH,
HIP_PLATFORM, PATH, LD_LIBRARY_PATH, /etc/ld.so.conf.d, the /opt/rocm link).

By hand: `ls -ld /opt/rocm* /etc/alternatives/rocm; cat /opt/rocm/.info/version;
env | grep -E '^(ROCM_|HIP_PATH|HIP_PLATFORM|PATH|LD_LIBRARY_PATH)='; cat /etc/ld.so.conf.d/*`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Optional

from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.libload import ld_so_conf_entries
from rocmdoctor.facts.paths import link_chain, path_exists
from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.facts.rocm_root import (
    TARBALL_INSTALL,
    RocmRoot,
    discover_rocm,
    installed_rocm,
)
from rocmdoctor.facts.rocm_version import (
    ALTERNATIVES_ROCM,
    KIND_DISTRO,
    KIND_PYTHON,
    KIND_TARBALL,
    KIND_TORCH,
    OPT_ROCM,
    ROOT_VARIABLES,
    RocmInstall,
    all_rocm_installs,
    read_install,
)
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb.rocm_support import QUICK_START
from rocmdoctor.kb.torch_wheels import WHEEL_NEEDS_NO_SYSTEM_ROCM
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

POST_INSTALL = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/"
                "post-install.html")
# A stale HIP_PATH from an earlier install breaks hipconfig and clang's HIP detection; AMD's
# advice: remove it from the environment (ROCm/ROCm#6285).
STALE_HIP_PATH = "https://github.com/ROCm/ROCm/issues/6285"
SEARCH_VARS = ("PATH", "LD_LIBRARY_PATH")
# hipconfig --platform prints amd or nvidia; hcc, clang and nvcc are the values of HIP 3.x/4.x
# (hipconfig output of ROCm 3.5: "HIP_PLATFORM : hcc").
HIP_PLATFORMS = ("amd", "nvidia")
_RELEASE_DIR = re.compile(r"^/opt/rocm-(\d+\.\d+(?:\.\d+)?)(?:/|$)")


def _aliases(host: Host, installs: list[RocmInstall]) -> dict[str, str]:
    """Path prefix -> the real root of the install it names (roots and their links)."""
    aliases = {i.root: i.root for i in installs}
    for path in (OPT_ROCM, OPT_ROCM + "/core", ALTERNATIVES_ROCM,
                 *(environment(host).get(v) for v in ROOT_VARIABLES)):
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


def _gone(host: Host, entry: str, aliases: Mapping[str, str]) -> Optional[str]:
    """The ROCm release a path names that is not installed (/opt/rocm-5.7.1/bin), or None."""
    m = _RELEASE_DIR.match(entry)
    if m is None or _owner(entry, aliases) is not None or path_exists(host, entry):
        return None
    return m.group(1)


def _consistent(entries: list[str], aliases: Mapping[str, str], root: str,
                drop: set[str]) -> list[str]:
    """The entries with each other-install entry moved to `root` (dropped if already there)
    and the entries in `drop` removed."""
    out: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        if entry in drop:
            continue
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
        root = discover_rocm(host).root
        if active is None:
            return self._none_installed(host, root)
        findings: list[Finding] = _root_findings(root, env=False) if root is not None else []
        fix_commands: list[str] = []
        problems: list[str] = []
        chain = link_chain(host, OPT_ROCM)
        opt_install = read_install(host, OPT_ROCM)
        if len(chain) > 1:
            findings.append(Finding.info(" -> ".join(chain)))
            if opt_install is None and not path_exists(host, chain[-1]) and installs:
                problems.append(f"{OPT_ROCM} points at {chain[-1]}, which does not exist")
                findings.append(Finding.error(problems[-1]))
                fix_commands.append("sudo update-alternatives --config rocm")
        elif not path_exists(host, OPT_ROCM) and active.root != "/usr":
            findings.append(Finding.hint(f"{OPT_ROCM} does not exist; tools that assume it "
                                         "will not find ROCm"))
        if len(installs) > 1:
            listing = ", ".join(f"{i.version} ({i.root})" for i in installs)
            findings.append(Finding.info(f"{len(installs)} ROCm installs side by side: "
                                         f"{listing}"))
            if opt_install is not None and opt_install.key < installs[0].key:
                findings.append(Finding.hint(
                    f"{OPT_ROCM} is ROCm {opt_install.version}, not the newest installed "
                    f"({installs[0].version}): builds and tools that use {OPT_ROCM} get the "
                    "older one"))
        aliases = _aliases(host, installs)
        # Fixes point everything at what /opt/rocm names, the system default, when it exists.
        target = opt_install or active
        target_name = f"{OPT_ROCM} is" if opt_install else "the active ROCm is"
        for var in ROOT_VARIABLES:
            self._root_variable(host, var, target, target_name, findings, problems,
                                fix_commands, root)
        self._hip_variables(host, aliases, target, findings, problems, fix_commands)
        for var in SEARCH_VARS:
            self._search_variable(host, var, aliases, installs, target, target_name, findings,
                                  problems, fix_commands)
        for conf, entry in ld_so_conf_entries(host):
            if entry.startswith(OPT_ROCM) and not path_exists(host, entry):
                findings.append(Finding.hint(f"{conf} names {entry}, which does not exist "
                                             "(left by an install that is gone)"))
        summary = f"ROCm {active.version} at {active.root}"
        if len(installs) > 1:
            summary += f" ({len(installs)} installs)"
        if not problems:
            return self.passed(summary, findings)
        tarball = root is not None and root.kind == KIND_TARBALL
        return self.result(Status.WARN, f"{summary}: {'; '.join(problems)}", findings,
                           _fix(root, fix_commands),
                           source=TARBALL_INSTALL if tarball else None)

    @staticmethod
    def _root_variable(host: Host, var: str, target: RocmInstall, target_name: str,
                       findings: list[Finding], problems: list[str], fixes: list[str],
                       root: Optional[RocmRoot] = None) -> None:
        value = (environment(host).get(var) or "").strip()
        if not value:
            return
        env_install = read_install(host, value)
        if root is not None and root.should_be is not None and root.should_be[0] == var:
            problems.append(f"{var}={value} is the folder above the tarball's install/")
            findings.append(Finding.error(
                f"{var}={value} holds no ROCm: the TheRock tarball's ROCm "
                f"{target.version} is in {root.should_be[1]}, so tools that use ${var} "
                "(hipcc, clang) look in the wrong folder"))
            fixes.append(f"export {var}={shlex.quote(root.should_be[1])}")
        elif env_install is None:
            what = "does not exist" if not path_exists(host, value) else "holds no ROCm"
            problems.append(f"{var}={value} {what}")
            findings.append(Finding.error(f"{var}={value} {what}"))
            fixes.append(f"export {var}={shlex.quote(target.root)}")
        elif env_install.root != target.root:
            problems.append(f"{var} names a different install than {OPT_ROCM}")
            findings.append(Finding.error(
                f"{var}={value} is ROCm {env_install.version} but {target_name} "
                f"ROCm {target.version} ({target.root})"))
            fixes.append(f"export {var}={shlex.quote(target.root)}")

    @staticmethod
    def _hip_variables(host: Host, aliases: Mapping[str, str], target: RocmInstall,
                       findings: list[Finding], problems: list[str], fixes: list[str]) -> None:
        hip_path = (environment(host).get("HIP_PATH") or "").strip()
        if hip_path:
            owner = _owner(hip_path, aliases)
            if not path_exists(host, hip_path):
                problems.append(f"HIP_PATH={hip_path} does not exist")
                findings.append(Finding.error(
                    f"HIP_PATH={hip_path} does not exist: a leftover of an earlier install "
                    "(hipconfig and clang look for HIP there)"))
                fixes.append("unset HIP_PATH")
            elif owner is not None and owner[0] != target.root:
                problems.append("HIP_PATH names another ROCm install")
                findings.append(Finding.error(
                    f"HIP_PATH={hip_path} is inside {owner[0]}, not ROCm {target.version} "
                    f"({target.root})"))
                fixes.append("unset HIP_PATH")
        platform = (environment(host).get("HIP_PLATFORM") or "").strip()
        if platform and platform not in HIP_PLATFORMS:
            findings.append(Finding.hint(
                f"HIP_PLATFORM={platform} is a value of old HIP releases; current HIP knows "
                "amd and nvidia"))
            fixes.append("unset HIP_PLATFORM")
        elif platform == "nvidia":
            problems.append("HIP_PLATFORM=nvidia on an AMD machine")
            findings.append(Finding.error("HIP_PLATFORM=nvidia makes hipcc and hipconfig build "
                                          "for NVIDIA GPUs"))
            fixes.append("unset HIP_PLATFORM")

    @staticmethod
    def _search_variable(host: Host, var: str, aliases: Mapping[str, str],
                         installs: list[RocmInstall], target: RocmInstall, target_name: str,
                         findings: list[Finding], problems: list[str],
                         fixes: list[str]) -> None:
        value = environment(host).get(var)
        if not value:
            return
        entries = value.split(":")
        owners = {o[0] for o in (_owner(e, aliases) for e in entries) if o}
        stale = {e: v for e in entries if (v := _gone(host, e, aliases)) is not None}
        for entry, release in stale.items():
            findings.append(Finding.error(f"{var} names {entry}: ROCm {release} is not "
                                          "installed"))
        for entry in entries:
            if entry.startswith(OPT_ROCM) and entry not in stale and \
                    _owner(entry, aliases) is None and not path_exists(host, entry):
                findings.append(Finding.hint(f"{var} names {entry}, which does not exist"))
        if stale:
            problems.append(f"{var} names a ROCm release that is not installed")
        if owners - {target.root}:
            versions = ", ".join(f"{i.version} ({i.root})" for i in installs if i.root in owners)
            problems.append(f"{var} mixes ROCm installs" if len(owners) > 1
                            else f"{var} points at another ROCm install")
            findings.append(Finding.error(
                f"{var} holds ROCm {versions}; {target_name} ROCm {target.version} "
                f"({target.root})"))
        if stale or owners - {target.root}:
            fixed = ":".join(_consistent(entries, aliases, target.root, set(stale)))
            fixes.append(f"export {var}={shlex.quote(fixed)}")

    def _none_installed(self, host: Host, root: Optional[RocmRoot]) -> CheckResult:
        if root is not None and root.kind == KIND_PYTHON:
            version = f"ROCm {root.version}" if root.version else "ROCm"
            summary = f"{version} from Python packages at {root.path}"
            stale = [(var, p) for p in root.passed_over for var in ROOT_VARIABLES
                     if p.startswith(f"{var}=")]
            if not stale:
                return self.passed(summary, _root_findings(root, env=True))
            # The variable names a ROCm that is not there; the one in use is pip's: the fix
            # is the environment (pip's folder), never a system package manager.
            env = {p for _, p in stale}
            findings = [_root_finding(root), *(
                Finding.error(p) if p in env else Finding.info(f"passed over: {p}")
                for p in root.passed_over), Finding.info(f"{root.path} was chosen: {root.why}")]
            return self.result(
                Status.WARN, f"{summary}: {'; '.join(p for _, p in stale)}", findings,
                Fix("Point the variable at the pip-installed ROCm, the folder `rocm-sdk path "
                    "--root` prints (put the line in your shell profile to keep it), or unset "
                    "it.", tuple(dict.fromkeys(f"export {var}={shlex.quote(root.path)}"
                                               for var, _ in stale))))
        torch = torch_info(host)
        if root is not None and root.kind == KIND_TORCH:
            return self.passed(
                f"no system ROCm; torch {torch.any_version} carries its own ROCm "
                f"{root.version} in {root.path}",
                [*_root_findings(root, env=True),
                 Finding.info("a torch wheel that carries its own ROCm needs no system ROCm "
                              "(AMD: \"let the wheel install ROCm for you\")"),
                 Finding.hint("rocminfo, rocm-smi and hipcc come with a system ROCm, which "
                              "training with this wheel does not need")],
                source=WHEEL_NEEDS_NO_SYSTEM_ROCM)
        findings = [Finding.hint("PyTorch's ROCm wheels bundle their own ROCm user-space "
                                 "libraries, so training can work without a system ROCm; "
                                 "rocminfo, rocm-smi and hipcc need one")]
        passed = discover_rocm(host).passed_over
        findings += [Finding.error(p) for p in passed]
        if torch.hip:
            findings.append(Finding.info(f"torch {torch.version} carries HIP {torch.hip}"))
        return self.result(
            Status.WARN, "no ROCm install found (/opt/rocm, /opt/rocm-*, $ROCM_PATH, the "
            "distribution's release files under /usr)", findings,
            Fix("Install the amdgpu-install package for your distribution as the quick-start "
                "guide shows, then install ROCm with it.",
                commands=("sudo amdgpu-install --usecase=rocm",), needs_root=True),
            source=QUICK_START,
        )


def _root_findings(root: RocmRoot, env: bool) -> list[Finding]:
    """Where ROCm is, then each candidate passed over before it and why the root won.
    `env`: also the variables passed over (the main path reports those itself)."""
    found = [_root_finding(root)]
    passed = [p for p in root.passed_over
              if env or not p.startswith(tuple(f"{v}=" for v in ROOT_VARIABLES))]
    if root.passed_over:
        found += [Finding.info(f"passed over: {p}") for p in passed]
        found.append(Finding.info(f"{root.path} was chosen: {root.why}"))
    return found


def _root_finding(root: RocmRoot) -> Finding:
    version = f"ROCm {root.version}" if root.version else "ROCm (release not recorded)"
    return Finding.info(f"ROCm root: {root.path} ({version}; found by {root.found_by}; "
                        f"{root.kind})")


def _fix(root: Optional[RocmRoot], commands: list[str]) -> Fix:
    env = tuple(c for c in commands if not c.startswith("sudo "))
    if root is not None and root.kind == KIND_PYTHON:
        return Fix("Point the environment at one ROCm (put these lines in your shell profile "
                   "to keep them); the pip-installed ROCm's folder is what `rocm-sdk path "
                   "--root` prints.", env)
    if root is not None and root.kind == KIND_DISTRO:
        return Fix("Point the environment at the distribution's ROCm (put these lines in your "
                   "shell profile to keep them).", env)
    if root is not None and root.kind == KIND_TARBALL:
        return Fix("Point the environment at the TheRock tarball's install/ folder, where its "
                   "ROCm is (put these lines in your shell profile to keep them).", env)
    if any(c.startswith("sudo ") for c in commands):
        return Fix(f"Point {OPT_ROCM} at an installed release with update-alternatives (needs "
                   "root), then the environment at it.",
                   ("sudo update-alternatives --config rocm", *env), needs_root=True)
    return Fix("Point the environment at one ROCm install (put these lines in your shell "
               "profile to keep them); to switch /opt/rocm itself run "
               "`sudo update-alternatives --config rocm` (needs root).", env)
