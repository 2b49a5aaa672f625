"""On a short terminal the verdict keeps to the lines the screen can spare and says how to read the
rest; v shows it whole, with what to do.

At 80x24 the H100 recording of Lightning's restarting workers (tests/data/h100/README.md) had a
verdict of 14 lines: the processes table was left its header and no row, the GPU panel nothing."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.source import FirstFrames, ReplaySource
from gpuwatch.tui.panels.verdict_line import KeptWords, lines_to_spare
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.verdict import VerdictScreen
from tests.test_tui_fixtures import make_app

REC = Path(__file__).resolve().parent / "data" / "h100" / "lightning_restarts.jsonl.gz"


def test_the_lines_spared_leave_every_other_panel_a_useful_size():
    assert lines_to_spare(24) == 7 and lines_to_spare(20) == 3 and lines_to_spare(10) == 3
    assert lines_to_spare(40) == 12 and lines_to_spare(60) == 26
    # the ranks line and eight GPUs two a line (five rows, two past one GPU's three) at 80x24
    assert lines_to_spare(24, 1 + 2) == 4 and lines_to_spare(24, 9) == 3


def test_a_long_verdict_is_cut_to_its_lines_with_the_way_to_the_rest():
    text = " ".join(f"word{i} 33 %" for i in range(80))
    cut = KeptWords(text, max_lines=4).at_width(40).plain.split("\n")
    assert len(cut) == 4 and cut[-1].startswith("… the rest: v shows the whole verdict")
    whole = KeptWords(text).at_width(40).plain.split("\n")
    assert len(whole) > 4 and cut[:3] == whole[:3]
    short = KeptWords("Healthy, GPU-bound.", max_lines=4).at_width(40).plain
    assert "the rest" not in short


async def test_at_80x24_the_verdict_leaves_room_and_v_shows_it_whole():
    app = make_app(FirstFrames(ReplaySource(str(REC), speed=0), 12), analysis=Analysis())
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(30):
            await pilot.pause(0.1)
        line = app.screen.pipeline.verdict_line
        assert line.max_lines == 7 and line.size.height <= 7
        assert line.content.at_width(line.size.width).plain.endswith("… the rest: v shows the whole verdict")
        procs = app.screen.processes.table
        assert procs.size.height >= 3  # its header and two rows at least
        verdict = app.view.verdict
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, VerdictScreen)
        text = " ".join(app.screen.query_one("#verdict-text").render().markup.split())
        tail = " ".join(verdict.sentence.split())[-60:]  # the end the main screen left out
        assert tail in text, (tail, text)
        assert "What to do" in text and "persistent_workers=True" in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


def test_v_is_in_the_help_and_the_palette():
    from gpuwatch.tui.app import GpuwatchApp
    from gpuwatch.tui.commands import commands
    from gpuwatch.tui.screens.help import help_text, key_lines
    from tests.test_tui_fixtures import ListSource, synthetic_frames

    app = make_app(ListSource(synthetic_frames(1)))
    assert isinstance(app, GpuwatchApp)
    assert any(keys == "v" and "whole verdict" in what for keys, what in key_lines(app, [app]))
    assert "whole verdict" in help_text(key_lines(app, [app]))
    assert any(title == "Whole verdict" for title, _, _ in commands(app))


def test_a_newline_starts_a_line_and_the_next_paragraph_wraps_from_its_start():
    """The whole verdict's paragraphs and remedies list: breaks counted past a newline cut the next
    paragraph's first line short ("• The GPU is the limit;" alone on its line)."""
    from gpuwatch.tui.panels.verdict_line import break_offsets

    text = "A" * 70 + " end.\n\nWhat to do\n• The GPU is the limit; to go faster, make the GPU's work cheaper"
    lines = KeptWords(text).at_width(78).plain.split("\n")
    assert lines[-1] == "• The GPU is the limit; to go faster, make the GPU's work cheaper"
    assert break_offsets(text, 78) == []
