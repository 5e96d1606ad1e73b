"""kfd-access: /dev/kfd and /dev/dri/renderD* exist and this user can open them.

By hand: `ls -l /dev/kfd /dev/dri/renderD*`, `id` (the groups this session has) and
`getent group render video` (the groups you were added to). Inside a container,
`ls -ln /dev/kfd /dev/dri/renderD*` shows the numeric group ids that `--group-add` needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.account import account, group_file
from rocmdoctor.facts.amdgpu_module import module_present
from rocmdoctor.facts.container import (
    KFD,
    RENDER_GLOB,
    container_info,
    kfd_device,
    render_devices,
)
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.platform import is_wsl, not_rocm_reason
from rocmdoctor.fixes import passthrough_fix, sudo_note
from rocmdoctor.host import Host, PathInfo
from rocmdoctor.kb.containers import SUDOERS_ENV
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

PREREQUISITES = (
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/prerequisites.html"
    "#configuring-permissions-for-gpu-access"
)
# The group-based udev rule of ROCm's prerequisites, for devices whose group cannot open them.
UDEV_COMMANDS = (
    "printf '%s\\n' 'KERNEL==\"kfd\", GROUP=\"render\", MODE=\"0660\"' "
    "'SUBSYSTEM==\"drm\", KERNEL==\"renderD*\", GROUP=\"render\", MODE=\"0660\"' "
    "| sudo tee /etc/udev/rules.d/70-amdgpu.rules",
    "sudo udevadm control --reload-rules && sudo udevadm trigger",
    "sudo usermod -aG render,video $USER",
)


@dataclass(frozen=True)
class GroupEntry:
    name: str
    gid: Optional[int]
    members: tuple[str, ...]


def parse_etc_group(text: str) -> dict[str, GroupEntry]:
    """/etc/group lines `name:password:gid:member,member`; malformed lines are skipped."""
    groups: dict[str, GroupEntry] = {}
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) < 3 or not parts[0] or parts[0].startswith("#"):
            continue
        gid = (int(parts[2]) if parts[2].isascii() and parts[2].isdigit() and len(parts[2]) <= 10
               else None)  # a gid is 32 bits; a longer number is no gid
        members = tuple(m.strip() for m in parts[3].split(",") if m.strip()) if len(
            parts) > 3 else ()
        groups[parts[0]] = GroupEntry(parts[0], gid, members)
    return groups


def _group_label(info: PathInfo) -> str:
    return info.group or f"gid {info.gid}"


def _describe(path: str, info: PathInfo) -> str:
    return (f"{path}: owner {info.owner or info.uid}, group {info.group or '(no name)'} "
            f"(gid {info.gid}), mode {info.mode}")


def _plural(n: int) -> str:
    return f"{n} render node" + ("" if n == 1 else "s")


class KfdAccess(Check):
    id = "kfd-access"
    depends = ("amdgpu-driver", "container")
    title = "GPU device access (/dev/kfd, /dev/dri)"
    source = PREREQUISITES

    def applies(self, host: Host) -> Optional[str]:
        if is_wsl(host):
            return "WSL2 has no /dev/kfd: ROCm reaches the GPU through /dev/dxg"
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        user = account(host)
        in_container = container_info(host).inside
        kfd = kfd_device(host)
        renders = render_devices(host)
        if kfd is None or not renders:
            return self._missing(host, KFD if kfd is None else RENDER_GLOB, in_container)
        devices = [(KFD, kfd), *renders]
        blocked = [] if user.uid == 0 else [
            (p, i) for p, i in devices if not (i.readable and i.writable)]
        if not blocked:
            groups = sorted({_group_label(i) for _, i in devices})
            label = "group" if len(groups) == 1 else "groups"
            summary = (f"{user.name} can open /dev/kfd and {_plural(len(renders))} "
                       f"({label} {', '.join(groups)})")
            note = sudo_note(host)
            if note is None:
                return self.passed(summary)
            who = environment(host).get("SUDO_USER", "")
            return self.result(
                Status.WARN, f"{summary}, but this is root through sudo: {who}'s access is not "
                "tested", [Finding.error(note)],
                Fix(f"Run rocmdoctor as {who}, without sudo.", ("rocmdoctor check",)),
                source=SUDOERS_ENV)
        path, info = blocked[0]
        summary = (f"{user.name} cannot open {', '.join(p for p, _ in blocked)} "
                   f"(group {_group_label(info)}, mode {info.mode})")
        findings = [Finding.error(_describe(p, i)) for p, i in blocked]
        findings.append(Finding.info(f"this process's groups: {', '.join(user.groups)}"))
        group_can_open = (info.mode_bits & 0o060) == 0o060 and info.group != "root"
        if not group_can_open:
            findings.append(Finding.hint(f"mode {info.mode} with group {_group_label(info)}: "
                                         "no group membership opens it"))
            where = " on the host" if in_container else ""
            fix = Fix(f"Give the devices to the render group with a udev rule{where}, as "
                      "ROCm's prerequisites describe, then log in again.", UDEV_COMMANDS,
                      needs_root=True, needs_relogin=True)
            return self.result(Status.FAIL, summary, findings, fix)
        if in_container:
            return self._container(host, summary, findings, blocked)
        return self._membership(host, summary, findings, path, info)

    def _membership(self, host: Host, summary: str, findings: list[Finding], path: str,
                    info: PathInfo) -> CheckResult:
        user = account(host)
        group = info.group or str(info.gid)
        text = group_file(host)
        entry = parse_etc_group(text).get(group) if text is not None else None
        if group in user.groups or str(info.gid) in user.groups:
            findings.append(Finding.hint(
                f"{user.name} is in {group} and the mode allows the group, yet access is "
                "denied: possible causes: an ACL or a security module (SELinux, AppArmor) "
                "blocks it"))
            return self.result(Status.FAIL, summary, findings, Fix(
                f"Look for an ACL on {path} and for denials in the kernel log.",
                (f"getfacl {path}", "sudo dmesg | grep -i -E 'denied|apparmor|avc'"),
                needs_root=True))
        if entry is not None and user.name in entry.members:
            findings.append(Finding.hint(
                f"/etc/group lists {user.name} in {group}, but this session does not have the "
                "group: likely it started before the user was added (a session's groups are "
                "fixed at login)"))
            return self.result(Status.FAIL, summary, findings, Fix(
                f"Log out and back in (or start a shell that has the group with "
                f"newgrp {group}).", (f"newgrp {group}",), needs_relogin=True))
        if text is None:
            findings.append(Finding.info("/etc/group could not be read"))
        if group in ("render", "video"):
            fix = Fix("Add your user to the render and video groups, then log in again.",
                      ("sudo usermod -aG render,video $USER",), needs_root=True,
                      needs_relogin=True)
        else:
            fix = Fix(f"Add your user to the {group} group, then log in again.",
                      (f"sudo usermod -aG {group} $USER",), needs_root=True,
                      needs_relogin=True)
        return self.result(Status.FAIL, summary, findings, fix)

    def _container(self, host: Host, summary: str, findings: list[Finding],
                   blocked: list[tuple[str, PathInfo]]) -> CheckResult:
        gids = tuple(sorted({i.gid for _, i in blocked if i.gid is not None}))
        if any(i.group is None or i.group == "nogroup" for _, i in blocked):
            findings.append(Finding.hint(
                "the device's group has no name in this container: group names do not "
                "carry over from the host, numeric ids do"))
        fix, source = passthrough_fix(container_info(host), "amd", gids, devices_missing=False)
        return self.result(Status.FAIL, summary, findings, fix, source=source)

    def _missing(self, host: Host, what: str, in_container: bool) -> CheckResult:
        if in_container:
            # The host's kernel makes the nodes; a container has them only when passed in.
            info = container_info(host)
            fix, source = passthrough_fix(info, "amd")
            return self.result(
                Status.FAIL, f"{what} is missing in this {info.name} container" if info.runtime
                else f"{what} is missing in this container",
                [Finding.hint("the container was started without the GPU device nodes; the "
                              "host's driver is not to blame")], fix, source=source)
        if not module_present(host):
            return self.result(
                Status.FAIL, f"{what} is missing: the amdgpu driver is not loaded",
                [Finding.hint("the amdgpu-driver check says why")],
                Fix("Load the amdgpu driver.", ("sudo modprobe amdgpu",), needs_root=True))
        reason = ("possible causes: the kernel was built without KFD (CONFIG_HSA_AMD), or "
                  "amdgpu set up no GPU for compute" if what == KFD else
                  "possible cause: amdgpu created no render node (it failed to initialise the "
                  "GPU)")
        return self.result(
            Status.FAIL, f"{what} is missing although amdgpu is loaded", [Finding.hint(reason)],
            Fix("The kernel log says why.", ("sudo dmesg | grep -i -E 'kfd|amdgpu'",),
                needs_root=True))
