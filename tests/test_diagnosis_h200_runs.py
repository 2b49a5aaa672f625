"""The diagnosis on whole H200 runs of the switching job, replayed: every phase named, and soon.

Recordings (real, ``bench.accuracy --scenarios switch --phase 25`` on one H200, see bench/results/HISTORY.md):
- run 9 (2026-12-03 04:2x UTC): pageable copies ran at 14 % of the link, copy engine 15-16 %;
- run 11 (2026-12-03 07:15 UTC, another host): pageable copies at 8-10 % of the link, copy
  engine 10-12 %; the diagnosis of that day called the h2d phase launch-bound (its main thread
  burns a core staging the copies), which the copy-engine threshold in thresholds.COPY_SHARE
  now tells apart;
- run 31 (2026-12-04 16:40 UTC): live with the relaxed pace's GPU-utilization reads (every second
  tick's busy from nvmlDeviceGetUtilizationRates, its samples a tick later; 8 such ticks in the
  GPU-bound phase), named live in 1.94 / 2.92 / 2.30 / 2.26 s.
The ground truth is the scenario's own phase markers (``accuracy.json``), scored by bench.accuracy.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench.accuracy import Tick, score, verdict_stage
from bench.rescore import rescore_one
from gpuwatch.analysis import Analysis
from gpuwatch.model.codec import to_dict
from gpuwatch.model.values import known
from gpuwatch.replay import load_frames

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-03-h200"
RUNS = {"run9": RESULTS / "run9" / "acc_switch", "run11": RESULTS / "run11" / "acc_switch"}
LIVE_RELAXED_UTIL = {"run31": RESULTS.parent / "2026-12-04-h200" / "run31" / "accuracy"}
MAX_LATENCY_S = 5.0
"""Each phase's verdict within five 1 s ticks of the switch (the stability rule takes two or three)."""


def _switch_result(d: Path) -> dict:
    return next(r for r in json.loads((d / "accuracy.json").read_text())["results"] if r["scenario"] == "switch")


@pytest.mark.parametrize("run", [*RUNS, *LIVE_RELAXED_UTIL])
def test_every_phase_of_the_switching_job_is_named(run):
    d = {**RUNS, **LIVE_RELAXED_UTIL}[run]
    saved = _switch_result(d)
    got = rescore_one(d / "switch.jsonl.gz", saved["markers_seen"])
    for m in got["markers"]:
        assert m["latency_s"] is not None and m["latency_s"] <= MAX_LATENCY_S, (m, got["confusion"])
        assert m["right"] >= m["ticks"] - MAX_LATENCY_S, (m, got["confusion"])
    assert got["accuracy"] >= 0.9, got["confusion"]


def _scored(frames, markers):
    analysis, ticks = Analysis(), []
    for f in frames:
        v = analysis.update(f)
        ticks.append(Tick(f.wall, verdict_stage(to_dict(v)), v.confidence, v.candidate))
    return score(markers, ticks)


def _thin_relaxed_mains(frames, keep_of_4=2):
    """The recording as the relaxed pace of gpuwatch/pace.py would now sample it: these runs were
    recorded when relaxed main dumps came at 1 Hz (one main-thread stack a tick); ``keep_of_4``
    of every four such ticks keep theirs: 2 is 0.5 Hz, 3 is 0.75 Hz. RELAXED's own rate, at every
    phase of its dumps, is replayed by tests/test_relaxed_stack_replay.py."""
    out, k, last = [], 0, None
    for f in frames:
        s = f.stacks
        if known(s) and s.t != last:
            last = s.t
            if sum(t.role == "main" for t in s.threads) == 1:
                k += 1
                if k % 4 >= keep_of_4:
                    s = dataclasses.replace(s, threads=tuple(t for t in s.threads if t.role != "main"))
        out.append(f if s is f.stacks else dataclasses.replace(f, stacks=s))
    return out


@pytest.mark.parametrize("run", RUNS)
def test_the_slower_relaxed_stack_pace_names_every_phase_as_soon(run):
    d = RUNS[run]
    markers = json.loads((d / "accuracy.json").read_text())["results"][0]["markers_seen"]
    frames = list(load_frames(str(d / "switch.jsonl.gz")))
    thinned = _thin_relaxed_mains(frames)
    dropped = sum(known(a.stacks) and a.stacks is not b.stacks for a, b in zip(frames, thinned))
    assert dropped >= 2  # the GPU-bound phase ran relaxed for its last ~15 s: there was something to thin
    before, after = _scored(frames, markers), _scored(thinned, markers)
    # Every phase right on as many ticks, and named no later. Run 11's second phase is named a tick
    # sooner thinned: fewer relaxed samples of the GPU-bound phase are left to outweigh the new stage's.
    assert [m["right"] for m in after["markers"]] == [m["right"] for m in before["markers"]]
    assert all(a["latency_s"] <= b["latency_s"] for a, b in zip(after["markers"], before["markers"]))


STEADY = RESULTS / "run11" / "self2" / "rec"
"""The benchmark job (GPU-bound, 80-90 % busy, 8 workers) watched for 90 s by the TUI and by
``--json`` (bench.self --record-dir, H200, 2026-12-03 07:40 UTC, relaxed main dumps at 1 Hz)."""


@pytest.mark.parametrize("name", ["tui.jsonl.gz", "json.jsonl.gz"])
@pytest.mark.parametrize("keep_of_4", [3, 2])
def test_a_steady_gpu_bound_job_keeps_its_verdict_and_pace_with_fewer_main_samples(name, keep_of_4):
    from gpuwatch.pace import RELAXED, stack_pace

    frames = list(load_frames(str(STEADY / name)))

    def run(fs):
        analysis, relaxed = Analysis(), 0
        for f in fs:
            analysis.update(f)
            relaxed += stack_pace(analysis.verdicts, analysis.frames) == RELAXED
        return [v.stage for v in analysis.verdicts], relaxed

    thinned = _thin_relaxed_mains(frames, keep_of_4)
    assert sum(a.stacks is not b.stacks for a, b in zip(frames, thinned)) >= 10
    stages, relaxed = run(frames)
    assert set(stages) == {"gpu_bound"} and relaxed >= 50  # as recorded
    thin_stages, thin_relaxed = run(thinned)
    assert thin_stages == stages  # 0.75 Hz and 0.5 Hz relaxed: the same verdicts
    # the 8 s window holds four main samples at 0.5 Hz; the ones kept here hold no two stray waits
    # (a moderate share) in any such window, so the pace stays relaxed just as long
    assert thin_relaxed == relaxed


def test_one_stray_wait_sample_keeps_a_steady_job_relaxed():
    """The TUI's recording of the benchmark job holds a stretch where one main-thread sample of
    nine caught the thread waiting for a batch: as recorded, GPU-bound's "not waiting" check failed
    on it (confidence 0.55, under RELAX_CONFIDENCE) and the stack pace went back to full for ~18
    ticks. One sample is not a moderate share (thresholds.MODERATE_MIN_SAMPLES): replayed now, the
    job stays GPU-bound with its confidence, and relaxed from the tenth tick on."""
    from gpuwatch.pace import RELAX_AFTER, RELAX_CONFIDENCE, RELAXED, stack_pace
    from gpuwatch.recording import Tick as Recorded, read_recording

    ticks = [t for t in read_recording(str(STEADY / "tui.jsonl.gz")) if isinstance(t, Recorded)]
    recorded = [t.verdict for t in ticks[RELAX_AFTER + 2:]]
    assert sum(v["stage"] == "gpu_bound" and v["confidence"] < RELAX_CONFIDENCE for v in recorded) >= 8
    analysis, paces = Analysis(), []
    for t in ticks:
        analysis.update(t.frame)
        paces.append(stack_pace(analysis.verdicts, analysis.frames))
    late = list(analysis.verdicts)[RELAX_AFTER + 2:]
    assert {v.stage for v in late} == {"gpu_bound"}
    assert min(v.confidence for v in late) >= RELAX_CONFIDENCE
    assert all(p == RELAXED for p in paces[RELAX_AFTER + 1:])


def test_a_moderate_share_needs_two_samples():
    from gpuwatch.diagnosis.thresholds import WAIT_MODERATE, moderate_cut

    assert 1 / 3 < moderate_cut(3) and 1 / 2 < moderate_cut(2)  # relaxed pace: two or three samples in the window
    assert 1 / 6 < moderate_cut(6) <= 2 / 6
    assert 1 / 16 < moderate_cut(16) <= 2 / 16  # full pace
    assert moderate_cut(100) == WAIT_MODERATE  # a long window: TF's 5 % itself
    assert moderate_cut(0) == WAIT_MODERATE


def test_a_high_share_needs_two_samples_unless_the_gpu_starves():
    from gpuwatch.diagnosis.thresholds import WAIT_HIGH, high_cut

    for n in (1, 2, 3, 5):  # one sample alone would reach 20 %
        assert 1 / n < high_cut(n, gpu_starved=False) <= 2 / n
        assert high_cut(n, gpu_starved=True) == WAIT_HIGH  # the idle GPU is the other evidence
    for n in (6, 16, 100):  # 20 % already takes two samples or more
        assert high_cut(n, gpu_starved=False) == WAIT_HIGH
    assert high_cut(0, gpu_starved=False) == WAIT_HIGH
