"""Per queue: paused or not, its jobs per status, its latency (how long its oldest due job has waited), and
its jobs done and attempts failed per minute over the last few minutes."""

from __future__ import annotations

from rich.text import Text

from ...formatting import short_duration
from ...snapshot import NOT_NARROWED, Snapshot, format_count
from ..keyed_table import KeyedTable

STATUSES = ("pending", "running", "failed", "completed", "cancelled")
# Fits 120 columns: done and failed are per minute over the last five minutes.
COLUMNS = (
    ("queue", 16),
    ("state", 8),
    *((status, 9) for status in STATUSES),
    ("latency", 8),
    ("done/m", 7),
    ("fail/m", 7),
)


class QueuesTable(KeyedTable):
    """Rows keyed by queue name, so a refresh keeps the cursor on its queue."""

    COLUMNS = COLUMNS

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.states: dict = {}

    @property
    def selected_queue(self):
        return self.states.get(self.selected_key)

    def show(self, snapshot: Snapshot) -> None:
        states = snapshot.extra.get("queues")
        if states is None:
            return  # this refresh was read for another view
        self.states = {state.name: state for state in states}
        self.replace_rows([(state.name, self.cells(state)) for state in states])
        paused = sum(state.paused for state in states)
        self.border_title = f"Queues [b]{len(states)}[/b]" + (f" · [bold yellow]{paused} paused[/]" if paused else "")
        if snapshot.narrowed:  # the counts line above honours them: "type x" in the header read as this table's
            self.border_title += f" · [dim]{NOT_NARROWED}[/]"

    @staticmethod
    def cells(state) -> list:
        paused = Text("paused", style="bold yellow") if state.paused else Text("active", style="green")
        counts = [format_count(state.counts.get(status, 0)) for status in STATUSES]
        latency = "" if state.latency is None else short_duration(state.latency)
        failed = Text(rate(state.failed_per_minute), style="red" if state.failed_per_minute else "")
        return [state.name, paused, *counts, latency, rate(state.done_per_minute), failed]


def rate(per_minute: float) -> str:
    return f"{per_minute:,.1f}" if per_minute else "0"
