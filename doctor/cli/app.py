"""The root command. Each command's module is imported when that command runs, so `--help`
and `check` load neither the tuner nor optuna nor torch (pip's lazy `commands_dict` habit):
the table below names each command's module and its one-line description, and a test holds
each description to the command's own docstring.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NamedTuple, Optional

import typer
from typer.core import TyperGroup

from rocmdoctor import __version__
from rocmdoctor.cli.common import new_app


class CommandSpec(NamedTuple):
    module: str
    attribute: str  # a command function, or a Typer app (a group of commands)
    help: str  # the first line of the command's docstring


COMMANDS: dict[str, CommandSpec] = {
    "check": CommandSpec(
        "rocmdoctor.cli.check", "check",
        "Inspect this machine (or a snapshot) and say what is wrong and how to fix it."),
    "snapshot": CommandSpec(
        "rocmdoctor.cli.check", "snapshot",
        "Capture everything `check` reads, to replay it elsewhere with `check --from`."),
    "report": CommandSpec(
        "rocmdoctor.cli.check", "report",
        "An issue-ready report of this machine (Markdown by default), safe to publish."),
    "explain": CommandSpec(
        "rocmdoctor.cli.explain", "explain_command",
        "Explain an error message, kernel log or setting: cause, fix, and the check to "
        "confirm."),
    "bench": CommandSpec(
        "rocmdoctor.cli.bench", "bench_command",
        "Measure training throughput honestly (warm-up excluded), on synthetic or real data."),
    "compare": CommandSpec(
        "rocmdoctor.cli.bench", "compare_command",
        "Compare bench results side by side, with differences against the first."),
    "tune": CommandSpec(
        "rocmdoctor.cli.tune", "tune_command",
        "Find the fastest settings for a training workload, with proof (Ctrl-C, then the "
        "same command, resumes)."),
    "fleet": CommandSpec(
        "rocmdoctor.cli.fleet", "fleet_app",
        "Views over many nodes' `rocmdoctor check --json` reports."),
}


# Typer vendors click from 0.20 on and used the click package before: the click types are
# taken from typer.core, never from a click import (hence Any in the signatures).
def load_command(name: str) -> Any:
    """The click command for `name`, importing its module now."""
    spec = COMMANDS[name]
    target = getattr(importlib.import_module(spec.module), spec.attribute)
    command: Any
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)  # a group even with one command
    else:
        single = new_app(spec.help)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    plain_metavars(command)
    return command


def plain_metavars(command: Any) -> None:
    """Help that names what a value is, never an internal type: an option without a metavar
    of its own gets its long name in capitals (`--batch-size BATCH_SIZE`, not `<int range>`),
    and an argument shows only its metavar (Typer appends `<list[str]>`)."""
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)
    for param in command.params:
        if param.param_type_name == "argument":
            param.display_type_rich = lambda ctx: None
        elif (param.param_type_name == "option" and param.metavar is None
              and not param.is_flag and not param.count):
            longest = max(param.opts, key=len)
            param.metavar = longest.lstrip("-").replace("-", "_").upper()


class LazyGroup(TyperGroup):
    """A group whose commands are imported on first use; its help lists them from COMMANDS."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, spec.help) for name, spec in COMMANDS.items()])


def _version_callback(value: bool) -> None:
    if value:
        from rocmdoctor.kb import KB_DATE

        typer.echo(f"rocmdoctor {__version__} (knowledge base of {KB_DATE})")
        raise typer.Exit(0)


app = typer.Typer(cls=LazyGroup, name="rocmdoctor", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Diagnose and tune PyTorch training on AMD ROCm (and NVIDIA CUDA) "
                       "machines.",
                  context_settings={"help_option_names": ["-h", "--help"]})


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True,
        help="Print the version (and the date of its knowledge base) and exit.",
    ),
) -> None:
    pass


def main(argv: Optional[list[str]] = None) -> Any:
    try:
        return app(args=argv)
    except KeyboardInterrupt:
        typer.echo("rocmdoctor: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug of ours: one line, the traceback only when asked
        import os

        if os.environ.get("ROCMDOCTOR_DEBUG"):
            raise
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        typer.echo(f"rocmdoctor: internal error: {type(exc).__name__}"
                   + (f": {detail}" if detail else "")
                   + " (set ROCMDOCTOR_DEBUG=1 to see where; please report it)", err=True)
        sys.exit(70)
