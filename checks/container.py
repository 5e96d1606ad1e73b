"""container: inside Docker, Podman, Apptainer/Singularity, Kubernetes or LXC, the GPU device
nodes were passed in and this process's groups can open them.

By hand: `ls -a /.dockerenv /run/.containerenv /.singularity.d; cat /proc/1/cgroup` (what
runs this), `ls -ln /dev/kfd /dev/dri/renderD* /dev/nvidia*` (the nodes and their numeric
group ids) and `grep Groups /proc/self/status` (this process's numeric groups).
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.account import account
from rocmdoctor.facts.container import (
    OVERFLOW_GID,
    ContainerInfo,
    GpuNodes,
    container_info,
    gpu_nodes,
    process_gids,
)
from rocmdoctor.facts.platform import gpu_vendors
from rocmdoctor.fixes import passthrough_fix
from rocmdoctor.host import Host, PathInfo
from rocmdoctor.kb import containers as kb
from rocmdoctor.model import Check, CheckResult, Finding, Status

VENDOR_NAMES = {"amd": "AMD", "nvidia": "NVIDIA"}


def _node_line(path: str, info: PathInfo) -> str:
    group = info.group or "no name"
    return f"{path}: group {info.gid} ({group}), mode {info.mode}"


class ContainerCheck(Check):
    id = "container"
    title = "Container: GPU devices and groups passed in"
    source = kb.AMD_DOCKER

    def applies(self, host: Host) -> Optional[str]:
        return None if container_info(host).inside else "not running in a container"

    def run(self, host: Host) -> CheckResult:
        info = container_info(host)
        where = f"in a {info.name} container" if info.runtime else "in a container"
        findings = [Finding.info(f"{where}: {'; '.join(info.signals)}")]
        if info.rootless:
            findings.append(Finding.info("rootless Podman (/run/.containerenv: rootless=1)"))
        if info.user_namespace:
            findings.append(Finding.info(
                f"a user namespace maps this container's ids (/proc/self/uid_map: "
                f"{info.uid_map}): host group ids that are not mapped show as {OVERFLOW_GID}"))
        vendors = sorted(gpu_vendors(host))
        if not vendors:
            return self.passed(f"{where}; no GPU on this machine's PCI bus and no GPU driver "
                               "loaded, so no GPU device is expected", findings)
        results = [self._vendor(host, info, v, findings) for v in vendors]
        bad = [r for r in results if r is not None]
        if bad:
            return bad[0]
        names = " and ".join(VENDOR_NAMES[v] for v in vendors)
        return self.passed(f"{where}; the {names} GPU device nodes are passed in and this "
                           "process can open them", findings)

    def _vendor(self, host: Host, info: ContainerInfo, vendor: str,
                findings: list[Finding]) -> Optional[CheckResult]:
        nodes = gpu_nodes(host, vendor)
        where = f"{info.name} container" if info.runtime else "container"
        findings += [Finding.info(_node_line(p, i)) for p, i in nodes.present]
        if nodes.missing:
            fix, source = passthrough_fix(info, vendor)
            missing = ", ".join(nodes.missing)
            findings.append(Finding.error(
                f"{VENDOR_NAMES[vendor]} GPU on the host, but {missing} "
                f"{'is' if len(nodes.missing) == 1 else 'are'} missing in this container"))
            return self.result(Status.FAIL, f"this {where} was started without {missing}",
                               findings, fix, source)
        return self._groups(host, info, vendor, nodes, where, findings)

    def _groups(self, host: Host, info: ContainerInfo, vendor: str, nodes: GpuNodes,
                where: str, findings: list[Finding]) -> Optional[CheckResult]:
        user = account(host)
        if user.uid == 0 and not info.user_namespace:
            return None  # root opens the nodes whatever their groups
        blocked = [(p, i) for p, i in nodes.present if not (i.readable and i.writable)]
        if not blocked:
            return None
        gids = process_gids(host)
        if gids is not None:
            findings.append(Finding.info("this process's groups (numeric): "
                                         + " ".join(str(g) for g in sorted(gids))))
        else:
            findings.append(Finding.info(f"this process's groups: {', '.join(user.groups)}"))
        needed = sorted({i.gid for _, i in blocked if i.gid is not None
                         and (gids is None or i.gid not in gids) and i.gid != OVERFLOW_GID})
        unmapped = [p for p, i in blocked if i.gid == OVERFLOW_GID]
        for path in unmapped:
            findings.append(Finding.hint(
                f"{path} belongs to group {OVERFLOW_GID}: its host group is not mapped into "
                "this container's user namespace, so no --group-add names it"))
        summary = (f"this {where} cannot open {', '.join(p for p, _ in blocked)} "
                   f"({'groups' if len(blocked) > 1 else 'group'} "
                   f"{', '.join(sorted({str(i.gid) for _, i in blocked}))} not among this "
                   "process's groups)")
        fix, source = passthrough_fix(info, vendor, tuple(needed), devices_missing=False)
        return self.result(Status.FAIL, summary, findings, fix, source)
