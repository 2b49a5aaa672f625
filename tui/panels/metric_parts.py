"""What a metric row shows, as text pieces per line: ``label ▕████▍   ▏ value  ▁▂▃▅▇``.

Kept apart from the widget so that both of its ways of drawing (strips, and a Text while some of
it is selected) draw the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.tui import format as fmt
from gpuwatch.tui.plot import bar, plot

VALUE_W = 13

Part = tuple[str, "str | None"]
"""A run of text and its component class (``metric-row--...``), None for the row's own style."""


def metric_parts(
    label: str,
    label_w: int,
    value_text: str,
    fraction: float | None,
    values: Sequence[float | None],
    top: float,
    na: bool,
    width: int,
    height: int,
    with_plot: bool = True,
) -> list[list[Part]]:
    """``height`` lines (at least one) for a row ``width`` cells wide; rows taller than one line get
    a taller plot, the label on the middle line. Without the plot the bar takes the room."""
    height = max(1, height)
    if with_plot:
        bar_w = max(4, min(24, (width - label_w - VALUE_W) // 3))
    else:
        bar_w = max(4, width - label_w - VALUE_W - 2)
    left_w = label_w + bar_w + 1 + VALUE_W + 1
    plot_w = max(0, width - left_w) if with_plot else 0
    rows = plot(values, plot_w, height, top)
    label_line = (height - 1) // 2
    lines = []
    for line in range(height):
        parts: list[Part] = []
        if line != label_line:
            parts.append((" " * left_w, None))
        else:
            filled = bar(None if na else fraction, bar_w).rstrip(" ")
            parts += [
                (fmt.ellipsize(label, label_w - 1).ljust(label_w), "metric-row--label"),
                (filled, "metric-row--na" if na else "metric-row--bar"),
                (" " * (bar_w - len(filled)), "metric-row--bar-empty"),
                (" ", None),
                (value_text.rjust(VALUE_W)[-VALUE_W:], "metric-row--na" if na else "metric-row--value"),
                (" ", None),
            ]
        parts.append((rows[line] if line < len(rows) else "", "metric-row--plot"))
        lines.append(parts)
    return lines
