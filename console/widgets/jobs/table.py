"""A live table of the jobs in one status, updated in place by row key so the cursor stays on its job."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from queue_core.store.models import priority_label

from ...formatting import one_line, short_duration, since
from ...snapshot import Snapshot
from ..keyed_table import Columns, fit, fit_columns

# (key, label, width) on a 120-column terminal.
COLUMNS = (
    ("id", "id", 6),
    ("type", "type", 16),
    ("queue", "queue", 10),
    ("priority", "priority", 8),
    ("retries", "retries", 7),
    ("time", "", 11),
    ("worker", "worker", 14),
    ("error", "latest error", 24),
)
ERROR_CHARS = 500  # of a job's latest error, on one line: more than the widest error column shows
WIDTHS: Columns = tuple((key, width) for key, _, width in COLUMNS)
PLACES = {key: place for place, (key, _, _) in enumerate(COLUMNS)}
LABELS = {key: label for key, label, _ in COLUMNS}
# At 80 columns (the documented minimum) the eight columns need 112: in each state's table the column that
# matters most there narrows (down to its minimum), then the columns that say least there give way, first to
# last (``keyed_table.fit_columns``). Review finding: at 80 columns every table cut the worker column and hid
# the latest error, the one thing the Failed table is for. (flex, its minimum, give way)
FITS = {
    "pending": ("type", 10, ("worker", "error", "retries")),
    "scheduled": ("type", 10, ("worker", "error", "retries")),
    "running": ("type", 10, ("error", "retries", "priority")),
    "completed": ("type", 10, ("error", "retries", "priority")),
    "failed": ("error", 20, ("worker", "priority", "queue")),
    "cancelled": ("error", 20, ("worker", "priority", "queue")),
}
TIME_LABELS = {
    "pending": "age / due",
    "running": "running",
    "failed": "failed",
    "scheduled": "due",
    "completed": "finished",
    "cancelled": "cancelled",
}
PRIORITY_STYLES = {"critical": "bold red", "high": "yellow", "medium": "", "low": "dim"}
STALE_STYLE = "bold red"
STALE_MARKER = "⚠"
SELECTED_STYLE = "bold black on yellow"  # the operator's selection (space, a)

Cell = tuple[str, str]  # (text, style): compared between refreshes to update only what changed


class JobTable(DataTable):
    """Jobs of one status in operator order; ``show(snapshot)`` brings it up to date without a clear()."""

    def __init__(self, status: str, title: str, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.status = status
        self.title = title
        self.border_title = title
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self.shown_columns: Columns = ()
        self.marked: frozenset[int] = frozenset()  # the operator's selection (console.selection)
        # As wide as the longest id shown so far (never narrower than COLUMNS says): a queue past a million
        # jobs has seven-digit ids, which a 6-wide column cut to "10000…" (review finding).
        self.id_width = WIDTHS[0][1]

    def mark(self, marked: frozenset[int], snapshot: Snapshot | None) -> None:
        """Show ``marked`` as selected: their id in reverse."""
        self.marked = marked
        if snapshot is not None:
            self.show(snapshot)

    @property
    def widths(self) -> Columns:
        return tuple((key, self.id_width if key == "id" else width) for key, width in WIDTHS)

    def on_mount(self) -> None:
        self._lay_out(self.widths)
        self.show_cursor = self.has_focus

    def on_resize(self) -> None:
        self._fit()

    def _fit(self, *, again: bool = False) -> None:
        """The columns fitted to the room, the rows laid out again if they changed (or ``again``)."""
        if self.size.width:
            flex, flex_min, give_way = FITS[self.status]
            room = self.size.width - self.styles.scrollbar_size_vertical  # kept free: a long table's scrollbar
            columns = fit_columns(self.widths, room, flex, flex_min, give_way, 2 * self.cell_padding, grow="error")
        elif again:
            columns = self.widths  # another view's table: fitted to the room when it is shown
        else:
            return  # another view's table, laid out when it is shown
        if again or columns != self.shown_columns:
            selected, index = self.selected_job_id, self.cursor_row  # clearing the columns moves the cursor
            order = [row.key.value for row in self.ordered_rows]
            self._lay_out(columns)
            for key in order:
                self._add_row(key, self._cells[key])
            self._keep_cursor(selected, index)

    def _lay_out(self, columns: Columns) -> None:
        self.clear(columns=True)
        for key, width in columns:
            self.add_column(LABELS[key] or TIME_LABELS[self.status], key=key, width=width)
        self.shown_columns = columns

    def _add_row(self, key: str, cells: tuple[Cell, ...]) -> None:
        self.add_row(*(self._cell(cell, column) for cell, column in self._shown(cells)), key=key)

    def _shown(self, cells: tuple[Cell, ...]):
        """(cell, (key, width)) for each column shown."""
        return ((cells[PLACES[key]], (key, width)) for key, width in self.shown_columns)

    @staticmethod
    def _cell(cell: Cell, column: tuple[str, int]) -> Text:
        text, style = cell
        return fit(Text(text, style=style), column[1])  # too wide for its column: ends in "…"

    # Only the focused table shows its cursor: the operator sees at once which job r, f and enter act on.
    def on_focus(self) -> None:
        self.show_cursor = True

    def on_blur(self) -> None:
        self.show_cursor = False

    @property
    def frame_height(self) -> int:
        """Lines around the rows: the border (below 26 rows, its top only: console.tcss) and the header."""
        return self.styles.gutter.height + 1

    @property
    def wanted_height(self) -> int:
        """Lines to show every row: the border, the header and the rows (at least one, for "empty")."""
        return self.frame_height + max(1, self.row_count)

    @property
    def selected_job_id(self) -> int | None:
        if not self.row_count:
            return None
        row_key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return int(row_key.value)

    def show(self, snapshot: Snapshot) -> None:
        """Bring the rows up to date: remove the jobs that left, update changed cells, add new jobs, re-order."""
        jobs = snapshot.rows.get(self.status)
        if jobs is None:
            return  # this refresh was read for another view: keep the rows until one is read for this table
        wanted = {str(job.id): self.cells(job, snapshot) for job in jobs}
        widest = max(map(len, wanted), default=0)
        if widest > self.id_width:
            self.id_width = widest
            self._fit(again=True)
        selected = self.selected_job_id
        selected_index = self.cursor_row
        for key in [key for key in self._cells if key not in wanted]:
            self.remove_row(key)
            del self._cells[key]
        for key, cells in wanted.items():
            old = self._cells.get(key)
            if old is None:
                self._add_row(key, cells)
            else:
                for (after, column), (before, _) in zip(self._shown(cells), self._shown(old), strict=True):
                    if before != after:
                        self.update_cell(key, column[0], self._cell(after, column))
            self._cells[key] = cells
        order = {key: index for index, key in enumerate(wanted)}
        if [row.key.value for row in self.ordered_rows] != list(order):
            self.sort("id", key=lambda cell: order[cell.plain])
        self._keep_cursor(selected, selected_index)
        self.border_title = self.title_text(snapshot)

    def _keep_cursor(self, job_id: int | None, index: int) -> None:
        """Keep the cursor on the same job; if it left this table, on the row that took its place."""
        if not self.row_count:
            return
        key = str(job_id)
        row = self.get_row_index(key) if job_id is not None and key in self._cells else min(index, self.row_count - 1)
        if row != self.cursor_row:
            self.move_cursor(row=row, animate=False)

    def title_text(self, snapshot: Snapshot) -> str:
        title = f"{self.title} [b]{snapshot.shown_text(self.status)}[/b]"
        if self.status == "running" and snapshot.stale_count:
            title += f"  [bold red]{STALE_MARKER} {snapshot.stale_count:,} stale[/]"
        return title

    def cells(self, job, snapshot: Snapshot) -> tuple[Cell, ...]:
        stale = job.id in snapshot.stale_ids
        base = STALE_STYLE if stale else ""
        label = priority_label(job.priority)
        return (
            (str(job.id), f"{base} {SELECTED_STYLE}".strip() if job.id in self.marked else base),
            (job.type, base),
            (job.queue, base or "dim"),
            (label, base or PRIORITY_STYLES[label]),
            (f"{job.retry_count}/{job.max_retries}", base),
            self.time_cell(job, snapshot, stale),
            (job.worker_id or "", base),
            # Cut to the column's width when shown ("…"): as wide as a wide terminal makes it.
            (one_line(job.error, ERROR_CHARS), base or "dim"),
        )

    def time_cell(self, job, snapshot: Snapshot, stale: bool) -> Cell:
        now = snapshot.now
        if self.status in ("pending", "scheduled"):
            if job.run_at > now:
                return f"in {short_duration((job.run_at - now).total_seconds())}", "cyan"
            return since(job.created_at, now), ""
        if self.status == "running":
            running_for = since(job.claimed_at, now)
            if job.cancel_requested_at is not None:  # asked to stop; its worker sees it at its next heartbeat
                return f"⊘ {running_for}", "magenta"
            return (f"{STALE_MARKER} {running_for}", STALE_STYLE) if stale else (running_for, "")
        return f"{since(job.updated_at, now)} ago", ""
