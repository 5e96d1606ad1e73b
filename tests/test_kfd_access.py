"""kfd-access through a strict SnapshotHost: every branch, whole results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.kfd_access import (
    UDEV_COMMANDS,
    GroupEntry,
    KfdAccess,
    parse_etc_group,
)
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.containers import AMD_DOCKER as DOCKER
from rocmdoctor.kb.containers import ROCM_DOCKER_GID, SUDOERS_ENV
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import char_dev, fixture_text, make_snapshot

CHECK = KfdAccess()
ROCM = {"/opt/rocm/.info/version": "6.2.1\n"}
ABSENT = ("/dev/kfd", "/proc/1/cgroup", "/.dockerenv", "/run/.containerenv", "/etc/group",
          "/sys/module/amdgpu", "/proc/driver/nvidia/version", "/dev/nvidiactl",
          # the container fact (rocmdoctor.facts.container)
          "/proc/self/cgroup", "/proc/mounts", "/.singularity.d", "/proc/self/uid_map",
          "/proc/self/status")
ETC_GROUP = "root:x:0:\nvideo:x:44:\nrender:x:110:\nalice:x:1000:\n"
BLOCKED = char_dev(readable=False, writable=False)
USERMOD = Fix("Add your user to the render and video groups, then log in again.",
              ("sudo usermod -aG render,video $USER",), needs_root=True, needs_relogin=True)


def host(paths: dict[str, dict[str, Any]], files: Optional[dict[str, str]] = None,
         user: Optional[dict[str, Any]] = None, kernel: str = "6.8.0-45-generic",
         env: Optional[dict[str, str]] = None) -> SnapshotHost:
    snap = make_snapshot(files={**ROCM, **(files or {})}, paths=paths, user=user,
                         kernel=kernel, env=env)
    return SnapshotHost(snap, strict=True, absent=ABSENT)


def alice(*groups: str) -> dict[str, Any]:
    return {"name": "alice", "uid": 1000, "groups": ["alice", *groups]}


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def from_ls(line: str, can_open: bool, gid: int) -> dict[str, Any]:
    """Stat facts from an `ls -l` line of a character device, as a snapshot records them."""
    fields = line.split()
    perms = fields[0]
    bits = 0
    for i, flag in enumerate(perms[1:10]):
        if flag != "-":
            bits |= 1 << (8 - i)
    return {"type": "char", "mode": format(bits, "04o"), "owner": fields[2], "group": fields[3],
            "uid": 0 if fields[2] == "root" else 65534, "gid": gid, "readable": can_open,
            "writable": can_open, "executable": False}


def session_lines(name: str, prompt_suffix: str) -> list[str]:
    lines = fixture_text(name).splitlines()
    start = next(i for i, x in enumerate(lines) if x.endswith(prompt_suffix))
    return lines[start + 1:]


def test_real_render_member_can_open_kfd() -> None:
    # rocminfo failed with EPERM on this APU, but the permissions were right (ROCm#1176).
    name = "rocminfo-fail-kfd-eperm-gfx902-raven-rocm3.5.txt"
    groups = session_lines(name, "$ groups")[0].split()
    kfd = from_ls(session_lines(name, "$ ll /dev/kfd")[0], can_open=True, gid=109)
    h = host({"/dev/kfd": kfd, "/dev/dri/renderD128": char_dev(gid=109)},
             user={"name": groups[0], "uid": 1000, "groups": groups})
    assert run(h) == expect(Status.PASS, "padonion can open /dev/kfd and 1 render node (group render)")


def test_real_container_root_with_nogroup_device() -> None:
    # ROCm#4043: /dev/kfd showed up as nobody:nogroup 0666 in a cloud container; root may open
    # it, so the EINVAL that rocminfo hit is not a permission problem.
    name = "rocminfo-fail-kfd-einval-container-nogroup-gfx942-rocm6.2.1.txt"
    kfd = from_ls(session_lines(name, "# ls -l /dev/kfd")[0], can_open=True, gid=65534)
    groups = session_lines(name, "# groups root")[0].split(":")[1].split()
    h = host({"/dev/kfd": kfd, "/dev/dri/renderD128": {**kfd, "mode": "0660"}},
             files={"/proc/1/cgroup": "0::/\n", "/.dockerenv": ""},
             user={"name": "root", "uid": 0, "groups": groups})
    assert kfd["mode"] == "0666" and kfd["group"] == "nogroup"
    assert run(h) == expect(Status.PASS, "root can open /dev/kfd and 1 render node (group nogroup)")


def test_several_groups_and_nodes_are_counted() -> None:
    h = host({"/dev/kfd": char_dev(group="video", gid=44), "/dev/dri/renderD128": char_dev(),
              "/dev/dri/renderD129": char_dev()}, user=alice("render", "video"))
    assert run(h) == expect(Status.PASS, "alice can open /dev/kfd and 2 render nodes (groups render, video)")


def test_user_not_in_the_group() -> None:
    h = host({"/dev/kfd": BLOCKED, "/dev/dri/renderD128": char_dev(mode="0666")},
             files={"/etc/group": ETC_GROUP}, user=alice())
    assert run(h) == expect(Status.FAIL, "alice cannot open /dev/kfd (group render, mode 0660)", (
        Finding.error("/dev/kfd: owner root, group render (gid 110), mode 0660"),
        Finding.info("this process's groups: alice"),
    ), USERMOD)


def test_user_added_after_login_must_log_in_again() -> None:
    etc_group = ETC_GROUP.replace("render:x:110:", "render:x:110:bob,alice")
    h = host({"/dev/kfd": BLOCKED, "/dev/dri/renderD128": BLOCKED},
             files={"/etc/group": etc_group}, user=alice("video"))
    assert run(h) == expect(
        Status.FAIL, "alice cannot open /dev/kfd, /dev/dri/renderD128 (group render, mode 0660)", (
            Finding.error("/dev/kfd: owner root, group render (gid 110), mode 0660"),
            Finding.error("/dev/dri/renderD128: owner root, group render (gid 110), mode 0660"),
            Finding.info("this process's groups: alice, video"),
            Finding.hint("/etc/group lists alice in render, but this session does not have the "
                         "group: likely it started before the user was added (a session's groups "
                         "are fixed at login)"),
        ), Fix("Log out and back in (or start a shell that has the group with newgrp render).",
               ("newgrp render",), needs_relogin=True))


def test_custom_group_from_a_udev_rule() -> None:
    dev = char_dev(group="devteam", gid=1500, readable=False, writable=False)
    h = host({"/dev/kfd": dev, "/dev/dri/renderD128": dev}, user=alice())
    assert run(h) == expect(
        Status.FAIL, "alice cannot open /dev/kfd, /dev/dri/renderD128 (group devteam, mode 0660)", (
            Finding.error("/dev/kfd: owner root, group devteam (gid 1500), mode 0660"),
            Finding.error("/dev/dri/renderD128: owner root, group devteam (gid 1500), mode 0660"),
            Finding.info("this process's groups: alice"),
            Finding.info("/etc/group could not be read"),
        ), Fix("Add your user to the devteam group, then log in again.",
               ("sudo usermod -aG devteam $USER",), needs_root=True, needs_relogin=True))


def test_in_the_group_yet_denied_points_at_acl_or_lsm() -> None:
    h = host({"/dev/kfd": BLOCKED, "/dev/dri/renderD128": char_dev()}, user=alice("render"))
    assert run(h) == expect(Status.FAIL, "alice cannot open /dev/kfd (group render, mode 0660)", (
        Finding.error("/dev/kfd: owner root, group render (gid 110), mode 0660"),
        Finding.info("this process's groups: alice, render"),
        Finding.hint("alice is in render and the mode allows the group, yet access is denied: "
                     "possible causes: an ACL or a security module (SELinux, AppArmor) blocks it"),
    ), Fix("Look for an ACL on /dev/kfd and for denials in the kernel log.",
           ("getfacl /dev/kfd", "sudo dmesg | grep -i -E 'denied|apparmor|avc'"), needs_root=True))


def test_mode_without_group_access_needs_a_udev_rule() -> None:
    root_only = char_dev(group="root", gid=0, mode="0600", readable=False, writable=False)
    h = host({"/dev/kfd": root_only, "/dev/dri/renderD128": char_dev()}, user=alice("render"))
    assert run(h) == expect(Status.FAIL, "alice cannot open /dev/kfd (group root, mode 0600)", (
        Finding.error("/dev/kfd: owner root, group root (gid 0), mode 0600"),
        Finding.info("this process's groups: alice, render"),
        Finding.hint("mode 0600 with group root: no group membership opens it"),
    ), Fix("Give the devices to the render group with a udev rule, as ROCm's prerequisites "
           "describe, then log in again.", UDEV_COMMANDS, needs_root=True, needs_relogin=True))


def test_container_with_an_unnamed_group_needs_group_add() -> None:
    # ROCm-docker#116: inside the container `groups` said "cannot find name for group ID 993".
    dev = {**BLOCKED, "group": None, "gid": 993}
    h = host({"/dev/kfd": dev, "/dev/dri/renderD128": dev}, files={"/.dockerenv": ""},
             user={"name": "rocm-user", "uid": 1000, "groups": ["rocm-user", "video"]})
    assert run(h) == expect(
        Status.FAIL, "rocm-user cannot open /dev/kfd, /dev/dri/renderD128 (group gid 993, mode 0660)", (
            Finding.error("/dev/kfd: owner root, group (no name) (gid 993), mode 0660"),
            Finding.error("/dev/dri/renderD128: owner root, group (no name) (gid 993), mode 0660"),
            Finding.info("this process's groups: rocm-user, video"),
            Finding.hint("the device's group has no name in this container: group names do not "
                         "carry over from the host, numeric ids do"),
        ), Fix("Start the container with --group-add 993: `docker run --group-add 993 <image>` "
               "(a group is given by its number, as `ls -ln /dev/kfd /dev/dri/renderD*` on the "
               "host shows it: names differ between host and container)."), ROCM_DOCKER_GID)


NOT_THE_KERNEL = Finding.hint("the container was started without the GPU device nodes; the "
                              "host's driver is not to blame")


def device_flags_fix(tool: str) -> Fix:
    flags = ("--device=/dev/kfd --device=/dev/dri --group-add video --group-add "
             "$(getent group render | cut -d: -f3)")
    return Fix(f"Start the container with {flags}: `{tool} run {flags} <image>` (a group is "
               "given by its number, as `ls -ln /dev/kfd /dev/dri/renderD*` on the host shows "
               "it: names differ between host and container).")


def test_container_without_devices_blames_the_container() -> None:
    # ROCm#1798: "ROCk module is loaded" yet "Unable to open /dev/kfd ... No such file".
    text = fixture_text("container-rocminfo-kfd-no-such-file-in-docker-gfx1030-rx6900xt-rocm5.2-arch-host.txt")
    assert "Unable to open /dev/kfd read-write: No such file or directory" in text
    h = host({}, files={"/run/.containerenv": ""}, env={"container": "podman"})
    assert run(h) == expect(
        Status.FAIL, "/dev/kfd is missing in this Podman container", (NOT_THE_KERNEL,),
        device_flags_fix("podman"), DOCKER)


def test_container_with_kfd_but_no_render_node() -> None:
    h = host({"/dev/kfd": char_dev()}, files={"/proc/1/cgroup": "12:devices:/docker/4f1e\n"})
    assert run(h) == expect(
        Status.FAIL, "/dev/dri/renderD* is missing in this Docker container", (NOT_THE_KERNEL,),
        device_flags_fix("docker"), DOCKER)


def test_root_through_sudo_warns_that_the_user_is_not_tested() -> None:
    # xuhuisheng/rocm-gfx803#2: under sudo another Python and another environment answer.
    text = fixture_text("sudo-python3-uses-system-site-packages-torch-gpu-false-venv-import-error-libmpi-gfx803.txt")
    assert text.startswith("sudo PYTORCH_TEST_WITH_ROCM=1 python3")
    h = host({"/dev/kfd": BLOCKED, "/dev/dri/renderD128": BLOCKED}, env={"SUDO_USER": "user"},
             user={"name": "root", "uid": 0, "groups": ["root"]})
    assert run(h) == expect(
        Status.WARN, "root can open /dev/kfd and 1 render node (group render), but this is root "
        "through sudo: user's access is not tested",
        (Finding.error("running as root through sudo for user: these results describe root, "
                       "who opens /dev/kfd whatever its groups and whose environment sudo "
                       "resets (LD_LIBRARY_PATH is dropped), not user who trains"),),
        Fix("Run rocmdoctor as user, without sudo.", ("rocmdoctor check",)), SUDOERS_ENV)


def test_no_kfd_because_the_driver_is_not_loaded() -> None:
    h = host({})
    assert run(h) == expect(
        Status.FAIL, "/dev/kfd is missing: the amdgpu driver is not loaded",
        (Finding.hint("the amdgpu-driver check says why"),),
        Fix("Load the amdgpu driver.", ("sudo modprobe amdgpu",), needs_root=True))


def test_no_kfd_although_the_driver_is_loaded() -> None:
    h = host({}, files={"/sys/module/amdgpu/initstate": "live\n"})
    assert run(h) == expect(
        Status.FAIL, "/dev/kfd is missing although amdgpu is loaded",
        (Finding.hint("possible causes: the kernel was built without KFD (CONFIG_HSA_AMD), or "
                      "amdgpu set up no GPU for compute"),),
        Fix("The kernel log says why.", ("sudo dmesg | grep -i -E 'kfd|amdgpu'",), needs_root=True))


def test_wsl_and_non_amd_machines_skip() -> None:
    wsl = host({}, kernel="5.15.153.1-microsoft-standard-WSL2")
    assert run(wsl) == expect(Status.SKIP, "WSL2 has no /dev/kfd: ROCm reaches the GPU through /dev/dxg")
    cpu = SnapshotHost(make_snapshot(), strict=True, absent=ABSENT)
    assert run(cpu) == expect(Status.SKIP, "no AMD GPU, amdgpu driver or ROCm install found")


def test_parse_etc_group() -> None:
    assert parse_etc_group("# comment\nrender:x:110:alice, bob\nbad\nodd:x:zz:\n") == {
        "render": GroupEntry("render", 110, ("alice", "bob")),
        "odd": GroupEntry("odd", None, ()),
    }


@given(st.text())
def test_parse_etc_group_never_raises(text: str) -> None:
    parse_etc_group(text)


# --- held by mutation testing (scripts/mutation.sh) ----------------------------------------------

def test_etc_group_lines_without_members_or_too_short() -> None:
    text = "render:x:110\nvideo:x\n#wheel:x:10:\nalice:x:1000:alice,bob\n"
    assert parse_etc_group(text) == {"render": GroupEntry("render", 110, ()),
                                     "alice": GroupEntry("alice", 1000, ("alice", "bob"))}


def test_no_name_hint_only_for_a_group_without_a_name_here() -> None:
    hint = Finding.hint("the device's group has no name in this container: group names do not "
                        "carry over from the host, numeric ids do")
    for group, hinted in (("nogroup", True), ("video", False), ("render", False)):
        dev = {**BLOCKED, "group": group, "gid": 993}
        h = host({"/dev/kfd": dev, "/dev/dri/renderD128": dev}, files={"/.dockerenv": ""},
                 user={"name": "rocm-user", "uid": 1000, "groups": ["rocm-user"]})
        assert (hint in run(h).findings) is hinted, group


def test_the_first_blocked_device_decides_the_summary_and_the_fix() -> None:
    video_only = char_dev(group="video", mode="0600", readable=False, writable=False, gid=44)
    h = host({"/dev/kfd": BLOCKED, "/dev/dri/renderD128": video_only},
             files={"/etc/group": ETC_GROUP}, user=alice())
    result = run(h)
    assert result.summary == ("alice cannot open /dev/kfd, /dev/dri/renderD128 (group render, "
                              "mode 0660)")
    assert result.fix == USERMOD
