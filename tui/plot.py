"""Text bars and block plots on a fixed scale.

Written here rather than using textual's ``Sparkline``: that widget scales each plot to its own
maximum, so a GPU idling at 2 % would draw full-height bars. Utilization needs a fixed 0-100 scale.
"""

from __future__ import annotations

from collections.abc import Sequence

EIGHTHS = " ▁▂▃▄▅▆▇█"
"""Vertical eighth blocks, for plots."""
HBLOCKS = " ▏▎▍▌▋▊▉█"
"""Horizontal eighth blocks, for bars."""
MISSING = "·"
"""A column with no reading (N/A at that tick)."""


def bar(frac: float | None, width: int) -> str:
    """A horizontal bar ``width`` cells long, filled to ``frac`` (clamped to 0..1)."""
    if width <= 0:
        return ""
    if frac is None:
        return MISSING * width
    eighths = round(max(0.0, min(1.0, frac)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (HBLOCKS[part] if part else "")
    return text.ljust(width)


def plot(values: Sequence[float | None], width: int, height: int = 1, top: float = 100.0) -> list[str]:
    """The last ``width`` values as block columns, ``height`` rows, scaled 0..``top``.

    Returns the rows top first. Right-aligned, so the newest value is always at the right edge.
    None draws as a dot on the bottom row.
    """
    if width <= 0 or height <= 0:
        return [""] * max(0, height)
    tail = list(values)[-width:]
    pad = " " * (width - len(tail))
    # Each column as its cells top to bottom, looked up by its height in eighths, and the rows read
    # off the columns with zip: ten plots a tick, each up to a screen wide, and a Python expression
    # per cell was most of what drawing a plot cost.
    columns = _columns(height)
    cells = [columns[_eighths(v, top, height)] for v in tail]
    return [pad + "".join(row) for row in zip(*cells)] if cells else [pad] * height


_COLUMNS: dict[int, dict[int | None, str]] = {}


def _columns(height: int) -> dict[int | None, str]:
    """Every column a plot ``height`` rows tall can draw, top cell first, by height in eighths
    (None: no reading, a dot on the bottom row)."""
    table = _COLUMNS.get(height)
    if table is None:
        table = {e: "".join(EIGHTHS[min(8, max(0, e - 8 * r))] for r in range(height - 1, -1, -1))
                 for e in range(8 * height + 1)}
        table[None] = " " * (height - 1) + MISSING
        _COLUMNS[height] = table
    return table


def _eighths(v: float | None, top: float, height: int) -> int | None:
    """A column's height in eighths of a row (None: no reading)."""
    if v is None:
        return None
    frac = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
    n = round(frac * height * 8)
    return 1 if n == 0 and v > 0 else n  # any activity at all stays visible
