"""Everything a decision needs from one window of frames, read once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuwatch.diagnosis.aligned import Aligned, aligned

from gpuwatch.diagnosis.gpu_signals import GpuSignals, gpu_signals
from gpuwatch.diagnosis.host_signals import (
    DiskSignals,
    HostSignals,
    JobSignals,
    disk_signals,
    host_signals,
    job_signals,
    queued_threads,
)
from gpuwatch.diagnosis.sample_memo import WindowMemo
from gpuwatch.diagnosis.stack_signals import StackSignals, stack_signals
from gpuwatch.diagnosis.thresholds import (
    BUSY_STARVED,
    IDLE_FOR_WORKER,
    JOB_CPU_SATURATED,
    MAIN_CPU_BUSY,
    MIN_EVIDENCE_SAMPLES,
    MIN_WORKER_SAMPLES,
    STICKY_STACK_FACTOR,
    VALIDATION_WAITS,
    WORKER_CPU_IO,
    high_cut,
    moderate_cut,
)
from gpuwatch.diagnosis.timeline import WAIT_LABELS, Tick, timeline
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Phase


@dataclass(frozen=True, slots=True)
class Epochs:
    """The last minute, for the epoch structure (diagnosis/__init__.py computes it once a tick)."""

    phases: tuple[Phase, ...] = ()
    recurring_wait: float | None = None
    """The minute's data-wait share, for a job whose waits recur with its epochs (phases.py)."""
    ticks: Sequence[Tick] = ()

    @property
    def samples(self) -> int:
        """Main-thread stack samples in the minute."""
        return sum(t.n_main for t in self.ticks)


@dataclass(frozen=True, slots=True)
class Signals:
    t: float
    frames: int
    span_s: float
    alive: bool
    exit_reason: str | None
    gpu: GpuSignals
    job: JobSignals
    host: HostSignals
    disk: DiskSignals
    stacks: StackSignals
    sticky_stacks: StackSignals | None = None
    """The same counts over STICKY_STACK_FACTOR times the samples, for the stage in force."""
    held_queue: float | None = None
    """The job's threads queued for a CPU (host_signals.queued_threads) over the stage in force's
    own window (its regime, up to WINDOW_S), for contention held in force (system_stages.py)."""
    held_others: float | None = None
    """Cores used outside the job over that same window (HostSignals.others_cpu)."""
    aligned: Aligned = Aligned()
    """The workers' readings in the ticks where the main thread waited for data (aligned.py).
    Where there are enough of them, ``job`` and ``stacks`` already carry them in place of the
    window's means; ``job.worker_cpu_mean`` keeps the window's mean over every set."""
    phases: tuple[Phase, ...] = ()
    """The epoch structure over the last minute (phases.py)."""
    recurring_wait: float | None = None
    """Set for a job whose data waits recur with its epochs: the minute's wait share, which the
    input stages judge instead of the window's (see input_wait)."""
    epoch_samples: int = 0
    """Main-thread stack samples the phases' shares were read from."""
    epoch_ticks: Sequence[Tick] = ()
    """The last minute tick by tick (the phases' source), for the fixes' own gains (fix_gains.py)."""

    @property
    def input_wait(self) -> float | None:
        """The main thread's data-wait share the input stages judge: over whole epochs for a job
        whose waits recur with them, else over the window."""
        return self.recurring_wait if self.recurring_wait is not None else self.wait
    # -- the few derived readings several stages share -------------------------------------------
    @property
    def gpu_starved(self) -> bool:
        """The job's GPU busy under BUSY_STARVED: its idle time is evidence of a wait. Not a host with
        no GPU: nothing there backs one stack sample's wait (trial 34: one sample of three named a
        stage on a CPU DDP job whose own clock read a 2-7 % data wait)."""
        busy = self.gpu.compute_busy
        return self.gpu.present and busy is not None and busy < BUSY_STARVED

    @property
    def self_fed(self) -> bool:
        """The main thread waits for batches (input_wait at its high cut) with no DataLoader worker
        seen: the job makes them elsewhere (a thread, a queue a Pool fills)."""
        return (self.input_wait or 0.0) >= self.wait_high and self.job.seen and self.job.workers <= 0

    @property
    def idle_out(self) -> bool:
        """job.worker_cpu left an idle set of workers out (worker_sets.py): read from the ticks the
        main thread waited in where those give the reading (_during_wait), else from the window."""
        return self._sets.idle_out

    @property
    def working_set(self) -> int:
        """There, the largest set at work: the busy loader's num_workers (0 where none was left out)."""
        return self._sets.working_set

    @property
    def at_work(self) -> int:
        """There, the workers of every set at work (0 where none was left out)."""
        return self._sets.at_work

    @property
    def _sets(self) -> Aligned | JobSignals:
        """Whichever reading job.worker_cpu holds (_during_wait): the waiting ticks' or the window's."""
        return self.aligned if self.aligned.usable and self.aligned.worker_cpu is not None else self.job

    @property
    def worker_cpu_what(self) -> str:
        """The worker CPU evidence rows' words, as every stage reads them."""
        return "CPU per DataLoader worker" + (" of the sets at work" if self.idle_out else "")

    @property
    def wait_samples(self) -> int:
        """The main-thread samples input_wait is read from: the minute's for waits that recur with
        the epochs, else the window's."""
        return self.epoch_samples if self.recurring_wait is not None else self.stacks.n_main

    @property
    def validation_waits(self) -> tuple[int, int]:
        """(samples waiting for a batch inside an evaluation pass, all samples waiting for a batch),
        over the samples input_wait is read from."""
        if self.recurring_wait is not None:
            ticks = self.epoch_ticks
            return (sum(t.validation_wait for t in ticks),
                    sum(t.main.get(x, 0) for t in ticks for x in WAIT_LABELS))
        st = self.stacks
        return st.validation_wait, sum(st.main.get(x, 0) for x in WAIT_LABELS)

    @property
    def validation_loader(self) -> bool:
        """Most of the data wait is the validation loader's (VALIDATION_WAITS)."""
        k, n = self.validation_waits
        return k >= MIN_EVIDENCE_SAMPLES and k > VALIDATION_WAITS * n

    @property
    def wait_high(self) -> float:
        """The cut at which input_wait is high, over the main-thread samples it is read from
        (thresholds.high_cut)."""
        return high_cut(self.wait_samples, self.gpu_starved)

    @property
    def wait_moderate(self) -> float:
        """The cut at which input_wait is moderate, over the samples it is read from (moderate_cut)."""
        return moderate_cut(self.wait_samples)

    @property
    def wait(self) -> float | None:
        return self.stacks.wait if self.stacks.available else None

    @property
    def input_on_cpus(self) -> float | None:
        """The DataLoader workers' CPU (cores) where the step gets under a core (MAIN_CPU_BUSY) because
        the job's own input takes the CPUs: its workers fill them (cpu_short), or with the training
        process fill them (JOB_CPU_SATURATED), at half a core or more (WORKER_CPU_IO) and taking what
        the process leaves (within IDLE_FOR_WORKER). None otherwise. Trial 38: workers decoding PNGs
        at 0.9 core beside a step at 0.49 core of 2 CPUs read "CPU-bound ... not its input", where a
        pre-decoded cache ran the job 2.9x faster."""
        job = self.job
        main, workers, usable = job.main_thread_cpu, job.workers_cpu, job.usable_cpus
        if main is None or workers is None or not usable or main >= MAIN_CPU_BUSY:
            return None
        # Light workers beside a process whose own threads fill 6.4 of 8 CPUs are not why its main
        # thread gets under a core (review 45).
        takes = job.main_cpu is not None and workers >= usable - job.main_cpu - IDLE_FOR_WORKER
        full = (job.job_cpu is not None and job.job_cpu >= JOB_CPU_SATURATED * usable and workers >= WORKER_CPU_IO
                and takes)
        return workers if self.cpu_short or full else None

    @property
    def input_fills_cpus(self) -> bool:
        """The job's DataLoader workers fill the CPUs its step runs on too (cpu_short, input_on_cpus):
        a cheaper input then gives the step CPU as well (speedup.shares_cpus, fix_gains.cheaper_transform)."""
        return self.cpu_short or self.input_on_cpus is not None

    @property
    def runs_compiled(self) -> bool:
        """The main thread's samples over the minute (epoch_ticks) caught torch.compile's compiler or a
        compiled model (timeline.COMPILED_FRAMES): the job already uses torch.compile."""
        return any(t.compiled for t in self.epoch_ticks)

    def minute_main(self) -> tuple[Counter, int]:
        """The main thread's stack labels counted over the minute's ticks (epoch_ticks), and its samples
        there: a share read over more than one window."""
        counts: Counter = Counter()
        for t in self.epoch_ticks:
            counts.update(t.main)
        return counts, sum(t.n_main for t in self.epoch_ticks)

    @property
    def cpu_short(self) -> bool:
        """The job's workers have the usable CPUs to themselves and fill them (no core to spare)."""
        used, usable = self.job.workers_cpu, self.job.usable_cpus
        return used is not None and bool(usable) and used >= JOB_CPU_SATURATED * usable  # type: ignore[operator]


def extract(frames: Sequence[Frame], pool: Sequence[Frame], rank: int | None,
            held_pool: Sequence[Frame] | None = None, epochs: Epochs = Epochs()) -> Signals:
    """Signals over ``frames`` (the decision's window, oldest first). Stack counts cover the same
    span and widen back through ``pool`` (a longer history ending at the same frame) only as far
    as needed for enough main-thread samples. The stage in force gets wider counts, reaching back
    through ``held_pool`` (its own regime: never into what came before it)."""
    last = frames[-1]
    span = last.t - frames[0].t + 1e-6
    job, host = _job_host(frames, rank)
    stacks = stack_signals(pool or frames, span, rank)
    sticky = stack_signals(held_pool or pool or frames, span, rank, STICKY_STACK_FACTOR)
    if epochs.recurring_wait is not None:
        during = aligned(epochs.ticks)  # the workers during the epochs' waits, not only this window's
    else:
        during = aligned(timeline(frames, rank))
        if not during.usable and pool:
            during = aligned(timeline(pool, rank))
    if during.usable:  # job.job_cpu, which host read, is kept
        job, stacks, sticky = _during_wait(during, job, stacks, sticky)
    return Signals(
        t=last.t,
        frames=len(frames),
        span_s=last.t - frames[0].t,
        alive=last.target.alive,
        exit_reason=last.target.exit_reason,
        gpu=gpu_signals(frames, job.main_pids, rank),
        job=job,
        host=host,
        disk=disk_signals(frames),
        stacks=stacks,
        sticky_stacks=sticky,
        **_held(held_pool, frames, rank, job, host),
        aligned=during,
        phases=epochs.phases,
        recurring_wait=epochs.recurring_wait if stacks.available else None,
        epoch_samples=epochs.samples,
        epoch_ticks=epochs.ticks,
    )


def _held(held_pool: Sequence[Frame] | None, frames: Sequence[Frame], rank: int | None, job: JobSignals,
          host: HostSignals) -> dict[str, float | None]:
    """The CPU queue and the outside load over the stage in force's own window (the window itself
    where the decision reads that window already)."""
    if not held_pool:
        return {}
    if held_pool is frames:
        return dict(held_queue=queued_threads(job), held_others=host.others_cpu)
    hj, hh = _job_host(held_pool, rank)
    return dict(held_queue=queued_threads(hj), held_others=hh.others_cpu)


def _job_host(frames: Sequence[Frame], rank: int | None) -> tuple[JobSignals, HostSignals]:
    """The job's and the host's signals over ``frames``, read once per window: on a steady tick
    the candidate's held window (``_held``) is the verdict's own window, read again by its extract."""
    def work() -> tuple[JobSignals, HostSignals]:
        job = job_signals(frames, rank)
        return job, host_signals(frames, job.job_cpu)
    return _WINDOWS.get(frames, rank, work)


_WINDOWS: WindowMemo[tuple[JobSignals, HostSignals]] = WindowMemo(8)
"""By window and rank (sample_memo.py): a tick reads three or four windows."""


def _during_wait(a: Aligned, job: JobSignals, stacks: StackSignals, sticky: StackSignals):
    """The workers' readings of the waiting ticks in place of the window's (stacks: where enough
    worker samples fell in those ticks)."""
    job = replace(job, worker_cpu=a.worker_cpu if a.worker_cpu is not None else job.worker_cpu,
                  workers_cpu=a.workers_cpu if a.workers_cpu is not None else job.workers_cpu,
                  worker_d=a.worker_d if a.worker_d is not None else job.worker_d,
                  worker_read_bps=a.worker_read_bps if a.worker_read_bps is not None else job.worker_read_bps)
    if sum(a.worker_labels.values()) >= MIN_WORKER_SAMPLES:
        stacks = replace(stacks, worker=a.worker_labels)
        sticky = replace(sticky, worker=a.worker_labels) if sticky.available else sticky
    return job, stacks, sticky
