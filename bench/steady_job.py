"""A steady training job for the overhead benchmarks: same work every step, runs until killed.

CUDA: 8 x Linear(4096) + ReLU in bf16, batch 2048, AdamW, ``loss.item()`` every step: the job of
/work/shared/docs/h200-signatures.md "What observing costs" (~3.1 ms per step on an H200, about
1700 steps in 6 s). CPU: fp32 4 x Linear(256), batch 64: small, so that even a short phase on a
busy 2-core machine holds a few hundred steps and the count is fine-grained (the CPU run is a smoke
test of the tools, not a measurement).

DataLoader workers (``--workers``) hand out batch indexes only, so they exist (gpuwatch walks them,
py-spy dumps them) but stay idle, as in a well-fed job; the inputs are pre-generated on the device.
After every step the cumulative step count is stored in the ``--counter`` file (bench/observe.py).

    python -m bench.steady_job --device cuda --workers 4 --counter /tmp/steps
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch
from torch.utils.data import DataLoader, Dataset

from bench.observe import StepCounter

POOL = 8
"""Distinct input batches kept on the device (inputs differ between steps, memory stays small)."""


class _Indexes(Dataset):
    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> int:
        return i % POOL


def shape(device: str) -> tuple[int, int, int, torch.dtype]:
    """(width, depth, batch, dtype)."""
    if device == "cuda":
        return 4096, 8, 2048, torch.bfloat16
    return 256, 4, 64, torch.float32


def build(device: str) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    width, depth, batch, dtype = shape(device)
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(POOL, batch, width, device=device, dtype=dtype, generator=gen)
    y = torch.randn(POOL, batch, width, device=device, dtype=dtype, generator=gen)
    return model, opt, x, y


def run(device: str, workers: int, counter: StepCounter, max_steps: int = 0) -> int:
    """Train until killed (or ``max_steps`` steps, when > 0); returns the steps done."""
    if device == "cpu":
        # one intra-op thread: OpenMP threads wait for each other at every op, so on a small shared
        # machine one descheduled thread stalls the step and the rate swings 100x between seconds
        torch.set_num_threads(1)
    model, opt, x, y = build(device)
    # collate to a plain list: an index crosses the worker pipe as a small pickle
    loader = DataLoader(_Indexes(), batch_size=1, num_workers=workers, collate_fn=list,
                        persistent_workers=workers > 0)
    steps = 0
    while True:
        for (i,) in loader:
            loss = torch.nn.functional.mse_loss(model(x[i]), y[i])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()  # a sync every step, as a loop that logs its loss does
            steps += 1
            counter.set(steps)
            if steps == max_steps:
                return steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="steady training job for bench/overhead.py and bench/self.py")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--workers", type=int, default=8, help="DataLoader workers (idle; default 8)")
    p.add_argument("--counter", required=True, help="file the cumulative step count is stored in")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (default: run until killed)")
    ns = p.parse_args(argv)
    if ns.device == "cuda" and not torch.cuda.is_available():
        print("steady_job: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    print(f"steady_job pid {os.getpid()} device {ns.device} workers {ns.workers} shape {shape(ns.device)}",
          flush=True)
    run(ns.device, ns.workers, StepCounter(ns.counter), ns.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
