"""What the PCIe collector reads for one GPU's host link over one tick."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.values import Maybe, Unsupported

REPLAYS_HELD = Unsupported("PCIe replays: read every second tick while the job is steadily GPU-bound; "
                           "the next reading counts these")
"""``replay_delta`` of a tick the relaxed pace did not read the counter on (collectors/pcie.py,
RELAXED_REPLAYS_EVERY): nothing was missed, the next read's count holds it (the report does not
list it under "Not checked")."""


@dataclass(frozen=True, slots=True)
class PcieSample:
    t: float
    index: int
    gen_current: Maybe[int]
    gen_max: Maybe[int]
    width_current: Maybe[int]
    width_max: Maybe[int]
    rx_bps: Maybe[float]
    """Host-to-device bytes per second (headers included): GPM's PCIe RX over the tick on Hopper and
    newer, else NVML's cumulative byte counter where it cannot wrap more than once in a tick (it is
    32-bit on the H200's driver and wraps ~7 times a second under a pinned copy)."""
    tx_bps: Maybe[float]
    """Device-to-host bytes per second."""
    capacity_bps: Maybe[float]
    """One direction's capacity of the *maximum* link (gen x width), bytes per second."""
    replay_delta: Maybe[int]
    """PCIe replays (link retries) since the previous read of the counter: the previous tick, or
    two back while the pace is relaxed (the tick between is unsupported: collectors/pcie.py)."""
