"""What the live watch's scheduling costs the event loop per frame, with no diagnosis and no real reads.

``Watch.frames`` runs six stub collectors (one for each frame field, on the real thread groups of
gpuwatch.engine.THREADS, each read a few microseconds of Python) against a sleeping process, and
the main thread's CPU time (``time.thread_time``) over ``--ticks`` frames, after 20 frames of
start-up, is reported in ms a frame: the hand-offs, timers and wake-ups of the collectors' reads,
the frame's own making and the target's liveness check, nothing else. bench.loop_cost measures
the per-frame work that comes after it (the diagnosis and the JSON line).

    python -m bench.engine_cost --ticks 300 --interval 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.target import Target
from gpuwatch.engine import FIELDS, Watch
from gpuwatch.model.values import Unsupported

SETTLE_TICKS = 20


def stub(field: str, interval: float) -> Collector:
    """A collector of ``field`` whose read is a little Python and returns at once."""

    class Stub(Collector):
        def sample(self) -> object:
            sum(range(200))
            return Unsupported("stub")

    Stub.field, Stub.interval = field, interval
    return Stub()


async def cost(pid: int, ticks: int, interval: float) -> float:
    """Main-thread CPU ms a frame over ``ticks`` frames."""
    watch = Watch(Target(pid), [stub(f, interval) for f in FIELDS], interval=interval)
    watch.prestart()
    n, c0 = 0, 0.0
    async for _ in watch.frames():
        n += 1
        if n == SETTLE_TICKS:
            c0 = time.thread_time()
        if n == SETTLE_TICKS + ticks:
            return (time.thread_time() - c0) / ticks * 1e3
    raise AssertionError("the watch ended early")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ticks", type=int, default=300)
    p.add_argument("--interval", type=float, default=0.05, help="seconds a tick (and each stub's interval)")
    args = p.parse_args(argv)
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        ms = asyncio.run(cost(job.pid, args.ticks, args.interval))
    finally:
        job.kill()
        job.wait()
    print(f"engine: {ms:.3f} ms of main-thread CPU a frame ({args.ticks} frames at {args.interval:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
