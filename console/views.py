"""The views, one key each: ``1`` Jobs (the live tables; ``s`` scheduled, ``d`` completed, ``k`` cancelled one
key further), ``4`` Schedules, ``5`` Activity; queues and workers join as ``2`` and ``3``.

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
from .widgets.activity.view import ActivityView
from .widgets.jobs.paged import PagedJobTable
from .widgets.jobs.stack import TableStack
from .widgets.schedules.view import SchedulesView

LIVE = "tables"  # the home view: the pending / running / failed tables
PAGED = (("scheduled", "Scheduled"), ("completed", "Completed"), ("cancelled", "Cancelled"))
VIEW_TITLES = {
    LIVE: "Jobs",
    "scheduled": "Jobs · scheduled",
    "completed": "Jobs · completed",
    "cancelled": "Jobs · cancelled",
    "schedules": "Schedules",
    "activity": "Activity",
}

VIEW_BINDINGS = [
    Binding("1", f"show_view('{LIVE}')", "Jobs", id="view-jobs", tooltip="pending, running and failed jobs, live"),
    Binding("s", "show_view('scheduled')", "Scheduled", id="view-scheduled", tooltip="pending jobs due later"),
    Binding("d", "show_view('completed')", "Completed", id="view-completed", tooltip="completed jobs, newest first"),
    Binding("k", "show_view('cancelled')", "Cancelled", id="view-cancelled", tooltip="cancelled jobs, newest first"),
    Binding("4", "show_view('schedules')", "Schedules", id="view-schedules", tooltip="periodic jobs: cron, runs"),
    Binding("5", "show_view('activity')", "Activity", id="view-activity", tooltip="the last hour, per minute"),
]


class ViewControls:
    """Needs from the app: ``request_refresh``, ``_on_main_screen``, ``schedules``, ``sub_title`` parts."""

    view: str = LIVE

    def compose_views(self) -> ComposeResult:
        with ContentSwitcher(id="views", initial=LIVE):
            yield TableStack(id=LIVE)
            for state, title in PAGED:
                yield PagedJobTable(state, title, id=state)
            yield SchedulesView(id="schedules")
            yield ActivityView(id="activity")

    def init_views(self) -> None:
        self.view = LIVE
        self._page_cursors: dict[str, list[Cursor | None]] = {state: [None] for state, _ in PAGED}

    def page_request(self) -> tuple[Cursor | None, int]:
        """The current view's page: the cursor it starts after and its number (1 when not paged)."""
        stack = self._page_cursors.get(self.view, [None])
        return stack[-1], len(stack)

    def view_reads(self) -> dict:
        """Reads only this view needs, as name -> function(repository, now), run on the refresh thread."""
        if self.view == "schedules":
            return {"schedules": self.read_schedules}
        return {}

    def action_show_view(self, name: str) -> None:
        self._on_main_screen()
        if name == self.view:
            return
        self.view = name
        self.query_one("#views", ContentSwitcher).current = name
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

    def show_views(self, snapshot) -> None:
        """Hand the snapshot to every view; each takes what was read for it (the others keep their rows)."""
        self.query_one(TableStack).show(snapshot)
        for state, _ in PAGED:
            self.query_one(f"#{state}", PagedJobTable).show(snapshot)
        self.query_one(SchedulesView).show(snapshot)
        self.query_one(ActivityView).show(snapshot)
