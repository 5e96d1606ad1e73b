"""`rocmdoctor check`, `snapshot` and `report`: the machine's checks, captured or rendered.

Registered lazily by rocmdoctor.cli.app; this module imports typer and light modules only,
the checks and renderers inside the commands.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

import typer

from rocmdoctor.cli.common import fail

if TYPE_CHECKING:
    from rocmdoctor.host import Host
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.model import Check, Report


def _split_ids(values: Optional[list[str]]) -> list[str]:
    ids: list[str] = []
    for value in values or []:
        ids.extend(v.strip() for v in value.split(",") if v.strip())
    return ids


def _make_host(from_file: Optional[str], timeout: float, python: Optional[str],
               probe_now: bool = True) -> Host:
    from rocmdoctor.host.snapshot import SnapshotError, SnapshotHost, load_snapshot

    if from_file is not None:
        try:
            return SnapshotHost(load_snapshot(from_file))
        except SnapshotError as exc:
            raise fail(str(exc)) from None
    return _live_host(timeout, python, probe_now)


def _live_host(timeout: float, python: Optional[str], probe_now: bool = True) -> LiveHost:
    import shutil

    from rocmdoctor.host.live import LiveHost

    if python is not None and shutil.which(python) is None:
        raise fail(f"--python {python}: no such interpreter (or it is not executable)")
    from rocmdoctor.host.probe import make_probe, run_probe

    if probe_now:  # the child imports torch while the machine checks run
        return LiveHost(command_timeout=timeout, probe=make_probe(python))
    return LiveHost(command_timeout=timeout, probe=lambda: run_probe(python))


def _select(only: list[str], skip: list[str], opt_in: bool) -> list[Check]:
    """The checks to run (--only with their prerequisites, less --skip); a word that matches
    no check is a usage error (exit 2)."""
    from rocmdoctor.checks.registry import OPT_IN_CHECKS, all_checks
    from rocmdoctor.runner import UnknownCheckError, select_checks

    if not opt_in:  # skipping a check that only runs when asked for is already done
        skip = [s for s in skip if s not in {c.id for c in OPT_IN_CHECKS}]
    try:
        return select_checks(all_checks(opt_in), only=only, skip=skip)
    except UnknownCheckError as exc:
        raise fail(str(exc)) from None


def _run_report(host: Host, checks: list[Check]) -> Report:
    from rocmdoctor.runner import run_selected

    return run_selected(host, checks)


def _wants_opt_in(flag: bool, only: list[str]) -> bool:
    """`--collectives`, or an opt-in check named (or matched) in --only."""
    import fnmatch

    from rocmdoctor.checks.registry import OPT_IN_CHECKS

    return flag or any(fnmatch.fnmatchcase(c.id, word) for c in OPT_IN_CHECKS for word in only)


def _write_output(text: str, output: Optional[str]) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None


def check(
    json_out: bool = typer.Option(False, "--json", help="Print JSON (rocmdoctor.check/1)."),
    only: Optional[list[str]] = typer.Option(None, "--only", help="Run only these check ids."),
    skip: Optional[list[str]] = typer.Option(None, "--skip", help="Skip these check ids."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    from_file: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Replay a snapshot instead of this machine."
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show findings and timings."),
    output: Optional[str] = typer.Option(
        None, "-o", "--output", help="Write to a file. Expands %N (the Slurm node name: "
        "$SLURMD_NODENAME, else the short host name), %h (the short host name), %% (a %)."
    ),
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="Seconds each command may run."),
    python: Optional[str] = typer.Option(
        None, "--python", help="The Python that will train (default: this one)."
    ),
    collectives: bool = typer.Option(
        False, "--collectives", help="Also measure all-reduce and peer-to-peer bandwidth "
        "between the GPUs (one process per GPU; takes seconds)."
    ),
) -> None:
    """Inspect this machine (or a snapshot) and say what is wrong and how to fix it."""
    only_ids, skip_ids = _split_ids(only), _split_ids(skip)
    opt_in = _wants_opt_in(collectives, only_ids)
    if output is not None:  # reports/%N.json under srun: one file per node (docs/fleet.md)
        import os
        import platform

        from rocmdoctor.facts.machine import expand_output_pattern

        try:
            output = expand_output_pattern(output, os.environ, platform.node())
        except ValueError as exc:
            raise fail(str(exc)) from None
    checks = _select(only_ids, skip_ids, opt_in)
    probe = any(c.uses_python for c in checks)
    host = _make_host(from_file, timeout, python, probe_now=probe)
    report = _run_report(host, checks)
    if json_out:
        from rocmdoctor.facts.machine import machine_facts
        from rocmdoctor.render.check_json import render_json

        machine = machine_facts(host, report.platform, probe=probe or from_file is not None)
        _write_output(render_json(report, machine), output)
    else:
        from rocmdoctor.render.terminal import render_terminal

        if output is None:
            import shutil

            color = sys.stdout.isatty()
            width = shutil.get_terminal_size((100, 24)).columns
            sys.stdout.write(render_terminal(report, verbose, width=width, color=color))
        else:
            _write_output(render_terminal(report, verbose), output)
    raise typer.Exit(report.exit_code(strict))


def snapshot(
    output: str = typer.Option(..., "-o", "--output", help="File to write (.gz compresses)."),
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep secrets and the host name in the snapshot."
    ),
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="Seconds each command may run."),
    python: Optional[str] = typer.Option(None, "--python", help="The Python that will train."),
    collectives: bool = typer.Option(
        False, "--collectives", help="Also run (and record) the collectives measurement."
    ),
) -> None:
    """Capture everything `check` reads, to replay it elsewhere with `check --from`."""
    from rocmdoctor.facts.collect_env import gather
    from rocmdoctor.host.snapshot import build_snapshot, save_snapshot
    from rocmdoctor.render.terminal import summary_line

    host = _live_host(timeout, python)
    report = _run_report(host, _select([], [], collectives))
    gather(host)  # so that `report --from` shows the same raw facts
    data = build_snapshot(host, redact=not no_redact)
    try:
        save_snapshot(data, output)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(
        f"wrote {output}: {len(data['commands'])} commands, {len(data['files'])} files, "
        f"{len(data['paths'])} paths ({summary_line(report)}); "
        f"replay with: rocmdoctor check --from {output}",
        err=True,
    )


def report(
    fmt: str = typer.Option("markdown", "--format", help="markdown, text or json."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to a file."),
    from_file: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Report on a snapshot instead of this machine."
    ),
    snapshot_out: Optional[str] = typer.Option(
        None, "--snapshot", metavar="FILE", help="Also write a snapshot to attach to the issue."
    ),
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep user and host names, home paths, serials and secrets."
    ),
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="Seconds each command may run."),
    python: Optional[str] = typer.Option(None, "--python", help="The Python that will train."),
    collectives: bool = typer.Option(
        False, "--collectives", help="Include the collectives measurement (check --collectives)."
    ),
) -> None:
    """An issue-ready report of this machine (Markdown by default), safe to publish."""
    if fmt not in ("markdown", "text", "json"):
        raise fail(f"unknown --format {fmt!r} (choose markdown, text or json)")
    if snapshot_out is not None and from_file is not None:
        raise fail("--snapshot needs a live run; it cannot be combined with --from")
    from rocmdoctor.facts.collect_env import report_facts
    from rocmdoctor.redact import Redactor
    from rocmdoctor.render.report import render_markdown, render_report_json, render_text

    host = _make_host(from_file, timeout, python)
    result = _run_report(host, _select([], [], collectives))
    facts = report_facts(host, result.platform, result.tool_version)
    redactor = Redactor.for_account(host.user.name, host.platform.hostname, host.env,
                                    enabled=not no_redact)
    if snapshot_out is not None:
        from rocmdoctor.host.live import LiveHost
        from rocmdoctor.host.snapshot import build_snapshot, save_snapshot

        assert isinstance(host, LiveHost)  # --snapshot with --from was refused above
        try:
            save_snapshot(build_snapshot(host, redact=not no_redact), snapshot_out)
        except OSError as exc:
            raise fail(f"cannot write {snapshot_out}: {exc.strerror or exc}") from None
    if fmt == "markdown":
        name = snapshot_out or from_file
        text = render_markdown(result, facts, redactor, snapshot_name=name)
    elif fmt == "text":
        text = render_text(result, facts, redactor)
    else:
        text = render_report_json(result, facts, redactor)
    _write_output(text, output)


