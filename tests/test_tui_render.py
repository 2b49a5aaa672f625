"""The TUI draws every screen at 80x24 and 200x60, and says why when data is missing.

Frames are SYNTHETIC (tests/test_tui_fixtures.py): these tests check layout and behaviour only.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwatch.model import Unsupported
from gpuwatch.model.verdict import PIPELINE, STAGE_TITLES
from gpuwatch.tui.app import GpuwatchApp
from gpuwatch.tui.panels.gpu import GpuPanel
from gpuwatch.tui.panels.keyed_table import KeyedTable
from gpuwatch.tui.panels.metric_rows import MetricRows
from gpuwatch.tui.panels.processes import CPU_STEP
from tests.test_tui_fixtures import ListSource, QueueSource, make_app, screen_text, settle, synthetic_frame, \
    synthetic_frames

SIZES = [(80, 24), (200, 60)]
SCREEN_KEYS = [(), ("s",), ("question_mark",)] + [(str(i + 1), "enter") for i in range(len(PIPELINE))]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("keys", SCREEN_KEYS, ids=lambda k: "+".join(k) or "main")
async def test_every_screen_draws_at_both_sizes(size, keys):
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press(*keys)
        await pilot.pause()
        text = screen_text(app)
        lines = text.splitlines()
        assert len(lines) == size[1]
        assert all(len(line) <= size[0] for line in lines)
        if keys and keys[-1] == "enter":
            stage = PIPELINE[int(keys[0]) - 1]
            assert STAGE_TITLES[stage] in lines[1]  # the drill-down's title line
        elif not keys:
            assert "PID 4242" in lines[0]
            assert "CPU prep" in text and "BOTTLENECK" in text
            assert "Image.convert" in text  # the workers' hottest frame in the processes table


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_unsupported_panels_show_the_reason_and_the_fix(size):
    app = make_app(ListSource(synthetic_frames(5, gpus=False, stacks=False)))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "GPU: unavailable — NVML library not found" in text
        assert "Latest frame N/A: py-spy cannot attach" in text
        assert not app.query(GpuPanel)
        await pilot.press("s")
        await pilot.pause()
        assert "Stacks N/A: py-spy cannot attach: ptrace not permitted" in screen_text(app)


async def test_unreadable_processes_replace_the_table_with_the_reason():
    app = make_app(ListSource(synthetic_frames(3, procs=False)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        notice = app.query_one(".procs-notice")
        assert str(notice.content).startswith("Processes: unavailable — cannot read /proc/4242: permission denied")
        assert notice.display and "Processes: unavailable" in screen_text(app)
        assert not app.query_one("#procs", KeyedTable).display


async def test_a_metric_without_gpm_reads_na_with_its_reason():
    reason = "GPM needs a Hopper or newer GPU (this one is an A100)"
    frames = []
    for i in range(3):
        f = synthetic_frame(i)
        g = dataclasses.replace(f.gpus[0], gpm=Unsupported(reason))
        frames.append(dataclasses.replace(f, gpus=(g,)))
    app = make_app(ListSource(frames))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        rows = app.query_one(MetricRows)
        assert rows.shown("sm").value_text == "N/A" and rows.shown("sm").na_reason == reason
        assert reason in rows.row_tooltip("sm")
        note = app.query_one(".na-note")
        assert str(note.content) == f"N/A SM, tensor, DRAM: {reason}"
        assert "N/A SM, tensor, DRAM: GPM needs a Hopper" in screen_text(app)
        assert rows.shown("util").na_reason is None


async def test_a_lost_gpu_is_named_in_its_title():
    f = synthetic_frame(0)
    g = dataclasses.replace(f.gpus[0], lost="GPU has fallen off the bus")
    app = make_app(ListSource([dataclasses.replace(f, gpus=(g,))]))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        title = app.query_one(".gpu-title")
        assert str(title.content).endswith("LOST: GPU has fallen off the bus")
        assert title.has_class("-bottleneck")


async def test_process_rows_are_updated_by_pid_and_the_cursor_stays():
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        source.put(synthetic_frame(0))
        await pilot.pause(0.05)
        table = app.query_one("#procs", KeyedTable)
        table.focus()
        table.move_cursor(row=2)
        assert table.cursor_key == "4251"
        f = synthetic_frame(1)
        main, w1, w2 = f.procs.processes
        new = dataclasses.replace(w1, pid=4260)
        busier = dataclasses.replace(w2, cpu_pct=12.0)
        source.put(dataclasses.replace(f, procs=dataclasses.replace(f.procs, processes=(main, new, busier))))
        await pilot.pause(0.05)
        assert table.row_keys == ["4242", "4251", "4260"]  # 4250 gone, 4260 added at the end
        assert table.cursor_key == "4251"
        assert str(table.get_cell("4251", "cpu")) == "12"
        source.put(None)


async def test_end_of_replay_and_target_exit_show_in_the_header():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert "■ replay ended" in screen_text(app)
    last = synthetic_frame(3)
    gone = dataclasses.replace(last, target=dataclasses.replace(last.target, alive=False, exit_reason="exit code 1"))
    app = make_app(ListSource([*synthetic_frames(3), gone]))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert "job ended: exit code 1" in screen_text(app)


async def test_a_broken_source_is_reported_and_the_app_stays_up():
    class Broken(ListSource):
        async def frames(self):
            yield synthetic_frame(0)
            raise OSError("recording vanished")

    app = make_app(Broken([]))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.is_running
        assert app.ended == "source failed"
        assert any("recording vanished" in n.message for n in app._notifications)
        assert app.view is not None and app.view.frame.seq == 1


def test_frame_messages_coalesce():
    a, b = GpuwatchApp.FrameReady(), GpuwatchApp.FrameReady()
    assert a.can_replace(b)


async def test_no_color_is_respected(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(ListSource(synthetic_frames(5)))
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "■ BOTTLENECK" in text and "▲ warning" in text  # levels read without colour


async def test_on_tick_gets_every_frame_even_when_drawing_lags():
    seen = []
    app = make_app(ListSource(synthetic_frames(50)), on_tick=lambda tick: seen.append(tick.frame.seq))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert seen == list(range(1, 51))
        assert app.view.frame.seq == 50


async def test_brackets_in_data_print_as_text_not_markup():
    f = synthetic_frame(0)
    reason = "cannot read /proc/4242/io: [Errno 13] Permission denied [bold]"
    app = make_app(ListSource([dataclasses.replace(f, procs=Unsupported(reason))]))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        assert f"Processes: unavailable — {reason}" in screen_text(app)


async def test_a_live_watch_that_ran_its_duration_closes_the_app():
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(80, 24)) as pilot:
        source.put(synthetic_frame(0))
        source.put(None)  # Watch.frames returns after --duration
        await pilot.pause(0.1)
    assert app.return_code == 0 and not app.is_running


async def test_brackets_in_stack_frames_print_in_the_tables():
    f = synthetic_frame(0)
    main = dataclasses.replace(f.stacks.threads[0], detail="Batch[int].collate", frames=("f[0] (x.py:1)",))
    stacks = dataclasses.replace(f.stacks, threads=(main, *f.stacks.threads[1:]))
    app = make_app(ListSource([dataclasses.replace(f, stacks=stacks)]))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        assert "waiting for a batch: Batch[int].collate" in screen_text(app)
        await pilot.press("s")
        await pilot.pause()
        assert "f[0] (x.py:1)" in screen_text(app)


async def test_a_failing_recording_is_reported_and_watching_goes_on(tmp_path, monkeypatch):
    from gpuwatch.recording import Recorder, RecordingError

    def full(self, frame, verdict, ranks=None):
        raise RecordingError(f"recording stopped: No space left on device ({self.path})")

    monkeypatch.setattr(Recorder, "write", full)
    source = QueueSource()
    app = make_app(source, record_dir=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await pilot.pause(0.1)
        assert app.recording_path is not None
        source.put(synthetic_frame(0))
        source.put(synthetic_frame(1))
        await pilot.pause(0.1)
        assert app.recording_path is None
        assert any("No space left on device" in n.message and "watching goes on" in n.message
                   for n in app._notifications)
        assert app.view is not None and app.view.frame.seq == 2
        source.put(None)


async def test_two_gpus_get_a_panel_each_and_na_reasons_show_in_the_drill_down():
    frames = []
    for i in range(3):
        f = synthetic_frame(i)
        g1 = dataclasses.replace(f.gpus[0], index=1, uuid="GPU-synthetic-1", throttle=Unsupported("no counters"))
        g0 = dataclasses.replace(f.gpus[0], throttle=Unsupported("no counters"))
        frames.append(dataclasses.replace(f, gpus=(g0, g1)))
    app = make_app(ListSource(frames))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert [p.index for p in app.query(GpuPanel)] == [0, 1]
        await pilot.press("6", "enter")
        await pilot.pause()
        notes = str(app.screen.query_one("#history-na").content).splitlines()
        assert "N/A GPU throttled: no counters" in notes
        assert "N/A cgroup throttled: no cgroup CPU quota" in notes


async def test_cpu_cells_move_in_whole_points_and_workers_keep_their_last_hottest_frame():
    # Workers are stack-sampled in turn: one missing from a sample shows its last frame, dimmed,
    # instead of a blank; CPU % noise under CPU_STEP does not redraw a row.
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        f = synthetic_frame(0)
        source.put(f)
        await pilot.pause(0.05)
        table = app.query_one("#procs", KeyedTable)
        main, w1, w2 = f.procs.processes
        hot_before = table.get_cell(str(w1.pid), "hot")
        assert hot_before.plain and not hot_before.spans  # sampled in this frame
        g = synthetic_frame(1)
        others = tuple(t for t in g.stacks.threads if t.pid != w1.pid)
        noisy = dataclasses.replace(w2, cpu_pct=w2.cpu_pct + CPU_STEP * 0.6)
        source.put(dataclasses.replace(
            g, stacks=dataclasses.replace(g.stacks, threads=others),
            procs=dataclasses.replace(g.procs, processes=(main, w1, noisy))))
        await pilot.pause(0.05)
        hot_after = table.get_cell(str(w1.pid), "hot")
        assert hot_after.plain == hot_before.plain and hot_after.spans  # the same frame, dimmed
        assert any(s.style.dim and s.text.strip() and hot_after.plain.startswith(s.text.strip().rstrip("…"))
                   for s in table.render_line(1 + 1))  # w1's line, the dim span kept (cut: ends in …)
        assert str(table.get_cell(str(w2.pid), "cpu")) == f"{w2.cpu_pct:.0f}"
        moved = dataclasses.replace(w2, cpu_pct=w2.cpu_pct + CPU_STEP * 1.5)
        source.put(dataclasses.replace(g, procs=dataclasses.replace(g.procs, processes=(main, w1, moved))))
        await pilot.pause(0.05)
        assert str(table.get_cell(str(w2.pid), "cpu")) == f"{moved.cpu_pct:.0f}"
        source.put(None)


async def test_process_table_keys_move_the_cursor_and_an_update_repaints_only_the_changed_row():
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        f = synthetic_frame(0)
        main, worker, _ = f.procs.processes
        many = (main, *(dataclasses.replace(worker, pid=5000 + i) for i in range(40)))
        f = dataclasses.replace(f, procs=dataclasses.replace(f.procs, processes=many))
        source.put(f)
        await pilot.pause(0.05)
        table = app.query_one("#procs", KeyedTable)
        keys = [str(p.pid) for p in many]
        assert table.row_keys == keys and table.cursor_key == keys[0]
        table.focus()
        await pilot.pause()  # let the layout settle: the table's height decides what scrolls
        shown = table.size.height - 1  # rows on show under the header
        assert 1 < shown < len(keys)
        await pilot.press("down", "down", "up")
        assert table.cursor_key == keys[1]
        await pilot.press("end")
        assert table.cursor_key == keys[-1]
        await pilot.pause()
        shown = table.size.height - 1
        assert table.scroll_offset.y == len(keys) - shown  # scrolled to keep the cursor in view
        await pilot.press("home", "pagedown")
        assert table.cursor_key == keys[shown] and table.scroll_offset.y == 1
        await pilot.press("home")
        assert table.cursor_key == keys[0] and table.scroll_offset.y == 0
        await pilot.pause()

        drawn: list[int] = []
        render_line = table.render_line
        table.render_line = lambda y: drawn.append(y) or render_line(y)
        busier = dataclasses.replace(many[3], cpu_pct=many[3].cpu_pct + 5 * CPU_STEP)
        source.put(dataclasses.replace(f, seq=2, procs=dataclasses.replace(
            f.procs, processes=(*many[:3], busier, *many[4:]))))
        await pilot.pause(0.05)
        assert drawn == [1 + 3]  # the header is line 0
        assert str(table.get_cell(keys[3], "cpu")) == f"{busier.cpu_pct:.0f}"
        assert f"{busier.cpu_pct:.0f}" in screen_text(app).splitlines()[table.region.y + 4]
        source.put(None)


LONG_FRAME = "DistributedDataParallel._distributed_broadcast_coalesced (torch/nn/parallel/distributed.py:2013)"


async def test_a_long_stack_frame_ends_in_an_ellipsis_and_shows_whole_when_there_is_room():
    def longer(f):
        threads = tuple(dataclasses.replace(t, frames=(LONG_FRAME, *t.frames)) for t in f.stacks.threads)
        return dataclasses.replace(f, stacks=dataclasses.replace(f.stacks, threads=threads))

    app = make_app(ListSource([longer(f) for f in synthetic_frames(3)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("s")
        await pilot.pause()
        rows = [line for line in screen_text(app).splitlines() if "_distributed_broadcast" in line]
        assert rows and all("(…" in line for line in rows), rows  # cut where the screen ends, and marked
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert LONG_FRAME in screen_text(app)


async def test_a_drill_down_says_whose_samples_its_frame_table_counts():
    # field_checkpoint's Disk drill-down: "main thread (23 thread samples ...)" above a table whose
    # rows went in steps of 1/28 and held "_PollLikeSelector.select 17.9" (the idle workers' 5
    # samples): the table counts every role listed above it, and said nothing of it.
    import re

    app = make_app(ListSource(synthetic_frames(30)))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "enter")  # CPU prep: the workers and the main thread
        await pilot.pause()
        text = screen_text(app)
        per_role = [int(n) for n in re.findall(r"\((\d+) thread samples? from the last", text)]
        assert len(per_role) == 2
        assert f"Hottest frames of these {sum(per_role)} thread samples together:" in text


async def test_the_stacks_screen_counts_the_samples_its_sections_show():
    """run25_tokenize's stacks screen: "9 stack collections (107 thread samples)" above sections of
    19 + 4 + 19 + 3 samples: the 62 others were idle helper threads, which no section counts."""
    import re

    from gpuwatch.model.stacks import ThreadStack
    from tests import test_tui_fixtures as fixtures

    def with_helper(f):  # noqa: ANN001, ANN202 - an idle queue feeder in the main process
        helper = ThreadStack(fixtures.MAIN_PID, fixtures.MAIN_PID + 9, "other", None, "QueueFeederThread", "other", "Condition.wait",
                             False, False, ("Condition.wait (threading.py:355)",))
        return dataclasses.replace(f, stacks=dataclasses.replace(f.stacks, threads=(*f.stacks.threads, helper)))

    app = make_app(ListSource([with_helper(f) for f in synthetic_frames(5)]))
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot, app)
        await pilot.press("s")
        await pilot.pause()
        text = screen_text(app)
        (total,) = re.findall(r"stack collections \((\d+) thread samples", text)
        sections = re.findall(r"^ ?(\d+) thread samples?:", text, re.M)
        assert len(sections) >= 3 and int(total) == sum(map(int, sections)), (total, sections)


async def test_the_header_names_the_script_not_the_interpreters_folder_and_keeps_it_after_exit():
    """Review 46: at 80 columns the header read "PID 13748 /work/main/.venv/bin/pytho…" and, once the
    job had exited (no command line left to read), "PID 1733 ?"."""
    from gpuwatch.model.frame import TargetInfo
    from gpuwatch.tui.format import short_command

    assert short_command("/work/main/.venv/bin/python job_img.py --dir /data/x") == "python job_img.py --dir /data/x"
    assert short_command("torchrun --nproc_per_node 2 train.py") == "torchrun --nproc_per_node 2 train.py"
    frames = synthetic_frames(6)
    long = TargetInfo(4242, "/very/long/path/to/a/virtual/env/bin/python3.11 train_resnet.py --epochs 90", True)
    frames = [dataclasses.replace(f, target=long) for f in frames[:3]] + [
        dataclasses.replace(f, target=TargetInfo(4242, "", False)) for f in frames[3:]]
    source = QueueSource()
    app = make_app(source)
    async with app.run_test(size=(80, 24)) as pilot:
        for f in frames:  # one at a time, as a replay or a live watch shows them
            source.put(f)
            await pilot.pause(0.05)
        first = screen_text(app).splitlines()[0]
        assert "PID 4242 python3.11 train_resnet.py" in first, first
        assert " ? " not in first
        source.put(None)


def test_a_frame_too_long_for_its_column_keeps_its_line_number():
    """Review 46: at 80x24 the stacks view cut "_apply_to_collection_slow (lightning_utilities/core/
    apply_…" twice over, so two lines of one function read alike. The path's start gives way."""
    from gpuwatch.tui.format import fit_frame

    frame = "_apply_to_collection_slow (lightning_utilities/core/apply_func.py:123)"
    assert fit_frame(frame, 80) == frame and fit_frame(frame, None) == frame
    assert fit_frame(frame, 50) == "_apply_to_collection_slow (…ore/apply_func.py:123)"
    assert all(len(fit_frame(frame, w)) == w and fit_frame(frame, w).endswith(":123)") for w in (40, 50, 60))
    assert fit_frame(frame, 30) == frame  # no room for any path: the cell's own "…" cuts the end
    assert fit_frame("Image.convert", 5) == "Image.convert"  # no path to cut


async def test_the_stacks_view_does_not_call_workers_it_did_not_sample_absent():
    """Review 46: field_lightning (2 workers re-created each pass) read "no DataLoader worker seen
    (num_workers=0, or no DataLoader)" in the stacks view, while the process table listed them."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.source import FirstFrames, ReplaySource
    from gpuwatch.tui.screens.stacks import UNSAMPLED_WORKERS

    source = FirstFrames(ReplaySource("tests/data/h200/field_lightning.jsonl.gz", speed=0.0), 30)
    app = make_app(source, analysis=Analysis())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("s")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "num_workers=0, or no DataLoader" not in text
        assert " ".join(UNSAMPLED_WORKERS.split())[:60] in text
        # a frame too long for its column keeps its line number (fit_frame)
        assert "_apply_to_collection_slow (…" in text and "apply_func.py:154)" in text
