"""General fixes found while reading the seventh collection's remaining misses and the eighth
collection (docs/explain.md), each read from its real text and from the same text with the
one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import explain_text
from tests.helpers import fixture_text

WSL_UNAME = "\nLinux DESKTOP-1 5.15.153.1-microsoft-standard-WSL2 #1 SMP x86_64\n"


def paste(name: str) -> str:
    return fixture_text("errors/" + name)


ROOTLESS = paste("c7-rootless-container--kfd-permission-buildah-subgid.txt")


def test_kfd_refused_in_a_rootless_engine_keeps_the_groups_not_adds_them() -> None:
    [e] = explain_text(ROOTLESS, None)
    assert e.key == "kfd-permission"
    assert "--group-add keep-groups" in e.fix.text and "/etc/subgid" in e.fix.text
    assert "podman run --group-add keep-groups --device /dev/kfd --device /dev/dri <image>" \
        in e.fix.commands
    # the same refusal without a rootless engine in sight: the groups of the user
    plain = "\n".join(ln for ln in ROOTLESS.splitlines()
                      if "buildah" not in ln and "podman" not in ln)
    [e] = explain_text(plain, None)
    assert e.key == "kfd-permission" and "keep-groups" not in e.fix.text
    assert e.fix.text.startswith("Add your user to the render and video groups")


NO_KFD = paste("c7-wsl-docker--no-dev-kfd-use-dxg.txt")


def test_docker_without_dev_kfd_under_wsl_passes_dev_dxg() -> None:
    [e] = explain_text(NO_KFD + WSL_UNAME, None)
    assert (e.key, e.environment) == ("container-no-dev-kfd", "wsl")
    assert "--device=/dev/dxg" in e.fix.text
    run = [c for c in e.fix.commands if c.startswith("docker run")]
    assert run == ["docker run -it --device=/dev/dxg -v /usr/lib/wsl/lib/libdxcore.so:"
                   "/usr/lib/libdxcore.so -v /opt/rocm/lib/librocdxg.so:/usr/lib/librocdxg.so "
                   "--cap-add=SYS_PTRACE --security-opt seccomp=unconfined --ipc=host "
                   "--shm-size 8G rocm/pytorch:latest"]
    # on a Linux docker host it is the driver that gives /dev/kfd
    [e] = explain_text(NO_KFD, None)
    assert "/dev/dxg" not in e.fix.text and "sudo modprobe amdgpu" in e.fix.commands
