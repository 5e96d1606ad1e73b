from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_live_host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests must not touch this machine: the live host raises unless marked e2e."""
    if request.node.get_closest_marker("e2e") or request.node.get_closest_marker("live"):
        return
    from rocmdoctor.host import live as livehost

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a unit test used the live host; use SnapshotHost or mark it e2e")

    monkeypatch.setattr(livehost.LiveHost, "__init__", refuse)
