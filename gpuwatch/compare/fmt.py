"""Changes between two runs as the compare renderers write them."""

from __future__ import annotations

from gpuwatch.compare.diff import Row
from gpuwatch.report.units import rate


def change(r: Row) -> str:
    d = r.change
    if d is None:
        return "-"
    if r.unit == "B/s":
        return ("+" if d >= 0 else "-") + rate(abs(d), 1)
    if r.unit == "x":
        return f"{d:+.2f}x"
    if r.unit.startswith("%"):
        return f"{d:+.1f} pts"
    if r.unit == "s":
        return f"{d:+.1f} s"
    return f"{d:+.1f}"
