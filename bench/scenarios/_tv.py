"""torchvision for the real-code scenarios, and the JPEG folder tree they read with ``ImageFolder``.

``import_torchvision()`` imports torchvision. On a machine whose torch is a CPU-only build and whose
torchvision came from PyPI (built against the CUDA torch; the CI machine here: torch 2.13.0+cpu
from a local file, torchvision 0.28.0 from PyPI), torchvision's C extension cannot load
(``extension._has_ops()`` is False) and the import fails on the two fake-kernel registrations that
``torchvision/_meta_registrations.py`` makes without checking for the ops (``torchvision::nms``
and ``qnms``). The scenarios use no torchvision op (datasets, transforms and models are plain
Python and torch), so then the two schemas are declared and the import retried. On the H200
(torch 2.11.0+cu130, torchvision 0.26.0) the first import works and nothing is declared.

``make_image_folder`` writes the ``train/<class>/*.jpg`` and ``val/<class>/*.jpg`` tree that
``torchvision.datasets.ImageFolder`` reads, with pillow, in parallel. Nothing here is committed:
the tree lives in a temp dir the scenario removes, or in ``--data-dir`` where it is kept and reused
by the next run with the same shape (several scenarios of one bench run share one tree).
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

_DECLARED: list = []
"""Keeps the Library that declares the two schemas alive (dropping it would undeclare them)."""


def import_torchvision():
    import torch

    try:
        import torchvision
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
        _DECLARED.append(lib)
        import torchvision
    return torchvision


SOURCE_SIZE = (500, 375)
"""Width x height of each JPEG: the typical ImageNet photo (mean ~400 x 350, ~110 kB)."""
QUALITY = 90


def _write_one(job: tuple[str, int, tuple[int, int]]) -> int:
    from PIL import Image

    path, seed, (w, h) = job
    rng = random.Random(seed)
    noise = Image.effect_noise((w, h), 30 + rng.randrange(40)).convert("RGB")
    tint = Image.new("RGB", (w, h), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    buf = io.BytesIO()
    Image.blend(noise, tint, 0.5).save(buf, format="JPEG", quality=QUALITY)
    Path(path).write_bytes(buf.getvalue())
    return len(buf.getvalue())


def make_image_folder(root: str, train: int, val: int, classes: int, size: tuple[int, int] = SOURCE_SIZE) -> dict:
    """Write ``train`` + ``val`` JPEGs under ``root`` (skipped when a tree of that shape is there)."""
    shape = {"train": train, "val": val, "classes": classes, "size": list(size)}
    stamp = Path(root) / "shape.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("shape") == shape:
        return json.loads(stamp.read_text())
    jobs = []
    for split, n in (("train", train), ("val", val)):
        for c in range(classes):
            os.makedirs(os.path.join(root, split, f"class{c:03d}"), exist_ok=True)
        jobs += [(os.path.join(root, split, f"class{i % classes:03d}", f"{i:06d}.jpg"), i + (split == "val") * 10**6, size)
                 for i in range(n)]
    with ProcessPoolExecutor(max(1, (os.cpu_count() or 1) - 1)) as pool:
        total = sum(pool.map(_write_one, jobs, chunksize=16))
    info = {"shape": shape, "bytes": total}
    stamp.write_text(json.dumps(info))
    return info


class DataDir:
    """``--data-dir`` (kept for the next run) or a private temp dir (removed by ``close``)."""

    def __init__(self, asked: str | None, prefix: str) -> None:
        self.keep = asked is not None
        if asked:
            os.makedirs(asked, exist_ok=True)
        self.path = asked or tempfile.mkdtemp(prefix=prefix)

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)
