"""A real, CPU-only PyTorch training job with DataLoader workers, for the collector tests.

Trains a tiny MLP on a synthetic dataset whose ``__getitem__`` can be made slow on purpose:

- ``--slow cpu``: burn ``--item-ms`` of CPU per item (a decode-bound loader);
- ``--slow read``: read one file per item from ``--data-dir`` (a temporary folder of fsync'ed
  files when not given), after dropping it from the page cache with ``posix_fadvise(DONTNEED)``
  so that the read reaches the block device and shows in ``/proc/PID/io`` ``read_bytes``, then
  sleep ``--item-ms`` (to pace the reads). Files stay open once read, as with HDF5 or tar shards;
- ``--slow sleep``: sleep ``--item-ms`` per item (a latency-bound loader, e.g. remote fetches;
  almost no CPU, for tests that only need the process tree);
- ``--slow none``: items are free (the training step dominates).

``--val-batches N`` adds a validation pass after each epoch (``validate``, under ``torch.no_grad``
with the model in eval mode, on its own loader of N batches with the same workers settings), and
``--checkpoint-every S`` saves the model plus ``--checkpoint-mb`` of padding with ``torch.save``
every S seconds (to a temporary file), as real training scripts do.

``--busy-workers K`` makes only workers ``0..K-1`` slow, so one job has both busy and idle workers.
The job writes ``--ready-file`` once the first batch has arrived (the workers exist by then), runs
for ``--duration`` seconds (a safety net: it always ends on its own) and exits 0.

Run by tests/conftest.py (``cpu_job`` fixtures); also handy by hand::

    python tests/jobs/cpu_train.py --workers 2 --slow cpu --busy-workers 1 --duration 30
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


def burn(ms: float) -> None:
    """Spin the CPU for ``ms`` milliseconds of wall time (pure Python: holds one core)."""
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        for i in range(200):
            x += i * i


def read_uncached(fd: int) -> int:
    """Read a whole open file, first evicting it from the page cache so the bytes come from the device."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    n = 0
    while True:
        chunk = os.pread(fd, 1 << 20, n)
        if not chunk:
            return n
        n += len(chunk)


class SlowDataset(Dataset):
    def __init__(self, length: int, slow: str, item_ms: float, busy_workers: int, files: list[str]):
        self.length = length
        self.slow = slow
        self.item_ms = item_ms
        self.busy_workers = busy_workers
        self.files = files
        self.fds: dict[int, int] = {}
        """Files stay open once read, per worker, as with HDF5, LMDB or tar shards."""

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        info = get_worker_info()
        wid = info.id if info is not None else 0
        if self.busy_workers < 0 or wid < self.busy_workers:
            if self.slow == "cpu":
                burn(self.item_ms)
            elif self.slow == "sleep":
                time.sleep(self.item_ms / 1000.0)
            elif self.slow == "read":
                k = i % len(self.files)
                if k not in self.fds:
                    self.fds[k] = os.open(self.files[k], os.O_RDONLY)
                read_uncached(self.fds[k])
                time.sleep(self.item_ms / 1000.0)  # paces the reads: a few MB/s, not the whole disk
        g = torch.Generator().manual_seed(i)
        x = torch.randn(32, generator=g)
        return x, (x.sum() > 0).long()


def make_files(folder: str, count: int, kb: int) -> list[str]:
    paths = []
    block = os.urandom(kb * 1024)
    for i in range(count):
        p = os.path.join(folder, f"item_{i:04d}.bin")
        if not os.path.exists(p) or os.path.getsize(p) != len(block):
            with open(p, "wb") as f:
                f.write(block)
                f.flush()
                os.fsync(f.fileno())  # DONTNEED only drops clean pages
        paths.append(p)
    return paths


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="DataLoader num_workers")
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--slow", choices=("none", "cpu", "sleep", "read"), default="cpu")
    ap.add_argument("--item-ms", type=float, default=20.0,
                    help="per item: CPU burned (cpu), sleep (sleep) or pause after the read (read)")
    ap.add_argument("--busy-workers", type=int, default=-1, help="only workers below this id are slow; -1: all")
    ap.add_argument("--start-method", choices=("fork", "spawn", "forkserver"), default="fork")
    ap.add_argument("--persistent-workers", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--batches-per-epoch", type=int, default=50)
    ap.add_argument("--data-dir", default=None, help="folder for --slow read (default: a temporary one)")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--file-kb", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads of the main process")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds before the job ends on its own")
    ap.add_argument("--ready-file", default=None)
    ap.add_argument("--val-batches", type=int, default=0, help="validation batches after each epoch (0: none)")
    ap.add_argument("--checkpoint-every", type=float, default=0.0, help="seconds between torch.save calls (0: none)")
    ap.add_argument("--checkpoint-mb", type=int, default=64, help="padding saved with each checkpoint")
    return ap.parse_args(argv)


@torch.no_grad()
def validate(model: nn.Module, loader: DataLoader) -> float:
    """One pass over the validation loader in eval mode (what the main thread runs between epochs)."""
    model.eval()
    total = 0.0
    for x, y in loader:
        total += float(nn.functional.cross_entropy(model(x), y))
    model.train()
    return total


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    torch.set_num_threads(a.threads)
    own_dir = None
    ckpt = os.path.join(tempfile.gettempdir(), f"cpu_train_{os.getpid()}.pt")
    files: list[str] = []
    if a.slow == "read":
        folder = a.data_dir or tempfile.mkdtemp(prefix="cpu_train_data_")
        os.makedirs(folder, exist_ok=True)
        own_dir = None if a.data_dir else folder
        files = make_files(folder, a.files, a.file_kb)
    try:
        ds = SlowDataset(a.batches_per_epoch * a.batch_size, a.slow, a.item_ms, a.busy_workers, files)
        kw = {}
        if a.workers > 0:
            kw = {"multiprocessing_context": a.start_method, "persistent_workers": a.persistent_workers}
        loader = DataLoader(ds, batch_size=a.batch_size, num_workers=a.workers, pin_memory=a.pin_memory, **kw)
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        val_loader = None
        if a.val_batches > 0:
            val_ds = SlowDataset(a.val_batches * a.batch_size, a.slow, a.item_ms, a.busy_workers, files)
            val_loader = DataLoader(val_ds, batch_size=a.batch_size, num_workers=a.workers, **kw)
        padding = torch.zeros(a.checkpoint_mb * (1 << 18)) if a.checkpoint_every > 0 else None
        end = time.monotonic() + a.duration
        next_save = time.monotonic() + a.checkpoint_every
        ready = False
        epoch = 0
        while time.monotonic() < end:
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if padding is not None and time.monotonic() >= next_save:
                    torch.save({"model": model.state_dict(), "padding": padding}, ckpt)
                    next_save = time.monotonic() + a.checkpoint_every
                if not ready and a.ready_file:
                    with open(a.ready_file + ".tmp", "w") as f:
                        f.write(f"{os.getpid()}\n")
                    os.replace(a.ready_file + ".tmp", a.ready_file)
                    ready = True
                if time.monotonic() >= end:
                    break
            epoch += 1
            if val_loader is not None and time.monotonic() < end:
                validate(model, val_loader)
        print(f"cpu_train: {epoch} epochs", file=sys.stderr)
        return 0
    finally:
        if own_dir:
            shutil.rmtree(own_dir, ignore_errors=True)
        if a.checkpoint_every > 0 and os.path.exists(ckpt):
            os.unlink(ckpt)


if __name__ == "__main__":
    sys.exit(main())
