"""The verdict under the pipeline: shown whole, in a height that only grows.

A height that followed the text (one, two, three lines as the sentence changed) laid out the
whole screen each time (60-110 ms of CPU each on the H200 replay); a height capped at three lines
cut the sentence mid-word at 80 columns. Here the height is the most lines the verdict has needed
at this width: it grows when a longer sentence comes, which lays the screen out once, and never
shrinks back and forth. A resize starts over.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widgets import Static

from gpuwatch.tui.panels.lazy_static import LazyStatic


class _Tallest(Static):
    """A Static whose content height is the tallest it has been at each width."""

    _tallest: dict[int, int]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = super().get_content_height(container, viewport, width)
        tallest = self.__dict__.setdefault("_tallest", {})
        if len(tallest) > 8:  # widths from before resizes
            tallest.clear()
        tallest[width] = max(tallest.get(width, 0), height)
        return tallest[width]


class VerdictLine(LazyStatic, _Tallest):
    """LazyStatic's cheap updates (a layout only when the size changes) over a grow-only height."""
