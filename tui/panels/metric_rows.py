"""Every metric of one GPU, one row each: ``label ▕██████████▍      ▏ value`` (the time charts above
hold the history), in the columns the stylesheet asks for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from textual import events
from textual.geometry import Size

from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.metric_parts import metric_parts
from gpuwatch.tui.panels.parts_widget import Part, PartsWidget

LABEL_W = 9


@dataclass(frozen=True)
class Shown:
    """What one row draws."""

    value_text: str
    fraction: float | None
    """The bar's fill, 0-1; None: no reading."""
    na_reason: str | None


class MetricRows(PartsWidget):
    """The rows in one widget, laid out as a grid of ``grid-size`` columns with ``grid-gutter``
    between them (the stylesheet's rules, read here: two columns on a narrow screen), row by row.

    One widget rather than one per metric in a Grid: all of them change every tick, and each
    widget costs its own refresh, update message and pass through the compositor (with the grid's,
    eleven a tick). Each row draws what a one-line row drew in the grid's cell; its tooltip (the
    metric, and why it is N/A) follows the mouse."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-row--label",
        "metric-row--bar",
        "metric-row--bar-empty",
        "metric-row--value",
        "metric-row--plot",
        "metric-row--na",
    }
    DEFAULT_CSS = """
    MetricRows { height: auto; width: 1fr; }
    """

    def __init__(self, metrics: Sequence[tuple[str, str, str]], *, classes: str | None = None) -> None:
        """``metrics``: (key, label, about) of each row, in order."""
        super().__init__(classes=classes)
        self._keys = [key for key, _, _ in metrics]
        self._labels = [label for _, label, _ in metrics]
        self._about = [about for _, _, about in metrics]
        self._shown = [Shown(fmt.NA, None, None) for _ in metrics]
        self._row_parts: dict[tuple[int, Shown, int], list[Part]] = {}
        """Each row's runs as last drawn, by (row, what it shows, width): most rows of a steady job
        show the same from one tick to the next."""
        self._hovered: int | None = None
        """The row under the mouse, whose words the tooltip shows."""

    def set_data(self, readings: Sequence[tuple[str, float | None, Sequence[float | None], float | None, str | None]]) -> None:
        """Each row's new reading, in the rows' order: (value text, fraction of the full scale,
        the values of the last frames, the full scale, why it is N/A). A full scale of None scales
        the bar to the largest of the values (no natural full scale)."""
        shown = [_shown(*r) for r in readings]
        if shown == self._shown:  # the same rows: nothing to draw (a redraw without a new frame, a steady reading)
            return
        self._shown = shown
        if self._hovered is not None:
            self._show_tooltip(self._hovered)
        self.redraw()

    def shown(self, key: str) -> Shown:
        """What the row of metric ``key`` draws."""
        return self._shown[self._keys.index(key)]

    def row_tooltip(self, key: str) -> str:
        """The tooltip of the row of metric ``key``: what it measures, and why it is N/A."""
        i = self._keys.index(key)
        reason = self._shown[i].na_reason
        return f"{self._about[i]}\nN/A: {reason}" if reason else self._about[i]

    def _columns(self) -> list[tuple[int, int]]:
        """(x, width) of each column at the current width: equal shares of what the gutters leave,
        cut at the same cells as Textual's grid layout (textual._resolve: the floor of each running
        total of columns and gutters, here in whole numbers)."""
        return _columns(self.size.width, max(1, self.styles.grid_size_columns), self.styles.grid_gutter_vertical)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        n = max(1, self.styles.grid_size_columns)
        return -(-len(self._keys) // n)

    def _parts(self) -> list[list[Part]]:
        columns = self._columns()
        known, self._row_parts = self._row_parts, {}
        lines: list[list[Part]] = []
        for first in range(0, len(self._keys), len(columns)):
            line: list[Part] = []
            x = 0
            for i, (left, width) in zip(range(first, len(self._keys)), columns):
                if left > x:  # the gutter: blank in the rows' own style
                    line.append((" " * (left - x), None))
                s = self._shown[i]
                key = (i, s, width)
                row = known.get(key)
                if row is None:
                    row = _fit(metric_parts(self._labels[i], LABEL_W, s.value_text, s.fraction, (), 1.0,
                                            s.na_reason is not None, width, 1, with_plot=False)[0], width)
                self._row_parts[key] = row
                line += row
                x = left + width
            lines.append(line)
        return lines

    def on_mouse_move(self, event: events.MouseMove) -> None:
        offset = event.get_content_offset(self)
        row = None
        if offset is not None:
            for c, (left, width) in enumerate(self._columns()):
                if left <= offset.x < left + width:
                    i = offset.y * len(self._columns()) + c
                    row = i if i < len(self._keys) else None
        if row != self._hovered:
            self._hovered = row
            self._show_tooltip(row)

    def on_leave(self, event: events.Leave) -> None:
        self._hovered = None
        self._show_tooltip(None)  # else a return over the gutter, where no row is, shows the last row's

    def _show_tooltip(self, row: int | None) -> None:
        tooltip = None if row is None else self.row_tooltip(self._keys[row])
        if tooltip != self.tooltip:
            self.tooltip = tooltip


@lru_cache(maxsize=8)
def _columns(width: int, n: int, gutter: int) -> list[tuple[int, int]]:
    """(x, width) of ``n`` equal columns in ``width`` cells with ``gutter`` cells between them."""
    room = max(0, width - gutter * (n - 1))
    return [(i * room // n + i * gutter, (i + 1) * room // n - i * room // n) for i in range(n)]


def _shown(value_text: str, fraction: float | None, values: Sequence[float | None], top: float | None,
           na_reason: str | None) -> Shown:
    """A reading as its row draws it: without a full scale, the bar is the latest value against the
    largest of ``values`` (at least 1)."""
    if fraction is None and top is None and na_reason is None and values and values[-1] is not None:
        fraction = values[-1] / max(max((v for v in values if v is not None), default=0.0), 1.0)
    return Shown(value_text, fraction, na_reason)


def _fit(parts: list[Part], width: int) -> list[Part]:
    """``parts`` cut or padded (in the rows' own style) to ``width`` cells, as a row as wide as its
    grid cell was drawn."""
    if cell_len("".join(text for text, _ in parts)) == width:
        return [(text, component) for text, component in parts if text]
    out: list[Part] = []
    room = width
    for text, component in parts:
        if not text or room <= 0:
            continue
        n = cell_len(text)
        if n > room:
            text = set_cell_size(text, room)
            n = room
        out.append((text, component))
        room -= n
    if room > 0:
        out.append((" " * room, None))
    return out
