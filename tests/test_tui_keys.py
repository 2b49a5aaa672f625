"""Pilot tests of every key flow of the TUI, on SYNTHETIC frames (layout and behaviour only)."""

from __future__ import annotations

import json

from gpuwatch.model.verdict import DECODE, GPU_MEMORY, H2D, IO, PIPELINE
from gpuwatch.replay_control import ReplayControl
from gpuwatch.source import ReplaySource
from gpuwatch.tui.screens.help import HelpScreen
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.stacks import StacksScreen
from gpuwatch.tui.screens.stage import StageScreen
from tests.test_tui_fixtures import ListSource, QueueSource, make_app, screen_text, settle, synthetic_frame, \
    synthetic_frames, write_recording

SIZE = (120, 40)


async def test_left_right_and_digits_select_a_stage():
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        pipeline = app.screen.pipeline
        assert pipeline.selected == DECODE  # the verdict's stage, until a key picks one
        await pilot.press("right")
        assert pipeline.selected == H2D
        await pilot.press("left", "left")
        assert pipeline.selected == IO
        await pilot.press("left")  # wraps around
        assert pipeline.selected == PIPELINE[-1]
        await pilot.press("4")
        assert pipeline.selected == GPU_MEMORY
        assert app.query_one("#stage-gpu_memory").has_class("-selected")
        assert not app.query_one("#stage-io").has_class("-selected")


async def test_the_stage_cursor_follows_the_verdict_until_a_stage_is_picked():
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        pipeline = app.screen.pipeline
        assert pipeline.selected == IO  # no verdict yet: the first stage
        source.put(synthetic_frame(0))  # the synthetic verdict: decode-bound
        await pilot.pause(0.05)
        assert pipeline.selected == DECODE
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, StageScreen) and app.screen.stage == DECODE
        await pilot.press("escape")
        await pilot.press("5")
        source.put(synthetic_frame(1))
        await pilot.pause(0.05)
        assert pipeline.selected == PIPELINE[4]  # picked: the next verdict leaves it there
        source.put(None)


async def test_the_stage_cursor_is_not_drawn_while_the_verdict_points_at_no_stage():
    """Review 46: a healthy H200 replay kept Launch highlighted all run, from tick 2's verdict; a box
    still marked when every stage reads ok is read as the problem. Unpicked, the cursor is hidden
    while nothing is flagged and comes back with the next stage named. Frames go through the app one
    at a time, each with its verdict (odd frames healthy), as a replay shows them."""
    from dataclasses import replace

    from gpuwatch.model.verdict import GPU_BOUND, LEVEL_OK
    from tests.test_tui_fixtures import SyntheticAnalysis, synthetic_verdict

    class Alternating(SyntheticAnalysis):
        def update(self, frame):
            v = synthetic_verdict(frame)
            if frame.seq % 2 == 0:
                v = replace(v, stage=GPU_BOUND, secondary=(), levels=tuple((s, LEVEL_OK) for s in PIPELINE))
            self.frames.append(frame)
            self.verdicts.append(v)
            return v

    def drawn() -> list[str]:
        return [s for s in PIPELINE if app.query_one(f"#stage-{s}").has_class("-selected")]

    async def shows(i: int, want: list[str]) -> None:
        source.put(synthetic_frame(i))
        for _ in range(100):  # drawn once the frame went through the pipeline (slower on a busy host)
            await pilot.pause(0.05)
            if app._latest is not None and app._latest[0].seq == i + 1 and drawn() == want:
                break
        assert drawn() == want, (i, drawn())

    source = QueueSource()
    app = make_app(source, analysis=Alternating())
    async with app.run_test(size=SIZE) as pilot:
        await shows(0, ["decode"])  # named: drawn on it
        await shows(1, [])  # healthy, nothing flagged: not drawn
        await shows(2, ["decode"])  # named again: back
        await pilot.press("5")  # picked: it stays drawn where the user put it, whatever the verdict
        await shows(3, [PIPELINE[4]])
        source.put(None)


async def test_a_frame_that_comes_while_a_drill_down_composes_is_drawn_once_it_can_be():
    # CI caught this race once: Enter pushed the drill-down, a frame came before the screen's
    # header had its parts, and drawing it raised (NoMatches) and ended the app.
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        source.put(synthetic_frame(0))
        await pilot.pause(0.05)
        screen = StageScreen(DECODE)
        app.push_screen(screen)  # not awaited: on top of the stack, not composed yet
        assert app.screen is screen and not screen.composed
        app.render_latest()  # the frame that comes now: nothing drawn, nothing raised
        await pilot.pause()
        assert screen.composed
        assert "CPU prep" in str(screen.query_one("#stage-title").content)  # drawn on mount
        assert "PID 4242" in str(screen.query_one("#header-what").content)
        source.put(None)


async def test_enter_opens_the_selected_stage_and_escape_returns():
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "enter")
        await pilot.pause()
        assert isinstance(app.screen, StageScreen)
        assert app.screen.stage == DECODE
        text = screen_text(app)
        assert "CPU prep" in text and "BOTTLENECK" in text
        assert "workers busy in transforms" in text and "wbusy" not in text  # the evidence, in words
        assert "Raise num_workers" in text  # the remedies
        await pilot.press("right")
        await pilot.pause()
        assert app.screen.stage == H2D
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert app.screen.pipeline.selected == DECODE  # the main screen keeps its selection


async def test_s_opens_the_stacks_view():
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StacksScreen)
        text = screen_text(app)
        assert "convert (PIL/Image.py:995)" in text  # the workers' hottest frame
        assert "waiting for a batch 100%" in text
        assert "DataLoader workers" in text and "Dataloader" not in text  # the role's own spelling
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_p_freezes_the_display_but_frames_are_still_analysed():
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        source.put(synthetic_frame(0))
        await pilot.pause(0.05)
        assert app.view is not None and app.view.frame.seq == 1
        await pilot.press("p")
        assert app.paused
        for i in range(1, 4):
            source.put(synthetic_frame(i))
        await pilot.pause(0.05)
        assert len(app.analysis.frames) == 4  # collected and analysed
        assert app.view.frame.seq == 1  # but not drawn
        assert "PAUSED" in screen_text(app)
        await pilot.press("p")
        await pilot.pause()
        assert app.view.frame.seq == 4  # unpausing draws the latest at once
        assert "PAUSED" not in screen_text(app)
        source.put(None)


async def test_r_records_to_an_auto_named_file_and_stops(tmp_path):
    source = QueueSource()
    app = make_app(source, record_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):  # stopped before its first tick, a recording keeps no file
            await pilot.press("r")
            await pilot.pause(0.1)
        assert any("before its first tick: no file kept" in n.message for n in app._notifications)
        assert not app.recordings and not list(tmp_path.glob("gpuwatch-*.jsonl"))
        await pilot.press("r")
        await pilot.pause(0.1)
        assert app.recording_path is not None
        assert "● REC" in screen_text(app)
        for i in range(3):
            source.put(synthetic_frame(i))
        await pilot.pause(0.1)
        await pilot.press("r")
        await pilot.pause(0.1)
        assert app.recording_path is None
        source.put(synthetic_frame(3))  # not recorded any more
        await pilot.pause(0.05)
        source.put(None)
    files = list(tmp_path.glob("gpuwatch-*.jsonl"))
    assert len(files) == 1
    assert files[0].name.startswith("gpuwatch-2") and len(files[0].stem) == len("gpuwatch-YYYYmmdd-HHMMSS")
    lines = [json.loads(x) for x in files[0].read_text().splitlines()]
    assert lines[0]["type"] == "header"
    assert [x["frame"]["seq"] for x in lines[1:]] == [1, 2, 3]


async def test_recording_into_a_missing_folder_notifies_and_keeps_watching(tmp_path):
    source = ListSource(synthetic_frames(3), hold=True)  # still watching: an ended one records nothing
    app = make_app(source, record_dir=str(tmp_path / "no" / "such" / "dir"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        await pilot.press("r")
        for _ in range(40):
            await pilot.pause(0.05)
            if any("Cannot record" in n.message for n in app._notifications):
                break
        assert app.recording_path is None
        assert any("Cannot record" in n.message for n in app._notifications)
        assert app.view is not None and app.view.frame.seq == 3


async def test_question_mark_opens_help_and_escape_closes_it():
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "Start or stop recording" in str(app.screen.query_one("#help-text").content)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


def test_help_shows_each_key_as_itself():
    """The footer's pairs (``[ ]`` on ``]``, ``+ -`` on ``+``, ``?`` for F1 and h) are not copied into
    the help: there each line names the keys that do what it says."""
    from gpuwatch.tui.screens.help import help_text, key_lines

    app = make_app(ListSource(synthetic_frames(1)))
    lines = {what: keys for keys, what in key_lines(app, [app])}
    assert lines["Replay: 10 s forward."] == "]"
    assert lines["Replay: 10 s back (replays from the start up to there)."] == "["
    assert lines["Replay: slower (down to ¼×)."] == "-" and lines["Replay: faster (up to 32×)."] == "+ ="
    assert lines["Every key of this screen, and the legend."] == "? f1 h"
    assert lines["Quit gpuwatch."] == "q f10 ^c"
    assert "\n]    " in help_text(key_lines(app, [app]))


def test_help_explains_the_charts_stage_band():
    """The band under every time chart ("?2222 CPU prep 222─") is in the legend: each mark and the
    stage numbers it stands for, which the pipeline line numbers too."""
    from gpuwatch.model.verdict import CPU_BOUND, GPU_BOUND, IDLE, UNKNOWN
    from gpuwatch.tui.chart_draw import BAND_MARK
    from gpuwatch.tui.screens.help import help_text, key_lines

    app = make_app(ListSource(synthetic_frames(1)))
    text = help_text(key_lines(app, [app]))
    assert "1 I/O → 2 CPU prep → 3 PCIe → 4 GPU memory → 5 Launch →\n6 Contention" in text  # a stage whole on its line
    band = next(line for line in text.split("\n\n") if "band" in line)
    for stage, word in ((GPU_BOUND, "GPU-bound"), (CPU_BOUND, "CPU-bound"), (IDLE, "Idle"), (UNKNOWN, "Unknown")):
        assert f"{BAND_MARK[stage]} {word}" in band


async def test_help_lists_only_the_keys_that_act_here(tmp_path):
    """A live watch of one process: no playback keys and no rank key (its footer leaves them out
    too; pressed, they say why). A replay lists its playback keys. The box says how it closes."""
    live = make_app(ListSource(synthetic_frames(2)))
    replay = make_app(ReplaySource(str(write_recording(tmp_path / "r.jsonl", synthetic_frames(2))), speed=0,
                                   control=ReplayControl(0)))  # as `gpuwatch replay` gives the TUI
    for app, shown in ((live, False), (replay, True)):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("question_mark")
            await pilot.pause()
            text = str(app.screen.query_one("#help-text").content)
            assert "(Esc or q closes this)" in text and "Start or stop recording" in text
            assert ("Replay: 10 s forward." in text) == shown and ("Replay: faster" in text) == shown
            assert "next rank" not in text


async def test_q_quits_with_code_0():
    app = make_app(QueueSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert not app.is_running


async def test_footer_lists_the_keys():
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        footer = screen_text(app).splitlines()[-1]
        for word in ("Stage", "Details", "Stacks", "Pause", "Record", "Help", "Quit"):
            assert word in footer


async def test_a_toast_quoting_a_path_with_brackets_shows_it(tmp_path):
    """Toasts quote paths and error texts: '[/y]' in them is text, not markup (a record folder
    'x[/y]' made the 'Recording to ...' toast fail to draw)."""
    from textual.widgets._toast import Toast

    folder = tmp_path / "x[" / "y]"
    folder.mkdir(parents=True)
    app = make_app(ListSource(synthetic_frames(3), hold=True), record_dir=str(folder))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        await pilot.press("r")
        for _ in range(40):
            await pilot.pause(0.05)
            if app.recording_path:
                break
        said = [n for n in app._notifications if n.message.startswith("Recording to")]
        assert said and "x[/y]" in Toast(said[0]).render().plain


async def test_a_digit_and_enter_read_in_one_go_open_that_stage():
    """A terminal delivers "3" and Enter in one read (tmux send-keys 3 Enter, a fast typist): Enter's
    binding is a priority one, checked as the key arrives, while a plain binding waits for the key to
    pass the focused widget; so Enter opened the stage the cursor was on before the digit moved it
    (the verdict's, in a trial). Both keys are posted here before either is handled."""
    from textual import events

    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.screen.pipeline.selected == DECODE  # the verdict's stage
        app.post_message(events.Key("3", "3"))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, StageScreen) and app.screen.stage == H2D


async def test_digits_and_arrows_type_into_the_filter_box():
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", "1", "2", "left", "3")
        await pilot.pause()
        from textual.widgets import Input
        box = app.screen.query_one(Input)
        assert box.value == "132" and app.screen.pipeline.selected == DECODE


async def test_keys_on_an_ended_replay_say_why_nothing_moves_and_r_keeps_no_empty_file(tmp_path):
    """Review 30: after "replay ended", p and + changed nothing and said nothing, and r then r wrote a
    recording with its header alone into the working folder."""
    from gpuwatch.replay_control import ReplayControl

    source = ListSource(synthetic_frames(3))
    source.control = ReplayControl(1.0)
    app = make_app(source, record_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.ended = "replay ended"  # as the app sets it when a replay's frames run out
        for key in ("p", "plus", "r"):
            await pilot.press(key)
            await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(m.startswith("The replay ended: [ seeks back") for m in said), said
        assert any(m.startswith("Speed ") and "for when it plays again" in m for m in said), said
        assert any(m == "Nothing to record: replay ended." for m in said), said
        assert app.recording_path is None and not list(tmp_path.iterdir())


def test_help_explains_the_feed_charts_lines():
    """The main screen's second chart plots "input" and "worker CPU": the help says what each one
    counts, in words (the main thread's stack samples on its input, the workers' mean CPU)."""
    from gpuwatch.tui.screens.help import help_text, key_lines

    app = make_app(ListSource(synthetic_frames(1)))
    text = " ".join(help_text(key_lines(app, [app])).split())
    assert "input: the share of the training process's main-thread stack samples" in text
    assert "preparing one in the training loop" in text
    assert "worker CPU: the DataLoader workers' mean CPU (100 % is one core)" in text


def test_help_explains_every_word_the_main_screen_abbreviates():
    """Review 36: SM, tensor, DRAM, PSI, load, St, "data wait", the confidence and "while it holds"
    were explained nowhere. The GPU rows come from the panel's own METRICS (one text for both)."""
    from gpuwatch.tui.gpu_metrics import METRICS
    from gpuwatch.tui.screens.help import help_text, key_lines

    app = make_app(ListSource(synthetic_frames(1)))
    text = help_text(key_lines(app, [app]))
    for m in METRICS:
        assert f"\u00a0\u00a0{m.label}: {m.about}" in text
    flat = " ".join(text.split())
    for word in ("GPM: NVIDIA's GPU performance metrics", "load: the 1-minute load average", "PSI cpu / io / mem",
                 "St: the kernel's state", "data wait: the training process's main thread", "confidence (0-1)",
                 "while it holds", '"Also:" names stages at warning level'):
        assert word in flat, word


async def test_a_reports_path_is_on_a_line_of_its_own_and_kept_for_the_quit_message(tmp_path):
    """Review 46: at 80 columns the toast wrapped '/tmp/r46/gpuwatch-report-20261207-16' / '2544.md',
    and the report's path was said nowhere else. The path now has its own line in a toast up to 90 %
    of the width, and run_app says it again once the terminal is back."""
    from textual.widgets._toast import Toast

    folder = tmp_path / "reports"
    folder.mkdir()
    app = make_app(ListSource(synthetic_frames(3), hold=True), record_dir=str(folder))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause(0.3)
        await app.action_export_report()
        await pilot.pause(0.2)
        assert len(app.reports) == 1 and app.reports[0].startswith(str(folder))
        said = [n for n in app._notifications if n.message.startswith("Report of the last")]
        assert said and said[0].message.endswith("written to\n" + app.reports[0])
        shown = list(app.screen.query(Toast))
        # as wide as its path (plus padding), up to 90 % of the screen: Textual's own stops at half
        assert shown and shown[0].size.width >= 60, [t.size for t in shown]
