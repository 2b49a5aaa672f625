"""Healthy, compute-bound training: an MLP on data that is already where the model is.

CUDA: 8 x Linear(4096) in bf16, batch 2048, AdamW; the same shape as the job measured in
/work/shared/docs/h200-signatures.md ("What observing costs": ~3.1 ms per step on an H200), so the
tensor cores do the work. CPU: fp32 4 x Linear(1024), batch 256, on all CPUs but one (see
_common.spare_one_core): the "cpu compute-bound" variant.

A DataLoader with 2 workers hands out only the batch indexes (a few kB), so the workers exist but
sit idle in ``index_queue.get``, as in a well-fed real job; the inputs themselves are pre-generated
on the device. ``loss.item()`` every 50 steps, as a logging loop would.
Ground truth: ``gpu_bound`` on CUDA; ``cpu_compute`` on the CPU (the model's own compute is the
limit and the input keeps up; there is no GPU, so no GPU stage applies).

``--compile MODE`` wraps the model in ``torch.compile(mode=MODE)``: the first step compiles (Dynamo,
Inductor, Triton or C++ builds, and with ``max-autotune*`` a benchmark of matmul configurations),
and no step runs until it returns. Its truth is then ``idle`` (a marker with ``"compiling": true``)
until the first step is done, synchronised, and the device's truth after it (a second marker).
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader, Dataset

from bench.scenarios._common import Meter, cpu_threads, cycle, marker, run_main, spare_one_core, truth

STAGE = "gpu_bound"
STAGE_ON = {"cpu": "cpu_compute"}
"""Truth per device where it differs from STAGE (see _common.CPU_COMPUTE)."""
DEVICES = ("cpu", "cuda")
POOL = 8
"""Distinct input batches kept on the device (inputs differ between steps, memory stays small)."""
LOG_EVERY = 50
"""Steps between two ``loss.item()`` calls (a logging loop's sync)."""


class _Indexes(Dataset):
    """Batch indexes only: the workers have next to nothing to do."""

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> int:
        return i % POOL


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (they stay idle)")
    p.add_argument("--compile", default=None, metavar="MODE",
                   help="torch.compile the model with this mode (default, max-autotune-no-cudagraphs, ...)")


def truth_for(args, device: str) -> str | None:
    """None with --compile: the run prints its markers itself (compiling, then trained)."""
    return None if args.compile else truth(sys.modules[__name__], device)


def shape(device: str) -> tuple[int, int, int, torch.dtype]:
    """(width, depth, batch, dtype) for the device."""
    if device == "cuda":
        return 4096, 8, 2048, torch.bfloat16
    return 1024, 4, 256, torch.float32


class Healthy:
    name = "healthy"

    def __init__(self, device: str, workers: int = 2, compile_mode: str | None = None) -> None:
        width, depth, batch, dtype = shape(device)
        self.device = device
        self.workers = workers
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        self.model = torch.nn.Sequential(*layers).to(device=device, dtype=dtype)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.compile_mode = compile_mode
        self.step_model = torch.compile(self.model, mode=compile_mode) if compile_mode else self.model
        gen = torch.Generator(device=device).manual_seed(0)
        self.x = torch.randn(POOL, batch, width, device=device, dtype=dtype, generator=gen)
        self.y = torch.randn(POOL, batch, width, device=device, dtype=dtype, generator=gen)
        self.facts = {"width": width, "depth": depth, "batch": batch, "dtype": str(dtype)}
        if compile_mode:
            self.facts["compile"] = compile_mode

    def run(self, until: float, meter: Meter) -> None:
        # collate to a plain list: it crosses the worker pipe as a pickle, without the shared-memory
        # fd passing a tensor needs, so fetching the index costs the main thread next to nothing
        loader = DataLoader(_Indexes(), batch_size=1, num_workers=self.workers, collate_fn=list)
        it = cycle(loader)
        compiling = self.compile_mode is not None
        if compiling:
            marker("idle", self.name, self.device, compiling=True, **self.facts)
        with cpu_threads(self.device, spare_one_core()):
            try:
                while time.time() < until:
                    i = next(it)[0]
                    loss = torch.nn.functional.mse_loss(self.step_model(self.x[i]), self.y[i])
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt.step()
                    meter.step()
                    if compiling:  # the first step, forward and backward compiled, has run to its end
                        loss.item()
                        compiling = False
                        marker(truth(sys.modules[__name__], self.device), self.name, self.device, **self.facts)
                    if meter.steps % LOG_EVERY == 0:
                        loss.item()
            finally:
                it.close()  # drops the loader's iterator: its workers exit now, not at interpreter exit

    def close(self) -> None:
        pass


def build(args, device: str) -> Healthy:
    return Healthy(device, args.workers, args.compile)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
