"""Photo classifier on a folder of JPEGs, heavy PIL augmentation, one DataLoader worker.

What an engineer writes when torchvision is not at hand: a Dataset over ``root/<class>/*.jpg`` that
decodes with pillow and augments per sample (random crop + resize, rotation, colour jitter, blur),
a small CNN, ``num_workers=1``. The augmentation costs far more CPU per batch than the model step,
and one worker cannot keep up: the main process waits for batches most of the time.

    python bench/field_cpu/augment_folder.py --duration 90

Prints a ready line on stdout, then on exit its own time split (waiting for a batch vs. the step).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from PIL import Image, ImageEnhance, ImageFilter
from torch.utils.data import DataLoader, Dataset

CLASSES = ("cat", "dog", "bird", "boat")


def make_photos(root: Path, per_class: int, size=(640, 480)) -> None:
    rng = np.random.default_rng(0)
    for c, name in enumerate(CLASSES):
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            base = rng.integers(0, 255, size=(size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
            img = Image.fromarray(base).resize(size, Image.BICUBIC)  # smooth blobs, photo-sized file
            img.save(d / f"{i:05d}.jpg", quality=90)


class PhotoFolder(Dataset):
    def __init__(self, root: Path, out: int = 160):
        self.items = [(p, c) for c, n in enumerate(CLASSES) for p in sorted((root / n).glob("*.jpg"))]
        self.out = out

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        img = Image.open(path).convert("RGB")
        w, h = img.size
        s = random.uniform(0.4, 1.0)
        cw, ch = int(w * s), int(h * s)
        x, y = random.randint(0, w - cw), random.randint(0, h - ch)
        img = img.crop((x, y, x + cw, y + ch)).resize((self.out, self.out), Image.BICUBIC)
        img = img.rotate(random.uniform(-20, 20), resample=Image.BICUBIC)
        for enh in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
            img = enh(img).enhance(random.uniform(0.7, 1.3))
        img = img.filter(ImageFilter.GaussianBlur(random.uniform(0.1, 2.0)))
        if random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - 0.5) / 0.25, label


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 5, stride=4, padding=2), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, len(CLASSES)),
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--per-class", type=int, default=100)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="field_aug_"))
    try:
        make_photos(root, a.per_class)
        ds = PhotoFolder(root)
        dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0, drop_last=True)
        net = model()
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        lossf = nn.CrossEntropyLoss()
        print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
        t0 = time.perf_counter()
        wait = step = 0.0
        steps = 0
        while time.perf_counter() - t0 < a.duration:
            it = iter(dl)
            while True:
                ta = time.perf_counter()
                try:
                    x, y = next(it)
                except StopIteration:
                    break
                tb = time.perf_counter()
                opt.zero_grad()
                lossf(net(x), y).backward()
                opt.step()
                tc = time.perf_counter()
                wait += tb - ta
                step += tc - tb
                steps += 1
                if tc - t0 >= a.duration:
                    break
        total = time.perf_counter() - t0
        print(json.dumps({"t": time.time(), "event": "end", "steps": steps, "steps_per_s": steps / total,
                          "wait_share": wait / total, "step_share": step / total}), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
