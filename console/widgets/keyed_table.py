"""A small table rebuilt on each refresh whose cursor stays on its row by key (a queue, a worker, a schedule).

These tables hold tens of rows, so a refresh replaces them all; the job tables, which hold hundreds and
refresh every second, update cell by cell instead (``widgets.jobs.table``).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable


class KeyedTable(DataTable):
    COLUMNS: tuple[tuple[str, int], ...] = ()

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)

    def on_mount(self) -> None:
        for label, width in self.COLUMNS:
            self.add_column(label, key=label, width=width)

    @property
    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def replace_rows(self, rows: list[tuple[str, list]]) -> None:
        """Show ``rows`` (key, cells: text or Rich renderables, never markup); the cursor stays on its key,
        or on its line if that row left."""
        selected, index = self.selected_key, self.cursor_row
        self.clear()
        for key, cells in rows:
            # A DataTable reads a str cell as markup: a queue named "[/]oops" (a valid name) crashed the console.
            self.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in cells), key=key)
        if self.row_count:
            keys = [key for key, _ in rows]
            row = keys.index(selected) if selected in keys else index
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)
