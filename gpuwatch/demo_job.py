"""The training job behind ``gpuwatch demo``: it cycles through bottlenecks, ~20 s each, until killed.

On a GPU: healthy (bf16 MLP) -> decode-bound (few DataLoader workers decoding JPEGs) ->
launch-bound (a deep, tiny model and ``.item()`` every step) -> PCIe-bound (pageable host-to-device
copies). On the CPU: compute-bound (the healthy MLP; gpuwatch's stage ``cpu_bound``) -> decode-bound -> idle (the job pauses, as during a checkpoint).
It needs only torch (pillow, if installed, gives real JPEG decoding; without it the workers run a
CPU blur instead) and makes its own data. What it is doing goes to stderr; the ground truth goes
to stdout as JSON lines ``{"t": unix_time, "stage": ..., "phase": ...}``. It keeps CPU use
modest: one intra-op thread, and 1 DataLoader worker on a machine of 2 cores or fewer.

Run: ``python -m gpuwatch.demo_job [--device auto|cpu|cuda] [--phase S] [--duration S]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

PHASE_S = 20.0
"""Seconds per phase: long enough for gpuwatch's ~10 s window to settle on each stage."""
REPORT_S = 5.0


def _marker(stage: str, phase: str, note: str, device: str) -> None:
    print(json.dumps({"t": round(time.time(), 3), "stage": stage, "phase": phase, "note": note,
                      "device": device}), flush=True)


class _Steps:
    def __init__(self, phase: str) -> None:
        self.phase, self.n, self.t0, self.n0 = phase, 0, time.monotonic(), 0

    def step(self) -> None:
        self.n += 1
        now = time.monotonic()
        if now - self.t0 >= REPORT_S:
            rate = (self.n - self.n0) / (now - self.t0)
            print(f"demo: {self.phase}: {rate:.1f} steps/s", file=sys.stderr, flush=True)
            self.t0, self.n0 = now, self.n


def _train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


# -- healthy: a model that keeps the device busy on data already there ------------------------------

def _healthy(device: str, until: float, steps: _Steps) -> None:
    width, batch, dtype = (2048, 1024, torch.bfloat16) if device == "cuda" else (512, 128, torch.float32)
    model = torch.nn.Sequential(
        *[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())], torch.nn.Linear(width, 10)
    ).to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=device, dtype=dtype)
    y = torch.randint(0, 10, (batch,), device=device)
    while time.time() < until:
        loss = _train_step(model, opt, x, y)
        steps.step()
        if steps.n % 50 == 0:
            loss.item()
    if device == "cuda":
        torch.cuda.synchronize()


# -- decode: few workers decode (or blur) images for a cheap model ---------------------------------

class _Images(Dataset):
    """Makes JPEGs once (pillow) and decodes + crops + flips one per item; or blurs, without pillow."""

    SIZE = (640, 480)

    def __init__(self) -> None:
        try:
            from PIL import Image
        except ImportError:
            self.jpegs: list[bytes] = []
            return
        self.jpegs = []
        for i in range(16):
            img = Image.effect_noise(self.SIZE, 40 + 5 * i).convert("RGB")
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=90)
            self.jpegs.append(buf.getvalue())

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        rng = random.Random(i)
        if not self.jpegs:
            img = torch.rand(3, 240, 320)
            for _ in range(3):  # a 5x5 box blur, three times: ~10 ms of CPU per item, like a decode
                img = torch.nn.functional.avg_pool2d(img, 5, stride=1, padding=2)
            return img[:, :224, :224].contiguous(), i % 10
        from PIL import Image

        img = Image.open(io.BytesIO(self.jpegs[i % len(self.jpegs)])).convert("RGB")
        x0, y0 = rng.randrange(self.SIZE[0] - 320), rng.randrange(self.SIZE[1] - 320)
        img = img.resize((224, 224), Image.BILINEAR, box=(x0, y0, x0 + 320, y0 + 320))
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(224, 224, 3)
        return t.permute(2, 0, 1).float().div_(255.0), i % 10


def _decode(device: str, until: float, steps: _Steps, dataset: _Images) -> None:
    workers = 1 if (os.cpu_count() or 1) <= 2 else 2
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 8, stride=8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(256, 10),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(dataset, batch_size=32, num_workers=workers, pin_memory=device == "cuda")
    it = iter(loader)
    try:
        while time.time() < until:
            x, y = next(it)
            _train_step(model, opt, x.to(device, non_blocking=True), y.to(device, non_blocking=True)).item()
            steps.step()
    finally:
        del it  # the workers exit with the iterator


# -- launch: hundreds of tiny kernels per step and a sync every step --------------------------------

def _launch(device: str, until: float, steps: _Steps) -> None:
    model = torch.nn.Sequential(
        *[m for _ in range(30) for m in (torch.nn.Linear(32, 32), torch.nn.LayerNorm(32), torch.nn.GELU())],
        torch.nn.Linear(32, 10),
    ).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(16, 32, device=device)
    y = torch.randint(0, 10, (16,), device=device)
    while time.time() < until:
        _train_step(model, opt, x, y).item()
        steps.step()


# -- h2d: a big pageable batch copied to the GPU every step for a cheap model ------------------------

def _h2d(device: str, until: float, steps: _Steps) -> None:
    host = [torch.rand(8, 4, 1024, 1024) for _ in range(2)]  # 128 MiB each, pageable
    model = torch.nn.Sequential(torch.nn.AvgPool2d(16), torch.nn.Flatten(), torch.nn.Linear(4 * 64 * 64, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    y = torch.randint(0, 10, (8,), device=device)
    while time.time() < until:
        _train_step(model, opt, host[steps.n % 2].to(device), y).item()
        steps.step()


def _idle(device: str, until: float, steps: _Steps) -> None:
    while time.time() < until:
        time.sleep(0.2)


Phase = tuple[str, str, str, Callable[..., None]]


def phases(device: str, dataset: _Images) -> list[Phase]:
    """(name, ground-truth stage, what it does, run(device, until, steps))."""
    blur = "" if dataset.jpegs else " (pillow missing: blurring instead of decoding)"
    decode: Phase = ("decode-bound", "decode", "few DataLoader workers decode JPEGs for a cheap model" + blur,
                     lambda d, u, s: _decode(d, u, s, dataset))
    if device == "cuda":
        return [
            ("healthy", "gpu_bound", "bf16 MLP on data already on the GPU", _healthy),
            decode,
            ("launch-bound", "launch", "deep tiny model: hundreds of tiny kernels and .item() per step", _launch),
            ("pcie-bound", "h2d", "128 MiB pageable batch copied to the GPU every step", _h2d),
        ]
    return [
        # no GPU stage applies: gpuwatch calls it CPU-bound
        ("compute-bound", "cpu_bound", "MLP on data already in memory (the CPU's compute is the limit)", _healthy),
        decode,
        ("idle", "idle", "the job pauses (as during a checkpoint or evaluation)", _idle),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpuwatch.demo_job", description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--cpu", action="store_true", help="same as --device cpu")
    p.add_argument("--phase", type=float, default=PHASE_S, help="seconds per phase")
    p.add_argument("--duration", type=float, default=None, help="stop after S seconds (default: run until killed)")
    args = p.parse_args(argv)
    device = "cpu" if args.cpu else args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("demo: torch sees no CUDA GPU; use --device cpu", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    torch.set_num_threads(1)  # modest on a laptop: the demo is about the stages, not speed
    stop = None if args.duration is None else time.time() + args.duration
    plan = phases(device, _Images())
    try:
        while True:
            for name, stage, note, run in plan:
                now = time.time()
                if stop is not None and now >= stop:
                    return 0
                until = now + args.phase if stop is None else min(stop, now + args.phase)
                _marker(stage, name, note, device)
                print(f"demo: {name}: {note}", file=sys.stderr, flush=True)
                run(device, until, _Steps(name))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
