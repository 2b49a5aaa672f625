"""A Static that is cheap to update every tick.

Textual's ``Static.update`` asks for a layout of the whole screen on every call, even with the
same text. Panels here update each tick, mostly with text of the same size (or the same text):
this one skips unchanged content and asks for a layout only when the size would change.

With :attr:`LazyStatic.CHANGED_LINES`, it also repaints only the lines that changed. A Static
repaints all of its lines on any change, each through Textual's per-line pass (border, padding,
colours, ~50 us a line); the threads panel has five lines with its border and a new stack sample
usually changes one of them. The new content is then drawn at once and compared with the lines on
screen, and only those that differ are marked dirty, so Textual's per-line cache keeps the others
(its own mechanism for a partial ``refresh(region)``).
"""

from __future__ import annotations

from typing import ClassVar

from textual.geometry import Region
from textual.visual import Visual, VisualType
from textual.widget import _RenderCache
from textual.widgets import Static

from gpuwatch.tui.panels.direct_repaint import DirectRepaint
from gpuwatch.tui.panels.measured import Measured
from gpuwatch.tui.panels.steady import SteadyLines


class LazyStatic(DirectRepaint, SteadyLines, Measured, Static):
    """``update`` is a no-op for the content on show; a repaint when the size stays (of the lines
    that changed, with :attr:`CHANGED_LINES`); else a layout. Unchanged, it hands the compositor
    its last lines again (:class:`SteadyLines`)."""

    CHANGED_LINES: ClassVar[bool] = False
    """Repaint only the lines an update changed. It pays where most lines stay as they were (the
    threads panel: one of its five lines changes a tick); where all of them change (the verdict's
    two lines), drawing early and comparing cost more than the repaint saved (~0.1 ms a change)."""

    _lines_only = False
    """True while :meth:`update` repaints: a whole-widget dirty mark becomes one per changed line."""

    def update(self, content: VisualType = "", *, layout: bool | None = None) -> None:
        """``layout`` None: only if the new content changes the size (True / False: as Static)."""
        shown = self.content
        if not layout and type(content) is type(shown) and content == shown:
            return
        self._lines_only = self.CHANGED_LINES and not layout
        try:
            super().update(content, layout=False)  # also drops the cached dimensions
        finally:
            self._lines_only = False
        if layout or (layout is None and self.size_changed()):
            if self._layout_required:
                # Textual counts a layout request only when none is pending (Widget.refresh), and
                # caches each widget's size per count: a request made after the screen's layout
                # measured this widget but before the pending request was handled would reuse that
                # measurement (seen: the first frame drawn as the screen was laid out kept a panel
                # one line short). Count this one.
                self._layout_updates += 1
            self.refresh(layout=True)  # the whole widget again (its size changes)

    def _set_dirty(self, *regions: Region) -> None:
        if regions or not self._lines_only:
            super()._set_dirty(*regions)
            return
        changed = self._changed_lines()
        if changed is None:
            super()._set_dirty()
        elif changed:
            super()._set_dirty(*changed)
            # The content's lines are drawn already (_changed_lines): Widget.render_line would
            # draw them again while this holds regions.
            self._dirty_regions.clear()

    def _changed_lines(self) -> list[Region] | None:
        """Draw the new content (as Widget._render_content would, at the same size) and keep it as
        the widget's lines; the content lines that differ from those drawn before. None: nothing
        to compare with (not drawn yet at this size, a repaint already pending, another height)."""
        size = self.size
        drawn = getattr(self, "_render_cache", None)
        if not size or drawn is None or drawn.size != size or self._dirty_regions:
            return None
        lines = Visual.to_strips(self, self._render(), size.width, size.height, self.visual_style)
        if len(lines) != len(drawn.lines):
            return None
        self._render_cache = _RenderCache(size, lines)
        return [Region(0, y, size.width, 1) for y, (old, new) in enumerate(zip(drawn.lines, lines)) if old != new]
