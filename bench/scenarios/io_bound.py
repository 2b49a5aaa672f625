"""Disk-bound training: DataLoader workers read many files cold from a real disk for a tiny model.

At start the scenario writes ``--files`` files of ``--file-mib`` MiB (default 256 x 1 MiB) into a
private directory on a disk-backed file system (never tmpfs: it refuses and says so), fsyncs them
and drops them from the page cache. Each item is one file read cold (page cache dropped with
``posix_fadvise(DONTNEED)`` right before the read, or ``--read-mode direct`` for O_DIRECT), of which
the model sees a strided 4096-value sample; the model is one Linear layer. So the workers spend
their time waiting for the block device and the main process waits for them: disk-bound by
construction. The steps/s lines and the end marker report ``from_disk``: the share of requested bytes
the workers' ``/proc/self/io`` says came from storage (1.0 means every read really was cold).
Ground truth: ``io``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader

from bench.scenarios._common import Meter, cpu_threads, cycle, run_main
from bench.scenarios._files import FEATURES, ColdFiles, DataDir

STAGE = "io"
DEVICES = ("cpu", "cuda")


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=16, help="files per batch")
    p.add_argument("--files", type=int, default=256)
    p.add_argument("--file-mib", type=float, default=1.0)
    p.add_argument("--read-mode", choices=("fadvise", "direct"), default="fadvise")
    p.add_argument("--data-dir", default=None, help="where to write the files (default: a disk-backed temp dir)")


class DiskIO:
    name = "io"

    def __init__(self, device: str, workers: int = 2, batch: int = 16, files: int = 256,
                 file_mib: float = 1.0, read_mode: str = "fadvise", data_dir: str | None = None) -> None:
        self.device = device
        self.workers = max(1, workers)
        self.batch = batch
        self.data = DataDir(data_dir, files, int(file_mib * (1 << 20)))
        self.dataset = ColdFiles(self.data.paths, direct=read_mode == "direct")
        self.model = torch.nn.Linear(FEATURES, 10).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.asked = 0
        self.result: dict[str, object] = {}
        self.from_disk = 0
        self.facts = {"workers": self.workers, "batch": batch, "files": files, "file_mib": file_mib,
                      "read_mode": read_mode, "fs": self.data.fs}

    def disk_share(self) -> float | None:
        return round(self.from_disk / self.asked, 3) if self.asked and self.from_disk >= 0 else None

    def run(self, until: float, meter: Meter) -> None:
        loader = DataLoader(self.dataset, batch_size=self.batch, num_workers=self.workers,
                            pin_memory=self.device == "cuda")
        it = cycle(loader)
        with cpu_threads(self.device):
            last_report = time.monotonic()
            try:
                while time.time() < until:
                    x, y, asked, from_disk = next(it)
                    self.asked += int(asked.sum())
                    self.from_disk += int(from_disk.clamp(min=0).sum())
                    x = x.to(self.device, non_blocking=True) / 255.0
                    loss = torch.nn.functional.cross_entropy(self.model(x), y.to(self.device, non_blocking=True))
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt.step()
                    meter.step()
                    if time.monotonic() - last_report >= meter.every:
                        last_report = time.monotonic()
                        print(f"[io] from_disk={self.disk_share()} of {self.asked >> 20} MiB read",
                              file=sys.stderr, flush=True)
            finally:
                it.close()
        self.result = {"from_disk": self.disk_share(), "mib_read": self.asked >> 20}

    def close(self) -> None:
        self.data.close()


def build(args, device: str) -> DiskIO:
    return DiskIO(device, args.workers, args.batch, args.files, args.file_mib, args.read_mode, args.data_dir)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
