"""Widgets that hand the compositor their last lines again while nothing in them changed.

Each frame changes widgets from the header (top line) to the host strip (bottom line), so
Textual's compositor renders every widget under that span again, changed or not: containers,
the stage boxes and their arrows, the screen itself. For an unchanged widget Textual returns its
cached lines, but only after working out the widget's colours (a walk over its ancestors), theme,
opacity, regions and line filters and filtering each line: ~0.06-0.14 ms a widget, ~25 widgets a
frame at 200x60. :class:`SteadyLines` keeps the lines it returned and returns them again for the
same crop and size until the widget is marked dirty, which is when Textual's own cache of lines
is dropped too (every repaint, style change and resize goes through ``Widget._set_dirty``); so it
draws what Textual would have drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widgets import Static

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    # Not a Widget subclass at run time: Textual's CSS follows a widget's first DOMNode base
    # only (see panels/measured.py).
    _Base = object


class SteadyLines(_Base):
    """Mix in before a widget class: repeat the last lines drawn while the widget is not dirty."""

    _steady: tuple[tuple, list[Strip]] | None = None
    """(what the lines depend on beyond the widget's content, the lines), or None: draw again."""

    def render_lines(self, crop: Region) -> list[Strip]:
        # Beside the crop and size: the app's line filters (NO_COLOR, ANSI colours, dimming on
        # blur) and the hover style, which Textual applies after its own cache of lines.
        key = (crop, self.outer_size, tuple(self.get_line_filters()), self.hover_style)
        steady = self._steady
        if steady is not None and steady[0] == key:
            return steady[1]
        lines = super().render_lines(crop)
        self._steady = (key, lines)
        return lines

    def _set_dirty(self, *regions: Region) -> None:
        self._steady = None
        super()._set_dirty(*regions)


class SteadyHorizontal(SteadyLines, Horizontal):
    """A Horizontal container that draws its background once (CSS: still ``Horizontal``)."""


class SteadyVertical(SteadyLines, Vertical):
    """A Vertical container that draws its background once (CSS: still ``Vertical``)."""


class SteadyStatic(SteadyLines, Static):
    """A Static whose text rarely changes (the arrows between stages)."""


class SteadyScrollBar(SteadyLines, ScrollBar):
    """A scrollbar that draws its lines once until it moves, resizes or restyles (Textual marks it
    dirty then, as its own cache of lines needs). The processes table's, shown when its rows do not
    fit (80x24), was drawn again on every frame: ~0.14 ms of CPU a frame for a bar that stays put."""
