"""Time charts as text: series drawn as braille lines over a shared time axis, and the verdict's
stage as a band under them. Pure: values in, runs of text with their component class out.

Written here rather than with textual-plotext: plotext builds its whole canvas in Python and hands
back an ANSI string that Rich parses again, 8.6 ms of CPU for one 190x7 chart of two series on the
2-core CPU VM (plotext 5.3.2), against the whole TUI's budget of ~20 ms a frame. Here a cell's
glyph and owner come from a table keyed by what its two time columns draw, so a steady signal costs
a dictionary lookup per cell.

Braille cells are 2 dots wide and 4 high: each cell holds two ticks, newest at the right edge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from gpuwatch.model import verdict as v
from gpuwatch.tui.format import ellipsize

Part = tuple[str, "str | None"]
"""A run of text and its component class (None: the widget's own style)."""

TICKS_PER_CELL = 2
"""Braille's horizontal resolution: two ticks (two seconds at the default refresh) a cell."""
DOTS = 4
"""Braille's vertical resolution: four dots a cell."""
_LEFT = (0x40, 0x04, 0x02, 0x01)
"""The left column's dot bits, bottom dot first."""
_RIGHT = (0x80, 0x20, 0x10, 0x08)

SERIES = ("time-chart--s0", "time-chart--s1", "time-chart--s2")
"""Component classes of a plot's series, in order; a cell two series draw in is ``OVERLAP``."""
OVERLAP = "time-chart--overlap"
TITLE = "time-chart--title"
MUTED = "time-chart--muted"

BAND_MARK = {v.IO: "1", v.DECODE: "2", v.H2D: "3", v.GPU_MEMORY: "4", v.LAUNCH: "5", v.CONTENTION: "6",
             v.GPU_BOUND: "─", v.CPU_BOUND: "C", v.IDLE: "·", v.UNKNOWN: "?"}
"""The band's fill per verdict stage: the pipeline's stage numbers, so the band reads without colour
too (NO_COLOR); a run wide enough carries the stage's name."""


@dataclass(frozen=True)
class Series:
    label: str
    values: tuple[float | None, ...]
    """Oldest first, one per tick; None where the tick had no reading."""
    now: str
    """The latest value as text, for the legend."""


@dataclass(frozen=True)
class Plot:
    series: tuple[Series, ...]
    """Up to three, each in its own colour."""
    top: float
    """The value at the top dot row."""
    scale: str
    """What the rows span, for the title (``0-100 %``)."""


def chart_lines(plots: Sequence[Plot], stages: Sequence[str | None], width: int, height: int,
                cache: SpanCache | None = None, span_s: float | None = None) -> list[list[Part]]:
    """As many of ``plots`` as fit in ``height`` lines (the first ones), each a title line and at
    least two rows of plot, then the band of ``stages`` (one per tick, aligned with the values).
    Spare lines go to the plots' rows. ``span_s``: the seconds the values cover (``frames_span``),
    said in each title; None says no span."""
    if width <= 0 or height <= 0:
        return []
    room = height - 1  # the band
    shown = list(plots[: max(0, room // 3)]) or list(plots[:1])
    lines: list[list[Part]] = []
    if room >= 2 and shown:
        rows_each = room // len(shown) - 1
        extra = room - len(shown) * (rows_each + 1)
        for i, p in enumerate(shown):
            rows = rows_each + (1 if i < extra else 0)
            lines.append(title_line(p, width, span_s))
            lines += plot_rows(p, width, rows, cache, i)
    lines.append(band_line(stages, width))
    return lines[:height]


def ticks_span(width: int) -> int:
    """Ticks shown across ``width`` cells."""
    return width * TICKS_PER_CELL


def frames_span(first_t: float, last_t: float, interval: float) -> float:
    """Seconds a chart of the frames from ``first_t`` to ``last_t`` covers: the frames' own clock
    (the recorded one on a replay) plus the last frame's tick, so it holds for any --interval and
    never says more than the frames held."""
    return max(0.0, last_t - first_t) + max(0.0, interval)


def title_line(plot: Plot, width: int, span_s: float | None) -> list[Part]:
    """``GPU util ━ 99 %  SM active ━ 86 %`` left, ``0-100 % · last 6m20s`` right."""
    parts: list[Part] = []
    used = 0
    right = plot.scale if span_s is None else f"{plot.scale} · last {span_text(span_s)}"
    for i, s in enumerate(plot.series):
        text = f"{s.label} "
        mark = "━ "
        now = f"{s.now}  "
        if used + len(text) + len(mark) + len(now) > width:
            if i == 0:  # the first series is named still, cut with an ellipsis: a chart whose long
                # name did not fit at 80 columns had shown its scale alone (review 30)
                room = width - len(mark) - len(now) - (len(right) + 1 if width - len(right) > 30 else 0)
                text = ellipsize(s.label, max(4, room - 1)) + " "
                parts += [(text, TITLE), (mark, SERIES[0]), (now, None)]
                used += len(text) + len(mark) + len(now)
            break
        parts += [(text, TITLE), (mark, SERIES[i % len(SERIES)]), (now, None)]
        used += len(text) + len(mark) + len(now)
    if used + len(right) <= width:
        parts += [(" " * (width - used - len(right)), None), (right, MUTED)]
    else:
        parts.append((" " * (width - used), None))
    return parts


def span_text(seconds: float) -> str:
    """``6m20s``, ``26s``, ``1.5s``: whole seconds from 10 s up, a tenth below."""
    if seconds < 10 and round(seconds, 1) != round(seconds):
        return f"{seconds:.1f}s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def plot_rows(plot: Plot, width: int, rows: int, cache: SpanCache | None = None, key: object = None) -> list[list[Part]]:
    """``rows`` lines of braille, ``width`` cells, the newest tick at the right edge. ``cache``
    keeps the series' spans and the plot's cells from the last draws (under ``key``, one per plot)
    to work out only the new ones."""
    if rows <= 0 or width <= 0:
        return []
    n = width * TICKS_PER_CELL
    dots = rows * DOTS
    if cache is None:
        spans = [_spans(s.values[-n:], plot.top, dots) for s in plot.series]
    else:
        spans = [cache.spans((key, i, s.label), s.values[-n:], plot.top, dots) for i, s in enumerate(plot.series)]
    if not spans:
        return [[(" " * width, None)] for _ in range(rows)]
    spans = [[None] * (n - len(x)) + x for x in spans]  # right-aligned: the newest at the edge
    drawn = None if cache is None else cache.cells((key, width, rows), spans)
    if drawn is None:
        glyph_rows, owner_rows = _cell_rows(spans, rows, 0, width)
    else:
        glyph_rows, owner_rows = drawn
    if cache is not None:
        cache.keep_cells((key, width, rows), spans, glyph_rows, owner_rows)
    out = []
    for text, owners in zip(glyph_rows, owner_rows):  # runs of one owner, found by the regex engine
        out.append([(text[m.start():m.end()], _OWNERS[m.group(1)]) for m in _RUNS.finditer(owners)])
    return out


def _cell_rows(spans: list[list], rows: int, lo: int, hi: int) -> tuple[list[str], list[str]]:
    """Cells ``lo`` to ``hi`` (exclusive) of the padded ``spans``: each row's glyphs and the codes
    of the series that drew them (:data:`_OWNERS`), top row first."""
    table = _cell_table(rows)
    # one key per cell: each series' two dot spans; the table gives the cell's glyph per row and
    # its owner per row (which series drew there)
    keys = zip(*[zip(x[2 * lo:2 * hi:2], x[2 * lo + 1:2 * hi:2]) for x in spans])
    cells = [table.get(k) or table.setdefault(k, _cell(k, rows)) for k in keys]
    if not cells:
        return [""] * rows, [""] * rows
    return ["".join(r) for r in zip(*(c[0] for c in cells))], ["".join(r) for r in zip(*(c[1] for c in cells))]


def _spans(values: Sequence[float | None], top: float, dots: int) -> list[tuple[int, int] | None]:
    """Each tick's dot span (low, high), bottom dot 0: its own level joined halfway to each
    neighbour's, so the line stays connected; None where the tick has no reading."""
    levels = _levels(values, top, dots)
    return [_span(levels, i) for i in range(len(levels))]


def _levels(values: Sequence[float | None], top: float, dots: int) -> list[int | None]:
    k = (dots - 1) / top if top > 0 else 0.0
    last = dots - 1
    return [None if x is None else last if x * k >= last else 0 if x <= 0 else int(x * k + 0.5) for x in values]


def _span(levels: Sequence[int | None], i: int) -> tuple[int, int] | None:
    lv = levels[i]
    if lv is None:
        return None
    lo = hi = lv
    for j in (i - 1, i + 1):
        if 0 <= j < len(levels):
            o = levels[j]
            if o is None:
                continue
            if o < lv:
                mid = (lv + o) // 2
                lo = mid if mid < lo else lo
            else:
                mid = (lv + o + 1) // 2
                hi = mid if mid > hi else hi
    return lo, hi


class SpanCache:
    """Dot spans of each series as they were last drawn. A series usually moves by one tick between
    draws; then only the spans at its new end are worked out, not the whole window again."""

    def __init__(self) -> None:
        self._last: dict[object, tuple[tuple, float, int, list]] = {}
        self._drawn: dict[object, tuple[tuple[list[list], list[str], list[str]], ...]] = {}
        """Each plot's last two draws (padded spans, glyph rows, owner rows), newest first (:meth:`cells`)."""

    def spans(self, key: object, values: tuple[float | None, ...], top: float, dots: int) -> list[tuple[int, int] | None]:
        last = self._last.get(key)
        out: list[tuple[int, int] | None] | None = None
        if last is not None and last[1] == top and last[2] == dots and values:
            old, old_spans = last[0], last[3]
            if len(values) == len(old) and len(old) > 2 and values[:-1] == old[1:]:
                # shifted: the old last span changes (it has a new neighbour), the new first one too
                # (it lost one)
                out = [_span(_levels(values[:2], top, dots), 0), *old_spans[2:-1]]
            elif len(values) == len(old) + 1 and len(old) > 1 and values[:-1] == old:
                out = old_spans[:-1]
            elif values == old:
                out = old_spans
        if out is None:
            out = _spans(values, top, dots)
        elif len(out) < len(values):
            tail = _levels(values[-3:], top, dots)
            out = out + [_span(tail, i) for i in range(3 - (len(values) - len(out)), 3)]
        self._last[key] = (values, top, dots, out)
        return out

    def keep(self, keys: set) -> None:
        """Forget the series not in ``keys`` (a plot that went away)."""
        for k in [k for k in self._last if k not in keys]:
            del self._last[k]

    def cells(self, key: object, spans: list[list]) -> tuple[list[str], list[str]] | None:
        """A plot's rows (glyphs, owner codes) for the padded ``spans``, built from an earlier
        draw's where they match, else None. With two ticks a cell, the draw two ticks back holds
        every cell of this one but the two ends, one cell to the right: a cell is its spans' glyphs
        (the table of :func:`_cell`), so where the spans equal, the cells do. The newest cells and
        the oldest one are worked out again (a tick's span depends on its neighbours: the old last
        tick got one, the new first lost one). None: no earlier draw matches; draw it whole."""
        for old_spans, glyphs, owners in self._drawn.get(key, ()):
            if len(old_spans) != len(spans):
                continue
            if all(x == o for x, o in zip(spans, old_spans)):  # the same plot again (a redraw)
                return glyphs, owners
            n = len(spans[0])
            width = len(glyphs[0])
            if width < 4 or not all(x[2:n - 4] == o[4:n - 2] for x, o in zip(spans, old_spans)):
                continue
            rows = len(glyphs)
            first_g, first_o = _cell_rows(spans, rows, 0, 1)
            last_g, last_o = _cell_rows(spans, rows, width - 2, width)
            return ([f + g[2:width - 1] + e for f, g, e in zip(first_g, glyphs, last_g)],
                    [f + o[2:width - 1] + e for f, o, e in zip(first_o, owners, last_o)])
        return None

    def keep_cells(self, key: object, spans: list[list], glyphs: list[str], owners: list[str]) -> None:
        """Keep a plot's rows as drawn, with the last draw's: the next draw but one is one cell on."""
        drawn = self._drawn.get(key, ())
        if drawn and drawn[0][1] is glyphs:  # the last draw again: keep the one before it too
            return
        self._drawn[key] = ((spans, glyphs, owners), *drawn[:1])


_TABLES: dict[int, dict[tuple, tuple[tuple[str, ...], tuple[str | None, ...]]]] = {}
_TABLE_MAX = 50_000
"""Cells kept per height; a table this full is dropped and refilled (a noisy signal over hours)."""


def _cell_table(rows: int) -> dict:
    table = _TABLES.get(rows)
    if table is None or len(table) > _TABLE_MAX:
        table = _TABLES[rows] = {}
    return table


_CODES = "012"
"""A series' owner code in a cell; ``+``: two or more series, a blank: none."""
_OWNERS: dict[str, str | None] = {**{c: SERIES[i] for i, c in enumerate(_CODES)}, "+": OVERLAP, " ": None}
_RUNS = re.compile(r"(.)\1*")


def _cell(key: tuple, rows: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """One cell column: its glyph on each row (top first) and the code of the series that drew it
    (:data:`_OWNERS`)."""
    bits = [0] * rows
    owner = [" "] * rows
    for i, (left, right) in enumerate(key):
        for span, dot_bits in ((left, _LEFT), (right, _RIGHT)):
            if span is None:
                continue
            for d in range(span[0], span[1] + 1):
                r = rows - 1 - d // DOTS
                bits[r] |= dot_bits[d % DOTS]
                mine = _CODES[i % len(_CODES)]
                owner[r] = mine if owner[r] in (" ", mine) else "+"
    glyphs = tuple(chr(0x2800 + b) if b else " " for b in bits)
    return glyphs, tuple(owner)


def band_component(stage: str | None) -> str | None:
    return None if stage is None else f"time-chart--band-{stage}"


def band_line(stages: Sequence[str | None], width: int) -> list[Part]:
    """The verdict's stage per cell (the newer of its two ticks), as runs: a run wide enough shows
    the stage's name, the rest is the stage's mark (:data:`BAND_MARK`)."""
    n = width * TICKS_PER_CELL
    tail = list(stages[-n:])
    tail = [None] * (n - len(tail)) + tail
    cells = tail[TICKS_PER_CELL - 1::TICKS_PER_CELL]
    parts: list[Part] = []
    for stage, run in groupby(cells):
        k = sum(1 for _ in run)
        if stage is None:
            parts.append((" " * k, None))
            continue
        mark = BAND_MARK.get(stage, "?")
        name = f" {v.STAGE_TITLES.get(stage, stage)} "
        if k >= len(name) + 2:
            left = (k - len(name)) // 2
            text = mark * left + name + mark * (k - len(name) - left)
        else:
            text = mark * k
        parts.append((text, band_component(stage)))
    return parts
