"""container and the container fact (rocmdoctor.facts.container) from real captures."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.container import ContainerCheck
from rocmdoctor.facts.container import (
    Mount,
    container_info,
    container_signals,
    is_identity_map,
    parse_cgroup_paths,
    parse_mounts,
    parse_status_ids,
    process_gids,
)
from rocmdoctor.facts.platform import container_signals as platform_container_signals
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb import containers as kb
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import char_dev, fixture_text, make_snapshot

CHECK = ContainerCheck()
AMDGPU = {"/sys/module/amdgpu": {"type": "dir", "mode": "0755"}}
NVIDIA_PCI = {"/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
              "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n"}
DOCKER_FIX_TEXT = ("Start the container with --device=/dev/kfd --device=/dev/dri --group-add video "
                   "--group-add $(getent group render | cut -d: -f3): `docker run "
                   "--device=/dev/kfd --device=/dev/dri --group-add video --group-add "
                   "$(getent group render | cut -d: -f3) <image>` (a group is given by its "
                   "number, as `ls -ln /dev/kfd /dev/dri/renderD*` on the host shows it: names "
                   "differ between host and container).")
ROOT = {"name": "root", "uid": 0, "groups": ["root"]}
GID_FIX = ("Start the container with --group-add {0}: `docker run --group-add {0} <image>` (a "
           "group is given by its number, as `ls -ln /dev/kfd /dev/dri/renderD*` on the host "
           "shows it: names differ between host and container).")


def body_after(name: str, prompt_end: str) -> list[str]:
    """The output lines a capture shows after the prompt line ending in `prompt_end`."""
    lines = fixture_text(name).splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith(prompt_end))
    out = []
    for line in lines[start + 1:]:
        if line.rstrip().endswith(("$", "#")) or "$ " in line or ("@" in line and "# " in line):
            break  # the next prompt
        out.append(line)
    return out


def host(files: Optional[dict[str, str]] = None, paths: Optional[dict[str, Any]] = None,
         env: Optional[dict[str, str]] = None, user: Optional[dict[str, Any]] = None
         ) -> SnapshotHost:
    return SnapshotHost(make_snapshot(files=files, paths=paths, env=env, user=user))


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: list[Finding], fix: Optional[Fix] = None,
           source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


# --- detection ------------------------------------------------------------------------------

def test_real_cgroup_v1_docker_paths() -> None:
    lines = body_after("proc-1-cgroup-v1-docker-container-id-paths.txt", "cat /proc/1/cgroup")
    text = "\n".join(line for line in lines if line.strip()) + "\n"
    paths = parse_cgroup_paths(text)
    assert paths[0] == "/docker/98b476fc486aa7bac605b96724646ce0f192db5d2d8e38be1a8d7bd5f2c95eff"
    assert "/" in paths and len(paths) == 12
    info = container_info(host(files={"/proc/1/cgroup": text}))
    assert info.runtime == kb.DOCKER
    assert info.signals == (f"the cgroup path {paths[0]} names docker",)


def test_real_cgroup_v2_needs_dockerenv() -> None:
    # cgroup v2 with namespaces: "0::/" only (mock#986); /.dockerenv still names Docker.
    cgroup = body_after("proc-self-cgroup-v2-0-root-and-mountinfo-docker-containers.txt",
                        "cat /proc/self/cgroup")[0] + "\n"
    assert cgroup == "0::/\n"
    assert not container_info(host(files={"/proc/self/cgroup": cgroup})).inside
    h = host(files={"/proc/self/cgroup": cgroup, "/.dockerenv": ""})
    assert (container_info(h).runtime, container_signals(h)) == (kb.DOCKER,
                                                               ["/.dockerenv exists"])
    assert platform_container_signals(h) == ["/.dockerenv exists"]  # the old import still works


def test_runtimes_from_their_markers() -> None:
    cases = [
        ({"/run/.containerenv": "engine=\"podman-4.9\"\nrootless=1\n"}, {}, kb.PODMAN, True),
        ({"/.singularity.d/runscript": "#!/bin/sh\n"}, {}, kb.APPTAINER, None),
        ({}, {"APPTAINER_CONTAINER": "/scratch/pytorch.sif"}, kb.APPTAINER, None),
        ({}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, kb.KUBERNETES, None),
        ({"/proc/1/cgroup": "0::/kubepods/burstable/pod1/abc\n"}, {}, kb.KUBERNETES, None),
        ({}, {"container": "lxc"}, kb.LXC, None),
        ({"/proc/mounts": "lxcfs /proc/cpuinfo fuse.lxcfs rw 0 0\n"}, {}, kb.LXC, None),
        ({"/proc/mounts": "overlay / overlay rw,lowerdir=/var/lib/docker/overlay2/l/X 0 0\n"},
         {}, kb.DOCKER, None),
    ]
    for files, env, runtime, rootless in cases:
        info = container_info(host(files=files, env=env))
        assert (info.runtime, info.rootless) == (runtime, rootless), (files, env)
    overlay = "overlay / overlay rw,lowerdir=/var/lib/docker/overlay2/l/X 0 0\n"
    assert container_signals(host(files={"/proc/mounts": overlay})) == [
        "/proc/mounts: the overlay mount on / names /var/lib/docker/"]
    # Kubernetes wins over the Docker it runs the pod with.
    both = host(files={"/.dockerenv": ""}, env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert container_info(both).runtime == kb.KUBERNETES


def test_user_namespace_and_numeric_groups() -> None:
    h = host(files={"/proc/self/uid_map": "         0       1000          1\n",
                    "/proc/self/status": "Name:\tpython\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
                                         "Groups:\t44 109 \n", "/.dockerenv": ""})
    info = container_info(h)
    assert info.user_namespace and info.uid_map == "0       1000          1"
    assert process_gids(h) == frozenset({0, 44, 109})
    assert is_identity_map("         0          0 4294967295\n") is True
    assert is_identity_map("garbage") is None


def test_a_host_running_containers_is_not_one() -> None:
    # What the host shows while it runs containers: Docker's overlay2 page lists
    # "overlay on /var/lib/docker/overlay2/<id>/merged type overlay (...)"; lxcfs is mounted
    # at /var/lib/lxcfs; podman's layers under /var/lib/containers/storage/overlay.
    mounts = ("/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
              "overlay /var/lib/docker/overlay2/9186877cdf386d0a3b016149cf30c208f326dca307529e6"
              "46afce5b3f83f5304/merged overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/"
              "OMTXSYQHGPB5BF6QOGSWXALHEV 0 0\n"
              "lxcfs /var/lib/lxcfs fuse.lxcfs rw,nosuid,nodev,relatime,user_id=0,group_id=0,"
              "allow_other 0 0\n"
              "overlay /var/lib/containers/storage/overlay/3f1e/merged overlay rw 0 0\n")
    info = container_info(host(files={"/proc/mounts": mounts, "/proc/1/cgroup": "0::/init.scope\n",
                                      "/proc/self/cgroup": "0::/user.slice/user-1000.slice/"
                                                           "session-3.scope\n"}))
    assert (info.inside, info.runtime) == (False, None)
    # An HPC login profile's Apptainer settings (NeSI's docs export these in ~/.bashrc).
    settings = {"APPTAINER_CACHEDIR": "/nesi/nobackup/x/apptainer-cache",
                "APPTAINER_TMPDIR": "/nesi/nobackup/x/apptainer-cache",
                "SINGULARITY_BINDPATH": "/scratch"}
    assert not container_info(host(env=settings)).inside
    assert container_signals(host(env={**settings, "SINGULARITY_NAME": "pytorch.sif"})) == [
        "SINGULARITY_NAME is set"]
    assert parse_mounts("lxcfs /proc/cpuinfo fuse.lxcfs rw 0 0\nshort line\n") == [
        Mount("lxcfs", "/proc/cpuinfo", "fuse.lxcfs", "rw")]


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_mounts(text)
    parse_cgroup_paths(text)
    parse_status_ids(text)
    is_identity_map(text)


# --- the check ------------------------------------------------------------------------------

def test_not_in_a_container_is_skipped() -> None:
    assert run(host(paths=AMDGPU)) == expect(Status.SKIP, "not running in a container", [])


def test_ci_container_without_gpu_passes() -> None:
    assert run(host(files={"/.dockerenv": ""})) == expect(
        Status.PASS, "in a Docker container; no GPU on this machine's PCI bus and no GPU "
        "driver loaded, so no GPU device is expected",
        [Finding.info("in a Docker container: /.dockerenv exists")])


def test_real_docker_run_without_device_flags() -> None:
    # gfx803_rocm#6: docker run with --group-add=video but no --device: neither node exists.
    name = "docker-run-no-device-flags-ls-dev-kfd-dri-missing-rocminfo-rock-not-loaded-gfx803-rocm6.3.txt"
    text = fixture_text(name)
    assert "ls: cannot access '/dev/kfd': No such file or directory" in text
    assert "ls: cannot access '/dev/dri': No such file or directory" in text
    h = host(files={"/.dockerenv": ""}, paths=AMDGPU, user=ROOT)
    assert run(h) == expect(
        Status.FAIL, "this Docker container was started without /dev/kfd, /dev/dri/renderD*",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.error("AMD GPU on the host, but /dev/kfd, /dev/dri/renderD* are missing in "
                       "this container")],
        Fix(DOCKER_FIX_TEXT), kb.AMD_DOCKER)


def test_real_working_non_root_container_passes() -> None:
    # ROCm-docker#93: -u 1000 with --group-add video --group-add render; the image's render
    # group has gid 109 (the PR's title). The process's numeric groups are not in the capture.
    lines = body_after("docker-run-nonroot-u1000-ls-dev-dri-kfd-render-group-gfx90a-rocm5.2.txt",
                       "ls -lart /dev/kfd")
    assert lines[0].startswith("crw-rw---- 1 root render 509, 0")
    dev = char_dev(group="render", gid=109)
    h = host(files={"/.dockerenv": "", "/proc/self/status": "Gid:\t1000\nGroups:\t44 109\n"},
             paths={**AMDGPU, "/dev/kfd": dev, "/dev/dri/renderD128": dev,
                    "/dev/dri/renderD129": dev},
             user={"name": "1000", "uid": 1000, "groups": ["1000", "video", "render"]})
    line = "group 109 (render), mode 0660"
    assert run(h) == expect(
        Status.PASS, "in a Docker container; the AMD GPU device nodes are passed in and this "
        "process can open them",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.info(f"/dev/kfd: {line}"), Finding.info(f"/dev/dri/renderD128: {line}"),
         Finding.info(f"/dev/dri/renderD129: {line}")])


def test_real_rocm_terminal_user_without_the_render_gid() -> None:
    # ROCm-docker#116: the image user has "rocm-user sudo video"; /dev/kfd is group render,
    # gid 993 on that host ("cannot find name for group ID 993" in the thread).
    name = "docker-run-rocm-terminal-rocminfo-kfd-permission-denied-rocm-smi-ok-mi100-x4-TRUNCATED.txt"
    groups = body_after(name, "# groups")[0].split()
    assert groups == ["rocm-user", "sudo", "video"]
    dev = char_dev(group=None, gid=993, readable=False, writable=False)  # type: ignore[arg-type]
    h = host(files={"/.dockerenv": "", "/proc/self/status": "Gid:\t1000\nGroups:\t27 44 1000\n"},
             paths={**AMDGPU, "/dev/kfd": dev, "/dev/dri/renderD128": dev},
             user={"name": "rocm-user", "uid": 1000, "groups": groups})
    text = ("Start the container with --group-add 993: `docker run --group-add 993 <image>` (a "
            "group is given by its number, as `ls -ln /dev/kfd /dev/dri/renderD*` on the host "
            "shows it: names differ between host and container).")
    assert run(h) == expect(
        Status.FAIL, "this Docker container cannot open /dev/kfd, /dev/dri/renderD128 (groups "
        "993 not among this process's groups)",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.info("/dev/kfd: group 993 (no name), mode 0660"),
         Finding.info("/dev/dri/renderD128: group 993 (no name), mode 0660"),
         Finding.info("this process's groups (numeric): 27 44 1000")],
        Fix(text), kb.ROCM_DOCKER_GID)


def test_real_rootless_podman_nogroup() -> None:
    # Firstbober/rocm-pytorch-gfx803-docker#4: rootless podman, the kfd group is "nogroup".
    text = fixture_text("podman-run-rocminfo-kfd-permission-denied-not-member-nogroup-gfx803.txt")
    assert 'root is not member of "nogroup" group' in text
    dev = char_dev(group="nogroup", gid=65534, readable=False, writable=False)
    h = host(files={"/run/.containerenv": "engine=\"podman-4.3.1\"\nrootless=1\n",
                    "/proc/self/uid_map": "0 1000 1\n1 100000 65536\n",
                    "/proc/self/status": "Gid:\t0\nGroups:\t0 44\n"},
             paths={**AMDGPU, "/dev/kfd": dev, "/dev/dri/renderD128": dev}, user=ROOT)
    fix_text = ("Start the container with --group-add keep-groups: `podman run --group-add "
                "keep-groups <image>` (a group is given by its number, as `ls -ln /dev/kfd "
                "/dev/dri/renderD*` on the host shows it: names differ between host and "
                "container); in a user namespace a host group reaches the container only when "
                "it is mapped (/etc/subgid), and rootless Podman keeps your own groups only "
                "with --group-add keep-groups (crun).")
    unmapped = ("belongs to group 65534: its host group is not mapped into this container's "
                "user namespace, so no --group-add names it")
    assert run(h) == expect(
        Status.FAIL, "this Podman container cannot open /dev/kfd, /dev/dri/renderD128 (groups "
        "65534 not among this process's groups)",
        [Finding.info("in a Podman container: /run/.containerenv exists"),
         Finding.info("rootless Podman (/run/.containerenv: rootless=1)"),
         Finding.info("a user namespace maps this container's ids (/proc/self/uid_map: 0 1000 "
                      "1\n1 100000 65536): host group ids that are not mapped show as 65534"),
         Finding.info("/dev/kfd: group 65534 (nogroup), mode 0660"),
         Finding.info("/dev/dri/renderD128: group 65534 (nogroup), mode 0660"),
         Finding.info("this process's groups (numeric): 0 44"),
         Finding.hint(f"/dev/kfd {unmapped}"), Finding.hint(f"/dev/dri/renderD128 {unmapped}")],
        Fix(fix_text), kb.PODMAN_KEEP_GROUPS)


def test_real_unprivileged_lxc_root_passes_with_the_namespace_noted() -> None:
    # ROCm#5379: kfd is 0666 and root is in video+render in an unprivileged Proxmox LXC.
    name = "ls-la-dev-kfd-dri-groups-rocminfo-einval-lxc-unprivileged-proxmox-gfx1201-rocm7.0.1.txt"
    assert "crw-rw-rw- 1 root render 511, 0 Sep 18 11:04 /dev/kfd" in fixture_text(name)
    kfd = char_dev(mode="0666", gid=993)
    render = char_dev(group="video", gid=44)
    h = host(files={"/proc/self/uid_map": "0 100000 65536\n"}, env={"container": "lxc"},
             paths={**AMDGPU, "/dev/kfd": kfd, "/dev/dri/renderD128": render}, user=ROOT)
    result = run(h)
    assert (result.status, result.summary) == (
        Status.PASS, "in a LXC container; the AMD GPU device nodes are passed in and this "
        "process can open them")
    assert Finding.info("a user namespace maps this container's ids (/proc/self/uid_map: 0 "
                        "100000 65536): host group ids that are not mapped show as 65534") \
        in result.findings


def test_kubernetes_pod_without_the_gpu_resource() -> None:
    # k8s-device-plugin#23: no /dev/kfd on the node: "Insufficient amd.com/gpu".
    text = fixture_text("k8s-node-labeller-fail-to-glob-topology-no-dev-kfd-insufficient-amd.com-gpu-talos-raven.txt")
    assert "Insufficient amd.com/gpu" in text
    h = host(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, paths=AMDGPU)
    assert run(h) == expect(
        Status.FAIL, "this Kubernetes container was started without /dev/kfd, "
        "/dev/dri/renderD*",
        [Finding.info("in a Kubernetes container: KUBERNETES_SERVICE_HOST is set"),
         Finding.error("AMD GPU on the host, but /dev/kfd, /dev/dri/renderD* are missing in "
                       "this container")],
        Fix("Request the GPU in the pod spec (resources: limits: amd.com/gpu: 1, GPUs go in "
            "limits only); the cluster needs AMD's device plugin DaemonSet, on nodes with the "
            "amdgpu driver loaded.", (f"kubectl create -f {kb.K8S_AMD_PLUGIN_YAML}",)),
        kb.K8S_AMD_PLUGIN)


def test_apptainer_without_the_devices() -> None:
    # ROCm#1798: with --containall, /dev/kfd is absent unless bound.
    assert "--containall --bind=/home1/${USER},/dev/kfd,/dev/dri" in fixture_text(
        "apptainer-rocm-host-libhsa-runtime64-glibcxx-3.4.29-not-found-containall-bind-fix.txt")
    h = host(env={"APPTAINER_CONTAINER": "/home/u/tf.sif"}, paths=AMDGPU)
    result = run(h)
    assert (result.status, result.fix, result.source) == (
        Status.FAIL, Fix("Start the container with --rocm (it binds /dev/kfd and /dev/dri); "
                         "with --contain or --containall bind them yourself: apptainer exec "
                         "--containall --bind=/dev/kfd,/dev/dri <image.sif> ..."),
        kb.APPTAINER_CONTAINALL)


def test_real_nvidia_docker_without_the_toolkit() -> None:
    text = fixture_text("docker-run-gpus-all-could-not-select-device-driver-nvidia-container-toolkit-missing.txt")
    assert 'could not select device driver "" with capabilities: [[gpu]]' in text
    h = host(files={"/.dockerenv": "", **NVIDIA_PCI})
    assert run(h) == expect(
        Status.FAIL, "this Docker container was started without /dev/nvidiactl, "
        "/dev/nvidia-uvm, /dev/nvidia[0-9]*",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.error("NVIDIA GPU on the host, but /dev/nvidiactl, /dev/nvidia-uvm, "
                       "/dev/nvidia[0-9]* are missing in this container")],
        Fix("Start the container with --gpus all; the host needs the NVIDIA Container Toolkit, "
            "registered with the runtime (then restart the daemon).",
            ("sudo nvidia-ctk runtime configure --runtime=docker",
             "sudo systemctl restart docker"), needs_root=True), kb.NVIDIA_TOOLKIT)


def test_wrong_typed_files_give_a_result() -> None:
    data = make_snapshot(files={"/.dockerenv": ""}, paths=AMDGPU)
    data["files"]["/proc/self/status"] = "\x00\xff" * 1000
    data["files"]["/proc/1/cgroup"] = "::::\n" * 10000
    data["paths"]["/dev/kfd"] = {"type": "char", "gid": "not a number", "mode": "zz"}
    result = run(SnapshotHost(data))
    assert result.status in (Status.PASS, Status.FAIL)


def test_a_container_given_only_dev_kfd_misses_the_render_nodes() -> None:
    dev = char_dev(group="render", gid=109)
    h = host(files={"/.dockerenv": ""}, paths={**AMDGPU, "/dev/kfd": dev}, user=ROOT)
    assert run(h) == expect(
        Status.FAIL, "this Docker container was started without /dev/dri/renderD*",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.info("/dev/kfd: group 109 (render), mode 0660"),
         Finding.error("AMD GPU on the host, but /dev/dri/renderD* is missing in this "
                       "container")],
        Fix(DOCKER_FIX_TEXT), kb.AMD_DOCKER)


def test_only_dev_kfd_blocked_when_the_render_node_is_in_the_video_group() -> None:
    # ROCm-docker#116's user (rocm-user sudo video) with the older layout: renderD128 in
    # video (44), /dev/kfd in the host's render group (993).
    kfd = char_dev(group=None, gid=993, readable=False, writable=False)  # type: ignore[arg-type]
    h = host(files={"/.dockerenv": "", "/proc/self/status": "Gid:\t1000\nGroups:\t27 44 1000\n"},
             paths={**AMDGPU, "/dev/kfd": kfd, "/dev/dri/renderD128": char_dev("video", gid=44)},
             user={"name": "rocm-user", "uid": 1000, "groups": ["rocm-user", "sudo", "video"]})
    assert run(h) == expect(
        Status.FAIL, "this Docker container cannot open /dev/kfd (group 993 not among this "
        "process's groups)",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.info("/dev/kfd: group 993 (no name), mode 0660"),
         Finding.info("/dev/dri/renderD128: group 44 (video), mode 0660"),
         Finding.info("this process's groups (numeric): 27 44 1000")],
        Fix(GID_FIX.format(993)), kb.ROCM_DOCKER_GID)


def test_a_group_id_above_the_overflow_id_is_a_real_group_to_add() -> None:
    # A directory-service group (gids past 65534 are common there) without a user namespace.
    dev = char_dev(group="gpu-users", gid=1234567, readable=False, writable=False)
    h = host(files={"/.dockerenv": "", "/proc/self/status": "Gid:\t1000\nGroups:\t44 1000\n"},
             paths={**AMDGPU, "/dev/kfd": dev, "/dev/dri/renderD128": dev},
             user={"name": "alice", "uid": 1000, "groups": ["alice", "video"]})
    assert run(h) == expect(
        Status.FAIL, "this Docker container cannot open /dev/kfd, /dev/dri/renderD128 (groups "
        "1234567 not among this process's groups)",
        [Finding.info("in a Docker container: /.dockerenv exists"),
         Finding.info("/dev/kfd: group 1234567 (gpu-users), mode 0660"),
         Finding.info("/dev/dri/renderD128: group 1234567 (gpu-users), mode 0660"),
         Finding.info("this process's groups (numeric): 44 1000")],
        Fix(GID_FIX.format(1234567)), kb.ROCM_DOCKER_GID)
