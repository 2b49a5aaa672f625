"""A LightningModule trained on the CPU, validated every 100 steps and checkpointed each time.

A denoising autoencoder on in-memory vectors (``Trainer(accelerator="cpu")``), the way a tutorial
sets it up: ``val_check_interval=100`` steps, a validation set of 60 batches, and
``ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True)`` which writes the weights and
Adam state (~90 MB per file) after each validation. Data come from TensorDatasets with
``num_workers=0``: the input costs nothing. The job's own compute (training, then validation
forward passes) is the limit; the checkpoint write is a short pause every ~100 steps.

    python bench/field_cpu/lightning_val_ckpt.py --duration 90

Prints a ready line on stdout, then on exit its own time split (train steps, validation,
checkpoint saves), measured by a callback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.scenarios._tv import import_torchvision  # noqa: E402  (Lightning imports torchvision: see _tv)

import_torchvision()
import lightning as L  # noqa: E402
from lightning.pytorch.callbacks import Callback, ModelCheckpoint  # noqa: E402

DIM = 1024


class AutoEncoder(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(DIM, 2048), nn.GELU(), nn.Linear(2048, 1024), nn.GELU(), nn.Linear(1024, 256))
        self.dec = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, DIM))

    def forward(self, x):
        return self.dec(self.enc(x))

    def training_step(self, batch, _):
        (x,) = batch
        loss = nn.functional.mse_loss(self(x + 0.1 * torch.randn_like(x)), x)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, _):
        (x,) = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), x))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Clock(Callback):
    """The job's own account of where its time went (ground truth for the README)."""

    def __init__(self, t_end: float):
        self.t_end = t_end
        self.split = {"train": 0.0, "val": 0.0, "save": 0.0}
        self._t = 0.0
        self.steps = 0

    def on_train_batch_start(self, trainer, *_):
        self._t = time.perf_counter()
        if time.time() >= self.t_end:
            trainer.should_stop = True

    def on_train_batch_end(self, *_):
        self.split["train"] += time.perf_counter() - self._t
        self.steps += 1

    def on_validation_start(self, *_):
        self._v = time.perf_counter()

    def on_validation_end(self, *_):
        self.split["val"] += time.perf_counter() - self._v


class TimedCheckpoint(ModelCheckpoint):
    def __init__(self, clock: Clock, **kw):
        super().__init__(**kw)
        self.clock = clock

    def _save_checkpoint(self, trainer, filepath):
        t = time.perf_counter()
        super()._save_checkpoint(trainer, filepath)
        self.clock.split["save"] += time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    g = torch.Generator().manual_seed(0)
    train = TensorDataset(torch.randn(64 * 400, DIM, generator=g))
    val = TensorDataset(torch.randn(64 * 60, DIM, generator=g))
    tmp = tempfile.mkdtemp(prefix="field_ckpt_")
    try:
        clock = Clock(time.time() + a.duration)
        ckpt = TimedCheckpoint(clock, dirpath=tmp, monitor="val_loss", save_top_k=2, save_last=True)
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1000, val_check_interval=100,
                            callbacks=[clock, ckpt], logger=False, enable_progress_bar=False,
                            enable_model_summary=False, num_sanity_val_steps=0)
        print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
        t0 = time.perf_counter()
        trainer.fit(AutoEncoder(), DataLoader(train, batch_size=64, shuffle=True),
                    DataLoader(val, batch_size=64))
        total = time.perf_counter() - t0
        print(json.dumps({"t": time.time(), "event": "end", "steps": clock.steps,
                          "steps_per_s": clock.steps / total,
                          **{f"{k}_share": v / total for k, v in clock.split.items()}}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
