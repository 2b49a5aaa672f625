"""A DistributedDataParallel training job on CUDA, one process per rank, each with DataLoader workers.

Launch it with torchrun: ``python -m torch.distributed.run --nproc_per_node 2 bench/ddp_gpu.py``.
Each rank uses GPU ``LOCAL_RANK % device_count`` (so on one GPU both ranks share it; there the
backend must be gloo, which reduces CUDA tensors too, since NCCL refuses two ranks on one device).
``--slow-rank R`` makes rank R's input pipeline slow (each item sleeps ``--delay`` s in the
worker), so the other ranks wait for it in DDP's gradient all-reduce: the straggler case.
Prints ``{"t": ..., "rank": r, "steps": n}`` lines on stdout every 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __init__(self, delay: float, dim: int) -> None:
        self.delay, self.dim = delay, dim

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int):
        if self.delay:
            time.sleep(self.delay)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), torch.randn(self.dim, generator=g)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default=None, help="nccl or gloo (default: nccl if each rank has its own GPU)")
    p.add_argument("--slow-rank", type=int, default=None)
    p.add_argument("--delay", type=float, default=0.02)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dim", type=int, default=2048)
    p.add_argument("--seconds", type=float, default=60.0)
    a = p.parse_args()
    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    ngpu = torch.cuda.device_count()
    device = torch.device("cuda", local % ngpu)
    torch.cuda.set_device(device)
    backend = a.backend or ("nccl" if ngpu >= world else "gloo")
    dist.init_process_group(backend)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(a.dim, a.dim), nn.GELU()) for _ in range(6)]).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    delay = a.delay if rank == a.slow_rank else 0.0
    loader = DataLoader(Items(delay, a.dim), batch_size=a.batch, num_workers=a.workers, pin_memory=True,
                        persistent_workers=True, prefetch_factor=2)
    print(json.dumps({"t": time.time(), "rank": rank, "backend": backend, "device": str(device),
                      "slow": rank == a.slow_rank}), flush=True)
    start = last = time.time()
    steps = 0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        now = time.time()
        if now - last >= 5:
            print(json.dumps({"t": now, "rank": rank, "steps": steps}), flush=True)
            last = now
        if now - start >= a.seconds:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
