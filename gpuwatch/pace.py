"""How closely to watch: the stack sampling pace that the verdict in force allows.

py-spy dumps are the largest cost gpuwatch has that grows with how closely it looks (each dump is a
process start: ~6 ms of CPU on the H200), and a steady, healthy job needs them least: its verdict
rests on the GPU's own counters (busy, SM activity, tensor use), and the stacks only confirm that
the main thread is not waiting. So once the job has been GPU-bound with high confidence for
RELAX_AFTER ticks in a row, the stack collector halves its rates; any other verdict, a drop in
confidence, or a tick where the GPU is not saturated restores them at once. A bottleneck that
appears shows first in the GPU's counters (busy falls at once), so the full rate is back before the
stacks are needed to name it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.diagnosis.thresholds import BUSY_SATURATED
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.model.verdict import GPU_BOUND, Verdict

RELAX_AFTER = 10
"""Ticks of a steady GPU-bound verdict before relaxing: longer than the 8 s evidence window, so the
verdict rests on a whole window of full-rate samples."""
RELAX_CONFIDENCE = 0.8
"""The confidence the GPU-bound verdicts must keep (the healthy H200 runs read 0.82 to 0.95)."""
RELAXED = 0.5
"""Rate factor while relaxed: main threads 1 dump/s instead of 2, workers one every 4 s. Six main
samples (MIN_STACK_SAMPLES) still fit in the 8 s window."""
FULL = 1.0


def stack_pace(verdicts: Sequence[Verdict], latest: Frame | None = None) -> float:
    """FULL, or RELAXED after RELAX_AFTER confident GPU-bound verdicts in a row while the latest
    frame still shows the job's GPUs saturated. The frame is the earlier sign of a change: on the
    H200 switch run, busy fell from 99 % to 79 % a tick before the verdict moved (its confidence
    only dipped to 0.82), and that tick must already be sampled at the full pace."""
    if len(verdicts) < RELAX_AFTER or latest is None or not _saturated(latest):
        return FULL
    recent = (verdicts[i] for i in range(-RELAX_AFTER, 0))  # the end of a long deque, not a copy of it
    if all(v.stage == GPU_BOUND and v.confidence >= RELAX_CONFIDENCE for v in recent):
        return RELAXED
    return FULL


def _saturated(frame: Frame) -> bool:
    """Every GPU the job uses busy at least BUSY_SATURATED of the tick (False when unreadable)."""
    gpus = frame.gpus if isinstance(frame.gpus, tuple) else ()
    used = [g for g in gpus if g.used_by_target] or list(gpus)
    busy = [g.util_gpu for g in used]
    return bool(busy) and all(known(b) and b / 100 >= BUSY_SATURATED for b in busy)
