from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, None]:
    """Under CI (CI set, as .ci/run sets it) a test marked `ci_needs` that skips fails: CI
    installs what it needs (chromium, Debian's rocminfo and rocm-smi), so a skip there means
    the install went wrong, not that the test may be left out."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    marker = item.get_closest_marker("ci_needs")
    if report.skipped and marker is not None and os.environ.get("CI"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"skipped under CI, which installs {', '.join(marker.args)} for "
                           f"this test: {reason}")


@pytest.fixture(autouse=True)
def _no_live_host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests must not touch this machine: the live host raises unless marked e2e."""
    if request.node.get_closest_marker("e2e") or request.node.get_closest_marker("live"):
        return
    from rocmdoctor.host import live as livehost

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a unit test used the live host; use SnapshotHost or mark it e2e")

    monkeypatch.setattr(livehost.LiveHost, "__init__", refuse)


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in this process, as in a terminal's foreground job: a
    shell's background job (`pytest &`, a mutation run) starts with SIGINT ignored."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
