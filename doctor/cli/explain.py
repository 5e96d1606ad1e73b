"""`rocmdoctor explain`: the command line around rocmdoctor.explain.

The text comes from the argument, from --file, or from standard input. The answer is made
specific with this machine's facts, or with a snapshot's (--from); they are gathered only
when an explanation needs them (the torch probe starts on first use).
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
NOTHING = ("nothing in the text matches a known error, kernel message or setting; "
           "`rocmdoctor check` looks at the machine itself")


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
    from rocmdoctor.explain import explain_text, render_explanations

    body = _read_text(text, file)
    explanations = explain_text(body, _host(from_file))
    if json_out:
        typer.echo(json.dumps({"schema": SCHEMA, "tool_version": __version__,
                               "recognized": bool(explanations),
                               "explanations": [e.to_dict() for e in explanations]},
                              indent=2, ensure_ascii=False))
    elif explanations:
        sys.stdout.write(render_explanations(explanations))
    else:
        typer.echo(f"rocmdoctor: {NOTHING}", err=True)
    raise typer.Exit(0 if explanations else 1)
