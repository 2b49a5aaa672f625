"""Numbers to short strings for the panels. Unsupported and None render as "N/A"."""

from __future__ import annotations

import re

from gpuwatch.model.values import Unsupported, known

NA = "N/A"


def pct(value: object, digits: int = 0) -> str:
    """``42 %`` or N/A."""
    if not known(value):
        return NA
    return f"{float(value):.{digits}f} %"  # type: ignore[arg-type]


def size(value: object) -> str:
    """Bytes in binary units: ``812 MiB``, ``45.1 GiB``."""
    if not known(value):
        return NA
    v = float(value)  # type: ignore[arg-type]
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.0f} {unit}" if unit in ("B", "KiB") or abs(v) >= 100 else f"{v:.1f} {unit}"
        v /= 1024
    return NA  # unreachable


def rate(value: object) -> str:
    """Bytes per second in decimal units, as storage and PCIe are quoted: ``55.2 GB/s``."""
    if not known(value):
        return NA
    v = float(value)  # type: ignore[arg-type]
    for unit in ("B/s", "kB/s", "MB/s", "GB/s"):
        if abs(v) < 1000 or unit == "GB/s":
            return f"{v:.0f} {unit}" if abs(v) >= 100 or unit == "B/s" else f"{v:.1f} {unit}"
        v /= 1000
    return NA  # unreachable


def mbps(value: object) -> str:
    """Bytes per second as ``12.3 MB/s`` (fixed unit, for table columns)."""
    if not known(value):
        return NA
    return f"{float(value) / 1e6:.1f}"  # type: ignore[arg-type]


def duration(seconds: float) -> str:
    """``1:02:03`` or ``02:03``."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


FIELD_PREFIXES = ("stacks: ", "the job's processes: ", "disk activity: ")
"""How the collectors start a reason, naming their field for the report's "Not checked" list; the
TUI shows a reason beside that field's own name ("Stacks N/A: stacks: ...", review 30)."""


def unprefixed(text: str) -> str:
    """A collector's reason without the field name it starts with (FIELD_PREFIXES)."""
    for p in FIELD_PREFIXES:
        if text.startswith(p):
            return text[len(p):]
    return text


def reason(value: object) -> str | None:
    """The reason text of an Unsupported value (without its field's name: unprefixed), else None."""
    return unprefixed(value.reason) if isinstance(value, Unsupported) else None


def ellipsize(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` cells with a trailing ellipsis."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


_FRAME = re.compile(r"(?P<name>.+) \((?P<path>.+)(?P<line>:\d+)\)")


def fit_frame(text: str, width: int | None) -> str:
    """A py-spy frame ``name (path/file.py:123)`` fitted to ``width`` cells by cutting its path's
    start, never its line number: cut at the end, two lines of one function read alike at 80
    columns ("_apply_to_collection_slow (lightning_utilities/core/apply_…", review 46). Where even
    the name and the line do not fit, the end is cut with "…" as before."""
    m = _FRAME.fullmatch(text)
    if width is None or len(text) <= width or m is None:
        return text
    room = width - len(m["name"]) - len(m["line"]) - 4  # " (", "…", ")"
    if room < 6:  # too narrow for any of the path: the cell's own ellipsis cuts the end
        return text
    return f"{m['name']} (…{m['path'][-room:]}{m['line']})"


def short_command(cmdline: str) -> str:
    """The command line with its program's folder left out (``/work/.venv/bin/python train.py`` →
    ``python train.py``): at 80 columns the header showed the interpreter's path and cut the
    script, which is what tells one job from another (review 46). Its arguments are kept whole."""
    head, sep, rest = cmdline.partition(" ")
    return head.rsplit("/", 1)[-1] + sep + rest if "/" in head else cmdline
