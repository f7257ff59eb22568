"""Pilot tests of the views: the real number and letter keys, then a look at what the database holds."""

from __future__ import annotations

from datetime import timedelta

import peewee as pw
import pytest
from console_helpers import asked_then, settle

from console.app import QueueConsole
from console.screens import worker_jobs
from console.screens.confirm import ConfirmScreen
from console.screens.detail import JobDetailScreen
from console.screens.worker_jobs import WorkerJobsScreen
from console.snapshot import NOT_NARROWED
from console.widgets.activity.view import ActivityView
from console.widgets.jobs.paged import PagedJobTable
from console.widgets.queues.table import QueuesTable
from console.widgets.schedules.view import SchedulesView
from console.widgets.workers.table import WorkersTable
from queue_core.store.pages import page
from queue_core.store.repository import JobRepository
from queue_core.worker.scheduler import Schedule

pytestmark = pytest.mark.asyncio


def shown_ids(table) -> list[int]:
    return [int(row.key.value) for row in table.ordered_rows]


@pytest.mark.backends("sqlite", "postgresql")
async def test_completed_view_pages_by_keyset_with_page_down_and_back(make_app, scene, db_url):
    """Runs on both backends. ``d`` shows one window; page down on its last row loads the next, page up
    on the first row the one before, each exactly the page the store reads after that cursor."""
    app = make_app(window=10)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        table = app.query_one("#completed", PagedJobTable)
        assert app.focused is table and app.view == "completed"
        first = page(scene, "completed", limit=10)
        assert shown_ids(table) == [row.id for row in first.rows]
        await pilot.press("ctrl+end", "pagedown")
        await settle(pilot)
        second = page(scene, "completed", after=first.next_after, limit=10)
        assert shown_ids(table) == [row.id for row in second.rows]
        assert table.row_count == 10 and table.cursor_row == 0  # one window held, the cursor at its top
        assert "page 2 · 11–20" in str(table.border_title)
        await pilot.press("pageup")
        await settle(pilot)
        assert shown_ids(table) == [row.id for row in first.rows] and table.cursor_row == 9


async def test_a_page_whose_jobs_are_all_deleted_goes_back_to_the_first(make_app, scene, db_url):
    """A bulk delete of the jobs from page 2 on left "page 2 · none" under a header counting jobs, until
    page up: the view goes back to its first page by itself."""
    app = make_app(window=10)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d", "ctrl+end", "pagedown")
        await settle(pilot)
        table = app.query_one("#completed", PagedJobTable)
        assert "page 2" in str(table.border_title)
        first = page(scene, "completed", limit=10)
        later = [job.id for job in scene.list("completed", limit=1000) if job.id not in {r.id for r in first.rows}]
        assert later, "the scene has more than one page of completed jobs"
        scene.bulk("delete", ids=later)
        app.request_refresh()
        await settle(pilot)
        await settle(pilot)
        assert "page 2" not in str(table.border_title)
        assert shown_ids(table) == [row.id for row in first.rows]


async def test_scheduled_and_cancelled_views_show_their_states(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        scheduled = app.query_one("#scheduled", PagedJobTable)
        expected = [row.id for row in page(scene, "scheduled").rows]
        assert expected and shown_ids(scheduled) == expected
        assert all(scene.find_by_id(i).run_at > scene.now() for i in expected)
        await pilot.press("k")
        await settle(pilot)
        assert app.view == "cancelled" and app.focused.id == "cancelled"
        await pilot.press("1")
        await settle(pilot)
        assert app.view == "tables" and app.focused.id == "pending"


async def test_refresh_keeps_the_cursor_on_its_row_in_a_paged_view(make_app, scene, scene_clock):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d", "down", "down")
        await settle(pilot)
        table = app.query_one("#completed", PagedJobTable)
        chosen = table.selected_job_id
        scene_clock.advance(1)
        claimed = scene.claim("w")  # completes after every shown job: it lands above the chosen one
        scene.complete(claimed.id, worker_id="w", attempt=claimed.attempt)
        app.request_refresh()
        await settle(pilot)
        assert shown_ids(table)[0] == claimed.id
        assert table.selected_job_id == chosen


@pytest.mark.backends("sqlite", "postgresql")
async def test_activity_view_charts_the_last_hour(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        view = app.query_one(ActivityView)
        assert app.view == "activity" and app.snapshot.activity is not None
        completed = app.snapshot.activity.series["completed"]
        assert len(completed) == 60 and sum(completed) == scene.counts()["completed"]  # the scene is < 1 h
        assert view.query_one("#completed-chart").data == completed
        assert "Activity" in app.sub_title


async def test_schedules_view_lists_each_schedule_or_says_there_are_none(make_app, scene, db_url):
    nightly = Schedule(name="nightly-report", cron="0 3 * * *", type="report")
    app = make_app(schedules=[nightly])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        table = app.query_one(SchedulesView)
        assert table.row_count == 1
        row = table.get_row("nightly-report")
        assert [str(row[1]), str(row[3]), str(row[5])] == ["0 3 * * *", "never", "01-02 03:00 UTC"]
    empty = make_app()
    async with empty.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        assert "none" in str(empty.query_one(SchedulesView).border_title)


async def open_view(app, pilot, key: str) -> None:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)


async def test_queues_view_pauses_and_resumes_the_selected_queue_after_asking(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(app, pilot, "2")
        table = app.query_one(QueuesTable)
        assert app.focused is table and list(table.states) == ["default", "mail", "reports"]
        assert table.states["reports"].paused and "1 paused" in str(app.query_one("#view-bar").render())
        await pilot.press("down")  # mail
        await pilot.press("p")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # no: nothing changes
        await settle(pilot)
        assert not scene.queue_state("mail").paused
        await pilot.press("p", "y")
        await settle(pilot)
        assert scene.queue_state("mail").paused
        assert table.selected_queue.name == "mail" and table.selected_queue.paused  # the cursor stayed on its queue
        await pilot.press("p", "enter")
        await settle(pilot)
        assert not scene.queue_state("mail").paused


async def test_enter_on_a_queue_shows_the_jobs_view_narrowed_to_that_queue(make_app, scene, db_url):
    app = make_app()
    repo = JobRepository(app.repo.db)
    mail = {job.id for job in repo.list(limit=1000) if job.queue == "mail" and job.status == "pending"}
    assert mail  # the scene has pending mail jobs, and jobs of other queues
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(app, pilot, "2")
        await pilot.press("down", "enter")  # mail
        await settle(pilot)
        assert app.view == "tables" and app.query_text == "queue:mail"
        assert set(shown_ids(app.query_one("#pending"))) == mail
        await pilot.press("escape")  # clears the query
        await settle(pilot)
        assert app.query_text == "" and set(shown_ids(app.query_one("#pending"))) > mail


@pytest.mark.backends("sqlite", "postgresql")
async def test_workers_view_shows_lost_workers_and_enter_lists_the_jobs_held(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(app, pilot, "3")
        table = app.query_one(WorkersTable)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == [
            "host-a:412",
            "host-b:413",
            "host-c:977",
        ]
        lost = table.get_row("host-c:977")
        assert str(lost[5]) == "lost · silent 6m00s" and lost[0].style == "bold red"
        assert "1 lost" in str(app.query_one("#view-bar").render())
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, WorkerJobsScreen)
        held = app.screen.query_one("#held")
        expected = [job.id for job in scene.list("running") if job.worker_id == "host-c:977"]
        assert [int(row.key.value) for row in held.ordered_rows] == expected and expected
        await pilot.press("escape")
        assert not isinstance(app.screen, WorkerJobsScreen)


async def test_enter_pressed_twice_on_a_worker_opens_one_list(make_app, scene):
    """The list is read on a thread: a second enter before it answered opened a second list under the first,
    so escape seemed to do nothing (the same list again)."""
    from textual import events

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(app, pilot, "3")
        for _ in range(2):  # both arrive before the first read answers
            event = events.Key("enter", "\r")
            event.set_sender(app)
            app._driver.send_message(event)
        await pilot.pause(0.2)
        await settle(pilot)
        assert [type(screen) for screen in app.screen_stack[1:]] == [WorkerJobsScreen]
        await pilot.press("escape")
        assert len(app.screen_stack) == 1
        await pilot.press("enter")  # read again once the first answer is in
        await settle(pilot)
        assert isinstance(app.screen, WorkerJobsScreen)


async def test_enter_on_the_workers_view_with_the_database_away_says_so_and_keeps_running(
    make_app, scene, db_url, monkeypatch
):
    def locked(*args, **kwargs):
        raise pw.OperationalError("database is locked")

    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_view(app, pilot, "3")
        monkeypatch.setattr(worker_jobs, "held_by", locked)  # what read_held reads through
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running and not isinstance(app.screen, WorkerJobsScreen)
        said = [notification.message for notification in app._notifications]
        assert any("Could not read the jobs" in text and "database is locked" in text for text in said), said
        monkeypatch.undo()
        await pilot.press("enter")  # a failed read leaves enter working
        await settle(pilot)
        assert isinstance(app.screen, WorkerJobsScreen)


async def test_a_workers_jobs_follow_it_on_the_refresh_cycle_and_a_failed_read_keeps_the_list(
    make_app, scene, db_url, monkeypatch
):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(app, pilot, "3")
        await pilot.press("down", "down", "enter")  # host-c:977, which holds running jobs
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WorkerJobsScreen)

        def shown() -> list[int]:
            return [int(row.key.value) for row in screen.query_one("#held").ordered_rows]

        held = shown()
        assert held and "Jobs held by host-c:977" in str(screen.query_one("#held-title").render())
        first = scene.find_by_id(held[0])
        scene.complete(first.id, worker_id=first.worker_id, attempt=first.attempt)  # it finished one
        app.request_refresh()
        await settle(pilot)
        assert app.screen is screen and shown() == held[1:]
        assert f": {len(held) - 1}" in str(screen.query_one("#held-title").render())

        def locked(*args, **kwargs):
            raise pw.OperationalError("database is locked")

        monkeypatch.setattr(worker_jobs, "held_by", locked)
        app.request_refresh()
        await settle(pilot)
        assert app.screen is screen and shown() == held[1:]  # kept, and said not to be current
        assert "not current" in str(screen.query_one("#held-hint").render())
        monkeypatch.undo()
        app.request_refresh()
        await settle(pilot)
        assert "not current" not in str(screen.query_one("#held-hint").render())


async def test_c_cancels_the_selected_pending_job_after_asking(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        job_id = app.focused.selected_job_id
        assert await asked_then(pilot, "c", "escape") == f"Cancel pending job {job_id}?"
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert scene.find_by_id(job_id).status == "pending"
        await asked_then(pilot, "c", "y")
        await settle(pilot)
        assert scene.find_by_id(job_id).status == "cancelled"
        await pilot.press("k")
        await settle(pilot)
        assert job_id in shown_ids(app.query_one("#cancelled", PagedJobTable))


async def test_c_on_a_running_job_asks_its_worker(make_app, scene):
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("tab")
        job_id = app.focused.selected_job_id
        question = await asked_then(pilot, "c", "y")
        assert question.startswith(f"Cancel running job {job_id}?\n") and "its worker is asked to cancel it" in question
        await settle(pilot)
        job = scene.find_by_id(job_id)
        assert job.status == "running" and job.cancel_requested


async def test_enqueue_form_takes_a_queue_and_a_delay(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("n", *"echo", "tab", "tab", "tab", "tab", *"later-1", "tab")
        await pilot.press(*"mail", "tab", *"5m", "enter")  # a field tabbed into has its text selected
        await settle(pilot)
        job = scene.find_by_idempotency_key("later-1")
        assert job.queue == "mail" and job.run_at == scene.now() + timedelta(minutes=5)
        await pilot.press("s")
        await settle(pilot)
        assert job.id in shown_ids(app.query_one("#scheduled", PagedJobTable))


async def test_a_bad_delay_is_refused_in_the_form(make_app, scene):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n", *"echo", "tab", "tab", "tab", "tab", "tab", "tab", *"soon", "enter")
        await settle(pilot)
        assert "is not a delay" in str(app.screen.query_one("#form-error").render())
        assert app.screen.focused.id == "delay"


async def test_detail_shows_queue_attempt_result_and_cancel_request(make_app, scene):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab")  # running: the stale one first
        job_id = app.focused.selected_job_id
        scene.cancel(job_id)
        await pilot.press("enter")
        await settle(pilot)
        text = str(app.screen.query_one("#detail-fields").render())
        assert "queue" in text and "default" in text and "attempt" in text and "requested" in text


async def test_the_schedules_view_gets_the_handler_modules_periodic_jobs(tmp_path, monkeypatch):
    from console.app import schedules_of

    (tmp_path / "nightly_tasks.py").write_text(
        "from queue_core.tasks import Queue\n"
        "from queue_core.worker.handlers import HandlerRegistry\n"
        f"queue = Queue('sqlite:///{tmp_path}/q.db', registry=HandlerRegistry())\n"
        "@queue.periodic('0 3 * * *')\n"
        "def nightly():\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("nightly_tasks")
    [schedule] = schedules_of(["nightly_tasks", "not_imported"])
    assert (schedule.name, schedule.cron) == ("nightly", "0 3 * * *")


@pytest.mark.backends("sqlite", "postgresql")
async def test_the_query_line_narrows_every_table_and_escape_clears_it(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"status:fail", "enter")
        assert "status: is one of" in str(app.screen.query_one("#query-error").render())  # said under the line
        await pilot.press("ctrl+u", *"type:send-invoice mailbox", "enter")  # ctrl+u: delete to the start
        await settle(pilot)
        shown = [job for status in ("pending", "running", "failed") for job in app.snapshot.rows[status]]
        assert [job.id for job in shown] == [job.id for job in scene.list("failed", type="send-invoice")]
        assert app.snapshot.counts["failed"] == 1 and app.snapshot.counts["pending"] == 0
        assert "query type:send-invoice mailbox" in app.sub_title
        await pilot.press("d")
        await settle(pilot)
        assert shown_ids(app.query_one("#completed", PagedJobTable)) == []  # the query applies here too
        await pilot.press("escape")
        await settle(pilot)
        assert app.job_query is None and app.snapshot.counts == scene.counts()


@pytest.mark.backends("sqlite", "postgresql")
async def test_a_hostile_query_is_a_value_never_sql(make_app, scene):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = scene.counts()
        await pilot.press("slash", *'"\'; DROP TABLE jobs; --" payload.x:%', "enter")
        await settle(pilot)
        assert app.is_running and app.job_query is not None
        assert sum(app.snapshot.counts.values()) == 0 and scene.counts() == before


async def test_enter_on_the_workers_view_with_no_worker_says_why_nothing_opens(db):
    """Review finding: enter on an empty workers view did nothing and said nothing (on an empty jobs table it
    says "No job selected.")."""
    app = QueueConsole(JobRepository(db), refresh_interval=None, db_label="empty.db")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert [n.message for n in app._notifications] == [
            "No worker selected: none has registered yet (a worker registers when it starts)."
        ]


@pytest.mark.parametrize("view", ["2", "3", "4", "5", "6"])
async def test_fail_off_the_jobs_views_names_no_job_that_is_not_on_screen(make_app, view):
    """Review finding: f on the queues, workers, schedules, activity or causes view said "job 53 is pending",
    a job of the pending table hidden under that view."""
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press(view)
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert len(app.screen_stack) == 1
        (message,) = [n.message for n in app._notifications]
        assert message == "No job to fail: select one in the Running table (press 1 for the live tables)."


async def test_a_key_on_the_wrong_kind_of_job_on_a_paged_view_points_to_1_not_tab(make_app):
    """Tab does not move between tables on the completed view (it has one): the hint said it did."""
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        for key in ("c", "f"):
            await pilot.press(key)
            await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert len(messages) == 2 and all(m.endswith("(press 1 for the live tables).") for m in messages), messages


async def test_enter_on_a_job_a_worker_holds_opens_its_detail(make_app, scene):
    """Review finding: enter on a job in a worker's jobs did nothing and said nothing."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        held = app.screen
        assert isinstance(held, WorkerJobsScreen) and held.rows
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == held.rows[0].id
        await pilot.press("escape")
        assert app.screen is held  # back to the worker's jobs


async def test_the_queues_and_activity_views_say_their_counts_are_not_narrowed_by_the_filter(make_app):
    """With "type send-invoice" in the header and the counts line narrowed to it, the queues view's counts and
    the activity charts (of every job) read as that type's. They say so while a filter or a query is set."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        queues, activity = app.query_one(QueuesTable), app.query_one(ActivityView)
        await pilot.press("2")
        await settle(pilot)
        assert NOT_NARROWED not in str(queues.border_title)
        await pilot.press("t", *"send-invoice", "enter")
        await settle(pilot)
        assert NOT_NARROWED in str(queues.border_title)
        await pilot.press("5")
        await settle(pilot)
        assert str(activity.border_subtitle).startswith(NOT_NARROWED)
        await pilot.press("t", "ctrl+u", "enter")
        await settle(pilot)
        assert NOT_NARROWED not in str(activity.border_subtitle)
