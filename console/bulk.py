"""Bulk actions (issue 16): ``r`` retry, ``C`` cancel, ``D`` delete the selection, or the job under the
cursor when nothing is selected; each after a confirmation that states the exact count and query.

A mixin of ``QueueConsole``. The count is a dry run (``repo.plan_bulk``) on a thread; ``y`` applies that very
plan (``repo.apply_bulk``) on a thread, in batches of ``BULK_BATCH`` jobs, each re-checked by the store, so a
job that changed state meanwhile is skipped and counted. A progress dialog follows the batches; ``escape``
there stops after the current one. After every action the admin-CLI line that does the same goes to the
command panel (``e`` opens its last lines).
"""

from __future__ import annotations

import threading
from functools import partial

from textual.binding import Binding

from queue_core.errors import QueueError
from queue_core.rules import PENDING, RUNNING
from queue_core.store.bulk import BULK_BATCH, ELIGIBLE, STATUSES
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.pages import SCHEDULED

from .commands import bulk_lines
from .formatting import write_error
from .messages import BulkDone, BulkPlanned, BulkProgressed, WriteFailed
from .screens.bulk_progress import BulkProgressScreen
from .screens.confirm import ConfirmScreen
from .selection import JOB_VIEWS, Selection
from .widgets.command_panel import CommandPanel

BULK_BINDINGS = [
    Binding(
        "C",
        "bulk('cancel')",
        "Cancel…",
        id="bulk-cancel",
        tooltip="cancel the selection or the cursor job (asks first)",
    ),
    Binding(
        "D",
        "bulk('delete')",
        "Delete…",
        id="bulk-delete",
        tooltip="delete the selection or the cursor job (asks first)",
    ),
    # Not in the footer (it is full at 120 columns): in the help, the palette and the README.
    Binding(
        "space",
        "toggle_select",
        "Select",
        id="select",
        tooltip="select / unselect the job under the cursor (on 6: a cause)",
        show=False,
    ),
    Binding(
        "a",
        "select_all",
        "Select all",
        id="select-all",
        tooltip="select every job of the view matching the query",
        show=False,
    ),
    Binding(
        "e",
        "toggle_commands",
        "Commands",
        id="commands",
        tooltip="the admin-CLI lines of the last actions",
        show=False,
    ),
]
CAUSE_ACTIONS = ("retry", "delete")  # the admin CLI's --cause: a cause's jobs are failed ones
VERBS = {"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}
PAST = {"retry": "Retried", "cancel": "Cancelled", "delete": "Deleted"}


def outcome_text(outcome, what: str, running: int) -> str:
    """The note after a bulk action: "Retried 4 of 4 failed jobs.", and for a cancel of running jobs that
    it asked them to stop (each shows ⊘ and ends at its worker's next heartbeat, ~10 s), not that they are
    cancelled already."""
    skipped = f" ({outcome.skipped:,} skipped: changed meanwhile)" if outcome.skipped else ""
    stopped = " Stopped by escape: the rest were left as they were." if outcome.stopped else ""
    one = running == 1
    ends = f"{'it ends' if one else 'they end'} at {'its' if one else 'their'} worker's next heartbeat"
    if running and running == outcome.planned:
        return f"Asked {outcome.changed:,} of {what} to stop{skipped}: {ends}.{stopped}"
    if running:
        asked = f"the {running:,} running {'one was' if one else 'were'} asked to stop: {ends}"
        return f"{PAST[outcome.action]} {outcome.changed:,} of {what}{skipped}; {asked}.{stopped}"
    return f"{PAST[outcome.action]} {outcome.changed:,} of {what}{skipped}.{stopped}"


class BulkActions:
    """Needs from the app: ``repo``, ``view``, ``current_table``, ``selection``, ``set_selection``,
    ``request_refresh``, ``_on_main_screen``, ``tables_hint``."""

    bulk_batch_size: int = BULK_BATCH
    _bulk_stop: threading.Event | None = None
    # A dry run is on its thread: another bulk key waits for its confirmation (a second one, pushed under the
    # same id, crashed the console; and two questions at once are one too many). The header says "counting…".
    _bulk_planning = False

    def action_bulk(self, action: str) -> None:
        self._on_main_screen()
        if self._bulk_planning:
            self.notify("Still counting the jobs of the last key: its confirmation comes first.", severity="warning")
            return
        selection = self.selection
        if selection is not None:
            scope, state = selection.scope or "", selection.state
            plan = partial(self.repo.plan_bulk, action, scope, status=state, ids=selection.ids)
        else:
            ids, status = self._cursor_job(action)
            if ids is None:
                return
            plan = partial(self.repo.plan_bulk, action, "", status=status, ids=ids)
        self._bulk_planning = True
        self.update_sub_title()
        self.run_worker(partial(self._plan, plan, selection), name=f"plan {action}", group="write", thread=True)

    def _cursor_job(self, action: str) -> tuple[list[int] | None, str | None]:
        """The job under the cursor and its table's state, when nothing is selected."""
        if self.view == "failures":
            self.notify(f"Select a cause first (space), then {action} its jobs.", severity="warning")
            return None, None
        table = self.current_table
        job_id = table.selected_job_id if self.view in JOB_VIEWS and table.display else None
        if job_id is None:
            where = "space selects jobs, a every job of the view matching the query"
            self.notify(f"Nothing to {action}: no selection and no job under the cursor ({where}).", severity="warning")
            return None, None
        takes = ELIGIBLE[action]
        if (PENDING if table.status == SCHEDULED else table.status) not in takes:
            # Said before the dry run: the operator is on the wrong table, not racing a worker. A running job is
            # never deleted (its worker would ack a job that is gone): the key that stops it is C.
            where = f" ({self.tables_hint()})"
            if action == "delete" and table.status == RUNNING:
                where = ": running jobs are never deleted, C cancels it"
            self.notify(
                f"{VERBS[action]} works on {' or '.join(takes)} jobs; job {job_id} is {table.status}{where}.",
                severity="warning",
            )
            return None, None
        return [job_id], table.status

    def _plan(self, plan, selection: Selection | None) -> None:
        try:
            with self.repo.db.connection_context():
                result = plan()
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed("plan the action", str(exc)))
            self.post_message(BulkPlanned(None, selection))  # no plan: the next bulk key may count again
        else:
            self.post_message(BulkPlanned(result, selection))

    def on_bulk_planned(self, message: BulkPlanned) -> None:
        self._bulk_planning = False
        self.update_sub_title()
        plan, selection = message.plan, message.selection
        if plan is None:
            return  # the dry run failed, and WriteFailed said why
        verb, takes = VERBS[plan.action], ELIGIBLE[plan.action]
        if not plan.count:
            self.notify(f"Nothing to {plan.action}: {plan.action} takes {' or '.join(takes)} jobs.", severity="warning")
            return
        notes = []
        if selection and len(selection) > plan.count:
            left = len(selection) - plan.count
            why = f"not {' or '.join(takes)}"
            if (PENDING if selection.state == SCHEDULED else selection.state) in takes:
                # All were selected in a table whose jobs the action takes: the others have left it since (a worker
                # claimed them). Review finding: it said "not pending or running" of jobs claimed since, running.
                why = f"no longer {selection.state} (changed since they were selected)"
            notes.append(f"{left:,} of the {len(selection):,} selected are left alone: {why}.")
        if plan.action == "cancel" and STATUSES.index(RUNNING) in plan.statuses:
            notes.append("A running job is not stopped here: its worker is asked to cancel it.")
        if plan.count > self.bulk_batch_size:
            notes.append(f"In batches of {self.bulk_batch_size:,}; escape stops after the current batch.")
        origin = f" {selection.what}" if selection and selection.what else ""
        what = plan.describe()
        if selection is None and plan.count == 1 and not plan.query:
            what = f"{what.split(' ', 1)[1]} {plan.ids[0]}"  # the job under the cursor, by its id: "failed job 7"
        question = f"{verb} {what}{origin}?" + "".join(f"\n{note}" for note in notes)
        title = f"{verb} {plan.count:,} job{'s' if plan.count != 1 else ''}"
        screen = ConfirmScreen(title, question, id="confirm-bulk")
        self.push_screen(screen, partial(self._confirmed, plan, selection))

    def _confirmed(self, plan, selection: Selection | None, yes: bool | None) -> None:
        if not yes:
            return
        self._bulk_stop = threading.Event()
        self.push_screen(BulkProgressScreen(plan, self._bulk_stop))
        query = selection.command_query if selection else None
        cause = selection.group if selection and plan.action in CAUSE_ACTIONS else None
        cause_query = selection.group_query if selection else ""
        lines = bulk_lines(
            plan.action, query=query, ids=plan.ids if query is None else (), cause=cause, cause_query=cause_query
        )
        self.run_worker(partial(self._apply, plan, lines), name=plan.action, group="write", thread=True)

    def _apply(self, plan, lines: list[str]) -> None:
        try:
            with self.repo.db.connection_context():
                outcome = self.repo.apply_bulk(plan, batch_size=self.bulk_batch_size, on_batch=self.bulk_batch_done)
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed(plan.action, write_error(exc)))
            self.post_message(BulkDone(None, [], plan.describe()))
        else:
            running = plan.statuses.count(STATUSES.index(RUNNING)) if plan.action == "cancel" else 0
            self.post_message(BulkDone(outcome, lines, plan.describe(), running))

    def bulk_batch_done(self, progress) -> bool:
        """On the worker thread after each batch: report it; False once escape asked to stop."""
        self.post_message(BulkProgressed(progress))
        return not self._bulk_stop.is_set()

    def on_bulk_progressed(self, message: BulkProgressed) -> None:
        if isinstance(self.screen, BulkProgressScreen):
            self.screen.show_progress(message.progress)

    def on_bulk_done(self, message: BulkDone) -> None:
        if isinstance(self.screen, BulkProgressScreen):
            self.screen.answer(None)
        outcome = message.outcome
        if outcome is not None:
            self.notify(outcome_text(outcome, message.what, message.running))
            self.record_commands(message.lines)
            self.set_selection(None)
        self.request_refresh()

    # --- the equivalent commands ---------------------------------------------------------------------

    def record_commands(self, lines: list[str]) -> None:
        self.query_one(CommandPanel).add(lines)

    def action_toggle_commands(self) -> None:
        self._on_main_screen()
        self.query_one(CommandPanel).toggle()
