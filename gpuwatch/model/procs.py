"""What the process collector reads: the job's process tree, roles and per-thread CPU."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.model.values import Maybe

ROLE_LAUNCHER = "launcher"
ROLE_MAIN = "main"
ROLE_WORKER = "worker"
ROLE_OTHER = "other"

NO_WORKER_SEEN = "no DataLoader worker seen (num_workers=0, or no DataLoader)"
"""Said where a job shows no DataLoader worker: gpuwatch knows one by the process name torch gives it
(pt_data_worker), so a job without one has num_workers=0, feeds itself some other way, or renamed
its workers."""


@dataclass(frozen=True, slots=True)
class ThreadCpu:
    """A thread worth watching: the main thread, ``pt_data_pin``, ``pt_autograd_*``."""

    tid: int
    name: str
    cpu_pct: float
    state: str


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    ppid: int
    role: str
    """launcher, main (a training process: the target or a rank), worker (DataLoader), other."""
    rank: int | None
    """Distributed rank of a main process (RANK / LOCAL_RANK), or of a worker's main."""
    main_pid: int | None
    """For workers and other children: the main process they belong to."""
    name: str
    cmdline: str
    """Command line with likely secrets redacted."""
    cpu_pct: float
    """Percent of one core over the tick."""
    state: str
    rss: int
    num_threads: int
    read_bps: Maybe[float]
    write_bps: Maybe[float]
    run_delay_frac: Maybe[float]
    """Share of the tick the process's threads spent runnable but waiting for a CPU (schedstat)."""
    threads: tuple[ThreadCpu, ...]
    affinity: tuple[int, ...]
    started: float | None = None
    """When the process started, in Unix seconds (psutil's create_time): a DataLoader forks all the
    workers of one iterator together, so their start times tell its set from sets of earlier passes
    still alive. None in recordings made before it was kept."""


SPAWN_MARKS = ("spawn_main", "multiprocessing.forkserver")
"""What the command line of a process started by multiprocessing's spawn or forkserver holds (``python
-c 'from multiprocessing.spawn import spawn_main; ...'``): such a worker imports the training script
and its libraries again before its first item, where a forked one starts from its parent's memory."""


def spawned(p: ProcInfo) -> bool:
    return any(m in p.cmdline for m in SPAWN_MARKS)


@dataclass(frozen=True, slots=True)
class ProcsSample:
    t: float
    processes: tuple[ProcInfo, ...]
    usable_cpus: int
    """CPUs the job may run on (its affinity mask)."""
    exited_cpu_pct: float = 0.0
    """Percent of one core the job's processes that exited during the tick used and no row shows:
    commands the job ran and waited for within one tick (``subprocess.run``), and the last moments
    of workers that ended. Read from their parents' counters of waited-for children (cutime and
    cstime), less what earlier ticks counted of the ones the table had shown."""
    siblings_cpu_pct: float = 0.0
    """In one rank's view of a frame (gpuwatch/ranks.py, frame_for_rank), percent of one core the
    job's other processes used (its other ranks, their workers, the launcher): the job's, not CPU
    used outside it. 0 in a whole frame and in recordings."""

    def by_role(self, role: str) -> tuple[ProcInfo, ...]:
        return tuple(p for p in self.processes if p.role == role)


def worker_forks_as_others(sample: ProcsSample) -> ProcsSample:
    """A recording's sample with a DataLoader worker's own forks as the job's other processes: a
    worker's child carries its process name until it execs (subprocess.run in __getitem__), and
    recordings made before the collector told them apart list each such fork as a worker ("re-created
    7 times" for persistent workers; trial 35). Live samples never hold one (collectors/target.py)."""
    workers = {p.pid for p in sample.processes if p.role == ROLE_WORKER}
    if not any(p.role == ROLE_WORKER and p.ppid in workers for p in sample.processes):
        return sample
    return replace(sample, processes=tuple(replace(p, role=ROLE_OTHER) if p.role == ROLE_WORKER and p.ppid in workers
                                           else p for p in sample.processes))


def forking(sample: ProcsSample) -> frozenset[int]:
    """The DataLoader workers with a fork of their own alive in the sample (a command they run, before
    or after its exec): subprocess starts it with vfork, and the worker waits in the kernel's D state
    until the child execs, which is no disk I/O (trial 35: "33 % in D state" named Disk for a job
    whose workers ran gzip | sort per sample, reading 0 B/s)."""
    workers = {p.pid for p in sample.processes if p.role == ROLE_WORKER}
    return frozenset(p.ppid for p in sample.processes if p.ppid in workers and p.role != ROLE_WORKER)
