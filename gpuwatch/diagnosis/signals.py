"""Everything a decision needs from one window of frames, read once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.gpu_signals import GpuSignals, gpu_signals
from gpuwatch.diagnosis.host_signals import (
    DiskSignals,
    HostSignals,
    JobSignals,
    disk_signals,
    host_signals,
    job_signals,
)
from gpuwatch.diagnosis.stack_signals import StackSignals, stack_signals
from gpuwatch.diagnosis.thresholds import JOB_CPU_SATURATED, STICKY_STACK_FACTOR
from gpuwatch.model.frame import Frame


@dataclass(frozen=True, slots=True)
class Signals:
    t: float
    frames: int
    span_s: float
    alive: bool
    exit_reason: str | None
    gpu: GpuSignals
    job: JobSignals
    host: HostSignals
    disk: DiskSignals
    stacks: StackSignals
    sticky_stacks: StackSignals | None = None
    """The same counts over STICKY_STACK_FACTOR times the samples, for the stage in force."""

    # -- the few derived readings several stages share -------------------------------------------
    @property
    def wait(self) -> float | None:
        return self.stacks.wait if self.stacks.available else None

    @property
    def cpu_short(self) -> bool:
        """The job's workers have the usable CPUs to themselves and fill them (no core to spare)."""
        used, usable = self.job.workers_cpu, self.job.usable_cpus
        return used is not None and bool(usable) and used >= JOB_CPU_SATURATED * usable  # type: ignore[operator]


def extract(frames: Sequence[Frame], pool: Sequence[Frame], rank: int | None,
            held_pool: Sequence[Frame] | None = None) -> Signals:
    """Signals over ``frames`` (the decision's window, oldest first). Stack counts cover the same
    span and widen back through ``pool`` (a longer history ending at the same frame) only as far
    as needed for enough main-thread samples. The stage in force gets wider counts, reaching back
    through ``held_pool`` (its own regime: never into what came before it)."""
    last = frames[-1]
    span = last.t - frames[0].t + 1e-6
    job = job_signals(frames, rank)
    return Signals(
        t=last.t,
        frames=len(frames),
        span_s=last.t - frames[0].t,
        alive=last.target.alive,
        exit_reason=last.target.exit_reason,
        gpu=gpu_signals(frames, job.main_pids, rank),
        job=job,
        host=host_signals(frames, job.job_cpu),
        disk=disk_signals(frames),
        stacks=stack_signals(pool or frames, span, rank),
        sticky_stacks=stack_signals(held_pool or pool or frames, span, rank, STICKY_STACK_FACTOR),
    )
