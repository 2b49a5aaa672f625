"""Periodic GPU stalls, from the driver's 200 ms utilization samples (GpuSample.util_trace).

"The GPU idles ~0.4 s every ~2 s" is what a checkpoint every N steps, an eval loop or batches
that arrive in waves look like: invisible in 1 s averages, plain in the 200 ms trace
(measured on an H200: the driver keeps one utilization sample every 200 ms). What the main thread
was doing during the idle runs names the cause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median

from gpuwatch.diagnosis.stack_counts import each_sample
from gpuwatch.diagnosis.thresholds import (
    STALL_BUSY_LEVEL as BUSY_LEVEL,
    STALL_IDLE_RATIO as IDLE_RATIO,
    STALL_JITTER as JITTER,
    STALL_MAX_IDLE_SHARE as MAX_IDLE_SHARE,
    STALL_MIN_POINTS as MIN_POINTS,
    STALL_MIN_RUNS as MIN_RUNS,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.model.verdict import Stall

CAUSES = {  # said after "during" and "coinciding with": nouns ("during waiting for data" read badly)
    lb.CHECKPOINT: "checkpoint saves",
    lb.DATA_WAIT: "waits for data (batches arrive in waves)",
    lb.DATA_IPC: "waits for data (batches arrive in waves)",
    lb.INLINE_LOAD: "loading data in the main process",
    lb.LOOP_PREP: "preparing data in the training loop",
    lb.SAMPLER: "drawing indices in the DataLoader's sampler",
    lb.SYNC: "CPU-GPU synchronisations",
    lb.H2D: "host-to-device copies",
}


def find_stall(frames: Sequence[Frame], gpu_indexes: Sequence[int]) -> Stall | None:
    """The periodic stall on the job's first GPU over ``frames``, or None."""
    for index in gpu_indexes:
        trace = _trace(frames, index)
        stall = _periodic(trace)
        if stall is not None:
            period, idle_s, runs = stall
            return Stall(period_s=round(period, 2), idle_s=round(idle_s, 2),
                         coincides_with=_coincides(frames, runs))
    return None


def _trace(frames: Sequence[Frame], index: int) -> list[tuple[float, float]]:
    points: dict[float, float] = {}
    for f in frames:
        if not known(f.gpus):
            continue
        for g in f.gpus:
            if g.index == index:
                for ts, pct in g.util_trace:
                    points[ts] = pct
    return sorted(points.items())


def _periodic(trace: list[tuple[float, float]]) -> tuple[float, float, list[tuple[float, float]]] | None:
    if len(trace) < MIN_POINTS:
        return None
    values = sorted(v for _, v in trace)
    busy = values[int(0.8 * (len(values) - 1))]
    if busy < BUSY_LEVEL:
        return None
    dt = median(b[0] - a[0] for a, b in zip(trace, trace[1:]))
    if dt <= 0:
        return None
    runs: list[tuple[float, float]] = []  # (start, end) unix seconds of each idle run
    idle_n = 0
    for ts, v in trace:
        if v >= IDLE_RATIO * busy:
            continue
        idle_n += 1
        if runs and ts - runs[-1][1] <= 1.5 * dt:
            runs[-1] = (runs[-1][0], ts)
        else:
            runs.append((ts, ts))
    if len(runs) < MIN_RUNS or idle_n / len(trace) > MAX_IDLE_SHARE:
        return None
    gaps = [b[0] - a[0] for a, b in zip(runs, runs[1:])]
    period = median(gaps)
    if period < 2 * dt or median(abs(g - period) for g in gaps) > JITTER * period:
        return None
    idle_s = median(e - s + dt for s, e in runs)
    return period, idle_s, runs


def _coincides(frames: Sequence[Frame], runs: list[tuple[float, float]]) -> str | None:
    """The main-thread label that shows up more in ticks holding an idle run than in the others.

    Stack samples carry their tick's time, not their own, so they are matched per tick: a tick
    "stalls" when its span (wall - interval, wall] overlaps an idle run."""
    stalled: Counter = Counter()
    steady: Counter = Counter()
    n_stalled = n_steady = 0
    for f, s in each_sample(frames):
        end = s.t + (f.wall - f.t)  # the frame's clock offset maps monotonic time to unix time
        start = end - max(f.interval, 0.2)
        hit = any(a <= end and b >= start for a, b in runs)
        labels = [th.label for th in s.threads if th.role == lb.ROLE_MAIN_THREAD]
        if hit:
            stalled.update(labels)
            n_stalled += len(labels)
        else:
            steady.update(labels)
            n_steady += len(labels)
    if not n_stalled:
        return None
    lift = {label: stalled[label] / n_stalled - (steady[label] / n_steady if n_steady else 0.0)
            for label in CAUSES if stalled[label]}
    best = max(lift, key=lift.get, default=None)  # type: ignore[arg-type]
    return CAUSES[best] if best is not None and lift[best] > 0 else None
