"""DataLoader workers told apart into sets by when they were forked, and their CPU with idle sets
left out.

A DataLoader iterator forks all its workers within milliseconds; another loader's set (a
persistent validation loader's, an earlier pass's left alive) starts seconds apart (SET_GAP_S).
A set that idles beside one at work would halve the working workers' mean: a persistent validation
loader waiting through training beside two training workers at 0.6 core each reads 0.3, under the
line where a worker is said not to compute. So the per-worker CPU leaves out sets under
SET_IDLE_CPU where another set works, and is the mean of every other worker ("of the sets at
work"): not the highest set's mean, which on equal sets (each rank's loader, or one loader whose
forks took longer than the gap) picks the noisiest reading.

phases.py finds the sets over a window of ticks (aligned.py reads those); ``sample_sets`` finds
them in one procs sample, for the window's reading, the drill-down's chart and the straggler line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.thresholds import SET_GAP_S, SET_IDLE_CPU
from gpuwatch.model.procs import ProcInfo, spawned


@dataclass(frozen=True, slots=True)
class SetsCpu:
    cpu: float
    """Mean CPU of one worker (cores), idle sets left out."""
    working_set: int
    """The largest set at work: one loader's num_workers."""
    at_work: int
    """The workers of every set at work (several loaders of one worker each are several at work)."""
    idle_out: bool
    """Some set idled beside a working one and was left out."""


def split_by_start(group: Collection[int], started: Mapping[int, float]) -> list[frozenset[int]]:
    """``group`` split where its workers' start times, in order, lie more than SET_GAP_S apart,
    oldest first; whole where a start is unknown (a recording made before they were kept)."""
    if len(group) < 2 or any(pid not in started for pid in group):
        return [frozenset(group)]
    parts: list[set[int]] = []
    last = None
    for pid in sorted(group, key=lambda p: (started[p], p)):
        if last is None or started[pid] - last > SET_GAP_S:
            parts.append(set())
        parts[-1].add(pid)
        last = started[pid]
    return [frozenset(p) for p in parts]


def working_cpu(cpu: Mapping[int, float], sets: Sequence[Collection[int]]) -> SetsCpu:
    """``cpu`` (cores by worker PID) over ``sets`` (the live sets; workers in none count as one more
    set), idle sets left out where another set works."""
    groups = [live for g in sets if (live := [p for p in g if p in cpu])]
    rest = set(cpu) - {p for g in groups for p in g}
    if rest:
        groups.append(sorted(rest))
    working = [g for g in groups if sum(cpu[p] for p in g) / len(g) >= SET_IDLE_CPU]
    kept = working if working else groups
    n = sum(len(g) for g in kept)
    return SetsCpu(sum(cpu[p] for g in kept for p in g) / n, max(len(g) for g in kept), n,
                   idle_out=len(kept) < len(groups))


def held_sets(out: Sequence[tuple[int, int]], n: int) -> tuple[bool, int, int]:
    """(idle_out, working_set, at_work) over ``n`` readings of which those in ``out`` (each its
    working_set and at_work) left an idle set out: said where half of them or more did (where fewer,
    a validation loader's set living a tick each pass, their median reads the other readings), with
    the most common sizes."""
    if not out or 2 * len(out) < n:
        return False, 0, 0
    return (True, Counter(w for w, _ in out).most_common(1)[0][0],
            Counter(a for _, a in out).most_common(1)[0][0])


def sample_sets(workers: Sequence[ProcInfo]) -> list[frozenset[int]]:
    """The sets among ``workers`` (one sample's rows): each training process's workers apart (a rank's
    loader is no set of another's), split by start time; one set where a start cannot tell them
    apart (unknown, or workers started by spawn or forkserver, whose start times follow the
    interpreter's start-up rather than the loader's loop)."""
    out: list[frozenset[int]] = []
    for main in sorted({w.main_pid or 0 for w in workers}):
        mine = [w for w in workers if (w.main_pid or 0) == main]
        started = {w.pid: w.started for w in mine if w.started is not None and not spawned(w)}
        out += split_by_start([w.pid for w in mine], started)
    return out


def sample_cpu(workers: Sequence[ProcInfo]) -> SetsCpu:
    """One sample's workers' CPU per worker, idle sets left out (``workers`` not empty)."""
    return working_cpu({w.pid: w.cpu_pct / 100.0 for w in workers}, sample_sets(workers))
