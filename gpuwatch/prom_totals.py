"""Running totals behind the exporter's ``_total`` counters: seconds and bytes, summed from each
sample's rates or shares times the time since the collector's previous sample.

The collectors measure rates over their own sampling window (one tick); multiplying by the time
between two samples of the same collector gives the amount in that window, so the sum is the
amount since gpuwatch started, which is what a Prometheus counter holds (``rate()`` turns it back
into a per-second figure over any window). A sample repeated across frames (a slow collector) is
counted once. A series' first sample only creates it at 0: there is no window before it.
Totals are kept for series that come and go (workers between epochs), so a counter never drops.
One exception to "over one tick": while the pace is relaxed, PCIe traffic read from GPM (Hopper
and newer) shows the window before again on every second tick, and the next window's rate covers
both ticks (collectors/gpu.py, RELAXED_GPM_EVERY). The PCIe byte counters then run up to a tick's
traffic behind, and each relaxed phase leaves them off by one tick at the rate before it minus one
tick at its last window's rate (nothing for steady traffic). Likewise the GPU's throttled seconds:
a throttle reading is the share of time throttled since the previous read of NVIDIA's cumulative
counters (every 5 s, or every 10 s while relaxed: collectors/gpu.py, RELAXED_THROTTLE_S), and it
stands for each tick until the next read. While the read interval holds, that sums to the throttled
time, one reading late; where the pace changes, one reading stands for ticks spanning more or less
time than it measured (about 2 s too many throttled seconds in all on the H200 switch runs). An
exact total would need each sample to carry the counter itself, a change of the recording format.
"""

from __future__ import annotations

from collections import defaultdict

from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ROLE_MAIN, ProcInfo
from gpuwatch.model.values import known

Key = tuple[str, tuple[str, ...]]
"""(family name, label values)."""


class Totals:
    def __init__(self) -> None:
        self.values: dict[Key, float] = defaultdict(float)
        self._last_t: dict[str, float] = {}

    def get(self, name: str, *labels: object) -> float | None:
        """The total, or None for a series never seen. Bytes are whole: the sum of rate x dt
        carries float noise (4095.9999999999995 for 4096 read). The exact sum is kept and rounded
        as it is read, and rounding never turns a larger sum into a smaller count, so the counter
        still never goes down."""
        key = (name, tuple(_label(v) for v in labels))
        if key not in self.values:
            return None
        return float(round(self.values[key])) if name.endswith("_bytes_total") else self.values[key]

    def add(self, f: Frame) -> None:
        if known(f.pcie):
            for s in f.pcie:
                if (dt := self._dt(f"pcie{s.index}", s.t)) is not None:
                    self._add(dt, s.rx_bps, "gpuwatch_pcie_rx_bytes_total", s.index)
                    self._add(dt, s.tx_bps, "gpuwatch_pcie_tx_bytes_total", s.index)
                    self._add(1.0, s.replay_delta, "gpuwatch_pcie_replays_total", s.index)  # a count, not a rate
        if known(f.gpus):
            for g in f.gpus:
                if known(g.throttle) and (dt := self._dt(f"gpu{g.index}", g.t)) is not None:
                    for reason, frac in g.throttle:
                        self._add(dt, frac, "gpuwatch_gpu_throttled_seconds_total", g.index, reason)
        if known(f.procs) and (dt := self._dt("procs", f.procs.t)) is not None:
            _procs(self, dt, f.procs.processes)
        if known(f.host) and known(f.host.cgroup) and (dt := self._dt("host", f.host.t)) is not None:
            self._add(dt, f.host.cgroup.throttled_frac, "gpuwatch_cgroup_cpu_throttled_seconds_total")
        if known(f.disk) and (dt := self._dt("disk", f.disk.t)) is not None:
            for d in f.disk.devices:
                self._add(dt, d.busy_pct / 100.0, "gpuwatch_disk_busy_seconds_total", d.name)
                self._add(dt, d.read_bps, "gpuwatch_disk_read_bytes_total", d.name)
                self._add(dt, d.write_bps, "gpuwatch_disk_written_bytes_total", d.name)
            self._add(dt, f.disk.target_read_bps, "gpuwatch_target_read_bytes_total")

    def _dt(self, source: str, t: float) -> float | None:
        """Seconds since this source's previous sample: None for a repeated sample, 0 for the first."""
        last = self._last_t.get(source)
        if last is not None and t <= last:
            return None
        self._last_t[source] = t
        return 0.0 if last is None else t - last

    def _add(self, dt: float, per_second: object, name: str, *labels: object) -> None:
        """``per_second`` (a rate, or a share of time) over ``dt``; an unreadable value adds nothing
        and does not create the series."""
        if known(per_second) and per_second == per_second:
            self.values[(name, tuple(_label(v) for v in labels))] += float(per_second) * dt  # type: ignore[arg-type]


def _procs(tot: Totals, dt: float, procs: tuple[ProcInfo, ...]) -> None:
    groups: dict[tuple[str, int | None], list[ProcInfo]] = {}
    for p in procs:
        groups.setdefault((p.role, p.rank), []).append(p)
    for (role, rank), ps in groups.items():
        tot._add(dt, sum(p.cpu_pct for p in ps) / 100.0, "gpuwatch_cpu_seconds_total", role, rank)
        for name, rates in (("gpuwatch_read_bytes_total", [p.read_bps for p in ps]),
                            ("gpuwatch_written_bytes_total", [p.write_bps for p in ps]),
                            ("gpuwatch_run_delay_seconds_total", [p.run_delay_frac for p in ps])):
            if all(known(r) for r in rates):
                tot._add(dt, sum(rates), name, role, rank)  # type: ignore[arg-type]
    for p in procs:
        if p.role == ROLE_MAIN:
            for kind, cpu in thread_kinds(p).items():
                tot._add(dt, cpu / 100.0, "gpuwatch_thread_cpu_seconds_total", p.rank, kind)


def thread_kinds(p: ProcInfo) -> dict[str, float]:
    """CPU percent of a training process's key threads: main, pin (pt_data_pin), autograd."""
    kinds: dict[str, float] = {}
    for t in p.threads:
        kind = "main" if t.tid == p.pid else "pin" if t.name == "pt_data_pin" else (
            "autograd" if t.name.startswith("pt_autograd_") else None)
        if kind is not None:
            kinds[kind] = kinds.get(kind, 0.0) + t.cpu_pct
    return kinds


def _label(v: object) -> str:
    return "" if v is None else str(v)
