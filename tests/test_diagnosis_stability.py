"""The stability rule: no flapping on noisy steady input, yet a real change shows within ~3 ticks."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from gpuwatch.diagnosis import DiagnosisState, diagnose
from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from tests.test_diagnosis_frames import Knobs, build, run, then
from tests.test_diagnosis_stages import DECODE, HEALTHY, IDLE, IO, LAUNCH, LAYOUT, PAGEABLE

NOISE = 0.10
"""±10 % on every GPU and CPU reading per tick, on top of the stack samples' own binomial noise."""

# A healthy run that still shows the odd data-wait sample (the CPU runs ahead, then waits on the
# next batch while the GPU works through the queue): noise a verdict must ride out.
NOISY_HEALTHY = replace(HEALTHY, main_labels={lb.DISPATCH: 0.5, lb.BACKWARD: 0.2, lb.OPTIMIZER: 0.2,
                                              lb.DATA_WAIT: 0.1})


def _changes(verdicts) -> int:
    return sum(1 for a, b in zip(verdicts, verdicts[1:]) if a.stage != b.stage)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_minutes_of_a_noisy_healthy_run_never_change_the_verdict(seed):
    verdicts = run(build(NOISY_HEALTHY, 120, noise=NOISE, seed=seed))
    assert {x.stage for x in verdicts} == {v.GPU_BOUND}
    assert _changes(verdicts) == 0


@pytest.mark.parametrize("knobs", [LAUNCH, DECODE, IO, replace(DECODE, gpm=False), replace(IO, stacks=False)],
                         ids=["launch", "decode", "io", "decode-no-gpm", "io-no-stacks"])
def test_steady_bottlenecks_hold_for_a_minute(knobs):
    # Host-side stages lean on a dozen stack samples: the noisiest evidence there is.
    verdicts = run(build(knobs, 60, noise=NOISE, seed=7))
    assert _changes(verdicts[2:]) == 0, [x.stage for x in verdicts]


TRANSITIONS = [
    (HEALTHY, DECODE), (DECODE, HEALTHY), (HEALTHY, LAUNCH), (LAUNCH, IO), (IO, DECODE), (DECODE, LAUNCH),
    (HEALTHY, PAGEABLE), (PAGEABLE, HEALTHY), (HEALTHY, LAYOUT), (LAYOUT, HEALTHY), (HEALTHY, IDLE),
    (IDLE, HEALTHY),
]


def _ticks_to_right(before: Knobs, after: Knobs, seed: int) -> tuple[int | None, str, str]:
    frames = then(build(before, 20, noise=NOISE, seed=seed), after, 15, seed=seed + 50, noise=NOISE)
    verdicts = run(frames)
    first, new = verdicts[19].stage, verdicts[-1].stage
    stages = [x.stage for x in verdicts[20:]]
    ticks = next((i + 1 for i in range(len(stages)) if all(s == new for s in stages[i:])), None)
    return ticks, first, new


def test_a_real_change_shows_within_three_ticks():
    times = []
    for seed, (before, after) in enumerate(TRANSITIONS):
        ticks, first, new = _ticks_to_right(before, after, seed)
        assert first != new, (first, new)
        assert ticks is not None and ticks <= 5, (first, new, ticks)
        times.append(ticks)
    assert statistics.median(times) <= 3


def test_a_weak_tick_does_not_unseat_a_named_stage():
    # Two ticks where nothing is conclusive (stacks lost, GPU signature in between) then back.
    frames = build(DECODE, 12, seed=3)
    frames = then(frames, replace(DECODE, stacks=False, worker_cpu=0.6), 2)
    frames = then(frames, DECODE, 5, seed=4)
    verdicts = run(frames)
    assert all(x.stage == v.DECODE for x in verdicts[2:]), [x.stage for x in verdicts]


def test_the_stage_in_force_keeps_eased_thresholds_near_a_boundary():
    # A launch-bound job whose kernel-active time creeps over §11's 70 % cut (71-74 %) and stays.
    frames: list = []
    for i, busy in enumerate([30] * 6 + [72, 71, 73, 72, 74, 71, 72, 73]):
        k = replace(LAUNCH, trace=lambda w, b=busy: b)
        frames = build(k, 1, t0=1000.0 + i, seq0=i) if not frames else then(frames, k, 1, seed=i)
    # Judged afresh, the last window is not launch-bound any more ...
    assert diagnose(frames, None)[0].stage != v.LAUNCH
    # ... but a verdict already in force holds until its threshold is missed by the hysteresis band.
    verdicts = run(frames)
    # (The first tick holds too few stack samples to name a stage: it says it collects evidence.)
    assert verdicts[0].sentence.startswith("Collecting evidence"), verdicts[0].sentence
    assert {x.stage for x in verdicts[1:]} == {v.LAUNCH}, [x.stage for x in verdicts]


def test_state_restarts_when_time_goes_backwards():
    frames = build(DECODE, 10)
    _, state = diagnose(frames, None)
    assert state.stage == v.DECODE
    replayed = build(HEALTHY, 5, t0=10.0)  # a replay restarted from an earlier time
    verdict, state2 = diagnose(replayed, state)
    assert verdict.stage == v.GPU_BOUND and state2.changes == 0


def test_state_is_a_small_frozen_value():
    state = DiagnosisState()
    with pytest.raises(AttributeError):
        state.stage = v.IO  # type: ignore[misc]


def _jittered(frames, ms: float = 1.0):
    """The same frames on a clock that runs a millisecond early or late every other tick (as a
    real watch's asyncio ticks do)."""
    return [replace(f, t=f.t + (ms if i % 2 else -ms) / 1000) for i, f in enumerate(frames)]


@pytest.mark.parametrize("dt,n", [(1.0, 3), (0.5, 6), (2.0, 2), (5.0, 1)])
def test_the_switch_window_holds_the_same_number_of_ticks_whatever_the_jitter(dt, n):
    from gpuwatch.diagnosis.thresholds import SHORT_S
    from gpuwatch.diagnosis.window import last_ticks

    frames = _jittered(build(HEALTHY, 20, dt=dt))
    assert {len(last_ticks(frames[: i + 1], SHORT_S)) for i in range(n, len(frames))} == {n}


@pytest.mark.parametrize("before", [11, 12])
def test_a_switch_shows_as_soon_on_a_jittered_clock_as_on_an_exact_one(before):
    # Either parity: the tick with two new frames falls on an early or on a late tick.
    frames = then(build(DECODE, before, seed=5), PAGEABLE, 8, seed=6)
    exact = [x.stage for x in run(frames)]
    jittered = [x.stage for x in run(_jittered(frames))]
    assert exact[-1] == v.H2D and jittered == exact


def test_a_step_shows_one_tick_after_the_tick_it_fell_in():
    """The fast path (thresholds.FAST_S): the tick the switch fell in reads pageable copies at 6.5 %
    of the GPU's time (the documented cut is 6 %, a challenger needs 7.5 %), the next at 14 %. The
    median of three waits for a second whole tick; the mean of the last two passes at once."""
    before = replace(DECODE, gpu="idle")  # workers so slow that the GPU reads 0 % (run 11: 0.4 %)
    split = replace(PAGEABLE, trace=lambda wall: 6.5)  # util 6.5 % instead of 14 %, all of it copies
    frames = then(then(build(before, 12, seed=8), split, 1, seed=9), PAGEABLE, 4, seed=10)
    stages = [x.stage for x in run(frames)]
    assert stages[11] == v.DECODE and stages[12] == v.DECODE, stages
    assert stages[13:] == [v.H2D] * 4, stages


def test_one_odd_tick_still_does_not_switch():
    frames = then(then(build(DECODE, 12, seed=8), PAGEABLE, 1, seed=9), DECODE, 5, seed=10)
    assert {x.stage for x in run(frames)[2:]} == {v.DECODE}
