"""The embedded worker: w starts it, it runs pending jobs in this process; stopping or quitting leaves none running."""

from __future__ import annotations

import pytest
from console_helpers import log_text, screen_lines, settle, wait_for

from console.app import QueueConsole
from console.messages import QueueWorkerStopped, RefreshFailed, SnapshotLoaded, WorkerEventReceived
from console.screenshots import show_worker_run
from console.widgets.worker.pane import WorkerPane
from queue_core.store.repository import JobRepository

pytestmark = pytest.mark.asyncio
SIZE = (120, 40)


def console_on(repo: JobRepository, **options) -> QueueConsole:
    options.setdefault("refresh_interval", None)
    return QueueConsole(repo, db_label="worker.db", **options)


@pytest.mark.backends("sqlite", "postgresql")
async def test_w_starts_the_worker_and_it_runs_the_pending_jobs(db):
    repo = JobRepository(db)  # the real clock: the worker polls in real time
    ids = [repo.create("echo", {"message": f"hello {i}"})[0].id for i in range(5)]
    app = console_on(repo, worker_concurrency=2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one("#pending").row_count == 5
        await pilot.press("w")
        assert app.queue_worker.is_running and app.worker_pane.state == "running"
        await wait_for(pilot, lambda: repo.counts()["completed"] == 5, "the worker completes the five jobs")
        await wait_for(pilot, lambda: log_text(app).count("completed") >= 5, "the log shows each completion")
        app.request_refresh()
        await settle(pilot)
        assert app.query_one("#pending").row_count == 0
        state = str(app.query_one("#worker-state").render())
        assert "running" in state and app.queue_worker.worker_id in state and "done 5" in state
        for job_id in ids:
            assert f"{job_id}" in log_text(app)

        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")
        assert not app.queue_worker.is_running
        assert "stopped" in str(app.query_one("#worker-state").render())


async def test_the_tables_follow_the_worker_without_a_refresh_timer(db):
    repo = JobRepository(db)
    for i in range(3):
        repo.create("echo", {"message": f"hi {i}"})
    app = console_on(repo)  # refresh_interval=None: only worker events can bring the tables up to date
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one("#pending").row_count == 3
        await pilot.press("w")
        await wait_for(pilot, lambda: app.query_one("#pending").row_count == 0, "the pending table empties by itself")
        assert app.snapshot.counts["completed"] == 3
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")


async def test_failures_show_in_the_log_and_the_failed_table(db):
    repo = JobRepository(db)
    job, _ = repo.create("fail", {"error": "card declined"}, max_retries=0)
    app = console_on(repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.find_by_id(job.id).status == "failed", "the fail job fails")
        await wait_for(pilot, lambda: "failed" in log_text(app), "the log shows the failure")
        app.request_refresh()
        await settle(pilot)
        assert [row.key.value for row in app.query_one("#failed").ordered_rows] == [str(job.id)]
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.queue_worker.is_running, "q stops the worker")


@pytest.mark.backends("sqlite", "postgresql")
async def test_quit_never_leaves_a_job_running(db):
    repo = JobRepository(db)
    job, _ = repo.create("sleep", {"seconds": 3})
    app = console_on(repo, worker_shutdown_timeout=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.find_by_id(job.id).status == "running", "the worker claims the sleep")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.queue_worker.is_running, "q stops the worker before leaving")
    assert app.return_code == 0
    stored = repo.find_by_id(job.id)
    # Too long to finish within the shutdown timeout: released, without counting a retry.
    assert (stored.status, stored.retry_count, stored.worker_id) == ("pending", 0, None)
    assert repo.counts()["running"] == 0


async def test_a_worker_stop_heard_once_the_pane_is_gone_is_no_error(db):
    """The stop's thread posts QueueWorkerStopped; heard as the console closes, its widgets already taken
    down, the handler raised NoMatches (seen once in a test run, a traceback on the operator's way out)."""
    app = console_on(JobRepository(db))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: app.queue_worker.is_running, "the worker runs")
        app.queue_worker.stop()
        # As the closing console takes its widgets down: all of them, so that a refresh landing meanwhile
        # finds the app closing too (removing the pane alone left a console no operator can reach, and a
        # refresh there failed on the pane in CI).
        await app.screen.remove_children()
        assert not app.query(WorkerPane)
        app.request_refresh()  # one lands meanwhile, every time: it is no error either
        app.post_message(QueueWorkerStopped(False))
        await app.workers.wait_for_complete()  # the read and the stop's thread done (settle would wait for a
        await pilot.pause()  # refresh to be shown, and a closing console shows none), and their answers heard
        assert not app._stopping_worker and app.return_code is None  # heard, and the console goes on


async def test_a_second_q_releases_running_jobs_at_once(db):
    repo = JobRepository(db)
    job, _ = repo.create("sleep", {"seconds": 20})
    app = console_on(repo)  # the worker's own shutdown timeout: 30 s, longer than this test waits
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.find_by_id(job.id).status == "running", "the worker claims the sleep")
        await pilot.press("q")
        assert app.worker_pane.state == "stopping"
        assert any("Press q again" in n.message for n in app._notifications)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.queue_worker.is_running, "the second q releases it", timeout=10)
    assert repo.find_by_id(job.id).status == "pending"


@pytest.mark.backends("sqlite", "postgresql")
async def test_the_embedded_worker_hears_of_new_jobs_and_stops_its_listener(db, db_url):
    repo = JobRepository(db)
    app = console_on(repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        # PostgreSQL: LISTEN/NOTIFY; SQLite: the data_version watcher (store.watch). Either wakes the idle worker;
        # the Worker starts it itself (the console no longer does).
        await wait_for(pilot, lambda: app.queue_worker is not None and app.queue_worker.listening, "its listener")
        job, _ = repo.create("echo", {"message": "wake up"})
        await wait_for(pilot, lambda: repo.find_by_id(job.id).status == "completed", "the woken worker")
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")
        assert not app.queue_worker.listening


async def test_the_embedded_worker_registers_and_keeps_to_its_queues(db):
    repo = JobRepository(db)
    mail, _ = repo.create("echo", {"message": "mail"}, queue="mail")
    other, _ = repo.create("echo", {"message": "other"}, queue="reports")
    app = console_on(repo, worker_queues={"mail": 2}, worker_id="console-1")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.find_by_id(mail.id).status == "completed", "the mail job to run")
        (row,) = [w for w in repo.workers() if w.id == "console-1"]
        assert (row.state, row.concurrency, list(row.queues)) == ("running", 2, ["mail"])
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")
    assert repo.find_by_id(other.id).status == "pending"  # not one of its queues
    assert [w.state for w in repo.workers() if w.id == "console-1"] == ["stopped"]


async def test_the_embedded_worker_runs_the_schedules_of_the_handler_modules(db):
    """``queue-console --handlers tasks --worker`` never enqueued the periodic jobs of ``tasks``: the schedules
    view showed a next run that came and went with "last run: never". The embedded worker runs the scheduler
    as every worker of those modules does: the latest tick is enqueued at its start, once, and run."""
    from queue_core.worker.scheduler import Schedule

    repo = JobRepository(db)
    every_minute = Schedule(name="every-minute", cron="* * * * *", type="echo", payload={"message": "tick"})
    app = console_on(repo, schedules=[every_minute])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert repo.list(type="echo") == []
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.counts()["completed"] >= 1, "the tick's job enqueued and run")
        job = repo.list(type="echo")[0]  # a minute may have turned: a second tick
        assert job.idempotency_key.startswith("periodic:every-minute:") and job.payload == {"message": "tick"}
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")


async def test_a_read_answered_after_the_app_closed_is_dropped(db):
    """A refresh still reading when the operator quits is answered after the widgets are gone: showing it
    raised NoMatches (a traceback on the way out), once in CI, at the end of the first test here."""
    repo = JobRepository(db)
    repo.create("echo", {"message": "hi"})
    app = console_on(repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        late = app.snapshot
    app.on_snapshot_loaded(SnapshotLoaded(late))  # the widgets are gone: nothing to show, nothing raised
    app.on_refresh_failed(RefreshFailed("OperationalError: database is locked"))
    assert app.snapshot is late


async def test_the_log_stamps_events_without_the_database(db, monkeypatch):
    """The pane's times are this host's: on PostgreSQL the queue's clock is a round trip, and the event that
    arrives when the database is gone ("error") crashed the console when stamping it needed the database."""
    from queue_core.worker.events import WorkerEvent

    repo = JobRepository(db)  # no clock injected: the server's now() on PostgreSQL
    app = console_on(repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")  # the pane shows its log once a worker has run
        await wait_for(pilot, lambda: "started" in log_text(app), "the worker's first line")

        def gone(*args, **kwargs):
            raise OSError("server closed the connection unexpectedly")

        with monkeypatch.context() as patch:
            patch.setattr(repo.db, "execute_sql", gone)
            patch.setattr(app, "request_refresh", lambda: None)  # the refresh's own handling is tested elsewhere
            event = WorkerEvent("error", "w1", message="database error: the server is gone")
            app.worker_pane.post_message(WorkerEventReceived(event))
            await wait_for(pilot, lambda: "the server is gone" in log_text(app), "the error line in the log")
            assert app.is_running
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")


async def test_on_a_short_terminal_the_pane_leaves_the_job_tables_their_rows(db):
    """At 80x24 the running pane's eight log lines squashed the running table to its title and left no row
    for the failed one; below 32 rows the pane shows its state and two lines, below 26 (at 80 columns the
    counts, the views and the footer take two lines each) its state line only, with no border."""
    repo = JobRepository(db)
    app = console_on(repo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "running", "the worker runs")
        await settle(pilot)
        assert app.worker_pane.outer_size.height == 1  # its state line, no border
        for status in ("pending", "running", "failed"):
            table = app.query_one(f"#{status}")
            assert table.outer_size.height >= table.frame_height + 1, status  # border, header and a row
        await pilot.resize_terminal(80, 30)
        await settle(pilot)
        assert app.worker_pane.outer_size.height == 5
        await pilot.resize_terminal(140, 45)
        await settle(pilot)
        assert app.worker_pane.outer_size.height == 11
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")


async def test_the_pane_counts_follow_the_worker_after_its_last_event(db):
    """The worker frees a job's slot after it reports the job: the pane, drawn on events only, said
    "running 1" under an idle worker until its next event (at the end of a burst: until the next job)."""
    from console.demo import ReplayedWorker
    from queue_core.worker.events import WorkerEvent
    from queue_core.worker.loop import WorkerStats

    repo = JobRepository(db)
    app = console_on(repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        worker = ReplayedWorker("w1", 2, WorkerStats(completed=1, failed=0, running=1))
        app.worker_pane.set_state("running", worker)
        app.worker_pane.post_message(WorkerEventReceived(WorkerEvent("completed", "w1", job_id=7, job_type="echo")))
        await settle(pilot)
        assert "running 1" in str(app.query_one("#worker-state").render())
        app.worker_pane.worker = ReplayedWorker("w1", 2, WorkerStats(completed=1, failed=0, running=0))  # slot freed
        app.request_refresh()
        await settle(pilot)
        state = str(app.query_one("#worker-state").render())
        assert "done 1" in state and "running 0" in state


async def test_a_log_line_too_long_for_the_pane_ends_in_an_ellipsis_and_a_resize_fits_it_again(make_app):
    """Unwrapped, the log cut a long line at the pane's edge: "· 0.01s · c" looked like a whole line. Cut, it
    ends in "…"; on a wider terminal the same line shows whole."""
    app = make_app(worker_id="console-demo:1")
    async with app.run_test(size=(60, 40)) as pilot:
        await show_worker_run(pilot)

        def failed_line() -> str:
            (line,) = [line for line in screen_lines(app) if "failed     job" in line]
            return line.strip("│ ▃")

        assert failed_line().endswith("0.01s · …"), failed_line()
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert failed_line().endswith("0.01s · card declined"), failed_line()
        await pilot.resize_terminal(60, 40)
        await pilot.pause()
        assert failed_line().endswith("…"), failed_line()


async def test_on_a_narrow_terminal_the_state_line_keeps_the_counters_and_cuts_with_an_ellipsis(make_app):
    """At 60 columns the state line was cut at the pane's edge after "done 3": the failed and running counts
    were gone and nothing said so. Too narrow, the counters come first and the id is cut with "…"."""
    app = make_app(worker_id="console-demo:1")
    async with app.run_test(size=(60, 40)) as pilot:
        await settle(pilot)
        state = app.query_one("#worker-state")

        def state_line() -> str:
            return screen_lines(app)[state.region.y][state.region.x : state.region.right]

        assert state_line().rstrip().endswith("…"), state_line()  # "press w to run jobs … embedded worker"
        await show_worker_run(pilot)
        assert state_line().startswith("● running  done 3  failed 1  running 2  │  id cons"), state_line()
        assert state_line().rstrip().endswith("…"), state_line()
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert "● running  id console-demo:1  concurrency 2  │  done 3  failed 1  running 2" in state_line()
        await pilot.resize_terminal(60, 40)
        await pilot.pause()
        assert state_line().startswith("● running  done 3"), state_line()
