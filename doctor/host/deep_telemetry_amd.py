"""AMD telemetry for `check --deep` (deep_telemetry.py opens these): amdsmi, then amdgpu's
sysfs (hwmon, pp_dpm_sclk, power_dpm_force_performance_level, ras/*_err_count). Read only.

Sources: https://rocm.docs.amd.com/projects/amdsmi/en/latest/ (amdsmi_get_clock_info,
amdsmi_get_power_info, amdsmi_get_temp_metric, amdsmi_get_gpu_perf_level,
amdsmi_get_gpu_metrics_info, amdsmi_get_gpu_total_ecc_count, amdsmi_gpu_xgmi_error_status);
https://docs.kernel.org/gpu/amdgpu/thermal.html (hwmon files, pp_dpm_sclk).
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Optional

from deep_telemetry import Reader, _int, _num, _read


class AmdSmiReader(Reader):
    name = "amdsmi"

    def __init__(self, bdf: Optional[str], index: int) -> None:
        import amdsmi

        self.smi = amdsmi
        amdsmi.amdsmi_init()
        if bdf:
            self.handle = amdsmi.amdsmi_get_processor_handle_from_bdf(bdf)
        else:
            self.handle = amdsmi.amdsmi_get_processor_handles()[index]
        if self._clock().get("clock_mhz") is None:
            raise RuntimeError("amdsmi reports no GFX clock for this GPU")

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.smi, name)(self.handle, *args)
        except Exception:  # noqa: BLE001 - not reported on this GPU, driver or VM
            return None

    def _clock(self) -> dict[str, Any]:
        kind = getattr(getattr(self.smi, "AmdSmiClkType", None), "GFX", None)
        info = self._call("amdsmi_get_clock_info", kind) if kind is not None else None
        info = info if isinstance(info, dict) else {}
        current = info.get("clk", info.get("cur_clk"))
        return {"clock_mhz": _num(current), "max_clock_mhz": _num(info.get("max_clk"))}

    def static(self) -> dict[str, Any]:
        power = self._call("amdsmi_get_power_info")
        power = power if isinstance(power, dict) else {}
        level = self._call("amdsmi_get_gpu_perf_level")
        level_text = str(level).rsplit("_", 1)[-1].lower() if level is not None else None
        return {"max_clock_mhz": self._clock().get("max_clock_mhz"),
                "power_limit_w": _num(power.get("power_limit")),
                "perf_level": level_text}

    def sample(self) -> dict[str, Any]:
        power = self._call("amdsmi_get_power_info")
        power = power if isinstance(power, dict) else {}
        watts = _num(power.get("current_socket_power")) or _num(power.get("average_socket_power"))
        temp = None
        kinds = getattr(self.smi, "AmdSmiTemperatureType", None)
        metric = getattr(getattr(self.smi, "AmdSmiTemperatureMetric", None), "CURRENT", None)
        if kinds is not None and metric is not None:
            for name in ("HOTSPOT", "JUNCTION", "EDGE"):
                kind = getattr(kinds, name, None)
                temp = _num(self._call("amdsmi_get_temp_metric", kind, metric)) if kind else None
                if temp is not None:
                    break
        metrics = self._call("amdsmi_get_gpu_metrics_info")
        throttle = metrics.get("throttle_status") if isinstance(metrics, dict) else None
        reasons = None
        if isinstance(throttle, int):
            reasons = [f"throttle_status {throttle:#x}"] if throttle else []
        return {"clock_mhz": self._clock().get("clock_mhz"), "power_w": watts,
                "temperature_c": temp, "reasons": reasons}

    def counters(self) -> dict[str, Any]:
        ecc = self._call("amdsmi_get_gpu_total_ecc_count")
        ecc = ecc if isinstance(ecc, dict) else {}
        xgmi = self._call("amdsmi_gpu_xgmi_error_status")
        return {"ecc_uncorrected": _int(ecc.get("uncorrectable_count")),
                "ecc_corrected": _int(ecc.get("correctable_count")),
                "xgmi_error": None if xgmi is None else str(xgmi).rsplit(".", 1)[-1]}

    def close(self) -> None:
        try:
            self.smi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001
            pass


def parse_dpm(text: Optional[str]) -> tuple[Optional[float], Optional[float]]:
    """(current MHz, top MHz) from pp_dpm_sclk ("0: 500Mhz\\n1: 2100Mhz *")."""
    levels = re.findall(r"^\s*\d+:\s*(\d+)\s*Mhz(\s*\*)?", text or "", re.M | re.I)
    if not levels:
        return None, None
    current = next((float(mhz) for mhz, star in levels if star), None)
    return current, max(float(mhz) for mhz, _ in levels)


def parse_ras_count(text: Optional[str]) -> tuple[Optional[int], Optional[int]]:
    """(uncorrectable, correctable) from an amdgpu ras/*_err_count file ("ue: 0\\nce: 3")."""
    ue = re.search(r"^ue:\s*(\d+)", text or "", re.M)
    ce = re.search(r"^ce:\s*(\d+)", text or "", re.M)
    return (int(ue.group(1)) if ue else None, int(ce.group(1)) if ce else None)


class HwmonReader(Reader):
    """amdgpu's sysfs files for the PCI device; root is not needed to read them."""

    name = "hwmon"

    def __init__(self, bdf: str) -> None:
        self.dev = f"/sys/bus/pci/devices/{bdf.lower()}"
        mons = sorted(glob.glob(os.path.join(self.dev, "hwmon", "hwmon*")))
        self.mon = mons[0] if mons else None
        if self.mon is None and _read(os.path.join(self.dev, "pp_dpm_sclk")) is None:
            raise RuntimeError(f"no amdgpu hwmon or pp_dpm_sclk under {self.dev}")

    def _mon(self, name: str) -> Optional[float]:
        return _num((_read(os.path.join(self.mon, name)) or "").strip()) if self.mon else None

    def static(self) -> dict[str, Any]:
        _, top = parse_dpm(_read(os.path.join(self.dev, "pp_dpm_sclk")))
        cap = self._mon("power1_cap")
        level = (_read(os.path.join(self.dev, "power_dpm_force_performance_level")) or "").strip()
        return {"max_clock_mhz": top, "power_limit_w": cap / 1e6 if cap else None,
                "perf_level": level or None}

    def sample(self) -> dict[str, Any]:
        freq = self._mon("freq1_input")
        current, _ = parse_dpm(_read(os.path.join(self.dev, "pp_dpm_sclk")))
        power = self._mon("power1_average") or self._mon("power1_input")
        temp = self._mon("temp2_input") or self._mon("temp1_input")
        return {"clock_mhz": freq / 1e6 if freq else current,
                "power_w": power / 1e6 if power is not None else None,
                "temperature_c": temp / 1000.0 if temp is not None else None}

    def counters(self) -> dict[str, Any]:
        ue = ce = None
        for path in sorted(glob.glob(os.path.join(self.dev, "ras", "*_err_count"))):
            u, c = parse_ras_count(_read(path))
            ue = (ue or 0) + u if u is not None else ue
            ce = (ce or 0) + c if c is not None else ce
        return {"ecc_uncorrected": ue, "ecc_corrected": ce}
