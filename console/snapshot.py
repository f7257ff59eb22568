"""One refresh's read of the database, as plain data the UI can show without touching the database again.

``load_snapshot`` runs on a thread worker; everything here is a bounded read (a window of rows, counts that
stop at ``COUNT_CAP``), so a refresh costs the same with a hundred jobs or a million.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from queue_core.rules import is_stale
from queue_core.store.repository import JobRepository

SHOWN_STATUSES = ("pending", "running", "failed")
WINDOW = 200
# Counting stops here: "50,000+" is what an operator needs to know, and counting further costs a full scan.
COUNT_CAP = 50_000
THROUGHPUT_PERIOD = timedelta(minutes=5)


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    counts: dict[str, int]  # per status; a value above COUNT_CAP means "more than COUNT_CAP"
    rows: dict[str, list]  # status -> the first ``window`` jobs (payload-less rows) in operator order
    stale_ids: frozenset[int]  # stale running jobs among the rows shown
    stale_count: int  # stale running jobs in the whole database
    throughput: dict[str, float]  # completed / failed attempts per minute over THROUGHPUT_PERIOD
    type_filter: str | None = None
    throughput_period: timedelta = THROUGHPUT_PERIOD

    def count_text(self, status: str) -> str:
        return format_count(self.counts[status])

    def shown_text(self, status: str) -> str:
        """What a table's title says: "200 of 12,345", or just "3" when every job is shown."""
        shown, total = len(self.rows[status]), self.counts[status]
        return f"{shown:,}" if shown == total else f"{shown:,} of {format_count(total)}"


def format_count(n: int) -> str:
    return f"{COUNT_CAP:,}+" if n > COUNT_CAP else f"{n:,}"


def load_snapshot(
    repo: JobRepository,
    *,
    type_filter: str | None = None,
    window: int = WINDOW,
    stale_after: timedelta,
) -> Snapshot:
    """Read everything one refresh of the console shows, at the repository clock's now."""
    now = repo.now()
    rows = {status: repo.window_rows(status, type=type_filter, limit=window) for status in SHOWN_STATUSES}
    return Snapshot(
        now=now,
        counts=repo.counts(type=type_filter, cap=COUNT_CAP),
        rows=rows,
        stale_ids=frozenset(job.id for job in rows["running"] if is_stale(job, now, stale_after)),
        stale_count=repo.count_stale(stale_after, type=type_filter, now=now),
        throughput=repo.throughput(THROUGHPUT_PERIOD),
        type_filter=type_filter,
    )
