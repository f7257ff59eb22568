"""The operator console: live pending / running / failed tables, actions on jobs, and an embedded worker.

Reads happen on a thread worker (``load_snapshot``) and come back as a message; writes too (the keys that
change jobs, ``console.actions``). The UI thread only renders, so neither a slow refresh against a big
database nor a write waiting for another process's lock ever blocks a key press.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import timedelta
from functools import partial
from typing import ClassVar, NoReturn

import peewee as pw
from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.widgets import Header

from queue_core.cli.args import fail
from queue_core.errors import QueueError
from queue_core.store.database import DATABASE_ERRORS, default_url, open_database, without_password
from queue_core.store.repository import JobRepository
from queue_core.tasks import Queue
from queue_core.validation import validate_type
from queue_core.worker.cli import adopt_queue_url, import_handler_modules
from queue_core.worker.handlers import registry as handler_registry
from queue_core.worker.scheduler import Schedule, describe_schedules

from .actions import JobActions
from .bulk import BULK_BINDINGS, BulkActions
from .controls import CONTROL_BINDINGS, QueueControls
from .demo import demo_refusal, seed_demo
from .embedded_worker import EmbeddedWorkerControls
from .failures import FailureGroupControls
from .formatting import header_text, short_duration, time_of_day
from .messages import RefreshFailed, SnapshotLoaded
from .options import DEFAULT_CONCURRENCY, DEFAULT_REFRESH, DEFAULT_STALE_AFTER, parse_args
from .query_line import QueryLine
from .read_only import ReadOnlyGuard, action_name
from .screens.detail import JobDetailScreen
from .screens.help import HelpScreen
from .screens.prompt import PromptScreen
from .screens.worker_jobs import WorkerJobsScreen
from .selection import JobSelection
from .serve import serve
from .snapshot import WINDOW, Snapshot, load_snapshot
from .views import VIEW_BINDINGS, VIEW_TITLES, ViewControls
from .widgets.command_panel import CommandPanel
from .widgets.footer import WrappingFooter
from .widgets.jobs.stats_bar import StatsBar
from .widgets.jobs.table import JobTable
from .widgets.worker.pane import WorkerPane

EVENT_REFRESH_DELAY = 0.25  # a burst of worker events becomes one refresh
# Seconds a read may go unanswered before the header says so (the first after the database went away can
# hang on a connect for as long as the network lets it: nothing has failed yet to say "disconnected").
SLOW_READ = 5.0


SHORT_TERMINAL = 32  # rows: below this the worker pane shows its state and two log lines, not eight
# Rows: below this (24, at 80 columns three lines more for the wrapped counts, views and footer) the job
# tables get every line the rest can spare: the worker pane shows its state line only, the command panel has
# no bottom border, and a table too wide for the terminal scrolls (→) without a scrollbar line.
TINY_TERMINAL = 26
HEADER_SIDES = 18  # columns of the header beside its title: the icon (8) and the clock's space (10)
# Columns: below this the header gives its title the clock's empty space and most of the icon's (console.tcss)
NARROW_TERMINAL = 100
NARROW_HEADER_SIDES = 3


class QueueConsole(
    ReadOnlyGuard,
    BulkActions,
    JobSelection,
    FailureGroupControls,
    JobActions,
    QueueControls,
    QueryLine,
    ViewControls,
    EmbeddedWorkerControls,
    App,
):
    CSS_PATH = "console.tcss"
    TITLE = "queue-core"
    BINDINGS: ClassVar[list[Binding]] = [
        *VIEW_BINDINGS,
        Binding("n", "enqueue", "Enqueue", id="enqueue", tooltip="enqueue a job through a form"),
        Binding("r", "retry", "Retry", id="retry", tooltip="retry the selection or the cursor job (asks first)"),
        Binding("f", "fail", "Fail", id="fail", tooltip="fail the selected running job (asks why)"),
        *CONTROL_BINDINGS,
        *BULK_BINDINGS,
        Binding("x", "reap", "Reap", id="reap", tooltip="reap stale claims and the jobs of lost workers now"),
        Binding("w", "toggle_worker", "Worker", id="worker", tooltip="start / stop the embedded worker"),
        # Enter and tab are priority bindings so the focused table does not take them; on a dialog
        # the actions step aside (SkipAction) and the dialog gets the key.
        Binding("enter", "detail", "Detail", id="detail", priority=True, tooltip="everything about the selected job"),
        Binding("slash", "query", "Query", id="query", key_display="/", tooltip="find jobs: type: status: text..."),
        # t and tab leave the footer to the bulk keys (C, D): the query line does what t does, tab is tab.
        Binding("t", "filter", "Type", id="filter", tooltip="show one job type only", show=False),
        Binding(
            "tab",
            "next_table",
            "Next",
            id="next-table",
            priority=True,
            tooltip="the next table: pending, running, failed",
            show=False,
        ),
        Binding("question_mark", "help", "Help", id="help", key_display="?", tooltip="this list of keys"),
        # Not "quit": that is also ctrl+q's, which quits from anywhere; q is a main-screen key (check_action).
        Binding("q", "quit_console", "Quit", id="quit", tooltip="quit (the embedded worker stops first)"),
    ]

    def __init__(
        self,
        repo: JobRepository,
        *,
        stale_after: timedelta = timedelta(seconds=DEFAULT_STALE_AFTER),
        refresh_interval: float | None = DEFAULT_REFRESH,
        start_worker: bool = False,
        worker_concurrency: int = DEFAULT_CONCURRENCY,
        worker_queues: dict[str, int] | None = None,
        worker_shutdown_timeout: float | None = None,
        worker_id: str | None = None,
        db_label: str | None = None,
        window: int = WINDOW,
        schedules: Iterable[Schedule] = (),
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self.repo = repo  # its clock drives what the console shows and writes (a fixed one in tests)
        self.stale_after = stale_after
        self.refresh_interval = refresh_interval
        self.start_worker_at_launch = start_worker
        self.worker_concurrency = worker_concurrency
        self.worker_queues = worker_queues  # slots per queue; None: every queue on worker_concurrency slots
        self.worker_shutdown_timeout = worker_shutdown_timeout  # None: the worker's own default
        self.worker_id = worker_id  # None: the worker's own (host and process id)
        self.db_label = db_label if db_label is not None else database_label(repo.db)
        self.window = window
        self.schedules = list(schedules)  # periodic jobs of the --handlers modules, for the schedules view
        self.read_only = read_only  # console.read_only: every write key disabled, no embedded worker
        self.init_views()
        self.type_filter: str | None = None
        self.snapshot: Snapshot | None = None
        self._loading = False
        self._reload = False
        self._soon_timer = None
        self._last_refresh_error: str | None = None  # set while refreshes fail: the header says so
        self._data_read_at = None  # this host's time when the data on screen were read (repo.local_now)
        self._loading_since = None  # this host's time when the read in flight started

    # --- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatsBar("loading…", id="stats")
        yield from self.compose_view_bar()
        yield from self.compose_views()
        yield CommandPanel(id="commands")
        yield WorkerPane(clock=self.repo.local_now, id="worker-pane")  # no round trip on the UI thread
        # 12 keys: the roomy footer cut the last ones off at 120 columns; below about 110, two lines
        yield WrappingFooter(compact=True)

    def on_mount(self) -> None:
        self.sub_title = self.db_label + (" · read-only" if self.read_only else "")
        self.show_view_bar()
        self.query_one("#pending", JobTable).focus()
        self.request_refresh()
        if self.refresh_interval:
            self.set_interval(self.refresh_interval, self.request_refresh)
        # Signals first: a SIGHUP that came after the worker claimed a job but before the handlers were in
        # place killed the process with the job still running (seen once in CI, under load).
        self.watch_signals()
        if self.start_worker_at_launch and not self.read_only:
            self.start_queue_worker()

    def on_unmount(self) -> None:
        self.unwatch_signals()

    def on_resize(self, event) -> None:
        # A short terminal (24 rows, say) gives the job tables the rows the worker pane's log would take.
        self.set_class(event.size.height < SHORT_TERMINAL, "-short")
        self.set_class(event.size.height < TINY_TERMINAL, "-tiny")
        self.set_class(event.size.width < NARROW_TERMINAL, "-narrow")
        self.call_later(self.update_sub_title)  # the room for the database label changed

    @property
    def tables(self) -> list[JobTable]:
        return self.query_one("#tables").tables

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
            action = partial(self.run_binding, binding)
            # The help is markup: no brackets around the key.
            yield SystemCommand(binding.description, f"{binding.tooltip} · key {key}", action)

    def notify(self, message: str, *, title: str = "", severity="information", timeout=None, markup=False) -> None:
        """A toast whose message is text, never markup: messages quote job types, errors and what was typed."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """On a dialog the main screen's keys do nothing (``_on_main_screen``): off the dialog's footer too,
        which lists the dialog's own keys. ``q`` among them: it closes the detail and the help, typed it is a
        letter, and on a question ("Delete 1,234 jobs?") or a bulk's progress it quit the console behind it;
        ctrl+q still quits from anywhere."""
        if len(self.screen_stack) > 1 and action in MAIN_SCREEN_ACTIONS:
            return False
        return super().check_action(action, parameters)

    def _on_main_screen(self) -> None:
        """Table actions belong to the main screen: on a dialog, let the dialog have the key."""
        if len(self.screen_stack) > 1:
            raise SkipAction()

    # --- refresh: read on a thread, render here ----------------------------------------------------

    def request_refresh(self) -> None:
        if self._last_refresh_error is not None or self._read_unanswered() is not None:
            self.update_sub_title()  # the header's clock moves on each tick, even while a read hangs
        if self._loading:
            self._reload = True  # one more right after the one in flight, never a queue of them
            return
        self._loading = True
        self._loading_since = self.repo.local_now()
        self.refresh_open_screens()
        after, page_number = self.page_request()
        self._load_snapshot(self.type_filter, self.refresh_query, self.view, after, page_number, self.view_reads())

    def refresh_open_screens(self) -> None:
        """A job detail or a worker's jobs open over the tables read again on the same cycle (one job by id,
        or one worker's running jobs)."""
        for screen in self.screen_stack[1:]:
            if isinstance(screen, JobDetailScreen | WorkerJobsScreen):
                screen.reread()

    def refresh_soon(self) -> None:
        if self._soon_timer is None:
            self._soon_timer = self.set_timer(EVENT_REFRESH_DELAY, self._refresh_from_timer)

    def _refresh_from_timer(self) -> None:
        self._soon_timer = None
        self.request_refresh()

    @work(thread=True, exit_on_error=False, group="refresh")
    def _load_snapshot(self, type_filter, job_query, view: str, after, page_number: int, reads: dict) -> None:
        try:
            with self.repo.db.connection_context():
                snapshot = load_snapshot(
                    self.repo,
                    type_filter=type_filter,
                    window=self.window,
                    stale_after=self.stale_after,
                    view=view,
                    after=after,
                    page_number=page_number,
                    extra_reads=reads,
                    query=job_query,
                )
        except Exception as exc:  # whatever it is, say so and keep refreshing (a silent death stops the tables)
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(SnapshotLoaded(snapshot))

    def _widgets_gone(self) -> bool:
        """True once the app is closing: a read still in flight when the operator quits is answered after
        the widgets are removed, and showing it raised NoMatches (seen once in CI, the worker-pane test)."""
        return not self.query(StatsBar)

    def on_snapshot_loaded(self, message: SnapshotLoaded) -> None:
        if self._widgets_gone():
            return
        self._loading = False
        self._last_refresh_error = None
        snapshot = message.snapshot
        asked = (self.type_filter, self.query_text, self.view, self.page_request()[1])
        page = snapshot.pages.get(snapshot.view)
        if (snapshot.type_filter, snapshot.query_text, snapshot.view, snapshot.page_number) != asked:
            self._reload = True  # the filter, the view or the page changed while this was loading
        elif page is not None and page.number > 1 and not page.rows:
            # Every job from this page on is gone (a bulk delete, a prune): back to the first page, not an
            # empty page 2 under a header that counts jobs.
            self._page_cursors[snapshot.view] = [None]
            self._reload = True
        else:
            self.show_snapshot(snapshot)
        self._reload_if_asked()

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        if self._widgets_gone():
            return
        self._loading = False
        if message.error != self._last_refresh_error:
            self.notify(f"Cannot read the queue: {message.error}", title="Refresh failed", severity="error")
        self._last_refresh_error = message.error
        self.update_sub_title()
        # A banner in place of the counts until a refresh works again (the next snapshot replaces it): the
        # tables below still show the last data read, and a toast alone would be gone in seconds.
        first_line = (message.error.splitlines() or [""])[0]
        self.query_one(StatsBar).show_banner(Text(f"⚠ disconnected: {first_line} · retrying", style="bold red"))
        self._reload_if_asked()

    def _reload_if_asked(self) -> None:
        if self._reload:
            self._reload = False
            self.request_refresh()

    def show_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._data_read_at = self.repo.local_now()
        self.update_sub_title()
        with self.batch_update():
            self.query_one(StatsBar).show(snapshot)
            self.show_views(snapshot)
            # The worker frees a slot after it reports the job: drawn on its events only, the pane said
            # "running 1" under an idle worker until the next event. Its counters are in memory: no read.
            self.worker_pane.show_state()

    def update_sub_title(self) -> None:
        """The header's second part: database, view, scope, time, and the selection and read-only notes."""
        snapshot = self.snapshot
        mode = " · read-only" if self.read_only else ""
        if snapshot is None:
            if self._last_refresh_error is not None:  # nothing read since the console started
                self.sub_title = f"{self.db_label}{mode} · {self.clock_text()}"
            return
        view = VIEW_TITLES.get(self.view, self.view.capitalize())
        tail = f"{self.clock_text()}{self.selection_note()}"
        self.sub_title = header_text(
            self.db_label,
            view,
            snapshot.type_filter,
            snapshot.query_text,
            tail,
            self.sub_title_room(),
            mode=mode.removeprefix(" · "),
        )

    def sub_title_room(self) -> int:
        """The characters the header has for the sub-title: its title line, less "queue-core — "."""
        sides = NARROW_HEADER_SIDES if self.has_class("-narrow") else HEADER_SIDES
        return self.size.width - sides - len(self.title) - len(" — ")

    def _read_unanswered(self) -> float | None:
        """Seconds the read in flight has gone unanswered, once past ``SLOW_READ``; else None."""
        if not self._loading or self._loading_since is None:
            return None
        waited = (self.repo.local_now() - self._loading_since).total_seconds()
        return waited if waited >= SLOW_READ else None

    def clock_text(self) -> str:
        """The header's time: the data's (the queue's clock); while refreshes fail or go unanswered, this
        host's clock, which needs no database, and how old the data on screen are."""
        waited = self._read_unanswered()
        if self._last_refresh_error is None and waited is not None and self._data_read_at is not None:
            now, read_at = self.repo.local_now(), self._data_read_at
            return (
                f"{time_of_day(now)} UTC · ⚠ no answer from the database for {short_duration(waited)}, "
                f"data from {time_of_day(read_at)}"
            )
        if self._last_refresh_error is None:
            return f"{time_of_day(self.snapshot.now)} UTC"
        now = self.repo.local_now()
        if self._data_read_at is None:
            return f"{time_of_day(now)} UTC · ⚠ disconnected, nothing read yet"
        age = short_duration((now - self._data_read_at).total_seconds())
        return f"{time_of_day(now)} UTC · ⚠ disconnected, data from {time_of_day(self._data_read_at)} ({age} old)"

    # --- keys that look (the keys that change jobs are in console.actions) -------------------------

    async def on_data_table_row_selected(self) -> None:
        """A click on the highlighted row opens its detail, as enter does."""
        await self.run_action("detail")

    def action_detail(self) -> None:
        self._on_main_screen()
        if self.view == "failures":
            self.select_failure_group()
            return
        if self.view == "workers":
            self.show_worker_jobs()
            return
        if self.view == "queues":
            self.show_queue_jobs()
            return
        if self.view not in ("tables", "scheduled", "completed", "cancelled"):
            raise SkipAction()  # the view's own table has the key
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
            # A paste gone wrong (a NUL, an escape) matches no job's type, and PostgreSQL refuses a NUL in the
            # filter's bound value: each refresh then failed and the header said "disconnected".
            check=validate_type,
            id="filter-prompt",
        )
        self.push_screen(prompt, self._set_filter)

    def _set_filter(self, value: str | None) -> None:
        if value is None:
            return
        self.type_filter = value or None
        self.reset_pages()
        self.request_refresh()

    def action_next_table(self) -> None:
        self._on_main_screen()
        if self.view != "tables":
            raise SkipAction()  # one table on the other views: tab moves focus as usual
        tables = self.query_one("#tables").shown_tables  # never a table the terminal is too short to show
        index = tables.index(self.current_table) if self.current_table in tables else -1
        tables[(index + 1) % len(tables)].focus()

    def action_help(self) -> None:
        self._on_main_screen()
        self.push_screen(HelpScreen(self.BINDINGS, self.stale_after.total_seconds()))

    def read_schedules(self, repo: JobRepository, now) -> list:
        """On the refresh thread: each schedule's last run (a read) and next run."""
        return describe_schedules(repo, self.schedules, now)

    def known_types(self) -> list[str]:
        """Types an operator may mean: those with a handler here, and those in the tables now."""
        shown = {job.type for jobs in self.snapshot.rows.values() for job in jobs} if self.snapshot else set()
        return sorted(set(handler_registry.names()) | shown)


MAIN_SCREEN_ACTIONS = frozenset(action_name(binding.action) for binding in QueueConsole.BINDINGS)


def schedules_of(module_names: list[str]) -> list[Schedule]:
    """The periodic jobs the ``--handlers`` modules declare: each module-level ``Queue``'s schedules."""
    schedules = []
    for name in module_names:
        module = sys.modules.get(name)
        queues = [value for value in vars(module).values() if isinstance(value, Queue)] if module else []
        for queue in queues:
            schedules += [schedule for schedule in queue.schedules if schedule not in schedules]
    return schedules


def database_label(db: pw.Database) -> str:
    return str(db.database)


def main(argv: list[str] | None = None) -> NoReturn:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.serve:
        serve(argv, args.host, args.port, read_only=args.read_only, db=args.db)
        sys.exit(0)
    # The --handlers modules first: with no --db (nor $QUEUE_DB_URL) the console opens the database their
    # Queue names, as a worker of them and ``python -m queue_core schedules --handlers`` do.
    problem = import_handler_modules(args.handlers) or adopt_queue_url(args)
    if problem:
        sys.exit(fail(problem))
    url = args.db or default_url()
    try:
        # Read-only looks and never writes: a mistyped SQLite path is an error, not a new empty queue there,
        # and tables of an older queue_core are an error, not upgraded.
        repo = JobRepository(open_database(url, create=not args.read_only, upgrade=not args.read_only))
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
        worker_queues=args.queues,
        worker_shutdown_timeout=args.shutdown_timeout,
        worker_id=args.worker_id,
        db_label=without_password(url),  # the header is on screen (and in a browser with --serve)
        schedules=schedules_of(args.handlers),
        read_only=args.read_only,
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
