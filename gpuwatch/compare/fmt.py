"""Changes between two runs as the compare renderers write them."""

from __future__ import annotations

from gpuwatch.compare.diff import Row
from gpuwatch.report.units import rate, value


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


def cells(r: Row) -> tuple[str, str]:
    """The before and after values as written ("at most 6.33x" for a ceiling)."""
    return tuple("none seen" if v is None and absent else ("at most " if ceiling else "") + value(v, r.unit)
                 for v, ceiling, absent in zip((r.before, r.after), r.ceiling, r.absent))  # type: ignore[return-value]
