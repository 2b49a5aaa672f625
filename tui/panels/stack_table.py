"""A table of hot frames (py-spy top style), updated by key so it never flickers or jumps."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets.data_table import ColumnKey

from gpuwatch.model.stacks import ThreadStack
from gpuwatch.tui.format import fit_frame
from gpuwatch.tui.hot import hot_frames
from gpuwatch.tui.panels.row_table import RowTable


class StackTable(RowTable):
    """``%Own  %Total  function (file:line)`` for a set of thread samples."""

    def __init__(self, limit: int = 8, id: str | None = None) -> None:
        super().__init__(cursor_type="none", zebra_stripes=True, id=id, classes="stack-table")
        self.limit = limit

    def on_mount(self) -> None:
        # Screens draw only once composed (WatchScreen.composed), so show() comes after this.
        self.add_column("%Own", key="own")
        self.add_column("%Total", key="total")
        self.add_column("Frame", key="frame")

    def on_resize(self) -> None:
        self._fit_frames()

    def _fit_frames(self) -> None:
        """The Frame column takes the width the numbers leave, and a frame longer than that ends
        in "…" (no_wrap, ellipsis: set on each cell): an auto-width column ran past the screen's
        edge, cut there with no mark, and the table scrolled sideways."""
        frame = self.columns.get(ColumnKey("frame"))
        if frame is None:
            return
        numbers = sum(self.columns[ColumnKey(k)].get_render_width(self) for k in ("own", "total"))
        width = max(frame.label.cell_len, self.scrollable_content_region.width - numbers - 2 * self.cell_padding)
        if frame.auto_width or frame.width != width:
            frame.auto_width, frame.width = False, width
            for row in list(self.rows):  # each row's key is its frame's whole text: fitted to the new width
                self.set_cell(row, "frame", Text(fit_frame(str(row.value), width), no_wrap=True, overflow="ellipsis"))
            self._require_update_dimensions = True
            self.refresh()

    def show(self, stacks: Sequence[ThreadStack]) -> None:
        n = len(stacks)
        hot = hot_frames(stacks, self.limit) if n else []
        # Fixed-width strings: they print as py-spy does and sort right as text.
        # The frame as Text: DataTable reads a str as markup, and frames may hold [brackets].
        column = self.columns.get(ColumnKey("frame"))
        width = None if column is None or column.auto_width else column.width
        rows = {h.frame: (f"{100 * h.own / n:5.1f}", f"{100 * h.total / n:5.1f}",
                          Text(fit_frame(h.frame, width), no_wrap=True, overflow="ellipsis")) for h in hot}
        for key in [k.value for k in self.rows if k.value not in rows]:
            self.remove_row(key)
        for key, cells in rows.items():
            if key in self.rows:
                self.set_cell(key, "own", cells[0])
                self.set_cell(key, "total", cells[1])
                self.set_cell(key, "frame", cells[2])  # fitted again: the column's width may have changed
            else:
                self.add_row(*cells, key=key)
        # The order sort() gives (stable, in the order rows were added), sorting only when it differs.
        order = sorted((k.value for k in self.rows), key=lambda k: rows[k][:2], reverse=True)
        if order != [r.key.value for r in self.ordered_rows]:
            self.sort("own", "total", reverse=True)
