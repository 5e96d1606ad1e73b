"""Facts several checks share, computed once per host (Host.memo)."""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amdgpu_module import module_present

# The container facts live in facts/container.py; container_signals stays importable here.
from rocmdoctor.facts.container import container_signals as container_signals
from rocmdoctor.facts.container import kfd_device
from rocmdoctor.host import Host

AMD_PCI_VENDOR = "0x1002"
NVIDIA_PCI_VENDOR = "0x10de"
# PCI class codes of display controllers (0x03xxxx) and processing accelerators (0x12xxxx).
GPU_PCI_CLASSES = ("0x03", "0x12")
KERNEL_VERSION_FILE = "/proc/version"


def _pci_gpu_vendors(host: Host) -> set[str]:
    vendors: set[str] = set()
    for dev in host.glob("/sys/bus/pci/devices/*"):
        cls = (host.read_file(dev + "/class") or "").strip()
        if not cls.startswith(GPU_PCI_CLASSES):
            continue
        vendors.add((host.read_file(dev + "/vendor") or "").strip().lower())
    return vendors


def rocm_roots(host: Host) -> list[str]:
    """Folders that hold a ROCm install (/opt/rocm, /opt/rocm-X.Y.Z, $ROCM_PATH)."""

    def compute() -> list[str]:
        roots = set(host.glob("/opt/rocm")) | set(host.glob("/opt/rocm-*"))
        for var in ("ROCM_PATH", "ROCM_HOME"):
            # Only an absolute folder below / counts: an empty or blank value (ROCM_PATH=
            # in a job script), a relative one or / itself names no install.
            env_root = (host.env.get(var) or "").strip().rstrip("/")
            if env_root.startswith("/"):
                if host.exists(env_root):
                    roots.add(env_root)
                break
        return sorted(roots)

    return host.memo("facts:rocm_roots", compute)


def amd_signals(host: Host) -> list[str]:
    """Why this machine counts as an AMD/ROCm machine (empty when it does not)."""

    def compute() -> list[str]:
        signals = []
        if AMD_PCI_VENDOR in _pci_gpu_vendors(host):
            signals.append("an AMD GPU on the PCI bus")
        if module_present(host):
            signals.append("the amdgpu driver is loaded")
        if kfd_device(host) is not None:
            signals.append("/dev/kfd exists")
        if rocm_roots(host):
            signals.append("ROCm is installed")
        return signals

    return host.memo("facts:amd_signals", compute)


def nvidia_signals(host: Host) -> list[str]:
    def compute() -> list[str]:
        signals = []
        if NVIDIA_PCI_VENDOR in _pci_gpu_vendors(host):
            signals.append("an NVIDIA GPU on the PCI bus")
        if host.exists("/proc/driver/nvidia/version"):
            signals.append("the NVIDIA driver is loaded")
        if host.exists("/dev/nvidiactl"):
            signals.append("/dev/nvidiactl exists")
        return signals

    return host.memo("facts:nvidia_signals", compute)


def gpu_vendors(host: Host) -> set[str]:
    """"amd" and/or "nvidia": the GPUs the hardware and the host's driver show (PCI devices,
    a loaded driver), which a container sees even when its device nodes were not passed in."""

    def compute() -> set[str]:
        vendors = _pci_gpu_vendors(host)
        found = set()
        if AMD_PCI_VENDOR in vendors or module_present(host):
            found.add("amd")
        if NVIDIA_PCI_VENDOR in vendors or host.exists("/proc/driver/nvidia/version"):
            found.add("nvidia")
        return found

    return host.memo("facts:gpu_vendors", compute)


def platform_kind(host: Host) -> str:
    """`rocm`, `cuda` or `cpu`, as the check JSON contract defines them."""
    if amd_signals(host):
        return "rocm"
    if nvidia_signals(host):
        return "cuda"
    return "cpu"


def not_rocm_reason(host: Host) -> Optional[str]:
    """None on a ROCm machine; otherwise the skip reason for an AMD-only check."""
    kind = platform_kind(host)
    if kind == "rocm":
        return None
    if kind == "cuda":
        return "not an AMD machine (NVIDIA GPU found)"
    return "no AMD GPU, amdgpu driver or ROCm install found"


def uname_release(host: Host) -> str:
    """The running kernel's release as uname(2) gives it (`uname -r`; "" when not known)."""
    return host.platform.kernel_release


def proc_version(host: Host) -> str:
    """/proc/version ("Linux version 6.8.0-45-generic ..."; "" when unreadable), read once."""
    return host.memo("facts:proc_version", lambda: host.read_file(KERNEL_VERSION_FILE) or "")


def is_wsl(host: Host) -> bool:
    """WSL2 kernels are named like 5.15.153.1-microsoft-standard-WSL2."""
    release = uname_release(host).lower()
    return "microsoft" in release or "wsl" in release


def kernel_release(host: Host) -> str:
    """`uname -r`, else the release /proc/version names, else "unknown"."""
    if uname_release(host):
        return uname_release(host)
    words = proc_version(host).split()
    return words[2] if words[:2] == ["Linux", "version"] and len(words) > 2 else "unknown"
