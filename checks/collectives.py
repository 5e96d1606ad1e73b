"""collectives (opt-in: `rocmdoctor check --collectives`): all-reduce bus bandwidth over every
local GPU and peer-to-peer copies between each pair, against what the topology promises.

One process per GPU, started with torchrun's variables and joined through env:// as a
training script is (doctor/collectives_launch.py, doctor/collectives_rank.py), NCCL on CUDA
and RCCL on ROCm, under a deadline: a rank that dies or hangs is the result, not a hang.

By hand: nccl-tests' `all_reduce_perf -b 1M -e 256M -f 8 -g <GPUs>` (rccl-tests on ROCm);
the link types: `nvidia-smi topo -m`, `amd-smi topology` or `rocm-smi --showtopo`.
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Optional

from rocmdoctor.facts.collectives import collectives_run
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb.nccl_env import NCCL_ENV, RCCL_ENV, risky_settings
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

NCCL_TESTS_PERF = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
NCCL_ACS = ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
            "#pci-access-control-services-acs")
DEADLINE_S = 120.0
SLOW_BUS = 0.4   # all-reduce bus bandwidth under this share of the link's rate: slow
SLOW_PAIR = 0.5  # a pair under this share of the median pair on the same kind of link: slow


def _gb(x: float) -> str:
    return f"{x:,.1f} GB/s"


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 2**10} KiB"


class Collectives(Check):
    id = "collectives"
    depends = ("torch-device",)
    title = "Collectives between GPUs (all-reduce, peer-to-peer)"
    source = NCCL_TESTS_PERF
    uses_python = True
    opt_in = True
    deadline_s = DEADLINE_S + 60 + 60  # + the probe's 60 s + the topology commands

    def _plan(self, host: Host) -> tuple[Optional[str], int, str]:
        """(skip reason, ranks, backend)."""
        env = environment(host)
        testing = env.get("ROCMDOCTOR_TESTING") == "1"
        cpu_ranks = env.get("ROCMDOCTOR_COLL_CPU_RANKS", "")
        if testing and cpu_ranks.isdigit():
            return None, int(cpu_ranks), "gloo"
        torch = torch_info(host)
        if not torch.imported:
            return "torch does not import in the Python that trains: nothing to launch", 0, ""
        count = torch.device_count
        if not torch.available or count == 0:
            return "torch sees no GPU: no collectives to measure", 0, ""
        if count < 2:
            return f"needs 2 or more GPUs; torch sees {count}", 0, ""
        return None, count, "nccl"

    def applies(self, host: Host) -> Optional[str]:
        return self._plan(host)[0]

    def run(self, host: Host) -> CheckResult:
        _, ranks, backend = self._plan(host)
        deadline, extra = DEADLINE_S, []
        env = environment(host)
        if env.get("ROCMDOCTOR_TESTING") == "1":  # short runs for the test suite
            deadline = float(env.get("ROCMDOCTOR_COLL_DEADLINE", deadline))
            if env.get("ROCMDOCTOR_COLL_SIZES"):
                extra = ["--sizes", env["ROCMDOCTOR_COLL_SIZES"]]
        done = collectives_run(host, ranks, backend, deadline, extra)
        if done.not_found:  # a snapshot taken without --collectives has no run to replay
            return self.skipped("no collectives run recorded here (take the snapshot with "
                                "`rocmdoctor snapshot --collectives`)")
        rocm = platform_kind(host) == "rocm"
        lib = "RCCL" if rocm else ("NCCL" if backend == "nccl" else backend)
        if done.timed_out or not done.stdout.strip():
            why = "did not finish" if done.timed_out else \
                f"exited with code {done.returncode} and printed nothing"
            return self.result(Status.ERROR, f"the collectives launcher {why}",
                               [Finding.info(line) for line in done.stderr.splitlines()[-5:]])
        try:
            data = json.loads(done.stdout.strip().splitlines()[-1])
        except ValueError:
            return self.result(Status.ERROR, "the collectives launcher printed no result")
        return self.judge(host, data, lib, RCCL_ENV if rocm else NCCL_ENV)

    # --- the verdict ------------------------------------------------------------------------
    def judge(self, host: Host, data: dict[str, Any], lib: str, env_doc: str) -> CheckResult:
        findings: list[Finding] = []
        env_warn = []
        for var, value in risky_settings(dict(environment(host))):
            text = f"{var.name}={value}: {var.cost}"
            if var.severity == "warn":
                env_warn.append(var.name)
                findings.append(Finding.error(text))
            else:
                findings.append(Finding.info(text))
        world = int(data.get("world_size") or 0)
        failed = [r for r in data.get("ranks", []) if r.get("state") != "ok"]
        if failed:
            return self._failed(data, failed, findings, lib)
        if not data.get("correct"):
            return self.result(Status.FAIL, f"all-reduce over {world} ranks gave a wrong sum",
                               findings, self._debug_fix(world, lib))
        sweep = data.get("allreduce") or []
        if not sweep:
            return self.result(Status.ERROR, "the ranks finished but reported no measurement",
                               findings)
        findings.append(Finding.info("all-reduce bus bandwidth by message size: " + ", ".join(
            f"{_size(int(m['bytes']))} {_gb(float(m['busbw_gbs']))}" for m in sweep)))
        largest = max(sweep, key=lambda m: int(m["bytes"]))
        busbw = float(largest["busbw_gbs"])
        headline = (f"{world} ranks ({lib}): all-reduce of {_size(int(largest['bytes']))} at "
                    f"{_gb(busbw)} bus bandwidth")
        slow: list[str] = []
        names = (data.get("info") or {}).get("names") or []
        topo = _topology(host)
        rate = _slowest_rate(topo, names[0] if names else "")
        if rate is not None:
            gbs, label, what = rate
            headline += f", {busbw / gbs:.0%} of the {_gb(gbs)} per direction of {label}"
            findings.append(Finding.info(f"{label}: {what}"))
            if busbw < SLOW_BUS * gbs:
                slow.append(f"all-reduce bus bandwidth is {busbw / gbs:.0%} of what the "
                            f"slowest link ({label}) carries")
        slow += _pair_problems(data.get("p2p") or [], topo, findings)
        if data.get("p2p_error"):
            findings.append(Finding.info(f"peer-to-peer copies not measured: "
                                         f"{data['p2p_error']}"))
        findings.extend(Finding.error(text) for text in slow)
        if slow or env_warn:
            fix = Fix(text=f"Unset the variables that disable {lib}'s fast paths, then measure "
                      "again.", commands=(f"unset {' '.join(env_warn)}",)) if env_warn else \
                Fix(text="Compare with the vendor's test (nccl-tests / rccl-tests "
                    "all_reduce_perf) and check the links: a GPU on a slower slot or with "
                    "peer access off slows every collective.", commands=())
            summary = headline + "; " + (slow[0] if slow else
                                         f"{', '.join(env_warn)} set: fast paths disabled")
            return self.result(Status.WARN, summary, findings, fix,
                               source=env_doc if env_warn and not slow else NCCL_TESTS_PERF)
        return self.passed(headline, findings)

    def _failed(self, data: dict[str, Any], failed: list[dict[str, Any]],
                findings: list[Finding], lib: str) -> CheckResult:
        world = int(data.get("world_size") or 0)
        for r in data.get("ranks", []):
            findings.append(Finding.info(f"rank {r['rank']}: {r['state']}: {r['message']}"))
            tail = (r.get("stderr_tail") or "").strip().splitlines()
            if tail and r.get("state") != "ok":
                findings.append(Finding.info(f"rank {r['rank']} stderr: {tail[-1][:300]}"))
        hung = [r for r in failed if r["state"] == "hung"]
        if hung and len(hung) == len(failed):
            stages: dict[str, list[int]] = {}
            for r in hung:
                stages.setdefault(r["stage"], []).append(r["rank"])
            where = "; ".join(f"rank{'s' if len(v) > 1 else ''} "
                              f"{', '.join(map(str, v))} in '{k}'" for k, v in stages.items())
            summary = f"{len(hung)} of {world} ranks hung and were killed: {where}"
        else:
            crashed = [r for r in failed if r["state"] == "crashed"]
            first = min(crashed or failed,
                        key=lambda r: float(r["ended_s"]) if r.get("ended_s") is not None
                        else 1e9)
            summary = f"rank {first['rank']} failed first: {first['message']}"
        return self.result(Status.FAIL, summary, findings, self._debug_fix(world, lib))

    @staticmethod
    def _debug_fix(world: int, lib: str) -> Fix:
        return Fix(text=f"Rerun with {lib}'s log on and read the first error it prints.",
                   commands=("NCCL_DEBUG=INFO rocmdoctor check --collectives --only "
                             "collectives -v",))


def _topology(host: Host) -> Any:
    try:
        from rocmdoctor.facts.topology import read_topology

        return read_topology(host, platform_kind(host))
    except Exception:  # noqa: BLE001 - the topology is a comparison, never the verdict
        return None


def _slowest_rate(topo: Any, gpu_name: str) -> Optional[tuple[float, str, str]]:
    """(GB/s per direction, the link's label, what the figure is) of the slowest link."""
    if topo is None:
        return None
    from rocmdoctor.kb.links import nominal_rate

    rates = [(nominal_rate(link, gpu_name), link) for link in topo.links.values()]
    if not rates or any(rate is None for rate, _ in rates):
        return None
    rate, link = min(rates, key=lambda pair: pair[0].gbps_per_direction if pair[0] else 0.0)
    assert rate is not None
    return rate.gbps_per_direction, link.label, rate.what


def _pair_problems(p2p: list[dict[str, Any]], topo: Any, findings: list[Finding]) -> list[str]:
    """Pairs without peer access on a fast link, and pairs far slower than their peers."""
    if not p2p:
        return []
    problems: list[str] = []
    kind_of = {}
    if topo is not None:
        for (i, j), link in topo.links.items():
            kind_of[(i, j)] = kind_of[(j, i)] = link.kind
    by_kind: dict[str, list[float]] = {}
    for pair in p2p:
        by_kind.setdefault(kind_of.get((pair["src"], pair["dst"]), "?"), []).append(
            float(pair["gbs"]))
    medians = {k: statistics.median(v) for k, v in by_kind.items()}
    findings.append(Finding.info("peer-to-peer copies: " + ", ".join(
        f"{p['src']}->{p['dst']} {_gb(float(p['gbs']))}"
        + ("" if p.get("access") else " (no peer access)") for p in p2p)))
    for pair in p2p:
        kind = kind_of.get((pair["src"], pair["dst"]), "?")
        name = f"GPUs {pair['src']} and {pair['dst']}"
        if not pair.get("access") and kind in ("nvlink", "xgmi"):
            problems.append(f"{name} are linked by {kind.upper()} but peer access is off, so "
                            f"copies go through host memory (see {NCCL_ACS})")
        elif len(by_kind[kind]) > 2 and float(pair["gbs"]) < SLOW_PAIR * medians[kind]:
            problems.append(f"{name} copy at {_gb(float(pair['gbs']))}, under half the "
                            f"{_gb(medians[kind])} of the other pairs")
    return problems
