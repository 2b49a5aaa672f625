"""Charts over time as inline SVG, for the HTML report and the HTML comparison.

Hand-written rather than a plotting library: the charts are a stage band, a few lines and stacked
bars over one time axis, which SVG draws in a few dozen lines; a library would add a dependency of
its own (plotly inlines ~3.5 MB of JavaScript into each file to work without a network; matplotlib
adds ~40 MB and seconds of import), and the file must open offline, be small enough to attach to
a ticket, and run no JavaScript. Each chart carries its own scale as data attributes
(``data-x-max``, ``data-y-max``, plot box) so that a test can read the values back from the shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 900, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 22, 26
"""Plot box margins: the legend above, y labels on the left, time labels below."""
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
STALL_FILL = "#222222"
STALL_STRIP = 6
"""Ticks whose verdict carried a periodic GPU stall get a strip this high along the top of every chart."""


@dataclass(frozen=True, slots=True)
class Line:
    key: str
    label: str
    values: Sequence[float | None]
    """One per tick (None: not read)."""


@dataclass(frozen=True, slots=True)
class Axis:
    t: Sequence[float]
    """Seconds from the first tick, one per tick."""
    span: float
    """Seconds the x axis covers."""
    stalls: Sequence[bool]
    tick_s: float
    """Width of one tick on the axis (the frame interval)."""


def _box() -> tuple[float, float, float, float]:
    return LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def _x(axis: Axis, t: float) -> float:
    x0, _, w, _ = _box()
    return x0 + w * (t / axis.span if axis.span > 0 else 0.0)


def _frame(chart: str, title: str, axis: Axis, y_max: float, y_fmt, body: list[str]) -> str:
    x0, y0, w, h = _box()
    out = [f'<figure class="chart"><figcaption>{escape(title)}</figcaption>',
           f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{escape(title)}" data-chart="{chart}" data-x-max="{axis.span:.6g}" data-y-max="{y_max:.6g}" '
           f'data-box="{x0} {y0} {w} {h}">']
    for i, stalled in enumerate(axis.stalls):  # a strip along the top: marked without hiding the lines
        if stalled:
            out.append(f'<rect class="stall" data-t="{axis.t[i]:.6g}" x="{_x(axis, axis.t[i]):.1f}" y="{y0}" '
                       f'width="{max(1.0, w * axis.tick_s / axis.span):.1f}" height="{STALL_STRIP}" fill="{STALL_FILL}"/>')
    if any(axis.stalls):
        out.append(f'<text x="{x0 + w}" y="{y0 - 6}" text-anchor="end" fill="{STALL_FILL}">'
                   "dark strip: a periodic GPU stall</text>")
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    if y_max > 0:
        for frac in (0.0, 0.5, 1.0):
            y = y0 + h * (1 - frac)
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{escape(y_fmt(y_max * frac))}</text>')
    step = nice(axis.span / 6) if axis.span > 0 else 1.0
    for k in range(int(axis.span / step) + 1):
        out.append(f'<text x="{_x(axis, k * step):.1f}" y="{HEIGHT - 8}" text-anchor="middle">{k * step:g} s</text>')
    out += body
    out.append("</svg></figure>")
    return "\n".join(out)


def line_chart(chart: str, title: str, axis: Axis, lines: Sequence[Line], y_fmt, y_max: float | None = None) -> str:
    """Lines over time; a gap where a value is None. ``y_max`` None: the largest value (at least 1)."""
    vals = [v for ln in lines for v in ln.values if v is not None]
    top = y_max if y_max is not None else nice(max(vals, default=0.0))
    top = max(top, max(vals, default=0.0))
    x0, y0, w, h = _box()
    body = []
    for n, ln in enumerate(lines):
        colour = PALETTE[n % len(PALETTE)]
        d, pen = [], False
        for t, v in zip(axis.t, ln.values):
            if v is None:
                pen = False
                continue
            y = y0 + h * (1 - (v / top if top > 0 else 0.0))
            d.append(f'{"L" if pen else "M"}{_x(axis, t):.2f} {y:.2f}')
            pen = True
        body.append(f'<path data-series="{escape(ln.key)}" d="{" ".join(d)}" fill="none" stroke="{colour}" '
                    'stroke-width="1.6"/>')
    body.append(_legend([(ln.label, PALETTE[n % len(PALETTE)]) for n, ln in enumerate(lines)]))
    if not vals:
        body.append(_empty())
    return _frame(chart, title, axis, top, y_fmt, body)


def band_chart(chart: str, title: str, axis: Axis, states: Sequence[str], colours: dict[str, str],
               labels: dict[str, str]) -> str:
    """The verdict's stage over time: one coloured cell per run of ticks with the same stage
    (``data-t`` its first tick, ``data-ticks`` how many)."""
    x0, y0, w, h = _box()
    body = []
    tick_w = w * axis.tick_s / axis.span if axis.span > 0 else w
    i = 0
    while i < len(states):
        j = i
        while j + 1 < len(states) and states[j + 1] == states[i]:
            j += 1
        s, t, end = states[i], axis.t[i], axis.t[j]
        width = max(1.0, _x(axis, end) - _x(axis, t) + tick_w)
        body.append(f'<rect class="band" data-t="{t:.6g}" data-ticks="{j - i + 1}" data-state="{escape(s)}" '
                    f'x="{_x(axis, t):.2f}" y="{y0 + h * 0.3:.1f}" width="{width:.2f}" height="{h * 0.6:.1f}" '
                    f'fill="{colours.get(s, "#cccccc")}"><title>{t:.0f}-{end + axis.tick_s:.0f} s: '
                    f"{escape(labels.get(s, s))}</title></rect>")
        i = j + 1
    seen = list(dict.fromkeys(states))
    body.append(_legend([(labels.get(s, s), colours.get(s, "#cccccc")) for s in seen]))
    return _frame(chart, title, axis, 0.0, str, body)


def stacked_bars(chart: str, title: str, axis: Axis, keys: Sequence[tuple[str, str]],
                 counts: Sequence[dict[str, int] | None]) -> str:
    """Per tick, one bar split by ``keys`` ((key, label)); None: not read (no bar)."""
    x0, y0, w, h = _box()
    top = float(max((sum(c.values()) for c in counts if c), default=0) or 1)
    cell = max(1.0, w * axis.tick_s / axis.span * 0.8) if axis.span > 0 else w
    body = []
    for t, c in zip(axis.t, counts):
        if not c:
            continue
        base = 0
        for n, (key, _) in enumerate(keys):
            k = c.get(key, 0)
            if k:
                y = y0 + h * (1 - (base + k) / top)
                body.append(f'<rect class="bar" data-t="{t:.6g}" data-series="{escape(key)}" data-count="{k}" '
                            f'x="{_x(axis, t):.2f}" y="{y:.2f}" width="{cell:.2f}" height="{h * k / top:.2f}" '
                            f'fill="{PALETTE[n % len(PALETTE)]}"/>')
            base += k
    body.append(_legend([(label, PALETTE[n % len(PALETTE)]) for n, (_, label) in enumerate(keys)]))
    if not any(counts):
        body.append(_empty())
    return _frame(chart, title, axis, top, lambda v: f"{v:.0f}", body)


def _empty() -> str:
    x0, y0, w, h = _box()
    return (f'<text class="empty" x="{x0 + w / 2:.0f}" y="{y0 + h / 2:.0f}" text-anchor="middle" fill="#666">'
            "not read in this run (the full report below says why)</text>")


def _legend(items: Sequence[tuple[str, str]]) -> str:
    x0, y0, w, _ = _box()
    parts, x = [], x0 + 6
    for label, colour in items:
        parts.append(f'<rect x="{x:.0f}" y="{y0 - 15}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{x + 14:.0f}" y="{y0 - 6}">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    return '<g class="legend">' + "".join(parts) + "</g>"


def nice(v: float) -> float:
    """A round axis top at or above ``v``: 1, 2, 5 times a power of ten."""
    if v <= 0:
        return 1.0
    p = 1.0
    while p * 10 <= v:
        p *= 10
    while p > v:
        p /= 10
    for m in (1, 2, 5, 10):
        if m * p >= v:
            return m * p
    return 10 * p
