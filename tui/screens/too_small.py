"""The screen that stands in for the others while the terminal is too small to show them.

Below 60 columns the pipeline row cannot name the six stages (it showed "✓ ok ■ BOTTLE… ✓ ok"
with no names), and below 16 lines the main screen scrolls to the focused process list, pushing
the stage names off the top; at 20x10 the verdict ran three words a line and the footer had lost
Help and Quit. So under that size gpuwatch says what it needs instead of drawing a screen that
cannot be read. Frames are still analysed and recorded meanwhile; the app swaps this screen in
and out as the terminal is resized (tui/app.py, ``fit_screen``).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.geometry import Size
from textual.screen import Screen

from gpuwatch.tui.panels.plain import Plain

MIN_COLUMNS = 60
"""The pipeline row's six stage names with their arrows, and the footer's Help and Quit."""
MIN_LINES = 16
"""Header, stage names and levels, a verdict of a few lines, one plot, the host strip, the footer."""


def too_small(size: Size) -> bool:
    return size.width < MIN_COLUMNS or size.height < MIN_LINES


def message(size: Size) -> str:
    """Short: it has to fit the smallest terminals whole."""
    return (f"Terminal {size.width}x{size.height}: gpuwatch needs at least {MIN_COLUMNS}x{MIN_LINES}. "
            "Enlarge it, or press q to quit. Watching goes on.")


class TooSmallScreen(Screen):
    """One message, centred; the app lets only quit through while it is on top (``check_action``)."""

    DEFAULT_CSS = """
    TooSmallScreen { align: center middle; }
    TooSmallScreen #too-small { width: 100%; height: auto; padding: 0 1; text-align: center; }
    """

    def compose(self) -> ComposeResult:
        yield Plain(message(self.app.size), id="too-small")

    def on_resize(self) -> None:
        self.query_one("#too-small", Plain).update(message(self.app.size))
