"""tui/panels/direct_repaint.py: a repaint reaches the screen without a turn of the widget's own loop;
a refresh that changes the size still lays out."""

from __future__ import annotations

from textual import messages
from textual.app import App, ComposeResult

from gpuwatch.tui.panels.plain import Plain


class _App(App):
    def compose(self) -> ComposeResult:
        yield Plain("one", id="w")


def _text(app: App) -> list[str]:
    return ["".join(s.text for s in strip).rstrip() for strip in app.screen._compositor.render_strips()][:3]


async def test_a_repaint_goes_to_the_screen_and_a_new_size_lays_out():
    app = _App()
    async with app.run_test(size=(20, 5)) as pilot:
        await pilot.pause()
        w = app.query_one("#w", Plain)
        seen: list[type] = []
        updates: list[object] = []
        w.message_signal.subscribe(w, lambda m: seen.append(type(m)), immediate=True)
        app.screen.message_signal.subscribe(
            app.screen, lambda m: updates.append(m.widget) if isinstance(m, messages.Update) else None, immediate=True)
        w.update("two")  # same size: a repaint
        assert not w._message_queue.qsize()  # nothing for the widget's own loop
        await pilot.pause()
        assert messages.Prompt not in seen and w in updates
        assert _text(app)[0] == "two"
        w.update("three\nfour")  # taller: a layout, Textual's way
        await pilot.pause()
        assert _text(app)[:2] == ["three", "four"]
        assert w.size.height == 2
