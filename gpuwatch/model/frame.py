"""A frame: the latest sample of every collector at one tick."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.disk import DiskSample
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.host import HostSample
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.procs import ProcsSample
from gpuwatch.model.stacks import StackSample
from gpuwatch.model.values import Maybe


@dataclass(frozen=True, slots=True)
class TargetInfo:
    pid: int
    cmdline: str
    alive: bool
    exit_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Frame:
    seq: int
    t: float
    """Monotonic seconds on the watching host."""
    wall: float
    """Unix time of the tick."""
    interval: float
    target: TargetInfo
    gpus: Maybe[tuple[GpuSample, ...]]
    pcie: Maybe[tuple[PcieSample, ...]]
    disk: Maybe[DiskSample]
    procs: Maybe[ProcsSample]
    host: Maybe[HostSample]
    stacks: Maybe[StackSample]
