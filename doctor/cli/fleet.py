"""`rocmdoctor fleet summarize` (registered by rocmdoctor.cli.app): one view of many nodes.

Collect `rocmdoctor check --json` from every node (docs/fleet.md: srun, an ssh loop), then
summarize the files. A file that cannot be used is one line on stderr and the rest go on.
Exit codes: 0 no node failed, 1 a node has a failed or errored check, 2 bad usage or no
usable file.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from rocmdoctor.cli.common import fail as _fail
from rocmdoctor.cli.common import new_app

fleet_app = new_app("Views over many nodes' `rocmdoctor check --json` reports.")


@fleet_app.command("summarize")
def summarize_command(
    files: list[str] = typer.Argument(..., metavar="FILE",
                                      help="check --json reports, e.g. reports/*.json."),
    fmt: str = typer.Option("text", "--format", help="text, markdown or json."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="FILE",
                                         help="Write to a file (default: standard output)."),
) -> None:
    """Group nodes by versions, name the odd ones out, and show every node's checks."""
    from rocmdoctor.fleet import FleetInputError, load_report, summarize
    from rocmdoctor.render.fleet import RENDERERS

    render = RENDERERS.get(fmt)
    if render is None:
        raise _fail(f"unknown --format {fmt!r} (choose text, markdown or json)")
    nodes, unusable = [], []
    for path in files:
        try:
            nodes.append(load_report(path))
        except FleetInputError as exc:
            typer.echo(f"rocmdoctor: skipped {exc}", err=True)
            unusable.append((exc.file, exc.reason))
    if not nodes:
        raise _fail(f"no usable report among {len(files)} file(s)")
    fleet = summarize(nodes, unusable)
    text = render(fleet)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise _fail(f"cannot write {output}: {exc.strerror or exc}") from None
    raise typer.Exit(fleet.exit_code)
