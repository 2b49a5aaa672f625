"""Stages 1 and 2: the main thread waits for data, because workers read (io) or compute (decode).

The split follows the DataLoader's internals: the same data wait, told apart by what the workers do. Measured CPU beats
stack labels (a worker sleeping inside ``__getitem__`` may be labelled busy yet burns no CPU).
"""

from __future__ import annotations

from collections import Counter

from gpuwatch.diagnosis.evidence import INFO, REQ, Checks, count, fmt, yes
from gpuwatch.diagnosis.host_signals import queued_threads
from gpuwatch.diagnosis.sample_memo import SampleMemo
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.stages import INPUT_UNMEASURED, StageResult, result, warned_by
from gpuwatch.diagnosis.thresholds import (
    BUSY_SATURATED,
    BUSY_STARVED,
    CHECKPOINT_MIN_SAMPLES,
    CHECKPOINT_SHARE,
    CPU_SATURATED,
    DISK_BUSY,
    HYSTERESIS_ABS,
    IDLE_WORKERS,
    IOWAIT,
    MIN_INIT_SAMPLES,
    MIN_WORKER_SAMPLES,
    NETWORK_SHARE,
    PSI_IO,
    READS_BPS,
    RUN_DELAY,
    SHARE_SE_BANDS,
    WAIT_HIGH,
    WORKERS_IN_INIT,
    WORKER_BUSY_SHARE,
    WORKER_CPU_BUSY,
    WORKER_CPU_IO,
    WORKER_D_SHARE,
    WORKER_IO_SHARE,
    high_cut,
    moderate_cut,
)
from gpuwatch.model import stacks as lb
from gpuwatch.diagnosis.phases import find, largest_set, periodic, saves_missed, worker_sets
from gpuwatch.model.procs import NO_WORKER_SEEN
from gpuwatch.model.verdict import CHECKPOINT, DECODE, IO, RESPAWN


def wait_words(s: Signals) -> str:
    if s.recurring_wait is not None:
        return "main thread waiting for a batch (over the last minute: the waits recur with the epochs)"
    return "main thread waiting for a batch"


def gpu_gate(c: Checks, s: Signals, threshold: float = BUSY_SATURATED) -> bool:
    """The GPU is not saturated (true without a GPU; an unreadable GPU does not block). Waits that
    recur with the epochs are judged over the minute: the GPU idles in them, whatever it does now."""
    if not s.gpu.present or s.recurring_wait is not None:
        return True
    ok = c.check("gpu_active", s.gpu.compute_busy, threshold, "<", "GPU kernel-active time", kind=REQ)
    return ok is not False


def mode(s: Signals) -> str:
    """Which wait the main thread shows most: "workers", "inline" (num_workers=0), "loop" (the
    training loop transforms its batches itself, outside the DataLoader), "sampler" (it draws the
    batches' indices in the DataLoader's sampler) or "checkpoint"."""
    st = s.stacks
    wait = s.input_wait or 0.0
    inline = st.share(lb.INLINE_LOAD) or 0.0
    loop = st.share(lb.LOOP_PREP) or 0.0
    sampler = st.share(lb.SAMPLER) or 0.0
    ckpt = checkpoint_share(s) or 0.0
    if ckpt > max(wait, inline, loop, sampler):
        return "checkpoint"
    if sampler and sampler >= max(wait, inline, loop):
        return "sampler"
    if max(inline, loop) > wait:
        return "inline" if inline >= loop else "loop"
    return "workers"


def loads_inline(s: Signals, m: str) -> bool:
    """The main thread loads more than it waits for batches (num_workers=0), whether or not the
    loop's own transforms take more still ("loop"): the disk and unmeasured stages judge that load,
    which a larger loop share must not hide (a num_workers=0 read from slow storage beside heavier
    transforms in the loop)."""
    return m == "inline" or (m in ("loop", "sampler")
                             and (s.stacks.share(lb.INLINE_LOAD) or 0.0) > (s.input_wait or 0.0))


def share_band(cut: float, n: int) -> float:
    """Hysteresis for a share read from ``n`` samples: SHARE_SE_BANDS standard errors of a share at
    the cut, at least the usual HYSTERESIS_ABS (a share that wanders by its own noise must not
    cross back and forth), at most half the cut: over a few samples two standard errors are more
    than the cut, and "at least 0 % while this stage holds the verdict" let no reading end the hold
    (review 28)."""
    se = (cut * (1 - cut) / n) ** 0.5 if n > 0 else cut
    return min(max(HYSTERESIS_ABS, SHARE_SE_BANDS * se), cut / 2)


def checkpoint_share(s: Signals) -> float | None:
    """The main thread's share of time saving checkpoints. Saves that recur (seen twice in the last
    minute) are judged over that minute: a save every few seconds puts 0 or 1 of them in an 8 s
    window, so the window's share jumps across any cut while the minute's holds steady."""
    p = find(s.phases, CHECKPOINT)
    if periodic(p):
        return p.share  # type: ignore[union-attr]
    return s.stacks.share(lb.CHECKPOINT)


def helpers_computing(s: Signals) -> bool:
    """The main thread waits for batches with no DataLoader worker (Signals.self_fed), and the job's
    own other processes (a multiprocessing.Pool's, a ProcessPoolExecutor's) use WORKER_CPU_BUSY or
    more each, flat out as a worker computing: they make the batches, on the CPU (gpuwatch samples no
    stacks of them). Trial 36: a ProcessPoolExecutor's one process at 0.75-0.98 core while the main
    thread waited on its queue 59-74 % of the time, told only "not enough evidence" or Contention."""
    n = round(s.job.helpers_working)  # the idle ones (a forkserver, a resource tracker) left out (review 41)
    return s.self_fed and n >= 1 and (s.job.helpers_working_cpu or 0.0) / n >= WORKER_CPU_BUSY


def workers_computing(s: Signals) -> bool:
    """The workers burn CPU: measured CPU first, the labels only where the CPU is in between.

    A CPU queue (every usable core taken, or workers waiting for a CPU) means the workers want to
    compute, unless they are plainly in storage reads: reading at GB/s costs kernel CPU too, and on
    a small host that alone fills the run queue (measured: the CPU io scenario on 2 cores, workers
    at 0.4 core each in reads with PSI io 46 % and 13 % run delay)."""
    job = s.job
    if s.aligned.usable and (s.aligned.worker_cpu_top or 0.0) >= WORKER_CPU_BUSY:
        return True  # the worker building the awaited batch runs flat out while the main thread waits
    if workers_ahead(s):
        # Sampled waiting for an index most of the time, they wait for work, whatever their run queue
        # says: on a host full of other work (a trial: load 3.5 on 2 cores), queued workers at 0.22
        # core each, 96 % of their samples in Queue.get, read as "the workers compute".
        return False
    # Queued for a CPU counts as wanting to compute where running and waiting to run fill most of the
    # time (WORKER_CPU_IO, the line under which a worker is mostly not computing): workers at 0.22
    # core queued 22 % of the time on a host full of other work are idle the rest, while a busy
    # worker beside a CPU hog runs ~0.6 core and waits for one 10-17 % of the time.
    delay = job.worker_run_delay or 0.0
    queued = s.cpu_short or (delay >= RUN_DELAY and (_busiest(s) or 0.0) + delay >= WORKER_CPU_IO)
    if job.worker_cpu is not None:
        if job.worker_cpu >= WORKER_CPU_BUSY:
            return True
        if job.worker_cpu < WORKER_CPU_IO and not queued:
            return False
    if queued and not storage_bound(s):
        return True
    st = s.stacks
    return st.n_worker >= MIN_WORKER_SAMPLES and (st.wshare(lb.W_BUSY) or 0.0) >= WORKER_BUSY_SHARE


def reads_in_stacks(s: Signals) -> float | None:
    """Share of worker samples off the CPU in a read: W_IO whose hot function reads (lb.READ_WORDS).
    Recordings made before the "wait" label called a sleeping worker "io" too; the name check keeps
    their sleeps out, so the one share is right for old and new recordings alike."""
    st = s.stacks
    if not st.n_worker:
        return None
    details = st.details.get((lb.ROLE_WORKER, lb.W_IO))
    if not details:
        return 0.0
    n = sum(k for d, k in details.items() if lb.activity(lb.ROLE_WORKER, lb.W_IO, d) == lb.W_IO)
    return min(1.0, n / st.n_worker)


def network_reads(s: Signals, role: str = lb.ROLE_WORKER, label: str = lb.W_IO) -> float | None:
    """Of the samples of ``role`` reading (``label``: the workers' reads, or the main thread's own
    loading), the share reading over a socket (lb.on_network): data fetched from a server or an
    object store, which no local disk sign shows."""
    details = s.stacks.details.get((role, label))
    if not details:
        return None
    reading = {d: k for d, k in details.items() if role != lb.ROLE_WORKER or lb.activity(role, label, d) == label}
    n = sum(reading.values())
    return sum(k for d, k in reading.items() if lb.on_network(d)) / n if n else None


def socket_fed(s: Signals, role: str = lb.ROLE_WORKER, label: str = lb.W_IO) -> bool:
    """The data comes from a server: NETWORK_SHARE of the reading samples in socket reads, and no
    storage sign the kernel gives of the job's own processes (D state, storage reads). Beside those
    the local storage is read too, and its story and remedies stay (review 41: socket reads half the
    time beside a disk 97 % busy read "loading over the network ... disk 97 % busy")."""
    return (network_reads(s, role, label) or 0.0) >= NETWORK_SHARE and not storage_signs(s)


JOB_STORAGE_SIGNS = ("worker stacks in reads", "workers in D state", "storage reads")
"""The storage signs of the job's own processes. I/O pressure, iowait and a busy disk are the
host's: another process's writes raise them as much (trial 25: a job whose workers only slept read
Disk, "3.34x faster or more", beside a dd loop writing to the same disk, with no read, no D state
and 0 B/s from its workers). They back the job's own signs and are said with them; alone they name
nothing."""


def own_storage_sign(seen: list[str]) -> bool:
    """``seen`` (storage_evidence) holds a sign of the job's own processes."""
    return any(x in JOB_STORAGE_SIGNS for x in seen)


def storage_bound(s: Signals) -> bool:
    """Positive evidence of storage (issue: no cause without it): worker samples in reads, workers
    in D state or storage reads by the job; the host's signs (I/O pressure, iowait, the data's disk
    busy) only beside one of them."""
    return own_storage_sign(storage_evidence(s))


def storage_evidence(s: Signals, inline: bool = False) -> list[str]:
    """The storage signs seen, in words (empty: none)."""
    job, host, disk = s.job, s.host, s.disk
    seen = []
    if (reads_in_stacks(s) or 0.0) >= WORKER_IO_SHARE:
        seen.append("worker stacks in reads")
    if (job.worker_d or 0.0) >= WORKER_D_SHARE:
        seen.append("workers in D state")
    if (host.psi_io or 0.0) >= PSI_IO:
        seen.append("I/O pressure")
    if (host.iowait or 0.0) >= IOWAIT:
        seen.append("iowait")
    reads = disk.read_bps if inline else job.worker_read_bps
    if (reads or 0.0) >= READS_BPS:
        seen.append("storage reads")
    if (disk.data_busy or 0.0) >= DISK_BUSY:
        seen.append("disk busy")
    return seen


def storage_signs(s: Signals) -> bool:
    """Storage signs the kernel gives of the job's processes (no stacks needed): D state or reads."""
    return own_storage_sign([x for x in storage_evidence(s) if x != "worker stacks in reads"])


def workers_ahead(s: Signals) -> bool:
    """The workers' samples are mostly between items, waiting for the loader to ask for more
    (IDLE_WORKERS): their batches are ready before the main thread takes them, so neither their
    CPU work nor their reads hold the job."""
    if not _mostly_idle(s):
        return False
    # The samples mix the loaders' workers: a validation loader's idle set filled them beside a
    # training worker at 0.6 core (bench/results/2026-12-03-cpu-busy-2). None may run at half a core.
    top = _busiest(s)
    return top is not None and top < WORKER_CPU_IO


def _mostly_idle(s: Signals) -> bool:
    """Enough worker samples, mostly waiting for an index (IDLE_WORKERS)."""
    st = s.stacks
    return st.n_worker >= MIN_WORKER_SAMPLES and (st.wshare(lb.W_IDLE) or 0.0) >= IDLE_WORKERS


def _busiest(s: Signals) -> float | None:
    """CPU of the busiest worker while the main thread waits, where enough such ticks were seen, else
    of a worker on average over the window."""
    a = s.aligned
    return a.worker_cpu_top if a.usable and a.worker_cpu_top is not None else s.job.worker_cpu


def receiving_leads(s: Signals) -> bool:
    """Over the minute's ticks (Signals.epoch_ticks), the main thread's samples receiving batches
    (lb.DATA_IPC: unpickling, fd passing) are at least as many as those plain waiting for one
    (lb.DATA_WAIT): the transfer is then what the wait is made of. A window of 14 samples caught 3
    in a pipe read beside 2 in the queue's poll and named "batch transfer" with a uint8 remedy for
    10 KB batches, while the minute held 4 such samples against 41 waiting on workers still at work
    on long-tail batches (trial 39). Without the minute's samples, the window's share alone."""
    counts, n = s.minute_main()
    return not n or counts[lb.DATA_IPC] >= counts[lb.DATA_WAIT]


def workers_waiting(s: Signals) -> bool:
    """The workers wait on storage: positive storage evidence, and they do not compute (nor wait for
    work: page-cache reads beside workers idle in Queue.get read as "wait on storage" in a trial)."""
    job = s.job
    if job.workers <= 0 or workers_ahead(s):
        return False
    if job.worker_cpu is not None and job.worker_cpu >= WORKER_CPU_BUSY:
        return False
    return storage_bound(s)


def workers_stalled(s: Signals) -> bool:
    """The workers neither compute nor show any storage sign: they wait on something gpuwatch does
    not measure (a sleep, a lock, a remote service without socket frames), or are not there."""
    if s.job.workers <= 0 or storage_bound(s) or workers_computing(s):
        return False
    return not _mostly_idle(s)


def _facts(s: Signals) -> dict[str, object]:
    """The facts the input stages' results carry (the same for all three), worked out once per
    Signals: a tick scores each of its two or three Signals more than once (the switch test, the
    sooner test, the hold's re-score), three input stages each time. Callers copy it."""
    return _FACTS.get(s, (id(s),), lambda: _work_out_facts(s))


_FACTS: SampleMemo[dict[str, object]] = SampleMemo(64)
"""By Signals (held): a tick makes a handful."""


def _work_out_facts(s: Signals) -> dict[str, object]:
    st, job, disk = s.stacks, s.job, s.disk
    return dict(
        wait=s.input_wait, wait_n=s.wait_samples, n_main=st.n_main,
        inline=st.share(lb.INLINE_LOAD), loop=st.share(lb.LOOP_PREP), checkpoint=st.share(lb.CHECKPOINT),
        sampler=st.share(lb.SAMPLER), sampler_detail=st.top(lb.ROLE_MAIN_THREAD, lb.SAMPLER),
        workers=job.workers, worker_cpu=job.worker_cpu, usable=job.usable_cpus,
        cpu_short=s.cpu_short, worker_detail=st.top(lb.ROLE_WORKER, lb.W_BUSY),
        io_detail=st.top(lb.ROLE_WORKER, lb.W_IO), main_detail=st.top(lb.ROLE_MAIN_THREAD, lb.INLINE_LOAD),
        loop_detail=st.top(lb.ROLE_MAIN_THREAD, lb.LOOP_PREP),
        ckpt_detail=st.top(lb.ROLE_MAIN_THREAD, lb.CHECKPOINT),
        worker_d=job.worker_d, respawns=job.worker_respawns, disk_busy=disk.data_busy,
        device=disk.busy_device, location=disk.data, network=disk.network, read_bps=disk.read_bps,
        worker_read_bps=job.worker_read_bps, host_cpu=s.host.cpu, psi_io=s.host.psi_io,
        iowait=s.host.iowait, worker_cpu_mean=job.worker_cpu_mean if s.aligned.usable else None, aligned_ticks=s.aligned.ticks,
        worker_cpu_top=s.aligned.worker_cpu_top if s.aligned.usable else None,
        worker_cpu_least=s.aligned.worker_cpu_least if s.aligned.usable else None,
        storage=tuple(storage_evidence(s)), starting=s.aligned.starting, no_workers=s.aligned.no_workers,
        idle_out=s.idle_out, at_work=s.at_work,
        worker_busy=st.wshare(lb.W_BUSY) if st.n_worker else None, worker_n=st.n_worker,
        worker_init=init_share(s) if workers_initialising(s) else None,
        val_load=st.validation_load, load_n=st.main.get(lb.INLINE_LOAD, 0),
        net_reads=socket_fed(s),
        inline_net_reads=socket_fed(s, lb.ROLE_MAIN_THREAD, lb.INLINE_LOAD),
        workers_cpu=s.aligned.workers_cpu if s.aligned.usable else job.workers_cpu,
        # one loader's num_workers: the busy set's where several live together, else the largest set's
        sets=worker_sets(s.epoch_ticks),
        loader_workers=s.working_set or largest_set(s.epoch_ticks), spawned=job.spawned_workers,
    )


NO_WORKER_NOW = "no DataLoader worker alive now (the last set has exited)"
"""Why a worker reading does not apply where the minute held workers and the latest tick holds none:
"no DataLoader worker seen (num_workers=0, or no DataLoader)" stood in the demo's drill-down beside a
job whose worker had computed seconds before."""


def _none_alive(s: Signals) -> bool:
    """The job's processes were read and no DataLoader worker is alive in them."""
    return s.job.seen and s.job.workers <= 0


def _worker_checks(c: Checks, s: Signals, io_side: bool) -> None:
    st, job, host = s.stacks, s.job, s.host
    na = (NO_WORKER_SEEN if not largest_set(s.epoch_ticks) else NO_WORKER_NOW) if _none_alive(s) else ""
    if io_side:
        c.check("worker_io", reads_in_stacks(s), WORKER_IO_SHARE, ">=", "stack samples of the workers in a read", na=na)
        c.check("worker_d", job.worker_d, WORKER_D_SHARE, ">=", "workers in D state (waiting on the disk)", na=na)
        c.check("worker_cpu", job.worker_cpu, WORKER_CPU_IO, "<", s.worker_cpu_what, unit="cores", na=na)
        c.check("psi_io", host.psi_io, PSI_IO, ">=", "I/O pressure (PSI io some avg10)")
        c.check("disk_busy", s.disk.data_busy, DISK_BUSY, ">=", f"disk {s.disk.busy_device or '(data)'} busy")
        if s.disk.network:
            c.note("network_fs", f"data on a network file system ({s.disk.data.fstype})", True)
        # Shown, not scored: page-cache hits read nothing from storage, so a low rate proves little.
        c.check("worker_reads", job.worker_read_bps, READS_BPS, ">=", "storage reads of the workers", unit="B/s",
                na=na)
        c.check("iowait", host.iowait, IOWAIT, ">=", "host CPU time in iowait")
    else:
        c.check("worker_busy", st.wshare(lb.W_BUSY), WORKER_BUSY_SHARE, ">=", "stack samples of the workers computing",
                na=na)
        c.check("worker_cpu", job.worker_cpu, WORKER_CPU_BUSY, ">=", s.worker_cpu_what, unit="cores", na=na)
        c.check("worker_d", job.worker_d, WORKER_D_SHARE, "<", "workers in D state (waiting on the disk)", na=na)
        c.check("host_cpu", host.cpu, CPU_SATURATED, ">=", "host CPU busy", kind=INFO)
        if s.cpu_short:
            c.note("cpu_full",
                   f"the workers use {fmt(job.workers_cpu, 'cores')} of {count(job.usable_cpus, 'usable CPU')}", True)


def decode(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(DECODE, relax)
    st, job = s.stacks, s.job
    if not st.available:
        return _without_stacks(c, s, computing=True)
    gate = gpu_gate(c, s)
    m = mode(s)
    if m == "inline":
        load = c.check("inline_load", st.share(lb.INLINE_LOAD), high_cut(st.n_main, s.gpu_starved), ">=",
                       "main thread loading data itself (num_workers=0)", kind=REQ,
                       samples=st.n_main)
        # The loading computes: the main thread's half core, or, with no storage sign of the job's own,
        # its process's threads queued for a CPU (contention holds the thread under it). A validation
        # loader with num_workers=0 loading 66 % of the main thread's samples under 1.5 cores of
        # outside load read CPU prep "ok" (review 44); one reading a disk at 45 MB/s on 0.06 core
        # beside a CPU hog waits on the disk, not the CPU (disk_inline_hog).
        main = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, ">=", "main thread CPU", unit="cores")
        queued = None
        if not own_storage_sign(storage_evidence(s, inline=True)) and not _facts(s)["inline_net_reads"]:
            queued = c.check("run_delay", queued_threads(job), RUN_DELAY, ">=",
                             "training process threads ready to run but waiting for a CPU (mean)", unit="threads")
        cpu = None if main is None and queued is None else bool(main) or bool(queued)
        fires = gate and yes(load) and cpu is not False
        # A warning too needs the CPU: a main thread loading on 0.06 core decodes nothing on it.
        warn = (st.share(lb.INLINE_LOAD) or 0) >= st.moderate and cpu is not False
        return result(c, fires, warn, st.share(lb.INLINE_LOAD), "inline",
                      lambda: warned_by(st.share(lb.INLINE_LOAD), st.moderate, ">=", "main thread loading data itself",
                                        samples=st.n_main), why_fires=True, **_facts(s))
    if m == "loop":
        return _loop_prep(c, s, gate)
    if m == "sampler":
        return _sampler(c, s, gate)
    wait = c.check("data_wait", s.input_wait, s.wait_high, ">=", wait_words(s), kind=REQ, samples=s.wait_samples)
    _worker_checks(c, s, io_side=False)
    ipc = (st.share(lb.DATA_IPC) or 0.0) >= WAIT_HIGH and not workers_waiting(s) and receiving_leads(s)
    # A job with no DataLoader workers all minute (a thread of its own prefetches) reads as "no worker
    # alive" in every wait, as a loader between two sets of workers does; but it has no workers to
    # start, so its wait is no sign of CPU prep (nor a warning): no cause without positive evidence.
    none = job.workers <= 0 and largest_set(s.epoch_ticks) == 0
    if none and helpers_computing(s):
        n, of = round(job.helpers_working), round(job.helpers)
        each = (job.helpers_working_cpu or 0.0) / n
        who = f"{n} of the job's {of} other processes" if of > n else f"the job's {count(n, 'other process', 'other processes')}"
        c.note("helpers_computing", f"{who} (no DataLoader worker) {'uses' if n == 1 else 'use'} {fmt(each, 'cores')} "
               f"CPU{'' if n == 1 else ' each'}", True, kind=REQ)
        fires = gate and yes(wait)
        return result(c, fires, fires, s.input_wait, "helpers", **_facts(s), helpers=n, helpers_of=of,
                      helper_cpu=each)
    starting = workers_starting(s) and not storage_bound(s) and not none
    busy = workers_computing(s)  # read once: the mark, the sub-form and the warning's words all ask
    computing = busy or ipc or starting
    # Each mark says what was seen: a main thread receiving batches (ipc) is not workers computing,
    # and no worker seen is never a mark for them (a trial's renamed workers read "● the workers are
    # computing" beside "no DataLoader workers").
    c.note("workers_computing", NO_WORKER_SEEN if none
           else _init_words(s) if starting and workers_initialising(s)
           else "the main thread waits while the DataLoader starts or stops its workers" if starting
           else "the workers are computing" if busy
           else "the main thread receives batches from the workers (shared-memory IPC)" if ipc
           else NO_WORKER_NOW if _none_alive(s)
           else "the workers are not computing", computing and not none, kind=INFO)
    fires = gate and yes(wait) and job.workers > 0 and computing
    # Spawned workers import the script and its libraries before their first item: where the main
    # thread waits on their start and no worker sample shows them at work, their CPU is that start-up
    # (trial 26: spawned sets every ~2.5 s at 0.9 core each read "the workers compute"; its own clock
    # put 57 % of its time before each pass's first batch and 1-6 % in other waits).
    booting = starting and job.spawned_workers and st.wshare(lb.W_BUSY) is None
    # Workers seen in their worker_init_fn: their CPU is, in good part, that start-up (trial 42: a
    # table built there read "the workers compute", more workers first at "about 2.0x"; they ran the
    # job 1.13x faster, kept workers 3.3x)
    booting = booting or workers_initialising(s)
    sub = "ipc" if ipc and not busy else "starting" if starting and (not busy or booting) \
        else "workers"
    warn = (s.input_wait or 0.0) >= s.wait_moderate and computing
    def why() -> str:
        return warned_by(s.input_wait, s.wait_moderate, ">=", wait_words(s), samples=s.wait_samples) + (
            ", while the workers compute" if busy
            else ", while its new workers run their worker_init_fn" if starting and workers_initialising(s)
            else ", while the DataLoader starts or stops its workers" if starting
            else ", while the main thread receives batches from the workers (shared-memory IPC and unpickling)")
    return result(c, fires, warn, s.input_wait, sub, why, True, **_facts(s), ipc=st.share(lb.DATA_IPC), ipc_n=st.n_main)


def _sampler(c: Checks, s: Signals, gate: bool) -> StageResult:
    """The main thread draws the batches' indices in the DataLoader's sampler (lb.SAMPLER): judged as
    a loop's own preparation is (_main_thread_work), for the same reason: time the step does not get,
    which no worker takes over. Trial 38: a class-balanced sampler calling random.choices with 300k
    weights each batch (76 % of the job's time by its clock; cumulative weights ran it 2.6x faster),
    and one sorting 3M lengths at each epoch's start (25 %; sorting once, 1.43x)."""
    return _main_thread_work(c, s, gate, lb.SAMPLER, "sampler",
                             "main thread drawing indices in the DataLoader's sampler")


def _loop_prep(c: Checks, s: Signals, gate: bool) -> StageResult:
    """The training loop prepares its data itself, outside the DataLoader (transforms applied to
    each batch on the main thread): the same share cut as a main thread loading with num_workers=0,
    for the same reason (time the step does not get). Trial 31: CPU prep stayed "ok" beside loop prep
    at 36-57 % of the samples on the main thread's half core alone."""
    return _main_thread_work(c, s, gate, lb.LOOP_PREP, "loop", "main thread preparing data in the training loop",
                             " (outside the DataLoader)")


def _main_thread_work(c: Checks, s: Signals, gate: bool, label: str, sub: str, what: str,
                      where: str = "") -> StageResult:
    """CPU prep on the main thread's own work on the input (``label``): its share at the load's cut,
    and a sign that the work computes: the main thread's half core as a load's decoding, or its
    process's (a tokenizer's thread pool did the work at 1.78 cores while the main thread read 0.45),
    or a queue for a CPU (contention held the thread under half a core). A loop blocked opening
    images on slow storage (PIL is a prep library) shows none of them, and its reads instead."""
    st, job = s.stacks, s.job
    share = st.share(label)
    work = c.check(label, share, high_cut(st.n_main, s.gpu_starved), ">=", what + where, kind=REQ, samples=st.n_main)
    main = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, ">=", "main thread CPU", unit="cores")
    process = c.check("process_cpu", job.main_cpu, WORKER_CPU_IO, ">=", "training process CPU (all its threads)",
                      unit="cores")
    queued = c.check("run_delay", queued_threads(job), RUN_DELAY, ">=",
                     "training process threads ready to run but waiting for a CPU (mean)", unit="threads")
    cpu = (None if main is None and process is None and queued is None
           else bool(main) or bool(process) or bool(queued))
    fires = gate and yes(work) and cpu is not False
    warn = (share or 0) >= st.moderate and cpu is not False
    return result(c, fires, warn, share, sub,
                  lambda: warned_by(share, st.moderate, ">=", what, samples=st.n_main), why_fires=True, **_facts(s))


def io(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(IO, relax)
    st, job = s.stacks, s.job
    if not st.available:
        return _without_stacks(c, s, computing=False)
    gate = gpu_gate(c, s)
    m = mode(s)
    if m == "checkpoint":
        share = checkpoint_share(s)
        recurring = periodic(find(s.phases, CHECKPOINT))
        ck = c.check("checkpoint", share, CHECKPOINT_SHARE, ">=",
                     "main thread saving checkpoints" + (" (over the last minute)" if recurring else ""), kind=REQ,
                     band=share_band(CHECKPOINT_SHARE, s.epoch_samples if recurring else st.n_main))
        # Recurring saves are judged over the minute, the GPU's idle time during them included.
        # A share over the minute is said, and cut, over the minute's samples.
        n = s.epoch_samples if recurring else st.n_main
        # The minute's share weighs its ticks by their length (phases.py): no whole number of its
        # samples, so it is said over the minute, not "7 % of the latest 93 samples".
        saving = round((share or 0.0) * n)
        few = not recurring and saving < CHECKPOINT_MIN_SAMPLES
        if few:
            c.note("checkpoint_samples", f"only {count(saving, 'stack sample')} of the main thread in a save: "
                   "too few to name the saves", False, kind=REQ)
        return result(c, (gate or recurring) and yes(ck) and not few, (share or 0) >= moderate_cut(n) and not few,
                      share, "checkpoint",
                      lambda: warned_by(share, moderate_cut(n), ">=", "main thread saving checkpoints over the last "
                                        "minute") if recurring else
                      warned_by(share, moderate_cut(n), ">=", "main thread saving checkpoints", samples=n),
                      why_fires=True, **{**_facts(s), "checkpoint": share, "recurring": recurring, "checkpoint_n": n,
                         "checkpoint_floor": recurring and saves_missed(find(s.phases, CHECKPOINT))})
    if loads_inline(s, m):
        load = c.check("inline_load", st.share(lb.INLINE_LOAD), high_cut(st.n_main, s.gpu_starved), ">=",
                       "main thread loading data itself (num_workers=0)", kind=REQ,
                       samples=st.n_main)
        cpu = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, "<", "main thread CPU", unit="cores", kind=REQ)
        _worker_checks(c, s, io_side=True)
        c.check("job_reads", s.disk.read_bps, READS_BPS, ">=", "storage reads of the job", unit="B/s")
        seen = storage_evidence(s, inline=True)
        own = own_storage_sign(seen)
        c.note("storage_seen", f"storage signs: {', '.join(seen)}" if own else
               f"no storage sign of the job's own (only the host's: {', '.join(seen)})" if seen else
               "no storage sign (no reads, D state, I/O pressure or iowait)", own, kind=REQ)
        fires = gate and yes(load) and yes(cpu) and own
        return result(c, fires, fires, st.share(lb.INLINE_LOAD), "inline", **_facts(s))
    wait = c.check("data_wait", s.input_wait, s.wait_high, ">=", wait_words(s), kind=REQ, samples=s.wait_samples)
    _worker_checks(c, s, io_side=True)
    waiting = workers_waiting(s)
    seen = storage_evidence(s)
    on = "storage"
    if _facts(s)["net_reads"]:  # a server's or an object store's, not a local disk's (socket_fed)
        on, shown = "a server", ["worker stacks in socket reads" if x == "worker stacks in reads" else x for x in seen]
    else:
        shown = seen
    c.note("workers_waiting", f"the workers wait on {on} ({', '.join(shown)})" if waiting
           else "no storage sign (no reads, D state, I/O pressure or iowait)" if not seen
           else f"no storage sign of the workers' own (no reads, D state or read frames; only the host's: "
                f"{', '.join(seen)})" if not own_storage_sign(seen)
           else "the workers compute, so storage is not what they wait on", waiting, kind=REQ)
    fires = gate and yes(wait) and waiting
    warn = (s.input_wait or 0.0) >= s.wait_moderate and waiting
    return result(c, fires, warn, s.input_wait, "workers",
                  lambda: warned_by(s.input_wait, s.wait_moderate, ">=", wait_words(s), samples=s.wait_samples)
                  + f", while the workers wait on {on}", why_fires=True, **_facts(s))


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
        # The GPU starves and the workers do not compute: storage only with a storage sign the
        # kernel gives (quiet workers alone may sleep or wait on a lock).
        sign = workers_waiting(s) and storage_signs(s)
    fires = gate and job.workers > 0 and sign
    idle = 1.0 - s.gpu.compute_busy if s.gpu.present and s.gpu.compute_busy is not None else None
    return result(c, fires, fires, idle, "no_stacks", **_facts(s))


def input_unmeasured(s: Signals, relax: float = 0.0) -> StageResult:
    """The main thread waits for data, yet neither decode (workers computing) nor storage (a sign of
    reads) is seen: say that, and what is seen (new workers starting; idle-looking workers)."""
    c = Checks(INPUT_UNMEASURED, relax)
    st, job = s.stacks, s.job
    if not st.available:
        return result(c, False, False, None)
    gate = gpu_gate(c, s)
    if loads_inline(s, mode(s)):
        load = c.check("inline_load", st.share(lb.INLINE_LOAD), high_cut(st.n_main, s.gpu_starved), ">=",
                       "main thread loading data itself (num_workers=0)", kind=REQ,
                       samples=st.n_main)
        cpu = c.check("main_cpu", job.main_thread_cpu, WORKER_CPU_IO, "<", "main thread CPU", unit="cores", kind=REQ)
        fires = gate and yes(load) and yes(cpu) and not own_storage_sign(storage_evidence(s, inline=True))
        return result(c, fires, fires, st.share(lb.INLINE_LOAD), "inline", **_facts(s))
    wait = c.check("data_wait", s.input_wait, s.wait_high, ">=", wait_words(s), kind=REQ, samples=s.wait_samples)
    stalled = workers_stalled(s)
    if job.workers > 0:
        # What the sentence says of the workers, as items (shown, not scored: workers_stalled
        # decides): without them an Unknown verdict carried one line, the wait (trial 32).
        c.check("worker_cpu", job.worker_cpu, WORKER_CPU_IO, "<", f"{s.worker_cpu_what} (a computing one "
                "uses more)", unit="cores", kind=INFO)
        c.check("worker_busy", st.wshare(lb.W_BUSY), WORKER_BUSY_SHARE, "<", "stack samples of the workers computing",
                kind=INFO, samples=st.n_worker)
        signs = storage_evidence(s)
        bound = own_storage_sign(signs)
        host = f" (the host's alone: {', '.join(signs)})" if signs and not bound else ""
        c.note("storage", f"storage signs: {', '.join(signs)}" if bound else
               f"no storage sign of the job's own: no reads by its workers, no D state{host}", not bound, kind=INFO)
    fires = gate and yes(wait) and not workers_starting(s) and stalled
    return result(c, fires, fires, s.input_wait, "workers", **_facts(s))


def workers_starting(s: Signals) -> bool:
    """Most ticks the main thread waited in, it sat in the DataLoader's worker start-up or shutdown
    (its stack in ``_MultiProcessingDataLoaderIter.__init__``/``_shutdown_workers``), or no worker was
    alive, or a good part of the workers' own samples are in their start-up (workers_initialising): the
    loader's own worker lifecycle (persistent_workers=False) is what it waits on, work on the input
    side (forking, re-initialising, joining), so it counts with decode."""
    a = s.aligned
    return (a.usable and (a.starting + a.no_workers) * 2 >= a.ticks) or workers_initialising(s)


def workers_initialising(s: Signals) -> bool:
    """The workers' stack samples of the last minute are in their worker_init_fn in WORKERS_IN_INIT
    of them or more (MIN_INIT_SAMPLES at least), and sets of workers are re-created (each new set
    runs it again). Over the
    minute, not the verdict's window: a worker is sampled about every 2 s and a short-lived one less
    (trial 41: 5 samples in 41 s, every one in its worker_init_fn). Kept workers that run a long
    worker_init_fn once are a start that ends, not a cost persistent workers would remove."""
    share, n = init_share(s)
    recreated = find(s.phases, RESPAWN) is not None or bool(s.job.worker_respawns)
    return (recreated and n >= MIN_WORKER_SAMPLES and round((share or 0.0) * n) >= MIN_INIT_SAMPLES
            and (share or 0.0) >= WORKERS_IN_INIT)


def _init_words(s: Signals) -> str:
    """The evidence line for workers seen in their worker_init_fn (workers_initialising)."""
    share, n = init_share(s)
    return (f"the workers are starting up: in their worker_init_fn in {round((share or 0.0) * n)} of their "
            f"{count(n, 'stack sample')} of the last minute")


def init_share(s: Signals) -> tuple[float | None, int]:
    """(the share of the last minute's worker samples in their worker_init_fn, those samples)."""
    labels: Counter = Counter()
    for t in s.epoch_ticks:
        labels.update(t.worker_labels)
    n = sum(labels.values())
    return (labels[lb.W_START] / n if n else None), n
