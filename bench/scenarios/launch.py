"""Launch-bound training: a deep, tiny model, so every step is hundreds of microsecond-sized kernels.

40 blocks of Linear(32, 32) + LayerNorm + GELU on a batch of 16, Adam with the per-parameter
(``foreach=False``) loop, and ``loss.item()`` every step. Each kernel touches a few kB and finishes
in microseconds, far less than the ~5-20 us the CPU needs to launch it (HTA's "short GPU kernels"
rule, signals.md section 11), so the GPU idles between kernels while the Python thread dispatches:
launch-bound by construction. h200-signatures.md measured this shape (200 tiny kernels per step):
NVML busy ~26 %, SM active ~0 %. Data is pre-generated on the GPU. CUDA only. Ground truth: ``launch``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch

from bench.scenarios._common import Meter, run_main

STAGE = "launch"
DEVICES = ("cuda",)
WIDTH = 32
DEPTH = 40
BATCH = 16


def tiny_deep_model(width: int = WIDTH, depth: int = DEPTH) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.LayerNorm(width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers)


class Launch:
    name = "launch"

    def __init__(self, device: str) -> None:
        self.device = device
        self.model = tiny_deep_model().to(device)
        # foreach=False: one small kernel per parameter and op, as older or custom optimizers do
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, foreach=False)
        gen = torch.Generator(device=device).manual_seed(0)
        self.x = torch.randn(BATCH, WIDTH, device=device, generator=gen)
        self.y = torch.randn(BATCH, WIDTH, device=device, generator=gen)
        params = sum(1 for _ in self.model.parameters())
        self.facts = {"depth": DEPTH, "width": WIDTH, "batch": BATCH, "param_tensors": params}

    def run(self, until: float, meter: Meter) -> None:
        while time.time() < until:
            loss = torch.nn.functional.mse_loss(self.model(self.x), self.y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            loss.item()  # a sync every step, as a per-step logging loop does
            meter.step()

    def close(self) -> None:
        pass


def build(args, device: str) -> Launch:
    return Launch(device)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
