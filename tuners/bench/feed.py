"""Real batches for each training step (in the worker: imports torch), and what they cost: how
long each step waited for its batch (a host timer around the loader's next batch), how long
it computed (device events around the step on a GPU, a host timer on the CPU), and the
verdict: input-bound, compute-bound or in between.

The verdict reads the share of the measured time the device was not computing: on a GPU the
step is launched asynchronously, so the host's wait for data is hidden while the GPU still
computes the step before; what is not hidden shows as time the GPU did no work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from rocmdoctor.tuners.bench.data import LoaderSettings, gpu_decoded, make_loader

# The share of the measured time the device waits for input above which a run is called
# input-bound, and below which compute-bound; in between, both matter.
INPUT_BOUND = 0.5
COMPUTE_BOUND = 0.1


def verdict_of(input_share: float) -> str:
    if input_share >= INPUT_BOUND:
        return "input-bound"
    if input_share <= COMPUTE_BOUND:
        return "compute-bound"
    return "in between"


@dataclass
class Feed:
    """Batches of `classes` classes from a folder, on `device`, for one step at a time."""

    torch: Any
    device: Any
    loader: Any
    settings: LoaderSettings
    classes: int
    size: int
    waits: list[float] = field(default_factory=list)
    spans: list[Any] = field(default_factory=list)  # (start, end) events, or host seconds
    _batches: Optional[Any] = None
    _epochs: int = 0

    @classmethod
    def of(cls, torch: Any, device: Any, root: str, batch_size: int, size: int,
           settings: LoaderSettings, classes: int, seed: int = 0) -> Feed:
        return cls(torch, device, make_loader(root, batch_size, size, settings, seed),
                   settings, classes, size)

    @property
    def cuda(self) -> bool:
        return bool(self.device.type == "cuda")

    def _next_raw(self) -> tuple[Any, Any]:
        if self._batches is None:
            self._batches = iter(self.loader)
        try:
            return next(self._batches)
        except StopIteration:  # an epoch ended: the next one starts
            self._epochs += 1
            self._batches = iter(self.loader)
            return next(self._batches)

    def next(self) -> tuple[Any, Any]:
        """The next batch on the device; its wait is recorded."""
        t0 = time.perf_counter()
        images, labels = self._next_raw()
        if self.settings.gpu_decode:
            images = gpu_decoded(images, self.device, self.size, len(self.waits),
                                 self.settings.channels_last)
        else:
            images = images.to(self.device, non_blocking=self.settings.pin_memory)
        labels = (labels % self.classes).to(self.device, non_blocking=self.settings.pin_memory)
        self.waits.append(time.perf_counter() - t0)
        return images, labels

    def start(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def end(self, begun: Any) -> None:
        if not self.cuda:
            self.spans.append(time.perf_counter() - begun)
            return
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        self.spans.append((begun, event))

    def split(self, since: int, wall_s: float) -> dict[str, Any]:
        """The measured steps from step `since` on (after a sync): waiting, computing, the
        device's idle share and the verdict."""
        waits = self.waits[since:]
        spans = self.spans[since:]
        compute = sum(s.elapsed_time(e) / 1000.0 for s, e in spans) if self.cuda \
            else float(sum(spans))
        wait = float(sum(waits))
        idle = max(0.0, wall_s - compute) / wall_s if wall_s > 0 else 0.0
        share = idle if self.cuda else (wait / wall_s if wall_s > 0 else 0.0)
        return {"steps": len(waits), "wait_s": wait, "compute_s": compute, "wall_s": wall_s,
                "input_share": share, "compute_share": 1.0 - share, "verdict": verdict_of(share),
                "epochs": self._epochs,
                "how": "device events around each step, a host timer around the loader's next "
                       "batch" if self.cuda else "host timers around the step and the batch"}
