"""A DataTable whose cell updates repaint only the row they are in.

``DataTable.update_cell`` repaints the whole table: every line is drawn again, the header and
the blank lines below the last row included (some 40 lines on a 60-line terminal), although a
new value with the column width kept (``update_width=False``) can only change its own row.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey


class RowTable(DataTable):
    """:meth:`set_cell` changes a cell (if its value differs) and repaints its row only."""

    _row_to_repaint: int | None = None
    """Set while update_cell runs: the row its whole-table refresh is narrowed to."""

    def set_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: CellType) -> bool:
        """Put ``value`` in the cell, keeping the column width. Returns whether it changed."""
        if self.get_cell(row_key, column_key) == value:
            return False
        self._row_to_repaint = self.get_row_index(row_key)
        try:
            self.update_cell(row_key, column_key, value, update_width=False)
        finally:
            self._row_to_repaint = None
        return True

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> RowTable:
        row = self._row_to_repaint
        if row is not None and not regions and repaint and not layout and not recompose:
            # update_cell's plain refresh(): the same, for the row's region only.
            self._row_to_repaint = None
            self.refresh_row(row)  # calls refresh(region), visible rows only
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
