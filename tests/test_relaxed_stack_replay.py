"""The relaxed stack pace (gpuwatch/pace.py RELAXED: a main dump every 3 s) replayed on real H200
recordings, at each of the ticks its dumps can fall on (bench/relaxed_stacks.py).

The recordings were taken at faster relaxed rates (a main dump every second or every 2 s) or at
full pace; the replay drops whole dumps as the stack collector's credit at RELAXED would, after
every tick whose verdicts relax the pace, and compares with the replay of the recording as taken.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from bench.relaxed_stacks import Thinner, dumps_of, markers_of, phases, replay, scored
from gpuwatch.model.stacks import StackSample
from gpuwatch.pace import RELAXED, Pace
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "bench" / "results"
SWITCH = {
    "run9": "2026-12-03-h200/run9/acc_switch/switch.jsonl.gz",
    "run11": "2026-12-03-h200/run11/acc_switch/switch.jsonl.gz",
    "run31": "2026-12-04-h200/run31/accuracy/switch.jsonl.gz",
}
"""The switching job: GPU-bound (relaxed for its last ~15 s), then four host-side bottlenecks."""
STEADY = ("2026-12-03-h200/run11/self2/rec/tui.jsonl.gz", "2026-12-03-h200/run11/self2/rec/json.jsonl.gz")
"""The benchmark job (GPU-bound, 80-88 % busy, 8 workers), relaxed for 79 of its 90 ticks."""
EVERY_TWO_S = Pace(0.25, 0.125)
"""The previous relaxed pace, a main dump every 2 s."""


@functools.cache
def frames(rel: str) -> list:
    return list(load_frames(str(H200 / rel)))


@functools.cache
def as_taken(rel: str) -> list:
    return replay(frames(rel), None)[0]


def test_a_relaxed_dump_every_three_ticks():
    assert phases(RELAXED) == pytest.approx([0, 1 / 3, 2 / 3])


def test_a_sample_comes_apart_into_its_dumps_and_the_thinner_keeps_one_main_dump_in_three():
    fs = frames(SWITCH["run31"])
    samples = [f.stacks for f in fs if isinstance(f.stacks, StackSample)]
    for s in samples:
        dumps = dumps_of(s)
        assert sum(len(d.threads) for d in dumps) == len(s.threads)
        assert sum(r.ok for d in dumps for r in d.results) == sum(r.ok for r in s.dumps)
    full = next(s for s in samples if sum(t.role == "main" for t in s.threads) == 2)
    assert [sum(t.role == "main" for t in d.threads) for d in dumps_of(full) if d.threads][:2] == [1, 1]
    thinner = Thinner(RELAXED)
    # A recording relaxed at full pace's two dumps a tick: one main dump every third tick survives.
    full_frame = next(f for f in fs if f.stacks is full)
    kept = [sum(t.role == "main" for t in thinner.sample(full_frame, relaxed=True).threads) for _ in range(9)]
    assert kept == [0, 0, 1] * 3


@pytest.mark.parametrize("lag", [1, 2])
@pytest.mark.parametrize("phase", phases(RELAXED))
@pytest.mark.parametrize("run", SWITCH)
def test_the_switching_job_names_every_phase_as_soon_with_a_dump_every_three_seconds(run, phase, lag):
    """``lag`` 2: as if the stack read of the tick after each verdict had begun before it, so the
    first full-pace tick after the GPU-bound phase is still thinned."""
    rel = SWITCH[run]
    markers = markers_of(str(Path("bench/results") / rel))
    before = as_taken(rel)
    after, thinner = replay(frames(rel), RELAXED, phase, lag)
    assert thinner.dropped >= 2  # the GPU-bound phase ran relaxed: there was something to drop
    b, a = scored(before, markers), scored(after, markers)
    assert [m["right"] for m in a["markers"]] == [m["right"] for m in b["markers"]]
    assert all(x["latency_s"] <= y["latency_s"] for x, y in zip(a["markers"], b["markers"]))
    changes = [k for k in range(1, len(before)) if before[k].stage != before[k - 1].stage]
    for k, (x, y) in enumerate(zip(before, after)):
        if x == y:
            continue
        # Only around the switch to the next stage, the tick before it to two ticks after: named a tick
        # sooner, a candidate not yet named, or the new stage's confidence with too few main samples
        # in its window yet (x0.85, compose.confidence).
        assert any(c - 1 <= k <= c + 2 for c in changes), (k, x, y)
        assert not y.relaxed and not x.relaxed
        if y.stage != x.stage:
            assert k + 1 < len(before) and y.stage == before[k + 1].stage
        elif y.confidence != x.confidence:
            assert y.confidence == round(x.confidence * 0.85, 2)


@pytest.mark.parametrize("rel", STEADY)
def test_the_steady_job_reads_the_same_at_every_phase(rel):
    """Every tick's verdict and pace as taken, at every phase of a dump every 3 s and every 2 s. One
    stray "data wait" sample among a relaxed window's three used to reach the 20 % data-wait cut and
    turn the verdict undecided for three ticks and the pace full for twelve (TUI recording, one phase
    of each rate); beside a GPU that is not starved a high share now needs two samples
    (thresholds.high_cut)."""
    before = as_taken(rel)
    assert sum(o.relaxed for o in before) == 79 and {o.candidate for o in before} == {"gpu_bound"}
    for pace in (EVERY_TWO_S, RELAXED):
        for phase in phases(pace):
            after, thinner = replay(frames(rel), pace, phase)
            assert thinner.dropped >= 40
            assert after == before, (pace, phase)


def test_two_minutes_of_a_healthy_job_read_the_same():
    rel = "2026-12-02-h200/run3/acc_long/healthy.jsonl.gz"
    before = as_taken(rel)
    assert sum(o.relaxed for o in before) >= 110
    for phase in phases(RELAXED):
        after, thinner = replay(frames(rel), RELAXED, phase)
        assert thinner.dropped > 4 * thinner.kept  # recorded at two dumps a tick: four in five dropped
        assert after == before
