"""A healthy job that saves a large checkpoint every few seconds (``torch.save`` of model + optimizer).

The training is the healthy job (healthy.py: an MLP on inputs already on the device, 2 idle
DataLoader workers); every ``--every`` seconds of training it saves ``{"model": ..., "optimizer":
...}`` with ``torch.save`` to a file on a disk-backed directory (the same file, overwritten, as a
"last.ckpt" callback does), synchronously: training waits for the save. CUDA: 11 x Linear(4096) in
bf16 with AdamW (parameters and both moments: ~1.03 GiB a checkpoint), batch 2048, every 3 s.
CPU: 4 x Linear(1024) fp32 (~48 MiB), batch 256, every 3 s.

Ground truth: decided by the job's own save share (``save_share`` and ``save_s`` in the end
marker; the ``by_share`` rule of bench/scenarios/__init__.py). Where saves take under 20 % of its
time (a fast disk) the job is healthy: ``gpu_bound`` (``cpu_compute`` on the CPU), the saves a
periodic event of its own. Where they take 20 % or more, saving checkpoints is what costs the job
most, so the verdict should name it: ``io`` (H200 run 21: 2.1 s a save, 41 % of the time). The
start marker says ``gpu_bound``; the scorer applies the rule from the end marker.
The file is removed at the end.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader

from bench.scenarios._common import Meter, cpu_threads, cycle, run_main, spare_one_core
from bench.scenarios._files import pick_data_dir
from bench.scenarios.healthy import POOL, _Indexes

STAGE = "gpu_bound"
STAGE_ON = {"cpu": "cpu_compute"}
DEVICES = ("cpu", "cuda")
SHAPES = {"cuda": (4096, 11, 2048, torch.bfloat16), "cpu": (1024, 4, 256, torch.float32)}


def add_arguments(p) -> None:
    p.add_argument("--every", type=float, default=3.0, help="seconds of training between two saves")
    p.add_argument("--data-dir", default=None, help="where the checkpoint is written (a disk, not tmpfs)")


class CheckpointJob:
    name = "checkpoint"

    def __init__(self, args, device: str) -> None:
        self.device = device
        width, layers, self.batch, dtype = SHAPES[device]
        blocks = []
        for _ in range(layers):
            blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        self.model = torch.nn.Sequential(*blocks).to(device, dtype)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.width, self.every = width, args.every
        self.dir = tempfile.mkdtemp(prefix="gpuwatch-ckpt-", dir=pick_data_dir(args.data_dir))
        self.path = os.path.join(self.dir, "last.ckpt")
        gen = torch.Generator(device="cpu").manual_seed(0)
        self.xs = [torch.randn(self.batch, width, generator=gen).to(device, dtype) for _ in range(POOL)]
        self._train_step(self.xs[0])  # the optimizer's moments exist from here on (full-size checkpoints)
        n = sum(p.numel() * p.element_size() for p in self.model.parameters())
        self.facts = {"every_s": args.every, "checkpoint_bytes": 3 * n, "batch": self.batch, "width": width,
                      "layers": layers}
        self.result: dict = {}

    def _train_step(self, x: torch.Tensor) -> torch.Tensor:
        loss = self.model(x).float().pow(2).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss

    def run(self, until: float, meter: Meter) -> None:
        loader = DataLoader(_Indexes(), batch_size=1, num_workers=min(2, spare_one_core()), collate_fn=list)
        it = cycle(loader)
        saving, saves, sizes = 0.0, 0, 0
        t_start = time.perf_counter()
        next_save = t_start + self.every
        with cpu_threads(self.device, spare_one_core() if self.device == "cpu" else 1):
            try:
                while time.time() < until:
                    loss = self._train_step(self.xs[next(it)[0]])
                    if meter.steps % 50 == 0:
                        loss.item()
                    meter.step()
                    if time.perf_counter() >= next_save:
                        t = time.perf_counter()
                        torch.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                                    "steps": meter.steps}, self.path)
                        saving += time.perf_counter() - t
                        saves += 1
                        sizes = os.path.getsize(self.path)
                        next_save = time.perf_counter() + self.every
            finally:
                it.close()
        total = max(1e-9, time.perf_counter() - t_start)
        self.result = {"steps_per_s": round(meter.steps / total, 3), "saves": saves, "file_bytes": sizes,
                       "save_s": round(saving / max(1, saves), 3), "save_share": round(saving / total, 3),
                       "train_s": round(total, 1), "dir": self.dir}

    def close(self) -> None:
        try:
            os.remove(self.path)
        except OSError:
            pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


def build(args, device: str) -> CheckpointJob:
    return CheckpointJob(args, device)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
