"""The queues view's rates and the activity view's per-queue charts, keys pressed, checked against the
database; both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from console_helpers import settle

from console.widgets.activity.view import ActivityView
from console.widgets.queues.table import QueuesTable

pytestmark = pytest.mark.asyncio


async def open_view(pilot, key: str) -> None:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)


@pytest.mark.backends("sqlite", "postgresql")
async def test_queues_view_says_what_the_database_says_per_queue(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(pilot, "2")
        table = app.query_one(QueuesTable)
        exact = {state.name: state for state in scene.queues()}  # the full count: small scene, exact
        assert list(table.states) == list(exact)
        for name, shown in table.states.items():
            assert shown.counts == exact[name].counts and shown.latency == exact[name].latency
        Job, JobError = scene.Job, scene.JobError
        since = scene.now() - timedelta(minutes=5)
        done = Job.select().where((Job.status == "completed") & (Job.updated_at >= since) & (Job.queue == "default"))
        failed = JobError.select().join(Job, on=(JobError.job_id == Job.id)).where(JobError.created_at >= since)
        row = table.get_row("default")
        assert table.states["default"].done_per_minute == done.count() / 5 > 0
        assert str(row[-2]) == f"{done.count() / 5:,.1f}" and str(row[-1]) == f"{failed.count() / 5:,.1f}"


@pytest.mark.backends("sqlite", "postgresql")
async def test_activity_view_picks_a_queue_with_the_arrow_keys(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_view(pilot, "5")
        view = app.query_one(ActivityView)
        assert app.focused is view and view.queue is None and "all queues" in str(view.border_title)
        queues = sorted(app.snapshot.activity.queues)
        assert queues == sorted({job.queue for job in scene.Job.select(scene.Job.queue)})
        await pilot.press("right")
        assert view.queue == queues[0] and f"queue {queues[0]}" in str(view.border_title).replace("[b]", "")
        Job = scene.Job
        enqueued = Job.select().where(Job.queue == queues[0]).count()  # the scene is shorter than the hour
        assert sum(view.query_one("#enqueued-chart").data) == enqueued
        await pilot.press("left")
        assert view.queue is None and sum(view.query_one("#enqueued-chart").data) == Job.select().count()
        await pilot.press("left")  # around to the last queue
        assert view.queue == queues[-1]
        waits = [wait for wait in app.snapshot.activity.latency if wait is not None]
        assert waits and "Queue latency" in str(view.query_one("#latency-label").render())


async def test_detail_pages_through_the_whole_attempt_history(make_app, scene, scene_clock, db_url):
    job, _ = scene.create("flaky-import", {"file": "in.csv"}, max_retries=119, retry_backoff=0)
    for _ in range(120):
        scene_clock.advance(1)
        claimed = scene.claim("host-a:1", types=["flaky-import"])
        scene.fail(job.id, f"attempt {claimed.attempt} failed: " + "e" * 2000, attempt=claimed.attempt)
    history = [error.attempt for error in scene.errors_for(job.id)]
    assert len(history) == 120
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        while app.focused.id != "failed":
            await pilot.press("tab")
        table = app.focused
        table.move_cursor(row=table.get_row_index(str(job.id)), animate=False)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen

        def attempts_shown() -> list[int]:
            text = str(screen.query_one("#detail-errors").render())
            return [int(line.split()[1]) for line in text.splitlines() if line.startswith("attempt ") and "UTC" in line]

        assert attempts_shown() == history[-50:]
        assert "70 earlier attempts not shown: o shows 50 more" in screen.shown_text()
        await pilot.press("o")
        await settle(pilot)
        assert attempts_shown() == history[20:70] and "50 later attempts not shown" in screen.shown_text()
        await pilot.press("o", "o")  # the oldest page, then nothing older
        await settle(pilot)
        assert attempts_shown() == history[:20] and "earlier attempts" not in screen.shown_text()
        await pilot.press("i", "i")
        await settle(pilot)
        assert attempts_shown() == history[-50:] and "later attempts" not in screen.shown_text()


async def test_the_live_tables_are_read_on_the_jobs_view_only_and_keep_their_rows_meanwhile(make_app, scene, db_url):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pending = app.query_one("#pending")
        shown = [row.key.value for row in pending.ordered_rows]
        assert len(shown) == scene.counts()["pending"] > 0
        await open_view(pilot, "2")
        assert app.snapshot.view == "queues" and "pending" not in app.snapshot.rows  # not read for this view
        assert [row.key.value for row in pending.ordered_rows] == shown  # nor cleared
        app.request_refresh = lambda: None  # back on the Jobs view before any refresh lands
        await pilot.press("1")
        await pilot.pause()
        assert [row.key.value for row in pending.ordered_rows] == shown
