"""The TUI's per-frame caches (the charts' readings, the GPU panel's history) never answer for a frame
they did not read. They are keyed by ``id(frame)``, and CPython gives a freed frame's address to the
next frame made: a cache that outlived its frames (a live watch paused, or a detail screen open, while
the analysis dropped its oldest frames; a replay seek) gave a new frame an old frame's values. Each
cache holds the frames it read, so their ids stay theirs."""

from __future__ import annotations

import dataclasses
import gc

from gpuwatch.replay import load_frames
from gpuwatch.tui.chart_series import ChartSeries
from gpuwatch.tui.panels.gpu import GpuPanel

FIRST = "tests/data/h200/field_tokenize.jsonl.gz"
THEN = "tests/data/h200/field_lightning.jsonl.gz"
"""Two real H200 recordings of different jobs (tests/data/h200/README.md): the frames a cache read
first, then other frames, with other GPU readings."""


def _read_then_freed(read) -> tuple[list, int]:  # noqa: ANN001
    """``read`` is handed copies of FIRST's frames, which are then freed; the frames made next are
    copies of THEN's (CPython reuses the freed addresses at once). Returns those and how many of them
    took an address ``read`` saw."""
    firsts, thens = list(load_frames(FIRST))[:30], list(load_frames(THEN))[:30]
    window: list = [dataclasses.replace(f) for f in firsts]  # held by this list alone
    read(window)
    seen = {id(f) for f in window}
    gc.collect()
    new = []
    for k, f in enumerate(thens):  # each old frame freed, a new one made in its place
        window[k] = None
        new.append(dataclasses.replace(f))
    return new, sum(id(f) in seen for f in new)


def test_chart_readings_of_new_frames_are_their_own():
    series = ChartSeries()
    new, reused = _read_then_freed(series.plots)
    assert series.readings(new) == ChartSeries().readings(new), f"{reused} addresses reused"
    assert series.plots(new) == ChartSeries().plots(new)


def test_the_gpu_panels_history_of_new_frames_is_its_own():
    panel = GpuPanel(0)
    new, reused = _read_then_freed(lambda w: panel._history(tuple(w)))
    assert panel._history(tuple(new)) == GpuPanel(0)._history(tuple(new)), f"{reused} addresses reused"
