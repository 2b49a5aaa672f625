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
    pad = width - len(tail)
    rows = [[" "] * width for _ in range(height)]
    for i, v in enumerate(tail):
        col = pad + i
        if v is None:
            rows[height - 1][col] = MISSING
            continue
        frac = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
        eighths = round(frac * height * 8)
        if v > 0 and eighths == 0:
            eighths = 1  # any activity at all stays visible
        for r in range(height):  # r = 0 is the bottom row
            fill = max(0, min(8, eighths - 8 * r))
            rows[height - 1 - r][col] = EIGHTHS[fill]
    return ["".join(r) for r in rows]
