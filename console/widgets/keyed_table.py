"""A small table rebuilt on each refresh whose cursor stays on its row by key (a queue, a worker, a schedule).

These tables hold tens of rows, so a refresh replaces them all; the job tables, which hold hundreds and
refresh every second, update cell by cell instead (``widgets.jobs.table``).

``COLUMNS`` give each column's width on a 120-column terminal. A table that names a ``FLEX`` column fits
narrower ones (80 columns, the documented minimum): that column gives way down to ``FLEX_MIN``, then the
columns of ``GIVE_WAY`` are left out, in that order, and a cell wider than its column ends in "…". Review
finding: at 80 columns the Queues and Causes tables ran past the right edge, and the operator had to press →
to see the failed count or the cause.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

Columns = tuple[tuple[str, int], ...]


def fit_columns(
    columns: Columns,
    room: int,
    flex: str,
    flex_min: int,
    give_way: tuple[str, ...],
    pad: int,
    grow: str | None = None,
) -> Columns:
    """``columns`` (label, width) in ``room`` characters, each column ``pad`` wider than its text: ``flex``
    narrower, down to ``flex_min``, then without the columns of ``give_way``, first to last. If even that does
    not fit, ``flex`` keeps ``flex_min`` and the table scrolls. Room to spare goes to ``grow`` (``flex`` if
    None or not shown): on a wide terminal a long error, queue or schedule name is shown whole rather than cut
    at its 120-column width beside empty columns (review finding)."""
    shown = list(columns)
    full = dict(columns)[flex]
    for leaving in (None, *give_way):
        shown = [column for column in shown if column[0] != leaving]
        left = room - sum(width + pad for label, width in shown if label != flex) - pad
        if left >= flex_min:
            break
    widths = dict(shown)
    widths[flex] = min(full, max(left, flex_min))
    spare = room - sum(width + pad for width in widths.values())
    if spare > 0:
        grow = grow if grow in widths else flex
        widths[grow] += spare
    return tuple((label, widths[label]) for label, _ in shown)


class KeyedTable(DataTable):
    COLUMNS: Columns = ()
    FLEX: str | None = None  # the column that narrows to fit the terminal, or widens; None: COLUMNS as they are
    FLEX_MIN = 0
    GIVE_WAY: tuple[str, ...] = ()  # the columns left out, first to last, when FLEX at FLEX_MIN does not fit

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.shown_columns: Columns = ()
        self._rows: list[tuple[str, list]] = []

    def on_mount(self) -> None:
        self._lay_out(self.COLUMNS)

    def on_resize(self) -> None:
        if self.FLEX is None or not self.size.width:
            return
        room = self.size.width - self.styles.scrollbar_size_vertical  # kept free: a long table's scrollbar
        columns = fit_columns(self.COLUMNS, room, self.FLEX, self.FLEX_MIN, self.GIVE_WAY, 2 * self.cell_padding)
        if columns != self.shown_columns:
            cursor = self.selected_key, self.cursor_row  # clearing the columns moves the cursor to the top
            self._lay_out(columns)
            self.replace_rows(self._rows, cursor)

    def _lay_out(self, columns: Columns) -> None:
        self.clear(columns=True)
        for label, width in columns:
            self.add_column(label, key=label, width=width)
        self.shown_columns = columns

    def column_shown(self, label: str) -> bool:
        return any(shown == label for shown, _ in self.shown_columns)

    @property
    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def replace_rows(self, rows: list[tuple[str, list]], cursor: tuple[str | None, int] | None = None) -> None:
        """Show ``rows`` (key, a cell per label of ``COLUMNS``: text or Rich renderables, never markup) in the
        columns shown; the cursor (or ``cursor``: key, line) stays on its key, or on its line if that row left."""
        self._rows = rows
        selected, index = cursor or (self.selected_key, self.cursor_row)
        self.clear()
        places = {label: place for place, (label, _) in enumerate(self.COLUMNS)}
        for key, cells in rows:
            shown = [(cells[places[label]], width) for label, width in self.shown_columns]
            self.add_row(*(fit(cell, width if self.FLEX else None) for cell, width in shown), key=key)
        if self.row_count:
            keys = [key for key, _ in rows]
            row = keys.index(selected) if selected in keys else index
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)


def fit(cell, width: int | None):
    """``cell`` for a DataTable: a str as plain text (a DataTable reads a str cell as markup: a queue named
    "[/]oops", a valid name, crashed the console); with a ``width``, a text too wide ends in "…"."""
    if isinstance(cell, str):
        cell = Text(cell)
    if width is not None and isinstance(cell, Text) and cell.cell_len > width:
        cell = cell.copy()
        cell.truncate(width, overflow="ellipsis")
    return cell
