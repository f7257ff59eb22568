"""Child process for the console's peak RSS: ``python -m tests.bench.console_probe URL``.

Runs the real console app headless (Textual's ``run_test``, a 160x50 screen) against URL until it has
refreshed several times, then exits; the parent reads this process's peak RSS. Prints one line on
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


async def show(url: str) -> int:
    from console.app import QueueConsole

    app = QueueConsole(
        JobRepository(open_database(url)), stale_after=timedelta(seconds=300), refresh_interval=REFRESH_INTERVAL
    )
    seen, last = 0, None
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = time.monotonic() + 120
        while seen < REFRESHES and time.monotonic() < deadline:
            await pilot.pause(0.05)
            if app.snapshot is not None and app.snapshot is not last:
                seen, last = seen + 1, app.snapshot
    return seen


def main(url: str) -> None:
    seen = asyncio.run(show(url))
    if seen < REFRESHES:
        sys.exit(f"the console refreshed only {seen} times")
    print(f"console app headless, {seen} refreshes every {REFRESH_INTERVAL}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
