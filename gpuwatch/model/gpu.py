"""What the GPU collector reads from NVML (and GPM on Hopper+) for one GPU over one tick."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.values import Maybe


@dataclass(frozen=True, slots=True)
class GpmMetrics:
    """GPM metrics averaged over exactly one tick (Hopper and newer). Percent, except PCIe in MiB/s."""

    window_s: float
    gr_engine: Maybe[float]
    sm_active: Maybe[float]
    sm_occupancy: Maybe[float]
    tensor: Maybe[float]
    dram_bw: Maybe[float]
    pcie_rx_mibs: Maybe[float]
    pcie_tx_mibs: Maybe[float]


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process NVML lists on this GPU."""

    pid: int
    """PID as NVML reports it (a host PID)."""
    local_pid: int | None
    """The same process in our PID namespace, when it could be mapped (NSpid)."""
    name: str
    used_memory: Maybe[int]
    sm_util: Maybe[float]
    """Per-process SM utilization (%) over the samples new since the last tick."""
    is_target: bool
    """True when the process belongs to the watched job's process tree."""
    user: str = ""
    """Its owner's user name ("" when unknown: not in our PID namespace, or unreadable)."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU over one tick."""

    t: float
    index: int
    uuid: str
    name: str
    used_by_target: bool
    util_gpu: Maybe[float]
    """Mean of the driver's utilization samples of this tick (%). Counts copy-engine time too. On a
    tick that skipped the buffer (relaxed pace, collectors/gpu.py RELAXED_BUFFER_EVERY): the
    driver's latest sample period (nvmlDeviceGetUtilizationRates)."""
    util_mem: Maybe[float]
    util_trace: tuple[tuple[float, float], ...]
    """The driver's 200 ms utilization samples new since the last buffer read: (unix seconds,
    percent). Empty on a tick that skipped the buffer; the next read carries its samples."""
    mem_used: Maybe[int]
    """Bytes in use without the driver's reservation (NVML memory info v2), as nvidia-smi shows."""
    mem_total: Maybe[int]
    temp_c: Maybe[float]
    power_w: Maybe[float]
    power_limit_w: Maybe[float]
    sm_clock_mhz: Maybe[float]
    sm_clock_max_mhz: Maybe[float]
    mem_clock_mhz: Maybe[float]
    mem_clock_max_mhz: Maybe[float]
    clock_reasons: Maybe[int]
    """Clock-event (throttle) reason bitmask, NVML's nvmlClocksEventReason* bits."""
    throttle: Maybe[tuple[tuple[str, float], ...]]
    """Fraction of the tick spent throttled, per reason, from NVML's cumulative ns counters."""
    gpm: Maybe[GpmMetrics]
    processes: tuple[GpuProcess, ...]
    lost: str | None = None
    """Set when the GPU fell off the bus or stopped answering: the reason."""
