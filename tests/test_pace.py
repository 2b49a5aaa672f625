"""The stack sampling pace: relaxed only under a steady, confident GPU-bound verdict, and a job
sampled at the relaxed pace keeps that verdict (checked on the real 2-minute H200 healthy run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.model.stacks import StackSample
from gpuwatch.model.values import Unsupported
from gpuwatch.model.verdict import GPU_BOUND, Verdict
from gpuwatch.pace import FULL, RELAX_AFTER, RELAX_CONFIDENCE, RELAXED, stack_pace
from gpuwatch.replay import load_frames

LONG_RUN = (Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-02-h200" / "run3" / "acc_long"
            / "healthy.jsonl.gz")


def verdict(stage: str, confidence: float = 0.95) -> Verdict:
    return Verdict(t=0.0, stage=stage, confidence=confidence, sentence="", evidence=(), secondary=(),
                   speedup=None, remedies=(), levels=())


@pytest.fixture(scope="module")
def frames():
    return load_frames(str(LONG_RUN))


def busy(frame, percent: float):
    """``frame`` with its GPU's utilization set to ``percent`` (the rest as recorded)."""
    return dataclasses.replace(frame, gpus=tuple(dataclasses.replace(g, util_gpu=percent) for g in frame.gpus))


def test_full_pace_until_a_steady_confident_gpu_bound_run(frames):
    steady, recent = [verdict(GPU_BOUND)] * RELAX_AFTER, frames[40:61]
    assert recent[-1].gpus[0].util_gpu >= 98  # the recorded healthy job: saturated
    assert stack_pace(steady[:-1], recent) == FULL
    assert stack_pace(steady, recent) == RELAXED
    assert stack_pace([verdict("decode")] * 5 + steady, recent) == RELAXED  # only the last RELAX_AFTER count
    assert stack_pace(steady, recent[-RELAX_AFTER:]) == FULL  # too few frames to tell steady
    # the H200 benchmark job's verdict while its busy sat under the 85 % saturation line
    assert stack_pace([verdict(GPU_BOUND, 0.68)] * RELAX_AFTER, recent) == RELAXED
    assert stack_pace([verdict(GPU_BOUND, 0.54)] * RELAX_AFTER, recent) == FULL  # two discounts: thin


def test_any_other_verdict_doubt_or_a_gpu_that_falls_restores_the_full_pace(frames):
    steady, recent = [verdict(GPU_BOUND)] * (RELAX_AFTER + 5), frames[40:60]
    now = frames[60]
    assert stack_pace(steady + [verdict("decode")], recent + [now]) == FULL
    assert stack_pace(steady + [verdict("unknown", 0.0)], recent + [now]) == FULL
    assert stack_pace(steady + [verdict(GPU_BOUND, RELAX_CONFIDENCE - 0.05)], recent + [now]) == FULL
    # the first tick of the H200 switch run's decode phase: busy 78.6 %, verdict still gpu_bound 0.82
    assert stack_pace(steady + [verdict(GPU_BOUND, 0.82)], recent + [busy(now, 78.6)]) == FULL
    assert stack_pace(steady, recent + [dataclasses.replace(now, gpus=Unsupported("no NVML"))]) == FULL


# GPU busy per tick of the H200 benchmark job (bench/steady_job.py, a `.item()` each step) once its
# verdict was GPU-bound at 0.82: bench/results/2026-12-02-h200/run5/steady_job_stack_loss.jsonl.gz
STEADY_JOB_BUSY = (87, 88, 85, 86, 87, 86, 86, 86, 86, 81, 88, 88, 87, 86, 85, 86)


def test_a_steady_job_below_saturation_relaxes_and_a_drop_restores(frames):
    steady = [verdict(GPU_BOUND, 0.82)] * RELAX_AFTER
    recent = [busy(frames[60], b) for b in STEADY_JOB_BUSY]
    assert stack_pace(steady, recent) == RELAXED  # 81 % then 88 %: the same job
    assert stack_pace(steady, [busy(frames[60], 86)] + recent[:10]) == RELAXED  # its dip to 81 % itself
    assert stack_pace(steady, recent + [busy(frames[60], 79.0)]) == RELAXED  # within STEADY_DROP of 81 %
    assert stack_pace(steady, recent + [busy(frames[60], 75.0)]) == FULL  # below the steady band
    assert stack_pace(steady, [busy(frames[60], 72.0)] * 12) == RELAXED
    assert stack_pace(steady, [busy(frames[60], 65.0)] * 12) == FULL  # starved: stacks must say why


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


def test_the_h200_healthy_run_sampled_at_the_relaxed_pace_stays_gpu_bound_and_confident(frames):
    analysis = Analysis()
    start = frames[0].t
    relaxed_from = None
    for i, f in enumerate(frames):
        if relaxed_from is not None and isinstance(f.stacks, StackSample):
            f = dataclasses.replace(f, stacks=_thin(f.stacks, drop_workers=i % 2 == 1))
        v = analysis.update(f)
        if relaxed_from is None and stack_pace(analysis.verdicts, analysis.frames) == RELAXED:
            relaxed_from = f.t
        elif relaxed_from is not None and f.target.alive:
            # once relaxed, thinner evidence must not talk the verdict out of relaxing (no flapping)
            assert v.stage == GPU_BOUND and v.confidence >= RELAX_CONFIDENCE, (f.t - start, v.stage, v.confidence)
    assert relaxed_from is not None and relaxed_from - start < 20
