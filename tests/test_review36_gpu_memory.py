"""Review 36, GPU memory: the verdict names the sign that was seen.

The real H200 layout/elementwise job (bench/results/2026-12-02-h200/acc/gpu_memory.jsonl) reads SM
occupancy ~86 % and DRAM bandwidth ~44 %, under DRAM_BOUND. Its sentence read "GPU-bound on memory
traffic, not math: ... DRAM 44 %" beside "○ DRAM bandwidth used: 44 % (needs at least 60 %)", and its
remedies named .contiguous() and channels_last beside "○ ... layout ops: 0 %". The stage stays named
(occupancy with idle tensor cores is the H200 signature of copy and layout kernels), but the sentence
says occupancy, and the layout fixes wait for layout ops seen on the main thread.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.evidence import fmt
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown
from tests import test_diagnosis_frames as frames_mod
from tests.test_diagnosis_frames import last
from tests.test_diagnosis_stages import LAYOUT

REC = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-02-h200" / "acc" / "gpu_memory.jsonl"
LAYOUT_FIXES = (".contiguous()", "channels_last", ".permute()")


@pytest.fixture(scope="module")
def verdicts() -> list[v.Verdict]:
    analysis = Analysis()
    return [analysis.update(f) for f in load_frames(str(REC))]


def _ev(verdict: v.Verdict) -> dict[str, v.Evidence]:
    return {e.signal: e for e in verdict.evidence if e.stage == v.GPU_MEMORY}


def test_the_real_memory_bound_job_is_still_named(verdicts):
    named = [x for x in verdicts if x.stage == v.GPU_MEMORY]
    assert len(named) >= len(verdicts) // 2, [x.stage for x in verdicts]
    for x in named:
        ev = _ev(x)
        # the stage names a sign that holds: DRAM bandwidth or occupancy
        assert ev["dram"].supports or ev["occupancy"].supports or "holding this verdict" in x.sentence, x.sentence


def test_the_sentence_says_the_sign_that_held_not_memory_traffic(verdicts):
    named = [x for x in verdicts if x.stage == v.GPU_MEMORY]
    on_occupancy = [x for x in named if not _ev(x)["dram"].supports and _ev(x)["occupancy"].supports]
    assert on_occupancy, "the real job's DRAM reading stays under its cut: the case under review"
    for x in named:
        dram, occ = _ev(x)["dram"], _ev(x)["occupancy"]
        if not dram.supports:
            assert "memory traffic" not in x.sentence, x.sentence
            # the DRAM figure the evidence shows, said as under a full bus, never as the cause
            assert f"DRAM bandwidth is only {fmt(dram.value)} used" in x.sentence or "earlier readings" in x.sentence
        if occ.supports and not dram.supports:
            assert f"occupancy {fmt(occ.value)}" in x.sentence and "tensor cores" in x.sentence, x.sentence
        # both rows say that either sign will do, so a "○" on one is not a cut the verdict ignored
        assert "this or" in dram.text and "this or" in occ.text


def test_layout_fixes_only_where_layout_ops_were_seen(verdicts):
    named = [x for x in verdicts if x.stage == v.GPU_MEMORY]
    for x in named:
        text = " ".join(x.remedies)
        if not _ev(x)["layout_ops"].supports:
            assert not any(w in text for w in LAYOUT_FIXES), text
            assert "torch.profiler" in text  # find the kernels the GPU's readings point at
        assert "torch.compile" in text


def test_the_report_does_not_contradict_its_evidence():
    frames = load_frames(str(REC))
    md = render_markdown(build_report(from_frames(frames), NOT_RECORDED, "replay", path=str(REC)))
    verdict = md.split("## Verdict", 1)[1].split("## Checks", 1)[0]
    if "○ DRAM bandwidth used" in md:
        assert "memory traffic" not in verdict, verdict
    remedies = md.split("## Remedies", 1)[1].split("## Verdict timeline", 1)[0]
    if "○ stack samples of the main thread in layout ops" in md:
        assert not any(w in remedies for w in LAYOUT_FIXES), remedies


def test_dram_at_its_cut_is_said_as_memory_traffic(monkeypatch):
    # A bandwidth-bound signature (synthetic: DRAM 75 %, occupancy 30 %): the bus is full, and said so.
    monkeypatch.setitem(frames_mod.H200, "bandwidth", (100, 70, 100, 99.0, 30.0, 1.0, 75.0, 15))
    x = last(replace(LAYOUT, gpu="bandwidth"))
    assert x.stage == v.GPU_MEMORY
    assert _ev(x)["dram"].supports and not _ev(x)["occupancy"].supports
    assert "memory traffic" in x.sentence and "DRAM bandwidth 75 % used" in x.sentence, x.sentence
    assert "occupancy 30 %" in x.sentence
