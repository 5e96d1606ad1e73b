"""The environment: the variables of the process rocmdoctor runs in, which the Python that
trains inherits (a snapshot's `env`, as redact.capture_env keeps it).

Checks read a variable here, never from the Host, so that one place says which environment
a verdict is about.

By hand: `env`.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocmdoctor.host import Host


def environment(host: Host) -> Mapping[str, str]:
    """Every variable, by name."""
    return host.env
