"""The running jobs one worker holds (enter on the workers view)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..formatting import since
from .dialog import Dialog


class WorkerJobsScreen(Dialog):
    BINDINGS: ClassVar[list[Binding]] = [Binding("escape,q", "close", "Close", id="close-worker-jobs")]

    def __init__(self, worker_id: str, rows: list, now) -> None:
        super().__init__()
        self.worker_id = worker_id
        self.rows = rows
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="worker-jobs"):
            yield Static(Text(f"Jobs held by {self.worker_id}: {len(self.rows)}"), classes="dialog-title")
            table = DataTable(cursor_type="row", zebra_stripes=True, id="held")
            for label, width in (("id", 8), ("type", 20), ("queue", 12), ("attempt", 8), ("running", 10)):
                table.add_column(label, key=label, width=width)
            for row in self.rows:
                cells = (str(row.id), row.type, row.queue, str(row.attempt), since(row.claimed_at, self.now))
                table.add_row(*(Text(cell) for cell in cells), key=str(row.id))
            yield table
            yield Static("[dim]escape[/] close", classes="hint")

    def action_close(self) -> None:
        self.answer(None)
