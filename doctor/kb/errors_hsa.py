"""The HSA runtime and KFD: opening /dev/kfd, rocminfo's failures, the driver not loaded,
containers without the devices or the groups, visibility masks and HSA_OVERRIDE_GFX_VERSION.
`threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import (
    DOCKER_ROCM,
    KFD_NODES,
    ROCM_DOCKER,
    ROCM_PREREQUISITES,
)
from rocmdoctor.kb.messages import DMESG_AMDGPU, KnownMessage, Variant

ROCM_4043 = "https://github.com/ROCm/ROCm/issues/4043"
ROCM_1498 = "https://github.com/ROCm/ROCm/issues/1498"
AMDSMI_172 = "https://github.com/ROCm/amdsmi/issues/172"
ROCM_1080 = "https://github.com/ROCm/ROCm/issues/1080"
ROCM_1211 = "https://github.com/ROCm/ROCm/issues/1211"
ROCM_3144 = "https://github.com/ROCm/ROCm/issues/3144"
ROCMINFO = ("https://github.com/ROCm/rocminfo/blob/c6f7a17c85e0cdd75bf062e7a3490e831c87eb94/"
            "rocminfo.cc")
ROCMINFO_NO_LSMOD = ("https://github.com/ROCm/rocminfo/commit/"
                     "94b4b3f0a66eb70912177ca7076b4267f8b5449b")
ROCMINFO_41 = "https://github.com/ROCm/rocminfo/issues/41"
ODYSSEUS_515 = "https://github.com/odysseus-dev/odysseus/pull/515"
ROCR_HSA_INIT = "https://github.com/ROCm/clr/blob/develop/rocclr/device/rocm/rocdevice.cpp"
TORCH_140398 = "https://github.com/pytorch/pytorch/pull/140398"
SWARMUI_566 = "https://github.com/mcmonkeyprojects/SwarmUI/issues/566"
OLLAMA_GPU = "https://github.com/ollama/ollama/blob/main/docs/gpu.md#overrides"
COMPOSE_ENV = "https://docs.docker.com/reference/compose-file/services/#environment"

_GROUPS = "sudo usermod -aG render,video $USER"
_GROUP_ADD = ("docker run --device=/dev/kfd --device=/dev/dri --group-add $(stat -c %g "
              "/dev/kfd) --group-add $(stat -c %g /dev/dri/renderD128) <image>")
_CONTAINER_GROUPS = ("Inside a container the host's group membership does not count: start it "
                     "with the devices and with the numeric groups that own them on the host "
                     "(the names may differ inside the image).")
# The failures a visibility mask turns into: no device at all.
_NO_DEVICE = (r"No HIP GPUs are available", r"No CUDA GPUs are available",
              r"no ROCm-capable device is detected", r"no CUDA-capable device is detected",
              r"hipErrorNoDevice", r"is_available\(\)\)?\"?\s*\n\s*False",
              r"CUDA AVAILABLE:\s*\n\s*False", r"Is CUDA available: False")

HSA_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "kfd-permission", "Permission denied on /dev/kfd", "error",
        (r"Unable to open /dev/kfd read-write: Permission denied",
         r"\bopen\w*\b[^\n]*/dev/kfd[^\n]*Permission denied",
         r"is not member of \"\w+\" group, the default DRM access group"),
        "Your user may not open /dev/kfd: it is not in the group that owns the device "
        "(render, or video on older systems).",
        "Add your user to the render and video groups, then log out and in again.",
        "kfd-access", ROCM_PREREQUISITES, commands=(_GROUPS,),
        needs_root=True, needs_relogin=True, context="user_groups",
        container_fix=_CONTAINER_GROUPS, container_commands=(KFD_NODES, _GROUP_ADD),
        # podman's troubleshooting.md, "Passed-in devices or files can't be accessed in
        # rootless container": the OCI runtime's setgroups(2) drops the user's groups
        # (https://github.com/containers/podman/blob/main/troubleshooting.md); in
        # ROCm/legacy-rocm-build issue 1549 a buildah user mapped the GIDs in /etc/subgid.
        variants=(Variant(
            "rootless_engine", "In a rootless container your groups are not in the user "
            "namespace, so --group-add does not help: with podman and crun keep them with "
            "--group-add keep-groups; otherwise map the host's render and video GIDs into "
            "the namespace in /etc/subgid and make those groups inside the container.",
            ("getent group render video", "podman run --group-add keep-groups "
             "--device /dev/kfd --device /dev/dri <image>", "cat /etc/subgid"),
            "The paste shows a rootless engine (podman or buildah): its runtime drops your "
            "supplementary groups when the container starts (podman troubleshooting, "
            "\"Passed-in devices or files can't be accessed in rootless container\")."),),
        yields_to=("container-kfd-groups", "kfd-root-only"), threads=18),
    KnownMessage(
        "kfd-root-only", "/dev/kfd readable by root only", "error",
        (r"crw------- +1 root +root [^\n]*\bkfd\b",),
        "/dev/kfd belongs to root with mode 0600: no udev rule gave it to a group, as with a "
        "mainline kernel driver installed without AMD's packages (ROCT-Thunk-Interface issue "
        "36, maintainer).",
        "Add a udev rule that gives /dev/kfd to the render group, reload the rules, and add "
        "your user to that group.", "kfd-access",
        "https://github.com/ROCm/ROCT-Thunk-Interface/issues/36",
        commands=("echo 'KERNEL==\"kfd\", GROUP=\"render\", MODE=\"0660\"' | sudo tee "
                  "/etc/udev/rules.d/70-kfd.rules",
                  "sudo udevadm control --reload-rules && sudo udevadm trigger", _GROUPS),
        needs_root=True, needs_relogin=True, threads=2),
    KnownMessage(
        "kfd-open", "Unable to open /dev/kfd", "error",
        (r"Unable to open /dev/kfd", r"/dev/kfd.*(No such file|Invalid argument)"),
        "/dev/kfd is missing (the amdgpu driver is not loaded, or a container was started "
        "without it) or was not passed into the container properly (Invalid argument: "
        "inside it the device belongs to nobody:nogroup, ROCm issue 4043).",
        "On the host, check the device and the driver; start containers with "
        "--device /dev/kfd --device /dev/dri --group-add video.",
        "kfd-access", ROCM_4043, commands=(KFD_NODES, DMESG_AMDGPU),
        needs_root=True,
        unless=(r"Permission denied", r"Cannot allocate memory", r"Operation not permitted",
                r"error gathering device information"),
        container_fix="Start the container with the devices and the host's numeric groups "
                      "(ls -ln on the host shows them); inside, /dev/kfd must not be "
                      "nobody:nogroup.", container_commands=(KFD_NODES, _GROUP_ADD)),
    KnownMessage(
        "kfd-enomem", "Unable to open /dev/kfd: Cannot allocate memory", "error",
        (r"Unable to open /dev/kfd read-write: Cannot allocate memory",
         r"openat\([^\n]*\"/dev/kfd\"[^\n]*= -1 ENOMEM"),
        "The driver refused to open the compute device although the permissions are right "
        "(root, crw-rw-rw-: rocminfo issue 41): KFD did not bring up any GPU. The kernel log "
        "says why: a GPU KFD does not support ('not supported in kfd'), a PCIe path without "
        "atomics ('PCI rejects atomics'), or a device that failed to initialise.",
        "Read KFD's lines in the kernel log; for more detail run rocminfo once with "
        "HSAKMT_DEBUG_LEVEL=7.", "gpu-agents", ROCMINFO_41,
        commands=("sudo dmesg | grep -i kfd", "HSAKMT_DEBUG_LEVEL=7 rocminfo"),
        needs_root=True, yields_to=("kfd-unsupported-gpu", "kfd-not-supported",
                                    "kfd-pci-rejects-atomics"), threads=3),
    KnownMessage(
        "kfd-eperm", "Unable to open /dev/kfd: Operation not permitted", "error",
        (r"Unable to open /dev/kfd read-write: Operation not permitted",),
        "The kernel refused the open with EPERM although the groups may be right: in ROCm "
        "issue 1211 the DKMS driver package had failed to install (the maintainer advised a "
        "clean reinstall); inside containers a device cgroup rule or seccomp denies it.",
        "Check that the driver package installed and the module is the one loaded; reinstall "
        "it cleanly if its post-install step failed.", "amdgpu-driver", ROCM_1211,
        commands=("dkms status", "lsmod | grep amdgpu", KFD_NODES),
        container_fix="Start the container with the devices passed explicitly and the "
                      "seccomp profile ROCm's guide uses.", container_commands=(DOCKER_ROCM,),
        yields_to=("dkms-build-failed",), threads=1),
    KnownMessage(
        "rocminfo-out-of-resources", "rocminfo: HSA_STATUS_ERROR_OUT_OF_RESOURCES / 4104",
        "error",
        (r"Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES", r"Call returned 4104\b"),
        "rocminfo could not initialise the runtime. ROCr reports a GPU it may not open as "
        "OUT_OF_RESOURCES (4104 = 0x1008), so the usual cause is permissions: /dev/kfd "
        "belongs to render while the user is only in video (ROCm issue 1080: it works as "
        "root; old rocminfo checked only the video group). Unsupported GPUs and APUs fail "
        "the same way.",
        "If it works as root, add your user to the render and video groups and log in again; "
        "if not, read KFD's lines in the kernel log.", "kfd-access", ROCM_1080,
        commands=(KFD_NODES, "groups", _GROUPS, "sudo dmesg | grep -i kfd"), needs_root=True,
        needs_relogin=True, context="user_groups",
        container_fix=_CONTAINER_GROUPS + " Old docker releases also lost device permissions "
                      "for non-root users (ROCm-docker issue 36, maintainer: fixed in newer "
                      "docker).",
        container_commands=(KFD_NODES, _GROUP_ADD, "docker version --format '{{.Server.Version}}'"),
        # Under WSL there is no /dev/kfd: ROCr reaches the GPU through the Windows driver
        # (/dev/dxg), and only the distributions, ROCm releases and GPUs of AMD's WSL
        # compatibility table work (ROCm issues 3561 and 5106, AMD: "this configuration is
        # unsupported", "ROCm 6.4.2 does not have WSL support").
        wsl_fix="Under WSL, rocminfo fails this way when the distribution, the ROCm release or "
                "the GPU is not one of AMD's WSL compatibility table: install the ROCm release "
                "AMD's WSL guide names (with its amdgpu-install --usecase=wsl), on the Ubuntu "
                "release it names, for a GPU it lists, and the Windows Adrenalin driver it "
                "pairs with.",
        wsl_commands=("cat /etc/os-release", "ls -l /dev/dxg", "cat /opt/rocm/.info/version"),
        yields_to=("kfd-permission", "kfd-enomem", "kfd-eperm", "kfd-open", "rock-not-loaded",
                   "rocm-on-nvidia", "container-no-lsmod", "container-kfd-groups",
                   "kfd-unsupported-gpu", "kfd-not-supported", "kfd-pci-rejects-atomics",
                   "hsa-queue-out-of-resources"),
        threads=18),
    KnownMessage(
        "rock-not-loaded", "ROCk module is NOT loaded", "error",
        (r"ROCk module is NOT (loaded|live)",),
        "The amdgpu kernel driver is not loaded or not initialized: no AMD GPU is attached to "
        "this machine or VM, the driver is blacklisted, or it failed to load (ROCm issue 1498: "
        "an Azure NVv4 VM's MI25 was never bound to amdgpu). rocminfo also says it where its "
        "own check cannot see the driver: under WSL, which has no amdgpu module, and (before "
        "rocminfo's fix of issue 42) with amdgpu built into the kernel.",
        "Load the driver, then read the kernel log for why it did not load.",
        "amdgpu-driver", ROCM_1498, commands=("sudo modprobe amdgpu", "sudo dmesg | grep -i "
                                                                      "amdgpu"),
        needs_root=True,
        container_fix="The driver is the host's: check it there (lsmod | grep amdgpu, "
                      "rocminfo on the host); inside the container only the devices are "
                      "passed.", container_commands=("cat /sys/module/amdgpu/initstate",),
        # rocminfo's check (lsmod, later /sys/module/amdgpu) cannot see a driver WSL does not
        # have (the GPU is reached through /dev/dxg) nor, before rocminfo's fix of issue 42,
        # an amdgpu built into the kernel: the resolver asks WSL and this machine's module
        wsl_fix="WSL has no amdgpu module, so a rocminfo that looks for one always says this: "
                "ROCm under WSL works only with the ROCm release AMD's WSL guide names "
                "(installed with its amdgpu-install --usecase=wsl), on the Ubuntu release it "
                "names, for a GPU it lists; older releases have no WSL support.",
        wsl_commands=("cat /opt/rocm/.info/version", "ls -l /dev/dxg", "cat /etc/os-release"),
        context="rock_check", yields_to=("container-no-lsmod", "rocm-on-nvidia"), threads=7),
    KnownMessage(
        # amd-smi (and rocm-smi before it) decide the driver is loaded by reading
        # /sys/module/amdgpu/initstate: missing where the driver is not loaded, but also under
        # WSL (no amdgpu module: AMD, amdsmi issue 75, amd-smi is not supported there) and
        # with amdgpu built into the kernel (amdsmi issue 172, fixed by rocm-systems pull
        # 2689). Which one it is, the text or the machine says (resolver smi_driver).
        "smi-driver-check", "amd-smi: driver not initialized (amdgpu not found in modules)",
        "error",
        (r"(?i:driver not initialized) \(amdgpu not found in modules\)",),
        "amd-smi (rocm-smi too) checks the driver by reading /sys/module/amdgpu/initstate. It "
        "is missing when amdgpu is not loaded, but also where the tool cannot see the module: "
        "under WSL, where there is no amdgpu module (the GPU is reached through /dev/dxg and "
        "amd-smi is not supported), and with amdgpu built into the kernel (an amd-smi bug, "
        "amdsmi issue 172).",
        "Ask rocminfo: if it lists the GPU, the driver works and only amd-smi's check is wrong "
        "(update amd-smi where amdgpu is built into the kernel); if it lists none, load "
        "amdgpu and read the kernel log for why it did not load.", "amdgpu-driver",
        AMDSMI_172, commands=("rocminfo | grep -i gfx", "cat /sys/module/amdgpu/initstate",
                              "grep CONFIG_DRM_AMDGPU= /boot/config-$(uname -r)"),
        wsl_fix="Under WSL amd-smi is not supported and this is expected: there is no amdgpu "
                "module, ROCm reaches the GPU through /dev/dxg. Check the GPU with rocminfo.",
        wsl_commands=("rocminfo | grep -i gfx", "ls -l /dev/dxg"),
        yields_to=("rock-not-loaded", "container-no-lsmod", "rocm-on-nvidia"),
        context="smi_driver", threads=2),
    KnownMessage(
        "container-no-lsmod", "ROCk module is NOT loaded (lsmod missing in the image)", "error",
        (r"ROCk module is NOT loaded",),
        "rocminfo before late 2022 asked `lsmod | grep amdgpu` whether the driver is loaded; "
        "in an image without lsmod ('lsmod: not found') it always says 'NOT loaded', whatever "
        "the host runs (rocminfo fixed this by reading /sys/module/amdgpu). The message says "
        "nothing about the driver; a GPU missing from rocminfo's agents means the devices or "
        "groups did not reach the container.",
        "Ignore that line; start the container with the devices and groups, and use a newer "
        "rocminfo (or install kmod in the image).", "kfd-access", ROCMINFO_NO_LSMOD,
        commands=(KFD_NODES, DOCKER_ROCM), requires=("lsmod_missing",), threads=2),
    KnownMessage(
        "container-kfd-groups", "Failed to get user name to check for video group membership",
        "error",
        (r"Failed to get user name to check for \w+ group membership",
         r"Failed to find pwd entry for user"),
        "rocminfo runs as a user the container's /etc/passwd does not know (a numeric --user, "
        "a rootless container), so it cannot check groups, and the host's membership in "
        "render/video does not apply inside: /dev/kfd opens only if the container was given "
        "the owning groups.",
        _CONTAINER_GROUPS, "kfd-access", ROCM_DOCKER,
        commands=(KFD_NODES, "id", _GROUP_ADD),
        yields_to=("kfd-open", "kfd-unsupported-gpu", "kfd-not-supported"), threads=3),
    KnownMessage(
        # runc resolves --group-add / compose's group_add names in the image's /etc/group
        # ("unable to find group render: no matching entries in group file"); an image without
        # a render group (older Ubuntu bases) refuses to start: odysseus pull 515 (merged)
        # passes the host's numeric GID instead
        "container-group-name-missing", "Unable to find group render (in the image)", "error",
        (r"(?i:unable to find group) (?:render|video)\b",),
        "The container was started with a GPU group by name (--group-add render, compose's "
        "group_add), and the image has no group of that name: names are looked up in the "
        "image's /etc/group, not the host's.",
        "Pass the numeric IDs of the groups that own the devices on the host.", "kfd-access",
        ODYSSEUS_515, commands=(KFD_NODES, _GROUP_ADD), threads=1),
    KnownMessage(
        "hsa-init-failed", "hsa_init failed with 1008", "error",
        (r"hsa_init failed with 1008", r"hsa_init failed with 0x1008"),
        "The HSA runtime could not start (0x1008 = HSA_STATUS_ERROR_OUT_OF_RESOURCES): it "
        "could not open the GPU. Seen in containers without the devices or groups, with "
        "rootless podman given a single renderD node (ROCm issue 3144), and from a compose "
        "file whose image worked with `docker run` (ollama issue 6685, unresolved there).",
        "Give the process /dev/kfd and the render node with the owning groups; run rocminfo "
        "in the same environment to confirm.", "kfd-access", ROCR_HSA_INIT,
        commands=(KFD_NODES, "rocminfo | head"),
        container_fix="Pass /dev/kfd and all of /dev/dri with the host's numeric groups; "
                      "rootless podman failed with a single renderD (ROCm issue 3144).",
        container_commands=(KFD_NODES, _GROUP_ADD), threads=3),
    KnownMessage(
        "visible-devices-both-set", "ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES both set",
        "error",
        (r"HIP_VISIBLE_DEVICES=\S", *_NO_DEVICE),
        "ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES are applied one after the other: HIP "
        "numbers only the GPUs ROCR left, from 0. Setting both to the same index (or ROCR to "
        "one GPU and HIP to 1) hides every GPU (SwarmUI issue 566; the ollama runner in "
        "ollama issue 10421 set exactly that).",
        "Set only ROCR_VISIBLE_DEVICES (an index or the GPU's UUID from rocminfo), or only "
        "HIP_VISIBLE_DEVICES, not both.", "visible-devices", SWARMUI_566,
        commands=("unset HIP_VISIBLE_DEVICES", "rocminfo | grep -E 'Uuid|Marketing'"),
        requires=("both_masks",), context="masks", threads=3),
    KnownMessage(
        "visible-devices-mask", "A visibility mask hides the GPU", "error",
        _NO_DEVICE,
        "A visibility mask is set and the process sees no GPU: the mask names an index or "
        "UUID that does not exist here (`export CUDA_VISIBLE_DEVICES=2` on a one-GPU "
        "machine), or it was set after torch initialised the GPU.",
        "Unset the mask or set it to an index that exists, before torch is imported; inside "
        "a container or a pod the runtime already numbers its GPUs from 0.",
        "visible-devices", "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars",
        commands=("env | grep VISIBLE_DEVICES",), requires=("mask_set",), context="masks",
        yields_to=("visible-devices-both-set",), threads=14),
    KnownMessage(
        "rocr-visible-devices-count", "torch counts GPUs ROCR_VISIBLE_DEVICES hides", "error",
        (r"ROCR_VISIBLE_DEVICES=\S+[^\n]*\n(?:[^\n]*\n){0,12}?[^\n]*get_device_properties",),
        "torch 2.5 counted GPUs through amd-smi, which ignores ROCR_VISIBLE_DEVICES, so "
        "device_count() reported GPUs the process cannot use and get_device_properties "
        "failed on them (fixed by pytorch pull 140398).",
        "Upgrade torch to 2.6 or newer, or select GPUs with HIP_VISIBLE_DEVICES instead.",
        "visible-devices", TORCH_140398,
        commands=('python -c "import torch; print(torch.__version__, torch.cuda.device_count())"',),
        threads=1),
    KnownMessage(
        "gfx-override-format", "HSA_OVERRIDE_GFX_VERSION set to a gfx name", "error",
        (r"HSA_OVERRIDE_GFX_VERSION\s*[=:]\s*[\"']?gfx[0-9a-f]+",),
        "HSA_OVERRIDE_GFX_VERSION takes a version number, major.minor.stepping (11.0.2 for "
        "gfx1102), not a gfx name; the runtime cannot use 'gfx1102', and ollama skips its "
        "compatibility check and finds no usable GPU.",
        "Write the number; and only for a GPU that no build supports.", "gfx-override",
        OLLAMA_GPU, context="override_format", threads=1),
    KnownMessage(
        "gfx-override-quoted", "HSA_OVERRIDE_GFX_VERSION with quotes in compose list syntax",
        "error",
        (r"^\s*-\s*HSA_OVERRIDE_GFX_VERSION=[\"'][\d.]+[\"']",),
        "In compose's list syntax (`- NAME=value`) the whole item is the value, quotes "
        "included, so the runtime gets '\"10.3.0\"' and rejects it, while the shell strips "
        "them from `docker run -e` (in ollama issue 6685, unresolved, the same image worked "
        "with docker run and failed from compose).",
        "Drop the quotes in the list item, or use the mapping syntax.", "gfx-override",
        COMPOSE_ENV, commands=("- HSA_OVERRIDE_GFX_VERSION=10.3.0",)),
)
