"""A time chart: plots on one time axis, newest at the right edge, with the verdict's stage as a
band under them (tui/chart_draw.py draws it). It fills its width; its height decides how many of
the plots show and how tall (the first ones first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from gpuwatch.model.verdict import STAGES
from gpuwatch.model.frame import Frame
from gpuwatch.tui.chart_draw import OVERLAP, SERIES, Plot, SpanCache, band_component, chart_lines, frames_span
from gpuwatch.tui.panels.parts_widget import Part, PartsWidget

_BAND_COLOURS = {
    "io": "$warning", "decode": "$accent", "h2d": "$secondary", "gpu_memory": "$primary",
    "launch": "$error", "contention": "$foreground-darken-1", "gpu_bound": "$success",
    "cpu_bound": "$success-darken-2",
    "idle": "$panel-lighten-2", "unknown": "$panel-lighten-1",
}
"""Each verdict's colour on the band (under NO_COLOR the band's marks and names tell them apart)."""


class TimeChart(PartsWidget):
    """Plots over the same window of ticks, and the verdicts' band."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *SERIES, OVERLAP, "time-chart--title", "time-chart--muted",
        *(c for c in (band_component(s) for s in STAGES) if c),
    }
    DEFAULT_CSS = """
    TimeChart { height: 6; width: 1fr; }
    TimeChart > .time-chart--title { color: $text-muted; }
    TimeChart > .time-chart--muted { color: $text-muted; }
    TimeChart > .time-chart--s0 { color: $primary-lighten-1; }
    TimeChart > .time-chart--s1 { color: $success; }
    TimeChart > .time-chart--s2 { color: $warning; }
    TimeChart > .time-chart--overlap { color: $text; }
    """ + "\n".join(f"    TimeChart > .time-chart--band-{s} {{ background: {c} 35%; color: $text; }}"
                    for s, c in _BAND_COLOURS.items())

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._plots: tuple[Plot, ...] = ()
        self._stages: tuple[str | None, ...] = ()
        self._span_s: float | None = None
        self._spans = SpanCache()

    def set_data(self, plots: Sequence[Plot], stages: Sequence[str | None], frames: Sequence[Frame] = ()) -> None:
        """New values (one per tick in each series, and the verdict's stage per tick, aligned);
        ``frames``: the ticks they come from, whose time span the titles say."""
        plots, stages = tuple(plots), tuple(stages)
        span_s = frames_span(frames[0].t, frames[-1].t, frames[-1].interval) if frames else None
        if plots == self._plots and stages == self._stages and span_s == self._span_s:  # no new frame
            return
        self._plots, self._stages, self._span_s = plots, stages, span_s
        self.redraw()

    def _parts(self) -> list[list[Part]]:
        return chart_lines(self._plots, self._stages, self.size.width, self.size.height, self._spans, self._span_s)
