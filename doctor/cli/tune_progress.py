"""The tune's progress on stderr, one line per event (rocmdoctor.tuners.events): the trial n
of N with its settings, its throughput, the best so far and the time left; and, while a
child is quiet for HEARTBEAT_S (torch's import, a compile, a MIOpen find), a line with what it
is doing and for how long. Every line is redacted like the result: logs get shared."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional, TextIO

from rocmdoctor.tuners import events as ev
from rocmdoctor.tuners.result import changes_text

HEARTBEAT_S = 5.0  # a quiet phase (torch's import, a compile) is reported this often


def clock(seconds: Optional[float]) -> str:
    if seconds is None:
        return ""
    if seconds < 0:
        return "over budget"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s left"


def _warm_up_text(phase: ev.Phase) -> str:
    now = (phase.step or 0) + 1
    if phase.of and now > phase.of:  # a GPU warms up past the count until its clocks settle
        return f"warm-up step {now} (past the {phase.of} asked for, until the clocks settle)"
    return f"warm-up step {now}" + (f" of {phase.of}" if phase.of else "")


def _window_text(phase: ev.Phase) -> str:
    index = (phase.index or 0) + 2
    if phase.of and index <= phase.of:
        return f"measuring window {index} of {phase.of}"
    return "finishing (the result)"


def phase_text(phase: ev.Phase) -> Optional[str]:
    """What a benchmark child is doing, from its last event (None: it is starting); None for
    an event that changes nothing."""
    if phase.event is None:
        return "starting (importing torch)"
    if phase.event == "start":
        return "warm-up step 1" + (" (torch.compile compiles now)" if phase.compile else "")
    if phase.event == "warmup":
        return _warm_up_text(phase)
    if phase.event == "window":
        return _window_text(phase)
    return None


class Progress:
    """A listener for a tune's events; a context manager that runs the quiet-phase reports."""

    def __init__(self, stream: TextIO, verbose: bool = False,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        from rocmdoctor.host.live import account_redactor

        self.stream = stream
        self.redact = account_redactor()
        self.unit = "samples"
        self.verbose = verbose
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._said = time.monotonic()
        self._phase: Optional[tuple[str, str, float]] = None  # who, what, since
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name="rocmdoctor-tune-progress")
        self._say_for: dict[type, Callable[[Any], None]] = {
            ev.Probing: self._probing, ev.Planned: self._planned,
            ev.BatchSearchStarted: self._batch_search, ev.BatchProbed: self._batch_probed,
            ev.BatchSizesChosen: self._batch_sizes, ev.TrialStarted: self._trial_started,
            ev.TrialEnded: self._trial_ended, ev.TrialRetried: self._trial_retried,
            ev.TrialNotStarted: self._trial_not_started,
            ev.EnvironmentBroke: self._environment_broke,
            ev.RecoveryStarted: self._recovery_started, ev.RecoveryEnded: self._recovery_ended,
            ev.ConfirmStarted: self._confirm_started, ev.ConfirmRan: self._confirm_ran}

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.Phase):
            what = phase_text(event)
            if what is not None:
                self._enter(event.who, what)
            return
        say = self._say_for.get(type(event))
        if say is not None:
            say(event)

    # --- the lines ------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        with self._lock:
            try:
                self.stream.write(self.redact(text) + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # a closed stderr: go on without progress
                pass
            self._said = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(0.5):
            phase, now = self._phase, time.monotonic()
            if phase is None or now - self._said < self.heartbeat_s:
                continue
            who, what, since = phase
            self._say(f"      ... {who}: {what} ({now - since:.0f} s in)")

    def _enter(self, who: Optional[str], what: str = "starting (importing torch)") -> None:
        """`who` is now doing `what`; the time shown is since `who` began (None: nothing)."""
        same = self._phase is not None and self._phase[0] == who
        since = self._phase[2] if same and self._phase else time.monotonic()
        self._phase = None if who is None else (who, what, since)

    def _probing(self, e: ev.Probing) -> None:
        self._say(f"tune: asking {e.python} what it runs on (torch, GPUs; at most "
                  f"{e.timeout_s:.0f} s)")
        self._enter("the platform probe", "importing torch")

    def _planned(self, e: ev.Planned) -> None:
        self._enter(None)
        done = f", {e.finished} already done" if e.finished else ""
        self._say(f"tune: {e.knobs} knobs, {e.size} configurations, {e.sampler}, "
                  f"study {e.study}{done}")
        if e.requeued:
            self._say(f"tune: trial(s) {', '.join(map(str, e.requeued))} were interrupted last "
                      "time; they run again")

    def _batch_search(self, e: ev.BatchSearchStarted) -> None:
        self._enter(None)
        self._say(f"tune: finding the largest batch that fits, from {e.start} up to {e.limit} "
                  "(short runs in child processes)")

    def _batch_probed(self, e: ev.BatchProbed) -> None:
        self._enter(None)
        self._say(f"      batch {e.batch}: {e.state} ({e.wall_s:.0f} s); {clock(e.time_left)}")

    def _batch_sizes(self, e: ev.BatchSizesChosen) -> None:
        self._enter(None)
        how = " (found earlier)" if e.cached else ""
        self._say(f"tune: batch sizes to try: {', '.join(map(str, e.sizes))}{how}")
        if e.message and not e.cached and e.stopped_early:
            self._say(f"      the search stopped early: {e.message}")

    def _trial_started(self, e: ev.TrialStarted) -> None:
        step = e.finished + 1
        count = f"{step}/{e.total}" if e.total else f"{step}"
        where = f" (GPU {e.gpu})" if e.gpu is not None else ""
        self._say(f"[{count}] trial {e.number}{where}: {changes_text(e.changes)} ...")
        self._enter(f"trial {e.number}")

    def _trial_ended(self, e: ev.TrialEnded) -> None:
        self.unit = e.unit or self.unit
        if e.state == "ok":
            what = f"{e.throughput or 0.0:,.1f} {self.unit}/s"
            if e.input_verdict and e.input_share is not None:
                what += f" ({e.input_verdict}: waited for input {e.input_share:.0%})"
        elif e.message.startswith(e.state):
            what = e.message
        else:
            what = f"{e.state}: {e.message}"
        best = f"; best {e.best:,.1f}" if e.best else ""
        self._enter(None)
        self._say(f"      trial {e.number}: {what}{best}; {clock(e.time_left)}")
        if e.known_cause:
            self._say(f"      known cause: {e.known_cause}")
        if self.verbose:
            self._say(f"      trial {e.number}: {e.survivors} process(es) outlived it and "
                      "were killed")

    def _trial_retried(self, e: ev.TrialRetried) -> None:
        self._say(f"      trial {e.number}: {e.message}; this may not happen again ({e.why}): "
                  "running it once more")

    def _trial_not_started(self, e: ev.TrialNotStarted) -> None:
        self._say(f"      trial {e.number}: {e.message}")

    def _environment_broke(self, e: ev.EnvironmentBroke) -> None:
        self._say(f"tune: trials {', '.join(map(str, e.trials))} crashed the same way whatever "
                  "their settings: the environment broke, not the configurations; the search "
                  "stops here")

    def _recovery_started(self, e: ev.RecoveryStarted) -> None:
        self._say("tune: running your settings once more to see whether the machine has "
                  "recovered ...")
        self._enter("your settings")

    def _recovery_ended(self, e: ev.RecoveryEnded) -> None:
        self._enter(None)
        self._say(f"      your settings: {e.message}; {clock(e.time_left)}")

    def _confirm_started(self, e: ev.ConfirmStarted) -> None:
        self._say(f"confirm: re-measuring your settings and {len(e.trials) - 1} candidate(s), "
                  f"interleaved, at least {e.rounds} rounds")

    def _confirm_ran(self, e: ev.ConfirmRan) -> None:
        self._enter(None)
        who = "your settings" if e.baseline else f"trial {e.trial}"
        what = f"{e.throughput:,.1f} {self.unit}/s" if e.throughput is not None else \
            f"{e.state}: {e.message or ''}".rstrip(": ")
        self._say(f"      round {e.round + 1}: {who}: {what}; {clock(e.time_left)}")
