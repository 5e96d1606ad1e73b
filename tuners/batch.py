"""The batch sizes a tune tries when the user names none: from the user's batch upward in
doublings, up to the largest that fits with headroom (found by the max-batch search,
rocmdoctor.tuners.bench.maxbatch). On the CPU, two doublings and no search: host memory is
shared with everything else, and larger CPU batches seldom run faster per sample.

A batch size changes the training (the learning rate scales with it: Goyal et al., "Accurate,
Large Minibatch SGD", https://arxiv.org/abs/1706.02677), so the result names the best at the
user's batch size apart from the best overall.

The search result is kept beside the study (keyed by the workload and the machine), so that
a resumed tune plans the same space without probing again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any, Optional

LIMIT_FACTOR = 16  # probe up to 16 times the user's batch
HEADROOM = 0.9  # of the largest batch that fits: memory other runs of the model may need
CPU_DOUBLINGS = 2


def choices(user: int, largest_fit: Optional[int], limit_reached: bool) -> tuple[int, ...]:
    """The user's batch and its doublings that fit, plus the largest that fits with headroom
    when it is well past the last doubling."""
    if largest_fit is None or largest_fit <= user:
        return (user,)
    # An out-of-memory bounds the search: keep some memory free below it.
    cap = largest_fit if limit_reached else (
        int(largest_fit * HEADROOM) // 8 * 8 if largest_fit >= 16 else largest_fit)
    sizes = [user]
    while sizes[-1] * 2 <= cap:
        sizes.append(sizes[-1] * 2)
    if cap >= sizes[-1] * 1.25:
        sizes.append(cap)
    return tuple(sizes)


def cpu_choices(user: int) -> tuple[int, ...]:
    return tuple(user * 2 ** k for k in range(CPU_DOUBLINGS + 1))


def cache_path(folder: str, spec: Mapping[str, Any], platform: Mapping[str, Any]) -> str:
    key = json.dumps([dict(spec), dict(platform)], sort_keys=True, default=str)
    return os.path.join(folder, f"batch-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json")


def load(path: str) -> Optional[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    sizes = data.get("sizes") if isinstance(data, dict) else None
    if not (isinstance(sizes, list) and sizes and all(isinstance(s, int) and s > 0
                                                      for s in sizes)):
        return None
    return data


def save(path: str, data: Mapping[str, Any]) -> None:
    """Keep the search result; a folder that cannot be written only costs a new search."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(dict(data), fh)
    except OSError:
        pass
