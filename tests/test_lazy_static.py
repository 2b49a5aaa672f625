"""A LazyStatic with CHANGED_LINES repaints only the lines an update changed, and draws what a whole
repaint draws."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region

from gpuwatch.tui.panels.plain import Plain


class _Lines(Plain):
    CHANGED_LINES = True


LINES = ["main thread        backward pass ███ 30%  optimizer step ██▍ 24%",
         "DataLoader workers idle ██████████ 100%",
         "other threads      other work ██████████ 100%"]


class _Panels(App):
    CSS = "Plain { border: round $primary; padding: 0 1; width: 50; height: auto; }"

    def compose(self) -> ComposeResult:
        yield _Lines("\n".join(LINES), id="lazy")  # wraps: the first line takes two at 46 cells
        yield Plain("", id="whole")


async def test_a_changed_line_alone_is_repainted_and_the_panel_draws_as_a_whole_repaint():
    app = _Panels()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        lazy, whole = app.query_one("#lazy", _Lines), app.query_one("#whole", Plain)
        lazy.render_lines(Region(0, 0, *lazy.outer_size))  # on screen
        for second in ("DataLoader workers idle ████████▍ 84%", "DataLoader workers decoding █ 100%"):
            text = "\n".join([LINES[0], second, LINES[2]])
            lazy.update(text)
            # the content's third line: under the border, after the first line's two
            assert lazy._repaint_regions == {Region(2, 3, 46, 1)}
            whole.update(text)
            await pilot.pause()
            region = Region(0, 0, *lazy.outer_size)
            assert lazy.outer_size == whole.outer_size
            assert lazy.render_lines(region) == whole.render_lines(region)
        lazy.update("\n".join(LINES[:2]))  # a line less: the size changes, laid out and repainted whole
        await pilot.pause()
        assert lazy.outer_size.height == 5
