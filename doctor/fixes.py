"""Fix texts several checks share, and the notes that go with them.

A fix of one check lives in that check; one that two checks give (passing the GPU into a
container, commenting out modprobe.d lines, running without sudo) lives here, beside the facts
it is written from, so that both say the same thing. Facts come from the readers in facts/,
never from the Host itself (tests/test_architecture.py holds it).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Optional

from rocmdoctor.facts.account import account
from rocmdoctor.facts.boot import ModprobeLine
from rocmdoctor.facts.container import ContainerInfo
from rocmdoctor.facts.environment import environment
from rocmdoctor.host import Host
from rocmdoctor.kb import containers as kb
from rocmdoctor.model import Fix


def passthrough_fix(info: ContainerInfo, vendor: str, gids: tuple[int, ...] = (),
                    devices_missing: bool = True) -> tuple[Fix, str]:
    """(how to start this runtime with the GPU, the source), for AMD or NVIDIA GPUs."""
    runtime = info.runtime
    if vendor == "nvidia":
        if runtime == kb.KUBERNETES:
            return Fix("Request the GPU in the pod spec (resources: limits: nvidia.com/gpu: 1); "
                       "the cluster needs NVIDIA's device plugin."), kb.K8S_GPUS
        if runtime == kb.APPTAINER:
            return Fix("Start the container with --nv (apptainer exec --nv <image.sif> ...)."
                       ), kb.NVIDIA_TOOLKIT
        return Fix("Start the container with --gpus all; the host needs the NVIDIA Container "
                   "Toolkit, registered with the runtime (then restart the daemon).",
                   ("sudo nvidia-ctk runtime configure --runtime=docker",
                    "sudo systemctl restart docker"), needs_root=True), kb.NVIDIA_TOOLKIT
    if runtime == kb.KUBERNETES:
        return Fix("Request the GPU in the pod spec (resources: limits: amd.com/gpu: 1, GPUs go in "
                   "limits only); the cluster needs AMD's device plugin DaemonSet, on nodes "
                   "with the amdgpu driver loaded.",
                   (f"kubectl create -f {kb.K8S_AMD_PLUGIN_YAML}",)), kb.K8S_AMD_PLUGIN
    if runtime == kb.APPTAINER:
        return Fix("Start the container with --rocm (it binds /dev/kfd and /dev/dri); with "
                   "--contain or --containall bind them yourself: apptainer exec --containall "
                   "--bind=/dev/kfd,/dev/dri <image.sif> ..."), kb.APPTAINER_CONTAINALL
    if runtime == kb.LXC:
        return Fix("Pass /dev/kfd and /dev/dri/renderD* into the container in its LXC "
                   "configuration (bind mounts and device-cgroup permissions for both), on the "
                   "host."), kb.AMD_DOCKER
    tool = "podman" if runtime == kb.PODMAN else "docker"
    groups = " ".join(f"--group-add {g}" for g in gids)
    if not groups:
        groups = ("--group-add keep-groups" if info.rootless else
                  "--group-add video --group-add $(getent group render | cut -d: -f3)")
    devices = "--device=/dev/kfd --device=/dev/dri " if devices_missing else ""
    text = (f"Start the container with {devices}{groups}: `{tool} run {devices}{groups} "
            "<image>` (a group is given by its number, as `ls -ln /dev/kfd /dev/dri/renderD*` "
            "on the host shows it: names differ between host and container)")
    if info.rootless or info.user_namespace:
        text += ("; in a user namespace a host group reaches the container only when it is "
                 "mapped (/etc/subgid), and rootless Podman keeps your own groups only with "
                 "--group-add keep-groups (crun)")
        source = kb.PODMAN_KEEP_GROUPS
    else:
        source = kb.AMD_DOCKER if devices_missing else kb.ROCM_DOCKER_GID
    return Fix(text + "."), source


def comment_out(lines: Sequence[ModprobeLine]) -> list[str]:
    """Exact commands that comment out these lines of /etc/modprobe.d files."""
    return [f"sudo sed -i '{m.lineno}s/^/# /' {shlex.quote(m.path)}" for m in lines]


def sudo_note(host: Host) -> Optional[str]:
    """When rocmdoctor runs as root for another account (sudo), what that changes: sudo
    resets the environment (sudoers env_reset) and root passes every permission check."""
    who = (environment(host).get("SUDO_USER") or "").strip()
    if account(host).uid != 0 or not who or who == "root":
        return None
    return (f"running as root through sudo for {who}: these results describe root, who opens "
            f"/dev/kfd whatever its groups and whose environment sudo resets (LD_LIBRARY_PATH "
            f"is dropped), not {who} who trains")
