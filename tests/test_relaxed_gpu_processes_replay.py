"""Each GPU's compute-process list read while the pace is relaxed only when the GPU's used memory
changed, or RELAXED_PROCESSES_S after the last read (collectors/gpu.py, NvmlSession.procs_hold_s),
replayed on real H200 recordings.

The recordings read the list every tick. Replayed here through the analysis and the pace as the
live pipeline runs them, each GPU sample of a relaxed tick is rewritten as the collector now reads
it: where the sample's used memory equals the one read with the held list, and that list is younger
than RELAXED_PROCESSES_S, the held list's processes (their PIDs and memory) stand, with the tick's
own per-process utilization and job membership, as the collector builds them. The whole verdict is
compared tick by tick.

Outcome on every H200 recording (``python -m tests.test_relaxed_gpu_processes_replay``): 545
relaxed ticks hold the list, none of them a list that differs from the recorded one, and 0 of 2,489
ticks differ.
"""

from __future__ import annotations

import dataclasses

import pytest

from bench.relaxed_stacks import LONGEST_RELAXED, before_after, per_sample, recordings
from gpuwatch.collectors.gpu import RELAXED_PROCESSES_S
from gpuwatch.model.values import known

RUNS = LONGEST_RELAXED


class HeldLists:
    """Each GPU's list as last read, when, and its used memory then."""

    def __init__(self) -> None:
        self.read: dict[int, tuple[float, object, tuple]] = {}
        self.held = 0
        """Relaxed ticks that kept the list."""
        self.stale = 0
        """Of those, ticks whose kept list differs from the recorded one (PIDs or memory)."""
        self.frame = per_sample("gpus", self._as_read)

    def _as_read(self, g, relaxed: bool):
        last = self.read.get(g.index)
        if not relaxed or not known(g.mem_used):
            self.read.pop(g.index, None)
            return g
        if last is None or g.t - last[0] >= RELAXED_PROCESSES_S or last[1] != g.mem_used:
            self.read[g.index] = (g.t, g.mem_used, g.processes)
            return g
        self.held += 1
        recorded = {p.pid: p for p in g.processes}
        kept = tuple(_as_built(p, recorded.get(p.pid), g.processes) for p in last[2])
        self.stale += _identity(kept) != _identity(g.processes)
        return dataclasses.replace(g, processes=kept)


def _as_built(held, now, recorded: tuple):
    """A held process as the collector builds it on this tick: the tick's utilization (0 where
    NVML listed none for it) and membership of the job."""
    if now is not None:
        return dataclasses.replace(held, sm_util=now.sm_util, is_target=now.is_target)
    measured = recorded and all(known(p.sm_util) for p in recorded)
    return dataclasses.replace(held, sm_util=0.0) if measured else held


def _identity(procs: tuple) -> tuple:
    return tuple((p.pid, p.used_memory) for p in procs)


@pytest.mark.parametrize("rel", RUNS)
def test_relaxed_process_lists_change_no_verdict(rel):
    lists = HeldLists()
    before, after = before_after(rel, lists.frame)
    assert sum(r[0][4] for r in before) >= 10
    assert lists.held > 0  # relaxed ticks kept the list: there was something to change
    assert lists.stale == 0
    assert after == before


def main() -> int:
    differ = total = held = stale = 0
    for rel in recordings():
        lists = HeldLists()
        before, after = before_after(rel, lists.frame)
        bad = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
        differ, total, held, stale = differ + len(bad), total + len(before), held + lists.held, stale + lists.stale
        if bad or lists.stale:
            print(f"{rel}: {len(before)} ticks, held {lists.held}, of which stale {lists.stale}, differ {bad}")
    print(f"{differ} of {total} ticks differ; {held} relaxed ticks held the list, {stale} of them a stale one")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
