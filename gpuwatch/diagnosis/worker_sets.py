"""DataLoader workers told apart into sets by when they were forked, and the busiest set's CPU.

A DataLoader iterator forks all its workers within milliseconds; another loader's set (a
persistent validation loader's, an earlier pass's left alive) starts seconds apart (SET_GAP_S).
phases.py finds the sets over a window of ticks; ``busiest_set_cpu`` reads one procs sample the
same way, so the drill-down's chart and the straggler line say what the evidence says: a persistent
validation loader idling beside two training workers at 0.6 core each halves their mean to 0.3.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from gpuwatch.diagnosis.thresholds import SET_GAP_S
from gpuwatch.model.procs import ProcInfo, spawned


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


def sample_sets(workers: Sequence[ProcInfo]) -> list[frozenset[int]]:
    """The sets among ``workers`` (one sample's rows), by start time; one set where they cannot be
    told apart (a start unknown, or workers started by spawn or forkserver, whose start times follow
    the interpreter's start-up rather than the loader's loop)."""
    started = {w.pid: w.started for w in workers if w.started is not None and not spawned(w)}
    return split_by_start([w.pid for w in workers], started)


def busiest_set_cpu(workers: Sequence[ProcInfo]) -> tuple[float, int]:
    """(CPU per worker in cores, its size) of the busiest of ``workers``' sets (sample_sets)."""
    cpu = {w.pid: w.cpu_pct / 100.0 for w in workers}
    return max((sum(cpu[p] for p in s) / len(s), len(s)) for s in sample_sets(workers))
