"""CPU-bound that held most of a run under another stage's headline still lists its advice.

Real CPU recordings (tests/data/cpu_field/README.md): the headline names the stage with the largest
fix ("CPU prep cost the job most") and then says "Most of the time (68%) the verdict was CPU-bound";
the remedies must then say what to do about that 68 % too, which names where the main thread
computes. t38_annot_gc's own clock put half its time in a gc.collect() every 10 steps, on the line
the CPU-bound remedy names.
"""

from __future__ import annotations

from pathlib import Path

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

DATA = Path(__file__).parent / "data" / "cpu_field"


def _report(name: str):
    path = str(DATA / f"{name}.jsonl.gz")
    return build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)


def test_the_stage_held_most_has_its_advice_listed_after_the_bottleneck():
    r = _report("t38_annot_gc")
    assert r.summary.stage == "decode"  # the fix with a figure leads
    stages = list(dict.fromkeys(rem.stage for rem in r.remedies if rem.stage))
    assert stages == ["decode", "cpu_bound"]
    text = render_markdown(r)
    assert "Most of the time (68%), at a cost not estimated, the verdict was CPU-bound" in text
    advice = next(rem.text for rem in r.remedies if rem.stage == "cpu_bound")
    assert "job6_annot.py:43" in advice and "run it less often" in advice
    assert "2. **CPU-bound** (held 68% of the time; speed-up not estimated)" in text


def test_cpu_bound_held_most_beside_a_contention_headline_is_listed_and_the_epoch_fix_agrees():
    # lightning_val_ckpt: Contention leads on its figure, CPU-bound held 30 %, the most of any stage.
    # Listing CPU-bound's verdicts too makes the epoch fix, said once at its latest wording, quote
    # the run's end as the headline does ("8 times in 59 s"), not an earlier tick's ("5 times in 48 s").
    r = _report("lightning_val_ckpt")
    held = {rem.stage: rem.share for rem in r.remedies if rem.stage}
    assert r.summary.stage == "contention" and held["cpu_bound"] == max(held.values())
    text = render_markdown(r)
    assert "8 times in 59 s" in text and "5 times in 48 s" not in text
    assert text.count("persistent_workers=True: the DataLoader's workers were re-created") == 1
