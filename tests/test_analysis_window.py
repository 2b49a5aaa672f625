"""Analysis hands the diagnosis only the last READ_S seconds of a history in time order: the same
verdicts as the whole history gives, in order and after a replay seeks back in time."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis import READ_S, diagnose
from gpuwatch.replay import load_frames

LONG = Path(__file__).resolve().parents[1] / "bench" / "results" / "2026-12-02-h200" / "run3" / "acc_long" / "healthy.jsonl.gz"


@pytest.fixture(scope="module")
def frames():
    got = load_frames(str(LONG))
    assert got[-1].t - got[0].t > 2 * READ_S  # long enough that the cut drops frames
    return got


def _whole_history(frames, history):
    """The verdicts as each frame's diagnosis over the whole kept history gives them."""
    kept, state, out = deque(maxlen=history), None, []
    for f in frames:
        kept.append(f)
        v, state = diagnose(list(kept), state)
        out.append(v)
    return out


@pytest.mark.parametrize("history", [900, 100])
def test_a_history_in_time_order_gives_the_whole_history_verdicts(frames, history):
    a = Analysis(history)
    assert [a.update(f) for f in frames] == _whole_history(frames, history)


@pytest.mark.parametrize("at, back", [(30, 20), (90, 40)])
def test_a_history_that_goes_back_in_time_gives_the_whole_history_verdicts(frames, at, back):
    seeks = frames[:at] + frames[at - back:]  # a replay seeking back, then on to the end
    a = Analysis(100)
    got = [a.update(f) for f in seeks]
    assert got == _whole_history(seeks, 100)
    # Once the frames out of order have left the history, only the last READ_S seconds are read again.
    assert (len(a._history.last(READ_S)) < 100) == (len(seeks) - at >= 100)
