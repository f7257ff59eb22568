"""An open job detail follows its job on the app's refresh cycle; the header keeps time while refreshes fail.

Review findings: the detail kept showing a running job as running after it completed, failed or was
retried, until closed and opened again; and the header's time stood still while the database was down.
Every test here refreshes on purpose (``request_refresh``, what the app's interval calls) at a fixed clock.
"""

from __future__ import annotations

import re
import threading

import peewee as pw
import pytest
from console_helpers import settle

import console.app
import console.screens.detail
from console.messages import WaitingExplained
from console.screens.detail import JobDetailScreen
from queue_core.store.waiting import WaitReason

pytestmark = pytest.mark.asyncio


async def open_detail(pilot, job_id: int) -> JobDetailScreen:
    pilot.app.push_screen(JobDetailScreen(pilot.app.repo, job_id))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, JobDetailScreen) and screen.detail is not None
    return screen


async def refresh(pilot) -> None:
    pilot.app.request_refresh()
    await settle(pilot)


def title(screen: JobDetailScreen) -> str:
    return str(screen.query_one("#detail-title").render())


def status_line(screen: JobDetailScreen) -> str | None:
    """The line at the top of the detail (gone, not current); None while it is hidden."""
    status = screen.query_one("#detail-status")
    return str(status.render()) if status.display else None


def running_sleep(scene):
    (job,) = [job for job in scene.window("running") if job.type == "sleep"]
    return job


@pytest.mark.backends("sqlite", "postgresql")
async def test_the_detail_of_a_running_job_shows_it_completed_after_a_refresh(pilot, scene):
    job = running_sleep(scene)
    screen = await open_detail(pilot, job.id)
    assert "running" in title(screen)
    scene.complete(job.id, worker_id=job.worker_id, attempt=job.attempt, result={"slept": 30})
    await refresh(pilot)
    assert pilot.app.screen is screen
    assert "completed" in title(screen) and "running" not in title(screen)
    assert '{"slept": 30}' in screen.shown_text()


async def test_the_detail_follows_a_failed_attempt_then_the_failure_and_a_retry(pilot, scene):
    job = running_sleep(scene)
    screen = await open_detail(pilot, job.id)
    assert "Errors (0 failed attempts)" in screen.shown_text()
    scene.fail(job.id, "TimeoutError: slept too long", worker_id=job.worker_id, attempt=job.attempt)
    await refresh(pilot)
    text = screen.shown_text()
    assert "pending" in title(screen) and "Errors (1 failed attempt)" in text
    assert "TimeoutError: slept too long" in text
    assert "Why is this job waiting?" in text and "back-off after attempt" in text  # it became pending

    scene.cancel(job.id)
    await refresh(pilot)
    assert "cancelled" in title(screen)
    assert not screen.query_one("#detail-waiting").display  # no longer waiting: the section goes
    scene.retry(job.id)
    await refresh(pilot)
    assert "pending" in title(screen) and screen.query_one("#detail-waiting").display


async def test_a_refresh_keeps_the_scroll_position_the_payload_page_and_focus(pilot, scene):
    lines = [f"line {i:05d} " + "x" * 60 for i in range(600)]  # about three payload pages
    job, _ = scene.create("import-csv", {"rows": lines})
    scene.claim("host-z:1", types=["import-csv"])
    screen = await open_detail(pilot, job.id)
    await pilot.press("m")  # the second page
    await settle(pilot)
    scroll = screen.query_one("#dialog")
    scroll.scroll_to(y=40, animate=False)
    await pilot.pause()
    focused = pilot.app.focused
    assert scroll.scroll_y == 40 and screen.page_index == 1

    scene.complete(job.id, worker_id="host-z:1", result={"imported": 600})
    await refresh(pilot)
    assert "completed" in title(screen)
    assert scroll.scroll_y == 40 and screen.page_index == 1 and pilot.app.focused is focused
    assert "page 2 of" in str(screen.query_one("#detail-page-note").render())


async def test_a_job_deleted_while_its_detail_is_open_is_said_to_be_gone(pilot, scene, monkeypatch):
    (job,) = [job for job in scene.window("failed") if job.type == "sync-crm"]
    screen = await open_detail(pilot, job.id)
    assert status_line(screen) is None
    scene.bulk("delete", ids=[job.id])
    await refresh(pilot)
    assert pilot.app.is_running and pilot.app.screen is screen  # not closed under the operator, no crash
    assert status_line(screen) == (
        f"⚠ Job {job.id} is gone: deleted (pruned) since it was last read at 12:00:00 UTC. "
        "Below is the job as it was then; escape closes."
    )
    assert "sync-crm" in title(screen) and "TimeoutError" in screen.shown_text()  # as it was

    def never(*args, **kwargs):
        raise AssertionError("a job that is gone is not read again (it cannot come back)")

    monkeypatch.setattr(console.screens.detail, "job_without_payload", never)
    await refresh(pilot)
    assert "is gone" in status_line(screen)


async def test_a_failed_read_keeps_the_detail_and_says_it_is_not_current(pilot, scene, scene_clock, monkeypatch):
    job = running_sleep(scene)
    screen = await open_detail(pilot, job.id)

    def gone(*args, **kwargs):
        raise pw.OperationalError("server closed the connection unexpectedly\n\tThis probably means...")

    with monkeypatch.context() as patch:
        patch.setattr(console.screens.detail, "job_without_payload", gone)
        scene_clock.advance(30)
        await refresh(pilot)
        assert pilot.app.screen is screen and "running" in title(screen)
        assert status_line(screen) == (
            "⚠ not current: OperationalError: server closed the connection unexpectedly"
            " · as read at 12:00:00 UTC, retrying"
        )
    await refresh(pilot)  # the database is back
    assert status_line(screen) is None


async def test_a_refresh_that_cannot_be_laid_out_says_so_and_the_next_one_reads_again(pilot, scene, monkeypatch):
    """Whatever the re-read raises, a message comes back: the detail never stops following its job silently."""
    job = running_sleep(scene)
    screen = await open_detail(pilot, job.id)

    def broken(job):
        raise ValueError("a field that cannot be shown")

    with monkeypatch.context() as patch:
        patch.setattr(console.screens.detail, "fields_text", broken)
        await refresh(pilot)
        assert status_line(screen).startswith("⚠ not current: ValueError: a field that cannot be shown")
    scene.complete(job.id, worker_id=job.worker_id, attempt=job.attempt)
    await refresh(pilot)
    assert status_line(screen) is None and "completed" in title(screen)


# --- the header's time while refreshes fail ---------------------------------------------------------


def header_time(app) -> str:
    """The header from its time on (what comes before it may give way to a long warning: "all types")."""
    return app.sub_title[re.search(r"\d\d:\d\d:\d\d UTC", app.sub_title).start() :]


async def test_the_header_keeps_time_and_says_disconnected_while_refreshes_fail(pilot, scene_clock, monkeypatch):
    app = pilot.app
    assert header_time(app) == "12:00:00 UTC"

    def down(*args, **kwargs):
        raise pw.OperationalError("connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(console.app, "load_snapshot", down)
        scene_clock.advance(25)
        await refresh(pilot)
        assert header_time(app) == "12:00:25 UTC · ⚠ disconnected, data from 12:00:00 (25s old)"
        scene_clock.advance(60)
        await refresh(pilot)
        assert header_time(app) == "12:01:25 UTC · ⚠ disconnected, data from 12:00:00 (1m25s old)"
    scene_clock.advance(1)
    await refresh(pilot)
    assert header_time(app) == "12:01:26 UTC"


async def test_the_header_clock_moves_while_a_refresh_hangs_after_a_failure(pilot, scene_clock, monkeypatch):
    """A refresh that hangs (a connect timing out) leaves the app "loading": each tick still moves the clock."""
    app = pilot.app
    release = threading.Event()
    calls = []

    def down_then_hanging(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            release.wait(10)
        raise pw.OperationalError("connection refused")

    monkeypatch.setattr(console.app, "load_snapshot", down_then_hanging)
    await refresh(pilot)
    app.request_refresh()  # this one hangs
    scene_clock.advance(10)
    app.request_refresh()  # the next tick
    assert header_time(app) == "12:00:10 UTC · ⚠ disconnected, data from 12:00:00 (10s old)"
    release.set()
    await settle(pilot)


async def test_a_read_left_unanswered_says_so_in_the_header_before_anything_has_failed(pilot, scene_clock, monkeypatch):
    """The first read after the database went away can hang on its connect with nothing failed yet: past
    SLOW_READ the header shows this host's clock and how long the database has not answered."""
    app = pilot.app
    await refresh(pilot)
    assert header_time(app) == "12:00:00 UTC"
    release = threading.Event()
    real = console.app.load_snapshot

    def hanging(*args, **kwargs):
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(console.app, "load_snapshot", hanging)
    app.request_refresh()  # this one hangs
    scene_clock.advance(2)
    app.request_refresh()
    assert header_time(app) == "12:00:00 UTC"  # not yet: a slow read is not a lost database
    scene_clock.advance(8)
    app.request_refresh()
    assert header_time(app) == "12:00:10 UTC · ⚠ no answer from the database for 10s, data from 12:00:00"
    release.set()
    await settle(pilot)
    await refresh(pilot)
    assert "⚠" not in header_time(app)


async def test_a_console_that_never_read_anything_shows_the_time_and_says_so(make_app, scene_clock, monkeypatch):
    def down(*args, **kwargs):
        raise pw.OperationalError("connection refused")

    monkeypatch.setattr(console.app, "load_snapshot", down)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        scene_clock.advance(3)
        await refresh(pilot)
        assert app.sub_title == "demo.db · 12:00:03 UTC · ⚠ disconnected, nothing read yet"


def waiting(screen: JobDetailScreen) -> str | None:
    """The "Why is this job waiting?" section; None while it is hidden."""
    section = screen.query_one("#detail-waiting")
    return str(section.render()) if section.display else None


async def test_why_a_pending_job_waits_is_told_again_on_each_refresh(pilot, scene):
    """Review finding: the explanation was read once, when the detail opened (or the job became pending), so
    a queue paused meanwhile left it saying "it will be claimed next" under a job that would never be."""
    job_id = pilot.app.query_one("#pending").selected_job_id  # due, on the default queue, nothing paused
    screen = await open_detail(pilot, job_id)
    before = waiting(screen)
    assert before is not None and "is paused" not in before
    queue = scene.find_by_id(job_id).queue

    scene.pause_queue(queue)
    await refresh(pilot)
    assert f"queue {queue} is paused" in waiting(screen)
    scene.resume_queue(queue)
    await refresh(pilot)
    assert waiting(screen) == before


async def test_a_late_explanation_does_not_show_under_a_job_no_longer_pending(pilot, scene):
    """Each refresh now explains again: an answer from a read older than the one on screen (the job has been
    claimed since) must not bring the section back under a running job."""
    job = running_sleep(scene)
    screen = await open_detail(pilot, job.id)
    screen.post_message(WaitingExplained([WaitReason("next", "it will be claimed next")]))
    await settle(pilot)
    assert waiting(screen) is None
