"""history.History: the frames of the last seconds, cut from the newest while the frames are in
time order, hold every window window.recent cuts from all of them; out of order, all are read.
The analyses and the straggler rule read their windows from it and give what the whole history gives."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from gpuwatch.diagnosis.window import recent
from gpuwatch.history import History
from gpuwatch.multirank import MultiRank
from gpuwatch.replay import load_frames

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def ranked():
    return load_frames(str(DATA / "scale_8gpu_8ranks.jsonl.gz"))


def _at(frames, times):
    base = frames[0]
    return [dataclasses.replace(base, t=t) for t in times]


@pytest.mark.parametrize("times", [
    [float(i) for i in range(50)],                                  # a tick a second
    [0.0, 1.0, 1.0, 2.5, 2.5, 2.5, 4.0] + [5.0 + i for i in range(30)],  # equal times
    [float(i) for i in range(30)] + [float(i) for i in range(10, 40)],   # a seek back
    [float(i) for i in range(20)] + [math.nan] + [20.0 + i for i in range(20)],
    [float(i) for i in range(20)] + [math.inf, math.inf],
    [5.0],
])
def test_the_last_seconds_hold_every_window_recent_cuts(ranked, times):
    frames = _at(ranked, times)
    for size in (10, 25, 100):
        h = History(size)
        for f in frames:
            h.append(f)
            for seconds in (3.0, 8.0, 10.0):
                got = h.last(seconds)
                for window in (1.0, 3.0, seconds):
                    assert recent(got, window) == recent(list(h.frames), window)


def test_out_of_order_frames_are_read_whole_until_the_one_out_of_order_is_the_oldest(ranked):
    h = History(10)
    for f in _at(ranked, [float(i) for i in range(20)] + [5.0] + [6.0 + i for i in range(6)]):
        h.append(f)  # kept: 17, 18, 19, 5, 6 ... 11
    assert not h.in_order and len(h.last(3.0)) == 10
    for f in _at(ranked, [12.0, 13.0, 14.0]):
        h.append(f)  # kept: 5 ... 14, the frame at 5.0 the oldest: in order again
    assert h.in_order and [f.t for f in h.last(3.0)] == [12.0, 13.0, 14.0]


def _ticks(frames, whole, monkeypatch):
    if whole:  # every window cut from all the frames kept, as before history.py
        monkeypatch.setattr(History, "last", lambda self, seconds: list(self.frames))
    m = MultiRank(history=30)
    out = [m.update(f) for f in frames]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("seek", [False, True])
def test_per_rank_verdicts_and_the_straggler_are_the_whole_history_ones(ranked, seek, monkeypatch):
    frames = ranked + ranked[10:] if seek else ranked  # a replay seeking back 30 s, then on
    assert _ticks(frames, False, monkeypatch) == _ticks(frames, True, monkeypatch)
