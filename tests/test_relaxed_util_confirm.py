"""A relaxed tick whose one-period busy reading looks like a fall reads the buffer on the same tick
(collectors/gpu.py, looks_like_a_fall), replayed on a live recording that read the periods.

Run 39 (bench/results/2026-12-05-h100/run39, one H100, 2026-12-05, the benchmark job with 8
DataLoader workers, GPU-bound, watched 120 s by the TUI and by --json) was recorded with the
buffer read every second relaxed tick and nvmlDeviceGetUtilizationRates between, before the
check: six periods read 37-66 % where the job stayed 80-90 % busy, and each sent the pace to full
for a tick. The buffer read after such a tick holds the skipped tick's 200 ms samples too, so the
check's reading (the mean of that tick's own samples) is recovered from the recording.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from pathlib import Path

import pytest

from bench.relaxed_stacks import paced_replay
from gpuwatch.collectors.gpu import CONFIRM_TICKS, looks_like_a_fall
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

RUN39 = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-05-h100" / "run39" / "rec"


def checked(frames: list) -> tuple[list, int]:
    """The frames as the collector now reads them, and how many ticks the check read the buffer on."""
    out, recent, n = list(frames), deque(maxlen=CONFIRM_TICKS), 0
    for i, f in enumerate(frames):
        g = f.gpus[0]
        if not g.util_trace and known(g.util_gpu) and i + 1 < len(frames) and looks_like_a_fall(g.util_gpu, recent):
            later = frames[i + 1].gpus[0].util_trace  # this tick's samples and the next one's
            own = [v for ts, v in later if ts < later[-1][0] - f.interval]
            assert own, "the next buffer read holds the skipped tick's samples"
            out[i] = dataclasses.replace(f, gpus=(dataclasses.replace(g, util_gpu=sum(own) / len(own)),))
            n += 1
        if known(out[i].gpus[0].util_gpu):
            recent.append(out[i].gpus[0].util_gpu)
    return out, n


@pytest.mark.parametrize("name", ["tui.jsonl.gz", "json.jsonl.gz"])
def test_a_period_between_two_steps_no_longer_sends_the_pace_to_full(name):
    frames = list(load_frames(str(RUN39 / name)))
    assert len(frames) == 120 and all(len(f.gpus) == 1 for f in frames)
    before = [(v.stage, round(v.confidence, 3), relaxed) for _, v, relaxed in paced_replay(frames)]
    fixed, n = checked(frames)
    after = [(v.stage, round(v.confidence, 3), relaxed) for _, v, relaxed in paced_replay(fixed)]
    first = next(k for k, r in enumerate(before) if r[2])  # relaxed from here on, bar the dips
    full_before = [k for k in range(first, len(before)) if not before[k][2]]
    full_after = [k for k in range(first, len(after)) if not after[k][2]]
    assert len(full_before) == 6 and n >= 5
    # Every dip that came from one period is gone; what is left is a tick whose own mean fell
    # (--json's tick 71: 200 ms samples 57-86, a 73 % mean after 79 %), full as it should be.
    assert len(full_after) <= 1
    for k in full_after:
        assert frames[k].gpus[0].util_trace and frames[k].gpus[0].util_gpu < 80
    # The verdicts do not move: the busy readings feed the pace, not the stage.
    assert [r[:2] for r in after] == [r[:2] for r in before]


def test_the_rule_is_the_paces():
    recent = deque([84.0, 88.0, 86.0], maxlen=CONFIRM_TICKS)
    assert looks_like_a_fall(58.0, recent)
    assert not looks_like_a_fall(80.0, recent)  # within STEADY_DROP (5 points) of the lowest, 84
    assert not looks_like_a_fall(90.0, deque([99.0], maxlen=CONFIRM_TICKS))  # saturated: the pace stays relaxed
    # Under BUSY_STARVED (70 %) the pace goes full whatever came before: checked.
    assert looks_like_a_fall(68.0, deque([72.0, 74.0, 73.0], maxlen=CONFIRM_TICKS))
    assert looks_like_a_fall(10.0, deque(maxlen=CONFIRM_TICKS))
    assert not looks_like_a_fall(75.0, deque(maxlen=CONFIRM_TICKS))  # nothing to compare with yet
