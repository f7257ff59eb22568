"""The keys for issue 13's controls: ``p`` pauses or resumes the selected queue, ``c`` cancels the job under
the cursor or the selection (console.bulk's dry run, as ``C``), each after a confirmation; enter on the workers
view shows the jobs a worker holds.

A mixin of ``QueueConsole``. Writes go through ``JobRepository`` on thread workers (``run_write``); the
worker's jobs are read on a thread too.
"""

from __future__ import annotations

from functools import partial

from textual.binding import Binding

from queue_core.errors import QueueError
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.query import parse_query

from .commands import command_line
from .messages import QueuePauseChanged, WorkerJobsLoaded, WriteFailed
from .screens.confirm import ConfirmScreen
from .screens.worker_jobs import WorkerJobsScreen, read_held
from .selection import query_value
from .snapshot import LIVE
from .widgets.queues.table import QueuesTable
from .widgets.workers.table import WorkersTable

CONTROL_BINDINGS = [
    Binding(
        "c", "cancel_job", "Cancel", id="cancel-job", tooltip="cancel the selection or the cursor job (asks first)"
    ),
    Binding("p", "toggle_pause", "Pause", id="pause", tooltip="pause / resume the selected queue (asks first)"),
]


class QueueControls:
    """Needs from the app: ``repo``, ``view``, ``current_table``, ``run_write``, ``request_refresh``,
    ``_on_main_screen``."""

    _reading_worker_jobs = False  # enter on the workers view: the list is being read on its thread

    # --- p: pause or resume a queue ----------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self._on_main_screen()
        if self.view != "queues":
            self.notify("Pause works on the queues view: press 2 and select a queue.", severity="warning")
            return
        state = self.query_one(QueuesTable).selected_queue
        if state is None:
            self.notify("No queue selected.", severity="warning")
            return
        verb = "resume" if state.paused else "pause"
        what = (
            "Workers claim its jobs again." if state.paused else "Workers stop claiming its jobs; running ones finish."
        )
        question = f"{verb.capitalize()} queue {state.name!r}? {what}"
        screen = ConfirmScreen(f"{verb.capitalize()} queue", question, id="confirm-pause")
        self.push_screen(screen, partial(self._toggle_pause, state.name, verb))

    def show_queue_jobs(self) -> None:
        """enter on the queues view: the Jobs view narrowed to the selected queue, as the query ``queue:NAME``
        (in the header; escape clears it)."""
        state = self.query_one(QueuesTable).selected_queue
        if state is None:
            self.notify("No queue selected.", severity="warning")
            return
        self._set_query(parse_query(f"queue:{query_value(state.name)}"))
        self.action_show_view(LIVE)

    def _toggle_pause(self, name: str, verb: str, yes: bool | None) -> None:
        if not yes:
            return
        operation = self.repo.resume_queue if verb == "resume" else self.repo.pause_queue
        self.run_write(verb, partial(operation, name), QueuePauseChanged)

    def on_queue_pause_changed(self, message: QueuePauseChanged) -> None:
        state = message.state
        self.notify(f"Queue {state.name} is {'paused' if state.paused else 'active'}.")
        self.record_commands([command_line("pause" if state.paused else "resume", state.name)])
        self.request_refresh()

    # --- c: cancel a job ---------------------------------------------------------------------------

    def action_cancel_job(self) -> None:
        """The bulk cancel (console.bulk) of the selection, or of the job under the cursor: ``C`` by another
        key, so a single cancel gets the same dry run, confirmation and equivalent command."""
        self._on_main_screen()
        self.action_bulk("cancel")

    # --- enter on the workers view: the jobs a worker holds ----------------------------------------

    def show_worker_jobs(self) -> None:
        worker_id = self.query_one(WorkersTable).selected_worker_id
        if worker_id is None:  # enter did nothing at all: say why, as enter on an empty jobs table does
            note = "No worker selected: none has registered yet (a worker registers when it starts)."
            self.notify(note, severity="warning")
            return
        if self._reading_worker_jobs:
            return  # a second enter before the list is read: one list opens, not one under the other
        self._reading_worker_jobs = True
        self.run_worker(partial(self._read_worker_jobs, worker_id), group="read", thread=True)

    def _read_worker_jobs(self, worker_id: str) -> None:
        # On a thread: touch no widget, only post. A database error is said (it crashed the console).
        try:
            rows, now = read_held(self.repo, worker_id)
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed(f"read the jobs {worker_id} holds", str(exc)))
            self.post_message(WorkerJobsLoaded(worker_id, None, None))  # nothing to show; enter reads again
            return
        self.post_message(WorkerJobsLoaded(worker_id, rows, now))

    def on_worker_jobs_loaded(self, message: WorkerJobsLoaded) -> None:
        self._reading_worker_jobs = False
        if message.rows is not None:
            self.push_screen(WorkerJobsScreen(message.worker_id, message.rows, message.now, self.repo))
