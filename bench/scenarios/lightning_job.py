"""A PyTorch Lightning job: ``Trainer.fit`` with a LightningModule, its own loops and a validation loop.

Lightning drives everything: the fit loop, the optimizer step, moving batches to the device, the
validation loop after every epoch (``limit_val_batches``), bf16-mixed precision, the progress
bar and model summary off (as a job logged to a file would run), logging with ``self.log``. The
DataLoaders are built in the module's ``train_dataloader``/``val_dataloader``. Each item is a whole
ready-made batch in memory (``batch_size=None``, 4 MiB on CUDA), so the workers only hand out
tensors: the model's compute is the only real work.

Two variants. As Lightning runs it by default (``persistent_workers=False``; Lightning warns about
it): every epoch and every validation pass starts its workers again, and with short epochs (64
batches, ~0.3 s of GPU work on an H200) the job waits for its first batches at each start, so it is
input-bound by the loader's start-up (``decode``: the CPU side of the input, no file is read).
Run 21 on the H200 measured that wait on a first version of this job (16 MiB batches): gpuwatch's
stacks had the main thread waiting for data 38-50 % of the time. ``--persistent`` is the fix:
workers live across epochs and the next epoch's first batch is one cheap item away
(``gpu_bound``). The job measures its own wait (``fetch_share``: the time between the end of one
training batch and the start of the next, which is where Lightning fetches a batch and moves it to
the device). CUDA: 8 x Linear(4096) + GELU in bf16-mixed, batch 4096, AdamW, 8 validation batches.
CPU: 3 x Linear(256), batch 256, one intra-op thread. A callback counts steps and stops the fit at
the scenario's end time.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader, Dataset

from bench.scenarios._common import Meter, cpu_threads, model_bound, run_main
from bench.scenarios._tv import import_torchvision

STAGE = "decode"
DEVICES = ("cpu", "cuda")
SHAPES = {  # device -> in features, width, layers, batch, train batches, val batches
    "cuda": (256, 4096, 8, 4096, 64, 8),
    "cpu": (256, 256, 3, 256, 32, 4),
}
POOL = 16
"""Distinct ready-made batches in memory (items cycle through them)."""


def import_lightning():
    """``lightning`` (the unified package) or, where only that is installed, ``pytorch_lightning``.

    Lightning imports torchvision where it is installed, so that goes through _tv first."""
    try:
        import_torchvision()
    except ImportError:
        pass
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
    return pl


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (they only hand out tensors)")
    p.add_argument("--persistent", action="store_true", help="persistent_workers=True (the fix)")


def truth_for(args, device: str) -> str:
    """Restarted workers are the limit; with persistent workers the model is."""
    return model_bound(device) if args.persistent else STAGE


class Batches(Dataset):
    def __init__(self, n: int, features: int, batch: int, classes: int = 10) -> None:
        gen = torch.Generator().manual_seed(0)
        self.xs = [torch.randn(batch, features, generator=gen) for _ in range(POOL)]
        self.ys = [torch.randint(0, classes, (batch,), generator=gen) for _ in range(POOL)]
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return self.xs[i % POOL], self.ys[i % POOL]


def build_module(pl, features: int, width: int, layers: int, batch: int, train_batches: int, val_batches: int,
                 workers: int, pin: bool, persistent: bool):
    class Classifier(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            blocks = [torch.nn.Linear(features, width), torch.nn.GELU()]
            for _ in range(layers - 1):
                blocks += [torch.nn.Linear(width, width), torch.nn.GELU()]
            self.net = torch.nn.Sequential(*blocks, torch.nn.Linear(width, 10))

        def training_step(self, batch, i):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, i):
            x, y = batch
            self.log("val_acc", (self.net(x).argmax(1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-4)

        def train_dataloader(self):
            return DataLoader(Batches(train_batches, features, batch), batch_size=None, shuffle=True,
                              num_workers=workers, pin_memory=pin, persistent_workers=persistent)

        def val_dataloader(self):
            return DataLoader(Batches(val_batches, features, batch), batch_size=None, num_workers=workers,
                              pin_memory=pin, persistent_workers=persistent)

    return Classifier()


class LightningJob:
    name = "lightning_job"

    def __init__(self, args, device: str) -> None:
        self.pl = pl = import_lightning()
        self.device = device
        features, width, layers, batch, self.train_batches, self.val_batches = SHAPES[device]
        self.module = build_module(pl, features, width, layers, batch, self.train_batches, self.val_batches,
                                   args.workers, device == "cuda", args.persistent and args.workers > 0)
        self.facts = {"lightning": pl.__version__, "package": pl.__name__, "workers": args.workers,
                      "persistent_workers": bool(args.persistent), "batch": batch,
                      "width": width, "layers": layers, "epoch_batches": self.train_batches,
                      "val_batches": self.val_batches}
        self.result: dict = {}

    def run(self, until: float, meter: Meter) -> None:
        pl = self.pl

        class Clock(pl.Callback):
            def __init__(self) -> None:
                self.epochs = self.val_passes = 0
                self.fetch = self.in_val = self.val_t0 = 0.0
                self.last: float | None = None

            def on_train_epoch_start(self, trainer, *a) -> None:
                self.last = time.perf_counter()  # the loader's start-up counts as fetching

            def on_train_batch_start(self, trainer, *a) -> None:
                if self.last is not None:
                    self.fetch += time.perf_counter() - self.last

            def on_train_batch_end(self, trainer, *a) -> None:
                meter.step()
                self.last = time.perf_counter()
                if time.time() >= until:
                    trainer.should_stop = True

            def on_train_epoch_end(self, trainer, *a) -> None:
                self.epochs += 1
                self.last = None

            def on_validation_start(self, trainer, *a) -> None:
                self.val_t0 = time.perf_counter()  # before the validation loader starts its workers

            def on_validation_end(self, trainer, *a) -> None:
                self.val_passes += 1
                self.in_val += time.perf_counter() - self.val_t0

        clock = Clock()
        for name in ("lightning", "lightning.pytorch", "pytorch_lightning", "lightning_fabric"):
            logging.getLogger(name).setLevel(logging.ERROR)  # no banner lines between the markers
        trainer = pl.Trainer(
            accelerator="gpu" if self.device == "cuda" else "cpu", devices=1,
            precision="bf16-mixed" if self.device == "cuda" else "32-true",
            max_epochs=-1, limit_val_batches=self.val_batches, num_sanity_val_steps=0,
            enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False, logger=False,
            callbacks=[clock],
        )
        t = time.perf_counter()
        with cpu_threads(self.device), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "consider persistent_workers": the point of the default
            trainer.fit(self.module)
        total = max(1e-9, time.perf_counter() - t)
        self.result = {"steps_per_s": round(meter.steps / total, 3), "epochs": clock.epochs,
                       "val_passes": clock.val_passes, "fetch_share": round(clock.fetch / total, 3),
                       "val_share": round(clock.in_val / total, 3),
                       "train_s": round(total, 1)}

    def close(self) -> None:
        pass


def build(args, device: str) -> LightningJob:
    return LightningJob(args, device)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
