"""The explicit, ordered list of checks. Order is output order."""

from __future__ import annotations

from rocmdoctor.checks.debug_env import DebugEnv
from rocmdoctor.model import Check


def all_checks() -> list[Check]:
    return [
        DebugEnv(),
    ]
