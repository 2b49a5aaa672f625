"""A regression MLP whose training loop sleeps: user code, not the input pipeline.

The engineer throttles the job so a shared box stays responsive (``time.sleep`` after every step,
as in "be nice to the other users"). Batches come from an in-memory TensorDataset through two
DataLoader workers that are always ahead; the model step is short. Most of the main thread's
time is the sleep itself: nothing in the data pipeline, disk or CPU holds the job back.

    python bench/field_cpu/sleepy_loop.py --duration 90 --nap 0.2

Prints a ready line on stdout, then on exit its own time split (batch wait, step, sleep).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    ap.add_argument("--nap", type=float, default=0.2, help="seconds slept after each step")
    a = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20_000, 256, generator=g)
    y = x[:, :8].sum(1, keepdim=True) + 0.1 * torch.randn(20_000, 1, generator=g)
    dl = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True, num_workers=2,
                    persistent_workers=True)
    net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
    t0 = time.perf_counter()
    wait = step = nap = 0.0
    steps = 0
    while time.perf_counter() - t0 < a.duration:
        it = iter(dl)
        while True:
            ta = time.perf_counter()
            try:
                xb, yb = next(it)
            except StopIteration:
                break
            tb = time.perf_counter()
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(xb), yb)
            loss.backward()
            opt.step()
            tc = time.perf_counter()
            time.sleep(a.nap)
            td = time.perf_counter()
            wait, step, nap, steps = wait + tb - ta, step + tc - tb, nap + td - tc, steps + 1
            if td - t0 >= a.duration:
                break
    total = time.perf_counter() - t0
    print(json.dumps({"t": time.time(), "event": "end", "steps": steps, "steps_per_s": steps / total,
                      "wait_share": wait / total, "step_share": step / total, "sleep_share": nap / total}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
