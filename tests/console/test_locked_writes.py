"""Writes run on thread workers: another process holding the SQLite write lock never freezes a key press.

The lock is ``BEGIN IMMEDIATE`` on a second connection, as another process would hold it. While it is held
the console's write waits (SQLite's busy timeout, 10 s); the tests press other keys, see them answered, and
only then release the lock and see the write land. No clock is read: "answered before the release" is the
order of the steps.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pytest
from console_helpers import asked_then, settle, wait_for
from textual.worker import WorkerState

from console.app import QueueConsole
from console.screens.bulk_progress import BulkProgressScreen
from console.screens.enqueue import EnqueueScreen
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

# The lock under test is SQLite's; PostgreSQL takes row locks and never blocks these writes.
pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]


@contextmanager
def write_lock_held(repo):
    """The database's write lock, held by another connection until the block ends (then rolled back)."""
    other = sqlite3.connect(repo.db.database, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


def waiting(app, group: str) -> bool:
    """A write of ``group`` is on its thread and has not answered yet."""
    return any(worker.group == group and worker.state == WorkerState.RUNNING for worker in app.workers)


async def focus_table(pilot, status: str):
    while pilot.app.focused.id != status:
        await pilot.press("tab")
    return pilot.app.focused.selected_job_id


async def test_retry_waits_for_the_lock_while_other_keys_are_answered(pilot, scene):
    app = pilot.app
    job_id = await focus_table(pilot, "failed")
    with write_lock_held(scene):
        await asked_then(pilot, "r", "y")  # the dry run only reads: the lock does not hold up the question
        await wait_for(pilot, lambda: waiting(app, "write"), "the retry starts and waits for the lock")
        assert isinstance(app.screen, BulkProgressScreen)
        await pilot.press("escape")  # answered while the retry still waits: "stopping after this batch"
        assert "stopping" in str(app.screen.query_one("#bulk-hint").render())
        assert waiting(app, "write") and scene.find_by_id(job_id).status == "failed"
    await settle(pilot)
    assert scene.find_by_id(job_id).status == "pending"  # its one batch was under way: escape stops after it
    assert any("Retried 1 of 1 failed job" in m for m in notifications(app)), notifications(app)
    assert str(job_id) in [row.key.value for row in app.query_one("#pending").ordered_rows]


async def test_enqueue_form_stays_open_until_the_locked_write_lands(pilot, scene):
    app = pilot.app
    before = scene.counts()["pending"]
    with write_lock_held(scene):
        await pilot.press("n", *"locked-out", "enter")
        form = app.screen
        assert isinstance(form, EnqueueScreen)
        await wait_for(pilot, lambda: waiting(app, "enqueue"), "the create starts and waits for the lock")
        await pilot.press("enter", "escape")  # answered: a second submit does nothing, escape says why it stays
        assert app.screen is form and form.writing
        assert "still enqueueing" in str(form.query_one("#form-error").render())
        await pilot.press("!")  # and typing goes on
        assert form.query_one("#type").value == "locked-out!"
        assert waiting(app, "enqueue") and scene.counts()["pending"] == before
    await settle(pilot)
    assert not isinstance(app.screen, EnqueueScreen)
    assert [job.type for job in scene.list(type="locked-out", limit=10)] == ["locked-out"]  # as submitted, once
    assert scene.counts()["pending"] == before + 1
    assert any("Enqueued job" in m and "locked-out" in m for m in notifications(app)), notifications(app)


async def test_a_write_that_outwaits_the_busy_timeout_is_a_notification(db_url, scene, scene_clock):
    """The lock held past the busy timeout: the write gives up, says so, and the console goes on."""
    impatient = JobRepository(open_database(f"{db_url}?busy_timeout=50"), clock=scene_clock)
    app = QueueConsole(impatient, refresh_interval=None, db_label="demo.db")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        job_id = await focus_table(pilot, "failed")
        with write_lock_held(scene):
            await asked_then(pilot, "r", "y")
            await settle(pilot)
        messages = notifications(app)
        assert any("Could not retry: database is locked" in m for m in messages), messages
        assert app.is_running and scene.find_by_id(job_id).status == "failed"
