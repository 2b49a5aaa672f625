"""One GPU metric: label, bar, value and a history plot on a fixed scale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.metric_parts import metric_parts
from gpuwatch.tui.panels.parts_widget import Part, PartsWidget

LABEL_W = 9


class MetricRow(PartsWidget):
    """Draws ``label ▕████▍   ▏ value  ▁▂▃▅▇`` (:func:`metric_parts`); taller rows get a taller plot.
    Without the plot: ``label ▕██████████▍      ▏ value``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-row--label",
        "metric-row--bar",
        "metric-row--bar-empty",
        "metric-row--value",
        "metric-row--plot",
        "metric-row--na",
    }
    DEFAULT_CSS = """
    MetricRow { height: 1; width: 1fr; }
    """

    def __init__(self, label: str, about: str, id: str | None = None, label_width: int = LABEL_W,
                 with_plot: bool = True) -> None:
        super().__init__(id=id)
        self.with_plot = with_plot
        """False: a wider bar and no plot (where a time chart holds the history); the values still
        scale a bar that has no natural full scale."""
        self.label = label
        self.label_width = label_width
        self.about = about
        self.value_text = fmt.NA
        self.fraction: float | None = None
        self.values: list[float | None] = []
        self.top = 100.0
        self.na_reason: str | None = None
        self.tooltip = about
        self._reading: tuple | None = None
        """set_data's arguments last time."""

    def set_data(
        self,
        value_text: str,
        fraction: float | None,
        values: Sequence[float | None],
        top: float | None,
        na_reason: str | None,
    ) -> None:
        """New reading. ``top`` None scales the plot to the largest value in the history."""
        reading = (value_text, fraction, tuple(values), top, na_reason)
        if reading == self._reading:  # a redraw without a new frame (pause, key, screen resume)
            return
        self._reading = reading
        self.value_text = value_text
        self.fraction = fraction
        self.values = list(values)
        seen = [v for v in self.values if v is not None]
        self.top = top if top else max(max(seen, default=0.0), 1.0)
        if fraction is None and top is None and na_reason is None and self.values and self.values[-1] is not None:
            self.fraction = self.values[-1] / self.top  # no natural full scale: relative to the history
        if na_reason != self.na_reason:
            self.na_reason = na_reason
            self.tooltip = f"{self.about}\nN/A: {na_reason}" if na_reason else self.about
            self.set_class(na_reason is not None, "-na")
        self.redraw()

    def _parts(self) -> list[list[Part]]:
        na = self.na_reason is not None
        return metric_parts(self.label, self.label_width, self.value_text, self.fraction, self.values,
                            self.top, na, self.size.width, self.size.height, self.with_plot)
