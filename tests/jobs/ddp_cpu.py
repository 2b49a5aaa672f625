"""A small CPU-only DistributedDataParallel job (gloo backend) with DataLoader workers on every rank.

Two ways to start it, both with two ranks:

- ``python tests/jobs/ddp_cpu.py``: ``torch.multiprocessing.spawn`` starts the ranks. As in most
  spawn scripts, the rank is an argument of the rank function, so the ranks' environments hold
  ``MASTER_ADDR``/``MASTER_PORT`` but no ``RANK``/``LOCAL_RANK``.
- ``python -m torch.distributed.run --standalone --nproc_per_node 2 tests/jobs/ddp_cpu.py``: torchrun
  starts the ranks with ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` in their environments.

``--slow-rank R`` makes rank R's dataset sleep ``--delay`` seconds per item (a slow input pipeline
stand-in): rank R then waits for data while the other rank waits for it in DDP's collectives.
The model has a BatchNorm layer, so DDP broadcasts its buffers at the start of every forward
(``_sync_buffers``) as well as all-reducing gradients in backward; ``--no-buffers`` swaps it for a
LayerNorm, leaving only the gradient all-reduce (the fast rank then waits inside ``backward``).

Every rank prints one line ``READY <json>`` (rank, pid, DataLoader worker pids, world size, mode)
once its first step is done. The ranks agree every few steps whether ``--seconds`` have passed and
then stop together, so a forgotten job never lingers; a rank whose parent dies exits too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

WORLD_SIZE = 2
"""Ranks by default (``--ranks`` sets another number; under torchrun its WORLD_SIZE)."""
STOP_CHECK_EVERY = 20
"""Steps between the ranks' all-reduce of the stop flag."""


class Items(Dataset):
    """Random feature vectors; ``delay`` seconds of sleep per item when this rank is the slow one."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.delay:
            time.sleep(self.delay)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), torch.randn(1, generator=g)


def _model(buffers: bool) -> torch.nn.Module:
    norm = torch.nn.BatchNorm1d(64) if buffers else torch.nn.LayerNorm(64)  # LayerNorm has no buffers
    return torch.nn.Sequential(torch.nn.Linear(32, 64), norm, torch.nn.ReLU(), torch.nn.Linear(64, 1))


def train(rank: int, opts: argparse.Namespace, mode: str) -> None:
    """The body of one rank: DDP over gloo, its own DataLoader workers, until told to stop."""
    torch.set_num_threads(1)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    world = int(os.environ.get("WORLD_SIZE", opts.ranks))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        model = DistributedDataParallel(_model(not opts.no_buffers))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        delay = opts.delay if rank == opts.slow_rank else 0.0
        # fork: workers start as copies of the rank; the default here is spawn (the ranks are spawned),
        # where each worker imports torch afresh
        context = "fork" if opts.fork_workers and opts.workers > 0 else None
        loader = DataLoader(Items(delay), batch_size=opts.batch, num_workers=opts.workers,
                            persistent_workers=opts.workers > 0, multiprocessing_context=context)
        deadline = time.monotonic() + opts.seconds
        it = iter(loader)
        step = 0
        while True:
            x, y = next(it)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if opts.step_sleep:
                time.sleep(opts.step_sleep)  # stands for the step's GPU time (a GPU-bound rank waits)
            step += 1
            if step == 1:
                workers = [w.pid for w in getattr(it, "_workers", [])]
                info = {"rank": rank, "pid": os.getpid(), "workers": workers, "world_size": world, "mode": mode}
                # One write(2) per line: both ranks share stdout, and print() may split a line in two
                # writes that interleave with the other rank's (seen: two READY lines run together).
                os.write(sys.stdout.fileno(), ("READY " + json.dumps(info) + "\n").encode())
            if step % STOP_CHECK_EVERY == 0 and _all_agree_to_stop(time.monotonic() >= deadline):
                return
    finally:
        dist.destroy_process_group()


def _all_agree_to_stop(mine: bool) -> bool:
    flag = torch.tensor([1.0 if mine else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def _spawned(rank: int, opts: argparse.Namespace) -> None:
    train(rank, opts, "spawn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _watch_parent(ppid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != ppid:
            os._exit(3)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--slow-rank", type=int, default=None, help="this rank's input pipeline is slow")
    p.add_argument("--delay", type=float, default=0.05, help="seconds of sleep per item on the slow rank")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers per rank")
    p.add_argument("--ranks", type=int, default=WORLD_SIZE, help="ranks when started without torchrun")
    p.add_argument("--fork-workers", action="store_true",
                   help="start DataLoader workers with fork (cheap with many workers) instead of the default")
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds each step sleeps after its update: the GPU time of a GPU-bound job, spent "
                        "waiting (keeps many ranks on a small CPU machine light)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    p.add_argument("--no-buffers", action="store_true",
                   help="no BatchNorm: DDP then syncs only in backward (gradient all-reduce), not in forward")
    opts = p.parse_args(argv)
    if "RANK" in os.environ:  # started by torchrun: this process is one rank
        train(int(os.environ["RANK"]), opts, "torchrun")
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    mp.spawn(_spawned, args=(opts,), nprocs=opts.ranks, join=True)


if __name__ == "__main__":
    sys.exit(main())
