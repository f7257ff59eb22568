"""Child process for the console's peak RSS: ``python -m tests.bench.console_probe URL [--all-views]``.

Runs the real console app headless (Textual's ``run_test``, a 160x50 screen) against URL until it has
refreshed several times, then exits; the parent reads this process's peak RSS. With ``--all-views`` it
shows every view in turn (and a searched query), refreshing several times on each. Prints one line on
stderr saying what it ran.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

REFRESHES = 8
REFRESH_INTERVAL = 0.25
# Every view's key, then the query line with free text (a search over every job), back on the home view.
VIEW_KEYS = ("1", "s", "d", "k", "2", "3", "4", "5", "1")
QUERY_KEYS = ("slash", *"boom", "enter")


async def show(url: str, all_views: bool) -> int:
    from console.app import QueueConsole

    app = QueueConsole(
        JobRepository(open_database(url)), stale_after=timedelta(seconds=300), refresh_interval=REFRESH_INTERVAL
    )
    seen = 0
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = time.monotonic() + 240
        if not all_views:
            return await refreshes(app, pilot, deadline)
        for keys in (*((key,) for key in VIEW_KEYS), QUERY_KEYS):
            await pilot.press(*keys)
            seen += await refreshes(app, pilot, deadline)
    return seen // (len(VIEW_KEYS) + 1)


async def refreshes(app, pilot, deadline: float) -> int:
    """Wait for REFRESHES new snapshots (or the deadline); how many came."""
    seen, last = 0, app.snapshot
    while seen < REFRESHES and time.monotonic() < deadline:
        await pilot.pause(0.05)
        if app.snapshot is not None and app.snapshot is not last:
            seen, last = seen + 1, app.snapshot
    return seen


def main(url: str, all_views: bool) -> None:
    seen = asyncio.run(show(url, all_views))
    if seen < REFRESHES:
        sys.exit(f"the console refreshed only {seen} times a view")
    shown = "every view and a searched query" if all_views else "the Jobs view"
    print(f"console app headless, {shown}, {seen} refreshes each every {REFRESH_INTERVAL}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], "--all-views" in sys.argv[2:])
