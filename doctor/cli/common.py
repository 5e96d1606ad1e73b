"""What every command module shares: the one-line error and the Typer app settings (typer
only: the command modules import this before anything heavy)."""

from __future__ import annotations

from typing import Optional

import typer


def fail(message: str, code: int = 2) -> typer.Exit:
    """Bad input: one line on stderr, then exit `code` (raise what this returns)."""
    typer.echo(f"rocmdoctor: error: {message}", err=True)
    return typer.Exit(code)


def new_app(help_text: str, name: Optional[str] = None) -> typer.Typer:
    """A Typer app as rocmdoctor's commands want it: no completion install, plain help and
    errors (no rich tracebacks), -h as well as --help, help when run with no arguments."""
    return typer.Typer(name=name, help=help_text, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False, rich_markup_mode=None,
                       context_settings={"help_option_names": ["-h", "--help"]})


def unwritable(path: str) -> Optional[str]:
    """Why `path` cannot be written, checked before any work starts; None when it can."""
    import os

    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        return f"cannot write {path}: it is a folder"
    if not os.path.isdir(folder):
        return f"cannot write {path}: no folder {folder}"
    target = path if os.path.exists(path) else folder
    if not os.access(target, os.W_OK):
        return f"cannot write {path}: permission denied"
    return None
