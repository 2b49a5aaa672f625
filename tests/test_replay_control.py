"""Replay playback (pause, step, seek, speed) on a SYNTHETIC recording, and the TUI's keys for it."""

from __future__ import annotations

import asyncio
import dataclasses

from gpuwatch.replay import replay_frames
from gpuwatch.replay_control import ReplayControl
from gpuwatch.source import ReplaySource
from tests.test_tui_fixtures import make_app, screen_text, synthetic_frames, write_recording

SIZE = (120, 40)


async def _take(agen, n: int) -> list:
    out = []
    async for f in agen:
        out.append(f)
        if len(out) == n:
            break
    return out


async def test_pause_holds_and_step_gives_one_frame(tmp_path):
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(10))
    control = ReplayControl(0)  # as fast as possible, until paused
    agen = replay_frames(str(path), control=control)
    first = await _take(agen, 2)
    control.toggle_pause()
    nxt = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.05)
    assert not nxt.done()  # paused: nothing comes
    control.step()
    frame = await asyncio.wait_for(nxt, 1)
    assert frame.seq == first[-1].seq + 1 and control.paused
    await agen.aclose()


async def test_seek_back_restarts_from_the_top_and_forward_skips(tmp_path):
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(30))  # one frame a second
    control = ReplayControl(0)
    restarts = []
    control.on_restart = lambda: restarts.append(control.position)
    agen = replay_frames(str(path), control=control)
    frames = await _take(agen, 20)
    assert control.position == 19.0
    control.seek(-10)
    f = await agen.__anext__()
    assert restarts == [0.0]
    # the frames up to the target come again (the verdict is stateful) without waiting
    seqs = [f.seq]
    while control.position < 9.0:
        seqs.append((await agen.__anext__()).seq)
    assert seqs[0] == 1 and seqs[-1] == 10
    control.seek(15)
    while control.position < 24.0:
        await agen.__anext__()
    assert control.position == 24.0 and frames[0].seq == 1
    await agen.aclose()


async def test_a_seek_between_two_frames_stops_at_the_next_one(tmp_path):
    """Real recordings tick at 1 s with jitter (H200 run 11: 57.0702, 58.0712, ...), so a seek's
    target falls between two frames: the first frame past it ends the seek, and the replay plays on
    from there (it used to take that frame for a backward seek and start from the top, forever)."""
    frames = [dataclasses.replace(f, t=f.t + (0.0011 * i) % 0.003) for i, f in enumerate(synthetic_frames(40))]
    path = write_recording(tmp_path / "r.jsonl", frames)
    control = ReplayControl(0)
    restarts = []
    control.on_restart = lambda: restarts.append(control.position)
    agen = replay_frames(str(path), control=control)
    await asyncio.wait_for(_take(agen, 5), 5)
    control.seek(10.0005)  # from 4.0044 to 14.0049: between the frames at 14.0032 and 15.0055
    for _ in range(40):  # the frames on the way come at once (the verdict needs them)
        f = await asyncio.wait_for(agen.__anext__(), 5)
        if control.position >= 14.0049:
            break
    assert restarts == [] and f.seq == 16
    f = await asyncio.wait_for(agen.__anext__(), 5)
    assert f.seq == 17  # and plays on from there
    control.seek(-5)
    for _ in range(40):
        f = await asyncio.wait_for(agen.__anext__(), 5)
        if control.position >= 10.0055:
            break
    assert len(restarts) == 1 and f.seq == 12  # back from 15.0055 to 10.0055: the frame at 11.0011
    control.seek(100)  # past the end: the frames run out, and the next seek counts from the last one
    assert [f async for f in agen][-1].seq == 40
    control.seek(-10)
    assert control.rewinds() and control._seek_to < 30


def test_speed_steps_and_the_flag_reads_as_replay():
    control = ReplayControl(1.0)
    assert control.describe() == "REPLAY ▶ 1×"
    control.faster()
    control.faster()
    assert control.speed == 4.0
    control.faster(-5)
    assert control.speed == 0.25
    control.toggle_pause()
    assert control.describe() == "REPLAY ❚❚ paused"


async def test_the_replay_is_marked_from_the_first_frame_and_its_keys_work(tmp_path):
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(60))
    control = ReplayControl(1.0)
    app = make_app(ReplaySource(str(path), control=control))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(40):  # until the first frame is drawn
            await pilot.pause(0.05)
            if control.frames and "Help" in screen_text(app).splitlines()[-1]:
                break
        text = screen_text(app)
        assert "REPLAY ▶ 1×" in text.splitlines()[0]
        footer = text.splitlines()[-1]
        for word in ("Pause", "Step", "Seek", "Speed", "Help", "Quit"):
            assert word in footer
        await pilot.press("space")
        assert control.paused
        await pilot.pause()
        assert "REPLAY ❚❚ paused" in screen_text(app)
        at = control.frames
        await pilot.press("full_stop")
        await pilot.pause(0.1)
        assert control.frames == at + 1
        await pilot.press("plus")
        assert control.speed == 2.0
        await pilot.press("minus", "minus")
        assert control.speed == 0.5
        await pilot.press("right_square_bracket")
        await pilot.pause(0.3)
        assert control.position >= 10.0  # a seek plays through the paused state to its target
        before = control.position
        await pilot.press("left_square_bracket")
        await pilot.pause(0.3)
        assert control.position < before and len(app.analysis.frames) <= control.frames


async def _until(pilot, done, tries: int = 60) -> None:  # noqa: ANN001
    """Let the app run until ``done()`` holds (or ``tries`` short pauses have passed)."""
    for _ in range(tries):
        await pilot.pause(0.05)
        if done():
            return


async def test_after_a_seek_back_the_charts_and_verdicts_are_fed_by_the_new_pass(tmp_path):
    """trial14: a backward seek gave the app a fresh Analysis while the running pipeline kept
    updating the old one, so the screens read an empty window from then on: the main screen's
    charts showed "GPU busy ━ N/A" with no plot and no band until the replay ended (tmux, the H200
    checkpoint recording), the drill-downs' histories were empty, and "export report" said "No
    frames yet"; the verdicts came from the old window, frames of both passes in it."""
    from gpuwatch.tui.panels.job_charts import JobCharts

    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(60))
    control = ReplayControl(0)
    control.faster(3)
    app = make_app(ReplaySource(str(path), control=control))
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: control.position >= 20)
        await pilot.press("space")  # paused: the pass after the seek is counted frame by frame
        await pilot.press("left_square_bracket")
        await _until(pilot, lambda: control.frames and control.position < 20)  # the pass from the top began
        await pilot.press("full_stop", "full_stop")
        await pilot.pause(0.3)
        view = app.view
        assert view is not None and len(view.frames) == control.frames
        ts = [f.t for f in view.frames]
        assert ts == sorted(ts) and view.frames[-1] is view.frame  # one pass, up to the frame shown
        chart = app.screen.query_one(JobCharts)
        assert len(chart._plots[0].series[0].values) == len(view.frames)


async def test_an_ended_replay_says_so_without_its_play_mark_and_speed(tmp_path):
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(5))
    control = ReplayControl(0)
    control.faster(3)
    app = make_app(ReplaySource(str(path), control=control))
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.ended)
        await pilot.pause()
        top = screen_text(app).splitlines()[0]
        assert "REPLAY ■ ended ([ seeks back)" in top
        assert "▶" not in top and "×" not in top and "replay ended" not in top


async def test_a_live_watch_hides_the_replay_keys():
    from tests.test_tui_fixtures import QueueSource, synthetic_frame

    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(200, 40)) as pilot:
        source.put(synthetic_frame(0))
        await pilot.pause(0.1)
        footer = screen_text(app).splitlines()[-1]
        assert "Seek" not in footer and "Step" not in footer and "REPLAY" not in screen_text(app)
        source.put(None)
