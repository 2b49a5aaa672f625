"""A widget drawn from runs of text, each with a component class: the metric rows and the charts.

It draws its lines as strips (Textual's line API) and skips Textual's per-line styling pass where
that pass has nothing to add; both repaint every tick, and that pass was the largest part of the
TUI's drawing. Subclasses say what to draw in :meth:`_parts` and call :meth:`redraw` when it changed.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.color import Color
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.widget import Widget

from gpuwatch.tui.panels.direct_repaint import DirectRepaint

Part = tuple[str, "str | None"]
"""A run of text and its component class, None for the widget's own style."""


class PartsWidget(DirectRepaint, Widget):
    """Lines of :data:`Part` runs, drawn without Textual's per-segment styling work."""

    ALLOW_SELECT = False
    """Mouse selection needs each run's style to carry its cell offset, and a style per offset is
    unique: Textual's style caches then miss on every segment of every line, every tick. Without
    offsets the whole screen's redraw cost ~20 % less (replaying the H200 recording at 200x60 on
    the CPU box: 24.8 -> 18-20 ms a tick). Bars, plots and charts are not text to copy; the values
    are in ``--json``."""

    OWN_PADDING = False
    """True: padding at the sides is drawn here too (checked against Textual's pass for one line of
    one style only: tests/test_metric_row.py); else a padded widget is drawn by Textual's pass."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
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
        self._drawn: dict[tuple, Strip] = {}
        """The lines as shown last time, by their runs and width: a line whose runs did not change
        (a metric row with the same reading, a chart's title) is not built again. Holds only the
        last draw's lines; emptied with the styles and the filters."""
        self._shape: tuple[bool, Color, int, int, RichStyle] | None = None
        """(True: drawn through Textual's own path, the background beneath the runs, the padding left
        and right and its style), worked out once per style update (see :meth:`render_lines`); None:
        work it out again."""
        super().__init__(id=id, classes=classes)

    def _parts(self) -> list[list[Part]]:
        """The lines to draw at the widget's current size."""
        raise NotImplementedError

    def redraw(self) -> None:
        """What :meth:`_parts` returns changed: draw again."""
        self._lines = self._final = None
        self.refresh()

    def _style(self, component: str | None) -> VisualStyle:
        """The style of a ``component`` run (None: the widget's own), worked out as Textual does for
        a span of rendered text, and kept across ticks: working a component style out walks all the
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
        self._drawn = {}
        self._lines = self._final = None
        self._shape = None

    def render(self) -> Text:
        """The lines as Text (what Textual measures; the screen is drawn by :meth:`render_line`)."""
        text = Text(no_wrap=True, overflow="crop", end="")
        for y, parts in enumerate(self._parts()):
            if y:
                text.append("\n")
            for run, component in parts:
                text.append(run, None if component is None else self.get_component_rich_style(component))
        return text

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines as drawn, without Textual's per-line styling pass where it has nothing to add:
        a widget without border, padding above or below, tint, hatch or transparency draws exactly the
        strips of :meth:`render_line` (they carry the styles, background included) between blanks for
        the padding at its sides, so only the app's line filters (truecolor conversion, NO_COLOR,
        dimming) and the crop are left to apply.

        The filters are applied to the half-dozen run styles once (:meth:`_shown_style`), not to
        every segment of every line each tick: Textual's line filters map each segment's style and
        leave its text alone, so filtering the style first draws the same segments (tests/test_metric_row.py
        compares the two paths, NO_COLOR included)."""
        shape = self._shape
        if shape is None:
            # Both walk the styles (the background and opacity: of every ancestor too), and both
            # change only through the stylesheet, which calls notify_style_update on the widget and
            # all its descendants; worked out each tick they were a third of the metric rows' drawing.
            styles = self.styles
            pad = styles.padding
            own_path = bool(styles.border.spacing or styles.outline.spacing
                            or (pad and not self.OWN_PADDING) or pad.top or pad.bottom
                            or styles.tint.a or self.opacity != 1.0 or styles.text_opacity != 1.0
                            or styles.has_rule("hatch"))
            base_background, background = self.background_colors
            # Padding at the sides as Textual's pass draws it: blanks in the background alone.
            pad_style = VisualStyle(background=base_background + background).rich_style
            shape = self._shape = (own_path, background, pad.left, pad.right, pad_style)
        own_path, background, pad_left, pad_right, pad_style = shape
        if own_path:
            return super().render_lines(crop)
        size = self.size
        key = (tuple(self.get_line_filters()), background)
        if key != self._filter_key:  # NO_COLOR toggled, ANSI colours switched, a new background
            self._filter_key = key
            self._filtered.clear()
            self._drawn = {}
            self._final = None
        width = size.width
        blank = self._shown_style(None)
        if self._final is None or self._final_size != size:
            drawn, self._drawn = self._drawn, {}
            final = []
            for parts in self._parts():
                key = (width, *parts)
                strip = drawn.get(key)
                if strip is None:
                    if pad_left or pad_right:  # the text's own line filled out with the padding's blanks, as Textual does
                        shown_pad = self._filtered_style(pad_style)
                        strip = Strip.join([Strip.blank(pad_left, shown_pad),
                                            self._strip(parts, width, self._shown_style).adjust_cell_length(width, shown_pad),
                                            Strip.blank(pad_right, shown_pad)])
                    else:
                        strip = self._strip(parts, width, self._shown_style).adjust_cell_length(width, blank)
                self._drawn[key] = strip
                final.append(strip)
            self._final = final
            self._final_size = size
        outer = width + pad_left + pad_right
        if pad_left or pad_right:
            blank = self._filtered_style(pad_style)  # a line below the text: padding and blank content alike
        strips = [self._final[y] if y < len(self._final) else Strip.blank(outer, blank)
                  for y in crop.line_range]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, outer):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _shown_style(self, component: str | None) -> RichStyle:
        """A run's style with the app's line filters applied, as they would apply to its segment."""
        style = self._filtered.get(component)
        if style is None:
            style = self._filtered[component] = self._filtered_style(self._style(component).rich_style)
        return style

    def _filtered_style(self, style: RichStyle) -> RichStyle:
        """``style`` with the app's line filters applied, as they would apply to a segment of it."""
        filters, background = self._filter_key or ((), None)
        strip = Strip([Segment(" ", style)])
        for line_filter in filters:
            strip = strip.apply_filter(line_filter, background)
        return next(iter(strip)).style or RichStyle()

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
