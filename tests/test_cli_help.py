"""Help text: every option of every command says what it does, no help names an internal
type (`<list[str]>`, `<int range>`), and the top-level help shows each command's whole
description."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from rocmdoctor.cli.app import COMMANDS, load_command

# Options of `tune` (doctor/cli/tune.py) that have no help text yet. Each entry must still lack
# it (the test below fails once it is written, so that the entry is taken out here).
NO_HELP_YET = {("tune", "--batch-size"), ("tune", "--image-size"), ("tune", "--seq-len"),
               ("tune", "--max-trials")}


def _commands() -> list[tuple[str, Any]]:
    """(command line words, click command) for every command and subcommand."""
    found: list[tuple[str, Any]] = []
    for name in COMMANDS:
        command = load_command(name)
        subs = getattr(command, "commands", {})
        if subs:
            found.extend((f"{name} {sub}", cmd) for sub, cmd in subs.items())
        else:
            found.append((name, command))
    return found


COMMAND_LINES = [words for words, _ in _commands()]


def test_every_command_is_walked() -> None:
    assert {"check", "snapshot", "report", "explain", "bench", "compare", "tune",
            "fleet summarize"} <= set(COMMAND_LINES)


def test_every_option_and_argument_has_a_help_text() -> None:
    missing = set()
    for words, command in _commands():
        for param in command.params:
            name = max(param.opts, key=len)
            if not (getattr(param, "help", None) or "").strip():
                missing.add((words, name))
    assert missing == NO_HELP_YET, sorted(missing ^ NO_HELP_YET)


@pytest.mark.e2e
@pytest.mark.parametrize("words", COMMAND_LINES)
def test_help_names_no_internal_type(words: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rocmdoctor", *words.split(), "--help"],
                          capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    internal = re.findall(r"<(?:list\[\w+\]|str|int|float|bool|int range|float range|"
                          r"path|choice)>", done.stdout)
    assert internal == [], done.stdout
    # Every option is listed with a value name when it takes one.
    for line in done.stdout.splitlines():
        m = re.match(r"\s+(?:-\w, )?(--[\w-]+)(?: ([A-Z][A-Z_=.]*\.*))?\s", line + " ")
        if m and m.group(1) not in ("--help",):
            assert "<" not in line.split("  ")[0], line


@pytest.mark.e2e
def test_top_level_help_shows_each_command_whole() -> None:
    done = subprocess.run([sys.executable, "-m", "rocmdoctor", "--help"], capture_output=True,
                          text=True, timeout=60, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    for name, spec in COMMANDS.items():
        assert f"{name} {spec.help}" in flat, name
    commands = done.stdout.split("Commands:")[1]
    assert "..." not in commands  # click's cut of a long description
