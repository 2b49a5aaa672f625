"""What every scenario shares: its command line, ground-truth markers, the steps/s meter, clean exit.

A scenario module defines ``STAGE`` (the ground truth; None when the workload prints its own
markers; ``STAGE_ON`` maps a device to a different one; ``truth_for(args, device)``, where a
command-line variant changes it), ``DEVICES`` (where the stage exists),
optionally ``add_arguments(parser)``, and
``build(args, device) -> Workload``. ``build`` does the slow setup (data, model);
``Workload.run(until, meter)`` trains until the Unix time ``until``. A workload may carry
``facts`` (printed with the start marker) and ``result`` (printed with the end marker).
``run_main`` ties these together, so the start marker is printed when training starts, not while
data is still being generated. Markers name the scenario by its module (``io_bound`` for ``io``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Protocol

EXIT_USAGE = 2
CPU_COMPUTE = "cpu_compute"
"""Ground truth of a job with no GPU whose own compute is the limit: gpuwatch's stage ``cpu_bound``
(older recordings: "unknown" with a non-zero confidence); bench/accuracy.py reads both so."""
DEFAULT_DURATION_S = 60.0


def model_bound(device: str) -> str:
    """Ground truth of a job whose model is the limit: ``gpu_bound``, or ``cpu_compute`` with no GPU."""
    return "gpu_bound" if device == "cuda" else CPU_COMPUTE

METER_EVERY_S = 5.0
"""Seconds between two steps/s lines on stderr (often enough to watch, rare enough to read)."""


class Workload(Protocol):
    name: str

    def run(self, until: float, meter: Meter) -> None: ...

    def close(self) -> None: ...


def marker(stage: str | None, scenario: str, device: str, **extra: object) -> None:
    """Print one ground-truth line on stdout: ``{"t": unix_time, "stage": ...}``.

    ``stage=None`` prints the end marker ``{"t": ..., "event": "end"}`` instead.
    """
    rec: dict[str, object] = {"t": round(time.time(), 3)}
    if stage is None:
        rec["event"] = "end"
    else:
        rec["stage"] = stage
    rec.update(scenario=scenario, device=device, **extra)
    print(json.dumps(rec), flush=True)


class Meter:
    """Counts training steps and prints steps/s to stderr every ``METER_EVERY_S`` seconds."""

    def __init__(self, label: str, every: float = METER_EVERY_S) -> None:
        self.label = label
        self.every = every
        self.steps = 0
        self._last_t = time.monotonic()
        self._last_steps = 0

    def step(self, n: int = 1) -> None:
        self.steps += n
        now = time.monotonic()
        if now - self._last_t >= self.every:
            rate = (self.steps - self._last_steps) / (now - self._last_t)
            print(f"[{self.label}] {rate:.2f} steps/s ({self.steps} steps)", file=sys.stderr, flush=True)
            self._last_t, self._last_steps = now, self.steps


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit(_usage("--device cuda was asked for but torch sees no CUDA GPU"))
    return name


def _usage(text: str) -> int:
    print(f"scenario: error: {text}", file=sys.stderr)
    return EXIT_USAGE


@contextlib.contextmanager
def cpu_threads(device: str, n: int = 1) -> Iterator[None]:
    """Use ``n`` intra-op threads while a model meant to be tiny runs on the CPU (restored after).

    Measured on the 2-core dev VM: a Linear(4096, 10) step fed by 2 busy workers cost the main
    process 0.81 cores with torch's default thread pool (its threads spin between ops while the
    cores are taken) and 0.15 cores with one thread; the spinning would blur "main waits for data".
    """
    import torch

    if device != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def spare_one_core() -> int:
    """All CPUs but one (at least 1): what a CPU job may use without oversubscribing the host.

    A job that keeps every core busy makes its own threads (and the observer's) queue for a CPU,
    which from outside is contention (signals.md section 11: self-contention), a second cause on
    top of the one the scenario builds. Leaving one core keeps the ground truth single.
    """
    return max(1, (os.cpu_count() or 1) - 1)


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--duration", type=float, default=None,
                   help=f"seconds of training after setup (default {DEFAULT_DURATION_S:g})")
    return p


def exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit so ``finally`` blocks run (hogs killed, temp files removed)."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def cycle(loader: Iterator | object) -> Iterator:
    """Batches from a DataLoader forever (a new epoch when one ends)."""
    while True:
        yield from loader  # type: ignore[misc]


def truth(module: object, device: str) -> str | None:
    """The ground-truth stage of a scenario module on ``device``."""
    return getattr(module, "STAGE_ON", {}).get(device, module.STAGE)


def run_main(module: object, argv: Sequence[str] | None = None) -> int:
    """Parse, build, print the marker, train for ``--duration`` seconds, print the end marker."""
    name = os.path.splitext(os.path.basename(module.__file__))[0]
    p = base_parser((module.__doc__ or name).strip().splitlines()[0])
    if hasattr(module, "add_arguments"):
        module.add_arguments(p)
    args = p.parse_args(argv)
    exit_on_sigterm()
    device = resolve_device(args.device)
    if device not in module.DEVICES:
        return _usage(f"{name} needs --device {' or '.join(module.DEVICES)}: the stage does not exist on {device}")
    work = module.build(args, device)  # may set args.duration (switch: phases x phase length)
    duration = DEFAULT_DURATION_S if args.duration is None else args.duration
    try:
        meter = Meter(name)
        stage = module.truth_for(args, device) if hasattr(module, "truth_for") else truth(module, device)
        if stage is not None:  # None: the workload prints its own markers (switch)
            marker(stage, name, device, **getattr(work, "facts", {}))
        work.run(time.time() + duration, meter)
        marker(None, name, device, steps=meter.steps, **getattr(work, "result", {}))
    finally:
        work.close()
    return 0
