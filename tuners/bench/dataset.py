"""What `--data` names, resolved before anything is measured (in rocmdoctor's process: no torch).

`--data PATH` is the user's own ImageFolder-style tree (PATH/<class>/<image>.jpg); it is read
where it is, never copied, and nothing is downloaded. `--data synthetic-jpeg[:N]` is N real
JPEG files (default DEFAULT_SYNTHETIC) that rocmdoctor writes once into its cache folder
($XDG_CACHE_HOME/rocmdoctor/data, default ~/.cache/rocmdoctor/data) with the Python that
trains (rocmdoctor.tuners.bench.synthetic), showing progress; a second run reuses them.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Callable, Optional

from rocmdoctor.host import process
from rocmdoctor.tuners.bench.data import DataError, list_images

SYNTHETIC = "synthetic-jpeg"
DEFAULT_SYNTHETIC = 10_000
MAX_SYNTHETIC = 2_000_000
LAYOUT = "v1"  # the synthetic files' recipe: a new one writes a new folder
DONE_MARK = ".complete"
# Seconds a synthetic image may take to write, on one CPU, before the run is cut off.
SECONDS_AN_IMAGE = 1.0
_SYNTHETIC = re.compile(rf"{SYNTHETIC}(?::(\d+))?$")


@dataclass(frozen=True)
class Data:
    """A resolved --data: the folder the benchmark reads, and how it came to be."""

    path: str
    images: int
    classes: int
    synthetic: bool = False
    written: bool = False  # written by this run (False: found from an earlier one)
    bytes: Optional[int] = None


def cache_root(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rocmdoctor", "data")


def synthetic_count(value: str) -> Optional[int]:
    """N of "synthetic-jpeg[:N]"; None for any other value; DataError for a bad N."""
    if not value.startswith(SYNTHETIC):
        return None
    match = _SYNTHETIC.match(value)
    count = int(match.group(1)) if match and match.group(1) else DEFAULT_SYNTHETIC
    if match is None or not 1 <= count <= MAX_SYNTHETIC:
        raise DataError(f"--data {value}: expected {SYNTHETIC} or {SYNTHETIC}:N with N from 1 "
                        f"to {MAX_SYNTHETIC:,}")
    return count


def resolve(value: str, python: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None,
            say: Callable[[str], None] = lambda line: None) -> Data:
    """The folder --data names, checked (DataError: one line for the user); the synthetic
    images are written first where they are missing."""
    env = os.environ if env is None else env
    count = synthetic_count(value.strip())
    if count is None:
        path = os.path.abspath(os.path.expanduser(value))
        samples, classes = list_images(path)
        return Data(path, len(samples), len(classes))
    folder = os.path.join(cache_root(env), f"{SYNTHETIC}-{count}-{LAYOUT}")
    done = _done_bytes(folder, count)
    if done is not None:
        say(f"rocmdoctor: --data {SYNTHETIC}:{count}: the {count:,} JPEG files written "
            f"before, in {folder}")
        return Data(folder, count, _classes(folder), synthetic=True, bytes=done)
    say(f"rocmdoctor: writing {count:,} synthetic JPEG files into {folder} (once: later runs "
        f"reuse them)")
    total = _write(folder, count, python, env, say)
    return Data(folder, count, _classes(folder), synthetic=True, written=True, bytes=total)


def _done_bytes(folder: str, count: int) -> Optional[int]:
    """The bytes of a complete earlier write of `count` files, None where there is none."""
    try:
        with open(os.path.join(folder, DONE_MARK), encoding="utf-8") as fh:
            written, total = (int(x) for x in fh.read().split())
    except (OSError, ValueError):
        return None
    return total if written == count else None


def _classes(folder: str) -> int:
    return sum(1 for e in os.scandir(folder) if e.is_dir())


def _write(folder: str, count: int, python: Optional[str], env: Mapping[str, str],
           say: Callable[[str], None]) -> int:
    """Run the writer child, relaying its progress every few seconds; the bytes written."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot write the synthetic images into {folder}: "
                        f"{exc.strerror or exc}") from None
    child_env = {**env, process.PARENT_ENV: str(os.getpid()), "PYTHONUNBUFFERED": "1"}
    tag = child_env[process.TAG_ENV] = f"data-{os.getpid()}-{time.monotonic_ns()}"
    argv = [python or sys.executable, "-m", "rocmdoctor.tuners.bench.synthetic", folder,
            str(count), "--parent-pid", str(os.getpid())]
    try:
        proc = process.spawn(argv, env=child_env)
    except OSError as exc:
        raise DataError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    lines: queue.Queue[Optional[str]] = queue.Queue()
    errors: queue.Queue[Optional[str]] = queue.Queue()
    for stream, sink in ((proc.stdout, lines), (proc.stderr, errors)):
        threading.Thread(target=_pump, args=(stream, sink), daemon=True).start()
    try:
        total = _follow(lines, 60.0 + SECONDS_AN_IMAGE * count, say)
        code = proc.wait(timeout=30)
    except BaseException:
        process.kill_group(proc)
        raise
    finally:
        process.reap_tagged(tag, exclude=(proc.pid,))
    if code != 0 or total is None:
        stderr = _drained(errors)
        last_line = next((s for s in reversed(stderr.strip().splitlines()) if s.strip()),
                         f"exit code {code}")
        raise DataError(f"writing the synthetic JPEG files failed: {last_line.strip()}")
    _mark_done(folder, count, total)
    return total


def _follow(lines: queue.Queue[Optional[str]], limit: float, say: Callable[[str], None]
            ) -> Optional[int]:
    """The writer's lines up to its end: progress said every 5 s (also when it is quiet),
    the bytes of its `done` line; DataError past `limit` seconds."""
    start = last = time.monotonic()
    total, so_far = None, ""
    while True:
        left = limit - (time.monotonic() - start)
        if left <= 0:
            raise DataError(f"writing the synthetic JPEG files did not finish in "
                            f"{limit:.0f} s: cut off")
        try:
            line = lines.get(timeout=min(left, 5.0))
        except queue.Empty:
            line = ""
        if line is None:
            return total
        words = line.split()
        if words[:1] == ["done"] and len(words) == 3:
            total = int(words[2])
        elif words[:1] == ["written"] and len(words) == 4:
            so_far = f"{int(words[1]):,} of {int(words[3]):,}, "
        if time.monotonic() - last >= 5.0:
            last = time.monotonic()
            say(f"rocmdoctor: writing the synthetic JPEG files: {so_far}{last - start:.0f} s")


def _mark_done(folder: str, count: int, total: int) -> None:
    """The mark that the folder holds all `count` files (written last)."""
    try:
        with open(os.path.join(folder, DONE_MARK), "w", encoding="utf-8") as fh:
            fh.write(f"{count} {total}\n")
    except OSError as exc:
        raise DataError(f"cannot write {os.path.join(folder, DONE_MARK)}: "
                        f"{exc.strerror or exc}") from None


def _drained(lines: queue.Queue[Optional[str]], wait_s: float = 5.0) -> str:
    """What a pump has read, up to its end (or what came within wait_s)."""
    out = []
    while True:
        try:
            line = lines.get(timeout=wait_s)
        except queue.Empty:
            break
        if line is None:
            break
        out.append(line)
    return "".join(out)


def _pump(stream: Optional[IO[str]], sink: queue.Queue[Optional[str]]) -> None:
    for line in stream or ():
        sink.put(line)
    sink.put(None)


def shm_free_bytes() -> Optional[int]:
    """The room left in /dev/shm, where DataLoader workers hand their batches over; None
    where there is no /dev/shm."""
    try:
        return shutil.disk_usage("/dev/shm").free
    except OSError:
        return None
