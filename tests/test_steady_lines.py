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
