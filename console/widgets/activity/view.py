"""Charts of the last hour, one per series: jobs completed, attempts failed and jobs enqueued per minute, and
the queue latency (the longest wait from due to claim of the jobs claimed each minute); for every queue or
one, picked with left and right (the refresh reads every queue's charts at once, so picking reads nothing)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Sparkline, Static

from queue_core.store.activity import Activity

from ...formatting import short_duration, time_of_day
from ...snapshot import NOT_NARROWED, Snapshot

CHARTS = (
    ("completed", "Completed", "green"),
    ("failed", "Failed attempts", "red"),
    ("enqueued", "Enqueued", "cyan"),
)
ALL_QUEUES = "all queues"


class ActivityView(VerticalScroll):
    """A labelled ``Sparkline`` per series; the label says the total, the peak and the range charted."""

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("left", "pick_queue(-1)", "Prev queue", id="activity-previous-queue", tooltip="chart the queue before"),
        Binding(
            "right", "pick_queue(1)", "Next queue", id="activity-next-queue", tooltip="chart the next queue (or all)"
        ),
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.activity: Activity | None = None
        self.queue: str | None = None  # None: every queue
        self.narrowed = False  # a type filter or query is set: the charts are of every job all the same

    def compose(self) -> ComposeResult:
        for name, _title, _style in CHARTS:
            yield Static("", id=f"{name}-label", classes="chart-label")
            yield Sparkline([], id=f"{name}-chart", classes=f"chart {name}")
        yield Static("", id="latency-label", classes="chart-label")
        yield Sparkline([], id="latency-chart", classes="chart latency")

    def show(self, snapshot: Snapshot) -> None:
        if snapshot.activity is None:
            return  # this refresh was read for another view
        self.activity = snapshot.activity
        self.narrowed = snapshot.narrowed
        self.draw()

    def action_pick_queue(self, step: int) -> None:
        """Every queue, then each queue with activity in the hour, in name order; around again."""
        if self.activity is None:
            return
        choices = [None, *sorted(self.activity.queues)]
        index = choices.index(self.queue) if self.queue in choices else 0
        self.queue = choices[(index + step) % len(choices)]
        self.draw()

    def draw(self) -> None:
        activity = self.activity.for_queue(self.queue)
        minutes = len(activity.series["completed"])
        queues = len(self.activity.queues)
        # Content, not markup: a queue's name is data ("[/]oops" is a valid name; as markup it crashed the console).
        scope = ("queue ", (self.queue, "b")) if self.queue else ((ALL_QUEUES, "b"), f" ({queues:,})")
        self.border_title = Content.assemble(
            "Activity · ", *scope, f" · last {minutes} minutes, per minute from {time_of_day(activity.start)} UTC"
        )
        # The header's "type x" or query narrows the counts line, not these charts.
        self.border_subtitle = f"{NOT_NARROWED} · ← → pick a queue" if self.narrowed else "← → pick a queue"
        for name, title, style in CHARTS:
            counts = activity.series[name]
            peak = max(counts, default=0)
            label = f"[{style}]{title}[/] [b]{sum(counts):,}[/] in the hour · peak [b]{peak:,}[/]/min"
            self.query_one(f"#{name}-label", Static).update(label)
            self.query_one(f"#{name}-chart", Sparkline).data = counts
        self.query_one("#latency-label", Static).update(latency_label(activity.latency))
        self.query_one("#latency-chart", Sparkline).data = [wait or 0.0 for wait in activity.latency]


def latency_label(waits: list[float | None]) -> str:
    seen = [wait for wait in waits if wait is not None]
    if not seen:
        return "[yellow]Queue latency[/] no job claimed in the hour"
    last = next(wait for wait in reversed(waits) if wait is not None)
    return (
        f"[yellow]Queue latency[/] (longest wait from due to claim) · last [b]{short_duration(last)}[/]"
        f" · peak [b]{short_duration(max(seen))}[/]"
    )
