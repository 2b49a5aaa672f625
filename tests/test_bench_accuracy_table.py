"""bench/accuracy.py's table: each scenario's row names every stage its scored ticks were given."""

from __future__ import annotations

from bench import accuracy


def test_the_verdicts_cell_lists_every_stage_of_a_four_phase_switch():
    header = {"device": "cpu", "started": "2026-12-05T22:30:00Z", "gpuwatch_args": "", "warmup_s": 12}
    row = {"scenario": "switch", "markers": [{"stage": s, "latency_s": 3.0} for s in ("io", "decode", "h2d", "gpu_bound")],
           "scored": 40, "accuracy": 0.9,
           "verdicts": {"decode": 12, "io": 11, "gpu_bound": 9, "h2d": 8}}
    line = next(x for x in accuracy.markdown([row], header).splitlines() if x.startswith("| switch"))
    assert "decode 12, io 11, gpu_bound 9, h2d 8" in line
