"""Memory and per-process utilization read every RELAXED_SLOW_S while the pace is relaxed
(collectors/gpu.py), replayed on real H200 recordings.

The recordings hold both as read every tick or every SLOW_TTL_S. Replayed here through the
analysis and the pace as the live pipeline runs them, each GPU sample is rewritten as the
collector now reads it: a new reading only once SLOW_TTL_S (full pace) or RELAXED_SLOW_S (relaxed)
has passed since the last, the mean of the recorded readings since then; the last reading in
between. Memory utilization is held so only beside GPM, per-process utilization only while the
job is alone on the GPU, as the collector does.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.relaxed_stacks import LONGEST_RELAXED, outcome, paced_replay, recordings
from gpuwatch.collectors.gpu import RELAXED_SLOW_S
from gpuwatch.collectors.nvml_collector import SLOW_TTL_S
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
RUNS = LONGEST_RELAXED


class SlowReads:
    """Each GPU's last reading of the two buffers, and the recorded readings since."""

    def __init__(self) -> None:
        self.last: dict[tuple[int, str], tuple[float, object]] = {}
        self.since: dict[tuple[int, str], list] = {}
        self.held = 0
        """Ticks whose reading was held where the recording read a new one."""
        self.longer = 0
        """Of those, ticks held only because the pace was relaxed (older than SLOW_TTL_S)."""

    def read(self, key: tuple[int, str], t: float, recorded: object, every: float) -> object:
        self.since.setdefault(key, []).append(recorded)
        hit = self.last.get(key)
        if hit is not None and t - hit[0] < every:
            self.held += hit[1] != recorded
            self.longer += hit[1] != recorded and t - hit[0] >= SLOW_TTL_S
            return hit[1]
        got = self.since.pop(key)
        value = _mean(got)
        self.last[key] = (t, value)
        return value

    def gpu(self, g, t: float, relaxed: bool):
        every = RELAXED_SLOW_S if relaxed else SLOW_TTL_S
        changes = {}
        if known(g.gpm):  # beside GPM, as the collector reads it; without, every tick
            changes["util_mem"] = self.read((g.index, "mem"), t, g.util_mem, every)
        if g.processes and all(p.is_target for p in g.processes):
            utils = self.read((g.index, "procs"), t, tuple(p.sm_util for p in g.processes), every)
            if len(utils) == len(g.processes):  # a process came or went: read now, as recorded
                changes["processes"] = tuple(dataclasses.replace(p, sm_util=u) for p, u in zip(g.processes, utils))
        return dataclasses.replace(g, **changes)


def _mean(readings: list) -> object:
    """The mean of the readings (per item for tuples); an unknown one is kept as read."""
    last = readings[-1]
    if isinstance(last, tuple):
        cols = [r for r in readings if isinstance(r, tuple) and len(r) == len(last)]
        return tuple(_mean([c[k] for c in cols]) for k in range(len(last)))
    nums = [r for r in readings if isinstance(r, (int, float)) and not isinstance(r, bool)]
    return sum(nums) / len(nums) if nums and known(last) else last


def replay(frames, slow: bool):
    """[(stage, confidence, stall, candidate, relaxed after the tick)] per frame, and the reads."""
    reads = SlowReads()
    seen: dict[tuple[int, float], object] = {}

    def as_read(f, relaxed: bool):
        if not isinstance(f.gpus, tuple):
            return f
        gpus = []
        for g in f.gpus:
            key = (g.index, g.t)
            if key not in seen:  # a frame may show a sample again: rewrite it once
                seen[key] = reads.gpu(g, f.t, relaxed)
            gpus.append(seen[key])
        return dataclasses.replace(f, gpus=tuple(gpus))

    out = [outcome(v, relaxed) for _, v, relaxed in paced_replay(frames, as_read if slow else None)]
    return out, reads


@pytest.mark.parametrize("rel", RUNS)
def test_relaxed_slow_reads_change_no_verdict_and_no_pace(rel):
    frames = list(load_frames(str(ROOT / rel)))
    before, _ = replay(frames, slow=False)
    after, reads = replay(frames, slow=True)
    assert sum(r[4] for r in before) >= 10
    assert reads.longer > 0  # held past SLOW_TTL_S while relaxed: there was something to hold
    assert after == before


def main() -> int:
    differ = total = 0
    for rel in recordings():
        frames = list(load_frames(str(ROOT / rel)))
        before, _ = replay(frames, slow=False)
        after, reads = replay(frames, slow=True)
        bad = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
        differ += len(bad)
        total += len(before)
        print(f"{rel}: {len(before)} ticks, relaxed {sum(r[4] for r in before)}, readings held {reads.held} ({reads.longer} for being relaxed), differ {bad}")
    print(f"{differ} of {total} ticks differ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
