"""The PCIe replay counter read every RELAXED_REPLAYS_EVERY ticks while the pace is relaxed
(collectors/pcie.py), replayed on real H200 recordings.

The recordings read the counter every tick. Replayed here through the analysis and the pace as the
live pipeline runs them, each PCIe sample is rewritten as the collector now reads it: on a relaxed
tick but one in RELAXED_REPLAYS_EVERY no count (REPLAYS_HELD), and the next read's count is the sum
of the recorded ones since the last read. The whole verdict is compared tick by tick (stage,
confidence, stall, candidate, pace, sentence, evidence, remedies, levels).

Outcome on every H200 recording (``python -m tests.test_relaxed_replays_replay``): 316 relaxed ticks
read no count, and 1 of 2,489 ticks differs, in one evidence line only: the healthy job's last
tick (the job exited: stage idle, said the same) has three frames in its window, one of which
read the counter, so there is no rate to give, and the "PCIe replays: 0.0/s" line of the
host-to-device stage's evidence (information, not a requirement) is left out. No stage,
confidence, sentence or remedy changes, and no replay rate reads a different value.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.relaxed_stacks import LONGEST_RELAXED, outcome, paced_replay, per_sample, recordings
from gpuwatch.collectors.pcie import RELAXED_REPLAYS_EVERY, REPLAYS_HELD
from gpuwatch.diagnosis.gpu_signals import gpu_signals
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
RUNS = LONGEST_RELAXED


class ReplayReads:
    """Each link's skipped ticks and the recorded counts they hold back."""

    def __init__(self) -> None:
        self.skipped: dict[int, int] = {}
        self.pending: dict[int, int] = {}
        self.held = 0
        """Ticks rewritten to REPLAYS_HELD."""
        self.frame = per_sample("pcie", self._as_read)

    def _as_read(self, p, relaxed: bool):
        if not known(p.replay_delta):  # not read (first window, an error): the next read starts over
            self.skipped[p.index], self.pending[p.index] = 0, 0
            return p
        n = self.skipped.get(p.index, 0)
        if relaxed and n < RELAXED_REPLAYS_EVERY - 1:
            self.skipped[p.index] = n + 1
            self.pending[p.index] = self.pending.get(p.index, 0) + p.replay_delta
            self.held += 1
            return dataclasses.replace(p, replay_delta=REPLAYS_HELD)
        self.skipped[p.index] = 0
        return dataclasses.replace(p, replay_delta=self.pending.pop(p.index, 0) + p.replay_delta)


def replay(frames, reads: ReplayReads | None) -> list[tuple]:
    """The whole verdict but its time and its replay-rate evidence, the pace after it, and the
    replay-rate evidence apart, per frame."""
    out = []
    for _, v, relaxed in paced_replay(frames, reads.frame if reads is not None else None):
        rest = tuple(e for e in v.evidence if e.signal != "replays")
        rate = tuple(e for e in v.evidence if e.signal == "replays")
        out.append(((outcome(v, relaxed), v.sentence, rest, v.secondary, v.remedies, v.levels), rate))
    return out


def rate_lines_kept(before: list[tuple], after: list[tuple]) -> list[int]:
    """Ticks whose replay-rate evidence is left out with the counter read less often."""
    dropped = []
    for k, ((_, rate_b), (_, rate_a)) in enumerate(zip(before, after)):
        if rate_a != rate_b:
            assert not rate_a, (k, rate_b, rate_a)  # never another value: only no rate to give
            dropped.append(k)
    return dropped


@pytest.mark.parametrize("rel", RUNS)
def test_relaxed_replay_counter_changes_no_verdict(rel):
    frames = list(load_frames(str(ROOT / rel)))
    before = replay(frames, None)
    reads = ReplayReads()
    after = replay(frames, reads)
    assert sum(r[0][0][4] for r in before) >= 10
    assert reads.held > 0  # relaxed ticks went without a read: there was something to change
    assert [r[0] for r in after] == [r[0] for r in before]
    dropped = rate_lines_kept(before, after)
    assert len(dropped) <= 1 and all(after[k][0][0][0] == "idle" for k in dropped)  # the exited job's last tick


RATE = 1000.0
"""Replays a second of the synthetic counter below."""


def with_counter(frames: list) -> list:
    """Each link's replay_delta as a counter at RATE a second read at the recorded ticks gives it."""
    last: dict[int, float] = {}
    out = []
    for f in frames:
        if isinstance(f.pcie, tuple):
            pcie = []
            for p in f.pcie:
                before = last.get(p.index, p.t)
                last[p.index] = max(before, p.t)
                pcie.append(dataclasses.replace(p, replay_delta=int(RATE * p.t) - int(RATE * before)))
            f = dataclasses.replace(f, pcie=tuple(pcie))
        out.append(f)
    return out


def test_the_replay_rate_over_held_ticks_is_the_rate_read_every_tick():
    """The H200 recordings saw no replay, so their verdicts cannot show the rate: here each link of a
    real recording holds a synthetic counter (with_counter), read every tick and held every second."""
    frames = with_counter(list(load_frames(str(ROOT / RUNS[0]))))
    reads = ReplayReads()
    held = [reads.frame(f, True) for f in frames]
    assert reads.held >= len(frames) // 3
    for k in range(8, len(frames), 5):
        assert gpu_signals(frames[k - 8:k], frozenset(), None).replays_per_s == pytest.approx(RATE, rel=0.001)
        assert gpu_signals(held[k - 8:k], frozenset(), None).replays_per_s == pytest.approx(RATE, rel=0.001)


def main() -> int:
    differ = total = held = rate_left_out = 0
    for rel in recordings():
        frames = list(load_frames(str(ROOT / rel)))
        before = replay(frames, None)
        reads = ReplayReads()
        after = replay(frames, reads)
        bad = [k for k, (a, b) in enumerate(zip(before, after)) if a[0] != b[0]]
        dropped = rate_lines_kept(before, after)
        differ += len(bad)
        rate_left_out += len(dropped)
        total += len(before)
        held += reads.held
        if bad or dropped or reads.held:
            print(f"{rel}: {len(before)} ticks, relaxed {sum(r[0][0][4] for r in before)}, held {reads.held}, "
                  f"differ {bad}, replay rate left out {dropped}")
    print(f"{differ} of {total} ticks differ beside the replay rate's evidence, which {rate_left_out} leave out; "
          f"{held} relaxed ticks read no replay count")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
