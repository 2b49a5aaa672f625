"""The 2-minute healthy run on the H200 (bench/results/scripts/device_run3.sh, 2026-12-02, commit 185a5f2).

bench/results/2026-12-02-h200/run3/acc_long/healthy.jsonl.gz is the real recording that
``bench.accuracy --device cuda --scenarios healthy --duration 130`` made of bench/scenarios/healthy.py
(bf16 MLP, compute-bound) on one NVIDIA H200, with nvidia-smi read at 1 Hz beside it
(nvidia_smi.csv, same clock, UTC). Memory used is checked against nvidia-smi (the collector reads
NVML memory info v2 since the first H200 run showed v1 counting the driver's reservation), and the
whole run is replayed through today's diagnosis: a healthy job must keep one verdict for 2 minutes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.model.verdict import GPU_BOUND
from gpuwatch.replay import load_frames
from tests.test_h200_recording import MIB, PAIR_S, num, smi_rows

RUN = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-02-h200" / "run3" / "acc_long"
WARMUP_S = 8.0
"""bench/accuracy.py's warm-up: the job compiles and the evidence window fills."""


@pytest.fixture(scope="module")
def frames():
    bad = []
    got = load_frames(str(RUN / "healthy.jsonl.gz"), bad.append)
    assert not bad
    return got


def test_the_run_lasted_two_minutes_on_the_h200(frames):
    gpus = [f.gpus[0] for f in frames if isinstance(f.gpus, tuple) and f.gpus]
    assert gpus and all(g.name == "NVIDIA H200" for g in gpus)
    assert frames[-1].t - frames[0].t >= 125


def test_memory_used_matches_nvidia_smi_to_the_mib(frames):
    rows = smi_rows(RUN / "nvidia_smi.csv")
    paired = 0
    for f in frames:
        g = f.gpus[0] if isinstance(f.gpus, tuple) and f.gpus else None
        if g is None or not isinstance(g.mem_used, int):
            continue
        when, row = min(rows, key=lambda r: abs(r[0] - f.wall))
        if abs(when - f.wall) > PAIR_S:
            continue
        paired += 1
        # nvidia-smi prints whole MiB; NVML v2 'used' excludes the reserved memory, as nvidia-smi does
        assert abs(g.mem_used / MIB - num(row["memory.used"])) < 1.0
    assert paired >= 120


def test_no_verdict_change_in_two_minutes_of_a_healthy_job(frames):
    analysis = Analysis()
    start = frames[0].t
    scored = []
    for f in frames:
        v = analysis.update(f)
        if f.t - start >= WARMUP_S and f.target.alive:
            scored.append(v.stage)
    assert len(scored) >= 115
    assert set(scored) == {GPU_BOUND}, {s: scored.count(s) for s in set(scored)}
