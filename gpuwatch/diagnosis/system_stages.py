"""Stage 6 (contention), "idle" (not training), and a CPU-only job computing on its own.

Contention causes come first when crossed (the stage precedence): they inflate every other stage. GPU-side
causes (another tenant, throttling) slow the job even when its GPU looks saturated; CPU-side
causes only matter while the host is what limits the job (a GPU-saturated job can spare CPU).
Self-contention (more workers than cores) is not an outside cause: it is decode tuning.
"""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.diagnosis.evidence import INFO, REQ, Checks, adjusted, count, yes
from gpuwatch.diagnosis.host_signals import JobSignals, queued_share
from gpuwatch.diagnosis.host_signals import queued_threads as threads_queued
from gpuwatch.diagnosis.input_stages import wait_words
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.speedup import share_floor
from gpuwatch.diagnosis.stack_signals import ACTIVE_LABELS, GIL_KEY
from gpuwatch.diagnosis.stages import CPU_COMPUTE, StageResult, result
from gpuwatch.diagnosis.thresholds import (
    THREADED_WORKER_CPU,
    WAIT_BOUND_CPU,
    BUSY_IDLE,
    BUSY_SATURATED,
    CG_THROTTLED,
    COMPILE_SHARE,
    CPU_SATURATED,
    DISK_BUSY,
    GIL_ELSEWHERE,
    IDLE_OTHER_SHARE,
    MAIN_ACTIVE_SHARE,
    MIN_EVIDENCE_SAMPLES,
    MAIN_CPU_BUSY,
    MAIN_CPU_IDLE,
    MIN_STACK_SAMPLES,
    MODERATE_MIN_SAMPLES,
    OTHERS_CPU_SHARE,
    PSI_CPU,
    PSI_IO,
    PSI_MEM,
    REPLAYS_PER_S,
    RUN_DELAY,
    RX_SIGNIFICANT,
    STEAL,
    SWAP_IN_BPS,
    TENANT_SHARE,
    THROTTLE_FRAC,
    WORKER_CPU_BUSY,
    WORKER_D_SHARE,
    high_cut,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.values import job_exited
from gpuwatch.model.verdict import CONTENTION, IDLE, UNKNOWN

CAUSE_ORDER = ("tenant", "throttle", "cgroup", "neighbours", "gil", "steal", "memory", "link")
"""The order causes are named in when several hold: the GPU-side ones cost the GPU directly."""
HOST_CAUSE_WORDS = {"cgroup": "the CPU quota throttles the job", "neighbours": "other processes take CPUs the job "
                    "waits for", "steal": "the hypervisor steals CPU time", "memory": "the host is short of memory",
                    "gil": "a thread of the job's own holds the GIL"}
"""The CPU-side causes in words, for a warning: they warn without firing while the GPU stays saturated."""


def contention(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(CONTENTION, relax)
    g, h, job = s.gpu, s.host, s.job
    causes: dict[str, float | None] = {}
    if g.present:
        if yes(c.check("gpu_tenants", g.tenant_share, TENANT_SHARE, ">=", "other processes' share of the GPU's SM time",
                       kind=REQ)):
            causes["tenant"] = g.tenant_share
        if yes(c.check("throttle", g.bad_throttle, THROTTLE_FRAC, ">=",
                       "time throttled (thermal, HW slowdown, power brake)", kind=REQ)):
            causes["throttle"] = g.bad_throttle
        if (g.rx_frac or 0.0) >= RX_SIGNIFICANT and yes(c.check(
                "replays", g.replays_per_s, REPLAYS_PER_S, ">=", "PCIe replays (link retries)", unit="/s", kind=REQ)):
            causes["link"] = None
    gpu_side = bool(causes)
    if yes(c.check("cgroup_throttled", h.cg_throttled, CG_THROTTLED, ">=",
                   "time the job's cgroup was throttled (CPU quota)", kind=REQ)):
        causes["cgroup"] = h.cg_throttled
    if yes(c.check("steal", h.steal, STEAL, ">=", "CPU steal (the hypervisor runs someone else)", kind=REQ)):
        causes["steal"] = h.steal
    usable = job.usable_cpus or h.cpu_count
    others_cpu = h.others_cpu
    queued_threads = threads_queued(job)
    if relax > 0:
        # The stage in force also reads the outside load and the CPU queue over its own window (up
        # to WINDOW_S, as it reads its stack shares over more samples) and holds on the larger
        # reading. Beside neighbours whose load comes and goes, the 3-tick readings dip for a few
        # seconds: a CPU job beside other test runs queued 0.12-0.15 a tick, then 0.07, 0.05, 0.16,
        # 0.04, 0.03, then 0.13-0.45; a decode job's outside load read 0.41, then 0.07 for two
        # ticks, then 0.36-0.59, its workers queued 0.75 throughout. Contention let go and came
        # back within 10 s. A neighbour that is really gone drops out of the longer window's median
        # too, after about half of it (~4 s).
        if s.held_queue is not None:
            queued_threads = max(queued_threads or 0.0, s.held_queue)
        if s.held_others is not None:
            others_cpu = max(others_cpu or 0.0, s.held_others)
    # Where the job may run on fewer CPUs than the host has (taskset, a cpuset), the outside load is
    # the host's, and only what cannot fit on the other CPUs must run on the job's: at least
    # others_cpu - (host CPUs - usable). Trial 36's job on 1 of 2 CPUs read "processes outside the
    # job use 1.62 cores of 1 CPU", and 0.22 core outside named contention at its start.
    host_n = h.cpu_count or usable
    on_mask = (max(0.0, others_cpu - (host_n - usable)) if others_cpu is not None and usable and host_n > usable
               else others_cpu)
    others = on_mask / usable if on_mask is not None and usable else None
    # A process's run delay sums its threads' waits: the mean number of them queued for a CPU, which
    # can pass 1 and is said as such; as a share of the time lost (the cost) it stops at 1.
    delay = min(queued_threads, 1.0) if queued_threads is not None else None
    oth = c.check("others_cpu", others, OTHERS_CPU_SHARE, ">=", "CPUs used by processes outside the job", kind=REQ)
    queued = [c.check("run_delay", queued_threads, RUN_DELAY, ">=", "job's threads ready to run but waiting for a CPU (mean)",
                      unit="threads", kind=REQ),
              c.check("psi_cpu", h.psi_cpu, PSI_CPU, ">=", "CPU pressure (PSI cpu some)", kind=REQ),
              c.check("host_cpu", h.cpu, CPU_SATURATED, ">=", "host CPU busy", kind=REQ)]
    # Neighbours count only when they reach the job: its threads queue for a CPU (schedstat). PSI
    # and host CPU stand in only when run delay cannot be read: they also rise for an idle job.
    hits_job = yes(queued[0]) if delay is not None else any(yes(q) for q in queued[1:])
    if yes(oth) and hits_job:
        causes["neighbours"] = delay if delay is not None else others
        c.support.extend(yes(q) for q in queued if q is not None)
    # A thread of the job's own holding the GIL (stack_signals.gil_elsewhere): not where the job, with no
    # DataLoader worker, waits for batches it makes itself (a thread pool decoding them), whose threads'
    # GIL is its input's, judged as the input (trial 35's ThreadPoolExecutor of JPEG decoders).
    st = s.stacks
    feeds_itself = job.workers <= 0 and _waits_for_batches(s)
    gil = (st.gil_elsewhere / st.n_main if st.available and st.n_main >= MIN_STACK_SAMPLES and not feeds_itself
           else None)
    # and at least MIN_EVIDENCE_SAMPLES of them: 2 of 6 samples meet the quarter by chance
    if (yes(c.check("gil_elsewhere", gil, GIL_ELSEWHERE, ">=",
                    "main-thread samples while another thread of its process holds the GIL", kind=REQ))
            and st.gil_elsewhere >= MIN_EVIDENCE_SAMPLES):
        causes["gil"] = gil
    mem = [c.check("psi_mem", h.psi_mem, PSI_MEM, ">=", "memory pressure (PSI memory some)", kind=REQ),
           c.check("swap_in", h.swap_in_bps, SWAP_IN_BPS, ">=", "swap-in", unit="B/s", kind=REQ)]
    if any(yes(m) for m in mem):
        causes["memory"] = h.psi_mem
    busy = g.compute_busy if g.present else None
    host_limited = not g.present or busy is None or busy < adjusted(BUSY_SATURATED, "<", relax)
    fires = gpu_side or (host_limited and bool(causes))
    if causes and not fires:
        c.note("gpu_saturated", "the GPU stays saturated, so the CPU-side contention costs little now", False,
               kind=INFO)
    c.support.extend([True] * len(causes))
    ordered = sorted(causes, key=CAUSE_ORDER.index)
    weight = max((x for x in causes.values() if x is not None), default=0.0)
    return result(c, fires, bool(causes), weight, ordered[0] if ordered else "",
                  lambda: ", ".join(HOST_CAUSE_WORDS.get(x, x) for x in ordered)
                  + ", but the GPU stays saturated, so it costs little now",
                  causes=tuple(ordered), values=dict(causes), tenants=g.tenants, throttles=g.throttle_reasons,
                  quota=h.cg_quota, others=h.others_top, others_cpu=others_cpu, usable=usable, delay=delay,
                  host_cpus=host_n, others_on_mask=on_mask,
                  queued_threads=queued_threads, queued_share=_neighbours_cost(job, usable),
                  # without a GPU the step's own intra-op pool; beside one, pin and autograd threads too
                  wants=None if s.gpu.present else _threads_at_once(job),
                  steal=h.steal, workers=job.workers, psi_mem=h.psi_mem, swap_in=h.swap_in_bps,
                  gil=gil, gil_n=st.gil_elsewhere, gil_of=st.n_main, gil_holder=_gil_holder(s))


def _waits_for_batches(s: Signals) -> bool:
    """Over the minute (Signals.minute_main), the main thread was caught waiting for a batch in two
    samples or more (MODERATE_MIN_SAMPLES: one is a chance catch)."""
    counts, _ = s.minute_main()
    return counts[lb.DATA_WAIT] + counts[lb.DATA_IPC] >= MODERATE_MIN_SAMPLES


def _gil_holder(s: Signals) -> str | None:
    """The thread (and its function) that held the GIL most often in the main thread's samples."""
    d = s.stacks.details.get(GIL_KEY)
    return d.most_common(1)[0][0] if d else None


def _threads_at_once(job: JobSignals) -> float | None:
    """The cores the training process would use (its CPU plus its own threads queued for one, not its
    workers': review 45, where a worker's BLAS pool read as the training process's) where that
    is over THREADED_WORKER_CPU: several of its threads run at once. Threads that work in lock-step
    (PyTorch's intra-op pool) wait for the slowest, so a neighbour that takes one core costs them
    more than their queued time (trial 22: 5x slower, estimated 2.0x; trial 38: a 2-thread MLP 6.5x
    slower under one core of outside load, estimated 1.9x). None otherwise."""
    if job.main_cpu is None or job.main_run_delay is None:
        return None
    want = job.main_cpu + job.main_run_delay
    return want if want >= THREADED_WORKER_CPU else None


def _neighbours_cost(job: JobSignals, usable: float | None) -> float | None:
    """The share of the job's time neighbours take: what its processes lost in the run queue
    (host_signals.queued_share), and never more than handing the job every usable CPU could give
    back (it runs on ``job_cpu`` cores now: at most ``usable / job_cpu`` times the CPU). A decode job
    beside other helpers' test runs used 0.49 of 2 cores and read "7.9x" from its queue alone."""
    lost = queued_share(job)
    if lost is None or not usable or not job.job_cpu:
        return lost
    return min(lost, max(0.0, 1.0 - job.job_cpu / usable))


def idle(s: Signals, relax: float = 0.0) -> StageResult:
    """Not training: the GPU idles and the main thread is outside the loop, or nothing runs at all."""
    c = Checks(IDLE, relax)
    if not s.alive:
        c.note("alive", job_exited(s.exit_reason), True)
        return result(c, True, False, 1.0, "exited")
    if s.job.stopped:
        # A frozen job has no pipeline to judge: its last stack samples describe the moment it stopped.
        c.note("stopped", "the training process is stopped (state T: SIGSTOP, Ctrl-Z or a debugger)", True)
        return result(c, True, False, 1.0, "stopped")
    g, st, job, h = s.gpu, s.stacks, s.job, s.host
    compiling = st.share(lb.COMPILE) if st.available else None
    if (st.n_main >= MIN_EVIDENCE_SAMPLES and lb.COMPILE in st.newest_main
            and c.check("compile", compiling, COMPILE_SHARE, ">=", "main thread compiling (torch.compile)",
                        kind=REQ) is True):
        # The first steps of a compiled model (or a recompile): no step runs until the compiler
        # returns, so no pipeline stage is what the GPU waits on. Over once the newest sample is
        # out of the compiler: the window's older samples would say "compiling" for seconds after.
        return result(c, True, False, 1.0, "compiling", detail=st.top(lb.ROLE_MAIN_THREAD, lb.COMPILE),
                      compiling=compiling, n=st.n_main)
    main_quiet = c.check("main_cpu", job.main_thread_cpu, MAIN_CPU_IDLE, "<", "main thread CPU", unit="cores", kind=REQ)
    workers_quiet = job.workers <= 0 or c.check("worker_cpu", job.worker_cpu, MAIN_CPU_IDLE, "<", s.worker_cpu_what,
                                                unit="cores", kind=REQ) is not False
    if st.available:
        outside = c.check("main_outside", st.share(lb.OTHER), IDLE_OTHER_SHARE, ">=",
                          "main thread outside every training frame", kind=REQ)
        host_quiet = (yes(outside) and (st.wait or 0.0) < high_cut(st.n_main, s.gpu_starved)
                      and main_quiet is not False)
    else:
        # Without stacks a job starved by slow storage also looks quiet: require quiet storage too.
        storage_busy = ((job.worker_d or 0.0) >= WORKER_D_SHARE or (h.psi_io or 0.0) >= PSI_IO
                        or (s.disk.data_busy or 0.0) >= DISK_BUSY)
        host_quiet = yes(main_quiet) and workers_quiet and not storage_busy
    # A job whose threads queue for a CPU wants to run: its low CPU is the host's doing, not a
    # pause (a starved worker on a full 2-core host read 0.05 core with 2.1 threads queued, and the
    # main thread waited for its batch). RUN_DELAY is the cut contention names such a queue by.
    waiting = threads_queued(job)
    if waiting is not None and c.check("run_delay", waiting, RUN_DELAY, "<",
                                      "job's threads ready to run but waiting for a CPU (mean)",
                                      unit="threads", kind=REQ) is False:
        host_quiet = False
    # Commands the job runs and waits for (subprocess.run) are its work, done where no stack is
    # sampled: a main thread waiting on them is not a job at rest.
    if job.exited_cpu is not None and c.check("exited_cpu", job.exited_cpu, MAIN_CPU_IDLE, "<",
                                              "CPU of commands the job ran and waited for", unit="cores",
                                              kind=REQ) is False:
        host_quiet = False
    c.support.extend(x for x in (main_quiet, workers_quiet, host_quiet) if x is not None)
    ops, seen, outside, n = _ops_seen(s)
    if g.present:
        gpu_idle = c.check("gpu_util", g.busy, BUSY_IDLE, "<", "GPU utilization (NVML, copies included)", kind=REQ)
        return result(c, yes(gpu_idle) and host_quiet, False, 1.0, "gpu_idle", detail=_other_detail(s),
                      ops=ops, ops_seen=seen, ops_outside=outside, ops_of=n)
    c.note("gpu", f"no GPU in use ({g.reason})", True, kind=INFO)
    return result(c, host_quiet, False, 1.0, "no_gpu" if g.has_gpus else "cpu_only", detail=_other_detail(s),
                  ops=ops, ops_seen=seen, ops_outside=outside, ops_of=n)


STEP_LABELS = (*ACTIVE_LABELS, lb.H2D)
"""Main-thread labels of the model's step itself: the active ones (ops, sync, backward, optimizer)
and a copy to the GPU."""


def _ops_seen(s: Signals) -> tuple[int, int, int, int]:
    """(main-thread samples in the model's step, the same counted even where seen in one tick only,
    outside every training frame, in all) over the
    ticks of the last minute since the main thread went idle: the newest run of ticks with at least
    half their samples outside every training frame. A job idle most of its time that still runs its
    step now and then trains, slowly: a step that waited ~50 ms on a sleep or a remote call each time
    read "Not training" at 18 steps a second. The run keeps out the steps of a phase before the idle
    one (the demo trains, then stops: no step of its training is counted for its pause), and its
    oldest tick, which may hold the last steps before the switch. Steps count only when seen in two
    ticks or more: a step that recurs, not one sample."""
    run = []
    for t in reversed(s.epoch_ticks):
        if not t.stacks or not t.n_main:
            continue
        if 2 * t.main[lb.OTHER] < t.n_main:
            break
        run.append(t)
    run = run[:-1]
    steps = [sum(t.main[x] for x in STEP_LABELS) for t in run]
    ops = sum(steps) if sum(1 for n in steps if n) >= 2 else 0
    return ops, sum(steps), sum(t.main[lb.OTHER] for t in run), sum(t.n_main for t in run)


def _optimizer_lead(s: Signals) -> tuple[int, int]:
    """(the main thread's samples in the optimizer step, all its samples) over the minute's ticks
    (Signals.epoch_ticks) where the optimizer has more of them than the forward pass (dispatch) and
    than backward; (0, 0) otherwise. The step's own parts, compared: where the optimizer is the
    largest, torch's single-tensor loop over the parameters is the work to cut."""
    counts, n = s.minute_main()
    opt = counts[lb.OPTIMIZER]
    if opt < MIN_EVIDENCE_SAMPLES or opt < counts[lb.DISPATCH] or opt < counts[lb.BACKWARD]:
        return 0, 0  # a few samples name no part of the step
    return opt, n


def _other_detail(s: Signals) -> str | None:
    return s.stacks.top(lb.ROLE_MAIN_THREAD, lb.OTHER) if s.stacks.available else None


def cpu_compute(s: Signals, relax: float = 0.0) -> StageResult:
    """No GPU in use, and the main thread computes without waiting for data: not input-bound."""
    c = Checks(CPU_COMPUTE, relax)
    st, job, h = s.stacks, s.job, s.host
    if s.gpu.present:
        return replace(result(c, False, False, 0.0), stage=CPU_COMPUTE)
    usable = job.usable_cpus or h.cpu_count
    crowded = ((h.cpu or 0.0) >= CPU_SATURATED and h.others_cpu is not None and bool(usable)
               and h.others_cpu / usable >= OTHERS_CPU_SHARE)  # type: ignore[operator]
    if crowded and (job.main_thread_cpu or 0.0) < MAIN_CPU_BUSY:
        # The host is full, others hold a real share of it, and the main thread gets less than a
        # core: it cannot get the CPU it wants, so its own compute is not shown to be the limit.
        c.check("main_cpu", job.main_thread_cpu, MAIN_CPU_BUSY, ">=",
                "main thread CPU (the host is full and others use a share of it)", unit="cores", kind=REQ)
        return replace(result(c, False, False, 0.0), stage=CPU_COMPUTE)
    if st.available:
        # A main thread in user code (OTHER) that burns a full core computes too (numpy, Python).
        busy_cpu = (job.main_thread_cpu or 0.0) >= MAIN_CPU_BUSY
        share = (st.active or 0.0) + ((st.share(lb.OTHER) or 0.0) if busy_cpu else 0.0)
        active = c.check("main_active", share, MAIN_ACTIVE_SHARE, ">=", "main thread computing (the step, and any validation pass)", kind=REQ)
        # The wait the input stages judge (Signals.input_wait): over the minute where the waits recur
        # with the epochs. Judged over the window here, a job whose first batches of each epoch keep
        # it waiting fell between the two: under the input stages' cut over the minute, over this
        # one's in a window that held an epoch start, so no stage held (the Lightning job of
        # tests/data/cpu_field/lightning_two_loaders.jsonl.gz read "Not enough evidence" every ~7 s).
        wait = c.check("data_wait", s.input_wait, s.wait_high, "<", wait_words(s), kind=REQ, samples=s.wait_samples)
        # the same share against the cut of a wait seen at all (two samples): worded apart from the
        # required check above, which it sits beside with another cut
        c.check("no_wait", s.input_wait, s.wait_moderate, "<",
                "main thread waiting for a batch at all (in 2 or more samples)", samples=s.wait_samples)
        # "Not its input" is a claim that the wait is absent, which a few samples cannot make: one wait
        # in 6 samples fits a loop that waits more than half the time (a Pool-fed job waiting 57 %
        # read 1 of 6 in one window). The samples must bound the wait under WAIT_BOUND_CPU.
        n = s.wait_samples
        bound = 1.0 - share_floor(1.0 - s.input_wait, n) if s.input_wait is not None else None
        # As a challenger its window is the switch test's few seconds; the stage in force's wider
        # window (its samples since it was named) must bound the wait too, or a chance run of samples
        # names CPU-bound: 0 waits in 6 samples of a job waiting 38 % of the time by its own clock
        # (trial 34; 6 % likely a window) read "not its input ... waiting for data 0 %" for 2-3 ticks.
        wide = s.sticky_stacks
        if (bound is not None and s.recurring_wait is None and wide is not None and wide.available
                and wide.wait is not None and wide.n_main > n):
            wide_bound = 1.0 - share_floor(1.0 - wide.wait, wide.n_main)
            if wide_bound > bound:
                bound, n = wide_bound, wide.n_main
        bounded = c.check("wait_bound", bound, WAIT_BOUND_CPU, "<",
                          f"the most the main thread's data wait can be over its {count(n, 'sample')} "
                          "(95 % bound)", kind=REQ)
        c.check("main_cpu", job.main_thread_cpu, MAIN_CPU_BUSY, ">=", "main thread CPU", unit="cores")
        # A step computed on the CPU uses CPU: samples in model code with the process at ~0 core are a
        # thread blocked there (torch.compile waiting on its compiler processes; a stopped job's
        # stacks), and read "computes the step itself (0.00 core CPU)" in a trial.
        used = c.check("process_cpu", job.main_cpu, MAIN_CPU_IDLE, ">=", "training process CPU (all its threads)",
                       unit="cores", kind=REQ)
        # Compute that is the limit keeps a core busy where one is free: a process in its step at
        # half a core with CPU to spare is off the CPU half the time, waiting on something the
        # stacks do not show (a peer rank's all-reduce inside backward, an fsync), and the model is
        # not the work (trial 24: a gloo DDP rank at 0.50 core read "computes the step itself").
        # Where the CPUs are full (its own workers fill them too, or its processes fill a cgroup
        # quota on a larger host) it gets what is left; under a quota of less than a core the
        # quota is the core.
        cap = min(usable, h.cg_quota) if usable and h.cg_quota else usable
        spare = (h.cpu or 0.0) < CPU_SATURATED and (not cap or (job.job_cpu or 0.0) / cap < CPU_SATURATED)
        core = min(MAIN_CPU_BUSY, MAIN_CPU_BUSY * h.cg_quota) if h.cg_quota else MAIN_CPU_BUSY
        full = not spare or c.check("process_busy", job.main_cpu, core, ">=",
                                    "training process CPU, with CPU to spare (a step that computes keeps a "
                                    "core busy)", unit="cores", kind=REQ) is not False
        fires = yes(active) and yes(wait) and yes(bounded) and yes(used) and full
        weight = share
    else:
        cpu = c.check("main_cpu", job.main_thread_cpu, MAIN_CPU_BUSY, ">=", "main thread CPU", unit="cores", kind=REQ)
        workers = c.check("worker_cpu", job.worker_cpu, WORKER_CPU_BUSY, "<", s.worker_cpu_what, unit="cores", kind=REQ)
        fires = yes(cpu) and workers is not False and not s.cpu_short
        weight = job.main_thread_cpu
    # The optimizer's part of the step, beside the forward and backward passes: where it is the
    # largest, the remedy names it (trial 39: ~200 parameter groups and per-parameter clipping and EMA
    # loops under a single-tensor AdamW, 43 % of the samples; foreach ops ran it 1.5-1.9x faster).
    # Read over the minute's ticks: one window's lead said "the largest part" beside a report whose
    # stacks put backward at 43 % and the optimizer at 20 % (review 47).
    opt, of = _optimizer_lead(s) if st.available else (0, 0)
    detail = st.top(lb.ROLE_MAIN_THREAD, lb.OPTIMIZER) if opt else None
    if detail is None and st.available:
        detail = st.top(lb.ROLE_MAIN_THREAD, lb.DISPATCH, lb.BACKWARD, lb.OPTIMIZER)
    out = result(c, fires, False, weight, "", main_cpu=job.main_thread_cpu, wait=s.input_wait, wait_n=s.wait_samples,
                 detail=detail, optimizer=opt or None, optimizer_of=of or None)
    return replace(out, stage=CPU_COMPUTE)
