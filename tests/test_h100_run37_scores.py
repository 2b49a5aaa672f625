"""H100 run 37 (2026-12-05, bench/results/2026-12-05-h100/run37/README.md), replayed through today's
diagnosis: the first recordings from a card other than the H200 (NVIDIA H100 80GB HBM3, driver
580.159.04), six jobs recorded live by ``bench.accuracy`` with ``gpuwatch --json --record`` and
scored against each job's own markers: healthy, the four-phase switch job, Lightning with persistent
workers, tokenising with 12 workers, the checkpoint job and a torchvision ImageFolder job whose
workers are re-created each epoch.

Live, the diagnosis named the right stage on 100 % of scored ticks in all six, with no change of
verdict. These tests keep today's diagnosis as good on the same evidence: the thresholds were
derived from H200 readings, and an H100's (less memory bandwidth, the same GPM metrics) must read alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.rescore import rescore_one

RUN = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-05-h100" / "run37" / "accuracy"
SAVED = {r["scenario"]: r for r in json.loads((RUN / "accuracy.json").read_text())["results"]}
SWITCH_LATENCY_S = 3.0
"""The switch target: a real change of stage shows within 3 s."""


def _rescore(name: str) -> dict:
    return rescore_one(RUN / f"{name}.jsonl.gz", SAVED[name]["markers_seen"])


@pytest.mark.parametrize("name", sorted(set(SAVED) - {"switch"}))
def test_each_job_reads_its_stage_on_an_h100(name):
    """At most one scored tick other than the job's stage, and at most one change of verdict in its 35 s."""
    got = _rescore(name)
    assert got["scored"] >= 20, got
    assert got["scored"] - got["right"] <= 1, got["confusion"]
    assert got["changes"] <= 1, got["confusion"]


def test_every_switch_phase_is_named_within_3_s_on_an_h100():
    got = _rescore("switch")
    assert [m["stage"] for m in got["markers"]] == ["gpu_bound", "decode", "h2d", "launch"]
    latencies = [m["latency_s"] for m in got["markers"]]
    assert all(lat is not None and lat <= SWITCH_LATENCY_S for lat in latencies), latencies
    assert got["accuracy"] >= 0.98 and got["changes"] == 0, got["confusion"]
