"""Whether this process runs in a container, which runtime, and its GPU device nodes (how to
pass the GPU into one is rocmdoctor.fixes.passthrough_fix).

The one reader of the container facts (the snapshot contract's "container" reads): paths
`/.dockerenv`, `/run/.containerenv`, `/.singularity.d`; files `/proc/1/cgroup`,
`/proc/self/cgroup`, `/proc/mounts`; the environment (`container`, the `APPTAINER_` /
`SINGULARITY_` CONTAINER, NAME, ENVIRONMENT and COMMAND variables the runtime sets,
`KUBERNETES_SERVICE_HOST`). Beside them, for what a container changes about device
access: `/proc/self/status` (the numeric groups of this process: names differ between host
and container, gids do not) and `/proc/self/uid_map` (a user namespace: rootless Podman,
unprivileged LXC).

By hand: `ls -a / /run | grep -E 'dockerenv|containerenv|singularity'; cat /proc/1/cgroup;
grep -E ' / overlay|lxcfs /(proc|sys)/' /proc/mounts; env | grep -E '^(container|(APPTAINER|
SINGULARITY)_(CONTAINER|NAME)|KUBERNETES_SERVICE_HOST)='; grep Groups /proc/self/status;
ls -ln /dev/kfd /dev/dri`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host, PathInfo
from rocmdoctor.kb import containers as kb

KFD = "/dev/kfd"
RENDER_GLOB = "/dev/dri/renderD*"
NVIDIA_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm")
NVIDIA_GLOB = "/dev/nvidia[0-9]*"
OVERFLOW_GID = 65534  # an unmapped id shows as nobody/nogroup inside a user namespace
_CGROUP_FILES = ("/proc/1/cgroup", "/proc/self/cgroup")


@dataclass(frozen=True)
class ContainerInfo:
    runtime: Optional[str]  # kb.containers DOCKER, PODMAN ...; None outside a container
    signals: tuple[str, ...]  # why it looks like one, each a line a user can check
    rootless: Optional[bool] = None  # podman's .containerenv says rootless=1
    user_namespace: bool = False  # uid_map is not the identity map: host ids are remapped
    uid_map: Optional[str] = None

    @property
    def inside(self) -> bool:
        return bool(self.signals)

    @property
    def name(self) -> str:
        return kb.RUNTIME_NAMES.get(self.runtime or "", "a container")


def parse_cgroup_paths(text: str) -> list[str]:
    """The cgroup path of each `/proc/<pid>/cgroup` line (`id:controllers:path`). Never raises."""
    paths = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3 and parts[0].isdigit():
            paths.append(parts[2])
    return paths


def parse_status_ids(text: str) -> dict[str, tuple[int, ...]]:
    """`Uid:`, `Gid:` and `Groups:` of /proc/self/status as numbers. Never raises."""
    found: dict[str, tuple[int, ...]] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key in ("Uid", "Gid", "Groups"):
            numbers = [w for w in rest.split() if w.isascii() and w.isdigit() and len(w) < 11]
            found[key] = tuple(int(w) for w in numbers)
    return found


def is_identity_map(text: str) -> Optional[bool]:
    """Whether a uid_map is the initial namespace's "0 0 4294967295" (None: unreadable)."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    if not rows or any(len(r) != 3 or not all(w.isdigit() for w in r) for r in rows):
        return None
    return rows == [["0", "0", "4294967295"]]


@dataclass(frozen=True)
class Mount:
    source: str
    point: str
    fstype: str
    options: str


def parse_mounts(text: str) -> list[Mount]:
    """The lines of /proc/mounts (fstab(5) fields: source, mount point, type, options).
    Never raises."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4:
            mounts.append(Mount(*fields[:4]))
    return mounts


def _mount_hit(marker: kb.Marker, mounts: list[Mount]) -> Optional[Mount]:
    """The mount that shows this process's own container: its root file system (an image
    layer), or a file lxcfs virtualises under /proc or /sys. The same words on other mount
    points are what a host running containers shows (Docker's overlay2 page lists the host's
    /var/lib/docker/overlay2/<id>/merged; lxcfs itself is mounted at /var/lib/lxcfs)."""
    for mount in mounts:
        line = f"{mount.source} {mount.fstype} {mount.options}"
        if marker.where == "root-mount" and mount.point == "/" and marker.text in line:
            return mount
        if marker.where == "proc-mount" and mount.point.startswith(("/proc/", "/sys/")) \
                and marker.text in line:
            return mount
    return None


def _marker_signals(host: Host, cgroup_paths: list[str], mounts: list[Mount]
                    ) -> list[tuple[str, str]]:
    """(runtime, signal line) for every marker present."""
    found: list[tuple[str, str]] = []
    env = host.env
    for m in kb.MARKERS:
        if m.where == "path" and host.exists(m.text):
            found.append((m.runtime, f"{m.text} exists"))
        elif m.where == "env" and env.get(m.text):
            found.append((m.runtime, f"{m.text} is set"))
        elif m.where == "env-value" and env.get("container", "").lower() == m.text:
            found.append((m.runtime, f"container={env['container']}"))
        elif m.where == "cgroup":
            hit = next((p for p in cgroup_paths if m.text in p), None)
            if hit is not None:
                found.append((m.runtime, f"the cgroup path {hit} names {m.runtime}"))
        elif m.where in ("root-mount", "proc-mount"):
            mount = _mount_hit(m, mounts)
            if mount is not None:
                found.append((m.runtime, f"/proc/mounts: the {mount.fstype} mount on "
                                         f"{mount.point} names {m.text}"))
    other = env.get("container", "")
    if other and not any(r for r, s in found if s.startswith("container=")):
        found.append(("", f"container={other}"))
    return found


def container_info(host: Host) -> ContainerInfo:
    def compute() -> ContainerInfo:
        cgroup_paths: list[str] = []
        for path in _CGROUP_FILES:
            cgroup_paths += parse_cgroup_paths(host.read_file(path) or "")
        mounts = parse_mounts(host.read_file("/proc/mounts") or "")
        found = _marker_signals(host, cgroup_paths, mounts)
        signals = tuple(dict.fromkeys(s for _, s in found))
        runtimes = {r for r, _ in found if r}
        runtime = next((r for r in kb.PRECEDENCE if r in runtimes), None)
        rootless = None
        if runtime == kb.PODMAN:
            env_file = host.read_file("/run/.containerenv") or ""
            rootless = bool(re.search(r"^\s*rootless\s*=\s*1\s*$", env_file, re.MULTILINE))
        uid_map = host.read_file("/proc/self/uid_map")
        identity = is_identity_map(uid_map) if uid_map is not None else None
        if runtime is None and signals:
            runtime = kb.DOCKER if "/.dockerenv exists" in signals else None
        return ContainerInfo(runtime, signals, rootless, identity is False,
                             uid_map.strip() if uid_map else None)

    return host.memo("facts:container", compute)


def container_signals(host: Host) -> list[str]:
    """Why this looks like a container (empty when it does not)."""
    return list(container_info(host).signals)


def process_gids(host: Host) -> Optional[frozenset[int]]:
    """The numeric groups of this process (its gid and supplementary groups), or None."""
    text = host.read_file("/proc/self/status")
    if text is None:
        return None
    ids = parse_status_ids(text)
    gids = set(ids.get("Groups", ()))
    if ids.get("Gid"):
        gids.add(ids["Gid"][0])
    return frozenset(gids) if "Groups" in ids or "Gid" in ids else None


@dataclass(frozen=True)
class GpuNodes:
    """The GPU device nodes a container needs, and who owns those present."""

    vendor: str  # "amd" or "nvidia"
    present: tuple[tuple[str, PathInfo], ...]
    missing: tuple[str, ...]  # paths or globs absent


def kfd_device(host: Host) -> Optional[PathInfo]:
    """/dev/kfd's stat facts (None: it does not exist), read once."""
    return host.memo("facts:kfd", lambda: host.stat(KFD))


def render_devices(host: Host) -> tuple[tuple[str, PathInfo], ...]:
    """(path, stat facts) of every /dev/dri/renderD* node, read once."""
    return host.memo("facts:render-nodes", lambda: tuple(
        (p, i) for p in host.glob(RENDER_GLOB) if (i := host.stat(p)) is not None))


def gpu_nodes(host: Host, vendor: str) -> GpuNodes:
    if vendor == "amd":
        kfd = kfd_device(host)
        present = [(KFD, kfd)] if kfd is not None else []
        renders = list(render_devices(host))
        missing = ([] if present else [KFD]) + ([] if renders else [RENDER_GLOB])
        return GpuNodes(vendor, tuple(present + renders), tuple(missing))
    present = [(p, i) for p in NVIDIA_NODES if (i := host.stat(p)) is not None]
    cards = [(p, i) for p in host.glob(NVIDIA_GLOB) if (i := host.stat(p)) is not None]
    missing = [p for p in NVIDIA_NODES if host.stat(p) is None] + ([] if cards else [NVIDIA_GLOB])
    return GpuNodes(vendor, tuple(present + cards), tuple(missing))
