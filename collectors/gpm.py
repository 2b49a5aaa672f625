"""GPM (GPU Performance Monitoring, Hopper and newer): metrics averaged over exactly one tick.

One window per NVML session, shared by the GPU and PCIe collectors: each tick's first reader takes
the GPM sample that closes the window, and a reader within ``reuse_s`` of it gets the same
result. A GPM sample is the costliest NVML call gpuwatch makes (nvmlGpmSampleGet snapshots the
counters of every SM), and when each collector kept its own window, two were taken per tick and
GPU; the metrics both need come out of one ``nvmlGpmMetricsGet``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuwatch.collectors.nvml_session import GpuLost, NvmlSession, describe
from gpuwatch.model.values import Unsupported

METRICS = (
    (1, "gr_engine"),  # NVML_GPM_METRIC_GRAPHICS_UTIL
    (2, "sm_active"),  # SM_UTIL
    (3, "sm_occupancy"),  # SM_OCCUPANCY
    (5, "tensor"),  # ANY_TENSOR_UTIL
    (10, "dram_bw"),  # DRAM_BW_UTIL
    (20, "pcie_tx_mibs"),  # PCIE_TX_PER_SEC
    (21, "pcie_rx_mibs"),  # PCIE_RX_PER_SEC
)
"""(NVML_GPM_METRIC_* id, our name): every metric gpuwatch reads, in one nvmlGpmMetricsGet call."""

MIN_WINDOW_S = 0.1
"""nvml.h: the interval between two nvmlGpmSampleGet() calls "should be greater than 100ms"."""

FIRST_WINDOW = "GPM: first window"

Result = tuple[float, dict[str, float | Unsupported]] | Unsupported
"""``(window seconds, {name: value})``, or why there is none."""


@dataclass
class _GpmState:
    support: Unsupported | bool | None = None
    bufs: list[Any] | None = None
    prev: int | None = None
    prev_t: float = 0.0
    get: Any = None
    last: Result | None = None
    """The latest sample's result, handed to other readers within their reuse horizon."""
    served: set[str] | None = None
    """The readers that already had ``last``."""


class GpmWindow:
    """GPM metrics over exactly the time since the previous sample, per GPU.

    Two GPM sample buffers per GPU are ping-ponged: each sample closes the window the previous one
    opened and opens the next.
    """

    def __init__(self, session: NvmlSession, clock: Callable[[], float]) -> None:
        self.session = session
        self.clock = clock
        self._gpus: dict[int, _GpmState] = {}
        self._users = 0
        self.hold_s = 0.0
        """While above 0 (the relaxed pace, set by the GPU collector), every reader gets the latest
        result again until its sample is this old: GPM windows then span several ticks, and each
        tick between shows the window before (collectors/gpu.py, RELAXED_GPM_EVERY)."""

    @classmethod
    def shared(cls, session: NvmlSession, clock: Callable[[], float]) -> GpmWindow:
        """The session's window (created by its first user); pair with :meth:`release`."""
        with session.lock:
            window = session.gpm
            if window is None:
                window = session.gpm = cls(session, clock)
            window._users += 1
            return window

    def supported(self, index: int) -> Unsupported | bool:
        """True on a GPU with GPM, else the reason (asked once per GPU). Raises GpuLost."""
        st = self._gpus.setdefault(index, _GpmState())
        if st.support is None:
            nv = self.session.nvml
            try:
                ok = bool(self.session.call(index, "nvmlGpmQueryDeviceSupport").isSupportedDevice)
                st.support = True if ok else Unsupported("GPM: needs a Hopper or newer GPU")
            except (nv.NVMLError, AttributeError) as e:
                st.support = Unsupported(f"GPM: needs a Hopper or newer GPU and driver R520+ ({e})")
        return st.support

    def read(self, index: int, reader: str = "", reuse_s: float = 0.0) -> Result:
        """The metrics since the previous sample; or, for a ``reader`` that has not had it yet,
        the latest result when its sample is younger than ``reuse_s`` (another collector's read in
        the same tick). A reader gets one result twice only while ``hold_s`` holds it. Raises GpuLost."""
        support = self.supported(index)
        if isinstance(support, Unsupported):
            return support
        with self.session.lock:  # two collectors: one takes the sample, the other reuses it
            st = self._gpus[index]
            now = self.clock()
            if st.last is not None and st.served is not None and (
                    (reader not in st.served and now - st.prev_t < reuse_s)
                    or (now - st.prev_t < self.hold_s and not isinstance(st.last, Unsupported))):
                st.served.add(reader)
                return st.last
            before = (st.prev, st.prev_t)
            result = self._sample(index, st, now)
            if (st.prev, st.prev_t) != before:  # a sample was taken: it is the one to share
                st.last, st.served = result, {reader}
            return result

    def _sample(self, index: int, st: _GpmState, now: float) -> Result:
        nv = self.session.nvml
        try:
            if st.bufs is None:
                st.bufs = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
                st.get = nv.c_nvmlGpmMetricsGet_t()
            if st.prev is not None and now - st.prev_t < MIN_WINDOW_S:
                return Unsupported("GPM: less than 100 ms since the last GPM sample")
            cur = 0 if st.prev is None else 1 - st.prev
            self.session.call(index, "nvmlGpmSampleGet", st.bufs[cur])
            prev, prev_t = st.prev, st.prev_t
            st.prev, st.prev_t = cur, now  # ping-pong: this sample opens the next window
            if prev is None:
                return Unsupported(FIRST_WINDOW)
            mg = st.get
            mg.version = nv.NVML_GPM_METRICS_GET_VERSION
            mg.numMetrics = len(METRICS)
            mg.sample1, mg.sample2 = st.bufs[prev], st.bufs[cur]
            for k, (mid, _) in enumerate(METRICS):
                mg.metrics[k].metricId = mid
            nv.nvmlGpmMetricsGet(mg)
        except nv.NVMLError_GpuIsLost:
            raise GpuLost(self.session.mark_lost(index)) from None
        except nv.NVMLError as e:
            return Unsupported(describe(e, "GPM"))
        out: dict[str, float | Unsupported] = {}
        for k, (_, name) in enumerate(METRICS):
            m = mg.metrics[k]
            ok = m.nvmlReturn == nv.NVML_SUCCESS
            out[name] = float(m.value) if ok else Unsupported(describe(nv.NVMLError(m.nvmlReturn), f"GPM {name}"))
        return now - prev_t, out

    def release(self) -> None:
        """One user less; the last frees the sample buffers (before the session releases NVML).
        Nothing is freed while a call under way holds the lock (NvmlSession.lock_for_release)."""
        if not self.session.lock_for_release():
            return
        try:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            nv = self.session.nvml
            for st in self._gpus.values():
                for buf in st.bufs or ():
                    try:
                        nv.nvmlGpmSampleFree(buf)
                    except Exception:  # noqa: BLE001 - freeing must never mask the real exit
                        pass
                st.bufs, st.prev, st.last = None, None, None
        finally:
            self.session.lock.release()
