"""The command palette (^p) finds gpuwatch's own commands and each one acts (SYNTHETIC frames)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuwatch.replay_control import ReplayControl
from gpuwatch.source import ReplaySource
from gpuwatch.tui.commands import commands
from gpuwatch.tui.screens.help import HelpScreen
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.process import ProcessScreen
from gpuwatch.tui.screens.stage import StageScreen
from tests.test_tui_fixtures import (
    WORKER_PIDS, ListSource, make_app, screen_text, settle, synthetic_frames, write_recording,
)

SIZE = (120, 40)


async def _drawn(pilot, app) -> None:
    """Until the frames of a held source (a live-like one that never ends) are drawn."""
    for _ in range(50):
        await pilot.pause(0.05)
        if app.view is not None and len(app.analysis.frames) == 3:
            return


async def _run(pilot, app, text: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*text)
    await pilot.pause(0.3)  # the palette searches its providers asynchronously
    await pilot.press("enter")
    await pilot.pause(0.2)


async def test_rec_finds_record_and_starts_it(tmp_path):
    app = make_app(ListSource(synthetic_frames(3), hold=True), record_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _drawn(pilot, app)
        await _run(pilot, app, "rec")
        assert app.recording_path is not None and Path(app.recording_path).parent == tmp_path
        await _run(pilot, app, "record: stop")
        assert app.recording_path is None


async def test_the_palette_lists_gpuwatchs_commands_and_help_instead_of_keys():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        titles = [t for t, _, _ in commands(app)]
        for want in ("Record: start", "Pause the display", "Go to stage 1: I/O", "Go to stage 6: Contention",
                     "Open process 4250 (worker, pt_data_worker)", "Export report", "Help"):
            assert want in titles
        system = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme" in system and "Keys" not in system


def test_the_palette_names_the_folder_it_writes_to(tmp_path, monkeypatch):
    """The default folder is the working directory: the palette named it '.' ("... in .")."""
    monkeypatch.chdir(tmp_path)
    helps = {title: help for title, help, _ in commands(make_app(ListSource(synthetic_frames(3))))}
    assert helps["Record: start"].endswith(f".jsonl in {tmp_path}")
    assert helps["Export report"].endswith(f"(Markdown) to {tmp_path}")


async def test_go_to_stage_open_process_help_and_export(tmp_path):
    app = make_app(ListSource(synthetic_frames(3), hold=True), record_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _drawn(pilot, app)
        await _run(pilot, app, "go to stage 4")
        assert isinstance(app.screen, StageScreen) and app.screen.stage == "gpu_memory"
        await _run(pilot, app, "open process 4251")  # from a drill-down: back to main, then the process
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == 4251
        assert len(app.screen_stack) == 2
        await _run(pilot, app, "help")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await _run(pilot, app, "export report")
        for _ in range(100):
            reports = list(tmp_path.glob("gpuwatch-report-*.md"))
            if reports:
                break
            await pilot.pause(0.05)
        assert len(reports) == 1 and "CPU prep" in reports[0].read_text()
        await _run(pilot, app, "pause the display")
        assert app.paused


async def test_replay_commands_steer_the_playback(tmp_path):
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(40))
    control = ReplayControl(1.0)
    app = make_app(ReplaySource(str(path), control=control))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        await _run(pilot, app, "replay: pause")
        assert control.paused and "paused" in app.replay_state
        await _run(pilot, app, "replay: faster")
        assert control.speed == 2.0
        await _run(pilot, app, "replay: slower")
        assert control.speed == 1.0
        seen = control.frames
        await _run(pilot, app, "replay: step one frame")
        await pilot.pause(0.2)
        assert control.frames == seen + 1
        assert isinstance(app.screen, MainScreen)


async def test_a_process_name_with_brackets_shows_as_it_is(tmp_path):
    """Process names are the job's: a name such as ``[b]x`` (comm, 15 characters, prctl) must show
    its brackets, not be read as markup (a ``[@click=...]`` would make an action link)."""
    def renamed(f):
        procs = f.procs
        worker = dataclasses.replace(procs.processes[1], name="[b]x[/b]")
        return dataclasses.replace(f, procs=dataclasses.replace(procs, processes=(procs.processes[0], worker,
                                                                                   *procs.processes[2:])))

    record_dir = tmp_path / "[runs]"
    record_dir.mkdir()
    app = make_app(ListSource([renamed(f) for f in synthetic_frames(3)], hold=True), record_dir=str(record_dir))
    async with app.run_test(size=SIZE) as pilot:
        await _drawn(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        assert "[runs]" in screen_text(app)  # the listed commands, before a query
        await pilot.press(*"open")
        await pilot.pause(0.3)
        assert f"Open process {WORKER_PIDS[0]} (worker, [b]x[/b])" in screen_text(app)
