"""Snapshot tests (pytest-textual-snapshot) of the main screen and every drill-down.

Sources:
- the real recordings in ``SNAPSHOT_RECORDINGS`` (test_tui_fixtures.py), replayed at speed 0 and
  stopped after a fixed number of frames, verdicts from the current diagnosis (so a change in the
  diagnosis's wording changes these snapshots: review and update them);
- SYNTHETIC frames and verdict for the drill-down's evidence and remedies layout at 80x24, and help.

Each screen a user meets first is taken at 80x24 and 200x60: the main screen, the process screen,
a replay (marked as one from its first frame), and NO_COLOR (the terminal's own colours).

The clock-dependent header item (gpuwatch's own CPU) is frozen; watch time comes from the frames.
SVGs live in tests/snapshots/<this module>/. After a deliberate change:
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the new SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension

from gpuwatch.analysis import Analysis
from gpuwatch.model.verdict import PIPELINE
from gpuwatch.replay_control import ReplayControl
from gpuwatch.source import ReplaySource
from gpuwatch.source import FirstFrames
from tests.test_tui_fixtures import SNAPSHOT_RECORDINGS, ListSource, make_app, synthetic_frames

SNAPSHOT_DIR = Path(__file__).resolve().parent / "snapshots"
SIZES = {"80x24": (80, 24), "200x60": (200, 60)}
STAGE_KEYS = {stage: (str(i + 1), "enter") for i, stage in enumerate(PIPELINE)}

RECORDINGS = [
    pytest.param(name, marks=pytest.mark.skipif(not path.exists(), reason=f"no recording at {path}"))
    for name, (path, _) in SNAPSHOT_RECORDINGS.items()
]


class TuiSnapshots(SVGImageExtension):
    """pytest-textual-snapshot's SVGs, kept in tests/snapshots/ instead of __snapshots__/."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # noqa: ANN001 - syrupy's PyTestLocation
        return str(SNAPSHOT_DIR / test_location.basename)


@pytest.fixture
def snapshot(snapshot):  # noqa: F811 - overrides syrupy's fixture for this module
    snapshot.use_extension = lambda extension_class=None: snapshot.with_defaults(extension_class=TuiSnapshots)
    return snapshot


def recording_app(name: str):
    path, frames = SNAPSHOT_RECORDINGS[name]
    return make_app(FirstFrames(ReplaySource(str(path), speed=0), frames), analysis=Analysis())


def replay_app(name: str):
    """The recording as ``gpuwatch replay`` shows it: with its playback control (speed 0 here)."""
    path, frames = SNAPSHOT_RECORDINGS[name]
    return make_app(FirstFrames(ReplaySource(str(path), speed=0, control=ReplayControl(0)), frames),
                    analysis=Analysis())


def synthetic_app():
    return make_app(ListSource(synthetic_frames(30)))


async def all_frames_drawn(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("recording", RECORDINGS)
def test_main_screen(snap_compare, recording, size):
    assert snap_compare(recording_app(recording), terminal_size=SIZES[size], run_before=all_frames_drawn)


SCALE = Path(__file__).resolve().parent / "data" / "scale_8gpu_8ranks.jsonl.gz"


@pytest.mark.skipif(not SCALE.exists(), reason=f"no recording at {SCALE}")
@pytest.mark.parametrize("size", SIZES)
def test_scale_main_screen(snap_compare, size):
    """8 GPUs, 8 ranks, 64 workers (bench/scale.py's real recording; tests/test_tui_scale.py)."""
    app = make_app(ReplaySource(str(SCALE), speed=0), analysis=Analysis())
    assert snap_compare(app, terminal_size=SIZES[size], run_before=all_frames_drawn)


@pytest.mark.parametrize("stage", PIPELINE)
@pytest.mark.parametrize("recording", RECORDINGS)
def test_stage_drill_down(snap_compare, recording, stage):
    assert snap_compare(recording_app(recording), press=STAGE_KEYS[stage], terminal_size=SIZES["200x60"],
                        run_before=all_frames_drawn)


@pytest.mark.parametrize("recording", RECORDINGS)
def test_stacks_view(snap_compare, recording):
    assert snap_compare(recording_app(recording), press=("s",), terminal_size=SIZES["200x60"],
                        run_before=all_frames_drawn)


def test_stage_drill_down_synthetic_evidence(snap_compare):
    """SYNTHETIC verdict with evidence and remedies: the drill-down's layout at 80x24 only."""
    assert snap_compare(synthetic_app(), press=STAGE_KEYS["decode"], terminal_size=SIZES["80x24"],
                        run_before=all_frames_drawn)


def test_help_screen(snap_compare):
    assert snap_compare(synthetic_app(), press=("question_mark",), terminal_size=SIZES["80x24"],
                        run_before=all_frames_drawn)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("recording", RECORDINGS)
def test_process_screen(snap_compare, recording, size):
    """↓ then Enter: the second process (the only one when the job has one)."""
    assert snap_compare(recording_app(recording), press=("down", "enter"), terminal_size=SIZES[size],
                        run_before=all_frames_drawn)


@pytest.mark.parametrize("size", SIZES)
def test_replay_is_marked(snap_compare, size):
    assert snap_compare(replay_app("cpu_demo"), terminal_size=SIZES[size], run_before=all_frames_drawn)


@pytest.mark.parametrize("size", SIZES)
def test_no_color(snap_compare, monkeypatch, size):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(recording_app("cpu_demo"), terminal_size=SIZES[size], run_before=all_frames_drawn)
