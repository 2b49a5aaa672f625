"""PCIe-bound training: a large pageable batch is copied to the GPU every step for a cheap model.

Each step copies a 16 x 4 x 1024 x 1024 fp32 batch (256 MiB) from ordinary (pageable) host memory
with a blocking ``.to("cuda")``; the model average-pools it to 64 x 64 and applies one Linear layer,
which takes the GPU well under a millisecond. On an H200 a pageable copy moves ~6.6 GiB/s (measured,
/work/shared/docs/h200-signatures.md), so a step is ~40 ms of copy: PCIe-bound by construction.
The batches are made in host memory before the marker (a pool of 4, so the copy source changes).
``--pinned`` uses page-locked memory and ``non_blocking=True`` copies instead: still bound by the
link (~56 GiB/s measured), the variant where NVML utilization reads 100 % with idle SMs.
CUDA only. Ground truth: ``h2d``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch

from bench.scenarios._common import Meter, run_main

STAGE = "h2d"
DEVICES = ("cuda",)
BATCH_SHAPE = (16, 4, 1024, 1024)
"""256 MiB of fp32: the size whose pageable and pinned copies were measured on the H200."""
POOL = 4


def add_arguments(p) -> None:
    p.add_argument("--pinned", action="store_true", help="pinned memory + non_blocking copies")


class H2D:
    name = "h2d"

    def __init__(self, device: str, pinned: bool = False) -> None:
        self.device = device
        self.pinned = pinned
        gen = torch.Generator().manual_seed(0)
        self.pool = [torch.rand(BATCH_SHAPE, generator=gen) for _ in range(POOL)]
        if pinned:
            self.pool = [t.pin_memory() for t in self.pool]
        self.labels = torch.randint(0, 10, (BATCH_SHAPE[0],), device=device)
        self.model = torch.nn.Sequential(
            torch.nn.AvgPool2d(16), torch.nn.Flatten(), torch.nn.Linear(4 * 64 * 64, 10)
        ).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.facts = {"batch_mib": self.pool[0].numel() * 4 >> 20, "pinned": pinned}

    def run(self, until: float, meter: Meter) -> None:
        i = 0
        while time.time() < until:
            x = self.pool[i % POOL].to(self.device, non_blocking=self.pinned)
            i += 1
            loss = torch.nn.functional.cross_entropy(self.model(x), self.labels)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            loss.item()  # per-step logging; with pinned copies this is where the wait shows
            meter.step()

    def close(self) -> None:
        self.pool = []


def build(args, device: str) -> H2D:
    return H2D(device, args.pinned)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
