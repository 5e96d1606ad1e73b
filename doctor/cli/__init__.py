"""The command line. `rocmdoctor.cli:main` is the console entry point; each command's module
is imported only when that command runs (see `rocmdoctor.cli.app`)."""

from __future__ import annotations


def main() -> None:
    from rocmdoctor.cli.app import main as run

    run()
