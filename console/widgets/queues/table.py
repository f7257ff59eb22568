"""Per queue: paused or not, its jobs per status, its latency (how long its oldest due job has waited), and
its jobs done and attempts failed per minute over the last few minutes."""

from __future__ import annotations

from rich.text import Text

from ...formatting import short_duration
from ...snapshot import NOT_NARROWED, Snapshot, format_count
from ..keyed_table import KeyedTable

STATUSES = ("pending", "running", "failed", "completed", "cancelled")
# Each column as wide as its label or its widest value ("10,000+", "1,234.5"); the queue name takes what is
# left, up to 24. At 80 columns cancelled and completed give way (the counts line above has their totals):
# what is waiting, running and failing, and how fast, stay on screen.
COLUMNS = (
    ("queue", 24),
    ("state", 6),
    ("pending", 7),
    ("running", 7),
    ("failed", 7),
    ("completed", 9),
    ("cancelled", 9),
    ("latency", 7),
    ("done/m", 7),
    ("fail/m", 7),
)


class QueuesTable(KeyedTable):
    """Rows keyed by queue name, so a refresh keeps the cursor on its queue."""

    COLUMNS = COLUMNS
    FLEX, FLEX_MIN, GIVE_WAY = "queue", 12, ("cancelled", "completed")

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
