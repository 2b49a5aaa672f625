"""Prometheus metrics for the latest frame and verdict (``gpuwatch --pid P --prometheus [HOST:]PORT``).

A custom collector over the latest tick, on a registry of its own (never the global one), served
by prometheus_client's HTTP server thread. ``on_tick`` only stores references (it runs on the event
loop); the metrics are built when Prometheus scrapes, on the server's thread. A value that could not
be read is left out, never written as 0. Metric list: docs/PROMETHEUS.md.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gpuwatch.engine import FIELDS
from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ROLE_MAIN, ProcInfo
from gpuwatch.model.values import known
from gpuwatch.model.verdict import LEVEL_BOTTLENECK, LEVEL_OK, LEVEL_WARNING, STAGES, Verdict
from gpuwatch.multirank import MultiRank, RankTick
from gpuwatch.ranks import SIGNAL_WINDOW_S, gpus_of, rank_pids, rank_signals, ranks_of
from gpuwatch.straggler import find_straggler

LEVEL_SCORE = {LEVEL_OK: 0, LEVEL_WARNING: 1, LEVEL_BOTTLENECK: 2}
MIB = 1024 * 1024
MHZ = 1e6
KEEP_FRAMES = 120
"""Frames kept for the per-rank window: SIGNAL_WINDOW_S (10 s) at the CLI's fastest tick (0.2 s) is 50."""

# name: (help, label names). Counters end in _total; all else is a gauge.
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gpuwatch_frames_total": ("Frames gpuwatch has produced since it started", ()),
    "gpuwatch_target_up": ("1 while the watched process runs, 0 once it has exited", ()),
    "gpuwatch_frame_timestamp_seconds": ("Unix time of the latest frame", ()),
    "gpuwatch_collector_up": ("1 when the collector's latest sample is readable, else 0", ("collector",)),
    # GPUs (NVML)
    "gpuwatch_gpu_info": ("Always 1; names the GPU", ("gpu", "uuid", "name")),
    "gpuwatch_gpu_used_by_target": ("1 when the job has a process on this GPU", ("gpu",)),
    "gpuwatch_gpu_lost": ("1 when the GPU fell off the bus or stopped answering", ("gpu",)),
    "gpuwatch_gpu_utilization_percent": ("NVML utilization.gpu over the tick (counts copy-engine time)", ("gpu",)),
    "gpuwatch_gpu_memory_utilization_percent": ("NVML utilization.memory over the tick", ("gpu",)),
    "gpuwatch_gpu_memory_used_bytes": ("GPU memory in use", ("gpu",)),
    "gpuwatch_gpu_memory_total_bytes": ("GPU memory size", ("gpu",)),
    "gpuwatch_gpu_temperature_celsius": ("GPU temperature", ("gpu",)),
    "gpuwatch_gpu_power_watts": ("GPU power draw", ("gpu",)),
    "gpuwatch_gpu_power_limit_watts": ("GPU power limit", ("gpu",)),
    "gpuwatch_gpu_sm_clock_hertz": ("SM clock", ("gpu",)),
    "gpuwatch_gpu_sm_clock_max_hertz": ("Maximum SM clock", ("gpu",)),
    "gpuwatch_gpu_memory_clock_hertz": ("Memory clock", ("gpu",)),
    "gpuwatch_gpu_memory_clock_max_hertz": ("Maximum memory clock", ("gpu",)),
    "gpuwatch_gpu_clock_event_reasons": ("NVML clock-event (throttle) reason bitmask", ("gpu",)),
    "gpuwatch_gpu_throttled_percent": ("Share of the tick the clocks were held down, per reason", ("gpu", "reason")),
    "gpuwatch_gpu_process_memory_used_bytes": ("GPU memory of a process on this GPU",
                                               ("gpu", "pid", "rank", "target")),
    "gpuwatch_gpu_process_sm_percent": ("SM utilization of a process on this GPU", ("gpu", "pid", "rank", "target")),
    # GPM (Hopper and newer)
    "gpuwatch_gpm_graphics_engine_percent": ("GPM graphics engine activity", ("gpu",)),
    "gpuwatch_gpm_sm_active_percent": ("GPM SM activity", ("gpu",)),
    "gpuwatch_gpm_sm_occupancy_percent": ("GPM SM occupancy", ("gpu",)),
    "gpuwatch_gpm_tensor_active_percent": ("GPM tensor-core activity", ("gpu",)),
    "gpuwatch_gpm_dram_bandwidth_percent": ("GPM DRAM bandwidth utilization", ("gpu",)),
    "gpuwatch_gpm_pcie_rx_bytes_per_second": ("GPM PCIe host-to-device rate", ("gpu",)),
    "gpuwatch_gpm_pcie_tx_bytes_per_second": ("GPM PCIe device-to-host rate", ("gpu",)),
    # PCIe
    "gpuwatch_pcie_rx_bytes_per_second": ("PCIe host-to-device bytes per second (headers included)", ("gpu",)),
    "gpuwatch_pcie_tx_bytes_per_second": ("PCIe device-to-host bytes per second (headers included)", ("gpu",)),
    "gpuwatch_pcie_link_capacity_bytes_per_second": ("One direction's capacity of the maximum link", ("gpu",)),
    "gpuwatch_pcie_link_generation": ("PCIe link generation now", ("gpu",)),
    "gpuwatch_pcie_link_generation_max": ("Maximum PCIe link generation", ("gpu",)),
    "gpuwatch_pcie_link_width": ("PCIe link width (lanes) now", ("gpu",)),
    "gpuwatch_pcie_link_width_max": ("Maximum PCIe link width (lanes)", ("gpu",)),
    "gpuwatch_pcie_replays_total": ("PCIe replays (link retries) seen since gpuwatch started", ("gpu",)),
    # the job's processes, summed per role and rank (worker PIDs change every epoch: no pid label)
    "gpuwatch_processes": ("Processes of the job", ("role", "rank")),
    "gpuwatch_cpu_percent": ("CPU of the job's processes, percent of one core, summed", ("role", "rank")),
    "gpuwatch_resident_memory_bytes": ("Resident memory of the job's processes, summed", ("role", "rank")),
    "gpuwatch_read_bytes_per_second": ("Storage reads of the job's processes, summed", ("role", "rank")),
    "gpuwatch_write_bytes_per_second": ("Storage writes of the job's processes, summed", ("role", "rank")),
    "gpuwatch_run_delay_percent": ("Largest share of the tick a process waited for a CPU", ("role", "rank")),
    "gpuwatch_thread_cpu_percent": ("CPU of a training process's key threads (main, pin, autograd)",
                                    ("rank", "thread")),
    "gpuwatch_rank_gpu": ("Always 1; the GPUs NVML lists each rank's processes on", ("rank", "gpu")),
    # per rank, from the stacks (last 10 s)
    "gpuwatch_rank_input_wait_percent": ("Share of main-thread samples waiting for input (10 s)", ("rank",)),
    "gpuwatch_rank_collective_wait_percent": ("Share of main-thread samples waiting in collectives (10 s)",
                                              ("rank",)),
    "gpuwatch_rank_stack_samples": ("Main-thread stack samples behind the shares (10 s)", ("rank",)),
    "gpuwatch_straggler": ("1 for the rank that holds the others back, with the cause", ("rank", "cause")),
    "gpuwatch_straggler_rank": ("The rank that holds the others back (absent when none is named)", ()),
    "gpuwatch_rank_verdict": ("Per rank: 1 for the stage that rank's verdict names, 0 for the others",
                              ("rank", "stage")),
    # host and disks
    "gpuwatch_host_cpu_percent": ("Host CPU busy", ()),
    "gpuwatch_host_iowait_percent": ("Host CPU time waiting for I/O", ()),
    "gpuwatch_host_steal_percent": ("Host CPU time stolen by the hypervisor", ()),
    "gpuwatch_host_load1": ("One-minute load average", ()),
    "gpuwatch_host_memory_total_bytes": ("Host memory", ()),
    "gpuwatch_host_memory_available_bytes": ("Host memory available", ()),
    "gpuwatch_host_swap_used_bytes": ("Swap in use", ()),
    "gpuwatch_host_pressure_percent": ("Pressure stall information avg10", ("resource", "kind")),
    "gpuwatch_cgroup_cpu_quota_cores": ("CPU quota of the job's cgroup", ()),
    "gpuwatch_cgroup_cpu_throttled_percent": ("Share of the tick the job's cgroup was CPU-throttled", ()),
    "gpuwatch_disk_busy_percent": ("Block device busy time", ("device",)),
    "gpuwatch_disk_read_bytes_per_second": ("Block device reads", ("device",)),
    "gpuwatch_disk_write_bytes_per_second": ("Block device writes", ("device",)),
    "gpuwatch_target_read_bytes_per_second": ("Storage-layer reads of the whole job", ()),
    # the verdict
    "gpuwatch_verdict": ("1 for the stage the verdict names, 0 for the others", ("stage",)),
    "gpuwatch_verdict_confidence_ratio": ("Confidence of the verdict, 0..1", ()),
    "gpuwatch_verdict_speedup_ratio": ("The most the job could speed up if the stage were fixed (x times)", ()),
    "gpuwatch_stage_level": ("Per pipeline stage: 0 ok, 1 warning, 2 bottleneck", ("stage",)),
}


class _Families:
    """Metric families for one scrape; :meth:`put` leaves unreadable values out."""

    def __init__(self) -> None:
        self.fams: dict[str, Metric] = {}

    def put(self, name: str, value: object, /, **labels: object) -> None:
        if not known(value) or value != value:  # Unsupported, None or NaN: leave the series out
            return
        doc, names = METRICS[name]
        fam = self.fams.get(name)
        if fam is None:
            cls = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
            fam = self.fams[name] = cls(name, doc, labels=names)
        fam.add_metric([_label(labels[n]) for n in names], float(value))  # type: ignore[arg-type]


class Exporter:
    """Serves the latest frame and verdict; call it once per tick as ``on_tick(frame, verdict)``."""

    def __init__(self, host: str, port: int) -> None:
        self._lock = threading.Lock()
        self._frames: deque[Frame] = deque(maxlen=KEEP_FRAMES)
        self._verdict: Verdict | None = None
        self._ranks: RankTick | None = None
        self._own_ranks: MultiRank | None = MultiRank(history=KEEP_FRAMES)
        """Per-rank analyses of its own, until a caller feeds :meth:`on_ranks` (then dropped)."""
        self._count = 0
        self._replays: dict[int, int] = {}
        self._replay_t: dict[int, float] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)

    @property
    def port(self) -> int:
        return self._server.server_port

    def __call__(self, frame: Frame, verdict: Verdict | None) -> None:
        own = self._own_ranks.update(frame) if self._own_ranks is not None else None
        with self._lock:
            if self._own_ranks is not None:
                self._ranks = own
            self._frames.append(frame)
            self._verdict = verdict
            self._count += 1
            if known(frame.pcie):
                for s in frame.pcie:  # a PCIe sample repeats across frames when its collector is slow
                    if known(s.replay_delta) and self._replay_t.get(s.index) != s.t:
                        self._replay_t[s.index] = s.t
                        self._replays[s.index] = self._replays.get(s.index, 0) + s.replay_delta

    def on_ranks(self, tick: RankTick | None) -> None:
        """This tick's per-rank verdicts and straggler (:class:`gpuwatch.multirank.MultiRank`; None
        for a frame with fewer than two ranks), called before ``__call__`` of the same tick, so the
        exporter need not judge the ranks a second time."""
        with self._lock:
            self._own_ranks = None
            self._ranks = tick

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            frames, verdict, count, replays = list(self._frames), self._verdict, self._count, dict(self._replays)
            tick = self._ranks
        out = _Families()
        out.put("gpuwatch_frames_total", count)
        if frames:
            frame = frames[-1]
            _frame(out, frame)
            for gpu, n in replays.items():
                out.put("gpuwatch_pcie_replays_total", n, gpu=gpu)
            _ranks(out, frames, tick)
        if verdict is not None:
            _verdict(out, verdict)
        if tick is not None:
            for rank, v in tick.verdicts:
                for stage in STAGES:
                    out.put("gpuwatch_rank_verdict", 1 if stage == v.stage else 0, rank=rank, stage=stage)
        yield from out.fams.values()


def start_exporter(host: str = "127.0.0.1", port: int = 9402) -> Exporter:
    """Serve metrics on ``host:port`` (port 0: any free port, see ``.port``); returns the on_tick callback."""
    try:
        return Exporter(host, port)
    except OSError as e:
        from gpuwatch.cli import UsageError

        raise UsageError(f"cannot serve Prometheus metrics on {host}:{port}: {e.strerror or e}") from None


# -- frame to metrics ------------------------------------------------------------------------------

def _frame(out: _Families, f: Frame) -> None:
    out.put("gpuwatch_target_up", 1 if f.target.alive else 0)
    out.put("gpuwatch_frame_timestamp_seconds", f.wall)
    for field in FIELDS:
        out.put("gpuwatch_collector_up", 1 if known(getattr(f, field)) else 0, collector=field)
    ranks = _pid_ranks(f)
    if known(f.gpus):
        for g in f.gpus:
            _gpu(out, g, ranks)
    if known(f.pcie):
        for s in f.pcie:
            out.put("gpuwatch_pcie_rx_bytes_per_second", s.rx_bps, gpu=s.index)
            out.put("gpuwatch_pcie_tx_bytes_per_second", s.tx_bps, gpu=s.index)
            out.put("gpuwatch_pcie_link_capacity_bytes_per_second", s.capacity_bps, gpu=s.index)
            out.put("gpuwatch_pcie_link_generation", s.gen_current, gpu=s.index)
            out.put("gpuwatch_pcie_link_generation_max", s.gen_max, gpu=s.index)
            out.put("gpuwatch_pcie_link_width", s.width_current, gpu=s.index)
            out.put("gpuwatch_pcie_link_width_max", s.width_max, gpu=s.index)
    if known(f.procs):
        _procs(out, f.procs.processes)
    if known(f.host):
        _host(out, f.host)
    if known(f.disk):
        for d in f.disk.devices:
            out.put("gpuwatch_disk_busy_percent", d.busy_pct, device=d.name)
            out.put("gpuwatch_disk_read_bytes_per_second", d.read_bps, device=d.name)
            out.put("gpuwatch_disk_write_bytes_per_second", d.write_bps, device=d.name)
        out.put("gpuwatch_target_read_bytes_per_second", f.disk.target_read_bps)


def _gpu(out: _Families, g, ranks: dict[int, int | None]) -> None:
    i = g.index
    out.put("gpuwatch_gpu_info", 1, gpu=i, uuid=g.uuid, name=g.name)
    out.put("gpuwatch_gpu_used_by_target", 1 if g.used_by_target else 0, gpu=i)
    out.put("gpuwatch_gpu_lost", 1 if g.lost else 0, gpu=i)
    if g.lost:
        return
    out.put("gpuwatch_gpu_utilization_percent", g.util_gpu, gpu=i)
    out.put("gpuwatch_gpu_memory_utilization_percent", g.util_mem, gpu=i)
    out.put("gpuwatch_gpu_memory_used_bytes", g.mem_used, gpu=i)
    out.put("gpuwatch_gpu_memory_total_bytes", g.mem_total, gpu=i)
    out.put("gpuwatch_gpu_temperature_celsius", g.temp_c, gpu=i)
    out.put("gpuwatch_gpu_power_watts", g.power_w, gpu=i)
    out.put("gpuwatch_gpu_power_limit_watts", g.power_limit_w, gpu=i)
    out.put("gpuwatch_gpu_sm_clock_hertz", _scale(g.sm_clock_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_sm_clock_max_hertz", _scale(g.sm_clock_max_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_memory_clock_hertz", _scale(g.mem_clock_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_memory_clock_max_hertz", _scale(g.mem_clock_max_mhz, MHZ), gpu=i)
    out.put("gpuwatch_gpu_clock_event_reasons", g.clock_reasons, gpu=i)
    if known(g.throttle):
        for reason, frac in g.throttle:
            out.put("gpuwatch_gpu_throttled_percent", 100.0 * frac, gpu=i, reason=reason)
    for p in g.processes:
        pid = p.local_pid if p.local_pid is not None else p.pid
        lab = {"gpu": i, "pid": pid, "rank": ranks.get(pid), "target": 1 if p.is_target else 0}
        out.put("gpuwatch_gpu_process_memory_used_bytes", p.used_memory, **lab)
        out.put("gpuwatch_gpu_process_sm_percent", p.sm_util, **lab)
    if known(g.gpm):
        m = g.gpm
        out.put("gpuwatch_gpm_graphics_engine_percent", m.gr_engine, gpu=i)
        out.put("gpuwatch_gpm_sm_active_percent", m.sm_active, gpu=i)
        out.put("gpuwatch_gpm_sm_occupancy_percent", m.sm_occupancy, gpu=i)
        out.put("gpuwatch_gpm_tensor_active_percent", m.tensor, gpu=i)
        out.put("gpuwatch_gpm_dram_bandwidth_percent", m.dram_bw, gpu=i)
        out.put("gpuwatch_gpm_pcie_rx_bytes_per_second", _scale(m.pcie_rx_mibs, MIB), gpu=i)
        out.put("gpuwatch_gpm_pcie_tx_bytes_per_second", _scale(m.pcie_tx_mibs, MIB), gpu=i)


def _procs(out: _Families, procs: tuple[ProcInfo, ...]) -> None:
    groups: dict[tuple[str, int | None], list[ProcInfo]] = {}
    for p in procs:
        groups.setdefault((p.role, p.rank), []).append(p)
    for (role, rank), ps in sorted(groups.items(), key=lambda kv: (kv[0][0], _label(kv[0][1]))):
        lab = {"role": role, "rank": rank}
        out.put("gpuwatch_processes", len(ps), **lab)
        out.put("gpuwatch_cpu_percent", sum(p.cpu_pct for p in ps), **lab)
        out.put("gpuwatch_resident_memory_bytes", sum(p.rss for p in ps), **lab)
        out.put("gpuwatch_read_bytes_per_second", _sum(p.read_bps for p in ps), **lab)
        out.put("gpuwatch_write_bytes_per_second", _sum(p.write_bps for p in ps), **lab)
        delays = [p.run_delay_frac for p in ps if known(p.run_delay_frac)]
        if delays:
            out.put("gpuwatch_run_delay_percent", 100.0 * max(delays), **lab)
    for p in procs:
        if p.role != ROLE_MAIN:
            continue
        kinds: dict[str, float] = {}
        for t in p.threads:
            kind = "main" if t.tid == p.pid else "pin" if t.name == "pt_data_pin" else (
                "autograd" if t.name.startswith("pt_autograd_") else None)
            if kind is not None:
                kinds[kind] = kinds.get(kind, 0.0) + t.cpu_pct
        for kind, cpu in kinds.items():
            out.put("gpuwatch_thread_cpu_percent", cpu, rank=p.rank, thread=kind)


def _host(out: _Families, h) -> None:
    out.put("gpuwatch_host_cpu_percent", h.cpu_pct)
    out.put("gpuwatch_host_iowait_percent", h.iowait_pct)
    out.put("gpuwatch_host_steal_percent", h.steal_pct)
    out.put("gpuwatch_host_load1", h.load1)
    out.put("gpuwatch_host_memory_total_bytes", h.mem_total)
    out.put("gpuwatch_host_memory_available_bytes", h.mem_available)
    out.put("gpuwatch_host_swap_used_bytes", h.swap_used)
    if known(h.psi):
        for resource, kind, v in (("cpu", "some", h.psi.cpu_some), ("io", "some", h.psi.io_some),
                                  ("io", "full", h.psi.io_full), ("memory", "some", h.psi.mem_some),
                                  ("memory", "full", h.psi.mem_full)):
            out.put("gpuwatch_host_pressure_percent", v, resource=resource, kind=kind)
    if known(h.cgroup):
        out.put("gpuwatch_cgroup_cpu_quota_cores", h.cgroup.quota_cores)
        out.put("gpuwatch_cgroup_cpu_throttled_percent", 100.0 * h.cgroup.throttled_frac)


def _ranks(out: _Families, frames: list[Frame], tick: RankTick | None) -> None:
    """Per-rank GPUs and wait shares; the straggler from the tick when the caller feeds
    :meth:`Exporter.on_ranks` (the same one the JSON stream and the TUI show), else from the frames."""
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
            out.put("gpuwatch_rank_input_wait_percent", 100.0 * s.input_share, rank=s.rank)
            out.put("gpuwatch_rank_collective_wait_percent", 100.0 * s.collective_share, rank=s.rank)
    straggler = tick.straggler if tick is not None else find_straggler(signals)
    if straggler is not None:
        out.put("gpuwatch_straggler", 1, rank=straggler.rank, cause=straggler.cause)
        out.put("gpuwatch_straggler_rank", straggler.rank)


def _verdict(out: _Families, v: Verdict) -> None:
    for stage in STAGES:
        out.put("gpuwatch_verdict", 1 if stage == v.stage else 0, stage=stage)
    out.put("gpuwatch_verdict_confidence_ratio", v.confidence)
    out.put("gpuwatch_verdict_speedup_ratio", v.speedup)
    for stage, level in v.levels:
        out.put("gpuwatch_stage_level", LEVEL_SCORE.get(level), stage=stage)


def _pid_ranks(f: Frame) -> dict[int, int | None]:
    return {p.pid: p.rank for p in f.procs.processes} if known(f.procs) else {}


def _scale(v: object, k: float) -> object:
    return v * k if known(v) else v  # type: ignore[operator]


def _sum(values) -> object:
    vals = list(values)
    bad = next((v for v in vals if not known(v)), None)
    return bad if bad is not None else sum(vals)


def _label(v: object) -> str:
    return "" if v is None else str(v)
