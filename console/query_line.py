"""``/``: the query line. The active query narrows every jobs table (live and paged) and their counts, is
shown in the header, and escape on the main screen clears it. A mixin of ``QueueConsole``; the query runs
with the refresh, on its thread (``console.snapshot``), so even a query no index serves never blocks a key.
"""

from __future__ import annotations

from queue_core.store.query import JobQuery

from .screens.query import QueryScreen


class QueryLine:
    """Needs from the app: ``request_refresh``, ``_on_main_screen``, ``reset_pages``."""

    job_query: JobQuery | None = None

    @property
    def query_text(self) -> str:
        return self.job_query.text if self.job_query else ""

    def action_query(self) -> None:
        self._on_main_screen()
        self.push_screen(QueryScreen(self.query_text), self._set_query)

    def _set_query(self, query: JobQuery | None) -> None:
        if query is None:
            return  # escape: the query stays as it was
        self.job_query = query or None
        self.reset_pages()  # a page cursor of the old matches means nothing for the new ones
        self.request_refresh()

    def key_escape(self) -> None:
        """Escape on the main screen clears the query (a dialog's own escape closes the dialog)."""
        if len(self.screen_stack) == 1 and self.job_query is not None:
            self._set_query(JobQuery("", ()))
