"""One GPU metric: label, bar, value and a history plot on a fixed scale."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.widget import Widget

from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.metric_parts import Part, metric_parts

LABEL_W = 9


class MetricRow(Widget):
    """Draws ``label ▕████▍   ▏ value  ▁▂▃▅▇`` (:func:`metric_parts`); taller rows get a taller plot."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-row--label",
        "metric-row--bar",
        "metric-row--bar-empty",
        "metric-row--value",
        "metric-row--plot",
        "metric-row--na",
    }
    DEFAULT_CSS = """
    MetricRow { height: 1; width: 1fr; }
    """
    ALLOW_SELECT = False
    """Mouse selection needs each run's style to carry its cell offset, and a style per offset is
    unique: Textual's style caches then miss on every segment of every row, every tick. Without
    offsets the whole screen's redraw cost ~20 % less (replaying the H200 recording at 200x60 on
    the CPU box: 24.8 -> 18-20 ms a tick). A bar and a plot are not text to copy; the values are in
    ``--json``."""

    def __init__(self, label: str, about: str, id: str | None = None, label_width: int = LABEL_W) -> None:
        self._styles: dict[str | None, VisualStyle] = {}
        """Run styles by component class, kept across repaints (see :meth:`_style`)."""
        self._lines: list[Strip] | None = None
        """The lines drawn for the size in ``_lines_size``; None: draw again."""
        self._lines_size = Size(0, 0)
        self._filtered: dict[str | None, RichStyle] = {}
        """Run styles with the app's line filters applied, for ``_filter_key`` (see :meth:`render_lines`)."""
        self._filter_key: tuple | None = None
        self._final: list[Strip] | None = None
        """The lines as shown (filters applied) for ``_final_size``; None: draw again."""
        self._final_size = Size(0, 0)
        super().__init__(id=id)
        self.label = label
        self.label_width = label_width
        self.about = about
        self.value_text = fmt.NA
        self.fraction: float | None = None
        self.values: list[float | None] = []
        self.top = 100.0
        self.na_reason: str | None = None
        self.tooltip = about
        self._reading: tuple | None = None
        """set_data's arguments last time."""

    def set_data(
        self,
        value_text: str,
        fraction: float | None,
        values: Sequence[float | None],
        top: float | None,
        na_reason: str | None,
    ) -> None:
        """New reading. ``top`` None scales the plot to the largest value in the history."""
        reading = (value_text, fraction, tuple(values), top, na_reason)
        if reading == self._reading:  # a redraw without a new frame (pause, key, screen resume)
            return
        self._reading = reading
        self.value_text = value_text
        self.fraction = fraction
        self.values = list(values)
        seen = [v for v in self.values if v is not None]
        self.top = top if top else max(max(seen, default=0.0), 1.0)
        if fraction is None and top is None and na_reason is None and self.values and self.values[-1] is not None:
            self.fraction = self.values[-1] / self.top  # no natural full scale: relative to the history
        if na_reason != self.na_reason:
            self.na_reason = na_reason
            self.tooltip = f"{self.about}\nN/A: {na_reason}" if na_reason else self.about
            self.set_class(na_reason is not None, "-na")
        self._lines = self._final = None
        self.refresh()

    def _style(self, component: str | None) -> VisualStyle:
        """The style of a ``component`` run (None: the row's own), worked out as Textual does for a
        span of rendered text, and kept across ticks: working a component style out walks all the
        ancestors, and Textual drops its own copy on every ``refresh()`` (a tenth of the TUI's CPU
        with ten rows). Styles change only through the stylesheet (classes, theme, hover), which
        calls :meth:`notify_style_update`."""
        style = self._styles.get(component)
        if style is None:
            base = self.visual_style
            span = base
            if component is not None:
                rich = self.get_component_rich_style(component)
                span = VisualStyle.combine([base, VisualStyle.from_rich_style(rich, self.app.ansi_theme)])
            style = self._styles[component] = base + span
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._filtered.clear()
        self._lines = self._final = None

    def _parts(self) -> list[list[Part]]:
        na = self.na_reason is not None
        return metric_parts(self.label, self.label_width, self.value_text, self.fraction, self.values,
                            self.top, na, self.size.width, self.size.height)

    def render(self) -> Text:
        """The row as Text (what Textual measures; the screen is drawn by :meth:`render_line`)."""
        text = Text(no_wrap=True, overflow="crop", end="")
        for y, parts in enumerate(self._parts()):
            if y:
                text.append("\n")
            for run, component in parts:
                text.append(run, None if component is None else self.get_component_rich_style(component))
        return text

    def render_lines(self, crop: Region) -> list[Strip]:
        """The row's lines as drawn, without Textual's per-line styling pass where it has nothing
        to add: a row without border, padding, tint, hatch or transparency draws exactly the strips
        of :meth:`render_line` (they carry the row's styles, background included), so only the app's
        line filters (truecolor conversion, NO_COLOR, dimming) and the crop are left to apply. The
        ten rows repaint every tick: that pass was the largest part of the TUI's drawing.

        The filters are applied to the half-dozen run styles once (:meth:`_shown_style`), not to
        every segment of every line each tick: Textual's line filters map each segment's style and
        leave its text alone, so filtering the style first draws the same segments (tests/test_metric_row.py
        compares the two paths, NO_COLOR included)."""
        styles = self.styles
        if (styles.border.spacing or styles.padding or styles.outline.spacing or styles.tint.a
                or self.opacity != 1.0 or styles.text_opacity != 1.0 or styles.has_rule("hatch")):
            return super().render_lines(crop)
        size = self.size
        _, background = self.background_colors
        key = (tuple(self.get_line_filters()), background)
        if key != self._filter_key:  # NO_COLOR toggled, ANSI colours switched, a new background
            self._filter_key = key
            self._filtered.clear()
            self._final = None
        if self._final is None or self._final_size != size:
            self._final = [self._strip(parts, size.width, self._shown_style) for parts in self._parts()]
            self._final_size = size
        blank = self._shown_style(None)
        width = size.width
        strips = [self._final[y] if y < len(self._final) else Strip.blank(width, blank)
                  for y in crop.line_range]
        strips = [s.adjust_cell_length(width, blank) for s in strips]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _shown_style(self, component: str | None) -> RichStyle:
        """A run's style with the app's line filters applied, as they would apply to its segment."""
        style = self._filtered.get(component)
        if style is None:
            filters, background = self._filter_key or ((), None)
            strip = Strip([Segment(" ", self._style(component).rich_style)])
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            style = self._filtered[component] = next(iter(strip)).style or RichStyle()
        return style

    def render_line(self, y: int) -> Strip:
        # Drawn as strips (Textual's line API) rather than through render(): a Text goes through
        # Content, wrapping and styling each tick, for lines that are exactly the width anyway.
        size = self.size
        if self._lines is None or self._lines_size != size:
            self._lines = [self._strip(parts, size.width, self._rich_style) for parts in self._parts()]
            self._lines_size = size
        if y < len(self._lines):
            return self._lines[y]
        return Strip.blank(size.width, self._style(None).rich_style)

    def _rich_style(self, component: str | None) -> RichStyle:
        return self._style(component).rich_style

    def _strip(self, parts: list[Part], width: int, style_of: Callable[[str | None], RichStyle]) -> Strip:
        strip = Strip([Segment(run, style_of(component)) for run, component in parts if run])
        return strip.crop(0, width) if strip.cell_length > width else strip
