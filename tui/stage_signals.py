"""For each pipeline stage, the raw signals its drill-down plots over the frame history.

These come straight from the frames, so they show even while the diagnosis has no evidence yet.
The evidence items the diagnosis used are plotted as well (from the verdict history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.host_signals import others_cpu_at
from gpuwatch.diagnosis.thresholds import BAD_THROTTLE_WORDS
from gpuwatch.diagnosis.worker_sets import sample_cpu
from gpuwatch.model import verdict as v
from gpuwatch.model.disk import DiskSample
from gpuwatch.model.frame import Frame
from gpuwatch.model.host import HostSample
from gpuwatch.model.procs import ProcsSample
from gpuwatch.model.values import Unsupported, known


@dataclass(frozen=True)
class Signal:
    label: str
    read: Callable[[Frame], object]
    """A number or an Unsupported with its reason."""
    top: float | None
    """Full scale of the plot; None scales to the largest value in the history."""
    unit: str


def _host(fn: Callable[[HostSample], object]) -> Callable[[Frame], object]:
    return lambda f: f.host if isinstance(f.host, Unsupported) else fn(f.host)  # type: ignore[arg-type]


def _procs(fn: Callable[[ProcsSample], object]) -> Callable[[Frame], object]:
    return lambda f: f.procs if isinstance(f.procs, Unsupported) else fn(f.procs)  # type: ignore[arg-type]


def _disk(fn: Callable[[DiskSample], object]) -> Callable[[Frame], object]:
    return lambda f: f.disk if isinstance(f.disk, Unsupported) else fn(f.disk)  # type: ignore[arg-type]


def _gpus(fn: Callable, how: Callable[[list[float]], float] = max) -> Callable[[Frame], object]:
    """The GPUs the job uses, one reading each, combined by ``how``."""

    def read(f: Frame) -> object:
        if isinstance(f.gpus, Unsupported):
            return f.gpus
        values = []
        last: object = Unsupported("the job uses no GPU")
        for g in f.gpus:
            if not g.used_by_target:
                continue
            last = fn(g)
            if known(last):
                values.append(float(last))  # type: ignore[arg-type]
        return how(values) if values else last

    return read


def _gpm(name: str) -> Callable[[Frame], object]:
    return _gpus(lambda g: g.gpm if isinstance(g.gpm, Unsupported) else getattr(g.gpm, name), how=min)


def _psi(name: str) -> Callable[[Frame], object]:
    return _host(lambda h: h.psi if isinstance(h.psi, Unsupported) else getattr(h.psi, name))


def _data_disk_busy(d: DiskSample) -> object:
    devs = {loc.device for loc in d.locations}
    busy = [b.busy_pct for b in d.devices if b.name in devs]
    return max(busy) if busy else Unsupported("no block device behind the job's data (network or tmpfs?)")


def _role_cpu(role: str, how: Callable[[list[float]], float]) -> Callable[[ProcsSample], object]:
    """CPU of the role's processes in cores, as the evidence says it ("CPU per DataLoader worker")."""
    def read(p: ProcsSample) -> object:
        cpu = [x.cpu_pct / 100 for x in p.processes if x.role == role]
        return how(cpu) if cpu else Unsupported(f"no {role} process")

    return read


def _working_sets(p: ProcsSample) -> object:
    workers = [x for x in p.processes if x.role == "worker"]
    return sample_cpu(workers).cpu if workers else Unsupported("no worker process")


def _pcie_rx_frac(f: Frame) -> object:
    if isinstance(f.pcie, Unsupported):
        return f.pcie
    fracs = [p.rx_bps / p.capacity_bps * 100 for p in f.pcie if known(p.rx_bps) and known(p.capacity_bps)
             and p.capacity_bps]
    return max(fracs) if fracs else Unsupported("PCIe counters or link capacity not readable")


def _gpu_throttle(g) -> object:  # noqa: ANN001 - GpuSample
    if isinstance(g.throttle, Unsupported):
        return g.throttle
    # The reasons the verdict counts (thresholds.BAD_THROTTLE_WORDS); the SW power cap is normal.
    bad = [frac for name, frac in g.throttle if any(w in name.lower() for w in BAD_THROTTLE_WORDS)]
    return max(bad, default=0.0) * 100


SIGNALS: dict[str, tuple[Signal, ...]] = {
    v.IO: (
        Signal("data disk busy", _disk(_data_disk_busy), 100, "%"),
        Signal("job reads", _disk(lambda d: d.target_read_bps), None, "B/s"),
        Signal("PSI io some", _psi("io_some"), 100, "%"),
        Signal("iowait", _host(lambda h: h.iowait_pct), 100, "%"),
    ),
    v.DECODE: (
        # idle sets left out, as the evidence reads it: an idle validation loader's set beside the
        # training workers would halve their mean
        Signal("CPU per worker", _procs(_working_sets), None, "cores"),
        # a job that prepares its batches in the training loop (or with num_workers=0) does it in
        # the main process: its CPU is that form's sign of computing, as the workers' is theirs
        Signal("training process CPU", _procs(_role_cpu("main", max)), None, "cores"),
        Signal("host CPU", _host(lambda h: h.cpu_pct), 100, "%"),
        Signal("PSI cpu some", _psi("cpu_some"), 100, "%"),
    ),
    v.H2D: (
        Signal("PCIe RX of link", _pcie_rx_frac, 100, "%"),
        Signal("GPU util", _gpus(lambda g: g.util_gpu), 100, "%"),
        Signal("SM active", _gpm("sm_active"), 100, "%"),
    ),
    v.GPU_MEMORY: (
        Signal("DRAM bandwidth", _gpm("dram_bw"), 100, "%"),
        Signal("SM active", _gpm("sm_active"), 100, "%"),
        Signal("tensor", _gpm("tensor"), 100, "%"),
        Signal("GPU util", _gpus(lambda g: g.util_gpu), 100, "%"),
    ),
    v.LAUNCH: (
        Signal("training process CPU", _procs(_role_cpu("main", max)), None, "cores"),
        Signal("GPU util", _gpus(lambda g: g.util_gpu), 100, "%"),
        Signal("SM active", _gpm("sm_active"), 100, "%"),
    ),
    v.CONTENTION: (
        Signal("steal", _host(lambda h: h.steal_pct), 100, "%"),
        Signal("PSI cpu some", _psi("cpu_some"), 100, "%"),
        Signal("cgroup throttled", _host(lambda h: h.cgroup if isinstance(h.cgroup, Unsupported)
                                         else h.cgroup.throttled_frac * 100), 100, "%"),
        Signal("CPU outside the job", lambda f: f.host if isinstance(f.host, Unsupported) else others_cpu_at(f),
               None, "cores"),
        Signal("GPU throttled", _gpus(_gpu_throttle), 100, "%"),
    ),
}


def series(signal: Signal, frames: Sequence[Frame]) -> list[float | None]:
    out: list[float | None] = []
    for f in frames:
        try:
            x = signal.read(f)
        except (AttributeError, TypeError, ValueError):  # a malformed frame costs one point, not the screen
            x = None
        out.append(float(x) if known(x) else None)  # type: ignore[arg-type]
    return out
