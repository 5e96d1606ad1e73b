"""`rocmdoctor explain`: the command line around rocmdoctor.explain.

The text comes from the argument, from --file, or from standard input. The answer is made
specific with this machine's facts, or with a snapshot's (--from); they are gathered only
when an explanation needs them (the torch probe starts on first use).

Exit codes, the same with and without --json: 0 at least one message recognised; 1 nothing
recognised (the text shows a GPU error rocmdoctor does not know: the not-known answer, with
the facts found and a ready search; or no GPU error at all); 2 bad input (no text or an empty
one, both an argument and --file, an unreadable file or snapshot).

A file or standard input is read streaming, to its end, whatever its size; the answer says
what of a long text was left out (rocmdoctor.explain.reading).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import typer

from rocmdoctor import schemas
from rocmdoctor.cli.common import fail as _fail

if TYPE_CHECKING:
    from rocmdoctor.explain.reading import Paste
    from rocmdoctor.host import Host

SCHEMA = schemas.EXPLAIN
NOTHING = "nothing in the text is a known GPU, driver, ROCm or CUDA message or setting"


def _chunks(stream: Any) -> Iterator[str]:
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return
        yield chunk


def _read_paste(text: Optional[str], file: Optional[str]) -> Paste:
    """The text, read streaming to its end (rocmdoctor.explain.reading); no text at all is a
    usage error."""
    from rocmdoctor.explain.reading import read_chunks, read_text

    if text is not None and file is not None:
        raise _fail("give the text as an argument or with --file, not both")
    if text is not None:
        paste = read_text(text)
    elif file is not None:
        try:
            with open(file, encoding="utf-8", errors="replace") as fh:
                paste = read_chunks(_chunks(fh))
        except OSError as exc:
            raise _fail(f"cannot read {file}: {exc.strerror or exc}") from None
    elif sys.stdin.isatty():
        raise _fail("paste the message as an argument, give --file, or pipe it in "
                    "(rocmdoctor explain < log.txt)")
    else:
        paste = read_chunks(_chunks(sys.stdin))
    if not paste.text.strip():
        where = f"{file} is empty" if file is not None else "the text is empty"
        raise _fail(f"nothing to explain: {where}")
    return paste


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
    from rocmdoctor.explain import (
        UNKNOWN_GPU,
        diagnose_paste,
        render_explanations,
        render_not_known,
    )

    paste = _read_paste(text, file)
    found = diagnose_paste(paste, _host(from_file))
    if json_out:
        typer.echo(json.dumps({"schema": SCHEMA, "tool_version": __version__,
                               **found.to_dict()}, indent=2, ensure_ascii=False))
    elif found.explanations:
        sys.stdout.write(render_explanations(found.explanations, scan=found.scan))
    elif found.verdict == UNKNOWN_GPU and found.unknown is not None:
        sys.stdout.write(render_not_known(found.unknown, scan=found.scan))
    else:
        typer.echo(f"rocmdoctor: {NOTHING}" + (
            f"\n  the error it shows comes from the program or its packages, not the GPU "
            f"stack: {found.error_line}" if found.error_line else "")
            + (f"\n  {found.scan.summary()}" if found.scan else ""), err=True)
    raise typer.Exit(0 if found.explanations else 1)
