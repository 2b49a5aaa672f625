"""The PCIe collector: each watched GPU's host link, its traffic and its retries, per tick.

Traffic, averaged over exactly the tick:
- from GPM (Hopper and newer): ``PCIE_RX_PER_SEC`` / ``PCIE_TX_PER_SEC`` in MiB/s;
- else from NVML's cumulative byte counters (field ids 197/198, "Value can be wrapped", nvml.h),
  but only where the delta cannot be ambiguous. On the H200 (driver 580) those counters are
  32-bit (value type 1): 2^32 bytes pass in 68 ms at Gen5 x16, and the real capture
  (tests/data/nvml/h200_capture_2026-12-02.json) shows a pinned copy at ~56 GiB/s wrapping them
  about 7 times per 0.5 s tick, so the delta modulo 2^32 said ~7.5 GiB/s. A counter that can
  wrap more than once per tick at the link's speed gives an Unsupported, not a guess.
``nvmlDeviceGetPcieThroughput`` is never called: it measures a 20 ms window and blocks ~21 ms per
call on an H200 (h200-signatures.md). Directions are from the GPU's side: RX is host->device,
TX device->host.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from gpuwatch.collectors.gpm import FIRST_WINDOW as GPM_FIRST
from gpuwatch.collectors.nvml_collector import GPM_REUSE, NvmlCollector
from gpuwatch.collectors.nvml_session import (
    Field,
    GpuLost,
    counter_delta,
    describe,
    wrap_modulus,
)
from gpuwatch.model.pcie import REPLAYS_HELD, PcieSample
from gpuwatch.model.values import Unsupported

FI_TX_BYTES = 197  # NVML_FI_DEV_PCIE_COUNT_TX_BYTES
FI_RX_BYTES = 198  # NVML_FI_DEV_PCIE_COUNT_RX_BYTES
MIB = 2**20
FIRST_WINDOW = "PCIe traffic: first window (needs two reads of the counters)"

GEN3_LANE_BPS = 985e6
"""Bytes/s per lane and direction of PCIe Gen3 (DCGM docs); each later generation doubles it
(Gen4/5 keep 128b/130b encoding; Gen6's FLIT mode is close enough to another doubling)."""
OLD_LANE_BPS = {1: 250e6, 2: 500e6}
"""Gen1/Gen2 per lane and direction after 8b/10b encoding (2.5 and 5 GT/s)."""

RELAXED_REPLAYS_EVERY = 2
"""While the stack pace is relaxed (gpuwatch/pace.py), the replay counter is read every this many
ticks, and the ticks between carry no count (REPLAYS_HELD): the next read's delta holds them, so
no replay goes uncounted (the Prometheus total and the report's sum stay exact), and the diagnosis
takes its rate over the ticks that read the counter (diagnosis/gpu_signals.py), so the rate stays
exact too. nvmlDeviceGetPcieReplayCounter costs 0.31-0.47 ms of CPU a call on the H200
(bench/results/2026-12-04-h200/run27, run34), the PCIe collector's whole cost but its GPM share:
~0.17 ms a relaxed tick less. Replayed on the H200 recordings (tests/test_relaxed_replays_replay.py):
no stage, confidence, sentence or remedy changes; a window with one counted row has no rate to give
(once, on an exited job's last tick, an information line of the evidence is left out)."""


RESET_FACTOR = 2.0
"""A counter delta above this many times the link's capacity is a counter reset (driver reload),
not traffic: header overhead and timestamp jitter stay far below 2x."""


def lane_bps(gen: int) -> float:
    """One lane's capacity per direction, bytes/s."""
    return OLD_LANE_BPS[gen] if gen in OLD_LANE_BPS else GEN3_LANE_BPS * 2 ** (gen - 3)


@dataclass
class _LinkState:
    static: dict[str, Any] = dc_field(default_factory=dict)
    counters: dict[int, Field | Unsupported] | None = None
    replay: int | None = None
    replay_skipped: int = 0
    """Ticks since the replay counter was last read (relaxed pace)."""


class PcieCollector(NvmlCollector):
    field = "pcie"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: dict[int, _LinkState] = {}
        self._relaxed = False

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """The stack pace (gpuwatch/pace.py), set after every verdict: below full, the job has been
        steadily GPU-bound, and the replay counter is read every RELAXED_REPLAYS_EVERY ticks."""
        self._relaxed = main < 1.0

    def sample(self) -> tuple[PcieSample, ...] | Unsupported:
        got = self.selection()
        if isinstance(got, Unsupported):
            return got
        pids, sel = got
        t = self.clock()
        return tuple(self._one(i, t) for i, _ in sel)

    def _one(self, i: int, t: float) -> PcieSample:
        st = self._state.setdefault(i, _LinkState())
        lost = self.session.lost(i)
        if lost is None:
            try:
                return self._read(i, t, st)
            except GpuLost as e:
                lost = str(e)
        u = Unsupported(lost)
        return PcieSample(t=t, index=i, gen_current=u, gen_max=u, width_current=u, width_max=u,
                          rx_bps=u, tx_bps=u, capacity_bps=u, replay_delta=u)

    def _read(self, i: int, t: float, st: _LinkState) -> PcieSample:
        for key, what, fn in (("gen_max", "max link generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
                              ("width_max", "max link width", "nvmlDeviceGetMaxPcieLinkWidth")):
            if key not in st.static:  # the most this GPU in this slot can do: read once
                st.static[key] = self._get(i, what, fn)
        gen_max, width_max = st.static["gen_max"], st.static["width_max"]
        if isinstance(gen_max, Unsupported) or isinstance(width_max, Unsupported):
            capacity: Any = gen_max if isinstance(gen_max, Unsupported) else width_max
        else:
            capacity = lane_bps(int(gen_max)) * int(width_max)
        rx, tx = self._rates(i, st, capacity)
        return PcieSample(
            t=t, index=i,
            gen_current=self.slowly(i, "gen", lambda: self._get(i, "link generation", "nvmlDeviceGetCurrPcieLinkGeneration")),
            gen_max=gen_max,
            width_current=self.slowly(i, "width", lambda: self._get(i, "link width", "nvmlDeviceGetCurrPcieLinkWidth")),
            width_max=width_max,
            rx_bps=rx, tx_bps=tx, capacity_bps=capacity,
            replay_delta=self._replays(i, st),
        )

    def _get(self, i: int, what: str, fn: str) -> Any:
        nv = self.session.nvml
        try:
            return int(self.session.call(i, fn))
        except nv.NVMLError as e:
            return Unsupported(describe(e, f"PCIe {what}"))

    def _rates(self, i: int, st: _LinkState, capacity: Any) -> tuple[Any, Any]:
        if self._gpm.supported(i) is True:
            return self._gpm_rates(i)
        cur = self.session.read_fields(i, [FI_RX_BYTES, FI_TX_BYTES], "PCIe byte counters")
        prev, st.counters = st.counters, (None if isinstance(cur, Unsupported) else cur)
        if isinstance(cur, Unsupported):
            return cur, cur
        if prev is None:
            first = Unsupported(FIRST_WINDOW)
            return first, first
        return (self._rate(prev.get(FI_RX_BYTES), cur.get(FI_RX_BYTES), capacity, "RX"),
                self._rate(prev.get(FI_TX_BYTES), cur.get(FI_TX_BYTES), capacity, "TX"))

    def _gpm_rates(self, i: int) -> tuple[Any, Any]:
        got = self._gpm.read(i, self.field, GPM_REUSE * self.interval)  # the GPU collector's window, mostly
        if isinstance(got, Unsupported):
            u = Unsupported(FIRST_WINDOW) if got.reason == GPM_FIRST else Unsupported(f"PCIe traffic: {got.reason}")
            return u, u
        _, vals = got
        rx, tx = vals["pcie_rx_mibs"], vals["pcie_tx_mibs"]
        return (rx if isinstance(rx, Unsupported) else rx * MIB,
                tx if isinstance(tx, Unsupported) else tx * MIB)

    @staticmethod
    def _rate(old: Any, new: Any, capacity: Any, what: str) -> float | Unsupported:
        if isinstance(new, Unsupported):
            return new
        if not isinstance(old, Field) or not isinstance(new, Field):
            return Unsupported(f"PCIe {what}: no previous counter value")
        d = counter_delta(old, new)
        if isinstance(d, Unsupported):
            return Unsupported(f"PCIe {what}: {d.reason}")
        modulus = wrap_modulus(new.vtype)
        if modulus < 2**64 and (isinstance(capacity, Unsupported) or capacity * d[1] >= modulus):
            bits = modulus.bit_length() - 1
            every = "" if isinstance(capacity, Unsupported) else f" every {modulus / capacity * 1e3:.0f} ms"
            return Unsupported(
                f"PCIe {what}: NVML's byte counter is {bits}-bit on this GPU and wraps{every} at full link "
                f"speed, so a {d[1]:.2f} s delta cannot tell how often it wrapped; GPM (Hopper or newer) "
                "measures the rate exactly")
        bps = d[0] / d[1]
        if not isinstance(capacity, Unsupported) and bps > RESET_FACTOR * capacity:
            return Unsupported(f"PCIe {what}: the byte counter was reset (driver reload?)")
        return bps

    def _replays(self, i: int, st: _LinkState) -> int | Unsupported:
        if self._relaxed and st.replay is not None and st.replay_skipped < RELAXED_REPLAYS_EVERY - 1:
            st.replay_skipped += 1
            return REPLAYS_HELD
        st.replay_skipped = 0
        n = self._get(i, "replay counter", "nvmlDeviceGetPcieReplayCounter")
        prev, st.replay = st.replay, (None if isinstance(n, Unsupported) else n)
        if isinstance(n, Unsupported):
            return n
        if prev is None:
            return Unsupported("PCIe replays: first window")
        return (n - prev) % 2**32  # an unsigned int counter (nvml.h): wraps at 2^32
