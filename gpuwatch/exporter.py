"""Prometheus metrics for the latest frame and verdict (``gpuwatch --pid P --prometheus [HOST:]PORT``).

A custom collector over the latest tick, on a registry of its own (never the global one), served
by prometheus_client's HTTP server thread. Taking a tick only stores references (it runs on the event
loop) and adds each new sample to the running totals behind the counters (gpuwatch/prom_totals.py);
the metrics are built when Prometheus scrapes, on the server's thread. A value that could not be read
is left out, never written as 0; once the job exits, its processes' series are left out too. The
families and their names: gpuwatch/prom_families.py and docs/PROMETHEUS.md.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gpuwatch.engine import FIELDS
from gpuwatch.errors import UsageError
from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ROLE_MAIN, ProcInfo
from gpuwatch.model.values import known
from gpuwatch.model.verdict import STAGES, Verdict
from gpuwatch.multirank import RankTick
from gpuwatch.pipeline import Tick
from gpuwatch.prom_families import CLOCK_EVENT_REASONS, COUNTER, FAMILIES, LEVELS
from gpuwatch.prom_totals import Totals, thread_kinds
from gpuwatch.ranks import SIGNAL_WINDOW_S, gpus_of, rank_pids, rank_signals, ranks_of
from gpuwatch.straggler import find_straggler
from gpuwatch.untrusted import label

PERCENT = 0.01
MHZ = 1e6
KEEP_FRAMES = 120
"""Frames kept for the per-rank window: SIGNAL_WINDOW_S (10 s) at the CLI's fastest tick (0.2 s) is 50."""


class _Families:
    """Metric families for one scrape; :meth:`put` leaves unreadable values out."""

    def __init__(self) -> None:
        self.fams: dict[str, Metric] = {}

    def put(self, name: str, value: object, /, **labels: object) -> None:
        if not known(value) or value != value:  # Unsupported, None or NaN: leave the series out
            return
        kind, doc, names = FAMILIES[name]
        fam = self.fams.get(name)
        if fam is None:
            cls = CounterMetricFamily if kind == COUNTER else GaugeMetricFamily
            fam = self.fams[name] = cls(name, doc, labels=names)
        fam.add_metric([_label(labels[n]) for n in names], float(value))  # type: ignore[arg-type]


class Exporter:
    """Serves the latest tick: a sink of the tick pipeline (gpuwatch/pipeline.py), called once per tick."""

    def __init__(self, host: str, port: int) -> None:
        self._lock = threading.Lock()
        self._frames: deque[Frame] = deque(maxlen=KEEP_FRAMES)
        self._verdict: Verdict | None = None
        self._ranks: RankTick | None = None
        self._count = 0
        self._totals = Totals()
        self._job_pids: set[int] = set()
        """PIDs NVML listed as the job's: the last frames after it exits list them as anyone's."""
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)

    @property
    def port(self) -> int:
        return self._server.server_port

    def __call__(self, tick: Tick) -> None:
        frame = tick.frame
        with self._lock:
            self._frames.append(frame)
            self._verdict = tick.verdict
            self._ranks = tick.ranks
            self._count += 1
            self._totals.add(frame)
            if known(frame.gpus):
                self._job_pids.update(_pid(p) for g in frame.gpus for p in g.processes if p.is_target)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            frames, verdict, count = list(self._frames), self._verdict, self._count
            totals = Totals()
            totals.values.update(self._totals.values)
            tick = self._ranks
            job_pids = frozenset(self._job_pids)
        out = _Families()
        out.put("gpuwatch_frames_total", count)
        if frames:
            frame = frames[-1]
            _frame(out, frame, totals, job_pids)
            if frame.target.alive:  # the job's processes are gone once it exits: so are their series
                _ranks(out, frames, tick)
        if verdict is not None:
            _verdict(out, verdict)
        if tick is not None and frames and frames[-1].target.alive:
            for rank, v in tick.verdicts:
                for stage in STAGES:
                    out.put("gpuwatch_rank_verdict", 1 if stage == v.stage else 0, rank=rank, stage=stage)
        yield from out.fams.values()


def start_exporter(host: str = "127.0.0.1", port: int = 9402) -> Exporter:
    """Serve metrics on ``host:port`` (port 0: any free port, see ``.port``); returns the tick sink."""
    try:
        return Exporter(host, port)
    except OSError as e:
        raise UsageError(f"cannot serve Prometheus metrics on {host}:{port}: {e.strerror or e}") from None


# -- frame to metrics ------------------------------------------------------------------------------

def _frame(out: _Families, f: Frame, totals: Totals, job_pids: frozenset[int] = frozenset()) -> None:
    out.put("gpuwatch_target_up", 1 if f.target.alive else 0)
    out.put("gpuwatch_frame_timestamp_seconds", f.wall)
    for field in FIELDS:
        out.put("gpuwatch_collector_up", 1 if known(getattr(f, field)) else 0, collector=field)
    ranks = _pid_ranks(f)
    if known(f.gpus):
        for g in f.gpus:
            _gpu(out, g, ranks, totals, f.target.alive, job_pids)
    if known(f.pcie):
        for s in f.pcie:
            for name in ("gpuwatch_pcie_rx_bytes_total", "gpuwatch_pcie_tx_bytes_total", "gpuwatch_pcie_replays_total"):
                out.put(name, totals.get(name, s.index), gpu=s.index)
            out.put("gpuwatch_pcie_link_capacity_bytes_per_second", s.capacity_bps, gpu=s.index)
            out.put("gpuwatch_pcie_link_generation", s.gen_current, gpu=s.index)
            out.put("gpuwatch_pcie_link_generation_max", s.gen_max, gpu=s.index)
            out.put("gpuwatch_pcie_link_width", s.width_current, gpu=s.index)
            out.put("gpuwatch_pcie_link_width_max", s.width_max, gpu=s.index)
    if known(f.procs) and f.target.alive:
        _procs(out, f.procs.processes, totals)
    if known(f.host):
        _host(out, f.host, totals)
    if known(f.disk):
        for d in f.disk.devices:
            for name in ("gpuwatch_disk_busy_seconds_total", "gpuwatch_disk_read_bytes_total",
                         "gpuwatch_disk_written_bytes_total"):
                out.put(name, totals.get(name, d.name), device=d.name)
        if f.target.alive:
            out.put("gpuwatch_target_read_bytes_total", totals.get("gpuwatch_target_read_bytes_total"))


def _pid(p) -> int:
    return p.local_pid if p.local_pid is not None else p.pid


def _gpu(out: _Families, g, ranks: dict[int, int | None], totals: Totals, alive: bool,
         job_pids: frozenset[int] = frozenset()) -> None:
    i = g.index
    out.put("gpuwatch_gpu_info", 1, gpu=i, uuid=g.uuid, name=g.name)
    out.put("gpuwatch_gpu_used_by_target", 1 if g.used_by_target and alive else 0, gpu=i)
    out.put("gpuwatch_gpu_lost", 1 if g.lost else 0, gpu=i)
    if g.lost:
        return
    out.put("gpuwatch_gpu_utilization_ratio", _scale(g.util_gpu, PERCENT), gpu=i)
    out.put("gpuwatch_gpu_memory_utilization_ratio", _scale(g.util_mem, PERCENT), gpu=i)
    out.put("gpuwatch_gpu_memory_used_bytes", g.mem_used, gpu=i)
    out.put("gpuwatch_gpu_memory_total_bytes", g.mem_total, gpu=i)
    out.put("gpuwatch_gpu_temperature_celsius", g.temp_c, gpu=i)
    out.put("gpuwatch_gpu_power_watts", g.power_w, gpu=i)
    out.put("gpuwatch_gpu_power_limit_watts", g.power_limit_w, gpu=i)
    out.put("gpuwatch_gpu_sm_clock_hertz", _scale(g.sm_clock_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_sm_clock_max_hertz", _scale(g.sm_clock_max_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_memory_clock_hertz", _scale(g.mem_clock_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_memory_clock_max_hertz", _scale(g.mem_clock_max_mhz, MHZ), gpu=i)
    if known(g.clock_reasons):
        for bit, reason in CLOCK_EVENT_REASONS:
            out.put("gpuwatch_gpu_clock_event_reason", 1 if g.clock_reasons & bit else 0, gpu=i, reason=reason)
    if known(g.throttle):
        for reason, _ in g.throttle:
            out.put("gpuwatch_gpu_throttled_seconds_total", totals.get("gpuwatch_gpu_throttled_seconds_total", i, reason),
                    gpu=i, reason=reason)
    for p in g.processes:
        pid = _pid(p)
        if not alive and (p.is_target or pid in job_pids):
            # NVML may list the job's process for a moment after it exits, no longer marked the
            # job's: it had stayed in the scrape as an outside process (target="0")
            continue
        lab = {"gpu": i, "pid": pid, "rank": ranks.get(pid), "target": 1 if p.is_target else 0}
        out.put("gpuwatch_gpu_process_memory_used_bytes", p.used_memory, **lab)
        out.put("gpuwatch_gpu_process_sm_utilization_ratio", _scale(p.sm_util, PERCENT), **lab)
    if known(g.gpm):
        m = g.gpm
        out.put("gpuwatch_gpm_graphics_engine_active_ratio", _scale(m.gr_engine, PERCENT), gpu=i)
        out.put("gpuwatch_gpm_sm_active_ratio", _scale(m.sm_active, PERCENT), gpu=i)
        out.put("gpuwatch_gpm_sm_occupancy_ratio", _scale(m.sm_occupancy, PERCENT), gpu=i)
        out.put("gpuwatch_gpm_tensor_active_ratio", _scale(m.tensor, PERCENT), gpu=i)
        out.put("gpuwatch_gpm_dram_bandwidth_utilization_ratio", _scale(m.dram_bw, PERCENT), gpu=i)


def _procs(out: _Families, procs: tuple[ProcInfo, ...], totals: Totals) -> None:
    groups: dict[tuple[str, int | None], list[ProcInfo]] = {}
    for p in procs:
        groups.setdefault((p.role, p.rank), []).append(p)
    for (role, rank), ps in sorted(groups.items(), key=lambda kv: (kv[0][0], _label(kv[0][1]))):
        lab = {"role": role, "rank": rank}
        out.put("gpuwatch_processes", len(ps), **lab)
        out.put("gpuwatch_resident_memory_bytes", sum(p.rss for p in ps), **lab)
        for name in ("gpuwatch_cpu_seconds_total", "gpuwatch_read_bytes_total", "gpuwatch_written_bytes_total",
                     "gpuwatch_run_delay_seconds_total"):
            out.put(name, totals.get(name, role, rank), **lab)
    for p in procs:
        if p.role == ROLE_MAIN:
            for kind in thread_kinds(p):
                out.put("gpuwatch_thread_cpu_seconds_total", totals.get("gpuwatch_thread_cpu_seconds_total", p.rank, kind),
                        rank=p.rank, thread=kind)


def _host(out: _Families, h, totals: Totals) -> None:
    out.put("gpuwatch_host_cpu_utilization_ratio", _scale(h.cpu_pct, PERCENT))
    out.put("gpuwatch_host_iowait_ratio", _scale(h.iowait_pct, PERCENT))
    out.put("gpuwatch_host_steal_ratio", _scale(h.steal_pct, PERCENT))
    out.put("gpuwatch_host_load1", h.load1)
    out.put("gpuwatch_host_memory_total_bytes", h.mem_total)
    out.put("gpuwatch_host_memory_available_bytes", h.mem_available)
    out.put("gpuwatch_host_swap_used_bytes", h.swap_used)
    if known(h.psi):
        for resource, kind, v in (("cpu", "some", h.psi.cpu_some), ("io", "some", h.psi.io_some),
                                  ("io", "full", h.psi.io_full), ("memory", "some", h.psi.mem_some),
                                  ("memory", "full", h.psi.mem_full)):
            out.put("gpuwatch_host_pressure_ratio", _scale(v, PERCENT), resource=resource, kind=kind)
    if known(h.cgroup):
        out.put("gpuwatch_cgroup_cpu_quota_cores", h.cgroup.quota_cores)
        out.put("gpuwatch_cgroup_cpu_throttled_seconds_total", totals.get("gpuwatch_cgroup_cpu_throttled_seconds_total"))


def _ranks(out: _Families, frames: list[Frame], tick: RankTick | None) -> None:
    """Per-rank GPUs and wait shares, and the straggler: from the tick's ranks (the same ones the JSON
    stream and the TUI show) when the job has two or more, else from the frames (a world of one)."""
    frame = frames[-1]
    ranks = ranks_of(frame)
    if known(frame.gpus):
        for r in ranks:
            for gpu in gpus_of(frame.gpus, rank_pids(frame, r)):
                out.put("gpuwatch_rank_gpu", 1, rank=r, gpu=gpu)
    signals = list(tick.signals) if tick is not None else [rank_signals(frames, r, SIGNAL_WINDOW_S) for r in ranks]
    for s in signals:
        if s.samples:
            out.put("gpuwatch_rank_stack_samples", s.samples, rank=s.rank)
            out.put("gpuwatch_rank_input_wait_ratio", s.input_share, rank=s.rank)
            out.put("gpuwatch_rank_collective_wait_ratio", s.collective_share, rank=s.rank)
    straggler = tick.straggler if tick is not None else find_straggler(signals)
    if straggler is not None:
        out.put("gpuwatch_straggler", 1, rank=straggler.rank, cause=straggler.cause)
        out.put("gpuwatch_straggler_rank", straggler.rank)


def _verdict(out: _Families, v: Verdict) -> None:
    for stage in STAGES:
        out.put("gpuwatch_verdict", 1 if stage == v.stage else 0, stage=stage)
    out.put("gpuwatch_verdict_confidence_ratio", v.confidence)
    out.put("gpuwatch_verdict_speedup_factor", v.speedup)
    if v.speedup is not None:
        out.put("gpuwatch_verdict_speedup_floor", 1 if v.speedup_floor else 0)
    for g in v.gains:  # each fix's own estimate (the one above is the ceiling); none where not estimated
        out.put("gpuwatch_verdict_fix_speedup_factor", g.factor, fix=g.fix)
    for stage, level in v.levels:
        for lv in LEVELS:
            out.put("gpuwatch_stage_level", 1 if lv == level else 0, stage=stage, level=lv)


def _pid_ranks(f: Frame) -> dict[int, int | None]:
    return {p.pid: p.rank for p in f.procs.processes} if known(f.procs) else {}


def _scale(v: object, k: float) -> object:
    return v * k if known(v) else v  # type: ignore[operator]


def _label(v: object) -> str:
    return "" if v is None else label(str(v))
