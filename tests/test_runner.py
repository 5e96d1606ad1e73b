from __future__ import annotations

import threading
import time

import pytest

from rocmdoctor.checks.registry import DEEP_CHECKS, STRESS_CHECKS, all_checks
from rocmdoctor.host import Host
from rocmdoctor.model import Check, CheckResult, Fix, Status
from rocmdoctor.runner import UnknownCheckError, run_checks, select_checks
from tests.helpers import host_of


class Fixed(Check):
    def __init__(self, cid: str, status: Status, delay: float = 0.0) -> None:
        self.id = cid  # type: ignore[misc]
        self.title = cid.title()  # type: ignore[misc]
        self.status = status
        self.delay = delay

    def run(self, host: Host) -> CheckResult:
        time.sleep(self.delay)
        return self.result(self.status, f"{self.id} is {self.status.value}")


class Crashing(Check):
    id = "crashing"
    title = "Crashes"

    def run(self, host: Host) -> CheckResult:
        raise KeyError("gfx1100")


class Hanging(Check):
    id = "hanging"
    title = "Hangs"

    def __init__(self) -> None:
        self.release = threading.Event()

    def run(self, host: Host) -> CheckResult:
        self.release.wait(30)
        return self.passed("late")


class NotHere(Check):
    id = "not-here"
    title = "Does not apply"

    def applies(self, host: Host) -> str | None:
        return "no AMD GPU"

    def run(self, host: Host) -> CheckResult:  # pragma: no cover - must not run
        raise AssertionError("run() called on a check that does not apply")


def test_results_keep_registry_order_even_when_finishing_out_of_order() -> None:
    checks = [Fixed("slow", Status.PASS, 0.2), Fixed("fast", Status.WARN)]
    report = run_checks(host_of(), checks)
    assert [r.id for r in report.results] == ["slow", "fast"]
    assert [r.status for r in report.results] == [Status.PASS, Status.WARN]
    assert report.results[0].duration_ms >= 200
    assert report.platform == "cpu"


def test_checks_run_concurrently() -> None:
    checks = [Fixed(f"c{i}", Status.PASS, 0.3) for i in range(6)]
    start = time.monotonic()
    run_checks(host_of(), checks)
    assert time.monotonic() - start < 1.2


def test_a_crashing_check_is_an_error_with_the_reason() -> None:
    report = run_checks(host_of(), [Crashing(), Fixed("after", Status.PASS)])
    crashed = report.results[0]
    assert crashed.status is Status.ERROR
    assert crashed.summary == "the check crashed: KeyError: 'gfx1100'"
    assert report.results[1].status is Status.PASS
    assert report.exit_code() == 1


def test_a_hanging_check_is_cut_off_and_reported() -> None:
    hanging = Hanging()
    start = time.monotonic()
    report = run_checks(host_of(), [hanging, Fixed("ok", Status.PASS)], timeout_s=0.3)
    hanging.release.set()
    assert time.monotonic() - start < 2
    assert report.results[0].status is Status.ERROR
    assert report.results[0].summary == "the check did not finish within 0.3 s"
    assert report.results[0].duration_ms == 300  # the time it was given, in ms
    assert report.results[1].status is Status.PASS


def test_a_check_that_does_not_apply_is_skipped_with_its_reason() -> None:
    report = run_checks(host_of(), [NotHere()])
    assert report.results[0].status is Status.SKIP
    assert report.results[0].summary == "no AMD GPU"
    assert report.exit_code() == 0


@pytest.mark.parametrize(
    ("statuses", "strict", "code"),
    [
        ([Status.PASS, Status.SKIP], False, 0),
        ([Status.PASS, Status.WARN], False, 0),
        ([Status.PASS, Status.WARN], True, 1),
        ([Status.FAIL], False, 1),
        ([Status.ERROR], False, 1),
    ],
)
def test_exit_codes_follow_the_contract(statuses: list[Status], strict: bool, code: int) -> None:
    checks = [Fixed(f"c{i}", s) for i, s in enumerate(statuses)]
    assert run_checks(host_of(), checks).exit_code(strict) == code


def test_select_checks_only_and_skip() -> None:
    checks = [Fixed("a", Status.PASS), Fixed("b", Status.PASS), Fixed("c", Status.PASS)]
    assert [c.id for c in select_checks(checks, only=["c", "a"])] == ["a", "c"]
    assert [c.id for c in select_checks(checks, skip=["b"])] == ["a", "c"]
    with pytest.raises(UnknownCheckError, match="unknown check id: nope"):
        select_checks(checks, only=["nope"])


def test_fix_defaults() -> None:
    fix = Fix("Log in again.")
    assert fix.commands == () and not fix.needs_root and not fix.needs_relogin


class Needs(Fixed):
    """A check with prerequisites that records whether it ran."""

    def __init__(self, cid: str, status: Status, depends: tuple[str, ...],
                 delay: float = 0.0) -> None:
        super().__init__(cid, status, delay)
        self.depends = depends  # type: ignore[misc]
        self.ran = False

    def run(self, host: Host) -> CheckResult:
        self.ran = True
        return super().run(host)


def test_a_failed_prerequisite_skips_its_dependents_naming_the_root() -> None:
    # The dependents come first in the list: the runner waits for their prerequisites.
    device = Needs("torch-device", Status.PASS, ("gpu-agents",))
    agents = Needs("gpu-agents", Status.PASS, ("kfd-access",))
    kfd = Fixed("kfd-access", Status.FAIL, delay=0.2)
    other = Needs("debug-env", Status.PASS, ())
    report = run_checks(host_of(), [device, agents, kfd, other])
    by_id = {r.id: r for r in report.results}
    assert [r.id for r in report.results] == ["torch-device", "gpu-agents", "kfd-access",
                                              "debug-env"]
    assert (by_id["gpu-agents"].status, by_id["gpu-agents"].summary,
            by_id["gpu-agents"].root_cause) == (
        Status.SKIP, "needs kfd-access, which failed", "kfd-access")
    assert (by_id["torch-device"].status, by_id["torch-device"].summary,
            by_id["torch-device"].root_cause) == (
        Status.SKIP, "needs gpu-agents, which was not run because kfd-access failed",
        "kfd-access")
    assert not device.ran and not agents.ran and other.ran
    assert by_id["torch-device"].depends == ("gpu-agents",)
    assert report.exit_code() == 1 and report.count(Status.FAIL) == 1


@pytest.mark.parametrize(("status", "runs"), [(Status.PASS, True), (Status.WARN, True),
                                              (Status.SKIP, True), (Status.ERROR, False)])
def test_only_a_failed_or_errored_prerequisite_stops_a_check(status: Status, runs: bool) -> None:
    dependent = Needs("b", Status.PASS, ("a",))
    report = run_checks(host_of(), [Fixed("a", status), dependent])
    assert dependent.ran is runs
    if not runs:
        assert report.results[1].summary == "needs a, which could not run"


def test_only_brings_in_the_prerequisites_and_globs_select() -> None:
    checks = [Fixed("amdgpu-driver", Status.PASS), Needs("kfd-access", Status.PASS,
                                                         ("amdgpu-driver",)),
              Needs("gpu-agents", Status.PASS, ("kfd-access",)), Fixed("torch-install",
                                                                         Status.PASS),
              Needs("torch-device", Status.PASS, ("torch-install",))]
    assert [c.id for c in select_checks(checks, only=["gpu-agents"])] == [
        "amdgpu-driver", "kfd-access", "gpu-agents"]
    assert [c.id for c in select_checks(checks, only=["torch-*"])] == [
        "torch-install", "torch-device"]
    assert [c.id for c in select_checks(checks, only=["gpu-agents"],
                                        skip=["amdgpu-driver"])] == ["kfd-access", "gpu-agents"]
    with pytest.raises(UnknownCheckError, match="unknown check id: rocm-\\*"):
        select_checks(checks, only=["rocm-*"])


def test_the_registry_prerequisites_are_known_ids_in_no_cycle() -> None:
    from rocmdoctor.checks.registry import all_checks

    checks = {c.id: c for c in all_checks(opt_in=True)}
    for check in checks.values():
        assert set(check.depends) <= set(checks), check.id
        seen, todo = set(), list(check.depends)
        while todo:
            dep = todo.pop()
            assert dep != check.id, f"{check.id} depends on itself through {dep}"
            if dep not in seen:
                seen.add(dep)
                todo.extend(checks[dep].depends)


def test_every_check_that_reads_the_probe_says_so() -> None:
    """`rocmdoctor check` starts the torch probe at once, and records its facts in the JSON
    report, only when a selected check declares `uses_python`: a check that reads the probe
    without it waits for a probe started late (`--only` it) and leaves the report without
    them. Each check runs on the real H200 snapshot and two ROCm machines of real captures."""
    from typing import Any, Optional

    from rocmdoctor.checks.registry import all_checks
    from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot
    from tests.test_h200_replay import SNAPSHOT
    from tests.test_torch_checks import gfx1150_host, mi300x_host

    class Asking(SnapshotHost):
        asked = False

        def python(self) -> Optional[dict[str, Any]]:
            self.asked = True
            return super().python()

    readers = set()
    for check in all_checks(opt_in=True):
        for data in (load_snapshot(str(SNAPSHOT)), gfx1150_host().data, mi300x_host().data):
            host = Asking(data)
            if check.applies(host) is None:
                check.run(host)
            if host.asked:
                readers.add(check.id)
    declared = {c.id for c in all_checks(opt_in=True) if c.uses_python}
    assert "miopen-db" in readers and "torch-device" in readers
    assert sorted(readers - declared) == []


def test_the_measured_checks_run_only_when_asked_for() -> None:
    deep = {cls().id for cls in DEEP_CHECKS}
    stress = {cls().id for cls in STRESS_CHECKS}
    plain = {c.id for c in all_checks()}
    assert plain & (deep | stress) == set()
    assert {c.id for c in all_checks(deep=True)} == plain | deep
    assert {c.id for c in all_checks(stress=True)} == plain | deep | stress


def test_a_slow_prerequisite_is_waited_for_until_the_deadline_not_a_fixed_second() -> None:
    # A prerequisite that fails after 1.2 s of a 10 s budget still skips its dependent, and
    # the slow check itself is its own result, not "did not finish".
    slow = Fixed("kfd-access", Status.FAIL, delay=1.2)
    dependent = Needs("gpu-agents", Status.PASS, ("kfd-access",))
    report = run_checks(host_of(), [dependent, slow], timeout_s=10)
    assert [(r.id, r.status) for r in report.results] == [
        ("gpu-agents", Status.SKIP), ("kfd-access", Status.FAIL)]
    assert dependent.ran is False
    # ...and a check alone that takes 1.2 s of its 10 is waited for.
    alone = run_checks(host_of(), [Fixed("slow", Status.PASS, delay=1.2)], timeout_s=10)
    assert [(r.id, r.status) for r in alone.results] == [("slow", Status.PASS)]
