"""What a benchmark trains: a model, a synthetic batch made on the device, a loss, an optimizer.

Built-in workloads (images/s for the vision models, tokens/s for gpt2):
  resnet50, vit_b_16  torchvision's model when torchvision imports, else the identical
                      in-package definition (rocmdoctor.tuners.bench.models); SGD momentum 0.9
  gpt2                GPT-2-small-like causal LM, next-token cross-entropy, AdamW
  tinycnn             a tiny CNN for tests
A user workload is "pkg.module:factory": `factory(spec)` returns a `Workload`, or a tuple
`(model, make_batch, loss_fn)` where `make_batch(batch_size, device) -> (inputs, targets)`
and `loss_fn(outputs, targets) -> scalar tensor` (docs/bench.md shows one).

Runs in the benchmark worker only (imports torch).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from rocmdoctor.tuners.bench import models
from rocmdoctor.tuners.bench.spec import BenchSpec

MakeBatch = Callable[[int, torch.device], tuple[Any, Any]]
LossFn = Callable[[Any, Any], torch.Tensor]
OptimizerFactory = Callable[[list[nn.Parameter]], torch.optim.Optimizer]


def sgd_momentum(params: list[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def adamw(params: list[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-4)


@dataclass
class Workload:
    model: nn.Module
    make_batch: MakeBatch
    loss_fn: LossFn
    unit: str = "samples"  # what throughput counts: images, tokens, samples
    units_per_sample: int = 1  # tokens per sequence for language models
    optimizer: OptimizerFactory = sgd_momentum
    optimizer_name: str = "SGD(lr=0.01, momentum=0.9)"
    source: str = ""
    notes: list[str] = field(default_factory=list)
    classes: int = 0  # an image classifier's classes (labels of --data fold into them)


class WorkloadError(Exception):
    """The workload cannot be built (bad import path, bad factory result)."""


def build_workload(spec: BenchSpec) -> Workload:
    if spec.model in ("resnet50", "vit_b_16"):
        return _vision(spec)
    if spec.model == "gpt2":
        return _gpt2(spec)
    if spec.model == "tinycnn":
        return Workload(models.tiny_cnn(), _image_batch(spec.image_size, 10), F.cross_entropy,
                        unit="images", source="rocmdoctor.tuners.bench.models", classes=10)
    return _user(spec.model, spec)


def _image_batch(size: int, classes: int) -> MakeBatch:
    def make(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        # Random, not zero, inputs: zeros can take fast paths real data never sees.
        images = torch.randn(batch, 3, size, size, device=device)
        labels = torch.randint(0, classes, (batch,), device=device)
        return images, labels

    return make


def _vision(spec: BenchSpec) -> Workload:
    notes: list[str] = []
    model: Optional[nn.Module] = None
    try:
        import torchvision

        if spec.model == "resnet50":
            model = torchvision.models.resnet50()
        else:
            model = torchvision.models.vit_b_16(image_size=spec.image_size)
        source = f"torchvision {torchvision.__version__}"
    except Exception as exc:  # noqa: BLE001 - any import failure means: use our copy
        last = (str(exc).strip().splitlines() or [""])[-1]
        notes.append(f"torchvision unusable ({type(exc).__name__}: {last}); "
                     "used the identical in-package definition")
        source = "rocmdoctor.tuners.bench.models"
    if model is None:
        model = models.resnet50() if spec.model == "resnet50" else models.vit_b_16(
            image_size=spec.image_size)
    return Workload(model, _image_batch(spec.image_size, 1000), F.cross_entropy, unit="images",
                    source=source, notes=notes, classes=1000)


def _gpt2(spec: BenchSpec) -> Workload:
    vocab = 50257
    seq = spec.seq_len

    def make(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return Workload(models.gpt2_small(seq), make, loss, unit="tokens", units_per_sample=seq,
                    optimizer=adamw, optimizer_name="AdamW(lr=1e-4)",
                    source="rocmdoctor.tuners.bench.models (GPT-2 small shape)")


def _not_a_factory(factory: Callable[..., Any], spec: BenchSpec) -> Optional[str]:
    """Why `factory` cannot be called as factory(spec), from its signature; None when it can
    (or when it has no signature to read: then the call itself tells)."""
    import inspect

    try:
        inspect.signature(factory).bind(spec)
    except TypeError as exc:
        return str(exc)
    except ValueError:  # a built-in without a signature
        return None
    return None


def _user(path: str, spec: BenchSpec) -> Workload:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - report any import failure as one line
        raise WorkloadError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise WorkloadError(f"{module_name!r} has no callable {attr!r}")
    refused = _not_a_factory(factory, spec)
    if refused:
        raise WorkloadError(f"{path} is not a workload factory: {refused}; expected "
                            "factory(spec) returning a Workload or (model, make_batch, loss_fn)")
    made = factory(spec)
    if isinstance(made, Workload):
        made.source = made.source or path
        return made
    if isinstance(made, tuple) and len(made) == 3 and isinstance(made[0], nn.Module):
        return Workload(made[0], made[1], made[2], source=path)
    raise WorkloadError(f"{path} returned {type(made).__name__}; expected a Workload or "
                        "(model, make_batch, loss_fn)")
