"""A queue that has made a million jobs shows seven-digit ids (and more) whole in every job table.

Review finding: the id column was 6 characters wide, so at a million jobs the failed table's newest job
read "10000…", as did every id from 1,000,000 to 1,000,099: the operator could not tell which job to open,
retry or pass to ``show``.
"""

from __future__ import annotations

import pytest
from console_helpers import screen_lines, settle

from console.widgets.jobs.table import JobTable
from queue_core.store.statements import ID_FLOOR_KEY

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # layout: the same on either backend


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_seven_digit_id_shows_whole(make_app, scene, scene_clock, size):
    # Ids as a long-lived queue has them: the next job is the 1,234,567th. It fails last: the failed table's top.
    scene.db.execute_sql("INSERT INTO queue_meta (key, value) VALUES (?, ?)", (ID_FLOOR_KEY, "1234566"))
    job, _ = scene.create("big-ids", max_retries=0)
    assert job.id == 1_234_567
    scene_clock.advance(seconds=1)
    claimed = scene.claim("w", types=["big-ids"])
    scene.fail(job.id, "TimeoutError", worker_id="w", attempt=claimed.attempt)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.query_one("#failed", JobTable).get_row_at(0)  # laid out
        (line,) = [line for line in screen_lines(app) if "big-ids" in line]
        assert "1234567" in line and "1234…" not in line, line
