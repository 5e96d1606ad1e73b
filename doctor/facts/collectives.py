"""The collectives measurement (`check --collectives`): the launcher's run in the Python that
trains, one rank per GPU (host/collectives_launch.py, host/collectives_rank.py). Its last
stdout line is the JSON result.

By hand: nccl-tests' `all_reduce_perf -b 1M -e 256M -f 8 -g <GPUs>` (rccl-tests on ROCm).
"""

from __future__ import annotations

from collections.abc import Sequence

from rocmdoctor.host import CommandResult, Host

TOOL = "rocmdoctor-collectives"  # LiveHost runs collectives_launch.py for this name
GRACE_S = 30.0  # the launcher's own deadline, then this long for it to stop its ranks


def collectives_run(host: Host, ranks: int, backend: str, deadline_s: float,
                    extra: Sequence[str] = ()) -> CommandResult:
    """The launcher's run with `ranks` ranks on `backend` (nccl, gloo), cut off after
    `deadline_s`. A snapshot taken without --collectives answers "not found"."""
    argv = [TOOL, "--nprocs", str(ranks), "--backend", backend,
            "--timeout", f"{deadline_s:g}", *extra]
    return host.run(argv, timeout=deadline_s + GRACE_S)
