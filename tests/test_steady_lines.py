"""SteadyLines hands back its last lines only while nothing in the widget changed: a new text, a
style change (a class, hover) and a new size each draw again, and what it hands back is what
Textual's own drawing gives."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from gpuwatch.tui.panels.steady import SteadyStatic, SteadyVertical


class _App(App):
    CSS = """
    #box { height: 3; }
    #text { height: 1; color: red; }
    #text.-hot { color: blue; background: green; }
    """

    def compose(self) -> ComposeResult:
        with SteadyVertical(id="box"):
            yield SteadyStatic("first", id="text")


def _cells(strips) -> list[list[tuple[str, object]]]:
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


async def test_steady_lines_follow_changes():
    app = _App()
    async with app.run_test(size=(40, 8)) as pilot:
        await pilot.pause()
        text = app.query_one("#text", SteadyStatic)
        box = app.query_one("#box", SteadyVertical)
        crop = Region(0, 0, *text.size)
        first = text.render_lines(crop)
        assert text.render_lines(crop) is first  # nothing changed: the same lines
        assert _cells(first) == _cells(Widget.render_lines(text, crop))
        assert "first" in first[0].text

        text.update("second")
        assert "second" in text.render_lines(crop)[0].text

        before = _cells(text.render_lines(crop))
        text.add_class("-hot")
        await pilot.pause()
        after = text.render_lines(crop)
        assert _cells(after) != before  # the new colours
        assert _cells(after) == _cells(Widget.render_lines(text, crop))

        lines = box.render_lines(Region(0, 0, *box.size))
        assert box.render_lines(Region(0, 0, *box.size)) is lines
        assert box.render_lines(Region(0, 1, box.size.width, 1)) == lines[1:2]  # another crop: drawn for it

        await pilot.resize_terminal(30, 8)
        await pilot.pause()
        assert box.render_lines(Region(0, 0, *box.size))[0].cell_length == box.size.width == 30


class _Table(App):
    CSS = "KeyedTable { height: 5; }"

    def compose(self) -> ComposeResult:
        from gpuwatch.tui.panels.keyed_table import KeyedTable

        yield KeyedTable([("k", "Key"), ("v", "Value")], id="t")


async def test_the_tables_scrollbar_draws_again_only_when_it_moves():
    """The processes table's scrollbar is a SteadyScrollBar: the same lines while it stays, new
    ones (Textual's own) when the table scrolls or the mouse is over it."""
    from rich.text import Text
    from textual.scrollbar import ScrollBar

    from gpuwatch.tui.panels.keyed_table import KeyedTable
    from gpuwatch.tui.panels.steady import SteadyScrollBar

    app = _Table()
    async with app.run_test(size=(30, 8)) as pilot:
        table = app.query_one("#t", KeyedTable)
        table.set_rows({str(i): (Text(str(i)), Text("x" * i)) for i in range(12)})
        await pilot.pause()
        bar = table.vertical_scrollbar
        assert isinstance(bar, SteadyScrollBar) and bar.display
        crop = Region(0, 0, *bar.size)
        first = bar.render_lines(crop)
        assert bar.render_lines(crop) is first
        assert _cells(first) == _cells(ScrollBar.render_lines(bar, crop))
        table.move_cursor(-1)  # scrolls to the last row
        await pilot.pause()
        moved = bar.render_lines(crop)
        assert _cells(moved) != _cells(first)
        assert _cells(moved) == _cells(ScrollBar.render_lines(bar, crop))
        await pilot.hover(offset=bar.region.offset)
        await pilot.pause()
        hovered = bar.render_lines(crop)
        assert _cells(hovered) == _cells(ScrollBar.render_lines(bar, crop))
