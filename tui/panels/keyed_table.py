"""A table of rows keyed by string, drawn line by line from Segments: the processes table.

Textual's DataTable renders each cell through Rich (``console.render_lines(Styled(Padding(cell)))``):
redrawing one row of the processes table cost ~1.7 ms, several rows change on each tick, and that
was the largest single part of the TUI's CPU (the target is <= 5 % of one core in all). Here a line
is the cells' own segments, padded and cropped, in one Strip; an update repaints the lines whose
cells changed and nothing else. One line per row, no column cursor; the caller orders the rows
(sort, filter and tree are the processes panel's). A cell cut at its column's edge ends in "…".
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from gpuwatch.tui.panels.direct_repaint import DirectRepaint
from gpuwatch.tui.panels.steady import SteadyScrollBar


class KeyedTable(DirectRepaint, ScrollView, can_focus=True):
    """Columns of (key, label); a fixed bold header; rows by key in the order they came; a row cursor."""

    COMPONENT_CLASSES = {f"keyed-table--{name}" for name in ("header", "cursor", "even-row", "odd-row")}

    # DataTable's look (zebra_stripes=True, cursor_type="row"), in its theme variables.
    DEFAULT_CSS = """
    KeyedTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        overflow-x: hidden;
        &:focus {
            background-tint: $foreground 5%;
            & > .keyed-table--cursor {
                background: $block-cursor-background; color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .keyed-table--header { background-tint: $foreground 5%; }
        }
        & > .keyed-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .keyed-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .keyed-table--even-row { background: $surface-lighten-1 50%; }
        &:dark > .keyed-table--even-row { background: $surface-darken-1 40%; }
        & > .keyed-table--cursor {
            background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "move(0, -1)", "Page up", show=False),
        Binding("pagedown", "move(0, 1)", "Page down", show=False),
        Binding("home", "move_cursor(0)", "First", show=False),
        Binding("end", "move_cursor(-1)", "Last", show=False),
    ]

    def __init__(self, columns: Sequence[tuple[str, str]], *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._column_index = {key: i for i, (key, _) in enumerate(columns)}
        self._header = tuple(Text(label) for _, label in columns)
        self._widths = [label.cell_len for label in self._header]
        """Each column's widest cell (the header's included) so far, padding not counted."""
        self._rows: dict[str, tuple[Text, ...]] = {}
        self._keys: list[str] = []
        self._cursor = 0
        self.set_reactive(KeyedTable.virtual_size, Size(sum(self._widths) + 2 * len(columns), 1))
        self._styles: dict[str, Style] = {}
        """Component class -> its Rich style. Textual's own cache is emptied on every refresh, and
        filling it again cost ~0.3 ms a tick; this one lasts until the styles change."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's own (Widget.vertical_scrollbar, made on first use and started as the table's
        child), as a SteadyScrollBar."""
        bar = self._vertical_scrollbar
        if bar is None:
            bar = self._vertical_scrollbar = SteadyScrollBar(vertical=True, name="vertical",
                                                             thickness=self.scrollbar_size_vertical)
            bar.display = False
            self.app._start_widget(self, bar)
        return bar

    @property
    def row_keys(self) -> list[str]:
        return list(self._keys)

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self._cursor] if self._keys else None

    def get_cell(self, key: str, column_key: str) -> Text:
        return self._rows[key][self._column_index[column_key]]

    def set_header(self, labels: Sequence[str]) -> None:
        """New column labels (a sort mark): repaints the header line only, unless a column widens."""
        header = tuple(Text(label) for label in labels)
        if header == self._header:
            return
        self._header = header
        widths = [max(w, label.cell_len) for w, label in zip(self._widths, header)]
        if widths != self._widths:
            self._widths = widths
            self.virtual_size = Size(sum(widths) + 2 * len(widths), len(self._keys) + 1)
            self.refresh()
        else:
            self.refresh(Region(0, 0, self.size.width, 1))

    def set_rows(self, rows: dict[str, tuple[Text, ...]], ordered: bool = False) -> None:
        """Show ``rows`` (key -> one Text per column). ``ordered``: in ``rows``'s order; else known
        keys keep their place and new ones go last."""
        old, cursor_key = self._rows, self.cursor_key
        if ordered:
            new = dict(rows)
        else:
            new = {key: rows[key] for key in old if key in rows}
            new.update(rows)
        widths = [max(w, *(cells[i].cell_len for cells in rows.values())) for i, w in enumerate(self._widths)] \
            if rows else [label.cell_len for label in self._header]  # an empty table starts over
        changed = [i for i, (key, cells) in enumerate(new.items()) if old.get(key) != cells]
        self._rows, self._keys = new, list(new)
        if cursor_key in new:
            self._cursor = self._keys.index(cursor_key)
        self._cursor = max(0, min(self._cursor, len(new) - 1))
        if widths != self._widths or list(old) != self._keys:
            self._widths = widths
            self.virtual_size = Size(sum(widths) + 2 * len(widths), len(new) + 1)
            self.refresh()
            self._scroll_to_cursor()
        else:
            self._refresh_rows(*changed)

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row ``row`` (clamped; -1 is the last row) and scroll it into view."""
        row = max(0, min(row if row >= 0 else len(self._keys) + row, len(self._keys) - 1))
        if row != self._cursor:
            old, self._cursor = self._cursor, row
            self._refresh_rows(old, row)
        self._scroll_to_cursor()

    action_move_cursor = move_cursor

    def action_move(self, rows: int, pages: int = 0) -> None:
        self.move_cursor(max(0, self._cursor + rows + pages * max(1, self.size.height - 1)))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:
            self.move_cursor(offset.y - 1 + self.scroll_offset.y)

    def _refresh_rows(self, *rows: int) -> None:
        """Repaint the lines of ``rows`` that are in view, in one refresh: each refresh tells the
        screen on its own (and works the widget's size out again), and a tick changes several rows."""
        if not rows:
            return
        top, (width, height) = self.scroll_offset.y, self.size
        lines = [y for y in (i + 1 - top for i in rows) if 1 <= y < height]  # the header is line 0
        if lines:
            self.refresh(*(Region(0, y, width, 1) for y in lines))

    def _scroll_to_cursor(self) -> None:
        top, shown = self.scroll_offset.y, max(1, self.size.height - 1)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + shown:
            self.scroll_to(y=self._cursor - shown + 1, animate=False)

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"keyed-table--{name}")
        return style

    def render_line(self, y: int) -> Strip:
        get_style = self._style
        if y == 0:
            return self._line(self._header, get_style("header"))
        i = y - 1 + self.scroll_offset.y
        if i >= len(self._keys):
            return Strip.blank(self.scrollable_content_region.width, get_style("odd-row"))
        style = get_style("odd-row" if i % 2 else "even-row")
        if i != self._cursor:
            return self._line(self._rows[self._keys[i]], style)
        cursor = get_style("cursor")
        return self._line(self._rows[self._keys[i]], style + cursor, Style.from_color(cursor.color))

    def _line(self, cells: Sequence[Text], style: Style, post_style: Style | None = None) -> Strip:
        """The cells, one space either side, each as wide as its column; the last one takes the rest
        of the width left of the scrollbar (cut with "…").

        Cells without styles of their own (most) join one string in the line's style; a styled
        one is rendered by Rich, its styles between ``style`` and ``post_style``."""
        width, segments, x, run, last = self.scrollable_content_region.width, [], 0, "", len(cells) - 1
        for n, cell in enumerate(cells):
            inner, right = (self._widths[n], " ") if n < last else (max(0, width - x - 1), "")
            x += 1 + inner + len(right)
            cut = cell.cell_len > inner
            if not cell.spans and not cell.style:
                plain = set_cell_size(cell.plain, inner - 1) + "…" if cut and inner else cell.plain
                run += f" {set_cell_size(plain, inner)}{right}"
                continue
            if cut:
                cell = cell.copy()
                cell.truncate(inner, overflow="ellipsis")
            segments.append(Segment(run + " ", style))
            parts = Segment.adjust_line_length(list(cell.render(self.app.console)), inner)
            segments += Segment.apply_style(parts, style, post_style)
            run = right
        if run:
            segments.append(Segment(run, style))
        strip = Strip(segments, x)
        return strip if x == width else strip.adjust_cell_length(width, style)
