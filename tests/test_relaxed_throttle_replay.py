"""The throttle counters read every RELAXED_THROTTLE_S while the pace is relaxed and no bad
clock-event reason has shown since the last read (collectors/gpu.py), replayed on real H200
recordings.

The recordings read the counters every SLOW_TTL_S (the older ones every tick) and show the latest
shares in between. Replayed here through the analysis and the pace as the live pipeline runs them,
each GPU sample is rewritten as the collector now reads it: a new reading once SLOW_TTL_S (full
pace, or a bad reason seen since the last reading) or RELAXED_THROTTLE_S (relaxed) has passed since
the last, each reason's share the mean of the recorded readings since then (the one the recording
shows where none is new: read every tick, steady shares read alike); the last reading in between.
The whole verdict is compared tick by tick.

Outcome on every H200 recording (``python -m tests.test_relaxed_throttle_replay``): 0 of 2,489
ticks differ; 578 ticks show an older reading than recorded. No recording shows a bad
reason (the H200s sat at the SW power cap, which the diagnosis does not count against the GPU).
"""

from __future__ import annotations

import dataclasses

import pytest

from bench.relaxed_stacks import LONGEST_RELAXED, before_after, per_sample, recordings
from gpuwatch.collectors.gpu import RELAXED_THROTTLE_S
from gpuwatch.collectors.nvml_collector import SLOW_TTL_S
from gpuwatch.diagnosis.thresholds import BAD_REASON_BITS
from gpuwatch.model.values import known

RUNS = LONGEST_RELAXED
SLACK_S = 0.5
"""Ticks are about a second apart, never exactly: a reading SLOW_TTL_S after the last lands on the
tick the recording's own reading did."""


class ThrottleReads:
    """Each GPU's last reading, when, the recorded readings since, and whether a bad reason showed."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[float, object]] = {}
        self.since: dict[int, list] = {}
        self.recorded: dict[int, object] = {}
        """Each GPU's reading as recorded on the tick before."""
        self.bad: set[int] = set()
        """GPUs whose clock-event reasons showed a bad one since the last reading."""
        self.older = 0
        """Ticks that show an older reading than the recording."""
        self.oldest = 0.0
        """The age of the oldest reading a tick showed, in seconds."""
        self.frame = per_sample("gpus", self._as_read)

    def _as_read(self, g, relaxed: bool):
        if not known(g.throttle):
            self.last.pop(g.index, None)
            self.since.pop(g.index, None)
            return g
        got = self.since.setdefault(g.index, [])
        hit = self.last.get(g.index)
        new = hit is None or g.throttle != (got[-1] if got else self.recorded.get(g.index))
        self.recorded[g.index] = g.throttle
        if new:
            got.append(g.throttle)  # the recording read the counters on this tick
        if known(g.clock_reasons) and g.clock_reasons & BAD_REASON_BITS:
            self.bad.add(g.index)
        every = RELAXED_THROTTLE_S if relaxed and g.index not in self.bad else SLOW_TTL_S
        if hit is not None and g.t - hit[0] < every - SLACK_S:
            self.older += hit[1] != g.throttle
            self.oldest = max(self.oldest, g.t - hit[0])
            return dataclasses.replace(g, throttle=hit[1])
        # Due: the recorded readings since the last, or, where the recording shows none new (its
        # reading every tick gave the same shares, or its own next reading is a tick or two away),
        # the one it shows.
        value = _mean(self.since.pop(g.index)) if got else g.throttle
        self.last[g.index] = (g.t, value)
        self.bad.discard(g.index)
        return dataclasses.replace(g, throttle=value)


def _mean(readings: list) -> tuple:
    """Each reason's mean share over the readings (the last reading's reasons, in its order)."""
    shares: dict[str, list[float]] = {}
    for r in readings:
        for name, frac in r:
            shares.setdefault(name, []).append(frac)
    return tuple((name, sum(shares[name]) / len(shares[name])) for name, _ in readings[-1])


@pytest.mark.parametrize("rel", RUNS)
def test_relaxed_throttle_reads_change_no_verdict(rel):
    reads = ThrottleReads()
    before, after = before_after(rel, reads.frame)
    assert sum(r[0][4] for r in before) >= 10
    assert reads.oldest < RELAXED_THROTTLE_S  # read as often as the collector reads
    assert after == before


def test_the_relaxed_replays_hold_older_readings():
    reads = ThrottleReads()
    before_after("bench/results/2026-12-04-h200/run31/accuracy/healthy.jsonl.gz", reads.frame)
    assert reads.older > 0  # there was something to hold


def main() -> int:
    differ = total = older = 0
    for rel in recordings():
        reads = ThrottleReads()
        before, after = before_after(rel, reads.frame)
        bad = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
        differ, total, older = differ + len(bad), total + len(before), older + reads.older
        if bad:
            print(f"{rel}: {len(before)} ticks, older readings {reads.older}, differ {bad}")
    print(f"{differ} of {total} ticks differ; {older} ticks show an older reading than recorded")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
