"""A speed-up that is a floor says so, and says no more than its evidence bounds
(diagnosis/speedup.py, ``shown``; Verdict.speedup_floor).

At the cap (MAX_SPEEDUP, 20x) every surface said "20x or more", also where the share behind it was
16 of 16 main-thread samples, which bound the wait at 81 % or more (a 95 % Wilson bound), so at
"5.2x or more". Synthetic jobs from tests/test_diagnosis_frames.py (H200 signature table).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuwatch.diagnosis.speedup import share_floor
from gpuwatch.diagnosis.thresholds import MAX_SPEEDUP
from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from gpuwatch.model.codec import from_dict, to_dict
from gpuwatch.tui.panels.pipeline import verdict_text
from tests.test_diagnosis_frames import Knobs, last


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (16, 16, 0.80, 0.81),  # all waiting: n / (n + z^2) = 0.806
    (73, 73, 0.949, 0.951),  # the cap's 95 % needs about 73 samples, all waiting
    (8, 16, 0.279, 0.281),  # a half: 0.28-0.72
    (0, 16, 0.0, 0.0),
])
def test_the_wilson_bound(k, n, low, high):
    assert low <= share_floor(k / n, n) <= high
    assert share_floor(k / n, n) <= k / n


def test_a_floor_needs_no_samples_to_bound_it_where_there_are_none():
    assert share_floor(1.0, 0) == 0.0


# Every main-thread sample waits for a batch while four workers compute: the wait is nearly all the time.
STARVED = Knobs(gpu="starved", main_labels={lb.DATA_WAIT: 1.0}, workers=4, worker_cpu=0.95,
                worker_labels={lb.W_BUSY: 1.0})


def test_all_of_a_few_samples_waiting_gives_the_floor_they_bound():
    verdict = last(STARVED, n=10, noise=0.0)
    assert verdict.stage == v.DECODE
    assert verdict.speedup_floor and verdict.speedup is not None
    assert 2.0 <= verdict.speedup < MAX_SPEEDUP, "a few samples cannot carry the cap's 20x"
    assert f"fixing it: {verdict.speedup:.1f}× faster or more while it holds" in verdict_text(verdict)
    assert "up to" not in verdict_text(verdict).split("):", 1)[0]


def test_the_floor_travels_with_the_verdict():
    verdict = last(STARVED, n=10, noise=0.0)
    back = from_dict(v.Verdict, to_dict(verdict))
    assert back.speedup_floor and back.speedup == verdict.speedup
    old = to_dict(verdict)
    del old["speedup_floor"]  # a recording made before the field: a ceiling, as it was read then
    assert from_dict(v.Verdict, old).speedup_floor is False


def test_a_ceiling_is_no_floor():
    half = Knobs(gpu="starved", main_labels={lb.DATA_WAIT: 0.5, lb.DISPATCH: 0.5}, workers=4, worker_cpu=0.95,
                 worker_labels={lb.W_BUSY: 1.0})
    verdict = last(half, n=10, noise=0.0)
    assert verdict.stage == v.DECODE and verdict.speedup is not None and verdict.speedup < MAX_SPEEDUP
    assert not verdict.speedup_floor
    assert f"fixing it: up to {verdict.speedup:.1f}× faster while it holds" in verdict_text(verdict)


def test_the_reports_speed_up_left_says_a_floor_as_one():
    """imagefolder_few (H200 run 25, tests/data/h200): the stage's remedy figure is a floor, and the
    report's "speed-up left" row, the HTML and the comparison say "or more" with it."""
    from gpuwatch.report.render_html import render_html
    from gpuwatch.report.units import value
    from tests.test_h200_run25 import _report

    report = _report("imagefolder_few")
    left = report.figures.speedup_left
    assert left is not None and left.floor and not left.upper_bound and left.factor is not None
    assert f"{value(left.factor, 'x')} or more" in render_html(report, ())


def test_a_share_whose_interval_reaches_the_caps_share_gives_its_floor():
    """Trial 28: a job that waited 72-75 % by its own clock (ceiling 3.8x) read "7.0x" at 12 of 14
    samples waiting, "14.0x" at 13 of 14 and "4.6x or more" at 14 of 14: a higher share gave a
    smaller claim. Where the share's interval reaches 95 % the samples bound only a floor."""
    from gpuwatch.diagnosis.speedup import shown
    from gpuwatch.diagnosis.stages import StageResult

    def said(k: int, n: int = 14) -> tuple[float | None, bool]:
        r = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=k / n, evidence=(),
                        sub="workers", facts={"wait": k / n, "wait_n": n})
        # a stack share reads no other signal, bar whether the workers fill the step's CPUs (input_fills_cpus)
        return shown(v.DECODE, r, SimpleNamespace(input_fills_cpus=False))  # type: ignore[arg-type]

    assert {k: said(k) for k in (10, 11, 12, 13, 14)} == {
        10: (3.5, False), 11: (4.7, False), 12: (2.5, True), 13: (3.2, True), 14: (4.6, True)}
    # workers filling the CPUs the step runs on too: the same figures, each a floor (trial 39)
    r = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=0.5, evidence=(), sub="workers",
                    facts={"wait": 0.5, "wait_n": 14})
    assert shown(v.DECODE, r, SimpleNamespace(input_fills_cpus=True)) == (2.0, True)  # type: ignore[arg-type]
    assert shown(v.DECODE, r, SimpleNamespace(input_fills_cpus=False)) == (2.0, False)  # type: ignore[arg-type]
    floors = [said(k)[0] for k in (12, 13, 14)]
    assert floors == sorted(floors)  # among floors, more samples waiting never says less
    assert said(73, 73) == (MAX_SPEEDUP, True)  # the cap's own share, bound by enough samples
    assert said(1, 1) == (1.3, True)  # one sample bounds little, and says so


def test_a_runs_median_reads_the_point_estimates_where_most_ticks_are_no_floor():
    """The report's figure while a stage holds is the median over its ticks: floors below the point
    estimates of the other ticks would drag it down (tests/data/cpu_field/text_inline.jsonl.gz has
    both), so where most ticks are no floor the floors count with the figure their share gives."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.ranking import stage_costs

    got = from_frames(load_frames("tests/data/cpu_field/text_inline.jsonl.gz"))
    top = stage_costs(got.marks, got.verdicts)[0]
    mine = [x for x in got.verdicts if x.stage == top.stage and x.speedup is not None and x.speedup > 1.0]
    floors = [x for x in mine if x.speedup_floor]
    assert floors and 2 * len(floors) < len(mine) and not top.floor
    assert all(x.speedup_point is not None and x.speedup_point >= x.speedup for x in floors)
    points = sorted(x.speedup_point if x.speedup_floor else x.speedup for x in mine)
    assert top.speedup_while == pytest.approx((points[(len(points) - 1) // 2] + points[len(points) // 2]) / 2)


def test_the_inline_folder_jobs_figures_against_its_own_clock():
    """tests/data/cpu_field/folder_inline.jsonl.gz (trial 28): the job's own clock put 73.4 % of its
    time in loading (3.76x with loading free). Its ticks had read up to "14.0x"; every figure said
    without "or more" is now at most 4.7x (11 of 14 samples), and the report's figure while the stage
    holds is within 1.25x of the clock's."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames

    got = from_frames(load_frames("tests/data/cpu_field/folder_inline.jsonl.gz"))
    mine = [x for x in got.verdicts if x.stage == v.DECODE and x.speedup is not None]
    assert max(x.speedup for x in mine if not x.speedup_floor) <= 4.7
    assert max(x.speedup for x in mine if x.speedup_floor) <= 4.6
    r = build_report(got, NOT_RECORDED, "replay", path="folder_inline.jsonl.gz")
    assert r.summary.stage == v.DECODE and not r.summary.speedup_floor
    assert 1 / 1.25 <= r.summary.speedup_while / (1 / (1 - 0.734)) <= 1.25, r.summary.speedup_while
