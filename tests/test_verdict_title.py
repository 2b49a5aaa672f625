"""The verdict line says the stage's title once: the GPU-bound and CPU-bound sentences begin with
their title ("GPU-bound: the GPU has work..."), so that they stand alone in the JSON stream and
the report, and the line that puts the title in front dropped it there (the demo read
"CPU-bound (high confidence 0.95): CPU-bound: the job's own compute...")."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.model.verdict import GPU_BOUND, STAGE_TITLES
from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames
from gpuwatch.tui.panels.pipeline import verdict_text

RECORDING = Path(__file__).resolve().parent / "data" / "h200" / "healthy.jsonl"


def test_the_title_is_said_once_and_the_sentence_keeps_it_for_the_json():
    verdicts = from_frames(load_frames(str(RECORDING), lambda bad: None)).verdicts
    bound = [v for v in verdicts if v.stage == GPU_BOUND]
    assert bound, "the healthy H200 recording has GPU-bound verdicts"
    for v in verdicts:
        title = STAGE_TITLES[v.stage]
        line = verdict_text(v).replace("[b]", "").replace("[/b]", "")
        assert line.count(title) == 1, line
    for v in bound:
        head = v.sentence.split(": ", 1)[0]
        assert head in ("Healthy, GPU-bound", "Mostly GPU-bound", "GPU-bound")  # the JSON's sentence stands alone
        assert verdict_text(v).startswith(f"[b]{head}[/b] (")
        assert verdict_text(v).split("): ", 1)[1].startswith("the GPU has work")
