"""``/``: the query line. The active query narrows every jobs table (live and paged) and their counts, is
shown in the header, and escape on the main screen clears it. A mixin of ``QueueConsole``.

A query every term of which an index serves (id:, type:, queue:, status:) runs with each refresh, on its
thread (``console.snapshot``). Any other (free text, error:, worker:, payload.KEY:) would read every job
in every refresh: it is searched once instead, on its own thread, newest jobs first, within a time budget
(``queue_core.store.search``); each step's matches so far are shown at once, labelled as such, and a new
query or escape drops the search. Neither ever blocks a key press.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from queue_core.store.query import JobQuery
from queue_core.store.search import FoundJobs, SearchProgress, search, served_by_index

from .screens.query import QueryScreen


@dataclass(eq=False)
class SearchProgressed(Message):
    query: JobQuery
    progress: SearchProgress


class QueryLine:
    """Needs from the app: ``request_refresh``, ``refresh_soon``, ``_on_main_screen``, ``reset_pages``, ``repo``."""

    job_query: JobQuery | None = None
    search_clock = staticmethod(time.monotonic)  # what a search's time budget is measured with (fixed in pictures)
    found: FoundJobs | None = None  # the searched query's matches so far (None for a query an index serves)

    @property
    def query_text(self) -> str:
        return self.job_query.text if self.job_query else ""

    @property
    def refresh_query(self) -> JobQuery | FoundJobs | None:
        """What a refresh narrows by: the query itself, or the matches its search has found."""
        return self.found if self.found is not None else self.job_query

    def action_query(self) -> None:
        self._on_main_screen()
        self.push_screen(QueryScreen(self.query_text), self._set_query)

    def _set_query(self, query: JobQuery | None) -> None:
        if query is None:
            return  # escape: the query stays as it was
        self.job_query = query or None
        self.found = None
        self.workers.cancel_group(self, "search")  # the old query's search stops at its next step
        if self.job_query is not None and not served_by_index(self.job_query):
            self.found = FoundJobs(self.job_query)
            self._search(self.job_query)
        self.reset_pages()  # a page cursor of the old matches means nothing for the new ones
        self.request_refresh()

    @work(thread=True, exit_on_error=False, group="search")
    def _search(self, query: JobQuery) -> None:
        worker = get_current_worker()
        try:
            with self.repo.db.connection_context():
                for progress in search(self.repo, query, clock=self.search_clock):
                    if worker.is_cancelled:
                        return  # leaving the loop closes the search's generator
                    self.post_message(SearchProgressed(query, progress))
        except Exception as exc:  # a database error: say so; the tables keep what was found
            self.call_from_thread(self.notify, f"{type(exc).__name__}: {exc}", title="Search failed", severity="error")

    def on_search_progressed(self, message: SearchProgressed) -> None:
        if message.query is not self.job_query:
            return  # a dropped search's last step
        self.found = FoundJobs(message.query, message.progress)
        if message.progress.done or message.progress.stopped:
            self.request_refresh()
        else:
            self.refresh_soon()  # a burst of steps becomes one refresh

    def key_escape(self) -> None:
        """Escape on the main screen clears the query (a dialog's own escape closes the dialog)."""
        if len(self.screen_stack) == 1 and self.job_query is not None:
            self._set_query(JobQuery("", ()))
