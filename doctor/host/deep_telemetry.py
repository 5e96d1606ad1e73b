"""What the driver says about a GPU while `check --deep` loads it: clocks, power, temperature,
the reasons the clocks are held down, and the error counters before and after.

Standalone (standard library, and pynvml / amdsmi where installed): the deep child
(deep_child.py) imports it from its own folder in the Python that trains. It only reads:
nothing here sets a clock, a power limit or a mode.

Sources, first that works wins, each failure kept as a reason:
  NVIDIA  NVML through pynvml: nvmlDeviceGetClockInfo / GetMaxClockInfo (MHz),
          GetPowerUsage / GetEnforcedPowerLimit / GetPowerManagementDefaultLimit (mW),
          GetTemperature, GetCurrentClocksEventReasons (bit mask), GetTotalEccErrors,
          GetPcieReplayCounter, GetNvLinkErrorCounter
          https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
          then `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`, once a sample.
  AMD     amdsmi: amdsmi_get_clock_info, amdsmi_get_power_info, amdsmi_get_temp_metric,
          amdsmi_get_gpu_perf_level, amdsmi_get_gpu_metrics_info (throttle_status),
          amdsmi_get_gpu_total_ecc_count, amdsmi_gpu_xgmi_error_status
          https://rocm.docs.amd.com/projects/amdsmi/en/latest/
          then amdgpu's sysfs: hwmon freq1_input (Hz), power1_average (uW), temp2_input
          (junction, m°C), pp_dpm_sclk, power_dpm_force_performance_level, ras/*_err_count
          https://docs.kernel.org/gpu/amdgpu/thermal.html
Tests only (ROCMDOCTOR_TESTING=1): ROCMDOCTOR_DEEP_TELEMETRY=throttled replaces the reader
by one that reports a card held at 55 % of its clock by thermal slowdown, so the verdict
on a throttled card can be exercised without touching a real card's settings.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import threading
import time
from typing import Any, Callable, Optional

# NVML's clocks event reasons (nvmlClocksEventReasons), named as nvidia-smi -q prints them.
NVML_REASONS = ((0x1, "Idle"), (0x2, "Applications Clocks Setting"), (0x4, "SW Power Cap"),
                (0x8, "HW Slowdown"), (0x10, "Sync Boost"), (0x20, "SW Thermal Slowdown"),
                (0x40, "HW Thermal Slowdown"), (0x80, "HW Power Brake Slowdown"),
                (0x100, "Display Clock Setting"))
NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
NVLINK_MAX_LINKS = 18
SMI_FIELDS = ("clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "power.default_limit",
              "temperature.gpu", "clocks_event_reasons.active")


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in NVML_REASONS if mask & bit]


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*[A-Za-z%]*\s*", value)
        return float(m.group(1)) if m else None
    return None


def _int(value: Any) -> Optional[int]:
    number = _num(value)
    return int(number) if number is not None else None


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


class Reader:
    """One GPU's telemetry. Every method returns what it could read; None means unknown."""

    name = "none"

    def static(self) -> dict[str, Any]:
        return {}

    def sample(self) -> dict[str, Any]:
        return {}

    def counters(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:  # noqa: B027 - most readers hold nothing
        pass


class NvmlReader(Reader):
    name = "nvml"

    def __init__(self, uuid: Optional[str], index: int) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        if uuid:
            uid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uid)
        else:
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.nvml, name)(self.handle, *args)
        except Exception:  # noqa: BLE001 - a field the GPU or driver does not report
            return None

    def static(self) -> dict[str, Any]:
        n = self.nvml
        limit = self._call("nvmlDeviceGetEnforcedPowerLimit")
        default = self._call("nvmlDeviceGetPowerManagementDefaultLimit")
        return {"max_clock_mhz": _num(self._call("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_SM)),
                "power_limit_w": limit / 1000.0 if limit else None,
                "default_power_limit_w": default / 1000.0 if default else None,
                "slowdown_temp_c": _num(self._call(
                    "nvmlDeviceGetTemperatureThreshold",
                    getattr(n, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)))}

    def sample(self) -> dict[str, Any]:
        n = self.nvml
        power = self._call("nvmlDeviceGetPowerUsage")
        mask = self._call("nvmlDeviceGetCurrentClocksEventReasons")
        if mask is None:
            mask = self._call("nvmlDeviceGetCurrentClocksThrottleReasons")
        pstate = self._call("nvmlDeviceGetPerformanceState")
        return {"clock_mhz": _num(self._call("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM)),
                "power_w": power / 1000.0 if power is not None else None,
                "temperature_c": _num(self._call("nvmlDeviceGetTemperature",
                                                 n.NVML_TEMPERATURE_GPU)),
                "reasons": decode_reasons(int(mask)) if isinstance(mask, int) else None,
                "pstate": f"P{pstate}" if isinstance(pstate, int) else None}

    def counters(self) -> dict[str, Any]:
        n = self.nvml
        out: dict[str, Any] = {}
        for key, kind in (("ecc_uncorrected", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED"),
                          ("ecc_corrected", "NVML_MEMORY_ERROR_TYPE_CORRECTED")):
            value = self._call("nvmlDeviceGetTotalEccErrors", getattr(n, kind),
                               getattr(n, "NVML_VOLATILE_ECC", 0))
            out[key] = int(value) if isinstance(value, int) else None
        replays = self._call("nvmlDeviceGetPcieReplayCounter")
        out["pcie_replays"] = int(replays) if isinstance(replays, int) else None
        links: dict[str, dict[str, int]] = {}
        for link in range(NVLINK_MAX_LINKS):
            if self._call("nvmlDeviceGetNvLinkState", link) != 1:
                continue
            counts = {}
            for key, code in NVLINK_COUNTERS:
                value = self._call("nvmlDeviceGetNvLinkErrorCounter", link, code)
                if isinstance(value, int):
                    counts[key] = value
            links[str(link)] = counts
        out["links"] = links
        return out

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


class NvidiaSmiReader(Reader):
    """One `nvidia-smi --query-gpu` call a sample: slower than NVML, always there."""

    name = "nvidia-smi"

    def __init__(self, device: str) -> None:
        self.device = device
        if self._query().get("clock_mhz") is None:
            raise RuntimeError("nvidia-smi reported no SM clock")

    def _query(self) -> dict[str, Any]:
        try:
            done = subprocess.run(
                ["nvidia-smi", f"--id={self.device}", "--query-gpu=" + ",".join(SMI_FIELDS),
                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        return parse_smi_line(done.stdout.strip().splitlines()[0] if done.stdout.strip() else "")

    def static(self) -> dict[str, Any]:
        q = self._query()
        return {k: q.get(k) for k in ("max_clock_mhz", "power_limit_w", "default_power_limit_w")}

    def sample(self) -> dict[str, Any]:
        q = self._query()
        return {k: q.get(k) for k in ("clock_mhz", "power_w", "temperature_c", "reasons")}


def parse_smi_line(line: str) -> dict[str, Any]:
    """One CSV line of SMI_FIELDS; unknown fields ("[N/A]") are None."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(SMI_FIELDS):
        return {}
    mask = parts[6]
    reasons = decode_reasons(int(mask, 16)) if re.fullmatch(r"0x[0-9a-fA-F]+", mask) else None
    return {"clock_mhz": _num(parts[0]), "max_clock_mhz": _num(parts[1]),
            "power_w": _num(parts[2]), "power_limit_w": _num(parts[3]),
            "default_power_limit_w": _num(parts[4]), "temperature_c": _num(parts[5]),
            "reasons": reasons}


class SimulatedThrottle(Reader):
    """Tests only: a card held at 55 % of a 1980 MHz clock by thermal slowdown, hot, with a
    power limit lowered to 450 W of 700 W (as `nvidia-smi -q` would show such a card)."""

    name = "simulated (ROCMDOCTOR_DEEP_TELEMETRY=throttled)"

    def static(self) -> dict[str, Any]:
        return {"max_clock_mhz": 1980.0, "power_limit_w": 450.0, "default_power_limit_w": 700.0,
                "slowdown_temp_c": 87.0}

    def sample(self) -> dict[str, Any]:
        return {"clock_mhz": 1089.0, "power_w": 430.0, "temperature_c": 91.0,
                "reasons": ["SW Power Cap", "HW Thermal Slowdown", "SW Thermal Slowdown"],
                "pstate": "P0"}

    def counters(self) -> dict[str, Any]:
        return {"ecc_uncorrected": 0, "ecc_corrected": 0, "pcie_replays": 0, "links": {}}


def open_reader(vendor: str, index: int, uuid: Optional[str], bdf: Optional[str],
                environ: Optional[dict[str, str]] = None) -> tuple[Reader, list[str]]:
    """The first reader that works for this GPU (a Reader that reads nothing when none does),
    and why each one before it did not."""
    env = os.environ if environ is None else environ
    if env.get("ROCMDOCTOR_TESTING") == "1" and env.get("ROCMDOCTOR_DEEP_TELEMETRY"):
        wanted = env["ROCMDOCTOR_DEEP_TELEMETRY"]
        return (SimulatedThrottle(), []) if wanted == "throttled" else (Reader(), [
            f"telemetry turned off for the test (ROCMDOCTOR_DEEP_TELEMETRY={wanted})"])
    attempts: list[tuple[str, Callable[[], Reader]]] = []
    if vendor == "nvidia":
        attempts = [("nvml", lambda: NvmlReader(uuid, index)),
                    ("nvidia-smi", lambda: NvidiaSmiReader(bdf or str(index)))]
    elif vendor == "amd":
        import deep_telemetry_amd as amd  # this script's folder, as deep_child.py adds it

        attempts = [("amdsmi", lambda: amd.AmdSmiReader(bdf, index))]
        if bdf:
            attempts.append(("hwmon", lambda: amd.HwmonReader(bdf)))
    else:
        return Reader(), [f"no telemetry for a {vendor} device"]
    reasons: list[str] = []
    for name, make in attempts:
        try:
            return make(), reasons
        except Exception as exc:  # noqa: BLE001 - any failure: try the next source
            reasons.append(f"{name}: {type(exc).__name__}: {str(exc).strip()[:160]}")
    return Reader(), reasons


class Sampler:
    """Samples a reader at `hz` in a daemon thread; `phase` tags the samples taken while a
    measurement runs, so that "under load" means during that measurement."""

    def __init__(self, reader: Reader, hz: float = 10.0) -> None:
        self.reader = reader
        self.interval = 1.0 / hz
        self.samples: list[dict[str, Any]] = []
        self.phase = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="deep-telemetry")

    def start(self) -> Sampler:
        if self.reader.name != "none":
            self._thread.start()
        return self

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.is_set():
            try:
                sample = dict(self.reader.sample())
            except Exception:  # noqa: BLE001 - a failed read is a gap
                sample = {}
            sample["t"] = round(time.monotonic() - start, 3)
            sample["phase"] = self.phase
            self.samples.append(sample)
            self._stop.wait(self.interval)

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        return self.samples


def summarize_samples(samples: list[dict[str, Any]], phase: str) -> dict[str, Any]:
    """Clock, power and temperature during one phase, and how often each reason was on."""
    chosen = [s for s in samples if not phase or s.get("phase") == phase]

    def series(key: str) -> dict[str, Any]:
        values = [float(s[key]) for s in chosen if isinstance(s.get(key), (int, float))]
        if not values:
            return {"median": None, "min": None, "max": None, "p95": None, "n": 0}
        ordered = sorted(values)
        return {"median": round(statistics.median(ordered), 2), "min": ordered[0],
                "max": ordered[-1], "p95": ordered[min(len(ordered) - 1,
                                                       int(0.95 * len(ordered)))],
                "n": len(values)}

    reasons: dict[str, int] = {}
    with_reasons = [s for s in chosen if isinstance(s.get("reasons"), list)]
    for s in with_reasons:
        for r in s["reasons"]:
            reasons[str(r)] = reasons.get(str(r), 0) + 1
    pstates = sorted({str(s["pstate"]) for s in chosen if s.get("pstate")})
    return {"samples": len(chosen), "clock_mhz": series("clock_mhz"),
            "power_w": series("power_w"), "temperature_c": series("temperature_c"),
            "reasons": {k: round(v / len(with_reasons), 3) for k, v in sorted(reasons.items())}
            if with_reasons else None, "pstates": pstates}
