"""GPU utilization read from the driver's buffer every second tick while the pace is relaxed
(collectors/gpu.py, RELAXED_BUFFER_EVERY), replayed on real H200 recordings.

The recordings were taken with the buffer read every tick. Replayed here through the analysis and
the pace as the live pipeline runs them (gpuwatch/pipeline.py), each relaxed tick but one in
RELAXED_BUFFER_EVERY is rewritten as the collector now reads it: no samples (they move to the next
buffer read, whose busy share stays the mean of its own interval's), and as busy share
nvmlDeviceGetUtilizationRates' latest period, taken as the tick's last 200 ms sample. That is the
shortest period nvml.h allows ("between 1 second and 1/6 second"), the furthest from the tick's
mean; a 1 s period would be the mean itself. A period that looks like busy falling
(collectors/gpu.py, looks_like_a_fall) is checked on the same tick: that tick reads the buffer.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from pathlib import Path

import pytest

from bench.relaxed_stacks import paced_replay
from gpuwatch.collectors.gpu import CONFIRM_TICKS, RELAXED_BUFFER_EVERY, looks_like_a_fall
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "bench" / "results" / "2026-12-03-h200"
SWITCH = {"run9": H200 / "run9" / "acc_switch", "run11": H200 / "run11" / "acc_switch"}
"""The switching job (GPU-bound, then four host-side bottlenecks in turn), with its phase markers."""
STEADY = H200 / "run11" / "self2" / "rec"
"""The benchmark job, GPU-bound and relaxed for 79 of 90 ticks, watched by the TUI and by --json."""


def replay(frames, thin: bool, lag: int = 0):
    """[(stage, confidence, stall, relaxed after the tick)] per frame, and the ticks rewritten.
    ``lag``: relaxed ticks that read the buffer before the first skip. The collector skips from the
    first relaxed tick on (0); 1 puts the skipped ticks where a relaxation starting a tick later
    would, so a brief dip falls on the other kind of tick."""
    reads = UtilReads(lag)
    out = [(v.stage, round(v.confidence, 3), v.stall, relaxed)
           for _, v, relaxed in paced_replay(frames, reads.frame if thin else None)]
    return out, reads.rewritten


class UtilReads:
    """Each GPU sample rewritten as the collector reads it at the pace (once per sample: a frame may
    show one again)."""

    def __init__(self, lag: int = 0) -> None:
        self.lag = lag
        self.rewritten = 0
        """Ticks whose buffer read was skipped."""
        self.since_read: dict[int, int] = {}
        self.held: dict[int, list] = {}
        self.seen: dict[tuple[int, float], object] = {}
        self.recent: dict[int, deque] = {}
        self.confirmed = 0
        """Skipped ticks whose period looked like a fall: read from the buffer instead."""

    def gpu(self, interval: float, g, relaxed: bool):
        key = (g.index, g.t)
        if key not in self.seen:
            if not relaxed:
                self.since_read[g.index] = self.lag
            recent = self.recent.setdefault(g.index, deque(maxlen=CONFIRM_TICKS))
            self.seen[key], skipped, confirmed = _as_read(interval, g, relaxed, self.since_read, self.held, recent)
            self.rewritten += skipped
            self.confirmed += confirmed
            if known(self.seen[key].util_gpu):
                recent.append(self.seen[key].util_gpu)
        return self.seen[key]

    def frame(self, f, relaxed: bool):
        if not isinstance(f.gpus, tuple):
            return f
        return dataclasses.replace(f, gpus=tuple(self.gpu(f.interval, g, relaxed) for g in f.gpus))


def _as_read(interval, g, relaxed, since_read, held, recent):
    """The GPU sample as the collector reads it at this pace: (sample, whether the buffer was
    skipped, whether a period that looked like a fall was checked against it)."""
    n = since_read.get(g.index, 0)
    confirmed = False
    if relaxed and g.util_trace and 0 <= n < RELAXED_BUFFER_EVERY - 1:
        if not looks_like_a_fall(g.util_trace[-1][1], recent):
            since_read[g.index] = n + 1
            held.setdefault(g.index, []).extend(g.util_trace)
            return dataclasses.replace(g, util_trace=(), util_gpu=g.util_trace[-1][1]), True, False
        confirmed = True
    since_read[g.index] = 0 if relaxed else since_read.get(g.index, 0)
    before = tuple(held.pop(g.index, ()))
    if not before or not g.util_trace or not known(g.util_gpu):
        return dataclasses.replace(g, util_trace=before + g.util_trace), False, confirmed
    trace = before + g.util_trace
    own = [v for ts, v in trace if ts >= trace[-1][0] - interval]
    return dataclasses.replace(g, util_trace=trace, util_gpu=sum(own) / len(own)), False, confirmed


LAGS = range(RELAXED_BUFFER_EVERY)


@pytest.mark.parametrize("lag", LAGS)
@pytest.mark.parametrize("run", SWITCH)
def test_the_switching_job_reads_the_same_and_goes_back_to_full_pace_as_soon(run, lag):
    frames = list(load_frames(str(SWITCH[run] / "switch.jsonl.gz")))
    before, _ = replay(frames, thin=False)
    after, rewritten = replay(frames, thin=True, lag=lag)
    assert rewritten >= 5  # its GPU-bound phase ran relaxed: there was something to skip
    # Every tick's stage, confidence, stall and pace: each phase named as soon, and right as often.
    assert after == before


@pytest.mark.parametrize("lag", LAGS)
@pytest.mark.parametrize("name", ["tui.jsonl.gz", "json.jsonl.gz"])
def test_the_steady_job_skips_every_second_buffer_read_with_the_same_verdicts(name, lag):
    frames = list(load_frames(str(STEADY / name)))
    before, _ = replay(frames, thin=False)
    after, rewritten = replay(frames, thin=True, lag=lag)
    assert sum(r[3] for r in before) == 79 and rewritten >= 38  # half the relaxed ticks
    assert [r[:3] for r in after] == [r[:3] for r in before]
    # The pace: relaxed on the same ticks. A skipped tick's last 200 ms can dip further than the
    # tick's mean (busy here hovers at 80-88 %, near the pace's STEADY_DROP line); such a tick
    # reads the buffer, and its mean keeps the pace relaxed (before that check, 2 of the 79
    # relaxed ticks went full).
    assert [r[3] for r in after] == [r[3] for r in before]


@pytest.mark.parametrize("lag", LAGS)
def test_a_dip_shorter_than_a_tick_can_pass_a_skipped_tick_unseen(lag):
    """The tokenize job (tests/data/h200, run 21) dips for one tick while relaxed: its samples read
    46, 94, 94, 60, 94 (a 77.6 % mean, 16 points under the tick before) and 93-94 % from the next
    tick on. Where that tick is a skipped read (lag 1), its latest period says 94 %, and the pace
    stays relaxed through it instead of going full for one tick. Verdicts, confidences and stalls
    do not change either way. A fall that lasts shows in the latest period as soon as in the mean
    (the switch runs above)."""
    frames = list(load_frames(str(ROOT / "tests" / "data" / "h200" / "field_tokenize_workers.jsonl.gz")))
    before, _ = replay(frames, thin=False)
    after, _ = replay(frames, thin=True, lag=lag)
    assert [r[:3] for r in after] == [r[:3] for r in before]
    differ = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
    if lag == 0:
        assert differ == []
    else:
        assert len(differ) == 1 and not before[differ[0]][3] and after[differ[0]][3]
