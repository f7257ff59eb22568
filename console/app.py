"""The operator console: live pending / running / failed tables, actions on jobs, and an embedded worker.

Reads happen on a thread worker (``load_snapshot``) and come back as a message; the UI thread only
renders, so a slow refresh against a big database never blocks a key press.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import ClassVar, NoReturn

import peewee as pw
from textual import work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Footer, Header

from queue_core.cli.args import fail
from queue_core.errors import QueueError
from queue_core.store.database import DATABASE_ERRORS, default_url, open_database
from queue_core.store.repository import JobRepository, has_retries_left
from queue_core.worker.cli import import_handler_modules
from queue_core.worker.handlers import registry as handler_registry

from .demo import demo_refusal, seed_demo
from .embedded_worker import EmbeddedWorkerControls
from .formatting import time_of_day
from .options import DEFAULT_CONCURRENCY, DEFAULT_REFRESH, DEFAULT_STALE_AFTER, parse_args
from .screens.detail import JobDetailScreen
from .screens.enqueue import EnqueueScreen
from .screens.help import HelpScreen
from .screens.prompt import PromptScreen
from .snapshot import WINDOW, Snapshot, load_snapshot
from .widgets.job_table import JobTable, share_height
from .widgets.stats_bar import StatsBar
from .widgets.worker_pane import WorkerPane

MIN_TABLE_HEIGHT = 5  # border, header and two rows
EVENT_REFRESH_DELAY = 0.25  # a burst of worker events becomes one refresh
TABLES = (("pending", "Pending"), ("running", "Running"), ("failed", "Failed"))
WRITE_FAILED = object()  # what ``QueueConsole.write`` returns when the database refused (already notified)


class SnapshotLoaded(Message):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class RefreshFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class TableStack(Vertical):
    """The three tables; whenever its height changes (terminal, worker pane), the tables share it again."""

    def on_resize(self) -> None:
        self.app.fit_tables()


class QueueConsole(EmbeddedWorkerControls, App):
    CSS_PATH = "console.tcss"
    TITLE = "queue-core"
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("n", "enqueue", "Enqueue", id="enqueue", tooltip="enqueue a job through a form"),
        Binding("r", "retry", "Retry", id="retry", tooltip="retry the selected failed job"),
        Binding("f", "fail", "Fail", id="fail", tooltip="fail the selected running job (asks why)"),
        Binding("x", "reap", "Reap stale", id="reap", tooltip="take back stale claims now"),
        Binding("w", "toggle_worker", "Worker", id="worker", tooltip="start / stop the embedded worker"),
        # Enter and tab are priority bindings so the focused table does not take them; on a dialog
        # the actions step aside (SkipAction) and the dialog gets the key.
        Binding("enter", "detail", "Detail", id="detail", priority=True, tooltip="everything about the selected job"),
        Binding("slash", "filter", "Filter", id="filter", key_display="/", tooltip="show one job type only"),
        Binding("tab", "next_table", "Next table", id="next-table", priority=True, tooltip="pending, running, failed"),
        Binding("question_mark", "help", "Help", id="help", key_display="?", tooltip="this list of keys"),
        Binding("q", "quit", "Quit", id="quit", tooltip="quit (the embedded worker stops first)"),
    ]

    def __init__(
        self,
        repo: JobRepository,
        *,
        stale_after: timedelta = timedelta(seconds=DEFAULT_STALE_AFTER),
        refresh_interval: float | None = DEFAULT_REFRESH,
        start_worker: bool = False,
        worker_concurrency: int = DEFAULT_CONCURRENCY,
        worker_shutdown_timeout: float | None = None,
        worker_id: str | None = None,
        db_label: str | None = None,
        window: int = WINDOW,
    ) -> None:
        super().__init__()
        self.repo = repo  # its clock drives what the console shows and writes (a fixed one in tests)
        self.stale_after = stale_after
        self.refresh_interval = refresh_interval
        self.start_worker_at_launch = start_worker
        self.worker_concurrency = worker_concurrency
        self.worker_shutdown_timeout = worker_shutdown_timeout  # None: the worker's own default
        self.worker_id = worker_id  # None: the worker's own (host and process id)
        self.db_label = db_label if db_label is not None else database_label(repo.db)
        self.window = window
        self.type_filter: str | None = None
        self.snapshot: Snapshot | None = None
        self._loading = False
        self._reload = False
        self._soon_timer = None
        self._last_refresh_error: str | None = None

    # --- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatsBar("loading…", id="stats")
        with TableStack(id="tables"):
            for status, title in TABLES:
                yield JobTable(status, title, id=status)
        yield WorkerPane(clock=self.repo.now, id="worker-pane")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.db_label
        self.query_one("#pending", JobTable).focus()
        self.request_refresh()
        if self.refresh_interval:
            self.set_interval(self.refresh_interval, self.request_refresh)
        if self.start_worker_at_launch:
            self.start_queue_worker()

    @property
    def tables(self) -> list[JobTable]:
        return list(self.query(JobTable))

    @property
    def current_table(self) -> JobTable:
        focused = self.screen_stack[0].focused
        return focused if isinstance(focused, JobTable) else self.query_one("#pending", JobTable)

    def get_system_commands(self, screen):
        """Every key's action in the command palette, under the same name as in the footer."""
        ours = {binding.description for binding in self.BINDINGS}
        yield from (command for command in super().get_system_commands(screen) if command.title not in ours)
        for binding in self.BINDINGS:
            key = binding.key_display or binding.key
            action = partial(self.run_action, binding.action)
            # The help is markup: no brackets around the key.
            yield SystemCommand(binding.description, f"{binding.tooltip} · key {key}", action)

    def notify(self, message: str, *, title: str = "", severity="information", timeout=None, markup=False) -> None:
        """A toast whose message is text, never markup: messages quote job types, errors and what was typed."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _on_main_screen(self) -> None:
        """Table actions belong to the main screen: on a dialog, let the dialog have the key."""
        if len(self.screen_stack) > 1:
            raise SkipAction()

    # --- refresh: read on a thread, render here ----------------------------------------------------

    def request_refresh(self) -> None:
        if self._loading:
            self._reload = True  # one more right after the one in flight, never a queue of them
            return
        self._loading = True
        self._load_snapshot(self.type_filter)

    def refresh_soon(self) -> None:
        if self._soon_timer is None:
            self._soon_timer = self.set_timer(EVENT_REFRESH_DELAY, self._refresh_from_timer)

    def _refresh_from_timer(self) -> None:
        self._soon_timer = None
        self.request_refresh()

    @work(thread=True, exit_on_error=False, group="refresh")
    def _load_snapshot(self, type_filter: str | None) -> None:
        try:
            with self.repo.db.connection_context():
                snapshot = load_snapshot(
                    self.repo, type_filter=type_filter, window=self.window, stale_after=self.stale_after
                )
        except Exception as exc:  # whatever it is, say so and keep refreshing (a silent death stops the tables)
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(SnapshotLoaded(snapshot))

    def on_snapshot_loaded(self, message: SnapshotLoaded) -> None:
        self._loading = False
        self._last_refresh_error = None
        if message.snapshot.type_filter == self.type_filter:
            self.show_snapshot(message.snapshot)
        else:
            self._reload = True  # the filter changed while this was loading
        self._reload_if_asked()

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        self._loading = False
        if message.error != self._last_refresh_error:
            self.notify(f"Cannot read the queue: {message.error}", title="Refresh failed", severity="error")
        self._last_refresh_error = message.error
        self._reload_if_asked()

    def _reload_if_asked(self) -> None:
        if self._reload:
            self._reload = False
            self.request_refresh()

    def show_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        scope = f"type {snapshot.type_filter}" if snapshot.type_filter else "all types"
        self.sub_title = f"{self.db_label} · {scope} · {time_of_day(snapshot.now)} UTC"
        with self.batch_update():
            self.query_one(StatsBar).show(snapshot)
            for table in self.tables:
                table.show(snapshot)
            self.fit_tables()

    def fit_tables(self) -> None:
        """Share the height between the tables by need: a short table shrinks, a long one gets the rest."""
        tables = self.tables
        space = self.query_one("#tables").size.height
        if not space:
            return
        heights = share_height(space, [table.wanted_height for table in tables], minimum=MIN_TABLE_HEIGHT)
        for table, height in zip(tables, heights, strict=True):
            table.styles.height = height

    # --- actions on jobs ---------------------------------------------------------------------------

    def selection(self, action: str, status: str) -> int | None:
        """The selected job's id if it is in the ``status`` table; otherwise say why nothing happens."""
        table = self.current_table
        job_id = table.selected_job_id
        where = f"select one in the {status.capitalize()} table (tab moves between tables)"
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

    def write(self, what: str, operation: Callable):
        """``guarded``, for a call that changes the queue: the tables refresh after it."""
        try:
            return self.guarded(what, operation)
        finally:
            self.request_refresh()

    def guarded(self, what: str, operation: Callable):
        """Run one repository call; a database error becomes a notification (and WRITE_FAILED), not a traceback."""
        try:
            return operation()
        except (QueueError, *DATABASE_ERRORS) as exc:
            self.notify(f"Could not {what}: {exc}", title="Database error", severity="error")
            return WRITE_FAILED

    def action_enqueue(self) -> None:
        self._on_main_screen()
        self.push_screen(EnqueueScreen(self.repo, self.known_types()), self._enqueued)

    def _enqueued(self, result) -> None:
        if result is None:
            return
        job, created = result
        if created:
            self.notify(f"Enqueued job {job.id}: {job.type}, {job.priority_label}.", title="Enqueued")
            if self.queue_worker is not None and self.queue_worker.is_running:
                self.queue_worker.wakeup()  # run it now, not at the next poll
        else:
            self.notify(
                f"Not enqueued: key {job.idempotency_key!r} already belongs to job {job.id} ({job.status}).",
                title="Already there",
                severity="warning",
            )
        self.request_refresh()

    def action_retry(self) -> None:
        self._on_main_screen()
        job_id = self.selection("retry", "failed")
        if job_id is None:
            return
        job = self.write("retry", lambda: self.repo.retry(job_id))
        if job is WRITE_FAILED:
            return
        if job is None:
            self.notify(f"Job {job_id} is no longer failed; nothing changed.", severity="warning")
        else:
            self.notify(f"Job {job_id} ({job.type}) is pending again, retries reset to 0/{job.max_retries}.")

    def action_fail(self) -> None:
        self._on_main_screen()
        job_id = self.selection("fail", "running")
        if job_id is None:
            return
        prompt = PromptScreen(
            f"Fail running job {job_id}",
            f"{self.fail_outcome(job_id)} Why?",
            value="failed by the operator",
            id="fail-reason",
        )
        self.push_screen(prompt, partial(self._fail, job_id))

    def fail_outcome(self, job_id: int) -> str:
        """What failing this job will do, from the rows on screen (the repository decides at the time)."""
        job = next((job for job in self.snapshot.rows["running"] if job.id == job_id), None) if self.snapshot else None
        if job is None:
            return "A failed attempt, as if its worker had failed it."
        head = f"{job.type}, retries {job.retry_count}/{job.max_retries}: a failed attempt, as if its worker failed it"
        if has_retries_left(job):
            return f"{head}; retries are left, so it goes back to pending."
        return f"{head}; no retries are left, so it fails for good."

    def _fail(self, job_id: int, reason: str | None) -> None:
        if reason is None:
            return
        job = self.write("fail", lambda: self.repo.fail(job_id, reason or "failed by the operator"))
        if job is WRITE_FAILED:
            return
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

    def action_reap(self) -> None:
        self._on_main_screen()
        seconds = f"{self.stale_after.total_seconds():g} s"
        reaped = self.write("reap", lambda: self.repo.reap_stale(self.stale_after))
        if reaped is WRITE_FAILED:
            return
        if reaped:
            self.notify(f"Reaped {reaped} stale claim{'s' if reaped != 1 else ''} (no heartbeat for {seconds}).")
        else:
            self.notify(f"No stale claims: every running job showed life in the last {seconds}.")

    async def on_data_table_row_selected(self) -> None:
        """A click on the highlighted row opens its detail, as enter does."""
        await self.run_action("detail")

    def action_detail(self) -> None:
        self._on_main_screen()
        job_id = self.current_table.selected_job_id
        if job_id is None:
            self.notify("No job selected.", severity="warning")
            return
        self.push_screen(JobDetailScreen(self.repo, job_id))  # it reads the job on a thread worker

    def action_filter(self) -> None:
        self._on_main_screen()
        prompt = PromptScreen(
            "Filter by type",
            "Show only jobs of this type; empty shows every type.",
            value=self.type_filter or "",
            placeholder="job type, e.g. send-invoice",
            suggestions=self.known_types(),
            id="filter-prompt",
        )
        self.push_screen(prompt, self._set_filter)

    def _set_filter(self, value: str | None) -> None:
        if value is None:
            return
        self.type_filter = value or None
        self.request_refresh()

    def action_next_table(self) -> None:
        self._on_main_screen()
        tables = self.tables
        index = tables.index(self.current_table) if self.current_table in tables else -1
        tables[(index + 1) % len(tables)].focus()

    def action_help(self) -> None:
        self._on_main_screen()
        self.push_screen(HelpScreen(self.BINDINGS, self.stale_after.total_seconds()))

    def known_types(self) -> list[str]:
        """Types an operator may mean: those with a handler here, and those in the tables now."""
        shown = {job.type for jobs in self.snapshot.rows.values() for job in jobs} if self.snapshot else set()
        return sorted(set(handler_registry.names()) | shown)


def database_label(db: pw.Database) -> str:
    return str(db.database)


def main(argv: list[str] | None = None) -> NoReturn:
    args = parse_args(argv)
    url = args.db or default_url()
    problem = import_handler_modules(args.handlers)
    if problem:
        sys.exit(fail(problem))
    try:
        repo = JobRepository(open_database(url))
        if args.demo:
            refusal = None if args.force_demo else demo_refusal(repo)
            if refusal:
                sys.exit(fail(refusal))
            seed_demo(repo)
    except (QueueError, *DATABASE_ERRORS) as exc:
        sys.exit(fail(str(exc)))
    app = QueueConsole(
        repo,
        stale_after=timedelta(seconds=args.stale_after),
        refresh_interval=args.refresh,
        start_worker=args.worker or args.demo,
        worker_concurrency=args.concurrency,
        worker_shutdown_timeout=args.shutdown_timeout,
        worker_id=args.worker_id,
        db_label=url,
    )
    try:
        app.run()
    finally:
        app.stop_queue_worker_now()
    # Textual returns from run() after an unhandled exception too (its traceback already printed), with
    # return_code 1: pass that on, so a crash never exits 0.
    sys.exit(app.return_code or 0)


if __name__ == "__main__":
    main()
