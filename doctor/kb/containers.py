"""How containers are recognised, and how each runtime is told to pass the GPU in.

Each rule carries its source. The flags are the runtimes' own documented options.
"""

from __future__ import annotations

from dataclasses import dataclass

AMD_DOCKER = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html"
# `--group-add render` for a non-root image user (the image gets a render group).
ROCM_DOCKER_RENDER = "https://github.com/ROCm/ROCm-docker/pull/93"
# `--group-add $(getent group render | cut -d: -f3)` when the image has no such group name.
ROCM_DOCKER_GID = "https://github.com/ROCm/ROCm-docker/issues/116"
PODMAN_CONTAINERENV = "https://docs.podman.io/en/latest/markdown/podman-run.1.html"
# "Passed-in devices or files can't be accessed in rootless container": the runtime's
# setgroups(2) drops the user's groups; `--group-add keep-groups` (crun) keeps them.
PODMAN_KEEP_GROUPS = "https://github.com/containers/podman/blob/main/troubleshooting.md"
# Rootless podman maps host gids only through /etc/subgid (ROCm/ROCm#1549 workaround).
ROOTLESS_SUBGID = "https://github.com/ROCm/ROCm/issues/1549"
# apptainer cmd/internal/cli/action_flags.go: --rocm "enable experimental Rocm support";
# internal/pkg/util/gpu/rocm.go binds /dev/dri and /dev/kfd; with --contain/--containall
# /dev/kfd is absent unless bound (apptainer/singularity#5696, ROCm/ROCm#1798).
APPTAINER_ROCM = ("https://github.com/apptainer/apptainer/blob/"
                  "917d66577963ca297352a22e13c86f1748ddc645/cmd/internal/cli/action_flags.go")
# "Environment from the {Singularity} runtime": SINGULARITY_COMMAND, _CONTAINER,
# _ENVIRONMENT, _NAME (and _BIND, which users also set on the host); Apptainer's are the
# same names with the APPTAINER_ prefix.
APPTAINER_RUNTIME_ENV = ("https://github.com/apptainer/apptainer-userdocs/blob/"
                         "09c81a54cdc1836734097996da29b6d8e6194e72/environment_and_metadata.rst")
APPTAINER_CONTAINALL = "https://github.com/ROCm/ROCm/issues/1798"
# Binding the host's ROCm libraries with --rocm can clash with the image's libstdc++.
APPTAINER_GLIBCXX = "https://github.com/apptainer/apptainer/pull/1622"
K8S_AMD_PLUGIN = "https://instinct.docs.amd.com/projects/k8s-device-plugin/en/latest/"
K8S_AMD_PLUGIN_YAML = ("https://raw.githubusercontent.com/ROCm/k8s-device-plugin/master/"
                       "k8s-ds-amdgpu-dp.yaml")
K8S_GPUS = "https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/"
NVIDIA_TOOLKIT = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
                  "install-guide.html")
# cgroup v1: every controller line ends in /docker/<id>; cgroup v2 with cgroup namespaces
# shows only "0::/" (rpm-software-management/mock#986), so files and mounts are read too.
CGROUP_V1_DOCKER = "https://github.com/vdloo/raptiformica/pull/287"
CGROUP_V2_DOCKER = "https://github.com/rpm-software-management/mock/pull/986"
DOCKER_OVERLAY2 = "https://docs.docker.com/engine/storage/drivers/overlayfs-driver/"
# "lxcfs is a FUSE-based proc, sys and cgroup virtualizing filesystem" (lxcfs(1)); its
# README mounts it on the host at /var/lib/lxcfs.
LXCFS = "https://linuxcontainers.org/lxcfs/manpages/man1/lxcfs.1.html"
LXCFS_README = "https://github.com/hallyn/lxcfs"
# The $container variable a container manager sets for its payload (docker, podman, lxc ...).
CONTAINER_INTERFACE = "https://systemd.io/CONTAINER_INTERFACE/"
# Pods get KUBERNETES_SERVICE_HOST/_PORT for the API service.
K8S_ENV = "https://kubernetes.io/docs/concepts/containers/container-environment/"
# sudo runs commands "in a minimal environment" (env_reset, on by default).
SUDOERS_ENV = "https://www.sudo.ws/docs/man/sudoers.man/#Command_environment"
# user_namespaces(7): the initial user namespace's uid_map is "0 0 4294967295".
USER_NAMESPACES = "https://man7.org/linux/man-pages/man7/user_namespaces.7.html"

DOCKER, PODMAN, APPTAINER, KUBERNETES, LXC, CONTAINERD = (
    "docker", "podman", "apptainer", "kubernetes", "lxc", "containerd")
RUNTIME_NAMES = {DOCKER: "Docker", PODMAN: "Podman", APPTAINER: "Apptainer/Singularity",
                 KUBERNETES: "Kubernetes", LXC: "LXC", CONTAINERD: "containerd"}


@dataclass(frozen=True)
class Marker:
    """A file, cgroup path, mount or variable that names the runtime."""

    runtime: str
    where: str  # "path", "cgroup", "root-mount", "proc-mount", "env", "env-value"
    text: str  # the path, the word in a cgroup path or a mount line, the variable
    source: str


MARKERS: tuple[Marker, ...] = (
    Marker(DOCKER, "path", "/.dockerenv", CGROUP_V2_DOCKER),
    Marker(PODMAN, "path", "/run/.containerenv", PODMAN_CONTAINERENV),
    Marker(APPTAINER, "path", "/.singularity.d", APPTAINER_ROCM),
    # The variables the runtime sets in the container. Most other APPTAINER_* and
    # SINGULARITY_* names are settings users export on the host (APPTAINER_CACHEDIR,
    # APPTAINER_TMPDIR, APPTAINER_BIND ...), so a prefix alone does not mark a container.
    *(Marker(APPTAINER, "env", f"{prefix}_{name}", APPTAINER_RUNTIME_ENV)
      for prefix in ("APPTAINER", "SINGULARITY")
      for name in ("CONTAINER", "NAME", "ENVIRONMENT", "COMMAND")),
    Marker(KUBERNETES, "env", "KUBERNETES_SERVICE_HOST", K8S_ENV),
    Marker(KUBERNETES, "cgroup", "kubepods", K8S_GPUS),
    Marker(DOCKER, "cgroup", "/docker/", CGROUP_V1_DOCKER),
    Marker(DOCKER, "cgroup", "docker-", CGROUP_V1_DOCKER),  # systemd driver: docker-<id>.scope
    Marker(PODMAN, "cgroup", "libpod", PODMAN_CONTAINERENV),
    Marker(LXC, "cgroup", "/lxc", CGROUP_V1_DOCKER),  # /lxc/<name>, /lxc.payload.<name>
    Marker(CONTAINERD, "cgroup", "containerd", CGROUP_V1_DOCKER),
    # The container's root file system is an overlay of the engine's image layers.
    Marker(DOCKER, "root-mount", "/var/lib/docker/", DOCKER_OVERLAY2),
    Marker(PODMAN, "root-mount", "/containers/storage/overlay", PODMAN_CONTAINERENV),
    # lxcfs runs on the host (mounted at /var/lib/lxcfs) and its files are bind-mounted over
    # the container's /proc/cpuinfo, /proc/meminfo ...
    Marker(LXC, "proc-mount", "lxcfs", LXCFS),
    Marker(DOCKER, "env-value", "docker", CONTAINER_INTERFACE),  # container=<runtime>
    Marker(PODMAN, "env-value", "podman", CONTAINER_INTERFACE),
    Marker(LXC, "env-value", "lxc", CONTAINER_INTERFACE),
    Marker(LXC, "env-value", "lxc-libvirt", CONTAINER_INTERFACE),
)
# Kubernetes runs pods through Docker or containerd: the orchestrator is what to configure.
PRECEDENCE = (KUBERNETES, APPTAINER, PODMAN, LXC, DOCKER, CONTAINERD)
