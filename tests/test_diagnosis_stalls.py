"""Periodic stalls from the driver's 200 ms utilization trace (h200-signatures.md: one sample every
200 ms), and what the main thread did meanwhile."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from gpuwatch.diagnosis.stalls import find_stall
from gpuwatch.model import stacks as lb
from tests.test_diagnosis_frames import build, run
from tests.test_diagnosis_stages import HEALTHY


def _periodic(period: float, idle: float, phase: float = 0.3):
    def is_idle(w: float) -> bool:
        return (w + phase) % period < idle

    return is_idle


def _labels_during(is_idle, during: str):
    """The main thread does ``during`` in ticks that hold a stall, dispatches otherwise."""

    def at(start: float, end: float) -> dict[str, float]:
        hit = any(is_idle(start + 0.05 * j) for j in range(int((end - start) / 0.05) + 1))
        return {during: 0.7, lb.DISPATCH: 0.3} if hit else {lb.DISPATCH: 1.0}

    return at


@pytest.mark.parametrize(("period", "idle"), [(2.0, 0.4), (3.0, 0.6), (5.0, 1.0)])
def test_a_periodic_stall_is_found_with_its_period_and_length(period, idle):
    is_idle = _periodic(period, idle)
    k = replace(HEALTHY, trace=lambda w: 2.0 if is_idle(w) else 100.0)
    frames = build(k, 30)
    stall = find_stall(frames, [0])
    assert stall is not None
    assert stall.period_s == pytest.approx(period, abs=0.21)  # one 200 ms sample of slack
    assert stall.idle_s == pytest.approx(idle, abs=0.21)


@pytest.mark.parametrize(("label", "words"), [(lb.CHECKPOINT, "checkpoint"), (lb.DATA_WAIT, "waves")])
def test_what_the_main_thread_did_during_the_stalls_names_the_cause(label, words):
    is_idle = _periodic(2.0, 0.4)
    k = replace(HEALTHY, trace=lambda w: 3.0 if is_idle(w) else 100.0, main_at=_labels_during(is_idle, label))
    verdict = run(build(k, 30))[-1]
    assert verdict.stall is not None and words in (verdict.stall.coincides_with or "")
    assert "idles ~0.4 s every ~2.0 s" in verdict.sentence


def test_a_steady_gpu_has_no_stall():
    assert find_stall(build(HEALTHY, 30, noise=0.05), [0]) is None


def test_a_starved_gpu_is_not_a_stall():
    # Busy only 9 % of the time (h200 "starved"): the stages describe that, not a stall.
    starved = replace(HEALTHY, gpu="starved")
    assert find_stall(build(starved, 30, noise=0.05), [0]) is None


def test_irregular_dips_are_not_a_period():
    rng = random.Random(5)
    starts = []
    t = 1.7e9 + 1000.0
    while t < 1.7e9 + 1040.0:
        t += rng.choice([0.8, 1.4, 2.6, 4.2, 6.0])
        starts.append(t)

    def trace(w: float) -> float:
        return 2.0 if any(s <= w < s + 0.4 for s in starts) else 100.0

    assert find_stall(build(replace(HEALTHY, trace=trace), 30), [0]) is None


def test_too_short_a_trace_says_nothing():
    is_idle = _periodic(2.0, 0.4)
    k = replace(HEALTHY, trace=lambda w: 2.0 if is_idle(w) else 100.0)
    assert find_stall(build(k, 3), [0]) is None
