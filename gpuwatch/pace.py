"""How closely to watch: the stack sampling pace that the verdict in force allows.

py-spy dumps are the largest cost gpuwatch has that grows with how closely it looks (each dump is a
process start: ~6 ms of CPU on the H200), and a steady, healthy job needs them least: its verdict
rests on the GPU's own counters (busy, SM activity, tensor use), and the stacks only confirm that
the main thread is not waiting. So once the job has been GPU-bound with high confidence for
RELAX_AFTER ticks in a row, the stack collector halves its rates; any other verdict, or a drop in
confidence, restores them on the next tick. A bottleneck that appears shows first in the GPU's
counters (busy falls at once), so the full rate is back before the stacks are needed to name it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.model.verdict import GPU_BOUND, Verdict

RELAX_AFTER = 10
"""Ticks of a steady GPU-bound verdict before relaxing: longer than the 8 s evidence window, so the
verdict rests on a whole window of full-rate samples."""
RELAX_CONFIDENCE = 0.9
"""The confidence the GPU-bound verdicts must keep. A steady healthy job reads 0.95 (H200 runs);
the first tick of a change already reads less (0.82 on the H200 switch run, as GPU busy fell from
99 % to 79 % while the verdict held), which restores the full pace a tick before the verdict moves."""
RELAXED = 0.5
"""Rate factor while relaxed: main threads 1 dump/s instead of 2, workers one every 4 s. Six main
samples (MIN_STACK_SAMPLES) still fit in the 8 s window."""
FULL = 1.0


def stack_pace(verdicts: Sequence[Verdict]) -> float:
    """FULL, or RELAXED after RELAX_AFTER confident GPU-bound verdicts in a row."""
    if len(verdicts) < RELAX_AFTER:
        return FULL
    recent = list(verdicts)[-RELAX_AFTER:]
    if all(v.stage == GPU_BOUND and v.confidence >= RELAX_CONFIDENCE for v in recent):
        return RELAXED
    return FULL
