"""What the host collector reads: CPU, memory, pressure, cgroup quota, other CPU consumers."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.values import Maybe, Unsupported

NO_CPU_QUOTA = Unsupported("no CPU quota on the job's cgroup or its parents")
"""``quota_cores`` when no cgroup above the job sets a CPU quota: a fact, not a reading that
failed (the report does not list it under "Not checked")."""


@dataclass(frozen=True, slots=True)
class Psi:
    """Pressure stall information, ``some``/``full`` avg10 in percent."""

    cpu_some: float
    io_some: float
    io_full: float
    mem_some: float
    mem_full: float


@dataclass(frozen=True, slots=True)
class CgroupCpu:
    """CPU quota of the job's cgroup and how much of the tick it was throttled."""

    version: int
    quota_cores: Maybe[float]
    throttled_frac: float
    nr_throttled_delta: int


@dataclass(frozen=True, slots=True)
class OtherProc:
    pid: int
    name: str
    cpu_pct: float


@dataclass(frozen=True, slots=True)
class HostSample:
    t: float
    cpu_count: int
    cpu_pct: float
    steal_pct: Maybe[float]
    iowait_pct: Maybe[float]
    load1: float
    mem_total: int
    mem_available: int
    swap_used: int
    swap_in_bps: float
    swap_out_bps: float
    psi: Maybe[Psi]
    cgroup: Maybe[CgroupCpu]
    top_others: tuple[OtherProc, ...]
    """The busiest processes outside the job's tree (CPU contention suspects)."""
