"""The torch probe's answer as one typed `TorchInfo`, read in one place.

The probe child (rocmdoctor.host.probe_child) reports a dict (the snapshot contract's
`python` section); this module is its only reader. Every field is type-checked here, so a
snapshot with a wrong-typed field gives a null fact, never a crashed check.

By hand: `python -c "import torch; print(torch.__version__, torch.version.hip,
torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_arch_list())"`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.host import Host
from rocmdoctor.kb import torch_wheels as wheels

BUILD_NAMES = {"rocm": "ROCm", "cuda": "CUDA", "cpu": "CPU"}
_RELEASE = re.compile(r"\s*v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?")


def release_of(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """(2, 5, 1) from "2.5.1+rocm6.2", (6, 2) from "6.2.41133-dd7f95766"; None when the text
    has no leading major.minor."""
    m = _RELEASE.match(text or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if (isinstance(value, str) and value.strip().isascii() and value.strip().isdigit()
            and len(value.strip()) < 20):
        return int(value)
    return None


def _bool(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class Smoke:
    """The matmul/conv2d check on one device: ok is None when it did not run."""

    ok: Optional[bool]
    error: Optional[str] = None

    @classmethod
    def of(cls, value: Any) -> Optional[Smoke]:
        if not isinstance(value, Mapping):
            return None
        return cls(_bool(value.get("ok")), _text(value.get("error")))


@dataclass(frozen=True)
class TorchDevice:
    index: int
    name: str
    arch: Optional[str]  # gcnArchName on ROCm (may carry :sramecc+:xnack-), sm_XY on CUDA
    total_memory: Optional[int] = None
    cuda_capability: Optional[tuple[int, int]] = None
    multi_processor_count: Optional[int] = None
    uuid: Optional[str] = None
    smoke: Optional[Smoke] = None

    @classmethod
    def of(cls, value: Mapping[str, Any], position: int) -> TorchDevice:
        cap = value.get("cuda_capability")
        capability = None
        if isinstance(cap, (list, tuple)) and len(cap) == 2:
            major, minor = _int(cap[0]), _int(cap[1])
            if major is not None and minor is not None:
                capability = (major, minor)
        index = _int(value.get("index"))
        return cls(index if index is not None else position, _text(value.get("name")) or "?",
                   _text(value.get("arch")), _int(value.get("total_memory")), capability,
                   _int(value.get("multi_processor_count")), _text(value.get("uuid")),
                   Smoke.of(value.get("smoke")))


@dataclass(frozen=True)
class TorchInfo:
    """What the Python that trains has: its torch (imported or not), packages and devices."""

    probed: bool  # the probe ran (its result may still say torch does not import)
    executable: Optional[str] = None
    python_version: Optional[str] = None
    python_platform: Optional[str] = None  # platform.platform()
    cpu_count: Optional[int] = None  # the CPUs the process may run on
    libc: Optional[str] = None  # "glibc-2.35"
    packages: Mapping[str, str] = field(default_factory=dict)
    imported: bool = False
    error: Optional[str] = None  # the import error, or why the probe failed
    failed_stage: Optional[str] = None
    version: Optional[str] = None  # torch.__version__ (only when imported)
    location: Optional[str] = None
    hip: Optional[str] = None
    cuda: Optional[str] = None
    available: Optional[bool] = None
    device_count: int = 0
    arch_list: tuple[str, ...] = ()
    devices: tuple[TorchDevice, ...] = ()
    bundles_rocm: Optional[bool] = None
    hip_runtime: Optional[str] = None
    miopen: Optional[str] = None
    cudnn_version: Optional[int] = None
    xnnpack: Optional[bool] = None
    num_threads: Optional[int] = None  # torch.get_num_threads()
    debug: Optional[bool] = None  # torch.version.debug
    # The probe process itself: its exit status, whether it was cut off, an error on exit.
    returncode: int = 0
    timed_out: bool = False
    exit_error: Optional[str] = None
    # The program named as the Python ran, but is not a Python interpreter (probe.not_python).
    not_python: bool = False

    @property
    def package(self) -> Optional[str]:
        """torch's version as pip's metadata says (present even when it does not import)."""
        return self.packages.get("torch")

    @property
    def any_version(self) -> Optional[str]:
        return self.version or self.package

    @property
    def build(self) -> Optional[str]:
        """"rocm", "cuda" or "cpu": from the imported torch, else from the wheel's local tag."""
        if self.imported:
            return "rocm" if self.hip else "cuda" if self.cuda else "cpu"
        return build_of_version(self.package)

    @property
    def release(self) -> Optional[tuple[int, ...]]:
        """torch's release, (2, 5, 1); None when unknown."""
        return release_of(self.any_version)

    @property
    def public_version(self) -> str:
        """"2.5.1" from "2.5.1+rocm6.2"; "unknown" when there is no version at all."""
        return (self.any_version or "").partition("+")[0] or "unknown"

    @property
    def rocm_release(self) -> Optional[tuple[int, ...]]:
        """The ROCm torch was built against: from torch.version.hip, else the wheel's tag."""
        local = (self.any_version or "").partition("+")[2]
        return release_of(self.hip) or (release_of(local[4:]) if local.startswith("rocm")
                                        else None)

    @property
    def interpreter(self) -> str:
        return self.executable or "this Python"

    @property
    def crashed(self) -> bool:
        """The probe hung or was killed (not an import error)."""
        return self.timed_out or self.returncode < 0

    @property
    def could_not_run(self) -> bool:
        """The interpreter itself could not be started."""
        return self.returncode in (126, 127) and bool(self.error) and str(
            self.error).startswith("cannot run ")

    # The pip-installed ROCm SDK's package folders (probe `rocm_sdk`, found without import).
    rocm_sdk_core: Optional[str] = None  # site-packages/_rocm_sdk_core
    rocm_sdk_devel: Optional[str] = None  # site-packages/_rocm_sdk_devel (rocm[devel])

    @property
    def rocm_sdk_root(self) -> Optional[str]:
        """What `rocm-sdk path --root` prints: the devel package's folder, else the core's."""
        return self.rocm_sdk_devel or self.rocm_sdk_core


def build_of_version(package_version: Optional[str]) -> Optional[str]:
    """The build a wheel's version names: 2.5.1+rocm6.2 -> rocm, +cu124 -> cuda, +cpu."""
    if not package_version:
        return None
    _, local = wheels.split_local(package_version)
    for prefix, kind in (("rocm", "rocm"), ("cu", "cuda"), ("cpu", "cpu")):
        if local.startswith(prefix):
            return kind
    return None


def torch_info_of(probe: Any) -> TorchInfo:
    """A TorchInfo from the probe's dict (None: the probe was not run). Never raises."""
    if not isinstance(probe, Mapping):
        return TorchInfo(probed=False)
    torch = _map(probe.get("torch"))
    meta = _map(probe.get("probe"))
    packages = {str(k): v for k, v in _map(probe.get("packages")).items()
                if isinstance(v, str) and v}
    imported = torch.get("imported") is True
    raw_devices = torch.get("devices")
    devices = tuple(TorchDevice.of(d, i) for i, d in enumerate(
        raw_devices if isinstance(raw_devices, list) else []) if isinstance(d, Mapping))
    arch = torch.get("arch_list")
    sdk = _map(probe.get("rocm_sdk"))
    return TorchInfo(
        probed=True,
        executable=_text(probe.get("executable")),
        python_version=_text(probe.get("version")),
        python_platform=_text(probe.get("platform")),
        libc=_text(probe.get("libc")),
        cpu_count=_int(probe.get("cpu_count")),
        packages=packages,
        imported=imported,
        error=_text(torch.get("error")),
        failed_stage=_text(torch.get("failed_stage")),
        version=_text(torch.get("version")) if imported else None,
        location=_text(torch.get("location")),
        hip=_text(torch.get("hip")),
        cuda=_text(torch.get("cuda")),
        available=_bool(torch.get("available")),
        device_count=max(0, _int(torch.get("device_count")) or 0),
        arch_list=tuple(str(a) for a in arch if isinstance(a, str)) if isinstance(
            arch, list) else (),
        devices=devices,
        bundles_rocm=_bool(torch.get("bundles_rocm")),
        hip_runtime=_text(torch.get("hip_runtime")),
        miopen=_text(torch.get("miopen")),
        cudnn_version=_int(torch.get("cudnn_version")),
        xnnpack=_bool(torch.get("xnnpack")),
        num_threads=_int(torch.get("num_threads")),
        debug=_bool(torch.get("debug")),
        returncode=_int(meta.get("returncode")) or 0,
        timed_out=meta.get("timed_out") is True,
        exit_error=_text(meta.get("exit_error")),
        not_python=meta.get("not_python") is True,
        rocm_sdk_core=_text(sdk.get("_rocm_sdk_core")),
        rocm_sdk_devel=_text(sdk.get("_rocm_sdk_devel")),
    )


def torch_info(host: Host) -> TorchInfo:
    """The torch of the Python that will train, as the probe found it."""
    return host.memo("torch:info", lambda: torch_info_of(host.python()))


def probe_skip_reason(info: TorchInfo) -> Optional[str]:
    return None if info.probed else "the Python/PyTorch probe was not run"


def imported_skip_reason(info: TorchInfo) -> Optional[str]:
    """Why a check of an imported torch does not apply: no probe, or torch does not import."""
    reason = probe_skip_reason(info)
    if reason is None and info.not_python:
        reason = f"{info.interpreter} is not a Python interpreter (see torch-install)"
    elif reason is None and not info.imported:
        reason = "torch does not import (see torch-install)"
    return reason
