"""host-link (`check --deep`): pinned host-to-device and device-to-host copies per GPU,
against what the GPU's PCIe link allows (the most its card and slot allow, as pcie-link reads
it, after line encoding) times the share a healthy card reaches (AMD expects 48 GB/s on an
MI300X's Gen5 x16 link: kb/deep_refs.py); on a machine of several NUMA nodes, the same copies
from memory on each node, to catch a GPU read through the other socket; PCIe replays during
the run (NVIDIA).

By hand: `nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce` (NVIDIA),
`TransferBench p2p` (AMD); `numactl --cpunodebind=N --membind=N` before either to pick the
node; `cat /sys/bus/pci/devices/<bdf>/numa_node` for the GPU's.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.deep import bus_of, deep_run, skip_reason
from rocmdoctor.facts.deep_grade import amount, describe, graded, share, status_of, worst_of
from rocmdoctor.facts.deep_results import GpuDeep
from rocmdoctor.facts.pcie_link import gpu_link
from rocmdoctor.host import Host
from rocmdoctor.kb import deep_refs, deep_rules, pcie
from rocmdoctor.model import Check, CheckResult, Figure, Finding, Fix, Reference, Status


class HostLink(Check):
    id = "host-link"
    title = "Host-to-GPU copies against the PCIe link and NUMA node (--deep)"
    source = deep_refs.AMD_CVS_HEALTH
    depends = ("deep",)
    uses_python = True
    level = "deep"

    def applies(self, host: Host) -> Optional[str]:
        return skip_reason(host)

    def run(self, host: Host) -> CheckResult:
        run = deep_run(host)
        figures: list[Figure] = []
        findings: list[Finding] = []
        problems: list[tuple[str, str, Fix]] = []
        narrow: dict[int, str] = {}
        for gpu in run.gpus:
            ref = self._link(host, gpu, bus_of(host, gpu, len(run.gpus)), findings, narrow)
            for key, name, rate in (("host:h2d", "pinned host-to-device copy", gpu.h2d),
                                    ("host:d2h", "pinned device-to-host copy", gpu.d2h)):
                if rate is None:
                    continue
                fig = graded(key, name, rate, gpu.index, ref, deep_rules.MEASURED,
                             expected_share=deep_refs.HOST_SHARE)
                figures.append(fig)
                findings.append(Finding.info(describe(fig)))
            verdicts = [f.verdict for f in figures if f.gpu == gpu.index and f.key == "host:h2d"]
            self._numa(gpu, findings, problems, verdicts[0] if verdicts else None)
            self._replays(gpu, findings, problems)
        if not figures:
            return self.skipped("host copies were not measured")
        verdicts = [f.verdict for f in figures] + [p[0] for p in problems]
        verdict = worst_of(verdicts)
        if verdict in ("warn", "fail"):
            problem = next((p for p in problems if p[0] == verdict), None)
            if problem is not None:
                return self.result(status_of(verdict), problem[1], findings, problem[2],
                                   figures=figures)
            low = next(f for f in figures if f.verdict == verdict)
            found = run.gpu(low.gpu or 0)
            summary = (f"GPU {low.gpu} {found.name if found else 'GPU'}: {low.name} "
                       f"{amount(low.value, 'GB/s')}, {share(low.ratio or 0)} of what its link "
                       "carries" + (f": {narrow[low.gpu]}" if low.gpu in narrow else ""))
            return self.result(status_of(verdict), summary, findings, Fix(
                "Check the link under load (pcie-link) and that nothing else copies at the same "
                "time; a link that trains below its width needs the card reseated or another "
                "slot.", ("rocmdoctor check --only pcie-link -v",)), figures=figures)
        if verdict is None:
            head = figures[0]
            return self.result(Status.SKIP, f"GPU {head.gpu}: host-to-device "
                               f"{amount(head.value, 'GB/s')}; the PCIe link could not be read: "
                               "no reference, no verdict", findings, figures=figures)
        inbound = [f for f in figures if f.key == "host:h2d"]
        low = min(inbound or figures, key=lambda f: f.ratio or 0)
        summary = (f"{len(run.gpus)} GPU(s): host-to-device {amount(low.value, 'GB/s')} at the "
                   f"lowest, {share(low.ratio or 0)} of what the link is expected to carry")
        return self.result(Status.PASS, summary, findings, figures=figures)

    @staticmethod
    def _link(host: Host, gpu: GpuDeep, bus: Optional[str], findings: list[Finding],
              narrow: dict[int, str]) -> Optional[Reference]:
        if not bus:
            return None
        link = gpu_link(host, bus)
        if link is None:
            findings.append(Finding.info(f"{gpu.label}: its PCIe link is not readable"))
            return None
        rate = pcie.link_gbps(link.max_speed, link.max_width)
        if rate is None:
            return None
        now = pcie.link_gbps(link.max_speed, link.width)
        text = (f"{pcie.describe(link.max_speed, link.max_width)} link, {rate:g} GB/s per "
                "direction after encoding")
        if link.width and link.max_width and link.width < link.max_width and now:
            narrow[gpu.index] = (f"the link runs x{link.width} of x{link.max_width}, at most "
                                 f"{now:g} GB/s per direction (pcie-link)")
            findings.append(Finding.error(f"{gpu.label}: {narrow[gpu.index]}"))
        return Reference(rate, "GB/s", text, pcie.SOURCE)

    @staticmethod
    def _numa(gpu: GpuDeep, findings: list[Finding], problems: list[tuple[str, str, Fix]],
              figure_verdict: Optional[str]) -> None:
        """Copies from this process far below those from the best node: the buffers sit on
        the far socket. That explains a low host-to-device figure, so it takes its verdict."""
        if not gpu.numa or gpu.h2d is None:
            return
        for n in gpu.numa:
            findings.append(Finding.info(
                f"{gpu.label}: host-to-device from NUMA node {n.node}'s memory "
                f"{amount(n.h2d.median if n.h2d else None, 'GB/s')}, device-to-host "
                f"{amount(n.d2h.median if n.d2h else None, 'GB/s')}"))
        best = max((n for n in gpu.numa if n.h2d), key=lambda n: n.h2d.median if n.h2d else 0,
                   default=None)
        if best is None or best.h2d is None:
            return
        node = gpu.numa_node if gpu.numa_node is not None else best.node
        ratio = gpu.h2d.median / best.h2d.median
        if ratio < deep_rules.NUMA_SHARE:
            text = (f"{gpu.label}: copies from this process run at "
                    f"{amount(gpu.h2d.median, 'GB/s')}, {share(ratio)} of the "
                    f"{amount(best.h2d.median, 'GB/s')} from NUMA node {best.node}'s memory: "
                    "its buffers sit on the other socket")
            verdict = "fail" if figure_verdict == "fail" else "warn"
            problems.append((verdict, text, Fix(
                f"Bind training to the GPU's NUMA node ({deep_rules.NUMACTL}).",
                (f"numactl --cpunodebind={node} --membind={node} python train.py",))))

    @staticmethod
    def _replays(gpu: GpuDeep, findings: list[Finding],
                 problems: list[tuple[str, str, Fix]]) -> None:
        before, after = gpu.before.pcie_replays, gpu.after.pcie_replays
        if before is None or after is None:
            return
        grew = after - before
        findings.append(Finding.info(f"{gpu.label}: PCIe replays during the run: {grew} "
                                     f"(counter {before} -> {after})"))
        if grew > deep_rules.MAX_PCIE_REPLAYS:
            problems.append(("warn", f"{gpu.label}: {grew} PCIe replays during the run, more "
                             f"than the {deep_rules.MAX_PCIE_REPLAYS} DCGM allows: a marginal "
                             "link", Fix("Reseat the card or try another slot or riser; watch "
                                         "the counter under load.",
                                         ("nvidia-smi -q -d PCIE",))))
