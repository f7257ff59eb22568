"""The keys for issue 13's controls: ``p`` pauses or resumes the selected queue, ``c`` cancels the selected
job (each after a confirmation), enter on the workers view shows the jobs a worker holds.

A mixin of ``QueueConsole``. Writes go through ``JobRepository`` on thread workers (``run_write``); the
worker's jobs are read on a thread too.
"""

from __future__ import annotations

from functools import partial

from textual.actions import SkipAction
from textual.binding import Binding

from queue_core.store.overview import held_by

from .commands import command_line
from .messages import JobCancelRequested, QueuePauseChanged, WorkerJobsLoaded
from .screens.confirm import ConfirmScreen
from .screens.worker_jobs import WorkerJobsScreen
from .widgets.queues.table import QueuesTable
from .widgets.workers.table import WorkersTable

CONTROL_BINDINGS = [
    Binding(
        "c", "cancel_job", "Cancel", id="cancel-job", tooltip="cancel the job; with a selection, all of it (asks first)"
    ),
    Binding("p", "toggle_pause", "Pause", id="pause", tooltip="pause / resume the selected queue (asks first)"),
]


class QueueControls:
    """Needs from the app: ``repo``, ``view``, ``current_table``, ``run_write``, ``request_refresh``,
    ``_on_main_screen``."""

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
        """With a selection, the bulk cancel (console.bulk); else the job under the cursor."""
        self._on_main_screen()
        if self.selection is not None:
            self.action_bulk("cancel")
            return
        table = self.current_table
        job_id = table.selected_job_id if table.display else None
        if job_id is None or table.status not in ("pending", "running", "scheduled"):
            self.notify("Select a pending, scheduled or running job to cancel.", severity="warning")
            return
        outcome = (
            "Its worker is asked to stop it at its next heartbeat."
            if table.status == "running"
            else "It is cancelled at once and never runs."
        )
        screen = ConfirmScreen(f"Cancel job {job_id}", f"Cancel {table.status} job {job_id}? {outcome}")
        self.push_screen(screen, partial(self._cancel, job_id))

    def _cancel(self, job_id: int, yes: bool | None) -> None:
        if yes:
            self.run_write("cancel", partial(self.repo.cancel, job_id), partial(JobCancelRequested, job_id))

    def on_job_cancel_requested(self, message: JobCancelRequested) -> None:
        job, job_id = message.job, message.job_id
        if job is None:
            self.notify(f"Job {job_id} has already finished; nothing changed.", severity="warning")
        elif job.status == "cancelled":
            self.notify(f"Job {job_id} ({job.type}) is cancelled.")
        else:
            self.notify(f"Job {job_id} is running: its worker was asked to cancel it.")
        if job is not None:
            self.record_commands([command_line("cancel", job_id)])
        self.request_refresh()

    # --- enter on the workers view: the jobs a worker holds ----------------------------------------

    def show_worker_jobs(self) -> None:
        worker_id = self.query_one(WorkersTable).selected_worker_id
        if worker_id is None:
            raise SkipAction()
        self.run_worker(partial(self._read_worker_jobs, worker_id), group="read", thread=True)

    def _read_worker_jobs(self, worker_id: str) -> None:
        with self.repo.db.connection_context():
            rows, now = held_by(self.repo, worker_id), self.repo.now()
        self.post_message(WorkerJobsLoaded(worker_id, rows, now))

    def on_worker_jobs_loaded(self, message: WorkerJobsLoaded) -> None:
        self.push_screen(WorkerJobsScreen(message.worker_id, message.rows, message.now))
