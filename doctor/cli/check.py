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
    from rocmdoctor.cli.progress import Progress
    from rocmdoctor.host import Host
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.model import Check, Report


def _split_ids(values: Optional[list[str]]) -> list[str]:
    ids: list[str] = []
    for value in values or []:
        ids.extend(v.strip() for v in value.split(",") if v.strip())
    return ids


COMMAND_TIMEOUT_S = 10.0  # keep equal to rocmdoctor.host.DEFAULT_COMMAND_TIMEOUT_S
TIMEOUT_HELP = ("Seconds each command may run, and the Python probe too (default: 10 s for "
                "a command, 60 s for the probe, which imports torch).")


def _limits(timeout: Optional[float]) -> tuple[float, float]:
    """(command timeout, probe timeout): `--timeout` sets both; by default the probe, which
    imports torch and initialises the GPU, has longer."""
    from rocmdoctor.host.probe import PROBE_TIMEOUT_S

    if timeout is None:
        return COMMAND_TIMEOUT_S, PROBE_TIMEOUT_S
    return timeout, timeout


def _make_host(from_file: Optional[str], timeout: Optional[float], python: Optional[str],
               probe_now: bool = True, rocm_root: Optional[str] = None) -> Host:
    from rocmdoctor.host.snapshot import SnapshotError, SnapshotHost, load_snapshot

    if from_file is not None:
        try:
            host = SnapshotHost(load_snapshot(from_file))
        except SnapshotError as exc:
            raise fail(str(exc)) from None
        if rocm_root is not None:  # asked for now: replaces the one the snapshot recorded
            host.rocm_root = rocm_root
        return host
    return _live_host(timeout, python, probe_now, rocm_root)


def _live_host(timeout: Optional[float], python: Optional[str], probe_now: bool = True,
               rocm_root: Optional[str] = None) -> LiveHost:
    import shutil

    from rocmdoctor.host.live import LiveHost

    if python is not None and shutil.which(python) is None:
        raise fail(f"--python {python}: no such interpreter (or it is not executable)")
    if rocm_root is not None and not rocm_root.startswith("/"):
        raise fail(f"--rocm-root {rocm_root}: give an absolute path")
    from rocmdoctor.host.probe import make_probe, run_probe

    command_s, probe_s = _limits(timeout)
    interpreter = shutil.which(python) if python is not None else sys.executable
    if probe_now:  # the child imports torch while the machine checks run
        return LiveHost(command_timeout=command_s, probe=make_probe(python, probe_s),
                        rocm_root=rocm_root, python_executable=interpreter)
    return LiveHost(command_timeout=command_s, probe=lambda: run_probe(python, probe_s),
                    rocm_root=rocm_root, python_executable=interpreter)


def _prefetch_libload(host: Host, checks: list[Check]) -> None:
    """On an AMD machine, start the library-load child with the probe: it needs only the
    Python that trains, so loading torch's HIP libraries overlaps with importing torch instead
    of following it (rocm-libraries and torch-rocm-match read it)."""
    from rocmdoctor.host.live import LiveHost

    if not isinstance(host, LiveHost) or not any(c.id == "rocm-libraries" for c in checks):
        return
    from rocmdoctor.facts.libload import LIBLOAD_TIMEOUT_S, LIBLOAD_TOOL
    from rocmdoctor.facts.platform import is_wsl, platform_kind

    if platform_kind(host) == "rocm" and not is_wsl(host):
        host.prefetch([LIBLOAD_TOOL], timeout=LIBLOAD_TIMEOUT_S)


DEEP_HELP = ("Also measure each GPU (about 30 s a GPU): GEMM and convolution rates, memory "
             "and host-link bandwidth, clocks under load, kernel launches, links between GPUs.")
STRESS_HELP = ("Measure as --deep, then run the GEMM and bandwidth loops for DURATION (90s, 10m, "
               "1h) and report errors, throttling and the slowest window; Ctrl-C ends it with "
               "the figures so far.")
ROCM_ROOT_HELP = ("Where ROCm is (default: $ROCM_PATH, $ROCM_HOME, $ROCM_DIR, the pip-installed "
                  "ROCm SDK, /opt/rocm, the newest /opt/rocm/core-X.Y).")


def _select(only: list[str], skip: list[str], opt_in: bool, deep: bool = False,
            stress: bool = False) -> list[Check]:
    """The checks to run (--only with their prerequisites, less --skip); a word that matches
    no check is a usage error (exit 2)."""
    from rocmdoctor.checks.registry import (
        DEEP_CHECKS,
        OPT_IN_CHECKS,
        STRESS_CHECKS,
        all_checks,
    )
    from rocmdoctor.runner import UnknownCheckError, select_checks

    asked_for = [*(() if opt_in else OPT_IN_CHECKS), *(() if deep or stress else DEEP_CHECKS),
                 *(() if stress else STRESS_CHECKS)]
    # skipping a check that only runs when asked for is already done
    skip = [s for s in skip if s not in {c.id for c in asked_for}]
    try:
        return select_checks(all_checks(opt_in, deep, stress), only=only, skip=skip)
    except UnknownCheckError as exc:
        raise fail(str(exc)) from None


def _run_report(host: Host, checks: list[Check], timeout: Optional[float] = None) -> Report:
    """Run the checks; the runner's deadline stays above the probe's own timeout, and above
    the measured run's (--deep, --stress) when one is among them."""
    from rocmdoctor.runner import run_selected

    least = _limits(timeout)[1] + 30
    if any(c.level != "quick" for c in checks):
        from rocmdoctor.cli.deep import collapse_skips, interrupts_end_the_run
        from rocmdoctor.facts.deep import QUICK_S_PER_GPU, START_S

        least = max(least, START_S + QUICK_S_PER_GPU * 8 + host.deep_stress_s * 1.1 + 90)
        with interrupts_end_the_run():
            return collapse_skips(run_selected(host, checks, min_timeout_s=least))
    return run_selected(host, checks, min_timeout_s=least)


def _levels(deep: bool, stress: Optional[str], only: list[str]) -> tuple[bool, float]:
    """(whether the measured checks run, the stress loop's seconds): --deep, --stress, or a
    measured check named in --only."""
    if stress is None and not deep and not only:
        return False, 0.0
    from rocmdoctor.cli.deep import DEEP_IDS, STRESS_IDS, named, parse_duration

    seconds = 0.0
    if stress is not None:
        try:
            seconds = parse_duration(stress)
        except ValueError as exc:
            raise fail(str(exc)) from None
    elif named(only, STRESS_IDS):
        raise fail("the stress check runs with --stress DURATION (for example --stress 10m)")
    return deep or seconds > 0 or named(only, DEEP_IDS), seconds


def _progress(host: Host, quiet: bool = False) -> Progress:
    """Progress on stderr while the host waits (none with --quiet off a terminal)."""
    from rocmdoctor.cli.progress import Progress

    stream = sys.stderr
    if quiet and not (getattr(stream, "isatty", None) and stream.isatty()):
        import io

        stream = io.StringIO()  # --quiet in a log: no progress lines
    return Progress(host.waiting_on, stream)


def _wants_opt_in(flag: bool, only: list[str]) -> bool:
    """`--collectives`, or an opt-in check named (or matched) in --only."""
    if flag or not only:  # nothing to match: the checks need not be imported for it
        return flag
    import fnmatch

    from rocmdoctor.checks.registry import OPT_IN_CHECKS

    return any(fnmatch.fnmatchcase(c.id, word) for c in OPT_IN_CHECKS for word in only)


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
    only: Optional[list[str]] = typer.Option(
        None, "--only", metavar="IDS",
        help="Run only these check ids (comma-separated or repeated; globs such as torch-*), "
             "with their prerequisites."),
    skip: Optional[list[str]] = typer.Option(
        None, "--skip", metavar="IDS", help="Skip these check ids (comma-separated or "
        "repeated; globs)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    from_file: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Replay a snapshot instead of this machine."
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show findings and timings."),
    quiet: bool = typer.Option(
        False, "-q", "--quiet", help="Print only the failures and warnings, and how to fix "
        "them (nothing when all is well)."),
    output: Optional[str] = typer.Option(
        None, "-o", "--output", metavar="FILE", help="Write to a file. Expands %N (the Slurm "
        "node name: $SLURMD_NODENAME, else the short host name), %h (the short host name), "
        "%% (a %)."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.1, metavar="SECONDS",
                                            help=TIMEOUT_HELP),
    python: Optional[str] = typer.Option(
        None, "--python", metavar="PATH", help="The Python that will train (default: this one)."
    ),
    collectives: bool = typer.Option(
        False, "--collectives", help="Also measure all-reduce and peer-to-peer bandwidth "
        "between the GPUs (one process per GPU; takes seconds)."
    ),
    rocm_root: Optional[str] = typer.Option(None, "--rocm-root", metavar="DIR",
                                            help=ROCM_ROOT_HELP),
    deep: bool = typer.Option(False, "--deep", help=DEEP_HELP),
    stress: Optional[str] = typer.Option(None, "--stress", metavar="DURATION", help=STRESS_HELP),
) -> None:
    """Inspect this machine (or a snapshot) and say what is wrong and how to fix it."""
    only_ids, skip_ids = _split_ids(only), _split_ids(skip)
    opt_in = _wants_opt_in(collectives, only_ids)
    measured, stress_s = _levels(deep, stress, only_ids)
    if output is not None:  # reports/%N.json under srun: one file per node (docs/fleet.md)
        import os
        import platform

        from rocmdoctor.render.machine import expand_output_pattern

        try:
            output = expand_output_pattern(output, os.environ, platform.node())
        except ValueError as exc:
            raise fail(str(exc)) from None
    # The whole default set reads the probe: start it (torch's import is most of check's time)
    # before importing the checks themselves; with --only/--skip, after knowing whether any
    # selected check needs it.
    early = from_file is None and not only_ids and not skip_ids
    host = _make_host(from_file, timeout, python, probe_now=True,
                      rocm_root=rocm_root) if early else None
    checks = _select(only_ids, skip_ids, opt_in, measured, stress_s > 0)
    probe = any(c.uses_python for c in checks)
    if host is None:
        host = _make_host(from_file, timeout, python, probe_now=probe, rocm_root=rocm_root)
    host.deep_stress_s = stress_s
    if probe:
        _prefetch_libload(host, checks)
    with _progress(host, quiet):
        report = _run_report(host, checks, timeout)
    if json_out:
        from rocmdoctor.facts.machine import machine_facts
        from rocmdoctor.render.check_json import render_json
        from rocmdoctor.render.machine import machine_object

        machine = machine_facts(host, report.platform, probe=probe or from_file is not None)
        _write_output(render_json(report, machine_object(machine)), output)
    else:
        from rocmdoctor.cli.common import terminal_width, use_color
        from rocmdoctor.render.terminal import render_terminal

        if output is None:
            sys.stdout.write(render_terminal(report, verbose, width=terminal_width(),
                                             color=use_color(sys.stdout), quiet=quiet))
        else:
            _write_output(render_terminal(report, verbose, quiet=quiet), output)
    raise typer.Exit(report.exit_code(strict))


def snapshot(
    output: str = typer.Option(..., "-o", "--output", metavar="FILE",
                               help="File to write (.gz compresses)."),
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep secrets and the host name in the snapshot."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.1, metavar="SECONDS",
                                            help=TIMEOUT_HELP),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH",
                                         help="The Python that will train (default: this one)."),
    collectives: bool = typer.Option(
        False, "--collectives", help="Also run (and record) the collectives measurement."
    ),
    rocm_root: Optional[str] = typer.Option(None, "--rocm-root", metavar="DIR",
                                            help=ROCM_ROOT_HELP),
    deep: bool = typer.Option(False, "--deep", help="Also run (and record) the measured "
                              "checks of check --deep."),
    stress: Optional[str] = typer.Option(None, "--stress", metavar="DURATION",
                                         help="Also run (and record) check --stress DURATION."),
) -> None:
    """Capture everything `check` reads, to replay it elsewhere with `check --from`."""
    from rocmdoctor.facts.collect_env import gather
    from rocmdoctor.host.snapshot import build_snapshot, save_snapshot
    from rocmdoctor.render.terminal import summary_line

    measured, stress_s = _levels(deep, stress, [])
    host = _live_host(timeout, python, rocm_root=rocm_root)
    host.deep_stress_s = stress_s
    with _progress(host):
        report = _run_report(host, _select([], [], collectives, measured, stress_s > 0),
                             timeout)
        gather(host)  # so that `report --from` shows the same raw facts
    data = build_snapshot(host, redact=not no_redact)
    try:
        save_snapshot(data, output)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    if not no_redact:  # the line is pasted too: no home or user name in it
        from rocmdoctor.host.live import account_redactor

        output = account_redactor()(output)
    typer.echo(
        f"wrote {output}: {len(data['commands'])} commands, {len(data['files'])} files, "
        f"{len(data['paths'])} paths ({summary_line(report)}); "
        f"replay with: rocmdoctor check --from {output}",
        err=True,
    )


def report(
    fmt: str = typer.Option("markdown", "--format", metavar="FORMAT",
                            help="markdown, text or json."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="FILE",
                                         help="Write to a file (default: standard output)."),
    from_file: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Report on a snapshot instead of this machine."
    ),
    snapshot_out: Optional[str] = typer.Option(
        None, "--snapshot", metavar="FILE", help="Also write a snapshot to attach to the issue."
    ),
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep user and host names, home paths, serials and secrets."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.1, metavar="SECONDS",
                                            help=TIMEOUT_HELP),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH",
                                         help="The Python that will train (default: this one)."),
    collectives: bool = typer.Option(
        False, "--collectives", help="Include the collectives measurement (check --collectives)."
    ),
    rocm_root: Optional[str] = typer.Option(None, "--rocm-root", metavar="DIR",
                                            help=ROCM_ROOT_HELP),
    deep: bool = typer.Option(False, "--deep", help="Include the measured checks (check "
                              "--deep) and their figures."),
) -> None:
    """An issue-ready report of this machine (Markdown by default), safe to publish."""
    if fmt not in ("markdown", "text", "json"):
        raise fail(f"unknown --format {fmt!r} (choose markdown, text or json)")
    if snapshot_out is not None and from_file is not None:
        raise fail("--snapshot needs a live run; it cannot be combined with --from")
    from rocmdoctor.facts.collect_env import report_readings
    from rocmdoctor.redact import Redactor
    from rocmdoctor.render.report import render_markdown, render_report_json, render_text
    from rocmdoctor.render.report_facts import report_facts

    host = _make_host(from_file, timeout, python, rocm_root=rocm_root)
    with _progress(host):
        result = _run_report(host, _select([], [], collectives, deep), timeout)
        facts = report_facts(report_readings(host, result.platform), result.tool_version)
    # Under sudo the account that trains is SUDO_USER, and findings name it: for_account
    # hides it too.
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


