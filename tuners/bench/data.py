"""Real images for a benchmark (in the worker: imports torch): an ImageFolder-style tree of JPEG
and PNG files (root/class/image.jpg), decoded and transformed as ImageNet training does
(random resized crop to the model's size, horizontal flip, normalisation), batched by
torch's DataLoader with the loader settings of the spec.

Decoding uses torchvision.io where torchvision imports, Pillow otherwise; with
`gpu_decode` the loader hands over the files' bytes and the step decodes them on the GPU
(torchvision.io.decode_jpeg(device=...)), where this torchvision can.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
# ImageNet's per-channel mean and standard deviation, as torchvision's reference training
# normalises (https://github.com/pytorch/vision/blob/main/references/classification/presets.py)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# RandomResizedCrop's defaults: scale (0.08, 1), ratio (3/4, 4/3)
# (https://docs.pytorch.org/vision/stable/generated/torchvision.transforms.RandomResizedCrop.html)
SCALE = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)


class DataError(Exception):
    """The data cannot be read as asked: one line for the user."""


def list_images(root: str) -> tuple[list[tuple[str, int]], list[str]]:
    """(path, class index) of every image under root/<class>/, and the class names, sorted;
    DataError for a folder that is missing, has no class folder or no image."""
    if not os.path.isdir(root):
        raise DataError(f"--data {root}: no such folder")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise DataError(f"--data {root}: no class folders in it (ImageFolder layout: "
                        f"{root}/<class>/<image>.jpg)")
    samples = []
    for index, name in enumerate(classes):
        for dirpath, _, files in sorted(os.walk(os.path.join(root, name))):
            samples += [(os.path.join(dirpath, f), index) for f in sorted(files)
                        if f.lower().endswith(IMAGE_SUFFIXES)]
    if not samples:
        raise DataError(f"--data {root}: no JPEG or PNG files under its class folders")
    return samples, classes


def _decoder() -> Callable[[str], Any]:
    """A function from a file's path to a uint8 tensor, channels first (3, H, W)."""
    import torch

    try:
        from torchvision.io import ImageReadMode, decode_image, read_file

        def tv(path: str) -> Any:
            return decode_image(read_file(path), mode=ImageReadMode.RGB)
        return tv
    except Exception:  # noqa: BLE001 - any import failure: use Pillow
        pass
    try:
        from PIL import Image
    except ImportError:
        raise DataError("--data needs torchvision or Pillow to decode images "
                        "(pip install pillow)") from None

    def pil(path: str) -> Any:
        import numpy as np

        with Image.open(path) as image:
            array = np.asarray(image.convert("RGB"))
        return torch.from_numpy(array.copy()).permute(2, 0, 1)
    return pil


def crop_box(height: int, width: int, rng: random.Random) -> tuple[int, int, int, int]:
    """RandomResizedCrop's box (top, left, h, w): an area share in SCALE and an aspect ratio
    in RATIO (log-uniform), ten tries, then the centre crop torchvision falls back to."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        ratio = math.exp(rng.uniform(math.log(RATIO[0]), math.log(RATIO[1])))
        w = int(round(math.sqrt(target * ratio)))
        h = int(round(math.sqrt(target / ratio)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    ratio_now = width / height
    if ratio_now < RATIO[0]:
        w, h = width, int(round(width / RATIO[0]))
    elif ratio_now > RATIO[1]:
        h, w = height, int(round(height * RATIO[1]))
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


def train_transform(image: Any, size: int, rng: random.Random, channels_last: bool = False
                    ) -> Any:
    """uint8 (3, H, W) -> float (3, size, size): random resized crop, flip, normalise."""
    import torch
    import torch.nn.functional as F

    top, left, h, w = crop_box(int(image.shape[-2]), int(image.shape[-1]), rng)
    crop = image[..., top:top + h, left:left + w].unsqueeze(0).float()
    out = F.interpolate(crop, size=(size, size), mode="bilinear", align_corners=False,
                        antialias=True)[0]
    if rng.random() < 0.5:
        out = out.flip(-1)
    mean = torch.tensor(MEAN, device=out.device).view(3, 1, 1) * 255
    std = torch.tensor(STD, device=out.device).view(3, 1, 1) * 255
    out = (out - mean) / std
    return out.contiguous(memory_format=torch.channels_last) if channels_last else out


class ImageFolderData:
    """The dataset a DataLoader reads: decoded, transformed images and their classes; with
    `raw` the files' bytes instead (decoded on the GPU by the step)."""

    def __init__(self, root: str, size: int, raw: bool = False,
                 channels_last: bool = False, seed: int = 0) -> None:
        self.samples, self.classes = list_images(root)
        self.size, self.raw, self.channels_last, self.seed = size, raw, channels_last, seed
        self.decode = None if raw else _decoder()

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        import torch

        path, label = self.samples[index]
        if self.raw:  # plain bytes: a loader worker loads no torchvision extension
            with open(path, "rb") as fh:
                return torch.frombuffer(bytearray(fh.read()), dtype=torch.uint8), label
        try:
            image = self.decode(path) if self.decode else None
        except Exception as exc:  # noqa: BLE001 - a file that is no image: its name
            raise DataError(f"cannot decode {path}: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else 'not an image'}"
                            ) from None
        rng = random.Random(hash((self.seed, index, torch.initial_seed())))
        return train_transform(image, self.size, rng, self.channels_last), label


def _collate_raw(batch: Sequence[tuple[Any, int]]) -> tuple[list[Any], Any]:
    import torch

    return [b[0] for b in batch], torch.tensor([b[1] for b in batch])


@dataclass(frozen=True)
class LoaderSettings:
    num_workers: int = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: Optional[int] = None
    gpu_decode: bool = False
    channels_last: bool = False

    @classmethod
    def of(cls, settings: Any) -> LoaderSettings:
        workers = int(settings.get("num_workers", 0) or 0)
        return cls(num_workers=workers, pin_memory=bool(settings.get("pin_memory", False)),
                   persistent_workers=workers > 0 and bool(settings.get("persistent_workers")),
                   prefetch_factor=(int(settings["prefetch_factor"]) if workers > 0
                                    and settings.get("prefetch_factor") else None),
                   gpu_decode=bool(settings.get("gpu_decode", False)),
                   channels_last=bool(settings.get("loader_channels_last", False)))

    def dataloader_args(self) -> dict[str, Any]:
        """The DataLoader arguments these settings are (what the apply lines write)."""
        args: dict[str, Any] = {"num_workers": self.num_workers, "pin_memory": self.pin_memory}
        if self.num_workers > 0:
            args["persistent_workers"] = self.persistent_workers
            if self.prefetch_factor:
                args["prefetch_factor"] = self.prefetch_factor
        return args


def make_loader(root: str, batch_size: int, size: int, settings: LoaderSettings,
                seed: int = 0) -> Any:
    """A shuffling, batch-dropping DataLoader over the folder (an epoch ends where the data
    does: the benchmark starts a new one)."""
    import torch

    data = ImageFolderData(root, size, raw=settings.gpu_decode,
                           channels_last=settings.channels_last, seed=seed)
    if len(data) < batch_size:
        raise DataError(f"--data {root}: {len(data)} images, fewer than one batch of "
                        f"{batch_size}")
    generator = torch.Generator()
    generator.manual_seed(seed)
    return torch.utils.data.DataLoader(
        data, batch_size=batch_size, shuffle=True, drop_last=True,  # type: ignore[arg-type]
        generator=generator,
        collate_fn=_collate_raw if settings.gpu_decode else None,
        **settings.dataloader_args())


def gpu_decoded(images: Sequence[Any], device: Any, size: int, seed: int,
                channels_last: bool) -> Any:
    """A batch of JPEG bytes decoded on the GPU (torchvision.io.decode_jpeg) and transformed
    there."""
    import torch
    from torchvision.io import decode_jpeg

    decoded = decode_jpeg(list(images), device=device)
    rng = random.Random(seed)
    return torch.stack([train_transform(im, size, rng, channels_last) for im in decoded])
