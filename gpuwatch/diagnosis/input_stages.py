"""Stages 1 and 2: the main thread waits for data, because workers read (io) or compute (decode).

The split follows the DataLoader's internals: the same data wait, told apart by what the workers do. Measured CPU beats
stack labels (a worker sleeping inside ``__getitem__`` may be labelled busy yet burns no CPU).
"""

from __future__ import annotations

from gpuwatch.diagnosis.evidence import INFO, REQ, Checks, fmt, yes
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.stages import StageResult, result
from gpuwatch.diagnosis.thresholds import (
    BUSY_SATURATED,
    BUSY_STARVED,
    CHECKPOINT_SHARE,
    CPU_SATURATED,
    DISK_BUSY,
    IDLE_WORKERS,
    IOWAIT,
    MIN_WORKER_SAMPLES,
    PSI_IO,
    READS_BPS,
    RUN_DELAY,
    WAIT_HIGH,
    WORKER_BUSY_SHARE,
    WORKER_CPU_BUSY,
    WORKER_CPU_IO,
    WORKER_D_SHARE,
    WORKER_IO_SHARE,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import DECODE, IO



def gpu_gate(c: Checks, s: Signals, threshold: float = BUSY_SATURATED) -> bool:
    """The GPU is not saturated (true without a GPU; an unreadable GPU does not block)."""
    if not s.gpu.present:
        return True
    ok = c.check("gpu_active", s.gpu.compute_busy, threshold, "<", "GPU kernel-active time", kind=REQ)
    return ok is not False


def mode(s: Signals) -> str:
    """Which wait the main thread shows most: "workers", "inline" (num_workers=0) or "checkpoint"."""
    st = s.stacks
    wait = st.wait or 0.0
    inline = st.share(lb.INLINE_LOAD) or 0.0
    ckpt = st.share(lb.CHECKPOINT) or 0.0
    if ckpt > max(wait, inline):
        return "checkpoint"
    return "inline" if inline > wait else "workers"


def workers_computing(s: Signals) -> bool:
    """The workers burn CPU: measured CPU first, the labels only where the CPU is in between.

    A CPU queue (every usable core taken, or workers waiting for a CPU) means the workers want to
    compute, unless they are plainly in storage reads: reading at GB/s costs kernel CPU too, and on
    a small host that alone fills the run queue (measured: the CPU io scenario on 2 cores, workers
    at 0.4 core each in reads with PSI io 46 % and 13 % run delay)."""
    job = s.job
    queued = s.cpu_short or (job.worker_run_delay or 0.0) >= RUN_DELAY
    if job.worker_cpu is not None:
        if job.worker_cpu >= WORKER_CPU_BUSY:
            return True
        if job.worker_cpu < WORKER_CPU_IO and not queued:
            return False
    if queued and not storage_bound(s):
        return True
    st = s.stacks
    return st.n_worker >= MIN_WORKER_SAMPLES and (st.wshare(lb.W_BUSY) or 0.0) >= WORKER_BUSY_SHARE


def storage_bound(s: Signals) -> bool:
    """The workers' own samples say reads, or the host says storage (D state, PSI io, disk busy)."""
    return (s.stacks.wshare(lb.W_IO) or 0.0) >= WORKER_IO_SHARE or storage_signs(s)


def storage_signs(s: Signals) -> bool:
    """Any of the disk stage's signs: workers in D, I/O pressure, the data's disk busy."""
    return ((s.job.worker_d or 0.0) >= WORKER_D_SHARE or (s.host.psi_io or 0.0) >= PSI_IO
            or (s.disk.data_busy or 0.0) >= DISK_BUSY)


def workers_waiting(s: Signals) -> bool:
    """The workers wait on something that is not the CPU: storage, the network, a sleep."""
    job, st = s.job, s.stacks
    if job.workers <= 0:
        return False
    storage = storage_bound(s)
    if job.worker_cpu is not None and job.worker_cpu >= WORKER_CPU_BUSY:
        return False
    if (s.cpu_short or (job.worker_run_delay or 0.0) >= RUN_DELAY) and not storage:
        return False  # workers queued for a CPU, with no sign of storage: they want to compute
    if job.worker_cpu is not None and job.worker_cpu < WORKER_CPU_IO:
        # Idle workers (waiting for an index) are ahead of the consumer, not reading; only
        # enough worker samples may say so, and storage signs overrule them.
        idle = st.n_worker >= MIN_WORKER_SAMPLES and (st.wshare(lb.W_IDLE) or 0.0) >= IDLE_WORKERS
        return not idle or storage
    return storage


def _facts(s: Signals) -> dict[str, object]:
    st, job, disk = s.stacks, s.job, s.disk
    return dict(
        wait=st.wait, inline=st.share(lb.INLINE_LOAD), checkpoint=st.share(lb.CHECKPOINT),
        workers=job.workers, worker_cpu=job.worker_cpu, usable=job.usable_cpus,
        cpu_short=s.cpu_short, worker_detail=st.top(lb.ROLE_WORKER, lb.W_BUSY),
        io_detail=st.top(lb.ROLE_WORKER, lb.W_IO), main_detail=st.top(lb.ROLE_MAIN_THREAD, lb.INLINE_LOAD),
        ckpt_detail=st.top(lb.ROLE_MAIN_THREAD, lb.CHECKPOINT),
        worker_d=job.worker_d, respawns=job.worker_respawns, disk_busy=disk.data_busy,
        device=disk.busy_device, location=disk.data, network=disk.network, read_bps=disk.read_bps,
        worker_read_bps=job.worker_read_bps, host_cpu=s.host.cpu, psi_io=s.host.psi_io,
    )


def _worker_checks(c: Checks, s: Signals, io_side: bool) -> None:
    st, job, host = s.stacks, s.job, s.host
    if io_side:
        c.check("worker_io", st.wshare(lb.W_IO), WORKER_IO_SHARE, ">=", "worker samples in reads")
        c.check("worker_d", job.worker_d, WORKER_D_SHARE, ">=", "workers in D state (waiting on the disk)")
        c.check("worker_cpu", job.worker_cpu, WORKER_CPU_IO, "<", "CPU per DataLoader worker", unit="cores")
        c.check("psi_io", host.psi_io, PSI_IO, ">=", "I/O pressure (PSI io some avg10)")
        c.check("disk_busy", s.disk.data_busy, DISK_BUSY, ">=", f"disk {s.disk.busy_device or '(data)'} busy")
        if s.disk.network:
            c.note("network_fs", f"data on a network file system ({s.disk.data.fstype})", True)
        # Shown, not scored: page-cache hits read nothing from storage, so a low rate proves little.
        c.check("worker_reads", job.worker_read_bps, READS_BPS, ">=", "storage reads of the workers", unit="B/s",
                kind=INFO)
        c.check("iowait", host.iowait, IOWAIT, ">=", "host CPU time in iowait", kind=INFO)
    else:
        c.check("worker_busy", st.wshare(lb.W_BUSY), WORKER_BUSY_SHARE, ">=", "worker samples decoding or transforming")
        c.check("worker_cpu", job.worker_cpu, WORKER_CPU_BUSY, ">=", "CPU per DataLoader worker", unit="cores")
        c.check("worker_d", job.worker_d, WORKER_D_SHARE, "<", "workers in D state (waiting on the disk)")
        c.check("host_cpu", host.cpu, CPU_SATURATED, ">=", "host CPU busy", kind=INFO)
        if s.cpu_short:
            c.note("cpu_full", f"the workers use {fmt(job.workers_cpu, 'cores')} of {job.usable_cpus} usable CPUs",
                   True)


def decode(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(DECODE, relax)
    st, job = s.stacks, s.job
    if not st.available:
        return _without_stacks(c, s, computing=True)
    gate = gpu_gate(c, s)
    m = mode(s)
    if m == "inline":
        load = c.check("inline_load", st.share(lb.INLINE_LOAD), WAIT_HIGH, ">=",
                       "main thread loading data itself (num_workers=0)", kind=REQ)
        cpu = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, ">=", "main thread CPU", unit="cores", kind=REQ)
        fires = gate and yes(load) and cpu is not False
        return result(c, fires, (st.share(lb.INLINE_LOAD) or 0) >= st.moderate, st.share(lb.INLINE_LOAD),
                      "inline", **_facts(s))
    wait = c.check("data_wait", st.wait, WAIT_HIGH, ">=", "main thread waiting for a batch", kind=REQ)
    _worker_checks(c, s, io_side=False)
    ipc = (st.share(lb.DATA_IPC) or 0.0) >= WAIT_HIGH and not workers_waiting(s)
    computing = workers_computing(s) or ipc
    c.note("workers_computing", "the workers are computing" if computing else "the workers are not computing",
           computing, kind=INFO)
    fires = gate and yes(wait) and job.workers > 0 and computing
    sub = "ipc" if ipc and not workers_computing(s) else "workers"
    warn = (st.wait or 0.0) >= st.moderate and computing
    return result(c, fires, warn, st.wait, sub, **_facts(s))


def io(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(IO, relax)
    st, job = s.stacks, s.job
    if not st.available:
        return _without_stacks(c, s, computing=False)
    gate = gpu_gate(c, s)
    m = mode(s)
    if m == "checkpoint":
        ck = c.check("checkpoint", st.share(lb.CHECKPOINT), CHECKPOINT_SHARE, ">=",
                     "main thread saving a checkpoint", kind=REQ)
        return result(c, gate and yes(ck), (st.share(lb.CHECKPOINT) or 0) >= st.moderate,
                      st.share(lb.CHECKPOINT), "checkpoint", **_facts(s))
    if m == "inline":
        load = c.check("inline_load", st.share(lb.INLINE_LOAD), WAIT_HIGH, ">=",
                       "main thread loading data itself (num_workers=0)", kind=REQ)
        cpu = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, "<", "main thread CPU", unit="cores", kind=REQ)
        _worker_checks(c, s, io_side=True)
        fires = gate and yes(load) and yes(cpu)
        return result(c, fires, fires, st.share(lb.INLINE_LOAD), "inline", **_facts(s))
    wait = c.check("data_wait", st.wait, WAIT_HIGH, ">=", "main thread waiting for a batch", kind=REQ)
    _worker_checks(c, s, io_side=True)
    waiting = workers_waiting(s)
    c.note("workers_waiting", "the workers wait on storage (not the CPU)" if waiting
           else "the workers are not waiting on storage", waiting, kind=INFO)
    fires = gate and yes(wait) and waiting
    warn = (st.wait or 0.0) >= st.moderate and waiting
    return result(c, fires, warn, st.wait, "workers", **_facts(s))


def _without_stacks(c: Checks, s: Signals, computing: bool) -> StageResult:
    """No stacks (ptrace denied): the data wait is not seen, so only a clearly starved GPU (or,
    without a GPU, a main thread that is not computing) next to telling workers counts."""
    job = s.job
    c.note("stacks", f"no stacks, so the data wait is not measured ({s.stacks.reason})", False, kind=INFO)
    if s.gpu.present:
        gate = c.check("gpu_active", s.gpu.compute_busy, BUSY_STARVED, "<", "GPU kernel-active time",
                       kind=REQ) is True
    else:
        gate = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, "<", "main thread CPU (a waiting "
                       "thread uses none)", unit="cores", kind=REQ) is True
    _worker_checks(c, s, io_side=not computing)
    if computing:
        sign = workers_computing(s)
    else:
        # By elimination: the GPU starves, the main thread does not compute, the workers do not
        # compute either: they wait on something (storage, network, a sleep). Storage signs make
        # it stronger; with none of them the strength, hence the confidence, stays low.
        quiet = job.worker_cpu is not None and job.worker_cpu < WORKER_CPU_IO
        quiet_main = s.gpu.present and job.main_thread_cpu is not None and job.main_thread_cpu < WORKER_CPU_IO
        sign = workers_waiting(s) and (quiet and (quiet_main or not s.gpu.present) or storage_signs(s))
    fires = gate and job.workers > 0 and sign
    idle = 1.0 - s.gpu.compute_busy if s.gpu.present and s.gpu.compute_busy is not None else None
    return result(c, fires, fires, idle, "no_stacks", **_facts(s))
