"""What the workers do while the main thread waits for data: readings of the same ticks.

A loader that decodes flat out only at the start of each epoch, then idles while the main thread
trains on prefetched batches, averages 0.4 core a worker over a window: under the disk stage's 0.5-core
"not computing" line, though every worker ran a full core exactly while the main thread waited.
Here only the ticks whose stack samples show the main thread waiting count, each with its own
procs sample (same frame, same ~1 s), so CPU, D states, reads and worker stack labels are taken
at the instants of the wait.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuwatch.diagnosis.phases import pid_sets
from gpuwatch.diagnosis.thresholds import ALIGNED_MIN_TICKS, ALIGNED_WAIT
from gpuwatch.diagnosis.timeline import Tick
from gpuwatch.diagnosis.window import mean, med
from gpuwatch.diagnosis.worker_sets import SetsCpu, held_sets, working_cpu


@dataclass(frozen=True, slots=True)
class Aligned:
    ticks: int = 0
    """Ticks in which the main thread waited for data most of its samples (with a procs sample)."""
    worker_cpu: float | None = None
    """Mean CPU of one worker in those ticks (median over the ticks), idle sets left out where another
    set works (worker_sets.working_cpu)."""
    idle_out: bool = False
    """In half those ticks or more, an idle set was left out of worker_cpu."""
    working_set: int = 0
    """There, the largest set at work (the most common over those ticks): the busy loader's
    num_workers, where the largest set may be another loader's (a 2 + 1 job told "raise num_workers
    from 2")."""
    at_work: int = 0
    """There, the workers of every set at work (the most common over those ticks)."""
    workers_cpu: float | None = None
    worker_cpu_top: float | None = None
    """CPU of the busiest worker in those ticks (median over the ticks): the one building the batch
    the main thread waits for. Batches come back in order, so with many workers and short epochs
    most workers idle (done, or not yet asked) while that one runs flat out: their mean hides it."""
    worker_cpu_least: float | None = None
    """CPU of the least busy worker in those ticks (median over the ticks): beside the busiest, how
    evenly the workers share the work."""
    worker_d: float | None = None
    worker_read_bps: float | None = None
    worker_labels: Counter = field(default_factory=Counter)
    """Worker stack labels sampled in those ticks."""
    no_workers: int = 0
    """Of those ticks, the ones with no live worker (the loader between two sets of workers)."""
    starting: int = 0
    """Of those ticks, the ones whose main samples sat in the DataLoader's worker start-up."""

    @property
    def usable(self) -> bool:
        return self.ticks >= ALIGNED_MIN_TICKS


def aligned(ticks: Sequence[Tick]) -> Aligned:
    waiting = [t for t in ticks if t.procs and t.stacks and (t.wait or 0.0) >= ALIGNED_WAIT]
    if not waiting:
        return Aligned()
    with_workers = [t for t in waiting if t.worker_cpu]
    sets = pid_sets(ticks) if any(len(t.workers) >= 2 for t in with_workers) else ()
    labels: Counter = Counter()
    for t in waiting:
        labels.update(t.worker_labels)
    # each tick's reading, idle sets left out, worked out once
    per = [_sets_cpu(t, sets) for t in with_workers]
    idle_out, working_set, at_work = held_sets([(r.working_set, r.at_work) for r in per if r.idle_out], len(per))
    return Aligned(
        ticks=len(waiting),
        worker_cpu=med(r.cpu for r in per),
        idle_out=idle_out,
        working_set=working_set,
        at_work=at_work,
        workers_cpu=med(sum(t.worker_cpu) for t in with_workers),
        worker_cpu_top=med(max(t.worker_cpu) for t in with_workers),
        worker_cpu_least=med(min(t.worker_cpu) for t in with_workers),
        worker_d=mean(t.worker_d for t in with_workers),
        worker_read_bps=med(t.worker_read_bps for t in with_workers),
        worker_labels=labels,
        no_workers=len(waiting) - len(with_workers),
        starting=sum(1 for t in waiting if t.starting),
    )


def _sets_cpu(t: Tick, sets: Sequence[frozenset[int]]) -> SetsCpu:
    """The tick's CPU per worker over the window's sets, idle ones left out (worker_sets.py)."""
    return working_cpu(dict(zip(t.worker_pids, t.worker_cpu)), sets)
