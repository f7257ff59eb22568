"""Per queue: paused or not, its jobs per status and its latency (how long its oldest due job has waited)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ...formatting import short_duration
from ...snapshot import Snapshot, format_count

STATUSES = ("pending", "running", "failed", "completed", "cancelled")
COLUMNS = (("queue", 22), ("state", 9), *((status, 10) for status in STATUSES), ("latency", 10))


class QueuesTable(DataTable):
    """Rows keyed by queue name, so a refresh keeps the cursor on its queue."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.states: dict[str, object] = {}

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, key=label, width=width)
        self.border_title = "Queues"

    @property
    def selected_queue(self):
        if not self.row_count:
            return None
        return self.states.get(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)

    def show(self, snapshot: Snapshot) -> None:
        states = snapshot.extra.get("queues")
        if states is None:
            return  # this refresh was read for another view
        selected = self.selected_queue
        index = self.cursor_row
        self.clear()
        self.states = {state.name: state for state in states}
        for state in states:
            paused = Text("paused", style="bold yellow") if state.paused else Text("active", style="green")
            counts = [format_count(state.counts.get(status, 0)) for status in STATUSES]
            latency = "" if state.latency is None else short_duration(state.latency)
            self.add_row(state.name, paused, *counts, latency, key=state.name)
        if self.row_count:
            row = self.get_row_index(selected.name) if selected and selected.name in self.states else index
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)
        paused = sum(state.paused for state in states)
        self.border_title = f"Queues [b]{len(states)}[/b]" + (f" · [bold yellow]{paused} paused[/]" if paused else "")
