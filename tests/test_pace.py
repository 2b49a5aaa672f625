"""The stack sampling pace: relaxed only under a steady, confident GPU-bound verdict, and a job
sampled at the relaxed pace keeps that verdict (checked on the real 2-minute H200 healthy run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.model.stacks import StackSample
from gpuwatch.model.verdict import GPU_BOUND, Verdict
from gpuwatch.pace import FULL, RELAX_AFTER, RELAX_CONFIDENCE, RELAXED, stack_pace
from gpuwatch.replay import load_frames

LONG_RUN = (Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-02-h200" / "run3" / "acc_long"
            / "healthy.jsonl.gz")


def verdict(stage: str, confidence: float = 0.95) -> Verdict:
    return Verdict(t=0.0, stage=stage, confidence=confidence, sentence="", evidence=(), secondary=(),
                   speedup=None, remedies=(), levels=())


def test_full_pace_until_a_steady_confident_gpu_bound_run():
    steady = [verdict(GPU_BOUND)] * RELAX_AFTER
    assert stack_pace(steady[:-1]) == FULL
    assert stack_pace(steady) == RELAXED
    assert stack_pace([verdict("decode")] * 5 + steady) == RELAXED  # only the last RELAX_AFTER count


def test_any_other_verdict_or_doubt_restores_the_full_pace_at_once():
    steady = [verdict(GPU_BOUND)] * (RELAX_AFTER + 5)
    assert stack_pace(steady + [verdict("decode")]) == FULL
    assert stack_pace(steady + [verdict("unknown", 0.0)]) == FULL
    assert stack_pace(steady + [verdict(GPU_BOUND, RELAX_CONFIDENCE - 0.05)]) == FULL


def _thin(stacks: StackSample, drop_workers: bool) -> StackSample:
    """The sample the relaxed pace would have taken: one dump of each process, not two, and the
    worker dumps of every other tick."""
    seen, keep = set(), []
    for t in stacks.threads:
        key = (t.pid, t.tid)
        if key in seen or (drop_workers and t.role == "worker"):
            continue
        seen.add(key)
        keep.append(t)
    return dataclasses.replace(stacks, threads=tuple(keep))


def test_the_h200_healthy_run_sampled_at_the_relaxed_pace_stays_gpu_bound_and_confident():
    frames = load_frames(str(LONG_RUN))
    analysis = Analysis()
    start = frames[0].t
    relaxed_from = None
    for i, f in enumerate(frames):
        if relaxed_from is not None and isinstance(f.stacks, StackSample):
            f = dataclasses.replace(f, stacks=_thin(f.stacks, drop_workers=i % 2 == 1))
        v = analysis.update(f)
        if relaxed_from is None and stack_pace(analysis.verdicts) == RELAXED:
            relaxed_from = f.t
        elif relaxed_from is not None and f.target.alive:
            # once relaxed, thinner evidence must not talk the verdict out of relaxing (no flapping)
            assert v.stage == GPU_BOUND and v.confidence >= RELAX_CONFIDENCE, (f.t - start, v.stage, v.confidence)
    assert relaxed_from is not None and relaxed_from - start < 20
