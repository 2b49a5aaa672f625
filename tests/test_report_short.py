"""A report over less than one verdict window is a snapshot, and says so.

Trial 27: ``diagnose --replay tests/data/cpu_demo.jsonl --duration 1`` read "Contention cost the job
most: it held the verdict 100% of the time, and fixing it could make the whole run about 1.90x
faster" from one tick.
"""

from __future__ import annotations

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_html import render_html
from gpuwatch.report.render_md import render_markdown

DEMO = "tests/data/cpu_demo.jsonl"


def _report(n: int):
    return build_report(from_frames(load_frames(DEMO)[:n]), NOT_RECORDED, "replay", path=DEMO)


def test_one_tick_is_said_as_a_snapshot_not_a_run():
    r = _report(1)
    verdict = render_markdown(r).split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "Watched only 1 s (1 tick), less than the 8 s one verdict is judged over" in verdict, verdict
    assert "cost the job most" not in verdict and "whole run" not in verdict, verdict
    assert "held the verdict 100% of those ticks" in verdict
    assert r.summary.snapshot and r.figures is not None and r.figures.speedup_left is None
    remedies = render_markdown(r).split("## Remedies", 1)[1].split("\n## ", 1)[0]
    assert "what cost the job most" not in remedies and "over this run" not in remedies, remedies
    assert "held 100% of those ticks; fixing it: about 1.90x while it holds" in remedies, remedies
    page = render_html(r, ())
    assert "Watched only 1 s (1 tick)" in page and "speed-up left" not in page and "over this run" not in page


def test_a_run_of_a_window_or_more_is_judged_as_one():
    r = _report(20)
    verdict = render_markdown(r).split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "Watched only" not in verdict and "cost the job most" in verdict, verdict
    assert not r.summary.snapshot and "over this run" in render_markdown(r)
