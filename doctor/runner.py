"""Run checks concurrently, each with a deadline and after its prerequisites, and contain
their crashes."""

from __future__ import annotations

import fnmatch
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
BLOCKING = (Status.FAIL, Status.ERROR)  # a prerequisite with this status stops its dependents


class UnknownCheckError(ValueError):
    pass


def _matching(pattern: str, checks: Sequence[Check]) -> list[str]:
    """The ids a `--only`/`--skip` word names: an exact id or a glob (`torch-*`)."""
    return [c.id for c in checks if c.id == pattern or fnmatch.fnmatchcase(c.id, pattern)]


def with_prerequisites(checks: Sequence[Check], ids: set[str]) -> set[str]:
    """`ids` and, transitively, every check they depend on."""
    by_id = {c.id: c for c in checks}
    todo, seen = list(ids), set(ids)
    while todo:
        check = by_id.get(todo.pop())
        for dep in check.depends if check else ():
            if dep in by_id and dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def select_checks(
    checks: Sequence[Check], only: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[Check]:
    """The checks to run, in registry order: `only` (ids or globs) with their prerequisites,
    less `skip`. A word that matches no check is a usage error."""
    unknown = [word for word in (*only, *skip) if not _matching(word, checks)]
    if unknown:
        raise UnknownCheckError(
            f"unknown check id: {', '.join(unknown)} (no check matches it; known: "
            f"{', '.join(c.id for c in checks)})"
        )
    skipped = {i for word in skip for i in _matching(word, checks)}
    if only:
        wanted = with_prerequisites(checks, {i for word in only for i in _matching(word, checks)})
    else:
        wanted = {c.id for c in checks}
    return [c for c in checks if c.id in wanted and c.id not in skipped]


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


def blocked_result(check: Check, prerequisites: Sequence[CheckResult]) -> Optional[CheckResult]:
    """The skip of a check whose prerequisite failed, errored or was itself skipped for a
    failure; None when the check may run."""
    for dep in prerequisites:
        root = dep.root_cause or (dep.id if dep.status in BLOCKING else None)
        if root is None:
            continue
        why = {Status.FAIL: "which failed", Status.ERROR: "which could not run"}.get(
            dep.status, f"which was not run because {root} failed")
        return replace(check.skipped(f"needs {dep.id}, {why}"),
                       root_cause=root)
    return None


def run_checks(
    host: Host,
    checks: Sequence[Check],
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
) -> Report:
    """Run every check in its own daemon thread; results come out in registry order.

    A check waits for the prerequisites that are among `checks` and is skipped, naming the
    root cause, when one of them failed. A check still running at the deadline is reported as
    `error`; its thread is abandoned (daemon), so a hang cannot keep rocmdoctor from finishing.
    """
    index_of = {c.id: i for i, c in enumerate(checks)}
    results: dict[int, CheckResult] = {}
    ended = [threading.Event() for _ in checks]
    lock = threading.Lock()
    deadline = time.monotonic() + timeout_s

    def worker(index: int, check: Check) -> None:
        deps = [index_of[d] for d in check.depends if d in index_of and index_of[d] != index]
        for dep in deps:
            ended[dep].wait(max(0.0, deadline - time.monotonic()))
        with lock:
            done = [results[d] for d in deps if d in results]
        result = blocked_result(check, done) if len(done) == len(deps) else None
        if result is None:
            result = run_one(check, host)
        with lock:
            results.setdefault(index, result)
        ended[index].set()

    for index, check in enumerate(checks):
        threading.Thread(target=worker, args=(index, check), daemon=True,
                         name=f"check-{check.id}").start()
    for event in ended:
        event.wait(max(0.0, deadline - time.monotonic()))
    with lock:
        for index, check in enumerate(checks):
            results.setdefault(index, replace(
                check.result(Status.ERROR, f"the check did not finish within {timeout_s:g} s"),
                duration_ms=int(timeout_s * 1000)))
        ordered = tuple(results[i] for i in range(len(checks)))
    return Report(tool_version=__version__, platform=platform_kind(host), results=ordered)


def run_selected(
    host: Host,
    checks: Sequence[Check],
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    timeout_s: Optional[float] = None,
    min_timeout_s: float = 0.0,
) -> Report:
    """`timeout_s`: the deadline for all checks; by default the longest of the runner's own,
    the checks' `deadline_s` and `min_timeout_s` (the CLI's: above the probe's timeout, so
    the probe's checks report the probe's own reason)."""
    chosen = select_checks(checks, only, skip)
    limit = timeout_s or max([DEFAULT_CHECK_TIMEOUT_S, min_timeout_s]
                             + [c.deadline_s for c in chosen if c.deadline_s is not None])
    return run_checks(host, chosen, timeout_s=limit)
