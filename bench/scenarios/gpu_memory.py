"""GPU-memory-bound training: a layout-shuffling elementwise model, no matmuls, no tensor cores.

The input is a 128 x 128 x 64 x 64 fp32 activation (256 MiB) pre-generated on the GPU. Each of 6
blocks permutes it to channels-last and makes it contiguous (a full read + write), applies a
per-channel scale and shift and a GELU (elementwise), and permutes back with another contiguous
copy plus a transpose of the spatial axes. Backward repeats the same kind of traffic. Every kernel
streams hundreds of MiB with a few flops per byte, so DRAM bandwidth is the limit and the tensor
cores stay idle. Each kernel moves >= 512 MB: ~0.1 ms even at the H200's 4.8 TB/s spec peak, far
above a launch's few microseconds, so launch overhead is negligible (h200-signatures.md measured
the `.t().contiguous()` layout copy: SMs busy, tensor ~1 %).
CUDA only. Ground truth: ``gpu_memory``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch

from bench.scenarios._common import Meter, run_main

STAGE = "gpu_memory"
DEVICES = ("cuda",)
SHAPE = (128, 128, 64, 64)
BLOCKS = 6
LOG_EVERY = 20


class LayoutBlock(torch.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(channels))
        self.shift = torch.nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.permute(0, 2, 3, 1).contiguous()  # NCHW -> NHWC copy
        y = torch.nn.functional.gelu(y * self.scale + self.shift)
        y = y.permute(0, 3, 1, 2).contiguous()  # back to NCHW
        return y.transpose(2, 3).contiguous() + x


class GpuMemory:
    name = "gpu_memory"

    def __init__(self, device: str) -> None:
        self.device = device
        gen = torch.Generator(device=device).manual_seed(0)
        self.x = torch.randn(SHAPE, device=device, generator=gen)
        self.model = torch.nn.Sequential(*[LayoutBlock(SHAPE[1]) for _ in range(BLOCKS)]).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-4)
        self.facts = {"shape": list(SHAPE), "blocks": BLOCKS, "activation_mib": self.x.numel() * 4 >> 20}

    def run(self, until: float, meter: Meter) -> None:
        while time.time() < until:
            loss = self.model(self.x).square().mean()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            meter.step()
            if meter.steps % LOG_EVERY == 0:
                loss.item()

    def close(self) -> None:
        pass


def build(args, device: str) -> GpuMemory:
    return GpuMemory(device)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
