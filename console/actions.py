"""The keys that change jobs: ``n`` enqueue, ``r`` retry (the bulk path, console.bulk), ``f`` fail, ``x`` reap.

A mixin of ``QueueConsole``. Every repository write runs on a thread worker (``run_write``) and reports back
with a message from ``console.messages``; the UI thread only renders the outcome. So a SQLite write lock held
by another process makes the write wait (up to the busy timeout), never the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.message import Message

from queue_core.errors import QueueError
from queue_core.rules import has_retries_left
from queue_core.store.database import DATABASE_ERRORS

from .commands import command_line, enqueue_line
from .formatting import write_error
from .messages import JobFailedByOperator, StaleReaped, WriteFailed
from .screens.enqueue import EnqueueScreen
from .screens.prompt import PromptScreen
from .selection import JOB_VIEWS

DEFAULT_FAIL_REASON = "failed by the operator"


class JobActions:
    """Needs from the app: ``repo``, ``snapshot``, ``stale_after``, ``current_table``, ``queue_worker``,
    ``known_types``, ``request_refresh`` and ``_on_main_screen``."""

    # --- running a write ---------------------------------------------------------------------------

    def run_write(self, what: str, operation: Callable[[], object], done: Callable[[object], Message]) -> None:
        """Run ``operation`` (one repository call) on a thread; post ``done(result)``, or ``WriteFailed``.

        Not exclusive: each key press is its own request and gets its own answer.
        """
        self.run_worker(partial(self._write, what, operation, done), name=what, group="write", thread=True)

    def _write(self, what: str, operation: Callable[[], object], done: Callable[[object], Message]) -> None:
        # On the worker thread: touch no widget, only post. Anything but a database or queue error is a bug
        # and crashes the app as it did on the UI thread (the worker's exit_on_error).
        try:
            with self.repo.db.connection_context():
                result = operation()
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.post_message(WriteFailed(what, write_error(exc)))
        else:
            self.post_message(done(result))

    def on_write_failed(self, message: WriteFailed) -> None:
        self.notify(f"Could not {message.what}: {message.error}", title="Database error", severity="error")
        self.request_refresh()

    def cursor_job(self, action: str, status: str) -> int | None:
        """The selected job's id if it is in the ``status`` table; otherwise say why nothing happens."""
        table = self.current_table
        # Off the jobs views the current table is the hidden pending one: its cursor job is not on screen.
        job_id = table.selected_job_id if self.view in JOB_VIEWS else None
        where = f"select one in the {status.capitalize()} table ({self.tables_hint()})"
        if job_id is None:
            self.notify(f"No job to {action}: {where}.", severity="warning")
            return None
        if table.status != status:
            self.notify(
                f"{action.capitalize()} works on {status} jobs; job {job_id} is {table.status}: {where}.",
                severity="warning",
            )
            return None
        return job_id

    def tables_hint(self) -> str:
        """How to reach another table from this view: tab on the live tables, 1 from anywhere else."""
        return "tab moves between tables" if self.view == "tables" else "press 1 for the live tables"

    # --- n: enqueue (the form writes on its own thread worker and stays open until it is written) --

    def action_enqueue(self) -> None:
        self._on_main_screen()
        self.push_screen(EnqueueScreen(self.repo, self.known_types()), self._enqueued)

    def _enqueued(self, result) -> None:
        if result is None:
            return
        job, created = result
        if created:
            when = "" if job.run_at <= job.created_at else f", due {job.run_at:%H:%M:%S} UTC"
            self.notify(
                f"Enqueued job {job.id}: {job.type} on {job.queue}, {job.priority_label}{when}.", title="Enqueued"
            )
            if self.queue_worker is not None and self.queue_worker.is_running:
                self.queue_worker.wakeup()  # run it now, not at the next poll
            self.record_commands([enqueue_line(job)])
        else:
            self.notify(
                f"Not enqueued: key {job.idempotency_key!r} already belongs to job {job.id} ({job.status}).",
                title="Already there",
                severity="warning",
            )
        self.request_refresh()

    # --- r: retry ----------------------------------------------------------------------------------

    def action_retry(self) -> None:
        """The bulk retry (console.bulk) of the selection, or of the job under the cursor: always a dry run
        and a confirmation first, so one job and a thousand are retried the same way."""
        self._on_main_screen()
        self.action_bulk("retry")

    # --- f: fail, with a reason --------------------------------------------------------------------

    def action_fail(self) -> None:
        self._on_main_screen()
        job_id = self.cursor_job("fail", "running")
        if job_id is None:
            return
        # The run itself is not stopped (Python cannot stop a thread): its worker finds the claim gone and
        # drops the outcome; meanwhile the retry may start elsewhere, or on that worker's other slots.
        note = "Its handler is not interrupted: c asks a handler to stop; this records the failure now."
        prompt = PromptScreen(
            f"Fail running job {job_id}",
            f"{self.fail_outcome(job_id)} {note} Why?",
            value=DEFAULT_FAIL_REASON,
            id="fail-reason",
        )
        self.push_screen(prompt, partial(self._fail, job_id))

    def fail_outcome(self, job_id: int) -> str:
        """What failing this job will do, from the rows on screen (the repository decides at the time)."""
        running = self.snapshot.rows.get("running", ()) if self.snapshot else ()
        job = next((job for job in running if job.id == job_id), None)
        if job is None:
            return "A failed attempt, as if its worker had failed it."
        head = f"{job.type}, retries {job.retry_count}/{job.max_retries}: a failed attempt, as if its worker failed it"
        if has_retries_left(job):
            return f"{head}; retries are left, so it goes back to pending."
        return f"{head}; no retries are left, so it fails for good."

    def _fail(self, job_id: int, reason: str | None) -> None:
        if reason is None:
            return
        fail = partial(self.repo.fail, job_id, reason or DEFAULT_FAIL_REASON)
        self.run_write("fail", fail, partial(JobFailedByOperator, job_id))

    def on_job_failed_by_operator(self, message: JobFailedByOperator) -> None:
        job, job_id = message.job, message.job_id
        if job is None:
            self.notify(f"Job {job_id} is no longer running (finished or reaped); nothing changed.", severity="warning")
        elif job.status == "failed":
            self.notify(f"Job {job_id} failed for good: no retries left ({job.retry_count}/{job.max_retries}).")
        else:
            wait = max(0.0, (job.run_at - job.updated_at).total_seconds())  # fail wrote both at one "now"
            self.notify(
                f"Job {job_id} failed attempt {job.retry_count}; re-enqueued, "
                f"retry {job.retry_count} of {job.max_retries} in {wait:.0f}s."
            )
        self.request_refresh()

    # --- x: reap stale claims ----------------------------------------------------------------------

    def action_reap(self) -> None:
        """The stale claims (no heartbeat for the console's ``--stale-after``), and the jobs of workers the
        registry shows lost by their own ``--stale-after`` (a SIGKILLed worker's, shown lost in the workers
        view, which the console's longer stale-after did not count as stale)."""
        self._on_main_screen()
        self.run_write("reap", self._reap_all, StaleReaped)

    def _reap_all(self) -> tuple[int, dict[str, int]]:
        return self.repo.reap_stale(self.stale_after), self.repo.reap_lost_workers()

    def on_stale_reaped(self, message: StaleReaped) -> None:
        reaped, lost = message.result
        seconds = f"{self.stale_after.total_seconds():g} s"
        parts = [f"{reaped} stale claim{'s' if reaped != 1 else ''} (no heartbeat for {seconds})"] if reaped else []
        for worker_id, count in lost.items():
            parts.append(f"{count} job{'s' if count != 1 else ''} of lost worker {worker_id}")
        if parts:
            self.notify(f"Reaped {' and '.join(parts)}.")
        else:
            none = f"No stale claims: every running job showed life in the last {seconds}; no lost worker holds one."
            self.notify(none)
        self.record_commands([command_line("reap", older_than=f"{self.stale_after.total_seconds():g}", lost=True)])
        self.request_refresh()
