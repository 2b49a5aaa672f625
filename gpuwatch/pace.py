"""How closely to watch: the stack sampling pace that the verdict in force allows.

py-spy dumps are the largest cost gpuwatch has that grows with how closely it looks (each dump is a
process start: 7.5-9 ms of CPU on the H200), and a steady, healthy job needs them least: its verdict
rests on the GPU's own counters (busy, SM activity, tensor use), and the stacks only confirm that
the main thread is not waiting. So once the job has been GPU-bound (at RELAX_CONFIDENCE or more)
for RELAX_AFTER ticks in a row, and the GPU stays as busy as it has been, the stack collector
slows the main processes' dumps and thins the workers'; any other verdict, a confidence under
RELAX_CONFIDENCE, or a tick where the GPU's busy time falls restores them at once. A bottleneck
that appears shows first in the GPU's counters (busy falls at once), so the full rate is back
before the stacks are needed to name it. The GPU collector follows the same pace: relaxed, it reads
the driver's utilization buffer and takes a GPM sample every second tick (collectors/gpu.py,
RELAXED_BUFFER_EVERY, RELAXED_GPM_EVERY), the GPUs' process lists when their used memory changes
(RELAXED_PROCESSES_S) and the throttle counters every 10 s while no bad clock-event reason shows
(RELAXED_THROTTLE_S), the PCIe collector its replay counter every second tick (collectors/pcie.py,
RELAXED_REPLAYS_EVERY); the host collector scans the processes outside the job
every 6 s instead of 3 (collectors/others.py, RELAXED_EVERY_S), and the disk collector lists the
open files of one process a tick instead of three (collectors/disk.py, RELAXED_SCAN_PER_TICK).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gpuwatch.diagnosis.thresholds import BUSY_SATURATED, BUSY_STARVED
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.model.verdict import GPU_BOUND, Verdict

RELAX_AFTER = 10
"""Ticks of a steady GPU-bound verdict before relaxing: longer than the 8 s evidence window, so the
verdict rests on a whole window of full-rate samples."""
RELAX_CONFIDENCE = 0.6
"""The confidence the GPU-bound verdicts must keep. What relaxing needs from the verdict is that no
host-side stage is named and the GPU is not starved: the stage and the busy checks in
:func:`stack_pace` see to that. The confidence only keeps out a GPU-bound verdict that rests on
thin evidence: two or more of the discounts in diagnosis/compose.py (no GPM, a GPU assumed to be the
job's, SMs under 80 % active, ...) bring it to 0.54 or less. Not higher: a healthy job that is busy
80-88 % with SMs 74 % active (the H200 benchmark job) reads 0.68 to 0.82 as busy crosses the 85 %
"saturated" line, and a cut at 0.8 flips the pace every few ticks (measured: full pace about 40 % of
the time, 1.4 % of a core in py-spy instead of 0.8; bench/results/HISTORY.md). The healthy H200
jobs read 0.82 to 0.95."""


class Pace(NamedTuple):
    """Factors on the stack collector's rates: the main processes' and their workers'."""

    main: float
    workers: float


RELAXED = Pace(1 / 6, 0.125)
"""Rates while relaxed: a main process one dump every 3 s instead of two a second, workers one
every 16 s instead of one every 2 s.

What the verdict needs from the stacks while the GPU stays busy is that the main thread is not
waiting for a batch; the GPU's own counters carry the rest, and the first tick that busy falls
brings the full rate back, before the stacks are needed to name a new stage. The 8 s evidence
window (WINDOW_S) then holds two or three main-thread samples, and a "moderate" wait takes two
(MODERATE_MIN_SAMPLES), so one stray "data wait" sample does not fail GPU-bound's check. The
empty samples of the ticks between dumps keep the stacks fresh (STACK_STALE_S counts from the
newest sample, empty or not).

Replayed on every H200 recording with the relaxed ticks' dumps thinned to this rate, at each of
the three ticks a dump can fall on (bench/relaxed_stacks.py, tests/test_relaxed_stack_replay.py):
every switch run names every phase as soon as recorded or a tick sooner, right on as many ticks.
Every tick's stage is as recorded but where one main dump every 2 s differs as well, at one of
its own two phases (the benchmark job's stray "data wait" sample: three ticks undecided, twelve
at full pace). The cost: a decode stage just named reads 0.81 instead of 0.95 (under
MIN_STACK_SAMPLES in its window) on up to two ticks, where a dump every 2 s mostly has it on one.

Workers: a busy GPU means the input pipeline keeps up, so no stage the verdict could name rests on
worker stacks; they keep the processes table's hottest frames and the threads panel's worker line
from going blank.

A dump costs 7.9 ms of py-spy's CPU and 1.2 ms of gpuwatch's on the H200
(bench/results/2026-12-04-h200/run32, collector_cost): 0.40 dumps/s relaxed instead of 0.56 is
~1.5 ms of CPU a second less, 0.15 % of a core."""
FULL = Pace(1.0, 1.0)
STEADY_DROP = 0.05
"""How far busy may fall below the lowest of the previous RELAX_AFTER ticks and still count as the
same steady job: the H200 benchmark job (GPU-bound, a `.item()` sync each step) read 80-88 % from
tick to tick, while a bottleneck that starts costs far more at once (the switch run: 99 % -> 79 %
-> 65 %, then 0 %)."""


def stack_pace(verdicts: Sequence[Verdict], frames: Sequence[Frame]) -> Pace:
    """FULL, or RELAXED after RELAX_AFTER GPU-bound verdicts of RELAX_CONFIDENCE or more in a row
    while the latest frame (``frames[-1]``) shows the job's GPUs steady: saturated, or at least BUSY_STARVED busy and
    no more than STEADY_DROP below the previous RELAX_AFTER frames. The frame is the earlier sign
    of a change: on the H200 switch run, busy fell from 99 % to 79 % a tick before the verdict
    moved (its confidence only dipped to 0.82), and that tick must already be sampled at the full
    pace."""
    if len(verdicts) < RELAX_AFTER or len(frames) <= RELAX_AFTER:
        return FULL
    recent = (verdicts[i] for i in range(-RELAX_AFTER, 0))  # the end of a long deque, not a copy of it
    if not all(v.stage == GPU_BOUND and v.confidence >= RELAX_CONFIDENCE for v in recent):
        return FULL
    now = _busy(frames[-1])
    if now is None:
        return FULL
    before = [_busy(frames[i]) for i in range(-RELAX_AFTER - 1, -1)]
    if now < BUSY_SATURATED and any(b is None for b in before):
        return FULL
    return RELAXED if busy_holds(now, before) else FULL  # type: ignore[arg-type]


def busy_holds(now: float, before: Sequence[float]) -> bool:
    """Whether a GPU ``now`` busy (a fraction) is as steady as the readings ``before`` it: saturated,
    or at least BUSY_STARVED and no more than STEADY_DROP under the lowest of them (none: no fall to
    see). The pace's rule (stack_pace); the GPU collector applies it to one driver period to tell
    whether that period must be checked against the tick's mean (collectors/gpu.py)."""
    if now >= BUSY_SATURATED:
        return True
    return now >= BUSY_STARVED and (not before or now >= min(before) - STEADY_DROP)


def _busy(frame: Frame) -> float | None:
    """The least busy of the GPUs the job uses, as a fraction (None when unreadable)."""
    gpus = frame.gpus if isinstance(frame.gpus, tuple) else ()
    used = [g for g in gpus if g.used_by_target] or list(gpus)
    busy = [g.util_gpu for g in used]
    if not busy or not all(known(b) for b in busy):
        return None
    return min(busy) / 100  # type: ignore[type-var]
