"""Frame builder for the diagnosis tests, fed with real measurements.

GPU presets are the H200 signature table of /work/shared/docs/h200-signatures.md (measured on an
H200, driver 580, 2026-12-02): NVML util.gpu / util.mem, GPM GR engine, SM active, SM occupancy,
tensor, DRAM, PCIe RX (MiB/s). Nothing else in here is a GPU number. The PCIe capacity is the
gen5 x16 ceiling derived in signals.md §1.4 (3.94 GB/s per lane x 16 = 63 GB/s per direction).
Host-side knobs (CPU per thread, labels) are inputs of each test, named for what they model.

The tests at the bottom only check that built frames are valid model objects (codec round trip).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpuwatch.model import stacks as lb
from gpuwatch.model.codec import from_dict, to_dict
from gpuwatch.model.disk import BlockDevice, DataLocation, DiskSample
from gpuwatch.model.frame import Frame, TargetInfo
from gpuwatch.model.gpu import GpmMetrics, GpuProcess, GpuSample
from gpuwatch.model.host import CgroupCpu, HostSample, OtherProc, Psi
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.procs import ProcInfo, ProcsSample, ThreadCpu
from gpuwatch.model.stacks import DumpResult, StackSample, ThreadStack
from gpuwatch.model.values import Unsupported, known

# name: (util.gpu, util.mem, GR, SM active, SM occupancy, tensor, DRAM, PCIe RX MiB/s), h200-signatures.md
H200 = {
    "idle": (0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.7),
    "healthy": (100, 24, 100, 96.6, 14.3, 93.8, 17.2, 13),
    "launch": (26, 0, 25.8, 0.03, 0.0, 0.0, 0.0, 215),
    "sync": (24, 0, 18.4, 0.04, 0.0, 0.0, 0.0, 171),
    "pageable": (14, 0, 0.0, 0.0, 0.0, 0.0, 0.1, 6608),
    "pinned": (100, 2, 0.0, 0.0, 0.0, 0.0, 1.2, 56509),
    "layout": (100, 31, 100, 99.9, 87.7, 0.9, 24.0, 15),
    "starved": (9, 3, 9.1, 7.2, 1.1, 6.9, 1.9, 2),
}
GEN5_X16_BPS = 63.0e9
MIB = 1024 * 1024
MAIN_PID = 100


@dataclass
class Knobs:
    """One steady state of a job. Shares are 0..1, CPU in cores, host CPU in percent."""

    gpu: str | None = "healthy"
    """An H200 preset; None = no GPU at all (CPU-only host); "none_held" = a GPU the job does not use."""
    gpm: bool = True
    tenants: tuple[tuple[int, str, float], ...] = ()
    our_sm_util: float | None = None
    throttle: tuple[tuple[str, float], ...] = (("sw_power_cap", 0.0),)
    link: tuple[int, int] = (5, 16)
    trace: Callable[[float], float] | None = None
    main_labels: dict[str, float] = field(default_factory=lambda: {lb.DISPATCH: 0.6, lb.SYNC: 0.4})
    main_at: Callable[[float, float], dict[str, float]] | None = None
    """Label distribution for the tick spanning (start, end) unix seconds, overriding main_labels."""
    main_detail: dict[str, str] = field(default_factory=dict)
    main_frames: tuple[str, ...] = ("f (train.py:1)",)
    """The main thread's frames, leaf first (e.g. a ``validate (train.py:80)`` caller)."""
    main_cpu: float = 1.0
    workers: int = 4
    worker_cpu: float = 0.02
    worker_labels: dict[str, float] = field(default_factory=lambda: {lb.W_IDLE: 1.0})
    worker_detail: dict[str, str] = field(default_factory=dict)
    worker_d: bool = False
    worker_read_bps: float = 0.0
    main_write_bps: float = 0.0
    iowait: float = 0.0
    """Host iowait, percent."""
    pin: bool = False
    pin_cpu: float = 0.05
    pin_labels: dict[str, float] = field(default_factory=lambda: {lb.PIN_IDLE: 1.0})
    stacks: bool = True
    main_rate: int = 2
    """Main-thread (and pin-thread) samples per frame: the stack collector's default 2 dumps/s."""
    worker_every: int = 2
    """One worker sample every this many frames, round-robin: the collector's 0.5 worker dumps/s."""
    cpu_count: int = 16
    usable: int = 16
    host_cpu: float | None = None
    """Host CPU percent; default: what the job uses over cpu_count."""
    steal: float = 0.0
    psi_cpu: float = 0.0
    psi_io: float = 0.0
    psi_mem: float = 0.0
    cg_throttled: float = 0.0
    cg_quota: float | None = None
    others: tuple[tuple[str, int, float], ...] = ()
    """(name, pid, cores) of processes outside the job."""
    main_run_delay: float = 0.0
    worker_run_delay: float = 0.0
    disk_busy: float = 5.0
    data_path: str = "/data/train"
    fstype: str = "ext4"
    network: bool = False
    alive: bool = True
    pid: int = 100
    worker_pid0: int | None = None
    """First worker pid (default: right after the main pid); a new value models respawned workers."""
    rank: int | None = None
    gpu_index: int = 0
    exited_cpu: float = 0.0
    """Cores used by commands the job ran and waited for within each tick (subprocess.run): no row,
    but the host counts them (ProcsSample.exited_cpu_pct)."""


def _pick(rng: random.Random, dist: dict[str, float]) -> str:
    x = rng.random() * sum(dist.values())
    for label, w in dist.items():
        x -= w
        if x <= 0:
            return label
    return next(iter(dist))


def _jit(rng: random.Random, value: float, noise: float, top: float | None = None) -> float:
    v = value * (1 + rng.uniform(-noise, noise)) if noise else value
    v = max(0.0, v)
    return min(top, v) if top is not None else v


def _gpu(k: Knobs, t: float, wall: float, rng: random.Random, noise: float):
    if k.gpu is None:
        return (Unsupported("no NVIDIA driver: nvmlInit failed (CPU-only host)"),) * 2
    held = k.gpu != "none_held"
    util, mem, gr, sm, occ, tensor, dram, rx = H200["idle" if not held else k.gpu]
    util = _jit(rng, util, noise, 100)
    trace = tuple((wall - 1 + 0.2 * (i + 1), k.trace(wall - 1 + 0.2 * (i + 1)) if k.trace else util)
                  for i in range(5))
    if k.trace:  # the engines are active in proportion to the traced time
        scale = sum(v for _, v in trace) / len(trace) / max(util, 1e-9)
        util, gr, sm, tensor = util * scale, gr * scale, sm * scale, tensor * scale
    gpm = (GpmMetrics(1.0, _jit(rng, gr, noise, 100), _jit(rng, sm, noise, 100), occ, _jit(rng, tensor, noise, 100),
                      _jit(rng, dram, noise, 100), rx, 1.0) if k.gpm
           else Unsupported("GPM needs a Hopper or newer GPU"))
    procs = []
    if held:
        procs.append(GpuProcess(k.pid, k.pid, "python", 8 << 30,
                                k.our_sm_util if k.our_sm_util is not None else Unsupported("no per-process samples"),
                                True))
    procs += [GpuProcess(pid, pid, name, 1 << 30, smu, False) for pid, name, smu in k.tenants]
    g = GpuSample(
        t=t, index=k.gpu_index, uuid=f"GPU-{k.gpu_index}", name="NVIDIA H200", used_by_target=held,
        util_gpu=util, util_mem=mem,
        util_trace=trace, mem_used=8 << 30, mem_total=141 << 30, temp_c=45.0, power_w=300.0,
        power_limit_w=700.0, sm_clock_mhz=1980.0, sm_clock_max_mhz=1980.0, mem_clock_mhz=3201.0,
        mem_clock_max_mhz=3201.0, clock_reasons=4 if k.gpu == "healthy" else 0, throttle=k.throttle,
        gpm=gpm, processes=tuple(procs),
    )
    p = PcieSample(t=t, index=k.gpu_index, gen_current=k.link[0], gen_max=5, width_current=k.link[1], width_max=16,
                   rx_bps=rx * MIB, tx_bps=1e6, capacity_bps=GEN5_X16_BPS, replay_delta=0)
    return (g,), (p,)


def _procs(k: Knobs, t: float, rng: random.Random, noise: float) -> ProcsSample:
    state = "R" if k.main_cpu > 0.5 else "S"
    threads = [ThreadCpu(k.pid, "python", _jit(rng, k.main_cpu, noise) * 100, state)]
    if k.pin:
        threads.append(ThreadCpu(k.pid + 50, "pt_data_pin", _jit(rng, k.pin_cpu, noise) * 100, "S"))
    main = ProcInfo(k.pid, 1, "main", k.rank, None, "python", "python train.py",
                    _jit(rng, k.main_cpu + 0.1, noise) * 100, state, 2 << 30, 40, 0.0, k.main_write_bps, k.main_run_delay,
                    tuple(threads), tuple(range(k.usable)))
    workers = []
    for i in range(k.workers):
        wstate = "D" if k.worker_d else ("R" if k.worker_cpu > 0.5 else "S")
        workers.append(ProcInfo((k.worker_pid0 or k.pid + 1) + i, k.pid, "worker", k.rank, k.pid, "pt_data_worker",
                                "python train.py", _jit(rng, k.worker_cpu, noise) * 100, wstate, 1 << 30, 3,
                                k.worker_read_bps / max(k.workers, 1), 0.0, k.worker_run_delay, (),
                                tuple(range(k.usable))))
    return ProcsSample(t, (main, *workers), k.usable, k.exited_cpu * 100)


def _host(k: Knobs, t: float, rng: random.Random, noise: float) -> HostSample:
    job = k.main_cpu + 0.1 + k.workers * k.worker_cpu + (k.pin_cpu if k.pin else 0) + k.exited_cpu
    others = sum(c for _, _, c in k.others)
    cpu = k.host_cpu if k.host_cpu is not None else min(100.0, 100 * (job + others) / k.cpu_count)
    cg = CgroupCpu(2, k.cg_quota if k.cg_quota is not None else Unsupported("no quota (max)"), k.cg_throttled,
                   int(k.cg_throttled * 10))
    return HostSample(
        t=t, cpu_count=k.cpu_count, cpu_pct=_jit(rng, cpu, noise, 100), steal_pct=_jit(rng, k.steal, noise),
        iowait_pct=k.iowait,
        load1=1.0, mem_total=64 << 30, mem_available=32 << 30, swap_used=0, swap_in_bps=0.0, swap_out_bps=0.0,
        psi=Psi(k.psi_cpu, k.psi_io, 0.0, k.psi_mem, 0.0), cgroup=cg,
        top_others=tuple(OtherProc(pid, name, c * 100) for name, pid, c in k.others),
    )


def _disk(k: Knobs, t: float) -> DiskSample:
    dev = BlockDevice("nvme0n1", k.disk_busy, k.worker_read_bps, 0.0, 100.0, 0.0, 0.5)
    loc = DataLocation("data", k.data_path, "/data", "/dev/nvme0n1p1", k.fstype, k.network, 12)
    return DiskSample(t, (dev,), (loc,), k.worker_read_bps)


def _stacks(k: Knobs, t: float, wall: float, rng: random.Random, i: int):
    if not k.stacks:
        return Unsupported("py-spy cannot attach: ptrace denied (run as root or add CAP_SYS_PTRACE)")
    threads = []
    if k.workers and i % k.worker_every == 0:
        w = (i // k.worker_every) % k.workers
        wl = _pick(rng, k.worker_labels)
        wpid = (k.worker_pid0 or k.pid + 1) + w
        threads.append(ThreadStack(wpid, wpid, lb.ROLE_WORKER, k.rank, "MainThread", wl,
                                   k.worker_detail.get(wl, ""), wl == lb.W_BUSY, True, ("g (ds.py:1)",)))
    dist = k.main_at(wall - 1, wall) if k.main_at else k.main_labels
    for _ in range(k.main_rate):
        label = _pick(rng, dist)
        threads.append(ThreadStack(k.pid, k.pid, lb.ROLE_MAIN_THREAD, k.rank, "MainThread", label,
                                   k.main_detail.get(label, ""), label != lb.DATA_WAIT, True, k.main_frames))
        if k.pin:
            pl = _pick(rng, k.pin_labels)
            threads.append(ThreadStack(k.pid, k.pid + 50, lb.ROLE_PIN, k.rank, "pt_data_pin", pl, "",
                                       pl == lb.PIN_BUSY, False, ()))
    dumps = tuple(DumpResult(k.pid + i, True, 6.0) for i in range(k.workers + 1))
    return StackSample(t, tuple(threads), dumps)


def build(k: Knobs, n: int, t0: float = 1000.0, seq0: int = 0, seed: int = 0, noise: float = 0.0,
          dt: float = 1.0) -> list[Frame]:
    """``n`` frames of the steady state ``k``, one per ``dt`` seconds from ``t0``."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = t0 + i * dt
        wall = 1.7e9 + t
        gpus, pcie = _gpu(k, t, wall, rng, noise)
        out.append(Frame(
            seq=seq0 + i, t=t, wall=wall, interval=dt,
            target=TargetInfo(k.pid, "python train.py", k.alive, None if k.alive else "process 100 exited"),
            gpus=gpus, pcie=pcie, disk=_disk(k, t), procs=_procs(k, t, rng, noise),
            host=_host(k, t, rng, noise), stacks=_stacks(k, t, wall, rng, seq0 + i),
        ))
    return out


def merge(a: list[Frame], b: list[Frame]) -> list[Frame]:
    """Two jobs' frames as one job's (two ranks under one launcher): GPUs, processes and stacks joined;
    host and disk from ``a``."""
    out = []
    for fa, fb in zip(a, b):
        procs = ProcsSample(fa.t, fa.procs.processes + fb.procs.processes, fa.procs.usable_cpus)
        stacks = StackSample(fa.t, fa.stacks.threads + fb.stacks.threads, fa.stacks.dumps + fb.stacks.dumps)
        joined = {k: getattr(fa, k) + getattr(fb, k) if known(getattr(fa, k)) and known(getattr(fb, k))
                  else getattr(fa, k) for k in ("gpus", "pcie")}  # no GPU: the one reason stands
        out.append(replace(fa, **joined, procs=procs, stacks=stacks))
    return out


def then(frames: list[Frame], k: Knobs, n: int, seed: int = 1, noise: float = 0.0) -> list[Frame]:
    """``frames`` followed by ``n`` frames of ``k``, continuing the clock."""
    last = frames[-1]
    return frames + build(k, n, t0=last.t + last.interval, seq0=last.seq + 1, seed=seed, noise=noise)


def run(frames: list[Frame], rank: int | None = None):
    """Feed the frames one tick at a time, like gpuwatch.analysis does; the verdict per tick."""
    from gpuwatch.diagnosis import diagnose

    state = None
    verdicts = []
    for i in range(len(frames)):
        v, state = diagnose(frames[: i + 1], state, rank=rank)
        verdicts.append(v)
    return verdicts


def last(k: Knobs, n: int = 10, **kw):
    return run(build(k, n, **kw))[-1]


# -- the builder's own checks -----------------------------------------------------------------------
def test_built_frames_round_trip_through_the_codec():
    for k in (Knobs(), Knobs(gpu=None, stacks=False), Knobs(gpm=False, pin=True, cg_quota=2.0)):
        for f in build(k, 2, noise=0.05):
            assert from_dict(Frame, to_dict(f)) == f


def test_presets_are_the_measured_signatures():
    # The launch-bound row: GR active but SMs ~0 (h200-signatures.md); the builder must carry it through.
    f = build(Knobs(gpu="launch"), 1)[0]
    g = f.gpus[0]
    assert g.util_gpu == 26 and g.gpm.gr_engine == 25.8 and g.gpm.sm_active == 0.03
    assert replace(Knobs(), gpu="pinned").gpu == "pinned"
