"""The command line. `rocmdoctor.cli:main` is the console entry point; each command's module
is imported only when that command runs (see `rocmdoctor.cli.app`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

# Options of `check` that change which probe runs, or whether one does: with any of them
# the probe starts once the command line is parsed, as it would anyway.
_PROBE_OPTIONS = frozenset({"--from", "--python", "--timeout", "--only", "--skip", "-h",
                            "--help"})


def plain_check(args: Sequence[str]) -> bool:
    """Whether `args` run `check` with the default probe: this interpreter, its timeout."""
    return bool(args) and args[0] == "check" and not any(
        arg.split("=", 1)[0] in _PROBE_OPTIONS for arg in args[1:])


def main() -> None:
    if plain_check(sys.argv[1:]):  # the probe imports torch while the rest starts
        from rocmdoctor.host.probe import start_early

        start_early()
    from rocmdoctor.cli.app import main as run

    run()
