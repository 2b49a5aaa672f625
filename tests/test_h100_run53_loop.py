"""tests/data/h100/run53_imagefolder_loop.jsonl.gz: bench/scenarios/imagefolder.py --workers 14
--persistent --loop-aug on an H100 (run 53, bench/results/2026-12-07-h100/run53/). By its own clock
the main thread spent 69 % of its time on the augmentations it runs in the loop, 11 % waiting for
data and 12 % in validation passes. gpuwatch said the loop story for 24 ticks, then the workers
story for the last 5 (a validation pass's waits): the report headlined the last 5."""

from __future__ import annotations

from collections import Counter

from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_json import render_json

PATH = "tests/data/h100/run53_imagefolder_loop.jsonl.gz"
LOOP = "Input-bound on preparing data in the training loop"


def test_the_report_headlines_the_story_the_stage_told_most():
    got = from_frames(load_frames(PATH))
    told = Counter(x.sentence.split(":", 1)[0] for x in got.verdicts if x.stage == v.DECODE)
    assert told.most_common(1)[0][0] == LOOP and len(told) == 2, told
    last = [x for x in got.verdicts if x.stage == v.DECODE][-1]
    assert not last.sentence.startswith(LOOP)  # the latest alone tells the other story
    report = build_report(got, NOT_RECORDED, "replay", path=PATH)
    assert report.summary.stage == v.DECODE
    assert report.summary.sentence.startswith(LOOP), report.summary.sentence
    # the fix quoted beside it is that story's: the loop story gives no more-workers figure
    assert report.summary.best_fix is None or report.summary.best_fix.fix != v.MORE_WORKERS
    assert LOOP in render_json(report)
