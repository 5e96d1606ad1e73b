"""Run checks concurrently, each with a deadline, and contain their crashes."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Optional

from rocmdoctor import __version__
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Report, Status

DEFAULT_CHECK_TIMEOUT_S = 90.0  # above the probe's own 60 s, so its checks report its reason


class UnknownCheckError(ValueError):
    pass


def select_checks(
    checks: Sequence[Check], only: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[Check]:
    known = {c.id for c in checks}
    unknown = sorted((set(only) | set(skip)) - known)
    if unknown:
        raise UnknownCheckError(
            f"unknown check id: {', '.join(unknown)} (known: {', '.join(c.id for c in checks)})"
        )
    chosen = [c for c in checks if not only or c.id in only]
    return [c for c in chosen if c.id not in skip]


def run_one(check: Check, host: Host) -> CheckResult:
    """Run one check; a raised exception becomes an `error` result with the reason."""
    start = time.monotonic()
    try:
        reason = check.applies(host)
        if reason is not None:
            result = check.skipped(reason)
        else:
            result = check.run(host)
    except Exception as exc:  # crash containment: a broken check is a result
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        summary = f"the check crashed: {type(exc).__name__}" + (f": {detail}" if detail else "")
        result = check.result(Status.ERROR, summary)
    return replace(result, duration_ms=int((time.monotonic() - start) * 1000))


def run_checks(
    host: Host,
    checks: Sequence[Check],
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
) -> Report:
    """Run every check in its own daemon thread; results come out in registry order.

    A check still running at its deadline is reported as `error`; its thread is abandoned
    (daemon), so a hang cannot keep rocmdoctor from finishing.
    """
    results: dict[int, CheckResult] = {}
    done: queue.Queue[tuple[int, CheckResult]] = queue.Queue()
    start = time.monotonic()

    def worker(index: int, check: Check) -> None:
        done.put((index, run_one(check, host)))

    for index, check in enumerate(checks):
        threading.Thread(target=worker, args=(index, check), daemon=True,
                         name=f"check-{check.id}").start()

    while len(results) < len(checks):
        try:
            index, result = done.get(timeout=0.05)
            results[index] = result
            continue
        except queue.Empty:
            pass
        if time.monotonic() - start <= timeout_s:
            continue
        for index in [i for i in range(len(checks)) if i not in results]:
            check = checks[index]
            results[index] = replace(
                check.result(Status.ERROR, f"the check did not finish within {timeout_s:g} s"),
                duration_ms=int(timeout_s * 1000),
            )
    ordered = tuple(results[i] for i in range(len(checks)))
    return Report(tool_version=__version__, platform=platform_kind(host), results=ordered)


def run_selected(
    host: Host,
    checks: Sequence[Check],
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    timeout_s: Optional[float] = None,
) -> Report:
    chosen = select_checks(checks, only, skip)
    limit = timeout_s or max([DEFAULT_CHECK_TIMEOUT_S] + [c.deadline_s for c in chosen
                                                          if c.deadline_s is not None])
    return run_checks(host, chosen, timeout_s=limit)
