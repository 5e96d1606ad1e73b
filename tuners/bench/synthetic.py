"""Writes N real JPEG files into an ImageFolder-style tree, for `--data synthetic-jpeg[:N]`
(run as `python -m rocmdoctor.tuners.bench.synthetic OUT N` in the Python that trains: it
encodes with Pillow, or with torchvision.io where Pillow is missing).

The pictures are smooth random colour fields with some grain, sized as photographs of
ImageNet's training set mostly are: the longer side 500 pixels, the other between 333 and
500, either way up. Decoding them costs what decoding such photographs costs (the decoder's
work grows with the pixels and the entropy of the file), so the input pipeline is measured
without a data set. Each file is written under a temporary name and renamed, so an
interrupted run leaves no half file, and a second run writes only what is missing. Progress
goes to stdout as lines `written N of M`; the last line is `done M BYTES`.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any, Callable

CLASSES = 10
LONG_SIDE = 500
SHORT_SIDES = (333, 500)
QUALITY = 90
REPORT_EVERY = 100


def name_of(index: int) -> str:
    """The file of image `index`: class folders c00..c09 in turn."""
    return os.path.join(f"c{index % CLASSES:02d}", f"img{index:07d}.jpg")


def size_of(index: int, seed: int = 0) -> tuple[int, int]:
    """(width, height) of image `index`, the same on every run."""
    rng = random.Random(seed * 1_000_003 + index)
    short = rng.randint(*SHORT_SIDES)
    return (LONG_SIDE, short) if rng.random() < 0.75 else (short, LONG_SIDE)


def picture(index: int, seed: int = 0) -> Any:
    """A uint8 numpy array (height, width, 3): a coarse random field, smoothly enlarged, with
    fine grain over it."""
    import numpy as np

    width, height = size_of(index, seed)
    rng = np.random.default_rng(seed * 1_000_003 + index)
    coarse = rng.uniform(0, 255, size=(6, 8, 3))
    ys = np.linspace(0, coarse.shape[0] - 1, height)
    xs = np.linspace(0, coarse.shape[1] - 1, width)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, coarse.shape[0] - 1), np.minimum(x0 + 1, coarse.shape[1] - 1)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x1] * fx
    bottom = coarse[y1][:, x0] * (1 - fx) + coarse[y1][:, x1] * fx
    field = top * (1 - fy) + bottom * fy
    grain = rng.normal(0, 12, size=(height, width, 3))
    return np.clip(field + grain, 0, 255).astype(np.uint8)


def _encoder() -> Callable[[Any, str], None]:
    try:
        from PIL import Image

        def pil(array: Any, path: str) -> None:
            Image.fromarray(array).save(path, format="JPEG", quality=QUALITY)
        return pil
    except ImportError:
        pass
    try:
        import torch
        from torchvision.io import encode_jpeg, write_file

        def tv(array: Any, path: str) -> None:
            write_file(path, encode_jpeg(torch.from_numpy(array).permute(2, 0, 1).contiguous(),
                                         quality=QUALITY))
        return tv
    except Exception:  # noqa: BLE001 - neither imports: say so below
        pass
    raise RuntimeError("writing JPEG files needs Pillow or torchvision in this Python "
                       "(pip install pillow)")


def _write_one(job: tuple[str, int, int]) -> int:
    """Write image `index` under `out` unless it is there; its size in bytes."""
    out, index, seed = job
    path = os.path.join(out, name_of(index))
    if not os.path.exists(path):
        part = path + ".part"
        _ENCODE[0](picture(index, seed), part)
        os.replace(part, path)
    return os.path.getsize(path)


_ENCODE: list[Callable[[Any, str], None]] = []


def _start_worker() -> None:
    _ENCODE[:] = [_encoder()]


def processes() -> int:
    """The CPUs this process may run on (its affinity mask)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def write(out: str, count: int, seed: int = 0, report: Callable[[str], None] = print,
          workers: int = 0) -> int:
    """Write the images of `out` that are missing, with `workers` processes (0: one a CPU);
    the bytes of all of them."""
    _start_worker()  # here too: a missing encoder is said before any process starts
    for c in range(CLASSES):
        os.makedirs(os.path.join(out, f"c{c:02d}"), exist_ok=True)
    jobs = [(out, index, seed) for index in range(count)]
    workers = min(workers or processes(), max(1, count // REPORT_EVERY))
    total = 0
    if workers == 1:
        sizes: Any = map(_write_one, jobs)
    else:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_start_worker)
        sizes = pool.imap(_write_one, jobs, chunksize=16)
    for done, size in enumerate(sizes, 1):
        total += size
        if done % REPORT_EVERY == 0 and done < count:
            report(f"written {done} of {count}")
    if workers > 1:
        pool.close()
        pool.join()
    report(f"done {count} {total}")
    return total


def main(argv: list[str]) -> int:
    from rocmdoctor.host import child_setup

    child_setup.die_with_parent(child_setup.parent_pid_from_argv(argv))
    out, count = argv[1], int(argv[2])
    stream = child_setup.protocol_stream()  # what a library prints goes to stderr

    def report(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()
    try:
        write(out, count, report=report)
    except (OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
