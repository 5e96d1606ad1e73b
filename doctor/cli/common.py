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


def use_color(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything
    (https://no-color.org)."""
    import os

    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def terminal_width(default: int = 100) -> int:
    """The terminal's columns; `default` when piped (COLUMNS, when set, wins)."""
    import shutil

    return shutil.get_terminal_size((default, 24)).columns


def unwritable(path: str) -> Optional[str]:
    """Why `path` cannot be written, checked before any work starts; None when it can. The
    file is really opened (created and removed again when it did not exist): a permission
    check alone passes root everywhere, also where nothing can be created (/proc) or on a
    read-only file system."""
    import errno
    import os

    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        return f"cannot write {path}: it is a folder"
    if not os.path.isdir(folder):
        return f"cannot write {path}: no folder {folder}"
    existed = os.path.lexists(path)
    try:
        if existed:
            with open(path, "a", encoding="utf-8"):
                pass
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:  # the folder exists, yet no file can be made in it
            return f"cannot write {path}: {folder} takes no new files"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return f"cannot write {path}: permission denied"
        if exc.errno == errno.EROFS:
            return f"cannot write {path}: read-only file system"
        return f"cannot write {path}: {(exc.strerror or str(exc)).lower()}"
    return None
