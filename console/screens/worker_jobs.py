"""The running jobs one worker holds (enter on the workers view).

While open, the app's refresh cycle reads them again (``reread``), so jobs the worker finishes leave the list
and jobs it claims join it, the cursor staying on its job; a read that fails keeps the list and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static

from queue_core.store.overview import held_by

from ..detail_text import stale_text
from ..formatting import since
from .detail import JobDetailScreen
from .dialog import Dialog

HINT = "[dim]enter[/] the job's detail   [dim]escape[/] close"


def read_held(repo, worker_id: str) -> tuple[list, object]:
    """On a thread: the running jobs ``worker_id`` holds, and the queue's time they were read at."""
    with repo.db.connection_context():
        return held_by(repo, worker_id), repo.now()


@dataclass(eq=False)
class HeldJobsRead(Message):
    rows: list | None  # None: the read failed
    now: object = None
    error: str | None = None


class WorkerJobsScreen(Dialog):
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape,q", "close", "Close", id="close-worker-jobs", tooltip="close the list")
    ]

    def __init__(self, worker_id: str, rows: list, now, repo) -> None:
        super().__init__()
        self.worker_id = worker_id
        self.rows = rows
        self.now = now  # the queue's time the rows were read at
        self.repo = repo
        self._reading = False  # a read is on its way: the app's next refresh does not start another

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="worker-jobs"):
            yield Static(self.title_text(), classes="dialog-title", id="held-title")
            table = DataTable(cursor_type="row", zebra_stripes=True, id="held")
            for label, width in (("id", 8), ("type", 20), ("queue", 12), ("attempt", 8), ("running", 10)):
                table.add_column(label, key=label, width=width)
            self.fill(table)
            yield table
            yield Static(HINT, classes="hint", id="held-hint")

    def title_text(self) -> Text:
        return Text(f"Jobs held by {self.worker_id}: {len(self.rows)}")

    def fill(self, table: DataTable) -> None:
        for row in self.rows:
            cells = (str(row.id), row.type, row.queue, str(row.attempt), since(row.claimed_at, self.now))
            table.add_row(*(Text(cell) for cell in cells), key=str(row.id))

    # --- read again on the app's refresh cycle (QueueConsole.request_refresh) ---------------------------

    def reread(self) -> None:
        if self._reading or self.answered:
            return
        self._reading = True
        self._read_held()

    @work(thread=True, exit_on_error=False, group="worker-jobs-refresh")
    def _read_held(self) -> None:
        try:
            rows, now = read_held(self.repo, self.worker_id)
        except Exception as exc:  # the database is gone or locked: keep the list, say it is not current
            self.post_message(HeldJobsRead(None, error=f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(HeldJobsRead(rows, now))

    def on_held_jobs_read(self, message: HeldJobsRead) -> None:
        self._reading = False
        hint = self.query_one("#held-hint", Static)
        if message.rows is None:
            hint.update(Content.assemble(stale_text(message.error, self.now), "   ", Content.from_markup(HINT)))
            return
        self.rows, self.now = message.rows, message.now
        table = self.query_one("#held", DataTable)
        keep = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value if table.row_count else None
        table.clear()
        self.fill(table)
        if keep is not None and keep in {str(row.id) for row in self.rows}:
            table.move_cursor(row=table.get_row_index(keep))
        self.query_one("#held-title", Static).update(self.title_text())
        hint.update(Content.from_markup(HINT))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter (or a click) on a job opens its detail, as enter does on every jobs table: it did nothing."""
        event.stop()  # the app's handler would take it for enter on the workers view
        self.app.push_screen(JobDetailScreen(self.repo, int(event.row_key.value)))

    def action_close(self) -> None:
        self.answer(None)
