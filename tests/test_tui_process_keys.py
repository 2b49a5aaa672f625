"""Pilot tests of the process cursor and screen, htop's sort / filter / tree, the outside GPU
processes, and the rule that no key does nothing silently. SYNTHETIC frames (layout and
behaviour only; tests/test_tui_fixtures.py)."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from gpuwatch.model import GpuProcess
from gpuwatch.model.values import Unsupported
from gpuwatch.tui.panels.processes import OUTSIDE, ProcessPanel
from gpuwatch.tui.screens.help import HelpScreen, own_bindings, screen_nodes
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.process import ProcessScreen
from gpuwatch.tui.screens.stage import StageScreen
from tests.test_tui_fixtures import MAIN_PID, WORKER_PIDS, ListSource, QueueSource, make_app, screen_text, settle, \
    synthetic_frame, synthetic_frames

SIZE = (120, 40)


def frames_with_a_neighbour(n: int = 3):
    """The synthetic job plus a GPU process of another user (SYNTHETIC, as the rest)."""
    out = []
    for f in synthetic_frames(n):
        gpu = f.gpus[0]
        other = GpuProcess(pid=9100, local_pid=9100, name="other_job", used_memory=12 * 1024**3, sm_util=40.0,
                           is_target=False, user="alice")
        out.append(dataclasses.replace(f, gpus=(dataclasses.replace(gpu, processes=(*gpu.processes, other)),)))
    return out


async def test_down_then_enter_opens_the_process_and_escape_returns():
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == WORKER_PIDS[0]
        text = screen_text(app)
        assert "DataLoader worker of PID 4242" in text  # the role and why
        assert "python train.py" in text  # the command line
        assert "R 100 % running" in text  # state over time
        assert "computing 100%" in text  # its stacks by activity, in words
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("left", "enter")  # the stage cursor moved last: Enter opens the stage
        await pilot.pause()
        assert isinstance(app.screen, StageScreen)


async def test_the_process_screen_says_its_stack_shares_in_words():
    """The shares above a process's hottest stacks read as the stacks screen and the report say
    them ("waiting for a batch"), never the internal labels ("data_wait", "pin_idle")."""
    app = make_app(ListSource(synthetic_frames(5)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "up", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == MAIN_PID
        shares = str(app.screen.query_one("#proc-shares").render())
        assert "waiting for a batch 50%" in shares and "idle 50%" in shares
        assert "data_wait" not in shares and "pin_idle" not in shares


async def test_a_process_no_longer_listed_gives_its_state_when_last_seen_not_now():
    """A DataLoader worker replaced at an epoch's end (field_imagefolder_epochs): its screen said
    "no longer listed (exited?); its last reading" above "State now: R"."""
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        for i in range(2):
            source.put(synthetic_frame(i))
        await pilot.pause(0.2)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == WORKER_PIDS[0]
        states = app.screen.query_one("#proc-states")
        assert str(states.render()).startswith("State now: R")
        f = synthetic_frame(2)
        rest = tuple(p for p in f.procs.processes if p.pid != WORKER_PIDS[0])
        source.put(dataclasses.replace(f, procs=dataclasses.replace(f.procs, processes=rest)))
        await pilot.pause(0.2)
        assert "no longer listed" in str(app.screen.query_one("#proc-title").render())
        assert str(states.render()).startswith("State when last seen: R")
        source.put(None)


async def test_the_footer_says_what_enter_opens():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "Details" in screen_text(app).splitlines()[-1]
        await pilot.press("down")
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "⏎ Process" in footer and "Details" not in footer


async def test_f6_and_angle_brackets_sort_and_the_header_marks_the_column():
    f = synthetic_frame(0)
    main, w1, w2 = f.procs.processes
    busy = dataclasses.replace(w2, cpu_pct=150.0, rss=100)
    app = make_app(ListSource([dataclasses.replace(f, procs=dataclasses.replace(f.procs, processes=(main, w1, busy)))]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        panel = app.query_one(ProcessPanel)
        assert panel.table.row_keys == [str(MAIN_PID), str(w1.pid), str(w2.pid)]  # the job's order
        await pilot.press("f6")
        assert panel.sort == "cpu"
        assert panel.table.row_keys[0] == str(w2.pid)
        assert "CPU %▼" in screen_text(app)
        await pilot.press("greater_than_sign")
        assert panel.sort == "rss" and panel.table.row_keys[0] == str(MAIN_PID)
        await pilot.press("less_than_sign", "less_than_sign")
        assert panel.sort is None
        assert panel.table.row_keys == [str(MAIN_PID), str(w1.pid), str(w2.pid)]


async def test_slash_filters_and_escape_clears():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        panel = app.query_one(ProcessPanel)
        await pilot.press("slash", *"4251")
        await pilot.pause()
        assert panel.table.row_keys == ["4251"]
        await pilot.press("enter")  # keeps the filter, back to the table
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and panel.table.has_focus
        assert "filter “4251”" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert panel.query == "" and len(panel.table.row_keys) == 3


async def test_q_typed_in_the_filter_is_text_not_quit():
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", "q", "h")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, MainScreen)
        assert app.query_one(ProcessPanel).query == "qh"


async def test_t_shows_the_tree():
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("t")
        await pilot.pause()
        table = app.query_one(ProcessPanel).table
        assert table.get_cell(str(WORKER_PIDS[0]), "role").plain == "├─worker"
        assert table.get_cell(str(WORKER_PIDS[1]), "role").plain == "└─worker"
        await pilot.press("t")
        assert table.get_cell(str(WORKER_PIDS[1]), "role").plain == "worker"


async def test_the_rows_left_after_the_job_exited_say_they_are_the_last_seen():
    """The last frame lists the processes as they were; beside a verdict that says the job is
    gone, a row 'main 12 % R' read as a live one."""
    frames = synthetic_frames(3)
    gone = dataclasses.replace(frames[-1].target, alive=False, exit_reason=f"process {MAIN_PID} exited")
    app = make_app(ListSource([*frames[:-1], dataclasses.replace(frames[-1], target=gone)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "last seen before the job exited" in screen_text(app)
        await pilot.press("f6")  # the sort joins the line, the mark stays
        await pilot.pause()
        assert "last seen before the job exited · sorted by CPU" in screen_text(app)


async def test_no_last_seen_mark_when_the_last_read_found_no_process():
    """The last read found the job gone: no rows, only the panel's reason; nothing to mark."""
    frames = synthetic_frames(3)
    gone = dataclasses.replace(frames[-1].target, alive=False, exit_reason=f"process {MAIN_PID} exited")
    last = dataclasses.replace(frames[-1], target=gone, procs=Unsupported(f"the job exited (process {MAIN_PID})"))
    app = make_app(ListSource([*frames[:-1], last]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "Processes: unavailable" in text and "last seen" not in text


async def test_enter_with_no_row_says_why_the_list_is_empty():
    """It said 'No process listed yet.' whatever the cause: a filter that matches nothing, or a
    job that has exited (no process will ever come)."""
    frames = synthetic_frames(3)
    gone = dataclasses.replace(frames[-1].target, alive=False, exit_reason=f"process {MAIN_PID} exited")
    last = dataclasses.replace(frames[-1], target=gone, procs=Unsupported(f"the job exited (process {MAIN_PID})"))
    for source, keys, says in (
        (ListSource(synthetic_frames(3)), ("slash", *"zzz", "enter", "down", "enter"),
         "No process matches the filter “zzz” (Esc clears it)."),
        (ListSource([*frames[:-1], last]), ("down", "enter"), "No process listed: the job exited."),
    ):
        app = make_app(source)
        app.said = []
        notify = app.notify
        app.notify = lambda message, said=app.said, notify=notify, **kw: said.append(message) or notify(message, **kw)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press(*keys)
            await pilot.pause()
            assert isinstance(app.screen, MainScreen) and app.said[-1] == says, app.said


async def test_a_filter_that_matches_nothing_says_so_under_the_empty_table():
    """An empty table under "filter “zzz”" read as a job with no processes."""
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"zzz", "enter")
        await pilot.pause()
        assert "no process matches filter “zzz” (Esc clears)" in screen_text(app)
        await pilot.press("slash", "backspace", "backspace", "backspace", *"work", "enter")
        await pilot.pause()
        text = screen_text(app)
        assert "filter “work” (Esc clears)" in text and "no process matches" not in text


async def test_a_live_job_has_no_last_seen_mark():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "last seen" not in screen_text(app)


async def test_gpu_processes_of_other_users_are_listed_as_outside_and_open():
    app = make_app(ListSource(frames_with_a_neighbour()))
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        table = app.query_one(ProcessPanel).table
        assert table.row_keys[-1] == "gpu-9100"
        assert table.get_cell("gpu-9100", "role").plain == OUTSIDE
        assert "other_job (user alice)" in table.get_cell("gpu-9100", "hot").plain
        await pilot.press("end", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.outside
        assert "not in the watched job's process tree (user alice)" in screen_text(app)


async def test_f10_quits_and_f1_and_h_open_help():
    for key in ("f1", "h", "question_mark"):
        app = make_app(ListSource(synthetic_frames(2)))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen), key
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f10")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_the_footer_keeps_help_and_quit_with_ranks_at_any_width(size):
    app = make_app(ListSource(synthetic_frames(2)))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        for screen_keys in ((), ("down", "enter"), ("s",), ("1", "enter")):
            await pilot.press(*screen_keys)
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            assert footer.lstrip().startswith("? Help") and "q Quit" in footer, footer
            while len(app.screen_stack) > 1:
                await pilot.press("escape")
                await pilot.pause()


def _state(app) -> tuple:
    """What a key can change that a user sees."""
    screen = app.screen
    main = screen if isinstance(screen, MainScreen) else None
    panel = main.processes if main is not None else None
    return (
        type(screen).__name__, len(app.screen_stack), app.paused, app.recording_path, app.selected_rank,
        getattr(screen, "stage", None), str(screen.focused),
        main.pipeline.selected if main else None,
        (panel.sort, panel.tree, panel.query, panel.table.cursor_key) if panel else None,
        len(app.said),
    )


async def test_no_key_of_the_main_screen_does_nothing_silently(tmp_path):
    """Every key gpuwatch binds on the main screen (and the app), pressed once from the start:
    the screen, a cursor, a mode or a notification changes."""
    app = make_app(ListSource(synthetic_frames(3), hold=True), record_dir=str(tmp_path))
    app.said = []
    notify = app.notify
    app.notify = lambda message, **kw: app.said.append(message) or notify(message, **kw)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.view is not None and len(app.analysis.frames) == 3:
                break
        main = app.screen
        keys = sorted({k for node in screen_nodes(main) for b in own_bindings(node) for k in b.key.split(",")
                       if b.action not in ("quit", "app.quit")})
        assert {"f6", "slash", "t", "up", "down", "enter", "escape", "h", "f1"} <= set(keys)
        for key in keys:
            before = _state(app)
            await pilot.press(key)
            await pilot.pause()
            assert _state(app) != before, f"{key} did nothing visible"
            while len(app.screen_stack) > 1:  # back to the main screen for the next key
                app.pop_screen()
                await pilot.pause()
            if app.recording_path:
                await pilot.press("r")
            app.query_one(ProcessPanel).close_filter(clear=True)
            await pilot.pause()


async def test_keys_that_come_together_act_in_order():
    """A terminal delivers fast keys in one read (tmux send-keys, a paste): ↓ then Enter opens the
    process, / then text filters (focus moves at once, not a turn later)."""
    from textual import events

    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for key, char in (("down", None), ("enter", "\r")):
            app.post_message(events.Key(key, char))
        await pilot.pause(0.2)
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == WORKER_PIDS[0]
        await pilot.press("escape")
        await pilot.pause()
        for key, char in (("slash", "/"), ("4", "4"), ("2", "2"), ("5", "5"), ("1", "1")):
            app.post_message(events.Key(key, char))
        await pilot.pause(0.2)
        panel = app.query_one(ProcessPanel)
        assert panel.query == "4251" and panel.table.row_keys == ["4251"]
        assert not app.screen.pipeline.picked  # the digits were text, not stage keys


async def test_the_run_queue_wait_reads_as_threads_not_a_share_of_time():
    """run_delay_frac sums the threads' waits: two threads queued most of the tick read 1.34, which
    the detail showed as 'waits for a CPU 134 % of the time'."""
    def queued(f):
        main = dataclasses.replace(f.procs.processes[0], run_delay_frac=1.34)
        return dataclasses.replace(f, procs=dataclasses.replace(f.procs, processes=(main, *f.procs.processes[1:])))

    app = make_app(ListSource([queued(f) for f in synthetic_frames(3)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "up", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == 4242
        text = screen_text(app)
        assert "on average 1.34 threads wait for a CPU" in text and "134 %" not in text


@pytest.mark.parametrize("width", [80, 100])
async def test_no_footer_key_is_cut_at_the_right_end(tmp_path, width):
    """A key that does not fit before the palette key goes whole (it is in the help): a replay's
    footer at 80 columns ended '↑↓ Process  ←▏' and a live one at 100 'p▏'."""
    from gpuwatch.replay_control import ReplayControl
    from gpuwatch.source import ReplaySource
    from gpuwatch.tui.panels.footer import KeysFooter
    from tests.test_tui_fixtures import write_recording

    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(30))
    app = make_app(ReplaySource(str(path), control=ReplayControl(1.0)))
    async with app.run_test(size=(width, 24)) as pilot:
        for keys in ((), ("down", "enter")):
            await pilot.press(*keys)
            for _ in range(60):
                await pilot.pause(0.05)
                footer = screen_text(app).splitlines()[-1]
                if "Help" in footer and "palette" in footer:
                    break
            await pilot.pause(0.2)
            footer = screen_text(app).splitlines()[-1]
            words = {"Help", "Quit", "Details", "Pause", "Step", "Seek", "Speed", "Process", "Stage", "Back", "Record",
                     "Stacks", "Sort", "Filter", "Tree"}
            assert footer.split("▏")[0].split()[-1] in words, footer
            bar = app.screen.query_one(KeysFooter)
            palette = next(k for k in bar.children if k.has_class("-command-palette"))
            assert all(k.region.right <= palette.region.x for k in bar.children if k.display and k is not palette)


@contextlib.asynccontextmanager
async def _first_worker_screen(frames):  # noqa: ANN001, ANN202
    """The app on ``frames``, the first worker's process screen open."""
    app = make_app(ListSource(frames))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == WORKER_PIDS[0]
        yield app


async def test_a_process_s_idle_helper_threads_are_not_said_as_other_work():
    """run25_imagefolder_persistent, a worker's process screen: "3 thread samples: other work 67%,
    idle 33%" for a sleeping worker, the two "other work" being its queue feeder in Condition.wait
    and its resource sharer in socket.accept. The stacks screen and the main panel leave idle helper
    threads out; so does the process screen now."""
    from gpuwatch.model.stacks import ThreadStack

    def with_helpers(f):  # noqa: ANN001, ANN202 - two idle helper threads in the first worker
        pid = WORKER_PIDS[0]
        helpers = (ThreadStack(pid, pid + 100, "other", None, "QueueFeederThread", "other", "Condition.wait", False,
                               False, ("Condition.wait (threading.py:355)", "Queue._feed (multiprocessing/queues.py:251)")),
                   ThreadStack(pid, pid + 101, "other", None, "Thread-1 (_serve)", "other", "socket.accept", False,
                               False, ("socket.accept (socket.py:295)",)))
        return dataclasses.replace(f, stacks=dataclasses.replace(f.stacks, threads=(*f.stacks.threads, *helpers)))

    async with _first_worker_screen([with_helpers(f) for f in synthetic_frames(5)]) as app:
        shares = str(app.screen.query_one("#proc-shares").render())
        assert "other work" not in shares and "computing 100%" in shares
        assert "socket.accept" not in screen_text(app)


async def test_one_thread_sample_is_said_in_the_singular():
    """run25_imagefolder_epochs, an exited worker's screen after a seek: "1 thread samples: computing
    100%"; its state line would say "over 1 ticks" the same way."""
    async with _first_worker_screen(synthetic_frames(1)) as app:
        assert str(app.screen.query_one("#proc-shares").render()) == "1 thread sample: computing 100%"
        assert "over 1 tick: R 100 % running" in screen_text(app)
