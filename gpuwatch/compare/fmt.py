"""Numbers and untrusted strings as the compare renderers write them."""

from __future__ import annotations

from gpuwatch.compare.diff import Row
from gpuwatch.report.svg import rate


def value(v: float | None, unit: str) -> str:
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


def clean(s: str) -> str:
    """A string from the job (its command line) with control characters shown as "?": it must not
    act on the terminal or the document it is written into."""
    return "".join(c if c.isprintable() else "?" for c in s)
