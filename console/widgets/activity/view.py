"""Charts of the last hour, one per series: jobs completed, attempts failed and jobs enqueued per minute."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from ...formatting import time_of_day
from ...snapshot import Snapshot

CHARTS = (
    ("completed", "Completed", "green"),
    ("failed", "Failed attempts", "red"),
    ("enqueued", "Enqueued", "cyan"),
)


class ActivityView(VerticalScroll):
    """A labelled ``Sparkline`` per series; the label says the total, the peak and the range charted."""

    def compose(self) -> ComposeResult:
        for name, _title, _style in CHARTS:
            yield Static("", id=f"{name}-label", classes="chart-label")
            yield Sparkline([], id=f"{name}-chart", classes=f"chart {name}")

    def show(self, snapshot: Snapshot) -> None:
        activity = snapshot.activity
        if activity is None:
            return  # this refresh was read for another view
        minutes = len(activity.series["completed"])
        self.border_title = (
            f"Activity [b]last {minutes} minutes[/b] · per minute from {time_of_day(activity.start)} UTC"
        )
        for name, title, style in CHARTS:
            counts = activity.series[name]
            peak = max(counts, default=0)
            label = f"[{style}]{title}[/] [b]{sum(counts):,}[/] in the hour · peak [b]{peak:,}[/]/min"
            self.query_one(f"#{name}-label", Static).update(label)
            self.query_one(f"#{name}-chart", Sparkline).data = counts
