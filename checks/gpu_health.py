"""gpu-health: on Instinct and data-centre NVIDIA GPUs, the error counters and states that
mean a GPU is failing or needs a reset: uncorrectable ECC / RAS errors, retired or remapped
memory waiting for a reset, hardware throttling, and the compute partition mode against the
number of devices torch sees.

By hand (AMD): `amd-smi static --json`, `amd-smi metric --json` (or `amd-smi metric --ecc
--ecc-blocks`, `amd-smi static --ras --partition`, `amd-smi bad-pages`). NVIDIA: `nvidia-smi -q
-d ECC,ROW_REMAPPER,PAGE_RETIREMENT,PERFORMANCE`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.amd_smi import AMDSMI_COMMANDS, AmdSmiGpu, amd_smi
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.nvidia_smi_q import SmiGpu, nvidia_smi_q
from rocmdoctor.facts.platform import is_wsl, platform_kind
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import nvidia_xid
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Severity, Status

NVIDIA_SMI_DOCS = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
VISIBLE = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
           "GPU_DEVICE_ORDINAL")
# Violations that mean heat or a hardware limit, not the power cap doing its job.
HOT = ("prochot", "socket_thermal", "vr_thermal", "hbm_thermal")
HW_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown",
              "SW Thermal Slowdown")
_RANK = {Severity.ERROR: 2, Severity.HINT: 1, Severity.INFO: 0}


def _yes(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("yes", "true", "enabled", "active")


class GpuHealth(Check):
    id = "gpu-health"
    title = "GPU health: ECC/RAS errors, retired memory, throttling, partitions"
    source = AMDSMI_COMMANDS
    uses_python = True

    def applies(self, host: Host) -> Optional[str]:
        if platform_kind(host) == "cpu":
            return "no AMD or NVIDIA GPU or driver found"
        if is_wsl(host):
            return "WSL2: the GPU's counters are kept by the Windows driver"
        return None

    def run(self, host: Host) -> CheckResult:
        if platform_kind(host) == "cuda":
            return self._nvidia(host)
        return self._amd(host)

    # --- AMD --------------------------------------------------------------------------------
    def _amd(self, host: Host) -> CheckResult:
        report = amd_smi(host, ("static", "metric"))
        if not report.installed:
            return self.skipped("amd-smi is not installed (it reports ECC, RAS and partitions)")
        if not report.gpus:
            return self.skipped("amd-smi reported no GPU: " + "; ".join(report.problems))
        reporting = [g for g in report.gpus if self._amd_has_ras(g)]
        if not reporting:
            names = ", ".join(sorted({g.name for g in report.gpus}))
            return self.skipped(f"no GPU here reports ECC or RAS counters ({names}); Instinct "
                                "GPUs do")
        findings = [Finding.info(p) for p in report.problems]
        for gpu in reporting:
            findings.extend(self._amd_gpu(gpu))
        findings.extend(self._partitions(host, report.gpus))
        return self._verdict(findings, len(reporting), Fix(
            "Collect the error counts and retired pages and reset the GPU when it is idle; "
            "uncorrectable errors that come back mean the GPU needs service.",
            ("amd-smi metric --ecc --ecc-blocks", "amd-smi bad-pages")), AMDSMI_COMMANDS,
            "; ".join(report.problems))

    @staticmethod
    def _amd_has_ras(gpu: AmdSmiGpu) -> bool:
        return gpu.ecc("uncorrectable") is not None or any(
            not isinstance(v, str) or v.upper() != "N/A" for k, v in gpu.ras.items()
            if k != "ecc_block_state") or "instinct" in gpu.name.lower()

    @staticmethod
    def _amd_gpu(gpu: AmdSmiGpu) -> list[Finding]:
        label = f"GPU {gpu.gpu} {gpu.name}" + (f" ({gpu.bdf})" if gpu.bdf else "")
        out = []
        bad = gpu.ecc("uncorrectable")
        blocks = {b: c["uncorrectable"] for b, c in gpu.ecc_blocks.items()
                  if c["uncorrectable"]}
        if bad:
            where = ", ".join(f"{b} {n}" for b, n in blocks.items())
            out.append(Finding.error(f"{label}: total_uncorrectable_count {bad}"
                                     + (f" ({where})" if where else "")))
        elif bad == 0:
            out.append(Finding.info(f"{label}: no uncorrectable ECC errors "
                                    f"(total_correctable_count {gpu.ecc('correctable')}, "
                                    f"total_deferred_count {gpu.ecc('deferred')})"))
        if _yes(str(gpu.ras.get("bad_page_threshold_exceeded", ""))):
            out.append(Finding.error(f"{label}: bad_page_threshold_exceeded: the GPU has "
                                     "retired more memory pages than its threshold"))
        hot = [v for v in gpu.active_violations if v in HOT]
        if hot:
            out.append(Finding.hint(f"{label}: throttling now: "
                                    + ", ".join(f"{v}_violation_status ACTIVE" for v in hot)))
        return out

    def _partitions(self, host: Host, gpus: tuple[AmdSmiGpu, ...]) -> list[Finding]:
        modes = {g.partition for g in gpus if any(g.partition)}
        out = [Finding.info(f"partition mode: compute {c or '?'}, memory {m or '?'}")
               for c, m in sorted(modes, key=str)]
        partitioned = any(c and c.upper() != "SPX" for c, _ in modes)
        probe = torch_info(host)
        env = environment(host)
        if partitioned and probe.imported and not any(v in env for v in VISIBLE):
            if probe.device_count != len(gpus):
                out.append(Finding.hint(
                    f"torch sees {probe.device_count} device(s) but amd-smi lists {len(gpus)} "
                    "GPU partitions: in a partitioned mode each partition is its own device"))
        return out

    # --- NVIDIA -----------------------------------------------------------------------------
    def _nvidia(self, host: Host) -> CheckResult:
        report = nvidia_smi_q(host)
        if report.result.not_found:
            return self.skipped("nvidia-smi is not installed (it reports ECC and row remapping)")
        if not report.gpus:
            return self.skipped("nvidia-smi -q listed no GPU")
        reporting = [g for g in report.gpus if g.ecc_enabled is not None]
        if not reporting:
            names = ", ".join(sorted({g.name for g in report.gpus}))
            return self.skipped(f"no GPU here has ECC ({names}); data-centre GPUs do")
        findings: list[Finding] = []
        for gpu in reporting:
            findings.extend(self._nvidia_gpu(gpu))
        worst = next((g for g in reporting if any(g.bus_id in f.text and f.severity is not
                                                  Severity.INFO for f in findings)), reporting[0])
        bus = "00000000:" + worst.bus_id[5:] if len(worst.bus_id) == 12 else worst.bus_id
        return self._verdict(findings, len(reporting), Fix(
            "Stop the programs on that GPU and reset it, so that pending row remaps or page "
            "retirements take effect; a remapping failure or uncorrectable errors that come "
            "back mean the GPU needs service (NVIDIA's memory error management).",
            (f"sudo nvidia-smi -r -i {bus}",), needs_root=True), nvidia_xid.MEMORY_ERRORS)

    @staticmethod
    def _nvidia_gpu(gpu: SmiGpu) -> list[Finding]:
        label = f"GPU {gpu.bus_id} {gpu.name}"
        out = []
        if gpu.ecc_enabled is False:
            out.append(Finding.info(f"{label}: ECC Mode Current: Disabled"))
        volatile = gpu.ecc_total("Volatile", uncorrectable=True)
        aggregate = gpu.ecc_total("Aggregate", uncorrectable=True)
        if volatile:
            out.append(Finding.error(f"{label}: {volatile} uncorrectable ECC error(s) since the "
                                     "driver loaded (ECC Errors, Volatile)"))
        elif aggregate:
            out.append(Finding.info(f"{label}: {aggregate} uncorrectable ECC error(s) in its "
                                    "lifetime (ECC Errors, Aggregate), none since the driver "
                                    "loaded"))
        if _yes(gpu.get("Remapped Rows", "Remapping Failure Occurred")):
            out.append(Finding.error(f"{label}: Remapped Rows: Remapping Failure Occurred: Yes"))
        if _yes(gpu.get("Remapped Rows", "Pending")):
            out.append(Finding.hint(
                f"{label}: Remapped Rows: Pending: Yes (correctable "
                f"{gpu.get('Remapped Rows', 'Correctable Error')}, uncorrectable "
                f"{gpu.get('Remapped Rows', 'Uncorrectable Error')}): a row remap waits for a "
                "GPU reset"))
        if _yes(gpu.get("Retired Pages", "Pending Page Blacklist")):
            out.append(Finding.hint(f"{label}: Retired Pages: Pending Page Blacklist: Yes: a "
                                    "page retirement waits for a GPU reset"))
        for key in ("Reset Required", "Drain and Reset Recommended"):
            if _yes(gpu.get("GPU Reset Status", key)):
                out.append(Finding.hint(f"{label}: GPU Reset Status: {key}: Yes"))
        hot = [r for r in gpu.throttle_reasons if r in HW_REASONS]
        if hot:
            out.append(Finding.hint(f"{label}: clocks lowered now by " + ", ".join(hot)))
        mig = gpu.get("MIG Mode", "Current")
        if mig and mig.lower() == "enabled":
            out.append(Finding.info(f"{label}: MIG Mode Current: Enabled"))
        if not out:
            out.append(Finding.info(f"{label}: no uncorrectable ECC errors, nothing pending"))
        return out

    # --- both ------------------------------------------------------------------------------
    def _verdict(self, findings: list[Finding], count: int, fix: Fix, source: str,
                 caveat: str = "") -> CheckResult:
        worst = max((_RANK[f.severity] for f in findings), default=0)
        if worst == 0 and caveat:
            return self.passed(f"{count} GPU(s): nothing wrong in what could be read ({caveat})",
                               findings)
        if worst == 0:
            return self.passed(f"{count} GPU(s): no uncorrectable errors, nothing pending",
                               findings)
        first = next(f for f in findings if _RANK[f.severity] == worst)
        status = Status.FAIL if worst == 2 else Status.WARN
        return self.result(status, first.text, findings, fix, source)
