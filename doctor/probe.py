"""The Python/PyTorch probe: runs in a child process of the Python that will train."""

from __future__ import annotations

from typing import Any, Callable, Optional


def make_probe(python: Optional[str]) -> Optional[Callable[[], Optional[dict[str, Any]]]]:
    """A callable that runs the probe under `python` (default: this interpreter)."""
    return None
