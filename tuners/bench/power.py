"""GPU board power, energy and utilisation, sampled in a background thread during measurement.

Sources, first that works wins (each failure is recorded as a reason):
  NVIDIA  NVML through `pynvml` (nvidia-ml-py): nvmlDeviceGetPowerUsage (mW),
          nvmlDeviceGetTotalEnergyConsumption (mJ, Volta+), nvmlDeviceGetUtilizationRates
          https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
          then `nvidia-smi --query-gpu=power.draw,utilization.gpu -lms 100` (one streaming child)
  AMD     AMD SMI through `amdsmi`: amdsmi_get_power_info (average_socket_power /
          current_socket_power, W), amdsmi_get_gpu_activity (gfx_activity %),
          amdsmi_get_energy_count (energy_accumulator x counter_resolution uJ)
          https://rocm.docs.amd.com/projects/amdsmi/en/latest/
          then hwmon sysfs power1_average / power1_input (microwatts) and gpu_busy_percent
          https://docs.kernel.org/gpu/amdgpu/thermal.html
          then `rocm-smi --showpower --showuse --json`, one process per sample.
hwmon comes before rocm-smi although both read the same sensor (rocm_smi_lib reads hwmon
power1_average): rocm-smi starts a Python process for every sample, which costs CPU time
during the measured run and cannot keep 10 Hz.

How a user checks by hand: `nvidia-smi --query-gpu=power.draw --format=csv -lms 100`, or
`cat /sys/class/drm/card*/device/hwmon/hwmon*/power1_average` (microwatts) on AMD.
These figures are GPU-board power, not the node's (MLPerf Power measures at the wall).
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Callable, Optional

from rocmdoctor.host import process

Reading = tuple[Optional[float], Optional[float]]  # (watts, utilisation %)


class PowerSource(ABC):
    name = "none"

    @abstractmethod
    def read(self) -> Reading:
        """Power in watts and utilisation in percent, each None when unknown."""

    def energy_j(self) -> Optional[float]:
        """A cumulative hardware energy counter in joules, when the source has one."""
        return None

    def spawn_args(self) -> Optional[list[str]]:
        """Arguments for `python -m rocmdoctor.tuners.bench.power_child` that open the same source
        in another process, or None when it cannot be rebuilt there (a handle from torch)."""
        return None

    def close(self) -> None:  # noqa: B027 - most sources hold nothing to release
        """Release what the source holds (a handle, a child process)."""


class NvmlSource(PowerSource):
    name = "nvml"

    def __init__(self, uuid: Optional[str], index: int) -> None:
        import pynvml

        self._nvml = pynvml
        self._uuid, self._index = uuid, index
        pynvml.nvmlInit()
        if uuid:
            # torch reports the UUID without NVML's "GPU-" prefix; by UUID is right even
            # when CUDA_VISIBLE_DEVICES renumbers devices.
            uid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            self._handle = pynvml.nvmlDeviceGetHandleByUUID(uid)
        else:
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.read()

    def read(self) -> Reading:
        watts = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0
        try:
            util: Optional[float] = float(self._nvml.nvmlDeviceGetUtilizationRates(
                self._handle).gpu)
        except Exception:  # noqa: BLE001 - utilisation is optional
            util = None
        return watts, util

    def spawn_args(self) -> Optional[list[str]]:
        return ["nvml", "--uuid", self._uuid or "", "--index", str(self._index)]

    def energy_j(self) -> Optional[float]:
        try:
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)) / 1000.0
        except Exception:  # noqa: BLE001 - pre-Volta GPUs have no counter
            return None

    def close(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


class AmdSmiSource(PowerSource):
    name = "amdsmi"

    def __init__(self, handle_of: Callable[[], Any]) -> None:
        import amdsmi

        self._smi = amdsmi
        amdsmi.amdsmi_init()
        self._handle = handle_of()
        if self.read()[0] is None:
            raise RuntimeError("amdsmi reports no socket power for this GPU")

    def read(self) -> Reading:
        info = self._smi.amdsmi_get_power_info(self._handle)
        watts = None
        for key in ("average_socket_power", "current_socket_power"):
            watts = _number(info.get(key))
            if watts:
                break
        try:
            util = _number(self._smi.amdsmi_get_gpu_activity(self._handle).get("gfx_activity"))
        except Exception:  # noqa: BLE001
            util = None
        return watts, util

    def energy_j(self) -> Optional[float]:
        try:
            info = self._smi.amdsmi_get_energy_count(self._handle)
        except Exception:  # noqa: BLE001 - unsupported in VM guests
            return None
        # "energy_accumulator" since amdsmi 6.2.1, "power" before (ml-energy/zeus amd.py).
        count = _number(info.get("energy_accumulator", info.get("power")))
        resolution = _number(info.get("counter_resolution"))
        return count * resolution / 1e6 if count is not None and resolution else None

    def close(self) -> None:
        try:
            self._smi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001
            pass


class HwmonSource(PowerSource):
    name = "hwmon"

    def __init__(self, power_file: str, busy_file: Optional[str]) -> None:
        self._power_file = power_file
        self._busy_file = busy_file
        if self.read()[0] is None:
            raise RuntimeError(f"{power_file} is unreadable")

    def read(self) -> Reading:
        watts = parse_microwatts(_read(self._power_file))
        util = _number((_read(self._busy_file) or "").strip()) if self._busy_file else None
        return watts, util

    def spawn_args(self) -> Optional[list[str]]:
        return ["hwmon", "--power-file", self._power_file, "--busy-file", self._busy_file or ""]


class FakeSource(PowerSource):
    """Constant readings, for tests of the samplers only."""

    name = "fake"

    def __init__(self, watts: float, util: Optional[float] = None) -> None:
        self._watts, self._util = watts, util

    def read(self) -> Reading:
        return self._watts, self._util

    def spawn_args(self) -> Optional[list[str]]:
        return ["fake", "--watts", str(self._watts)] + (
            ["--util", str(self._util)] if self._util is not None else [])


class RocmSmiSource(PowerSource):
    name = "rocm-smi"

    def __init__(self, card: str) -> None:
        self._card = card
        if self.read()[0] is None:
            raise RuntimeError(f"rocm-smi reports no power for {card}")

    def read(self) -> Reading:
        done = process.run_command(["rocm-smi", "--showpower", "--showuse", "--json"], 5.0)
        if done.timed_out or done.not_found:
            return None, None
        return parse_rocm_smi_json(done.stdout).get(self._card, (None, None))


class NvidiaSmiStream(PowerSource):
    """One `nvidia-smi -lms 100` child streaming CSV lines; read() returns the latest."""

    name = "nvidia-smi"

    def __init__(self, device: str) -> None:
        self._proc = process.spawn(
            ["nvidia-smi", f"--id={device}", "--query-gpu=power.draw,utilization.gpu",
             "--format=csv,noheader,nounits", "-lms", "100"],
            stderr=process.DEVNULL, own_session=False)
        self._latest: Reading = (None, None)
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 3.0
        while self._latest[0] is None and time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            time.sleep(0.05)
        if self._latest[0] is None:
            self.close()
            raise RuntimeError("nvidia-smi printed no power reading")

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            reading = parse_nvidia_smi_line(line)
            if reading[0] is not None:
                self._latest = reading

    def read(self) -> Reading:
        return self._latest

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def open_source(vendor: str, index: int, uuid: Optional[str] = None,
                pci_bus: Optional[str] = None,
                amdsmi_handle: Optional[Callable[[], Any]] = None,
                ) -> tuple[Optional[PowerSource], list[str]]:
    """The first working source for this GPU, and why each earlier one did not work."""
    reasons: list[str] = []
    attempts: list[tuple[str, Callable[[], PowerSource]]] = []
    if vendor == "nvidia":
        attempts = [("nvml", lambda: NvmlSource(uuid, index)),
                    ("nvidia-smi", lambda: NvidiaSmiStream(
                        f"GPU-{uuid}" if uuid and not uuid.startswith("GPU-") else
                        (uuid or str(index))))]
    elif vendor == "amd":
        attempts = [("amdsmi", lambda: AmdSmiSource(amdsmi_handle or (lambda: None))),
                    ("hwmon", lambda: _hwmon_for(pci_bus, index)),
                    ("rocm-smi", lambda: RocmSmiSource(f"card{index}"))]
    else:
        return None, [f"no power source for a {vendor} device"]
    for name, make in attempts:
        try:
            return make(), reasons
        except Exception as exc:  # noqa: BLE001 - any failure means: try the next source
            reasons.append(f"{name}: {type(exc).__name__}: {str(exc).strip()[:160]}")
    return None, reasons


def _hwmon_for(pci_bus: Optional[str], index: int) -> HwmonSource:
    if pci_bus:
        devices = [f"/sys/bus/pci/devices/{pci_bus.lower()}"]
    else:
        devices = sorted(d for d in glob.glob("/sys/class/drm/card[0-9]*/device")
                         if (_read(os.path.join(d, "vendor")) or "").strip() == "0x1002")
        devices = list(dict.fromkeys(os.path.realpath(d) for d in devices))
        if len(devices) > 1:
            devices = devices[index:index + 1]
    for dev in devices:
        for name in ("power1_average", "power1_input"):
            found = sorted(glob.glob(os.path.join(dev, "hwmon", "hwmon*", name)))
            if found:
                busy = os.path.join(dev, "gpu_busy_percent")
                return HwmonSource(found[0], busy if os.path.exists(busy) else None)
    raise RuntimeError("no amdgpu hwmon power1_average/power1_input file found")


class PowerSampler:
    """Samples a source at `hz` in a daemon thread between start() and stop()."""

    def __init__(self, source: Optional[PowerSource], hz: float = 20.0,
                 reasons: Sequence[str] = ()) -> None:
        self.source = source
        self.interval = 1.0 / hz
        self.reasons = list(reasons)
        self.samples: list[tuple[float, Optional[float], Optional[float]]] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._energy0: Optional[float] = None
        self._t0 = self._t1 = 0.0

    def start(self) -> None:
        if self.source is None:
            return
        self._energy0 = self.source.energy_j()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self.source is not None
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                watts, util = self.source.read()
            except Exception:  # noqa: BLE001 - a failed read is a gap, not a crash
                watts, util = None, None
            self.samples.append((time.monotonic(), watts, util))
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def stop(self, samples_measured: float) -> dict[str, Any]:
        """Stop sampling and summarise; every field is None with `reason` when unmeasured."""
        if self.source is None or self._thread is None:
            return summarize([], None, 0.0, samples_measured, None,
                             "; ".join(self.reasons) or "no power source")
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._t1 = time.monotonic()
        energy1 = self.source.energy_j()
        counter = (energy1 - self._energy0 if energy1 is not None and self._energy0 is not None
                   else None)
        self.source.close()
        summary = summarize(self.samples, counter, self._t1 - self._t0, samples_measured,
                            self.source.name, None)
        summary["sampler"] = "thread"
        return summary


def summarize(samples: Sequence[tuple[float, Optional[float], Optional[float]]],
              counter_j: Optional[float], span_s: float, samples_measured: float,
              source: Optional[str], reason: Optional[str]) -> dict[str, Any]:
    watts = [(t, w) for t, w, _ in samples if w is not None and math.isfinite(w)]
    utils = [u for _, _, u in samples if u is not None and math.isfinite(u)]
    out: dict[str, Any] = {
        "source": source, "samples": len(watts),
        "sample_hz": len(watts) / span_s if span_s > 0 and watts else None,
        "avg_w": None, "peak_w": None, "energy_j": None, "energy_source": None,
        "energy_per_sample_j": None, "util_avg_pct": None, "util_peak_pct": None,
        "reason": reason,
    }
    if utils:
        out["util_avg_pct"] = sum(utils) / len(utils)
        out["util_peak_pct"] = max(utils)
    if not watts:
        if out["reason"] is None:
            out["reason"] = f"{source} returned no power readings"
        return out
    integrated = integrate(watts)
    out["peak_w"] = max(w for _, w in watts)
    out["avg_w"] = (integrated / (watts[-1][0] - watts[0][0]) if len(watts) > 1
                    else watts[0][1])
    energy = out["avg_w"] * span_s if span_s > 0 else integrated
    out["energy_source"] = "integrated power samples"
    # Trust a hardware counter only when it agrees with the samples within 2x: AMD's
    # accumulator is known to misreport on some GPUs (ROCm/amdsmi issue #38, zeus amd.py).
    if counter_j is not None and counter_j > 0 and 0.5 <= counter_j / max(energy, 1e-9) <= 2.0:
        energy = counter_j
        out["energy_source"] = "hardware energy counter"
    out["energy_j"] = energy
    if samples_measured > 0:
        out["energy_per_sample_j"] = energy / samples_measured
    return out


def integrate(points: Sequence[tuple[float, float]]) -> float:
    """Trapezoidal integral of (time s, watts) -> joules."""
    return sum((t1 - t0) * (w0 + w1) / 2.0
               for (t0, w0), (t1, w1) in zip(points, points[1:]))


def parse_microwatts(text: Optional[str]) -> Optional[float]:
    value = _number((text or "").strip())
    return value / 1e6 if value is not None and value >= 0 else None


_POWER_KEY = re.compile(r"^(?!max)(?!.*\bcap\b).*graphics package power \(w\)$", re.I)


def parse_rocm_smi_json(text: str) -> dict[str, Reading]:
    """`rocm-smi --showpower --showuse --json` -> {"card0": (watts, util%)}; {} when unusable.

    Key names by version (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py): "Average Graphics
    Package Power (W)", "Current Socket Graphics Package Power (W)" (MI300), "GPU use (%)".
    """
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Reading] = {}
    for card, fields in data.items():
        if not isinstance(fields, dict) or not re.fullmatch(r"card\d+", str(card)):
            continue
        watts = next((_number(v) for k, v in fields.items()
                      if _POWER_KEY.match(str(k)) and _number(v) is not None), None)
        out[str(card)] = (watts, _number(fields.get("GPU use (%)")))
    return out


def parse_nvidia_smi_line(line: str) -> Reading:
    """One `--query-gpu=power.draw,utilization.gpu --format=csv,noheader,nounits` line."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 2:
        return None, None
    return _number(parts[0]), _number(parts[1])


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*(?:W|%)?\s*", value)
        return float(match.group(1)) if match else None
    return None


def _read(path: Optional[str]) -> Optional[str]:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None
