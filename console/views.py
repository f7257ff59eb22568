"""The views, one key each: ``1`` Jobs (the live tables; ``s`` scheduled, ``d`` completed, ``k`` cancelled one
key further), ``2`` Queues, ``3`` Workers, ``4`` Schedules, ``5`` Activity, ``6`` Failures by cause.

A mixin of ``QueueConsole``. Every view is a child of one ``ContentSwitcher`` whose id is the view's name; the
header and the counts line stay above it on every view. A refresh reads only what the view on screen
shows (``console.snapshot``); a paged view's keyset cursors live here, one stack per state, so page up
returns to exactly the window it left.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import ContentSwitcher

from queue_core.store.pages import Cursor

from .messages import PageRequested
from .snapshot import LIVE, read_queues, read_workers
from .widgets.activity.view import ActivityView
from .widgets.failures.table import FailuresTable
from .widgets.jobs.paged import PagedJobTable
from .widgets.jobs.stack import TableStack
from .widgets.queues.table import QueuesTable
from .widgets.schedules.view import SchedulesView
from .widgets.view_bar import ViewBar
from .widgets.workers.table import WorkersTable

PAGED = (("scheduled", "Scheduled"), ("completed", "Completed"), ("cancelled", "Cancelled"))
VIEW_TITLES = {
    LIVE: "Jobs",
    "scheduled": "Jobs · scheduled",
    "completed": "Jobs · completed",
    "cancelled": "Jobs · cancelled",
    "queues": "Queues",
    "workers": "Workers",
    "schedules": "Schedules",
    "activity": "Activity",
    "failures": "Failures by cause",
}


def view_binding(key: str, view: str, description: str, tooltip: str) -> Binding:
    # Not in the footer: the view bar under the header shows these, from these same bindings.
    return Binding(key, f"show_view('{view}')", description, id=f"view-{view}", tooltip=tooltip, show=False)


VIEW_BINDINGS = [
    view_binding("1", LIVE, "Jobs", "pending, running and failed jobs, live"),
    view_binding("s", "scheduled", "Scheduled", "pending jobs due later: delays and back-offs"),
    view_binding("d", "completed", "Completed", "completed jobs, newest first, a page at a time"),
    view_binding("k", "cancelled", "Cancelled", "cancelled jobs, newest first, a page at a time"),
    view_binding("2", "queues", "Queues", "per queue: counts, latency; p pauses, enter lists its jobs"),
    view_binding("3", "workers", "Workers", "every registered worker; enter: the jobs it holds"),
    view_binding("4", "schedules", "Schedules", "periodic jobs: cron, last and next run"),
    view_binding("5", "activity", "Activity", "the last hour per minute: done, failed, enqueued, latency"),
    view_binding("6", "failures", "Causes", "failed jobs grouped by cause; space selects a group's jobs"),
]
VIEW_OF_BINDING = {binding.id: binding.action.split("'")[1] for binding in VIEW_BINDINGS}


class ViewControls:
    """Needs from the app: ``request_refresh``, ``_on_main_screen``, ``schedules``, ``sub_title`` parts."""

    view: str = LIVE

    def compose_view_bar(self) -> ComposeResult:
        yield ViewBar(VIEW_BINDINGS, VIEW_OF_BINDING, id="view-bar")

    def compose_views(self) -> ComposeResult:
        with ContentSwitcher(id="views", initial=LIVE):
            yield TableStack(id=LIVE)
            for state, title in PAGED:
                yield PagedJobTable(state, title, id=state)
            yield QueuesTable(id="queues")
            yield WorkersTable(id="workers")
            yield SchedulesView(id="schedules")
            yield ActivityView(id="activity")
            yield FailuresTable(id="failures")

    def init_views(self) -> None:
        self.view = LIVE
        self.reset_pages()

    def reset_pages(self) -> None:
        """Every paged view back to its first page (the filter or the query changed what it pages through)."""
        self._page_cursors: dict[str, list[Cursor | None]] = {state: [None] for state, _ in PAGED}

    def page_request(self) -> tuple[Cursor | None, int]:
        """The current view's page: the cursor it starts after and its number (1 when not paged)."""
        stack = self._page_cursors.get(self.view, [None])
        return stack[-1], len(stack)

    def view_reads(self) -> dict:
        """Reads only this view needs, as name -> function(repository, now), run on the refresh thread."""
        reads = {"schedules": self.read_schedules, "queues": read_queues, "workers": read_workers}
        reads["failures"] = self.failures_read()
        return {self.view: reads[self.view]} if self.view in reads else {}

    def action_show_view(self, name: str) -> None:
        self._on_main_screen()
        if name == self.view:
            return
        self.view = name
        self.query_one("#views", ContentSwitcher).current = name
        self.show_view_bar()
        widget = self.query_one(f"#{name}")
        target = self.query_one("#pending") if name == LIVE else widget
        if target.focusable:
            target.focus()
        self.request_refresh()

    def on_page_requested(self, message: PageRequested) -> None:
        stack = self._page_cursors[message.state]
        if message.step > 0:
            page = self.snapshot.pages.get(message.state) if self.snapshot else None
            if page is None or page.page.next_after is None:
                return
            stack.append(page.page.next_after)
        elif len(stack) > 1:
            stack.pop()
        self.request_refresh()

    def show_view_bar(self) -> None:
        """The view bar is the header's second line: the views, and the paused queues and lost workers."""
        alarms = {}
        if self.snapshot is not None and self.snapshot.paused_queues:
            alarms["queues"] = f"[bold yellow]{len(self.snapshot.paused_queues)} paused[/]"
        if self.snapshot is not None and self.snapshot.lost_workers:
            alarms["workers"] = f"[bold red]{len(self.snapshot.lost_workers)} lost[/]"
        self.query_one(ViewBar).show_current(self.view, alarms)

    def show_views(self, snapshot) -> None:
        """Hand the snapshot to every view; each takes what was read for it (the others keep their rows)."""
        self.show_view_bar()
        self.query_one(TableStack).show(snapshot)
        for state, _ in PAGED:
            self.query_one(f"#{state}", PagedJobTable).show(snapshot)
        self.query_one(QueuesTable).show(snapshot)
        self.query_one(WorkersTable).show(snapshot)
        self.query_one(SchedulesView).show(snapshot)
        self.query_one(ActivityView).show(snapshot)
        self.query_one(FailuresTable).show(snapshot)
