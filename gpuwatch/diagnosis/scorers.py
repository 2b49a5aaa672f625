"""The table of stage scorers: stage name -> scorer(signals, relax) -> StageResult.

Apart from stages.py (which the scorer modules import for StageResult), so the table can import
every scorer module without an import loop.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwatch.diagnosis import gpu_stages, input_stages, system_stages, transfer_stage
from gpuwatch.diagnosis.stages import CPU_COMPUTE, INPUT_UNMEASURED, StageResult
from gpuwatch.model import verdict as v

Scorer = Callable[..., StageResult]

SCORERS: dict[str, Scorer] = {
    v.IDLE: system_stages.idle,
    v.CONTENTION: system_stages.contention,
    v.IO: input_stages.io,
    v.DECODE: input_stages.decode,
    v.H2D: transfer_stage.h2d,
    v.GPU_MEMORY: gpu_stages.gpu_memory,
    v.LAUNCH: gpu_stages.launch,
    v.GPU_BOUND: gpu_stages.gpu_bound,
    CPU_COMPUTE: system_stages.cpu_compute,
    INPUT_UNMEASURED: input_stages.input_unmeasured,
}
