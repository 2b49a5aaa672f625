"""The report says a stage held beside its headline in one plain sentence (field trial: "the
verdict was CPU-bound. CPU-bound: the job's own compute ..." said the title twice in a row), in
every report format that words it (Markdown, HTML; JSON keeps the title and sentence as fields)."""

from __future__ import annotations

import re

import pytest

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_html import render_html
from gpuwatch.report.render_md import render_markdown
from gpuwatch.report.series import run_series

TWICE = re.compile(r"the verdict was ([A-Za-z][\w -]*)\. (?:[\w ]+, )?\1:")
"""The title said, then a sentence opening with that title again."""


def _reports(path: str) -> dict[str, str]:
    frames = load_frames(path)
    got = from_frames(frames)
    report = build_report(got, NOT_RECORDED, "replay", path=path)
    return {"md": render_markdown(report), "html": render_html(report, run_series(got.frames, got.verdicts))}


@pytest.mark.parametrize("path", ["tests/data/cpu_field/upload_pause.jsonl.gz",
                                  "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"])
def test_a_stage_beside_the_headline_is_one_sentence_in_markdown_and_html(path):
    for fmt, text in _reports(path).items():
        words = text.replace("&#x27;", "'")
        assert "the verdict was CPU-bound: the job's own compute on the CPU is the limit, not its input." in words, fmt
        assert not TWICE.search(words), (fmt, TWICE.search(words))


def test_a_sentence_headed_by_its_title_says_it_once():
    from gpuwatch.report.words import verdict_was

    assert verdict_was("CPU-bound", "CPU-bound: the job's own compute.") == "the verdict was CPU-bound: the job's own compute."
    assert verdict_was("GPU-bound", "Healthy, GPU-bound: C.") == "the verdict was Healthy, GPU-bound: C."


def test_a_sentence_without_its_title_follows_it():
    from gpuwatch.report.words import verdict_was

    assert verdict_was("I/O", "Input-bound on storage: X.") == "the verdict was I/O. Input-bound on storage: X."
    assert verdict_was("I/O", "") == "the verdict was I/O."


def test_a_stop_the_job_came_back_from_is_said_in_the_past_and_the_figure_as_a_middle():
    """Review 36 on tests/data/cpu_field/stop_cont.jsonl.gz (a job stopped with SIGSTOP for about
    27 s, then resumed beside CPU hogs): the headline quoted the live sentence "The job is stopped
    ...: nothing to diagnose until it runs again" about a job that ran again at the tick it quotes;
    and a stage's figure while it holds, the middle of its ticks', read as the latest tick's."""
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown
    from gpuwatch.report.sections import STOPPED_THEN
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED

    path = "tests/data/cpu_field/stop_cont.jsonl.gz"
    got = from_frames(load_frames(path))
    assert got.verdicts[-1].stage != "idle"  # it ran again at the end
    md = render_markdown(build_report(got, NOT_RECORDED, "replay", path=path))
    head = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "the verdict was Idle, with no pipeline stage to fix. " + STOPPED_THEN in head
    assert "The job is stopped" not in head and "until it runs again" not in head
    assert "while it holds, the middle of its ticks' figures" in md


def test_an_evidence_row_of_a_few_ticks_says_so():
    """Review 36: the healthy H200 report read "○ no GPM (GPM: first window) ...: pointed to
    GPU-bound in 0% of the ticks GPU-bound held" beside GPM readings in every other tick: the row
    came from the first tick alone."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    got = from_frames(load_frames("tests/data/h200/healthy.jsonl"))
    r = build_report(got, NOT_RECORDED, "replay", path="healthy.jsonl")
    gpm = next(e for e in r.evidence if e.stage == "gpu_bound" and e.signal == "gpm")
    held = sum(1 for v in got.verdicts if v.stage == "gpu_bound")
    assert gpm.of == held and 0 < gpm.seen < held
    md = render_markdown(r)
    assert f"in 0% of the {gpm.seen} tick{'s' if gpm.seen != 1 else ''} it was read in, of the {held} GPU-bound held" in md
    whole = next(e for e in r.evidence if e.stage == "gpu_bound" and e.seen == held)
    assert whole.of == held  # a signal of every tick keeps the plain words


def test_a_stage_worth_nothing_over_the_run_gets_no_remedies_unless_it_warned():
    """Review 36: a stopped job's single tick of CPU prep (stop_cont) listed three remedies under
    "fixing it: up to 1.00x over this run"; a stage held one tick gets none. A stage that was the verdict as briefly but warned most
    of the run (t32_imagefolder_rrc: CPU prep one tick, at warning level 73 % of it) keeps them."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames

    def report(path):
        got = from_frames(load_frames(path))
        return got, build_report(got, NOT_RECORDED, "replay", path=path)

    # (stop_cont's one tick of CPU prep stood on one stack sample, which a host with no GPU no longer
    # names a stage on: the H200 ImageFolder job's one tick of Launch is such a stage)
    got, r = report("tests/data/h200/field_imagefolder_gpu.jsonl.gz")
    assert sum(1 for v in got.verdicts if v.stage == "launch") == 1  # it was the verdict, briefly
    assert not [x for x in r.remedies if x.stage == "launch"]
    got, r = report("tests/data/cpu_field/t32_imagefolder_rrc.jsonl.gz")
    decode = [x for x in r.remedies if x.stage == "decode"]
    assert decode and decode[0].speedup_run < 1.05
    warned = sum(1 for v in got.verdicts if "decode" in v.secondary) / len(got.verdicts)
    assert warned >= 0.2


def test_a_floor_keeps_its_remedies_and_the_stage_held_most_too():
    """Review 37: PCIe held 4 ticks of run25_imagefolder_persistent at "2.1x or more" (1.04x or more
    over the run): a floor, not a figure under 1.05x, so its remedies stay."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames

    path = "tests/data/h200/run25_imagefolder_persistent.jsonl.gz"
    got = from_frames(load_frames(path))
    r = build_report(got, NOT_RECORDED, "replay", path=path)
    h2d = [x for x in r.remedies if x.stage == "h2d"]
    assert any(v.stage == "h2d" and v.speedup_floor for v in got.verdicts)
    assert h2d and h2d[0].speedup_floor
