"""Tabular classifier whose DataLoader workers start again every epoch and each load a table first.

A common shape: the Dataset keeps only a path; each worker loads the feature table (a .npy file of
~200 MB) and computes normalisation statistics lazily on its first ``__getitem__``, so that no big
array is pickled to the workers. With ``persistent_workers=False`` (the default) the workers are
new every epoch, so every epoch starts with both workers loading and reducing the table while the
main process waits. Epochs are short (40 batches), as on a small fine-tuning set.

    python bench/field_cpu/respawn_workers.py --duration 90

Prints a ready line on stdout, then on exit its own time split (first batch of each epoch, other
batch waits, steps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ROWS, COLS = 400_000, 128


class Table(Dataset):
    def __init__(self, path: Path, rows: int):
        self.path = path
        self.rows = rows
        self.feat = None

    def _load(self):
        feat = np.load(self.path)                       # ~200 MB read from the page cache
        mean = feat.mean(axis=0)
        std = np.sqrt(((feat - mean) ** 2).mean(axis=0)) + 1e-6
        self.feat = ((feat - mean) / std).astype(np.float32)

    def __len__(self):
        return self.rows

    def __getitem__(self, i):
        if self.feat is None:
            self._load()
        row = self.feat[i]
        return torch.from_numpy(row), int(row[0] > 0) + 2 * int(row[1] > 0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    ap.add_argument("--batches-per-epoch", type=int, default=40)
    ap.add_argument("--persistent", action="store_true", help="the fix: persistent_workers=True")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="field_respawn_"))
    try:
        path = tmp / "features.npy"
        np.save(path, np.random.default_rng(0).standard_normal((ROWS, COLS), dtype=np.float32))
        batch = 128
        ds = Table(path, rows=batch * a.batches_per_epoch)  # the epoch's subset of the table
        dl = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=2,
                        persistent_workers=a.persistent)
        net = nn.Sequential(nn.Linear(COLS, 256), nn.ReLU(), nn.Linear(256, 4))
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
        print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
        t0 = time.perf_counter()
        first = wait = step = 0.0
        steps = epochs = 0
        while time.perf_counter() - t0 < a.duration:
            epochs += 1
            it = iter(dl)
            k = 0
            while True:
                ta = time.perf_counter()
                try:
                    x, y = next(it)
                except StopIteration:
                    break
                tb = time.perf_counter()
                opt.zero_grad()
                nn.functional.cross_entropy(net(x), y).backward()
                opt.step()
                tc = time.perf_counter()
                if k == 0:
                    first += tb - ta
                else:
                    wait += tb - ta
                step += tc - tb
                k += 1
                steps += 1
        total = time.perf_counter() - t0
        print(json.dumps({"t": time.time(), "event": "end", "steps": steps, "epochs": epochs,
                          "steps_per_s": steps / total, "first_batch_share": first / total,
                          "other_wait_share": wait / total, "step_share": step / total}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
