"""Selection (issue 16): ``space`` toggles the job under the cursor, ``a`` selects every job matching the
view and the query (all of them, read on a thread, not the page on screen), ``escape`` clears. The header
says "N selected"; the bulk keys (``console.bulk``) act on the selection.

A mixin of ``QueueConsole``. A selection is a frozen set of ids: a job that starts matching after ``a`` is
not in it, so a bulk action never touches a job the operator did not select.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from queue_core.errors import QueueError
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.query import JobQuery

from .messages import SelectionLoaded, WriteFailed
from .widgets.failures.table import FailuresTable
from .widgets.jobs.table import JobTable

JOB_VIEWS = ("tables", "scheduled", "completed", "cancelled")


@dataclass(frozen=True)
class Selection:
    ids: frozenset[int]
    state: str | None  # the table every id was selected in ("failed"), None when they came from several
    scope: str | None = None  # ``a``: the query (type filter folded in) every id matched; None: picked by hand
    what: str = ""  # said after the count when no query names the selection: "selected by hand", "of cause …"
    group: str | None = None  # the failure group (error signature) these are the jobs of, if any
    group_query: str = ""  # the query (type filter folded in) the group was read under

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def command_query(self) -> str | None:
        """The admin CLI's ``--query`` for this selection, or None when no query names it (picked by hand,
        a failure group, or "scheduled", which no query term names)."""
        if self.scope is None or self.group is not None or self.state in (None, "scheduled"):
            return None
        status = f"status:{self.state}"
        if status in self.scope.split():  # named by the query already: once, not "status:pending ... status:pending"
            return self.scope
        return f"{status} {self.scope}".strip()


def scoped_query_text(type_filter: str | None, query: JobQuery | None) -> str:
    """The type filter (``t``) and the query line (``/``) as one query's text."""
    parts = [f"type:{query_value(type_filter)}"] if type_filter else []
    return " ".join([*parts, query.text] if query else parts)


def query_value(value: str) -> str:
    """``value`` as one term of the query language: bare, or double-quoted with ``\\`` escapes."""
    if value and not any(char.isspace() or char in '"\\' for char in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The store's dry run is the one read of "every job of this state matching a query": plan an action that takes
# jobs of the state, and keep its ids (nothing is written; the bulk key plans again for its own action).
READ_AS = {
    "pending": "cancel",
    "scheduled": "cancel",
    "running": "cancel",
    "failed": "retry",
    "completed": "delete",
    "cancelled": "retry",
}


def matching_ids(repo, state: str, scope: str):
    """Every job id of ``state`` matching the query text ``scope``, ascending (an array of ids)."""
    return repo.plan_bulk(READ_AS[state], scope, status=state).ids


class JobSelection:
    """Needs from the app: ``repo``, ``view``, ``current_table``, ``type_filter``, ``job_query``, ``snapshot``,
    ``update_sub_title``, ``_on_main_screen``."""

    selection: Selection | None = None
    # ``a`` reads in flight: the header says "selecting…" meanwhile (at a million jobs a read takes seconds,
    # and the screen showed nothing until it landed). console.bulk's dry run says "counting…" likewise.
    _selecting = 0

    def set_selection(self, selection: Selection | None) -> None:
        self.selection = selection if selection and selection.ids else None
        marked = self.selection.ids if self.selection else frozenset()
        for table in self.query(JobTable):
            table.mark(marked, self.snapshot)
        self.query_one(FailuresTable).mark(self.selection.group if self.selection else None, self.snapshot)
        self.update_sub_title()

    def selection_note(self) -> str:
        note = f" · {len(self.selection):,} selected" if self.selection else ""
        if self._selecting:
            note += " · selecting…"
        if getattr(self, "_bulk_planning", False):  # console.bulk's dry run
            note += " · counting…"
        return note

    def action_toggle_select(self) -> None:
        self._on_main_screen()
        if self.view == "failures":
            self.select_failure_group(toggle=True)
            return
        table = self.current_table
        job_id = table.selected_job_id if self.view in JOB_VIEWS and table.display else None
        if job_id is None:
            self.notify("No job to select here: space selects the job under the cursor.", severity="warning")
            return
        ids = set(self.selection.ids) if self.selection else set()
        ids ^= {job_id}
        same_table = self.selection is None or self.selection.state == table.status
        state = table.status if same_table else None
        self.set_selection(Selection(frozenset(ids), state, None, "selected by hand"))

    def action_select_all(self) -> None:
        self._on_main_screen()
        if self.view not in JOB_VIEWS:
            self.notify("a selects every job of a jobs view (1, s, d, k) matching the query.", severity="warning")
            return
        state = self.current_table.status if self.view == "tables" else self.view
        query = self.job_query
        self._selecting += 1
        self.update_sub_title()
        self.run_worker(partial(self._read_matching, state, query, self.type_filter), group="read", thread=True)

    def _read_matching(self, state: str, query: JobQuery | None, type_filter: str | None) -> None:
        # On a thread: touch no widget, only post.
        scope = scoped_query_text(type_filter, query)
        try:
            with self.repo.db.connection_context():
                ids = matching_ids(self.repo, state, scope)
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed("select", str(exc)))  # "Could not select: ..."; nothing changed
            self.post_message(SelectionLoaded(None))  # the read is over
            return
        self.post_message(SelectionLoaded(Selection(frozenset(ids), state, scope)))

    def on_selection_loaded(self, message: SelectionLoaded) -> None:
        self._selecting = max(0, self._selecting - 1)
        selection = message.selection
        if selection is None:
            self.update_sub_title()
            return
        if not selection.ids:
            scope = f" matching {selection.scope}" if selection.scope else ""
            self.notify(f"Nothing to select: no {selection.state} jobs{scope}.", severity="warning")
        self.set_selection(selection)

    def clear_selection(self) -> bool:
        """Escape: clear the selection; False when there was none (escape then clears the query)."""
        if self.selection is None:
            return False
        self.set_selection(None)
        return True

    def key_escape(self) -> None:
        """Escape on the main screen clears the selection first, then (console.query_line) the query."""
        if len(self.screen_stack) == 1 and self.clear_selection():
            return
        super().key_escape()
