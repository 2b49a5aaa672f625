"""The GPU collector: NVML (all GPUs) and GPM (Hopper and newer), one GpuSample per watched GPU.

Per tick and GPU it reads the driver's utilization sample buffers since a cursor (a true average
over the tick instead of one instantaneous reading, signals.md §1.2), memory, temperature, power,
clocks, clock-event reasons, throttle time per reason (cumulative ns counters), per-process SM
utilization since a cursor, and GPM metrics over exactly the tick. Most of these calls cost
5-50 us on an H200 (h200-signatures.md). ``nvmlDeviceGetPcieThroughput`` is never called: it
blocks ~21 ms per call there.

Every read of a sample buffer (GPU utilization, memory utilization, per-process utilization)
costs ~2.3 ms of CPU on the H200, in the driver, whatever the buffer or cursor
(bench/results/2026-12-04-h200/run27): the GPU collector's largest costs. They are cursor reads, so
reading them less often loses no sample, only time resolution. Memory and per-process utilization
are read every tick only where the diagnosis needs them then (see ``_util_mem`` and
``_processes``), else every SLOW_TTL_S, or every RELAXED_SLOW_S while the stack pace is relaxed;
GPU utilization every tick, or every second tick while relaxed (see ``_util_gpu``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import psutil

from gpuwatch.collectors.nvml_buffers import NvmlBuffers
from gpuwatch.collectors.nvml_collector import GPM_REUSE, SLOW_TTL_S, NvmlCollector
from gpuwatch.collectors.nvml_session import (
    Field,
    GpuLost,
    counter_delta,
    describe,
)
from gpuwatch.diagnosis.thresholds import BAD_REASON_BITS
from gpuwatch.model.gpu import GpmMetrics, GpuProcess, GpuSample
from gpuwatch.model.values import Unsupported
from gpuwatch.pace import RELAX_AFTER, busy_holds
from gpuwatch.untrusted import clean

THROTTLE_FIELDS = (
    (74, "sw_power_cap"),  # NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP
    (76, "sync_boost"),  # ..._SYNC_BOOST
    (269, "sw_thermal"),  # ..._SW_THERM_SLOWDOWN
    (270, "hw_thermal"),  # ..._HW_THERM_SLOWDOWN
    (271, "hw_power_brake"),  # ..._HW_POWER_BRAKE_SLOWDOWN
)
"""Cumulative nanoseconds spent throttled per reason (nvml.h field ids)."""

THROTTLE_FIRST = Unsupported("throttle: first window (needs two reads of the counters)")

THROTTLE_SLACK = 1.05
"""A fraction above this is a counter reset, not throttling: 5 % allows for the driver refreshing
the counter and its timestamp a little apart."""

IDLE_AFTER_PERIODS = 2
"""A busy GPU adds a utilization sample every driver period; when none came for this many periods
the driver has stopped sampling because the GPU is idle (signals.md §1.2), so 0 % is real. Sooner,
the tick was just shorter than the driver's period and nothing is known yet."""

RELAXED_BUFFER_EVERY = 2
"""While the stack pace is relaxed (gpuwatch/pace.py: GPU-bound at a steady confidence for ten
ticks, the GPU as busy as before), the GPU-utilization buffer is read every this many ticks, and
the ticks between take ``nvmlDeviceGetUtilizationRates``: the driver's latest sample period, 0.04
ms of CPU on the H200 against 2.3 ms for the buffer (bench/results/2026-12-04-h200/run27). What
the relaxed pace watches for is busy falling, and a fall that lasts shows in the latest period as
soon as in the tick's mean. The next buffer read carries every sample since the last one, so the
200 ms trace (diagnosis/stalls.py) loses none, only shows them a tick later.

Checked by replaying the 66 H200 recordings with GPU frames (2,444 ticks), each skipped tick's
busy share taken as its last 200 ms sample (the shortest period nvml.h allows is 1/6 s; a 1 s
period would be the tick's mean itself), with the skipped ticks at either phase (tests/test_relaxed_util_replay.py):
no stage, confidence or stall changed, and every switch went back to full pace on the same tick.
Two kinds of tick differ in the pace alone: a 200 ms dip deeper than its tick's mean sent it to
full for a tick (twice in 79 relaxed ticks of the benchmark job), and a one-tick dip on a skipped
tick kept it relaxed through it (once, the tokenize job). Every third tick held two ticks' samples
back, and the tokenize job's stall, seen on its last busy tick, went unseen.

A latest period that looks like busy falling is checked against the buffer on the same tick
(``_util_gpu``, ``looks_like_a_fall``): the pace goes back to full on the tick's mean, as it would
with the buffer read every tick, not on one period's reading."""

CONFIRM_TICKS = RELAX_AFTER
"""How many of a GPU's latest busy readings (the ticks' means and the periods that did not look like
a fall) a skipped tick's period is compared with: the ticks the pace's own check looks back over
(gpuwatch/pace.py, stack_pace)."""

RELAXED_GPM_EVERY = 2
"""While the stack pace is relaxed, a GPM sample is taken every this many ticks, and the ticks
between show the last window's metrics again (collectors/gpm.py, GpmWindow.hold_s); the PCIe
collector's traffic, read from the same window, follows. The next window spans the ticks since, so
no time goes unmeasured, only at a coarser step. A GPM tick costs ~1.8 ms of CPU on the H200:
nvmlGpmSampleGet 0.2 ms and nvmlGpmMetricsGet 1.6 ms (bench/results/2026-12-04-h200/run35), so
~0.9 ms a relaxed tick less. While relaxed the GPU stays as busy as it was; a bottleneck that
starts shows first in its busy time (gpuwatch/pace.py), which is read every tick, and the full pace,
a GPM sample every tick, is back on the tick after. Replayed on the H200 recordings with the held
ticks and the two-tick windows rewritten as the collector now reads them
(tests/test_relaxed_gpm_replay.py): see there what changes."""

RELAXED_SLOW_S = 10.0
"""While the stack pace is relaxed, memory-controller utilization beside GPM and per-process
utilization with the job alone on its GPUs are read every this many seconds instead of every
SLOW_TTL_S. Neither feeds the verdict then: the diagnosis reads memory utilization only on a GPU
without GPM (which reads it every tick), and per-process utilization only for another tenant's
share, which is read every tick once one is there (the job's own share alone gives a tenant share
of 0 whatever its value). The TUI and the exporter show a 10 s mean instead of a 5 s one. Each
read is a sample-buffer read, ~2.2-2.3 ms of CPU on the H200 (bench/results/2026-12-04-h200/run32):
~0.45 ms a relaxed tick less for the two. Replayed on the H200 recordings with both held as the
collector now reads them (tests/test_relaxed_slow_reads_replay.py): no tick's verdict or pace changes."""

RELAXED_PROCESSES_S = RELAXED_SLOW_S
"""While the stack pace is relaxed, each GPU's compute-process list (nvmlDeviceGetComputeRunningProcesses,
0.24-0.25 ms of CPU a call on the H200, bench/results/2026-12-04-h200/run27, run34) is read again
only when the GPU's used memory, read every tick anyway, has changed since the list was read, or
every this many seconds (NvmlSession.procs_hold_s). A process that starts on the GPU creates a
context and allocates memory, and one that leaves frees it, so a new tenant shows on the same tick
as before (not so where the GPU is a NUMA node, whose lists are read every tick:
NvmlSession._is_numa_node). On the 61 H200 recordings (2,489 GPU samples), the list or a process's memory changed
on 124 ticks, each of them with a change of the device's used memory; replayed with the lists
held as the collector now holds them (tests/test_relaxed_gpu_processes_replay.py), no verdict
changes. ~0.2 ms a relaxed tick less."""

RELAXED_THROTTLE_S = RELAXED_SLOW_S
"""While the stack pace is relaxed, the throttle counters (nvmlDeviceGetFieldValues of five fields,
1.1-2.3 ms of CPU a call on the H200: bench/results/2026-12-04-h200/run29, run34, run35) are read
every this many seconds instead of every SLOW_TTL_S, unless a tick's clock-event reasons (read every
tick) have shown a reason the diagnosis counts against the GPU (thermal, HW slowdown, power brake:
BAD_REASON_BITS) since the last read: then every SLOW_TTL_S, as at full pace. The counters are
cumulative, so the next read covers the whole time since the last; only the step is coarser. The
SW power cap, at which a saturated H200 sits, is not such a reason: its share shows a 10 s mean.
~0.1-0.23 ms a relaxed tick less. Replayed on the H200 recordings with the shares held as the
collector now holds them (tests/test_relaxed_throttle_replay.py): no verdict changes."""

RATES_MISSING = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound")
"""nvmlDeviceGetUtilizationRates answers that mean it will never answer on this GPU or driver
(MIG instances, for one, have no utilization counters)."""



def looks_like_a_fall(latest: float, recent: deque[float] | list[float]) -> bool:
    """Whether one period's busy reading (%) would send the pace back to full on its own, by the
    rule gpuwatch/pace.py applies to the frame (``busy_holds``: under saturation, and under
    BUSY_STARVED or more than STEADY_DROP under the lowest of the recent readings). One period is 1/6 s to 1 s (nvml.h),
    and a period that catches the gap between two steps of a busy job reads far under the tick's
    mean: on an H100 (bench/results/2026-12-05-h100/run39), periods of 37-66 % stood on ticks whose
    200 ms samples averaged 84-90 %, six times in 110 relaxed ticks, each sending the pace to full
    for a tick (two to four py-spy dumps instead of one every three ticks). Such a tick reads the
    buffer instead, and its mean decides."""
    return not busy_holds(latest / 100, [r / 100 for r in recent])


@dataclass
class _GpuState:
    """What one GPU's reads carry from tick to tick."""

    cursors: dict[int, int] = dc_field(default_factory=dict)
    """Sampling type -> newest driver timestamp (us) already consumed."""
    seen: set[int] = dc_field(default_factory=set)
    """Sampling types whose buffer was read successfully at least once."""
    period_s: dict[int, float] = dc_field(default_factory=dict)
    """Sampling type -> the driver's sample spacing, as observed (200 ms on an H200)."""
    last_new: dict[int, float] = dc_field(default_factory=dict)
    """Sampling type -> our clock when the buffer last gave new samples."""
    buffer_skipped: int = 0
    """Ticks since the last GPU-utilization buffer read (they took nvmlDeviceGetUtilizationRates)."""
    rates_work: bool = True
    """nvmlDeviceGetUtilizationRates answered (False: the buffer every tick)."""
    recent: deque[float] = dc_field(default_factory=lambda: deque(maxlen=CONFIRM_TICKS))
    """The latest busy readings (%) this collector gave, for ``looks_like_a_fall``."""
    proc_cursor: int = 0
    proc_seen: bool = False
    proc_util: tuple[float, dict[int, float] | Unsupported] | None = None
    """(our clock, result) of the last per-process utilization read."""
    throttle: dict[int, Field | Unsupported] | None = None
    throttle_out: tuple[float, Any] | None = None
    """(our clock, result) of the last throttle read that had a previous read to compare with."""
    bad_reasons: bool = False
    """A clock-event reason in BAD_REASON_BITS showed since the last throttle read."""
    static: dict[str, Any] = dc_field(default_factory=dict)
    job_listed: set[int] = dc_field(default_factory=set)
    """Host PIDs of the job's processes in the GPU's process list at the last read. One that is
    still listed stays the job's when the job's process tree no longer holds it: the driver lists a
    process for a moment after it exited (the H200 field job's last tick showed its own exited main
    process as another tenant). A listed PID cannot be reused, so this never takes in a stranger."""


class GpuCollector(NvmlCollector):
    field = "gpus"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: dict[int, _GpuState] = {}
        self._names: dict[int, tuple[str, str]] = {}
        self._temp_v = True
        self._bufs: NvmlBuffers | None = None
        self._relaxed = False
        self._pace_reads_all = True
        """No GPU is the job's this tick: the pace reads them all (gpuwatch/pace.py, _busy)."""

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """The stack pace (gpuwatch/pace.py), set after every verdict: below full, the job has been
        steadily GPU-bound, and the GPU-utilization buffer is read less often (RELAXED_BUFFER_EVERY),
        GPM samples too (RELAXED_GPM_EVERY), memory and per-process utilization every RELAXED_SLOW_S,
        the throttle counters every RELAXED_THROTTLE_S while no bad clock-event reason shows,
        the compute-process lists when the GPU's used memory changes (RELAXED_PROCESSES_S)."""
        self._relaxed = main < 1.0
        self._gpm.hold_s = (RELAXED_GPM_EVERY - 0.5) * self.interval if self._relaxed else 0.0
        self.session.procs_hold_s = RELAXED_PROCESSES_S if self._relaxed else 0.0

    def _slow_s(self) -> float:
        """How long a slowly read buffer's last reading stands at this pace."""
        return RELAXED_SLOW_S if self._relaxed else SLOW_TTL_S

    # -- one tick ----------------------------------------------------------------------------
    def sample(self) -> tuple[GpuSample, ...] | Unsupported:
        got = self.selection()
        if isinstance(got, Unsupported):
            return got
        pids, sel = got
        t = self.clock()
        ours = set(pids)
        self._pace_reads_all = not any(used for _, used in sel)  # as pace._busy picks the GPUs it reads
        return tuple(self._one(i, used, t, ours) for i, used in sel)

    def _one(self, i: int, used: bool, t: float, ours: set[int]) -> GpuSample:
        st = self._state.setdefault(i, _GpuState())
        lost = self.session.lost(i)
        if lost is None:
            try:
                return self._read(i, used, t, ours, st)
            except GpuLost as e:
                lost = str(e)
        u = Unsupported(lost)
        return GpuSample(
            t=t, index=i, uuid=_str(st.static.get("uuid")), name=_str(st.static.get("name")),
            used_by_target=used, util_gpu=u, util_mem=u, util_trace=(), mem_used=u, mem_total=u,
            temp_c=u, power_w=u, power_limit_w=u, sm_clock_mhz=u, sm_clock_max_mhz=u,
            mem_clock_mhz=u, mem_clock_max_mhz=u, clock_reasons=u, throttle=u, gpm=u,
            processes=(), lost=lost,
        )

    def _read(self, i: int, used: bool, t: float, ours: set[int], st: _GpuState) -> GpuSample:
        nv = self.session.nvml
        for key, what, fn, args in (
            ("name", "name", "nvmlDeviceGetName", ()),
            ("uuid", "UUID", "nvmlDeviceGetUUID", ()),
            ("sm_max", "max SM clock", "nvmlDeviceGetMaxClockInfo", (nv.NVML_CLOCK_SM,)),
            ("mem_max", "max memory clock", "nvmlDeviceGetMaxClockInfo", (nv.NVML_CLOCK_MEM,)),
        ):
            if key not in st.static:  # constant for the GPU's life: read once
                st.static[key] = self._get(i, what, fn, *args)
        util_gpu, trace = self._util_gpu(i, st, paced=used or self._pace_reads_all)
        util_mem = self._util_mem(i, st, gpm_works=self._gpm.supported(i) is True)
        mem = self._memory(i)
        reasons = self._get(i, "clock-event reasons", "nvmlDeviceGetCurrentClocksEventReasons")
        return GpuSample(
            t=t, index=i, uuid=_str(st.static["uuid"]), name=_str(st.static["name"]),
            used_by_target=used, util_gpu=util_gpu, util_mem=util_mem, util_trace=trace,
            mem_used=mem if isinstance(mem, Unsupported) else int(mem.used),
            mem_total=mem if isinstance(mem, Unsupported) else int(mem.total),
            temp_c=self._temperature(i),
            power_w=_scale(self._get(i, "power", "nvmlDeviceGetPowerUsage"), 1e-3),  # mW
            power_limit_w=_scale(self.slowly(i, "power limit", lambda: self._get(
                i, "power limit", "nvmlDeviceGetEnforcedPowerLimit")), 1e-3),
            sm_clock_mhz=_scale(self._get(i, "SM clock", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM), 1),
            sm_clock_max_mhz=_scale(st.static["sm_max"], 1),
            mem_clock_mhz=_scale(self._get(i, "memory clock", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM), 1),
            mem_clock_max_mhz=_scale(st.static["mem_max"], 1),
            clock_reasons=reasons,
            throttle=self._throttle(i, st, reasons),
            gpm=self._gpm_metrics(i),
            processes=self._processes(i, st, ours),
        )

    def _buffers(self) -> NvmlBuffers:
        """The one-call sample-buffer reader (made on first use: NVML is loaded by then)."""
        if self._bufs is None:
            self._bufs = NvmlBuffers(self.session.nvml)
        return self._bufs

    def _get(self, i: int, what: str, fn: str, *args: Any) -> Any:
        """One NVML getter; any failure but a lost GPU becomes this field's Unsupported."""
        nv = self.session.nvml
        try:
            return self.session.call(i, fn, *args)
        except (nv.NVMLError, nv.NVMLLibraryMismatchError) as e:
            return Unsupported(describe(e, what))

    def _memory(self, i: int) -> Any:
        """Memory as nvidia-smi shows it (NvmlSession.memory: v2, whose ``used`` leaves out the
        driver's reserved memory; on the H200 v1 said 3142 MiB used while nvidia-smi said 2527 MiB
        at the same time, tests/data/h200/, the difference being ~615 MiB reserved)."""
        nv = self.session.nvml
        try:
            return self.session.memory(i)
        except (nv.NVMLError, nv.NVMLLibraryMismatchError) as e:
            return Unsupported(describe(e, "memory"))

    def _temperature(self, i: int) -> float | Unsupported:
        nv = self.session.nvml
        if self._temp_v:  # nvmlDeviceGetTemperature is deprecated in NVML 13; V is its successor
            try:
                return float(self.session.call(i, "nvmlDeviceGetTemperatureV", nv.NVML_TEMPERATURE_GPU))
            except (nv.NVMLError_FunctionNotFound, AttributeError):
                self._temp_v = False  # an older driver or nvidia-ml-py
            except nv.NVMLError as e:
                return Unsupported(describe(e, "temperature"))
        return _scale(self._get(i, "temperature", "nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU), 1)

    def _util_gpu(self, i: int, st: _GpuState, paced: bool = True) -> tuple[Any, tuple[tuple[float, float], ...]]:
        """GPU utilization and its samples from the buffer; while the pace is relaxed, on every
        tick but one in RELAXED_BUFFER_EVERY, the driver's latest period and no samples (they come
        with the next buffer read), unless the period looks like a fall on a GPU the pace reads
        (``paced``: the job's GPUs, or every GPU where the job holds none). Only once the buffer has
        given samples: before that, its answers say whether the GPU ran anything at all."""
        nv = self.session.nvml
        kind = nv.NVML_GPU_UTILIZATION_SAMPLES
        if self._relaxed and st.rates_work and kind in st.cursors and st.buffer_skipped < RELAXED_BUFFER_EVERY - 1:
            try:
                latest = float(self.session.call(i, "nvmlDeviceGetUtilizationRates").gpu)
            except (nv.NVMLError, AttributeError) as e:
                # Not on this GPU or driver: the buffer every tick from now on. Any other error
                # (a timeout, a busy driver) costs this tick's saving only: the buffer is read.
                if type(e).__name__ in RATES_MISSING or isinstance(e, AttributeError):
                    st.rates_work = False
            else:
                if not (paced and looks_like_a_fall(latest, st.recent)):
                    st.buffer_skipped += 1
                    st.recent.append(latest)
                    return latest, ()
                # The buffer says whether the tick's mean fell too; read as after a skipped tick
                # (spanned), its mean is over this tick's own samples.
                st.buffer_skipped += 1
        spanned, st.buffer_skipped = st.buffer_skipped > 0, 0
        util, trace = self._util(i, st, kind, "GPU utilization", spanned)
        if isinstance(util, float):
            st.recent.append(util)
        return util, trace

    def _util(self, i: int, st: _GpuState, kind: int, what: str,
              spanned: bool = False) -> tuple[Any, tuple[tuple[float, float], ...]]:
        """Mean of the driver's utilization samples newer than the cursor, and those samples. After
        skipped ticks (``spanned``) the samples are all returned, the mean is over the last
        interval's: the frame's value covers its own tick."""
        nv = self.session.nvml
        cursor = st.cursors.get(kind, 0)
        try:
            _, samples = self.session.invoke(i, "nvmlDeviceGetSamples", self._buffers().samples, kind, cursor)
        except nv.NVMLError_NotFound:
            # No sample newer than the cursor: the GPU ran nothing (signals.md §1.2). A real 0 %
            # only once the buffer was read before; the cursor stays where it is.
            if kind not in st.seen:
                return Unsupported(f"{what}: the driver's sample buffer is empty (it fills once the GPU runs work)"), ()
            period = st.period_s.get(kind)
            if period is not None and self.clock() - st.last_new.get(kind, 0.0) < IDLE_AFTER_PERIODS * period:
                return Unsupported(f"{what}: no new driver sample yet (it samples every {period * 1e3:.0f} ms)"), ()
            return 0.0, ()
        except nv.NVMLError as e:
            return Unsupported(describe(e, what)), ()
        new = [(ts, float(v)) for ts, v in samples if ts > cursor]
        if cursor == 0:  # first read returns the whole buffer (~20 s): keep one tick of it
            new = self._last_tick(new)
        st.seen.add(kind)
        if not new:
            return 0.0, ()
        new.sort()
        st.cursors[kind] = new[-1][0]
        st.last_new[kind] = self.clock()
        gaps = [b[0] - a[0] for a, b in zip(new, new[1:]) if b[0] > a[0]]
        if gaps:
            st.period_s[kind] = min(gaps) / 1e6
        tick = self._last_tick(new) if spanned else new
        return sum(v for _, v in tick) / len(tick), tuple((ts / 1e6, v) for ts, v in new)

    def _last_tick(self, samples: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The samples of the last interval before the newest one (driver timestamps, us)."""
        if not samples:
            return samples
        newest = max(ts for ts, _ in samples)
        return [p for p in samples if p[0] >= newest - self.interval * 1e6]

    def _util_mem(self, i: int, st: _GpuState, gpm_works: bool) -> Any:
        """Memory-controller utilization: every tick where it is the diagnosis's only DRAM signal
        (a GPU without GPM); beside GPM (whose DRAM bandwidth the diagnosis uses instead) every SLOW_TTL_S
        (RELAXED_SLOW_S while relaxed), as the mean of all the driver's samples since the last read,
        shown until the next one."""
        nv = self.session.nvml
        read = lambda: self._util(i, st, nv.NVML_MEMORY_UTILIZATION_SAMPLES, "memory utilization")[0]  # noqa: E731
        return self.slowly(i, "memory utilization", read, self._slow_s()) if gpm_works else read()

    def _throttle(self, i: int, st: _GpuState, reasons: Any) -> Any:
        """The share of time throttled per reason since the previous read of the counters. They are
        cumulative, so reading them every SLOW_TTL_S (RELAXED_THROTTLE_S while relaxed and no bad
        reason has shown in ``reasons``, the tick's clock-event reasons) loses nothing but time
        resolution, and one read (nvmlDeviceGetFieldValues of five fields) costs 1-2 ms of CPU on
        the H200, against ~0.01 ms for the clock-event reasons, which are read every tick and show
        a throttle's onset at once. The second read comes a tick after the first, then one every
        SLOW_TTL_S; the latest shares are shown in between."""
        now = self.clock()
        st.bad_reasons |= isinstance(reasons, int) and bool(reasons & BAD_REASON_BITS)
        every = RELAXED_THROTTLE_S if self._relaxed and not st.bad_reasons else SLOW_TTL_S
        if st.throttle_out is not None and now - st.throttle_out[0] < every:
            return st.throttle_out[1]
        out = self._throttle_since_last(i, st)
        st.bad_reasons = False
        if not (isinstance(out, Unsupported) and out.reason == THROTTLE_FIRST.reason):
            st.throttle_out = (now, out)
        return out

    def _throttle_since_last(self, i: int, st: _GpuState) -> Any:
        fields = self.session.read_fields(i, [fid for fid, _ in THROTTLE_FIELDS], "throttle counters")
        prev, st.throttle = st.throttle, (fields if not isinstance(fields, Unsupported) else None)
        if isinstance(fields, Unsupported):
            return fields
        if prev is None:
            return THROTTLE_FIRST
        out, reasons = [], []
        for fid, name in THROTTLE_FIELDS:
            old, new = prev.get(fid), fields.get(fid)
            if not isinstance(new, Field) or not isinstance(old, Field):
                reasons.append(new.reason if isinstance(new, Unsupported) else f"{name}: no value")
                continue
            d = counter_delta(old, new)
            if isinstance(d, Unsupported):
                reasons.append(f"{name}: {d.reason}")
                continue
            frac = d[0] / (d[1] * 1e9)  # ns throttled / ns elapsed
            if frac <= THROTTLE_SLACK:
                out.append((name, min(1.0, frac)))
        return tuple(out) if out else Unsupported("; ".join(reasons) or "throttle counters reset")

    def _gpm_metrics(self, i: int) -> GpmMetrics | Unsupported:
        got = self._gpm.read(i, self.field, GPM_REUSE * self.interval)
        if isinstance(got, Unsupported):
            return got
        window, vals = got
        return GpmMetrics(window_s=window, **vals)

    def _processes(self, i: int, st: _GpuState, ours: set[int]) -> tuple[GpuProcess, ...]:
        procs = self.session.processes().get(i)
        if procs is None or isinstance(procs, Unsupported):
            return ()
        if not procs:
            st.job_listed = set()
            return ()
        was_ours = st.job_listed

        def mine(p: Any) -> bool:  # in the job's tree now, or its PID still listed since it was
            return (p.local_pid is not None and p.local_pid in ours) or p.host_pid in was_ours

        # Another tenant on the GPU is the contention stage's evidence: its share is read every
        # tick. With only the job's processes there, the diagnosis has no use for the split, and
        # the mean since the last read (every SLOW_TTL_S, RELAXED_SLOW_S while relaxed) is shown
        # until the next.
        alone = all(mine(p) for p in procs)
        now = self.clock()
        if alone and st.proc_util is not None and now - st.proc_util[0] < self._slow_s():
            util = st.proc_util[1]
        else:
            util = self._proc_util(i, st)
            st.proc_util = (now, util)
        out = []
        for p in procs:
            if isinstance(util, Unsupported):
                sm: Any = util
            else:
                sm = util.get(p.host_pid, 0.0)  # NVML lists only processes with non-zero use
            name, user = self._owner(p.local_pid)
            out.append(GpuProcess(
                pid=p.host_pid, local_pid=p.local_pid, name=name, user=user,
                used_memory=p.used_memory if p.used_memory is not None
                else Unsupported("NVML does not report this process's memory"),
                sm_util=sm, is_target=mine(p),
            ))
        st.job_listed = {p.pid for p in out if p.is_target}
        return tuple(out)

    def _proc_util(self, i: int, st: _GpuState) -> dict[int, float] | Unsupported:
        nv = self.session.nvml
        what = "per-process utilization"
        try:
            samples = self.session.invoke(i, "nvmlDeviceGetProcessUtilization", self._buffers().process_util,
                                          st.proc_cursor)
        except nv.NVMLError as e:
            # NotFound, or a code-0 NVMLError from pynvml when the driver answers "nothing":
            # no sample newer than the cursor (signals.md §1.3).
            if isinstance(e, nv.NVMLError_NotFound) or getattr(e, "value", None) == 0:
                return {} if st.proc_seen else Unsupported(f"{what}: no samples yet (a process shows once it ran work)")
            return Unsupported(describe(e, what))
        new = [s for s in samples if s[1] > st.proc_cursor]
        if st.proc_cursor == 0 and new:  # whole stale buffer on the first read: keep one tick
            newest = max(ts for _, ts, _ in new)
            new = [s for s in new if s[1] >= newest - self.interval * 1e6]
        st.proc_seen = True
        if new:
            st.proc_cursor = max(ts for _, ts, _ in new)
        sums: dict[int, list[float]] = {}
        for pid, _, sm in new:
            sums.setdefault(pid, []).append(sm)
        return {pid: sum(v) / len(v) for pid, v in sums.items()}

    def _owner(self, local_pid: int | None) -> tuple[str, str]:
        """(name, user name) of a GPU process, read once per PID ("?" and "" when unreadable):
        the TUI lists other users' GPU processes with their owner, as nvitop does."""
        if local_pid is None:
            return "?", ""
        got = self._names.get(local_pid)
        if got is None:
            try:
                proc = psutil.Process(local_pid)
                name = clean(proc.name(), 64)
            except (psutil.Error, OSError):
                return "?", ""
            try:
                user = clean(proc.username(), 64)
            except (psutil.Error, OSError, KeyError):  # KeyError: a UID without a passwd entry
                user = ""
            if len(self._names) > 1024:  # PIDs of exited processes: keep the cache bounded
                self._names.clear()
            got = self._names[local_pid] = (name, user)
        return got


def _scale(v: Any, k: float) -> Any:
    return v if isinstance(v, Unsupported) else float(v) * k


def _str(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return "" if isinstance(v, Unsupported) or v is None else str(v)
