"""The processes outside the job scanned every RELAXED_EVERY_S while the pace is relaxed
(collectors/others.py), replayed on real H200 recordings.

The recordings hold a list from a scan every EVERY_S. Replayed here through the analysis and the
pace as the live pipeline runs them, each host sample's list is rewritten as the collector now
reads it: at full pace as recorded; on a relaxed tick, a new recorded list is taken only once
RELAXED_EVERY_S have passed since the list shown was taken, else the list shown is held. A scan is
due on a tick where the recorded list changes, and on a tick of the recording's own EVERY_S grid
(its phase is unknown: all three are tried, and each phase of the relaxed grid).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.relaxed_stacks import outcome, paced_replay, recordings
from gpuwatch.collectors.others import EVERY_S, RELAXED_EVERY_S
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
RUNS = [
    "bench/results/2026-12-03-h200/run11/self2/rec/tui.jsonl.gz",
    "bench/results/2026-12-02-h200/run3/acc_long/healthy.jsonl.gz",
    "bench/results/2026-12-03-h200/run11/acc_switch/switch.jsonl.gz",
    "bench/results/2026-12-04-h200/run31/accuracy/healthy.jsonl.gz",
    "bench/results/2026-12-04-h200/run31/accuracy/tokenize_workers.jsonl.gz",
    "tests/data/h200/field_tokenize_workers.jsonl.gz",
]
"""The H200 recordings that list an outside process on relaxed ticks: the steady benchmark job, two
minutes of a healthy job, a switch run, and a healthy and a tokenize job. Every H200 recording reads
the same (``python -m tests.test_relaxed_others_replay``: 0 of 14,934 ticks differ over the six
phases, 204 relaxed ticks held an older list)."""
SLACK_S = 0.5
"""Ticks are about a second apart, never exactly: a scan EVERY_S after the last lands on the third
tick after it."""


class HeldLists:
    """The list shown, when it was taken, and how many relaxed ticks held an older one."""

    def __init__(self, grid_phase: int, relaxed_phase: float) -> None:
        self.grid_phase = grid_phase
        self.relaxed_phase = relaxed_phase
        self.shown = None
        self.taken: float | None = None
        self.prev = None
        self.n = 0
        self.held = 0

    def read(self, t: float, recorded: tuple, relaxed: bool) -> tuple:
        scan = recorded != self.prev or (self.n + self.grid_phase) % round(EVERY_S) == 0
        self.prev, self.n = recorded, self.n + 1
        if self.taken is None:
            self.taken = t - self.relaxed_phase
        if not scan:
            return self.shown if self.shown is not None else recorded
        if relaxed and self.shown is not None and t - self.taken < RELAXED_EVERY_S - SLACK_S:
            self.held += self.shown != recorded
            return self.shown
        self.shown, self.taken = recorded, t
        return recorded


def replay(frames, lists: HeldLists | None):
    """[(stage, confidence, stall, candidate, relaxed after the tick)] per frame, and the sentences."""
    seen: dict[float, object] = {}

    def as_read(f, relaxed: bool):
        if not known(f.host):
            return f
        if f.host.t not in seen:  # a frame may show a sample again: rewrite it once
            seen[f.host.t] = dataclasses.replace(f.host, top_others=lists.read(f.host.t, f.host.top_others, relaxed))
        return dataclasses.replace(f, host=seen[f.host.t])

    ticks = list(paced_replay(frames, as_read if lists is not None else None))
    return [outcome(v, relaxed) for _, v, relaxed in ticks], [v.sentence for _, v, _ in ticks]


PHASES = [(g, r) for g in range(round(EVERY_S)) for r in (0.0, EVERY_S)]


@pytest.mark.parametrize("rel", RUNS)
def test_relaxed_others_change_no_verdict_and_no_pace(rel):
    frames = list(load_frames(str(ROOT / rel)))
    before, sentences = replay(frames, None)
    assert sum(r[4] for r in before) >= 10
    held = 0
    for grid, phase in PHASES:
        lists = HeldLists(grid, phase)
        after, said = replay(frames, lists)
        assert after == before, (grid, phase)
        assert said == sentences, (grid, phase)
        held += lists.held
    assert held > 0  # a relaxed tick showed an older list than recorded: there was something to hold


def main() -> int:
    rows = []
    for rel in recordings():
        frames = list(load_frames(str(ROOT / rel)))
        before, sentences = replay(frames, None)
        for grid, phase in PHASES:
            lists = HeldLists(grid, phase)
            after, said = replay(frames, lists)
            rows.append((rel, grid, phase, len(before), lists.held,
                         [k for k in range(len(before)) if (before[k], sentences[k]) != (after[k], said[k])]))
    for rel, grid, phase, n, held, bad in rows:
        if held or bad:
            print(f"{rel} grid {grid} phase {phase}: {n} ticks, lists held {held}, differ {bad}")
    print(f"{sum(len(r[5]) for r in rows)} of {sum(r[3] for r in rows)} replayed ticks differ; "
          f"{sum(r[4] for r in rows)} relaxed ticks held an older list")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
