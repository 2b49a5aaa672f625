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
    # Each column's height in eighths, then each row's character per column: one string join a
    # row instead of a cell at a time (ten plots a tick, each up to a screen wide).
    eighths = [_eighths(v, top, height) for v in tail]
    rows = []
    for r in range(height - 1, -1, -1):  # top row first; r = 0 is the bottom row
        base = 8 * r
        cells = "".join(MISSING if e is None and r == 0 else " " if e is None else EIGHTHS[min(8, max(0, e - base))]
                        for e in eighths)
        rows.append(pad + cells)
    return rows


def _eighths(v: float | None, top: float, height: int) -> int | None:
    """A column's height in eighths of a row (None: no reading)."""
    if v is None:
        return None
    frac = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
    n = round(frac * height * 8)
    return 1 if n == 0 and v > 0 else n  # any activity at all stays visible
