"""The UI answers keys while a refresh is still reading a big database (reads run on a thread worker)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from console_helpers import settle, wait_for

import console.app
from console.app import QueueConsole
from console.screens.enqueue import EnqueueScreen
from console.screens.help import HelpScreen
from console.snapshot import COUNT_CAP
from console.widgets.jobs.table import JobTable
from queue_core.store.repository import JobRepository

pytestmark = pytest.mark.asyncio
JOBS = 50_000


def fill(repo: JobRepository, n: int) -> None:
    """Bulk rows straight through the model: creating 50,000 jobs one by one would take the test's time."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    row = {"type": "bulk", "payload": "{}", "status": "pending", "created_at": now, "updated_at": now, "run_at": now}
    with repo.db.atomic():
        for start in range(0, n, 500):
            repo.Job.insert_many([dict(row, priority=i % 4 * 10) for i in range(start, min(n, start + 500))]).execute()


@pytest.mark.backends("sqlite", "postgresql")
async def test_keys_are_answered_while_a_refresh_reads_a_big_database(db, monkeypatch):
    repo = JobRepository(db)
    fill(repo, JOBS)
    reading, release = threading.Event(), threading.Event()
    real_load = console.app.load_snapshot

    def held_load(*args, **kwargs):
        reading.set()
        # Hold this refresh open until the test has seen the UI answer keys; then read for real.
        if not release.wait(timeout=30):
            raise TimeoutError("the test never released the refresh")
        return real_load(*args, **kwargs)

    monkeypatch.setattr(console.app, "load_snapshot", held_load)
    app = QueueConsole(repo, refresh_interval=None, db_label="big.db")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, reading.is_set, "the first refresh starts reading")
        assert app._loading and app.snapshot is None

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "n")
        assert isinstance(app.screen, EnqueueScreen)
        await pilot.press("escape")
        assert app._loading and app.snapshot is None  # all of that happened while the refresh was still reading

        release.set()
        await settle(pilot)
        assert app.snapshot.counts["pending"] == COUNT_CAP + 1  # more than the cap: counting stopped there
        pending = app.query_one("#pending", JobTable)
        assert pending.row_count == 200 and f"200 of {COUNT_CAP:,}+" in str(pending.border_title)
