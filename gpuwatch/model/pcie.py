"""What the PCIe collector reads for one GPU's host link over one tick."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.values import Maybe


@dataclass(frozen=True, slots=True)
class PcieSample:
    t: float
    index: int
    gen_current: Maybe[int]
    gen_max: Maybe[int]
    width_current: Maybe[int]
    width_max: Maybe[int]
    rx_bps: Maybe[float]
    """Host-to-device bytes per second, from the cumulative NVML field counter (headers included)."""
    tx_bps: Maybe[float]
    """Device-to-host bytes per second."""
    capacity_bps: Maybe[float]
    """One direction's capacity of the *maximum* link (gen x width), bytes per second."""
    replay_delta: Maybe[int]
    """PCIe replays (link retries) since the previous tick."""
