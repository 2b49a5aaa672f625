"""Synthetic JPEGs and the decode + augment dataset the decode-bound scenarios use.

The images are made here with pillow (noise over gradients, so the JPEG decoder has real entropy to
work through) and kept in memory as encoded bytes: reading them costs nothing, decoding costs CPU.
The augmentation is a torchvision-style random resized crop + flip, written with PIL alone because
torchvision is not on every machine these run on.
"""

from __future__ import annotations

import io
import random

import torch
from torch.utils.data import Dataset

SOURCE_SIZE = (640, 480)
"""Width x height of the stored JPEGs: VGA, a typical photo-dataset size before resizing."""
CROP = 224
"""The output side: what ImageNet-style pipelines feed a model."""
QUALITY = 90


def make_jpegs(n: int, seed: int = 0, size: tuple[int, int] = SOURCE_SIZE) -> list[bytes]:
    from PIL import Image

    rng = random.Random(seed)
    w, h = size
    out = []
    for i in range(n):
        noise = Image.effect_noise((w, h), 40 + 10 * (i % 5)).convert("RGB")
        tint = Image.new("RGB", (w, h), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        img = Image.blend(noise, tint, 0.5)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=QUALITY)
        out.append(buf.getvalue())
    return out


def decode_augment(jpeg: bytes, rng: random.Random, crop: int = CROP) -> torch.Tensor:
    """JPEG bytes -> a 3 x crop x crop float tensor in [0, 1]."""
    from PIL import Image

    img = Image.open(io.BytesIO(jpeg)).convert("RGB")
    w, h = img.size
    scale = rng.uniform(0.35, 1.0)  # torchvision RandomResizedCrop's area range is (0.08, 1)
    cw, ch = max(8, int(w * scale)), max(8, int(h * scale))
    x0, y0 = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
    img = img.resize((crop, crop), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(crop, crop, 3)
    return t.permute(2, 0, 1).float().div_(255.0)


class JpegDataset(Dataset):
    """Decodes and augments one stored JPEG per item (in the DataLoader worker that asks)."""

    def __init__(self, jpegs: list[bytes], classes: int = 10, crop: int = CROP) -> None:
        self.jpegs = jpegs
        self.classes = classes
        self.crop = crop

    def __len__(self) -> int:
        return 1 << 30  # one endless epoch: the workers are started once

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        rng = random.Random(i)
        return decode_augment(self.jpegs[i % len(self.jpegs)], rng, self.crop), i % self.classes


def small_cnn(classes: int = 10) -> torch.nn.Module:
    """A cheap model for 224 x 224 inputs: far less work per image than decoding the image."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, kernel_size=8, stride=8),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 16, classes),
    )
