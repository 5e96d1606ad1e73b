"""`--data` of `bench` and `tune`: the folder resolved (the synthetic images written, with
progress), checked before anything is measured, and /dev/shm weighed against the loader's
workers. Every line is redacted: logs get shared."""

from __future__ import annotations

from typing import Optional

import typer

from rocmdoctor.cli.common import fail
from rocmdoctor.tuners.bench.spec import BenchSpec

# Docker gives a container 64 MB of /dev/shm unless --shm-size says otherwise
# (https://docs.docker.com/reference/cli/docker/container/run/); PyTorch's DataLoader
# workers hand every batch over through it, and a worker that finds no room dies of SIGBUS
# ("This might be caused by insufficient shared memory (shm)",
# https://github.com/pytorch/pytorch/blob/main/torch/csrc/DataLoader.cpp).
SHM_FIX = "docker run --shm-size=16g ... (or --ipc=host)"
PREFETCH_DEFAULT = 2  # DataLoader(prefetch_factor=None) with workers: 2 batches each


def resolve_data(value: str, spec: BenchSpec, python: Optional[str],
                 workers: int) -> BenchSpec:
    """The spec with --data resolved to its folder; one line and exit 2 when it cannot be
    read. `workers` is the most DataLoader workers the run may use (for /dev/shm)."""
    from rocmdoctor.host.live import account_redactor
    from rocmdoctor.tuners.bench.data import DataError
    from rocmdoctor.tuners.bench.dataset import resolve

    redact = account_redactor()
    try:
        data = resolve(value, python, say=lambda line: typer.echo(redact(line), err=True))
    except DataError as exc:
        raise fail(redact(str(exc))) from None
    if data.images < spec.batch_size:
        raise fail(redact(f"--data {value}: {data.images} images, fewer than one batch of "
                          f"{spec.batch_size}"))
    warning = shm_warning(spec, workers)
    if warning:
        typer.echo(f"rocmdoctor: warning: {warning}", err=True)
    import dataclasses

    return dataclasses.replace(spec, data=data.path)


def batch_bytes(spec: BenchSpec) -> int:
    """One batch of float32 images as the loader hands it over."""
    return spec.batch_size * 3 * spec.image_size * spec.image_size * 4


def shm_warning(spec: BenchSpec, workers: int, free: Optional[int] = None,
                prefetch: Optional[int] = None) -> Optional[str]:
    """What to do when /dev/shm cannot hold the batches `workers` loader workers keep in
    flight (prefetch_factor each); None when it can, or with no workers."""
    from rocmdoctor.tuners.bench.dataset import shm_free_bytes

    if workers <= 0:
        return None
    free = shm_free_bytes() if free is None else free
    need = batch_bytes(spec) * workers * (prefetch or PREFETCH_DEFAULT)
    if free is None or free >= need:
        return None
    mib = 1024 * 1024
    return (f"/dev/shm has {free / mib:,.0f} MiB free, and {workers} DataLoader worker(s) "
            f"keep about {need / mib:,.0f} MiB of batches there: a worker that finds no room "
            f"dies of a bus error. In a container, give it more: {SHM_FIX}")
