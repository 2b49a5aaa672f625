"""The diagnosis on whole H200 runs of the switching job, replayed: every phase named, and soon.

Recordings (real, ``bench.accuracy --scenarios switch --phase 25`` on one H200, see bench/RESULTS.md):
- run 9 (2026-12-03 04:2x UTC): pageable copies ran at 14 % of the link, copy engine 15-16 %;
- run 11 (2026-12-03 07:15 UTC, another host): pageable copies at 8-10 % of the link, copy
  engine 10-12 %; the diagnosis of that day called the h2d phase launch-bound (its main thread
  burns a core staging the copies), which the copy-engine threshold in thresholds.COPY_SHARE
  now tells apart.
The ground truth is the scenario's own phase markers (``accuracy.json``), scored by bench.accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.rescore import rescore_one

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-03-h200"
RUNS = {"run9": RESULTS / "run9" / "acc_switch", "run11": RESULTS / "run11" / "acc_switch"}
MAX_LATENCY_S = 5.0
"""Each phase's verdict within five 1 s ticks of the switch (the stability rule takes two or three)."""


@pytest.mark.parametrize("run", RUNS)
def test_every_phase_of_the_switching_job_is_named(run):
    d = RUNS[run]
    saved = json.loads((d / "accuracy.json").read_text())["results"][0]
    got = rescore_one(d / "switch.jsonl.gz", saved["markers_seen"])
    for m in got["markers"]:
        assert m["latency_s"] is not None and m["latency_s"] <= MAX_LATENCY_S, (m, got["confusion"])
        assert m["right"] >= m["ticks"] - MAX_LATENCY_S, (m, got["confusion"])
    assert got["accuracy"] >= 0.9, got["confusion"]
