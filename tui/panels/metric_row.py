"""One GPU metric: label, bar, value and a history plot on a fixed scale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from gpuwatch.tui import format as fmt
from gpuwatch.tui.plot import bar, plot

LABEL_W = 9
VALUE_W = 13


class MetricRow(Widget):
    """Draws ``label ▕████▍   ▏ value  ▁▂▃▅▇`` ; rows taller than one line get a taller plot."""

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

    def __init__(self, label: str, about: str, id: str | None = None, label_width: int = LABEL_W) -> None:
        super().__init__(id=id)
        self.label = label
        self.label_width = label_width
        self.about = about
        self.value_text = fmt.NA
        self.fraction: float | None = None
        self.values: list[float | None] = []
        self.top = 100.0
        self.na_reason: str | None = None
        self.tooltip = about

    def set_data(
        self,
        value_text: str,
        fraction: float | None,
        values: Sequence[float | None],
        top: float | None,
        na_reason: str | None,
    ) -> None:
        """New reading. ``top`` None scales the plot to the largest value in the history."""
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
        self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, max(1, self.size.height)
        label_w = self.label_width
        bar_w = max(4, min(24, (width - label_w - VALUE_W) // 3))
        left_w = label_w + bar_w + 1 + VALUE_W + 1
        plot_w = max(0, width - left_w)
        style = self.get_component_rich_style
        na = self.na_reason is not None
        rows = plot(self.values, plot_w, height, self.top)
        text = Text(no_wrap=True, overflow="crop", end="")
        label_line = (height - 1) // 2  # the middle line of a tall row
        for line in range(height):
            if line:
                text.append("\n")
            if line != label_line:
                text.append(" " * left_w)
            else:
                text.append(fmt.ellipsize(self.label, label_w - 1).ljust(label_w), style("metric-row--label"))
                drawn = bar(None if na else self.fraction, bar_w)
                filled = drawn.rstrip(" ")
                text.append(filled, style("metric-row--na" if na else "metric-row--bar"))
                text.append(" " * (bar_w - len(filled)), style("metric-row--bar-empty"))
                text.append(" ")
                text.append(self.value_text.rjust(VALUE_W)[-VALUE_W:],
                            style("metric-row--na" if na else "metric-row--value"))
                text.append(" ")
            text.append(rows[line] if line < len(rows) else "", style("metric-row--plot"))
        return text
