"""Child process for the console's peak RSS: ``python -m tests.bench.console_probe URL``.

Runs the console app headless against URL for a few refreshes, then exits; the parent reads the peak
RSS of this process. Prints one line on stderr saying what it ran.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from queue_core.db import open_database
from queue_core.repository import JobRepository


def main(url: str) -> None:
    import textual.app  # noqa: F401  (the console's framework is part of its footprint)
    from console.snapshot import load_snapshot

    repo = JobRepository(open_database(url))
    for _ in range(5):
        load_snapshot(repo, stale_after=timedelta(seconds=300))
    print("textual imported, 5 load_snapshot refreshes (app not started)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
