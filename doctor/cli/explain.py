"""`rocmdoctor explain`: the command line around rocmdoctor.explain.

The text comes from the argument, from --file, or from standard input. The answer is made
specific with this machine's facts, or with a snapshot's (--from); they are gathered only
when an explanation needs them (the torch probe starts on first use).

Exit codes, the same with and without --json: 0 at least one message recognised; 1 nothing
recognised (the text shows a GPU error rocmdoctor does not know, or no GPU error at all);
2 bad input (no text, an unreadable file or snapshot).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Optional

import typer

from rocmdoctor import schemas
from rocmdoctor.cli.common import fail as _fail

if TYPE_CHECKING:
    from rocmdoctor.host import Host

SCHEMA = schemas.EXPLAIN
NOTHING = "nothing in the text is a known GPU, driver, ROCm or CUDA message or setting"
UNKNOWN = ("the text shows a GPU error that rocmdoctor does not know; `rocmdoctor report` "
           "writes this machine's report to attach to an issue")


def _read_text(text: Optional[str], file: Optional[str]) -> str:
    if text is not None and file is not None:
        raise _fail("give the text as an argument or with --file, not both")
    if text is not None:
        return text
    if file is not None:
        try:
            with open(file, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError as exc:
            raise _fail(f"cannot read {file}: {exc.strerror or exc}") from None
    if sys.stdin.isatty():
        raise _fail("paste the message as an argument, give --file, or pipe it in "
                    "(rocmdoctor explain < log.txt)")
    return sys.stdin.read()


def _host(from_file: Optional[str]) -> Host:
    from rocmdoctor.host.snapshot import SnapshotError, SnapshotHost, load_snapshot

    if from_file is not None:
        try:
            return SnapshotHost(load_snapshot(from_file))
        except SnapshotError as exc:
            raise _fail(str(exc)) from None
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.host.probe import make_probe

    def probe() -> Optional[dict[str, Any]]:
        started = make_probe(None)  # the child starts here, only when an answer needs torch
        return started() if started is not None else None

    return LiveHost(probe=probe)


def explain_command(
    text: Optional[str] = typer.Argument(None, help="The message (default: standard input)."),
    file: Optional[str] = typer.Option(None, "--file", "-f", help="Read the message from a file."),
    from_file: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Use a snapshot's machine facts, not this one's."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (rocmdoctor.explain/1)."),
) -> None:
    """Explain an error message, kernel log or setting: cause, fix, and the check to confirm."""
    from rocmdoctor import __version__
    from rocmdoctor.explain import UNKNOWN_GPU, diagnose, render_explanations

    body = _read_text(text, file)
    found = diagnose(body, _host(from_file))
    if json_out:
        typer.echo(json.dumps({"schema": SCHEMA, "tool_version": __version__,
                               **found.to_dict()}, indent=2, ensure_ascii=False))
    elif found.explanations:
        sys.stdout.write(render_explanations(found.explanations))
    elif found.verdict == UNKNOWN_GPU:
        typer.echo(f"rocmdoctor: {UNKNOWN}\n  {found.error_line}", err=True)
    else:
        typer.echo(f"rocmdoctor: {NOTHING}" + (
            f"\n  the error it shows comes from the program or its packages, not the GPU "
            f"stack: {found.error_line}" if found.error_line else ""), err=True)
    raise typer.Exit(0 if found.explanations else 1)
