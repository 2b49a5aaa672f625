"""Long runs: memory stays bounded over a day of frames, and a live watch leaks no file handles,
threads or child processes.

The day of frames repeats the real frames of tests/data/cpu_demo.jsonl with increasing seq and t,
written as a recording and replayed through the same path as ``gpuwatch replay FILE --json``
(ReplaySource -> stream_json -> Analysis -> one JSON line per tick). By default it is 24 hours at a
20 s tick (4,320 frames, ~5x the 900-frame history; RSS is compared from a fifth of a history after
it is full to the end), which takes ~30 s here, nearly all of it the diagnosis;
``GPUWATCH_LONG_RUN_FRAMES=86400`` makes it 24 hours at the default 1 s tick (about 5 minutes on
this 2-core VM; docs/RELIABILITY.md has the numbers of that run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from gpuwatch.analysis import HISTORY_FRAMES, Analysis
from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.pyspy import find_pyspy
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.headless import stream_json
from gpuwatch.source import LiveSource, ReplaySource

DEMO = Path(__file__).parent / "data" / "cpu_demo.jsonl"  # a real recording: 62 ticks at 1 s
DAY_S = 86_400
FRAMES = int(os.environ.get("GPUWATCH_LONG_RUN_FRAMES", "4320"))
TICK_S = DAY_S / FRAMES
MIB = 1024 * 1024
MAX_GROWTH = 16 * MIB
"""RSS growth allowed between the 10 % and the 100 % points. Keeping every frame and verdict
would cost far more: a decoded frame alone is ~3 KiB of Python objects (tracemalloc, cpu_demo
frames), so 90 % of 8,640 frames kept would be >= 23 MiB (>= 230 MiB at 86,400), and its JSON line
4.4 kB more. The history itself is full before the 10 % point (900 frames), so what is left to grow
is the last frames of the history and allocator noise: measured here, 2.2 MiB at 8,640 frames
(10 s ticks) and 0.1 MiB at 86,400 (1 s ticks)."""


def write_day(path: Path) -> int:
    """A recording of FRAMES ticks, TICK_S apart, made of the demo's real ticks; returns the count."""
    lines = DEMO.read_text().splitlines()
    header, ticks = lines[0], [json.loads(x) for x in lines[1:]]
    t0, wall0 = ticks[0]["frame"]["t"], ticks[0]["frame"]["wall"]
    with open(path, "w") as f:
        f.write(header + "\n")
        for n in range(FRAMES):
            rec = ticks[n % len(ticks)]
            frame = rec["frame"]
            # Only the frame's own clock changes; the samples inside keep their times relative to it.
            shift = t0 + n * TICK_S - frame["t"]
            out = dict(rec, frame=dict(frame, seq=n + 1, t=frame["t"] + shift, wall=wall0 + n * TICK_S,
                                       interval=TICK_S))
            f.write(json.dumps(out, separators=(",", ":")) + "\n")
    return FRAMES


class _Sink:
    """Stands in for stdout: counts lines, keeps nothing."""

    def __init__(self) -> None:
        self.lines = 0

    def write(self, s: str) -> None:
        self.lines += s.count("\n")

    def flush(self) -> None:
        pass


def rss() -> int:
    return psutil.Process().memory_info().rss


@pytest.mark.slow
def test_a_day_of_frames_replays_in_bounded_memory(tmp_path):
    path = tmp_path / "day.jsonl"
    n = write_day(path)
    marks: dict[int, int] = {}
    full = HISTORY_FRAMES + HISTORY_FRAMES // 5  # the history is full: from here on, nothing should grow
    assert n >= 3 * full
    checkpoints = (full, n // 2, n)
    analysis = Analysis()

    def on_tick(tick) -> None:
        if tick.frame.seq in checkpoints:
            marks[tick.frame.seq] = rss()

    sink = _Sink()
    bad = []
    started = time.monotonic()
    rc = asyncio.run(stream_json(ReplaySource(str(path), speed=0, on_bad_line=bad.append), out=sink,
                                 analysis=analysis, on_tick=on_tick))
    took = time.monotonic() - started
    assert rc == 0 and bad == [] and sink.lines == n
    assert len(analysis.frames) == HISTORY_FRAMES and len(analysis.verdicts) == HISTORY_FRAMES
    assert analysis.frames[-1].seq == n and analysis.frames[-1].t - analysis.frames[0].t < HISTORY_FRAMES * TICK_S
    growth = marks[n] - marks[full]
    print(f"\n{n} frames ({n * TICK_S / 3600:.0f} h at {TICK_S:g} s) in {took:.1f} s; RSS at frames "
          + " / ".join(f"{k}: {marks[k] / MIB:.1f}" for k in sorted(marks)) + f" MiB; growth {growth / MIB:.2f} MiB")
    assert growth < MAX_GROWTH, f"RSS grew {growth / MIB:.1f} MiB from frame {full} to {n}"


# -- a live watch leaks nothing ------------------------------------------------------------------

TARGET = [sys.executable, "-c",
          "import os, time\n"
          "if os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\n"
          "while True:\n    sum(range(1000)); time.sleep(0.005)\n"]
TICKS = 30


def _resources() -> tuple[int, int, list[int]]:
    me = psutil.Process()
    # Direct children only: jobs started by other tests (session fixtures) re-fork workers below them.
    return len(os.listdir("/proc/self/fd")), threading.active_count(), sorted(c.pid for c in me.children())


def _settled(baseline: tuple[int, int, list[int]], timeout: float = 10.0) -> tuple[int, int, list[int]]:
    """The resources once they are back to ``baseline`` (executor threads end a moment after
    shutdown(wait=False)), or what is left at the timeout."""
    deadline = time.monotonic() + timeout
    now = _resources()
    while now != baseline and time.monotonic() < deadline:
        time.sleep(0.1)
        now = _resources()
    return now


async def _watch(pid: int) -> int:
    target = Target(pid)
    opts = WatchOptions(interval=0.2, gpus=None, stack_rate=10.0)  # 2 py-spy dumps a tick
    watch = Watch(target, build_collectors(target, opts), interval=opts.interval)
    count = 0
    stacks_seen = 0
    # Closed as gpuwatch.pipeline closes it: a generator left to asyncio.run's shutdown is closed by a
    # task that asyncio.run cancels first, so the watch's cleanup (closing the collectors' kept /proc
    # descriptors) would be cut off at its first await.
    async with contextlib.aclosing(LiveSource(watch).frames()) as frames:
        async for frame in frames:
            count += 1
            stacks_seen += hasattr(frame.stacks, "threads")
            if count == TICKS:
                break
    assert stacks_seen > TICKS // 2, "stacks were not sampled"
    return count


@pytest.mark.slow
@pytest.mark.skipif(find_pyspy() is None, reason="py-spy is not installed")
def test_a_live_watch_with_stacks_leaks_no_fds_threads_or_children():
    job = subprocess.Popen(TARGET, start_new_session=True)
    try:
        time.sleep(0.3)
        baseline = _resources()
        assert job.pid in baseline[2]
        for _ in range(2):  # twice: a leak per watch would show as growth between the two
            assert asyncio.run(_watch(job.pid)) == TICKS
            after = _settled(baseline)
            assert after == baseline, f"fds, threads, children before {baseline}, after {after}"
    finally:
        os.killpg(job.pid, 9)
        job.wait()
