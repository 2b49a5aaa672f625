"""A pipeline stage nothing was measured for is at level n/a, not ok (verdict.LEVEL_NA).

With no GPU to judge (no NVML, or a job that holds no GPU) PCIe, GPU memory and Launch read
nothing: "✓ ok" there claimed a check that never ran. Real recordings: the demo's CPU job on the
2-core VM (tests/data/demo/README.md) and bench/scenarios/healthy.py on one H200
(tests/data/h200/README.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis import diagnose
from gpuwatch.model.verdict import (
    CONTENTION, DECODE, GPU_MEMORY, H2D, IO, LAUNCH, LEVEL_BOTTLENECK, LEVEL_NA, LEVEL_OK, LEVEL_WARNING, PIPELINE,
    UNKNOWN, Verdict,
)
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED, gather
from gpuwatch.report.build import build_report
from gpuwatch.report.render_md import render_markdown
from gpuwatch.source import ReplaySource
from gpuwatch.tui.panels.pipeline import PipelinePanel, StageBox
from tests.test_tui_fixtures import ListSource, SyntheticAnalysis, make_app, screen_text, settle, synthetic_frames

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
CPU = DATA / "demo" / "demo_cpu_decode_again.jsonl.gz"
"""The demo's CPU job (no NVML on the VM): decode-bound, then contended."""
GPU = DATA / "h200" / "healthy.jsonl"
GPU_SIDE = (H2D, GPU_MEMORY, LAUNCH)
HOST_SIDE = (IO, DECODE, CONTENTION)


def _verdicts(path: Path) -> list[Verdict]:
    analysis = Analysis()
    return [analysis.update(f) for f in load_frames(str(path))]


def test_a_cpu_only_job_s_gpu_side_stages_are_na_and_its_host_side_stages_are_judged():
    verdicts = _verdicts(CPU)
    assert verdicts
    for v in verdicts:
        levels = dict(v.levels)
        assert [levels[s] for s in GPU_SIDE] == [LEVEL_NA] * 3, (v.t, levels)
        assert all(levels[s] != LEVEL_NA for s in HOST_SIDE), (v.t, levels)
        # The one item of each n/a stage is the "no GPU" fact, which does not apply (mark "–").
        for s in GPU_SIDE:
            items = [e for e in v.evidence if e.stage == s]
            assert [(e.signal, e.applies) for e in items] == [("gpu", False)], items
            assert items[0].text.startswith("no GPU to ")
    # Disk, CPU prep and Contention keep what was measured: the job was decode-bound, then contended.
    seen = {(s, lv) for v in verdicts for s, lv in v.levels}
    assert {(DECODE, LEVEL_BOTTLENECK), (CONTENTION, LEVEL_BOTTLENECK), (DECODE, LEVEL_WARNING), (IO, LEVEL_OK)} <= seen


def test_a_gpu_job_has_no_na_stage():
    verdicts = _verdicts(GPU)
    assert verdicts
    assert not [(v.t, s) for v in verdicts for s, lv in v.levels if lv == LEVEL_NA]
    assert all(lv == LEVEL_OK for v in verdicts for _, lv in v.levels)  # healthy: nothing lags


def test_a_job_that_has_not_opened_its_gpu_yet_is_na_only_until_it_has():
    """Lightning's first tick on the H200: the job holds no GPU yet ("the job holds no GPU")."""
    verdicts = _verdicts(DATA / "h200" / "field_lightning.jsonl.gz")
    na = [i for i, v in enumerate(verdicts) if LEVEL_NA in dict(v.levels).values()]
    # ... and once the job has exited (its last tick), when no pipeline runs to be judged at all
    ended = [i for i, v in enumerate(verdicts) if v.sentence.startswith("Not training: the job exited")]
    assert ended == [len(verdicts) - 1]
    assert na == [0, *ended]
    assert "the job holds no GPU" in next(e.text for e in verdicts[0].evidence if e.stage == H2D)


def test_no_frame_judged_is_na_everywhere():
    """No frames, or a diagnosis that failed: nothing was measured, so no stage is "ok"."""
    v, _ = diagnose([])
    assert dict(v.levels) == dict.fromkeys(PIPELINE, LEVEL_NA)


async def test_the_report_treats_na_as_neither_fine_nor_a_problem():
    frames = load_frames(str(CPU))
    got = await gather.watch_live(ListSource(frames))
    report = build_report(got, NOT_RECORDED, "live", pid=frames[-1].target.pid, requested_s=60)
    assert not [w.stage for w in report.summary.warnings if w.stage in GPU_SIDE]
    md = render_markdown(report)
    assert "| not checked | PCIe link at full speed under load |" in md


async def test_the_pipeline_box_and_the_drill_down_say_na(monkeypatch):
    """NO_COLOR: the level still reads, from its dash and its word."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(ReplaySource(str(CPU), speed=0), analysis=Analysis())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        boxes = {b.stage: b for b in app.query(StageBox)}
        for s in GPU_SIDE:
            assert boxes[s].level == LEVEL_NA and boxes[s].has_class("-na") and not boxes[s].has_class("-ok")
            assert str(boxes[s].content).splitlines()[1] == "– n/a"
        for s in HOST_SIDE:
            assert boxes[s].level != LEVEL_NA and not boxes[s].has_class("-na")
        assert screen_text(app).count("– n/a") == 3
        await pilot.press("3", "enter")
        await pilot.pause()
        title = app.screen.query_one("#stage-title")
        assert str(title.content) == "3 · PCIe — – n/a" and title.has_class("-na")
        assert "– no GPU to copy to" in screen_text(app)  # its item, marked "does not apply"


class _NoStage(SyntheticAnalysis):
    """No stage named yet, on a machine without a GPU: the host-side stages ok, the GPU side n/a."""

    def update(self, frame):
        v = super().update(frame)
        levels = tuple((s, LEVEL_NA if s in GPU_SIDE else LEVEL_OK) for s in PIPELINE)
        v = replace(v, stage=UNKNOWN, confidence=0.0, secondary=(), levels=levels)
        self.verdicts[-1] = v
        return v


async def test_the_cursor_does_not_go_to_an_na_stage():
    """Without a verdict stage the cursor goes to the first stage to look at; n/a is none."""
    app = make_app(ListSource(synthetic_frames(3, gpus=False)), analysis=_NoStage())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        assert not app.query_one(PipelinePanel).cursor_shown
        assert not [b.stage for b in app.query(StageBox) if b.has_class("-selected")]


def test_an_exited_or_stopped_job_s_stages_are_na_not_ok():
    """Review 36: after an H200 PCIe job exited, its last tick showed every stage "ok", beside a
    report saying PCIe held 89 % of the run; and a stopped job's ticks (tests/data/cpu_field/
    stop_cont.jsonl.gz) showed Disk, CPU prep and Contention "ok" beside "nothing to diagnose". No
    pipeline runs then: every stage is n/a. The ticks around them keep their judged levels."""
    from gpuwatch.model.verdict import IDLE, PIPELINE

    for path, said in ((ROOT / "bench/results/2026-12-02-h200/acc/h2d.jsonl", "Not training: the job exited"),
                       (DATA / "cpu_field/stop_cont.jsonl.gz", "The job is stopped (state T")):
        verdicts = _verdicts(path)
        frozen = [v for v in verdicts if v.stage == IDLE and v.sentence.startswith(said)]
        assert frozen, path
        assert all(set(dict(v.levels).values()) == {LEVEL_NA} for v in frozen)
        running = [v for v in verdicts if v.stage in PIPELINE]
        assert running and all(LEVEL_OK in dict(v.levels).values() or LEVEL_BOTTLENECK in dict(v.levels).values()
                               for v in running)
