"""Decode-bound training: few DataLoader workers decode and augment JPEGs for a cheap model.

Two workers (``--workers``; one on a 2-core host, see _common.spare_one_core) decode 640x480
JPEGs held in memory with pillow, random-resize-crop them to 224 and flip them. A batch of 64
costs a worker about 0.4 s of CPU (measured on the 2-core dev VM: 6.4 ms per image), while the
small CNN takes ~14 ms per batch on one CPU thread and far less on a GPU. So the main process
waits for batches while every worker runs flat out: decode-bound by construction, on the CPU and
on CUDA alike. No disk is read (the JPEGs are in memory). Ground truth: ``decode``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader

from bench.scenarios._common import Meter, cpu_threads, cycle, run_main, spare_one_core
from bench.scenarios._images import JpegDataset, make_jpegs, small_cnn

STAGE = "decode"
DEVICES = ("cpu", "cuda")
IMAGES = 32
"""Distinct JPEGs generated at start (~170 kB each); items cycle through them."""


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="DataLoader workers decoding (default: 2, at most all CPUs but one)")
    p.add_argument("--batch", type=int, default=64)


class Decode:
    name = "decode"

    def __init__(self, device: str, workers: int | None = None, batch: int = 64,
                 jpegs: list[bytes] | None = None) -> None:
        self.device = device
        self.workers = max(1, workers if workers is not None else min(2, spare_one_core()))
        self.batch = batch
        self.dataset = JpegDataset(jpegs if jpegs is not None else make_jpegs(IMAGES))
        self.model = small_cnn().to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.facts = {"workers": self.workers, "batch": batch, "images": len(self.dataset.jpegs)}

    def run(self, until: float, meter: Meter) -> None:
        loader = DataLoader(
            self.dataset, batch_size=self.batch, num_workers=self.workers,
            pin_memory=self.device == "cuda", persistent_workers=False,
        )
        it = cycle(loader)
        with cpu_threads(self.device):
            try:
                while time.time() < until:
                    x, y = next(it)
                    x = x.to(self.device, non_blocking=True)
                    y = y.to(self.device, non_blocking=True)
                    loss = torch.nn.functional.cross_entropy(self.model(x), y)
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt.step()
                    loss.item()  # per-step logging: cheap next to the wait for data
                    meter.step()
            finally:
                it.close()

    def close(self) -> None:
        pass


def build(args, device: str) -> Decode:
    return Decode(device, args.workers, args.batch)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
