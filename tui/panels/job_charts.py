"""The main screen's time charts, full width: GPU util (NVML), SM active and memory; the main thread's input time and
worker CPU; PCIe RX and TX; the verdict's stage along the time axis."""

from __future__ import annotations

from gpuwatch.tui.chart_draw import ticks_span
from gpuwatch.tui.chart_series import ChartSeries, stages
from gpuwatch.tui.panels.chart import TimeChart
from gpuwatch.tui.view import View


class JobCharts(TimeChart):
    """Draws the job's history from each view; the terminal's height decides how many plots show."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._series = ChartSeries()

    def show(self, view: View) -> None:
        width = self.size.width or self.app.size.width  # before the first layout: the terminal's
        n = ticks_span(width)
        frames = view.frames[-n:]
        self.set_data(self._series.plots(frames), stages(view.verdicts[-n:]), frames)
