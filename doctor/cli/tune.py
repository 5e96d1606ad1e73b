"""`rocmdoctor tune`: the command line. Registered in rocmdoctor.cli.app as `tune`.

Options are parsed here, the work is done by rocmdoctor.tuners.tune (imported inside the
command, so `--help` imports neither optuna nor torch). Progress goes to stderr, the final
report to stdout; --output, --export and --html write files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import sys
from typing import Any, Optional

import typer

from rocmdoctor.cli.common import fail as _fail
from rocmdoctor.cli.common import unwritable
from rocmdoctor.cli.tune_progress import Progress
from rocmdoctor.tuners.bench.spec import DEFAULT_STEPS, BenchSpec, held_on_cpu

INSTALL_HINT = "pip install 'rocmdoctor[tune]'"
_DEFAULT = BenchSpec()
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in "900", "90s", "15m", "1.5h" or "1h30m"; ValueError otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"not a duration: {text!r} (examples: 900, 90s, 15m, 1h30m)")
    seconds = sum(float(n) * _SECONDS[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"the duration must be positive: {text!r}")
    return seconds


def parse_sizes(text: Optional[str]) -> tuple[int, ...]:
    """Batch sizes from "64,128,256"; ValueError for anything but positive integers."""
    if not text:
        return ()
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"--batch-sizes takes positive integers, not {part!r}")
        sizes.append(int(part))
    return tuple(sorted(set(sizes)))


def parse_gpus(text: Optional[str]) -> tuple[int, ...]:
    """GPU numbers from "0,1,2,3"; ValueError for anything but distinct integers >= 0."""
    if not text:
        return ()
    gpus = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"--gpus takes GPU numbers separated by commas, not {part!r}")
        gpus.append(int(part))
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus names a GPU twice: {text}")
    return tuple(gpus)


def _stop_on_signals() -> list[int]:
    """SIGTERM (scancel, timeout) and SIGHUP (a closed SSH session) stop the tune as Ctrl-C
    does: the running trials are recorded and queued again. Returns the signals received."""
    received: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    return received


def _write(path: str, text: str, name: str) -> Optional[str]:
    """Write a file (`name`: its path as the user gave it); why it could not, or None."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        return f"cannot write {name}: {exc.strerror or exc}"
    return None


def _html(result: Any) -> str:
    from rocmdoctor.tuners.html import render_html

    return render_html(result)


def tune_command(
    model: str = typer.Option(_DEFAULT.model, "--model",
                              help="resnet50 | vit_b_16 | gpt2 | tinycnn | pkg.module:factory"),
    batch_size: int = typer.Option(_DEFAULT.batch_size, "--batch-size"),
    precision: str = typer.Option(_DEFAULT.precision, "--precision",
                                  help="Your precision now: fp32 | tf32 | bf16 | fp16."),
    channels_last: bool = typer.Option(False, "--channels-last",
                                       help="You train with channels_last now."),
    compile_: bool = typer.Option(False, "--compile", help="You use torch.compile now."),
    steps: Optional[int] = typer.Option(
        None, "--steps", min=1, help="Measured steps per trial (default 50; on a CPU as many as "
        "fit in about 20 s with the warm-up unless given)."),
    warmup: int = typer.Option(_DEFAULT.warmup, "--warmup", help="Warm-up steps per trial."),
    device: str = typer.Option(_DEFAULT.device, "--device", help="auto | cuda | cpu"),
    image_size: int = typer.Option(_DEFAULT.image_size, "--image-size"),
    seq_len: int = typer.Option(_DEFAULT.seq_len, "--seq-len"),
    budget: str = typer.Option("15m", "--budget", help="Wall time for search and proof."),
    max_trials: Optional[int] = typer.Option(None, "--max-trials", min=1),
    space: str = typer.Option("default", "--space",
                              help="default | env | full, or knob names separated by commas."),
    keep_precision: bool = typer.Option(False, "--keep-precision",
                                        help="Search only settings that keep your precision."),
    batch_sizes: Optional[str] = typer.Option(
        None, "--batch-sizes", help="Search these batch sizes, e.g. 64,128,256 (default: "
        "yours and its doublings up to the largest that fits)."),
    keep_batch_size: bool = typer.Option(False, "--keep-batch-size",
                                         help="Search only settings that keep your batch size."),
    study: Optional[str] = typer.Option(None, "--study", help="Study name (resumes if it "
                                        "exists; default: derived from the workload)."),
    storage: Optional[str] = typer.Option(None, "--storage", help="Optuna storage URL "
                                          "(default sqlite under ~/.cache/rocmdoctor/tune)."),
    output: Optional[str] = typer.Option(None, "--output", help="Write JSON (rocmdoctor.tune/1)."),
    export: Optional[str] = typer.Option(None, "--export",
                                         help="Write a file that `source` applies."),
    html: Optional[str] = typer.Option(None, "--html", help="Write a self-contained page."),
    trial_timeout: Optional[float] = typer.Option(None, "--trial-timeout", min=1.0,
                                                  help="Seconds per trial (default: adaptive)."),
    confirm_rounds: int = typer.Option(2, "--confirm-rounds", min=2,
                                       help="Interleaved re-measurement rounds (at least)."),
    confirm_max_rounds: Optional[int] = typer.Option(
        None, "--confirm-max-rounds", min=2,
        help="More rounds while a verdict is open (default: twice --confirm-rounds)."),
    confirm_top: int = typer.Option(2, "--confirm-top", min=1,
                                    help="Candidates re-measured against your settings."),
    python: Optional[str] = typer.Option(None, "--python", help="The Python that will train."),
    seed: int = typer.Option(0, "--seed", help="Sampler seed."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="Run trials concurrently, one per "
                                       "GPU, e.g. 0,1,2,3 (torch's numbering)."),
    compile_cache: Optional[str] = typer.Option(
        None, "--compile-cache", help="One TorchInductor cache folder for every trial: "
        "compiled trials start faster, and their first step no longer shows the compile cost."),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Also say, per trial, how many processes outlived it."),
    data: Optional[str] = typer.Option(
        None, "--data", metavar="PATH|synthetic-jpeg[:N]",
        help="Train on images (a folder PATH/<class>/<image>.jpg, or N JPEG files written once "
        "into the cache, default 10000) and search the DataLoader's settings too."),
    nproc: int = typer.Option(
        1, "--nproc", min=1, help="Each trial trains with DistributedDataParallel on N local "
        "processes, one a GPU (gloo on the CPU), and DDP's settings are searched too."),
) -> None:
    """Find the fastest settings for a training workload, with proof (Ctrl-C, then the same
    command, resumes)."""
    import time

    started_at = time.monotonic()  # the budget counts the whole command
    if importlib.util.find_spec("optuna") is None:
        raise _fail(f"rocmdoctor tune needs optuna: {INSTALL_HINT}")
    try:
        budget_s = parse_duration(budget)
        sizes = parse_sizes(batch_sizes)
        gpu_ids = parse_gpus(gpus)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if nproc > 1 and gpu_ids:
        raise _fail(f"--nproc {nproc} and --gpus: a trial of {nproc} ranks takes GPUs 0 to "
                    f"{nproc - 1} itself; give one of them")
    spec = BenchSpec(model=model, batch_size=batch_size, precision=precision,
                     channels_last=channels_last, compile=compile_,
                     steps=steps or DEFAULT_STEPS, warmup=warmup,
                     device=device, image_size=image_size, seq_len=seq_len,
                     settings=held_on_cpu({}, steps), data=data or "", nproc=nproc)
    problems = spec.problems()
    if problems:
        raise _fail("; ".join(problems))
    for path in (output, export, html):
        problem = unwritable(path) if path else None
        if problem:  # found before anything is measured
            raise _fail(problem)
    if data:
        from rocmdoctor.cli.data import resolve_data
        from rocmdoctor.tuners.bench.synthetic import processes

        spec = resolve_data(data, spec, python, processes())
    # by name from here: the folder the tune was started in may be replaced while it runs
    given = {os.path.abspath(p): p for p in (output, export, html) if p}
    output, export, html = (os.path.abspath(p) if p else None for p in (output, export, html))
    from rocmdoctor.tuners.export import env_file_text, json_text, render_summary
    from rocmdoctor.tuners.tune import TuneError, TuneOptions, run_tune

    options = TuneOptions(
        spec=spec, budget_s=budget_s, max_trials=max_trials, space=space,
        keep_precision=keep_precision, batch_sizes=sizes, keep_batch_size=keep_batch_size,
        study=study, storage=storage,
        trial_timeout_s=trial_timeout, confirm_rounds=confirm_rounds,
        confirm_max_rounds=confirm_max_rounds, confirm_top=confirm_top,
        python=python, seed=seed, allow_test_knobs=os.environ.get("ROCMDOCTOR_TESTING") == "1",
        gpus=gpu_ids, compile_cache=os.path.abspath(compile_cache) if compile_cache else None,
        started_at=started_at)
    received = _stop_on_signals()
    try:
        with Progress(sys.stderr, verbose=verbose) as progress:
            result = run_tune(options, os.environ, progress)
    except TuneError as exc:
        from rocmdoctor.host.live import account_redactor

        raise _fail(account_redactor()(str(exc))) from None
    except KeyboardInterrupt:
        # the trials are recorded by now; a second signal must not turn the exit code into a
        # different one halfway through this message
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        signum = received[0] if received else signal.SIGINT
        how = "interrupted" if signum == signal.SIGINT else \
            f"stopped by {signal.Signals(signum).name}"
        typer.echo(f"rocmdoctor tune: {how}; finished trials are saved in the study, run the "
                   "same command to continue", err=True)
        raise typer.Exit(128 + int(signum)) from None
    from rocmdoctor.host.live import account_redactor
    from rocmdoctor.redact import redact_tree
    from rocmdoctor.tuners.codec import from_dict, to_dict

    # What is printed or written is safe to publish: this account's names, home paths and
    # secrets hidden (a path in the home folder is exported from "$HOME", so it still works).
    redactor = account_redactor()
    shown = from_dict(redact_tree(to_dict(result), redactor))
    written: list[str] = []
    failed: list[str] = []
    for path, render in ((output, json_text), (export, env_file_text), (html, _html)):
        if not path:
            continue
        problem = _write(path, render(shown), given[path])
        (failed if problem else written).append(problem or given[path])
    # the verdict is shown even when a file could not be written (the study keeps it too)
    sys.stdout.write(render_summary(shown, [redactor(p) for p in written]))
    for problem in failed:
        typer.echo(f"rocmdoctor: error: {redactor(problem)}; the results are in the study "
                   f"({shown.study.storage}): the same command shows them again", err=True)
    if failed or not shown.concluded:  # no verdict from measurements: exit 1
        raise typer.Exit(1)


def main() -> None:
    """`python -m rocmdoctor.cli.tune`: the command on its own (rocmdoctor.cli.app registers it as
    `rocmdoctor tune`)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                      rich_markup_mode=None)
    app.command(name="tune")(tune_command)
    app()


if __name__ == "__main__":
    main()
