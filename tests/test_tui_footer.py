"""The footer's fitting of keys to a narrow terminal (SYNTHETIC frames in a replay)."""

from __future__ import annotations

from textual.command import CommandList, CommandPalette
from textual.dom import NoScreen
from textual.widgets._footer import FooterKey

from gpuwatch.replay_control import ReplayControl
from gpuwatch.source import ReplaySource
from gpuwatch.tui.panels.footer import KeysFooter
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.stage import StageScreen
from tests.test_tui_fixtures import make_app, synthetic_frames, write_recording


def _fits(footer: KeysFooter) -> bool:
    """Every key on show ends before the palette key, and the footer hides at least one."""
    keys = [k for k in footer.query_children(FooterKey) if not k.has_class("-command-palette")]
    palette = next((k for k in footer.query_children(FooterKey) if k.has_class("-command-palette")), None)
    shown = [k for k in keys if k.display]
    return (palette is not None and all(k.region and k.region.right <= palette.region.x for k in shown)
            and len(shown) < len(keys))


def _screen_name(widget) -> str:
    """The name of the screen a widget is on; a fit called back after its footer left (a screen
    popped) has none, and the footer's own fit reads empty regions then."""
    try:
        return type(widget.screen).__name__
    except NoScreen:
        return "none"


async def _until(pilot, ready) -> bool:
    """Whether ``ready()`` comes true within a few seconds (a loaded machine draws slowly)."""
    for _ in range(100):
        if ready():
            return True
        await pilot.pause(0.05)
    return False


async def test_keys_recomposed_under_a_drill_down_wait_for_their_screen_without_spinning(tmp_path, monkeypatch):
    # The palette closing changes the bindings, so when its command opens a drill-down the main
    # screen's footer recomposes while it is hidden: its keys have no place until that screen is
    # back. Asking again after every refresh until they had one kept the event loop busy for as
    # long as the drill-down stayed open.
    fits = []
    fit = KeysFooter._fit
    monkeypatch.setattr(KeysFooter, "_fit", lambda self: fits.append(_screen_name(self)) or fit(self))
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(40))
    control = ReplayControl(1.0)
    app = make_app(ReplaySource(str(path), control=control))
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        footer = main.query_one(KeysFooter)
        assert isinstance(main, MainScreen) and await _until(pilot, lambda: _fits(footer))
        await pilot.press("ctrl+p")  # the palette's command opens the drill-down as the palette closes
        assert await _until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"go to stage 1")
        # The palette searches its providers asynchronously: enter once the command is listed.
        assert await _until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        await pilot.press("enter")
        assert await _until(pilot, lambda: isinstance(app.screen, StageScreen))
        await pilot.pause(0.3)
        fits.clear()
        await pilot.pause(1.0)
        assert len(fits) < 10, fits[:20]
        await pilot.press("escape")
        assert await _until(pilot, lambda: app.screen is main and _fits(footer))


async def test_a_drill_down_in_a_replay_at_80_columns_keeps_its_back_key(tmp_path):
    # The playback keys came right after Help and Quit and pushed the screen's own Back off the
    # footer at 80 columns ("? Help q Quit p Pause . Step [ ] Seek + - Speed ←→ Stage ^p palette"):
    # a newcomer in a drill-down saw no way back.
    path = write_recording(tmp_path / "r.jsonl", synthetic_frames(10))
    app = make_app(ReplaySource(str(path), control=ReplayControl(1.0)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2", "enter")
        assert await _until(pilot, lambda: isinstance(app.screen, StageScreen))
        footer = app.screen.query_one(KeysFooter)
        assert await _until(pilot, lambda: _fits(footer))
        shown = [k for k in footer.query_children(FooterKey) if k.display and not k.has_class("-command-palette")]
        assert [k.description for k in shown][:3] == ["Help", "Quit", "Back"]
        assert "Pause" in [k.description for k in shown]  # a replay still looks like one
