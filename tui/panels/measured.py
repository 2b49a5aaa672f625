"""Knowing, without a layout, whether new content changes a widget's size.

A layout (``refresh(layout=True)``) arranges the whole screen again and repaints whatever moved;
asked for on every tick, it was a large part of the TUI's CPU. A widget's size depends on its
content only where the layout asks the widget (``get_content_width`` / ``get_content_height``:
auto width or height). This mixin remembers those questions and their answers; after the content
changed, asking them again tells whether the next layout would come out different. A widget the
layout never asked (fixed size, or not laid out yet) has no size to lose: a repaint will do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.geometry import Size

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    # Not a Widget subclass at run time: Textual's CSS follows a widget's first DOMNode base
    # only, and a Widget mixin there would hide the real base's DEFAULT_CSS and type selectors.
    _Base = object

_REMEMBER = 8
"""Questions kept: a layout asks once or twice per widget; older ones come from before a resize."""


class Measured(_Base):
    """Mix in before a widget class; call :meth:`size_changed` after changing what it renders."""

    _asked: dict[tuple, int]

    def get_content_width(self, container: Size, viewport: Size) -> int:
        width = super().get_content_width(container, viewport)
        self._remember(("w", container, viewport), width)
        return width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = super().get_content_height(container, viewport, width)
        self._remember(("h", container, viewport, width), height)
        return height

    def _remember(self, question: tuple, answer: int) -> None:
        asked = self.__dict__.setdefault("_asked", {})
        asked.pop(question, None)
        asked[question] = answer
        while len(asked) > _REMEMBER:
            del asked[next(iter(asked))]

    def size_changed(self) -> bool:
        """Would the layout get another answer now? Call after ``refresh()`` (which drops the
        cached render and dimensions), before deciding on ``refresh(layout=True)``."""
        asked = self.__dict__.get("_asked")
        if not asked:
            return False
        for question, answer in asked.items():
            if question[0] == "w":
                now = super().get_content_width(*question[1:])
            else:
                now = super().get_content_height(*question[1:])
            if now != answer:
                asked.clear()  # the layout this asks for will ask again
                return True
        return False
