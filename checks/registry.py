"""The explicit, ordered list of checks. Order is output order (the contract's table)."""

from __future__ import annotations

from rocmdoctor.checks.allocator_config import AllocatorConfig
from rocmdoctor.checks.amdgpu_driver import AmdgpuDriver
from rocmdoctor.checks.amdgpu_firmware import AmdgpuFirmware
from rocmdoctor.checks.clocks_under_load import ClocksUnderLoad
from rocmdoctor.checks.collectives import Collectives
from rocmdoctor.checks.container import ContainerCheck
from rocmdoctor.checks.conv_rate import ConvRate
from rocmdoctor.checks.debug_env import DebugEnv
from rocmdoctor.checks.deep_run import DeepRunCheck
from rocmdoctor.checks.gemm_rate import GemmRate
from rocmdoctor.checks.gfx_override import GfxOverride
from rocmdoctor.checks.gpu_agents import GpuAgents
from rocmdoctor.checks.gpu_health import GpuHealth
from rocmdoctor.checks.gpu_links import GpuLinksCheck
from rocmdoctor.checks.host_link import HostLink
from rocmdoctor.checks.kernel_launch import KernelLaunch
from rocmdoctor.checks.kernel_log import KernelLogCheck
from rocmdoctor.checks.kernel_version import KernelVersion
from rocmdoctor.checks.kfd_access import KfdAccess
from rocmdoctor.checks.memory_bandwidth import MemoryBandwidth
from rocmdoctor.checks.miopen_db import MiopenDb
from rocmdoctor.checks.nvidia_driver import NvidiaDriver
from rocmdoctor.checks.os_release import OsReleaseCheck
from rocmdoctor.checks.pcie_atomics import PcieAtomics
from rocmdoctor.checks.pcie_link import PcieLink
from rocmdoctor.checks.perf_level import PerfLevelCheck
from rocmdoctor.checks.ppfeaturemask import PPFeatureMask
from rocmdoctor.checks.rocm_install import RocmInstallCheck
from rocmdoctor.checks.rocm_libraries import RocmLibraries
from rocmdoctor.checks.rocm_permissions import RocmPermissions
from rocmdoctor.checks.stress import Stress
from rocmdoctor.checks.torch_arch_support import TorchArchSupport
from rocmdoctor.checks.torch_device import TorchDevice
from rocmdoctor.checks.torch_install import TorchInstall
from rocmdoctor.checks.torch_rocm_match import TorchRocmMatch
from rocmdoctor.checks.torchvision_match import TorchvisionMatch
from rocmdoctor.checks.visible_devices import VisibleDevices
from rocmdoctor.model import Check

MACHINE_CHECKS = (
    OsReleaseCheck, KernelVersion, KernelLogCheck, AmdgpuDriver, AmdgpuFirmware, ContainerCheck,
    KfdAccess, PcieAtomics, RocmInstallCheck, RocmPermissions, GpuAgents, PcieLink, GpuHealth,
    PerfLevelCheck, PPFeatureMask,
)
TORCH_CHECKS = (
    TorchInstall, RocmLibraries, TorchRocmMatch, TorchArchSupport, TorchDevice, TorchvisionMatch,
)
ENV_CHECKS = (DebugEnv, GfxOverride, VisibleDevices, AllocatorConfig, MiopenDb, NvidiaDriver)
OPT_IN_CHECKS = (Collectives,)  # run only when asked for: `check --collectives`
# The measured checks: `check --deep` (about 30 s a GPU), and `--stress DURATION` adds one.
DEEP_CHECKS = (DeepRunCheck, GemmRate, ConvRate, MemoryBandwidth, HostLink, ClocksUnderLoad,
               KernelLaunch, GpuLinksCheck)
STRESS_CHECKS = (Stress,)


def all_checks(opt_in: bool = False, deep: bool = False, stress: bool = False) -> list[Check]:
    return [cls() for cls in (*MACHINE_CHECKS, *TORCH_CHECKS, *ENV_CHECKS,
                              *(OPT_IN_CHECKS if opt_in else ()),
                              *(DEEP_CHECKS if deep or stress else ()),
                              *(STRESS_CHECKS if stress else ()))]
