"""nvidia-driver: on NVIDIA machines, the driver supports the CUDA runtime torch was built with.

By hand: `nvidia-smi --query-gpu=index,name,driver_version,compute_cap,persistence_mode,
power.limit,power.default_limit,memory.total,uuid,pci.bus_id --format=csv,noheader,nounits`
and `python -c "import torch; print(torch.version.cuda)"`, then look the CUDA version up in
Table 3 of the CUDA Toolkit release notes.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.nvidia_gpus import NVIDIA_SMI_DOCS, NvidiaInventory, nvidia_gpus
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import cuda_driver as kb
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

DRIVER_DOWNLOADS = "https://www.nvidia.com/drivers"


def _gpu_summary(inventory: NvidiaInventory) -> str:
    names: dict[str, int] = {}
    for g in inventory.gpus:
        label = f"{g.name} ({g.sm})" if g.sm else g.name
        names[label] = names.get(label, 0) + 1
    return ", ".join(f"{n} x {label}" if n > 1 else label for label, n in names.items())


class NvidiaDriver(Check):
    id = "nvidia-driver"
    uses_python = True  # torch's CUDA runtime
    title = "NVIDIA driver supports torch's CUDA runtime"
    source = kb.RELEASE_NOTES

    def applies(self, host: Host) -> Optional[str]:
        kind = platform_kind(host)
        if kind == "rocm":
            return "not an NVIDIA machine (AMD GPU found)"
        if kind == "cpu":
            return "no NVIDIA GPU or driver found"
        return None

    def run(self, host: Host) -> CheckResult:
        inventory = nvidia_gpus(host)
        if inventory.result.timed_out:
            return self.result(Status.ERROR, "nvidia-smi did not answer", [Finding.hint(
                "a hung nvidia-smi usually means a hung GPU or driver: check dmesg for Xid "
                "errors")])
        if inventory.result.not_found:
            return self.result(Status.FAIL, "nvidia-smi: nvidia-smi is not installed", [
                Finding.error("an NVIDIA GPU or driver is present, but nvidia-smi is not on "
                              "PATH")],
                Fix(f"Install the NVIDIA driver, which provides nvidia-smi: {DRIVER_DOWNLOADS}"),
                NVIDIA_SMI_DOCS)
        if inventory.error is not None:
            return self.result(Status.FAIL, f"nvidia-smi: {inventory.error}", [
                Finding.error(inventory.error)],
                Fix("Check that the NVIDIA kernel module is loaded and matches the user-space "
                    "driver (`cat /proc/driver/nvidia/version`, `nvidia-smi`); after a driver "
                    f"upgrade, reboot. Drivers: {DRIVER_DOWNLOADS}"), NVIDIA_SMI_DOCS)
        driver = inventory.driver_version or "?"
        findings = [Finding.info(
            f"GPU {g.index}: {g.name}, compute capability {g.compute_cap or '?'}, "
            f"{g.memory_total_mib or '?'} MiB, power limit "
            f"{self._watts(g.power_limit_w)}, persistence mode "
            f"{'on' if g.persistence_mode else 'off' if g.persistence_mode is False else '?'}")
            for g in inventory.gpus]
        status, fix, note = self._runtime(host, driver, findings)
        self._tuning(inventory, findings)
        low_power = [g for g in inventory.gpus if g.power_limit_w and g.power_default_limit_w
                     and g.power_limit_w < g.power_default_limit_w]
        if low_power and status is Status.PASS:
            g = low_power[0]
            status = Status.WARN
            findings.extend(Finding.error(
                f"GPU {p.index} power limit {self._watts(p.power_limit_w)} is below its default "
                f"{self._watts(p.power_default_limit_w)}: it runs slower") for p in low_power)
            fix = Fix("Restore the default power limit (needs root; lasts until reboot).",
                      tuple(f"sudo nvidia-smi -i {p.index} -pl {p.power_default_limit_w:g}"
                            for p in low_power), needs_root=True)
            note += f"; GPU {g.index} is power-capped"
        return self.result(status, f"driver {driver}, {_gpu_summary(inventory)}{note}",
                           findings, fix)

    @staticmethod
    def _watts(value: Optional[float]) -> str:
        return f"{value:g} W" if value is not None else "?"

    def _runtime(self, host: Host, driver: str, findings: list[Finding]
                 ) -> tuple[Status, Optional[Fix], str]:
        cuda = torch_info(host).cuda
        if not cuda:
            findings.append(Finding.info("torch's CUDA runtime is unknown (no CUDA build of "
                                         "torch probed)"))
            return Status.PASS, None, ""
        ga = kb.ga_driver(str(cuda))
        minor = kb.minor_compat_driver(str(cuda))
        if ga is None and kb.cuda_newer_than_table(str(cuda)):
            return self._unknown_cuda(str(cuda), driver, minor, findings)
        if ga is not None and kb.driver_at_least(driver, ga.min_driver):
            return Status.PASS, None, f"; supports torch's CUDA {cuda}"
        fix = self._fix(driver, ga.min_driver if ga else None)
        unconfirmed = (" (a number quoted from NVIDIA's table, not confirmed in it here)"
                       if ga is not None and not ga.verified else "")
        if minor is not None and kb.driver_at_least(driver, minor.min_driver):
            findings.append(Finding.error(
                f"CUDA {cuda} wants driver >= {ga.min_driver if ga else '?'}{unconfirmed}; "
                f"{driver} runs it through CUDA minor version compatibility, where PTX JIT "
                "compilation (and so some kernels) can fail"))
            return Status.WARN, fix, f"; older than CUDA {cuda} wants"
        need = minor.min_driver if minor else (ga.min_driver if ga else "?")
        if minor is None and ga is not None and not ga.verified:
            findings.append(Finding.error(
                f"CUDA {cuda} wants driver >= {ga.min_driver}{unconfirmed}; this is {driver}"))
            return Status.WARN, fix, f"; older than CUDA {cuda} wants"
        findings.append(Finding.error(
            f"torch's CUDA {cuda} needs driver >= {need} (>= "
            f"{ga.min_driver if ga else '?'} for every feature); this is {driver}"))
        return Status.FAIL, fix, f"; too old for torch's CUDA {cuda}"

    def _unknown_cuda(self, cuda: str, driver: str, minor: Optional[kb.MinorCompatRow],
                      findings: list[Finding]) -> tuple[Status, Optional[Fix], str]:
        """A CUDA release without a Table 3 row here: only Table 2 (per major) can judge it."""
        listed = dict(kb.KNOWN_WITHOUT_DRIVER)
        why = (f"CUDA {cuda}'s minimum driver is not in rocmdoctor's tables (tables dated "
               f"{KB_DATE}; NVIDIA: {listed[cuda]})" if cuda in listed else
               f"CUDA {cuda} is newer than what this rocmdoctor knows, tables dated {KB_DATE}")
        if minor is not None and not kb.driver_at_least(driver, minor.min_driver):
            findings.append(Finding.error(
                f"torch's CUDA {cuda} needs driver >= {minor.min_driver} (CUDA {minor.cuda_major}"
                f".x minor version compatibility); this is {driver}"))
            return Status.FAIL, self._fix(driver, minor.min_driver), \
                f"; too old for torch's CUDA {cuda}"
        floor = (f"; driver {driver} meets the CUDA {minor.cuda_major}.x minimum "
                 f"(>= {minor.min_driver})" if minor is not None else "")
        findings.append(Finding.info(f"{why}{floor}"))
        return Status.PASS, None, f"; torch's CUDA {cuda} is newer than rocmdoctor's tables"

    @staticmethod
    def _fix(driver: str, ga_min: Optional[str]) -> Fix:
        newest = wheels.WHEELS[-1]
        usable = [c for c in newest.cuda
                  if (row := kb.ga_driver(c)) is not None and kb.driver_at_least(driver,
                                                                                 row.min_driver)]
        upgrade = f"Install NVIDIA driver {ga_min} or newer ({DRIVER_DOWNLOADS})"
        if not usable:
            return Fix(upgrade + ".")
        index = wheels.cuda_index(max(usable, key=wheels.version_tuple))
        return Fix(f"{upgrade}, or install a torch build for a CUDA this driver supports "
                   f"({index}).",
                   (f"pip install --force-reinstall torch torchvision --index-url "
                    f"{wheels.index_url(index)}",))

    @staticmethod
    def _tuning(inventory: NvidiaInventory, findings: list[Finding]) -> None:
        off = [str(g.index) for g in inventory.gpus if g.persistence_mode is False]
        if off:
            findings.append(Finding.hint(
                f"persistence mode is off on GPU {', '.join(off)}: the driver sets the GPU up "
                "again for each new process (slower start); `sudo nvidia-smi -pm 1` turns it "
                "on until reboot (needs root)"))
