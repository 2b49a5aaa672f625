"""A run's headline figures: what ``gpuwatch compare`` sets side by side, and what the JSON report
carries so that two reports can be compared without their recordings.

Means are over the ticks that had a reading (``Mean.ticks`` says how many), so an unreadable signal
reads "not measured", never 0. Computed by :mod:`gpuwatch.report.measure`.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER, LOWER, NEUTRAL = 1, -1, 0
"""Which way a measure moves when the job gets better."""

MEASURES = (
    ("GPU", "gpu_busy", "GPU busy (NVML utilization)", "%", HIGHER),
    ("GPU", "sm_active", "SM active (GPM)", "%", HIGHER),
    ("input", "data_wait", "main thread waiting for data", "%", LOWER),
    ("input", "input", "main thread on its input (waiting, loading or preparing batches)", "%", LOWER),
    ("input", "worker_cpu", "DataLoader workers' CPU, all of them summed", "% of a core", NEUTRAL),
    ("input", "workers", "DataLoader workers", "workers", NEUTRAL),
    ("PCIe", "pcie_rx", "host to device", "B/s", NEUTRAL),
    ("PCIe", "pcie_tx", "device to host", "B/s", NEUTRAL),
    ("host", "host_cpu", "host CPU busy", "%", NEUTRAL),
    ("host", "cpu_pressure", "CPU pressure (some, avg10)", "%", LOWER),
    ("host", "io_pressure", "I/O pressure (some, avg10)", "%", LOWER),
)
"""(group, Figures field, label, unit, better) of each mean: what compare and the HTML report show."""


@dataclass(frozen=True, slots=True)
class Mean:
    value: float | None
    """Mean over the ticks with a reading; None when no tick had one."""
    ticks: int
    """Ticks with a reading."""


@dataclass(frozen=True, slots=True)
class SpeedupLeft:
    stage: str
    factor: float | None
    """Whole-run speed-up (x times) if this stage were fixed: the report's remedy estimate, or, for a
    stage without one, the most removing its time could give (``upper_bound``); None in reports
    written before the bound."""
    upper_bound: bool = False
    """True when ``factor`` is Amdahl's ceiling ``1 / (1 - share)`` of a stage the verdicts did not
    estimate, not an estimate."""
    floor: bool = False
    """True when ``factor`` is a remedy's floor ("or more": Remedy.speedup_floor)."""


@dataclass(frozen=True, slots=True)
class Figures:
    ticks: int
    covered_s: float
    gpus: tuple[str, ...]
    """Names of the job's GPUs, e.g. ("NVIDIA H200",); empty without NVML."""
    cmdline: str
    stage_shares: tuple[tuple[str, float], ...]
    """(stage, share of the ticks 0..1), largest first."""
    gpu_busy: Mean
    sm_active: Mean
    data_wait: Mean
    worker_cpu: Mean
    workers: Mean
    """DataLoader worker processes."""
    pcie_rx: Mean
    pcie_tx: Mean
    host_cpu: Mean
    cpu_pressure: Mean
    io_pressure: Mean
    stall_share: float
    """Share of the kept ticks whose verdict carried a periodic GPU stall."""
    stall_period_s: float | None
    """Median period of those stalls."""
    speedup_left: SpeedupLeft | None
    """None when no remedy came with an estimate (a healthy run, or too little evidence)."""
    input: Mean = Mean(None, 0)
    """Main thread on its input (series.Tick.input); not measured in reports written before it."""

    @property
    def stall_measured(self) -> float | None:
        """``stall_share``, or None where no tick read the GPU's utilization (stalls are found in
        its 200 ms samples): no stall seen is then "not measured", never 0 %."""
        return self.stall_share if self.gpu_busy.ticks else None

