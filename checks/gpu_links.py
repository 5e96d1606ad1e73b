"""gpu-links (`check --deep`, two or more GPUs): copies from each GPU to each other one, and
whether peer access is on, against the nominal rate of the link between them (kb/links.py:
NVLink, xGMI, PCIe) times the share RCCL reaches on xGMI; and the NVLink / xGMI error and
replay counters read before and after the run (NVML, amdsmi).

By hand: `nvidia-smi topo -m` and `nvidia-smi nvlink -e` (error counters) on NVIDIA;
`amd-smi topology` and `amd-smi xgmi` on AMD; nvbandwidth's or TransferBench's p2p tests for
the copies.
"""

from __future__ import annotations

from typing import Any, Optional

from rocmdoctor.facts.deep import deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, describe, graded, share, status_of, worst_of
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_rules
from rocmdoctor.kb.links import nominal_rate
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status


def _topology(host: Host) -> Any:
    try:
        from rocmdoctor.facts.topology import read_topology

        return read_topology(host, platform_kind(host))
    except Exception:  # noqa: BLE001 - the topology is a comparison, never the verdict
        return None


class GpuLinksCheck(Check):
    id = "gpu-links"
    title = "Links between GPUs: peer copies and error counters (--deep)"
    source = deep_rules.RCCL_XGMI
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        reason = skip_reason(host)
        if reason is not None:
            return reason
        run = deep_run(host)
        if run.recorded and run.error is None and len(run.gpus) < 2:
            return f"needs 2 or more GPUs; {len(run.gpus)} measured"
        return None

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        topo = _topology(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        problems: list[tuple[str, str, Fix]] = []
        for peer in run.peers:
            src = run.gpu(peer.src)
            link = None
            if topo is not None:
                link = topo.links.get((min(peer.src, peer.dst), max(peer.src, peer.dst)))
            rate = nominal_rate(link, src.name) if link is not None and src else None
            ref = Reference(rate.gbps_per_direction, "GB/s", f"{link.label}: {rate.what}",
                            rate.source) if rate and link else None
            fig = graded(f"peer:{peer.src}-{peer.dst}", f"copy to GPU {peer.dst}", peer.rate,
                         peer.src, ref, deep_rules.MEASURED, expected_share=deep_rules.LINK_SHARE)
            figures.append(fig)
            findings.append(Finding.info(describe(fig) + (
                "" if peer.access else " (no peer access: through host memory)")))
            if not peer.access and link is not None and link.kind in ("nvlink", "xgmi"):
                problems.append(("warn", f"GPUs {peer.src} and {peer.dst} are linked by "
                                 f"{link.kind.upper()} but peer access is off: copies go "
                                 "through host memory", Fix(
                                     "Check the IOMMU and ACS settings (NCCL's troubleshooting "
                                     "page) and that both GPUs are visible to the process.",
                                     ("nvidia-smi topo -p2p r",))))
        for gpu in run.gpus:
            problems.extend(self._counters(gpu.label, gpu.before, gpu.after, findings))
        if not figures and not problems:
            return self.skipped("no copies between GPUs were measured")
        verdict = worst_of([f.verdict for f in figures] + [p[0] for p in problems])
        if verdict in ("warn", "fail"):
            problem = next((p for p in problems if p[0] == verdict), None)
            if problem:
                return self.result(status_of(verdict), problem[1], findings, problem[2],
                                   figures=figures)
            low = next(f for f in figures if f.verdict == verdict)
            return self.result(status_of(verdict), f"GPU {low.gpu} {low.name}: "
                               f"{amount(low.value, 'GB/s')}, {share(low.ratio or 0)} of what "
                               "its link is expected to carry", findings, Fix(
                                   "Compare with the vendor's peer-to-peer test and check the "
                                   "links' error counters.", ("nvidia-smi nvlink -e",)),
                               figures=figures)
        if verdict is None:
            return self.result(Status.SKIP, f"{len(figures)} peer copies measured; the links "
                               "between these GPUs are not in the tables: no verdict",
                               findings, figures=figures)
        return self.result(Status.PASS, f"{len(figures)} peer copies within the band of their "
                           "links; no link errors during the run", findings, figures=figures)

    @staticmethod
    def _counters(label: str, before: Any, after: Any,
                  findings: list[Finding]) -> list[tuple[str, str, Fix]]:
        out = []
        for link, counts in sorted(after.links.items()):
            old = before.links.get(link, {})
            grew = {k: v - old.get(k, 0) for k, v in counts.items() if v > old.get(k, 0)}
            if grew:
                text = ", ".join(f"{k} +{n}" for k, n in sorted(grew.items()))
                out.append(("warn", f"{label}: NVLink {link} counted errors during the run "
                            f"({text})", Fix("Watch the link's counters under load; a link "
                                             "that keeps counting needs service.",
                                             ("nvidia-smi nvlink -e",))))
        if after.xgmi_error and after.xgmi_error.upper() not in ("NO_ERROR", "NOERROR"):
            out.append(("warn", f"{label}: xGMI error status {after.xgmi_error} after the run",
                        Fix("Read the xGMI link status and errors.", ("amd-smi xgmi",))))
        if not out and after.links:
            findings.append(Finding.info(f"{label}: {len(after.links)} NVLink link(s), no "
                                         "error counted during the run"))
        return out
