"""A Static that is cheap to update every tick.

Textual's ``Static.update`` asks for a layout of the whole screen on every call, even with the
same text. Panels here update each tick, mostly with text of the same size (or the same text):
this one skips unchanged content and asks for a layout only when the size would change.
"""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static

from gpuwatch.tui.panels.measured import Measured
from gpuwatch.tui.panels.steady import SteadyLines


class LazyStatic(SteadyLines, Measured, Static):
    """``update`` is a no-op for the content on show; a repaint when the size stays; else a layout.
    Unchanged, it hands the compositor its last lines again (:class:`SteadyLines`)."""

    def update(self, content: VisualType = "", *, layout: bool | None = None) -> None:
        """``layout`` None: only if the new content changes the size (True / False: as Static)."""
        shown = self.content
        if not layout and type(content) is type(shown) and content == shown:
            return
        super().update(content, layout=False)  # also drops the cached render and dimensions
        if layout or (layout is None and self.size_changed()):
            if self._layout_required:
                # Textual counts a layout request only when none is pending (Widget.refresh), and
                # caches each widget's size per count: a request made after the screen's layout
                # measured this widget but before the pending request was handled would reuse that
                # measurement (seen: the first frame drawn as the screen was laid out kept a panel
                # one line short). Count this one.
                self._layout_updates += 1
            self.refresh(layout=True)
