"""Contention: a job that would keep up on its own, slowed by something outside its pipeline.

``--hog gpu`` (the default on CUDA): the healthy bf16 MLP job (healthy.py) shares its GPU with a
separate process running bf16 8192^2 matmuls back to back.
``--hog cpu`` (the default on the CPU): a job whose DataLoader workers decode small JPEGs for an
MLP that takes far longer per batch than the decoding (alone on the dev VM, measured: ~9 steps/s,
main 0.74 core, the two workers 0.24 core together: compute-bound, ~1 of 2 cores), while one
busy-loop process per CPU core (``--hogs``) competes for every core, so the job's threads wait in
the run queue.
``--hog quota``: the same job, alone, inside a cgroup with a CPU quota of ``--quota-cores`` (0.5 by
default); needs write access to the cgroup file system and says why when it has none.
The hogs are not in the job's process tree (see _hog.py) and die with it. Ground truth: ``contention``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader

from bench.scenarios import _hog
from bench.scenarios._cgroup import enter_cpu_quota
from bench.scenarios._common import DEFAULT_DURATION_S, Meter, cpu_threads, cycle, run_main
from bench.scenarios._images import JpegDataset, make_jpegs
from bench.scenarios.healthy import Healthy

STAGE = "contention"
DEVICES = ("cpu", "cuda")
SMALL = (160, 120)
"""Thumbnail JPEGs: ~0.33 ms to decode and crop each on the dev VM (measured), next to ~1.3 ms of
model compute per image (measured), so two workers keep up with ease when the job is alone."""
CROP = 64


def add_arguments(p) -> None:
    p.add_argument("--hog", choices=("auto", "gpu", "cpu", "quota"), default="auto")
    p.add_argument("--hogs", type=int, default=0, help="hog processes (default: 1 GPU hog, or 1 per CPU core)")
    p.add_argument("--quota-cores", type=float, default=0.5)
    p.add_argument("--workers", type=int, default=2)


class LightDecodeMlp:
    """Workers decode thumbnails; the main thread trains an MLP that dominates the step time."""

    name = "light_decode"

    def __init__(self, device: str, workers: int = 2, batch: int = 64) -> None:
        self.device = device
        self.workers = max(1, workers)
        self.batch = batch
        self.dataset = JpegDataset(make_jpegs(64, size=SMALL), crop=CROP)
        width = 1024
        self.model = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(3 * CROP * CROP, width), torch.nn.ReLU(),
            torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
            torch.nn.Linear(width, 10),
        ).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)

    def run(self, until: float, meter: Meter) -> None:
        loader = DataLoader(self.dataset, batch_size=self.batch, num_workers=self.workers)
        it = cycle(loader)
        with cpu_threads(self.device):
            try:
                while time.time() < until:
                    x, y = next(it)
                    loss = torch.nn.functional.cross_entropy(self.model(x.to(self.device)), y.to(self.device))
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt.step()
                    loss.item()
                    meter.step()
            finally:
                it.close()

    def close(self) -> None:
        pass


class Contention:
    name = "contention"

    def __init__(self, device: str, hog: str, hogs: int, quota_cores: float, workers: int, seconds: float) -> None:
        if hog == "auto":
            hog = "gpu" if device == "cuda" else "cpu"
        if hog == "gpu" and device != "cuda":
            raise SystemExit("scenario: error: --hog gpu needs --device cuda")
        if hog != "gpu" and device == "cuda":
            raise SystemExit("scenario: error: --hog cpu/quota runs on --device cpu (a CUDA job barely needs the CPU)")
        self.device, self.hog, self.seconds = device, hog, seconds
        self.job = Healthy(device) if hog == "gpu" else LightDecodeMlp(device, workers)
        self.count = hogs or (1 if hog == "gpu" else os.cpu_count() or 1)
        self.pids: list[int] = []
        self.quota = None
        self.facts = {"hog": hog, "job": self.job.name}
        self.facts.update({"quota_cores": quota_cores} if hog == "quota" else {"hogs": self.count})
        # Started here, before the start marker, so the marker is printed once the contention is
        # real (the launcher returns when every hog has done its first round of work).
        if hog == "quota":
            q = enter_cpu_quota(quota_cores)
            if isinstance(q, str):
                raise SystemExit(f"scenario: error: {q}")
            self.quota = q
        else:
            # a safety net on top of the hogs' owner check: none outlives the planned run by much
            self.pids = _hog.spawn_hogs(hog, self.count, seconds + 120, device=device)
            self.facts["hog_pids"] = list(self.pids)

    def run(self, until: float, meter: Meter) -> None:
        self.job.run(until, meter)

    def _release(self) -> None:
        _hog.stop_hogs(self.pids)
        self.pids = []
        if self.quota is not None:
            self.quota.leave()
            self.quota = None

    def close(self) -> None:
        self._release()
        self.job.close()


def build(args, device: str) -> Contention:
    seconds = DEFAULT_DURATION_S if args.duration is None else args.duration
    return Contention(device, args.hog, args.hogs, args.quota_cores, args.workers, seconds)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
