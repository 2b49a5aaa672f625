"""Small real training-shaped Python programs for py-spy to look at (tests and fixture capture).

Run as ``python tests/jobs/stack_targets.py SCENARIO [--seconds N]``. Once its loop is running the
program prints one line ``READY <json>`` with its pid, its DataLoader worker pids and the scenario,
then keeps going until killed or until ``--seconds`` have passed (so a forgotten one never lingers).

Scenarios (what the stacks should show):
- ``data_wait``: workers sleep in ``__getitem__`` (slow storage stand-in), the main loop does nothing:
  the main thread waits in ``_MultiProcessingDataLoaderIter._get_data``.
- ``jpeg``: workers decode, convert and resize JPEGs with PIL (CPU-bound), the main loop does nothing.
- ``slow_read``: workers read a file in small chunks with a ``time.sleep`` between chunks.
- ``inline``: ``num_workers=0``; the main thread decodes the JPEGs itself.
- ``train``: a small model trained with Adam on JPEG-decoding workers (forward, backward, step);
  ``--device cuda --pin`` makes it the CUDA job of the H200 capture (pin-memory thread, ``.item()``).
- ``gpu_bound`` (CUDA only): bf16 matmuls with an ``.item()`` per step, workers idle.

Images are made here with pillow (noise, so decoding costs real CPU) in a temp folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


def make_jpegs(folder: str, n: int = 16, size: int = 384) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        arr = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
        p = os.path.join(folder, f"img{i:03d}.jpg")
        Image.fromarray(arr).save(p, quality=90)
        paths.append(p)
    return paths


class JpegDataset(Dataset):
    """Decode + convert + resize with PIL: the classic CPU-bound worker."""

    def __init__(self, paths: list[str], out: int = 160) -> None:
        self.paths = paths
        self.out = out

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        img = Image.open(self.paths[i % len(self.paths)])
        img = img.convert("RGB").resize((self.out, self.out), Image.BILINEAR)
        return torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)


class SleepyDataset(Dataset):
    """Each item takes ``delay`` seconds of waiting: the main process starves for data."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.delay)
        return torch.zeros(8)


def read_slowly(path: str, chunk: int = 4096, pause: float = 0.02) -> bytes:
    """A file read loop that sleeps between chunks: a stand-in for slow network storage."""
    parts = []
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            parts.append(b)
            time.sleep(pause)
    return b"".join(parts)


class SlowReadDataset(Dataset):
    def __init__(self, path: str) -> None:
        self.path = path

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        data = read_slowly(self.path)
        return torch.tensor([len(data)])


def _ready(scenario: str, loader_iter: object | None) -> None:
    workers = [w.pid for w in getattr(loader_iter, "_workers", [])]
    print("READY " + json.dumps({"scenario": scenario, "pid": os.getpid(), "workers": workers}), flush=True)


def _loader(ds: Dataset, workers: int, batch: int = 4, pin: bool = False) -> DataLoader:
    kw = {"persistent_workers": True} if workers else {}
    return DataLoader(ds, batch_size=batch, num_workers=workers, pin_memory=pin, **kw)


def consume(loader: DataLoader, scenario: str, deadline: float, step=None) -> None:
    """Iterate the loader until the deadline; print READY after the first batch."""
    it = iter(loader)
    next(it)
    _ready(scenario, it)
    while time.monotonic() < deadline:
        batch = next(it)
        if step is not None:
            step(batch)


def run(scenario: str, seconds: float, workers: int, device: str = "cpu", pin: bool = False) -> None:
    deadline = time.monotonic() + seconds
    tmp = os.environ.get(TMP_ENV) or tempfile.mkdtemp(prefix="gw-stack-target-")
    torch.set_num_threads(1)
    if scenario == "data_wait":
        consume(_loader(SleepyDataset(0.25), workers), scenario, deadline)
    elif scenario == "jpeg":
        consume(_loader(JpegDataset(make_jpegs(tmp)), workers), scenario, deadline)
    elif scenario == "slow_read":
        path = os.path.join(tmp, "blob.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(16 * 4096))
        consume(_loader(SlowReadDataset(path), workers), scenario, deadline)
    elif scenario == "inline":
        consume(_loader(JpegDataset(make_jpegs(tmp)), 0), scenario, deadline)
    elif scenario == "train":
        train(tmp, deadline, workers, device, pin)
    elif scenario == "gpu_bound":
        gpu_bound(tmp, deadline, workers)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


def train(tmp: str, deadline: float, workers: int, device: str, pin: bool) -> None:
    dev = torch.device(device)
    model = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(batch: torch.Tensor) -> None:
        x = torch.nn.functional.interpolate(batch.to(dev, non_blocking=pin).float(), size=(64, 64))
        loss = model(x).logsumexp(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()  # the usual per-step sync (logging the loss)

    # On a GPU the step takes ~1 ms, so bigger images keep the job clearly input-bound there.
    size = 128 if dev.type == "cpu" else 384
    loader = _loader(JpegDataset(make_jpegs(tmp, size=size), out=96), workers, batch=16, pin=pin)
    consume(loader, "train", deadline, step)


def gpu_bound(tmp: str, deadline: float, workers: int) -> None:
    dev = torch.device("cuda")
    w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) / 90.5  # ~1/sqrt(8192): no overflow

    def step(batch: torch.Tensor) -> None:
        x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        for _ in range(20):
            x = x @ w
        float(x[0, 0].item())

    consume(_loader(SleepyDataset(0.001), workers), "gpu_bound", deadline, step)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--pin", action="store_true", help="pin_memory=True (needs CUDA)")
    p.add_argument("--tmp", help="folder for the job's files (default: a new one under the system's temp folder)")
    a = p.parse_args(argv)
    # The folder reaches run() through the environment, not an argument: run() and the lines below it
    # keep their line numbers, which the real H200 stack recordings of these jobs name
    # (tests/test_h200_recording.py: stack_targets.py:175). A test kills the job, so it gives a
    # folder it removes itself.
    if a.tmp:
        os.environ[TMP_ENV] = a.tmp
    # Exit by itself if the parent test dies without killing us.
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    if a.scenario == "validation":  # dispatched here, below the recorded lines (see validation())
        validation(time.monotonic() + a.seconds, a.workers)
        return
    run(a.scenario, a.seconds, a.workers, a.device, a.pin)


TMP_ENV = "GW_STACK_TARGET_TMP"
"""The folder for the job's files (its JPEGs, its blob), from --tmp."""


def _watch_parent(ppid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != ppid:
            os._exit(3)


# The ``validation`` scenario is written down here, after the lines the H200 recordings name, so
# they keep their numbers: the ``data_wait`` loader read by an evaluation loop through four wrapping
# iterators, as Lightning's fetchers and combined loader wrap a loader. The main thread waits for
# the validation loader's batch with the loop's own frame beyond the dozen frames a sample keeps.
def _wrapped(it):
    yield from it


def evaluate(loader: DataLoader, deadline: float) -> None:
    it = iter(loader)
    batches = _wrapped(_wrapped(_wrapped(_wrapped(it))))
    next(batches)
    _ready("validation", it)
    with torch.no_grad():
        while time.monotonic() < deadline:
            next(batches)


def validation(deadline: float, workers: int) -> None:
    torch.set_num_threads(1)
    evaluate(_loader(SleepyDataset(0.25), workers), deadline)


if __name__ == "__main__":
    sys.exit(main())

