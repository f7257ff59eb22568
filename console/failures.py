"""The failures view's keys (issue 16): ``space`` or ``enter`` on a failure group selects its failed jobs, so a
bulk key acts on one cause. A mixin of ``QueueConsole``; the group's ids are read on a thread."""

from __future__ import annotations

from functools import partial

from queue_core.errors import QueueError
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.query import parse_query

from .formatting import shown
from .messages import SelectionLoaded, WriteFailed
from .selection import Selection, scoped_query_text
from .widgets.failures.table import FailuresTable


class FailureGroupControls:
    """Needs from the app: ``repo``, ``type_filter``, ``job_query``, ``selection``, ``set_selection``."""

    def failures_read(self):
        """The failures view's read for the refresh thread: the groups within the type filter and query."""
        text = scoped_query_text(self.type_filter, self.job_query)
        return lambda repo, now: repo.failure_groups(parse_query(text))

    def select_failure_group(self, *, toggle: bool = False) -> None:
        table = self.query_one(FailuresTable)
        group = table.cursor_group
        if group is None:
            self.notify("No failure group here: no failed job matches.", severity="warning")
            return
        if toggle and table.selected_signature == group.signature:
            self.set_selection(None)
            return
        text = scoped_query_text(self.type_filter, self.job_query)
        self.run_worker(partial(self._read_group, group.signature, text), group="read", thread=True)

    def _read_group(self, signature: str, text: str) -> None:
        try:
            with self.repo.db.connection_context():
                ids = self.repo.failure_group_ids(signature, parse_query(text))
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed("select the cause's jobs", str(exc)))
            return
        what = f"of cause “{shown(signature)}”"
        self.post_message(
            SelectionLoaded(Selection(frozenset(ids), "failed", None, what, group=signature, group_query=text))
        )
