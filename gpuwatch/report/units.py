"""Figures as people read them: a value with its unit ("87.4 %", "107.4 MB/s", "6.90x")."""

from __future__ import annotations


def rate(bps: float, digits: int = 0) -> str:
    """Bytes per second in the largest unit that keeps a number of at least 1 (kB = 1000 B)."""
    for k, u in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if bps >= k:
            return f"{bps / k:.{digits}f} {u}"
    return f"{bps:.0f} B/s"


def value(v: float | None, unit: str) -> str:
    """``unit``: "%", "% of a core", "B/s", "x", "s", "" (a count) or a count's noun ("workers"); None reads "not measured"
    ("not estimated" for a speed-up)."""
    if v is None:
        return "not estimated" if unit == "x" else "not measured"
    if unit == "B/s":
        return rate(v, 1)
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "s":
        return f"{v:.1f} s"
    if unit == "":
        return f"{v:.1f}"
    return f"{v:.1f} {unit}"
