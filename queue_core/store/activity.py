"""Activity per minute over the last hour: jobs completed, attempts failed and jobs enqueued.

What the console's activity view charts. Each series is one grouped read over a time range: completed
jobs through the (status, updated_at) index, failed attempts through ``job_errors_created``. Enqueued jobs
are counted by ``created_at``, which no index covers; ids grow with creation time, so a binary search on the
primary key finds the first id of the window (less ``ID_SLACK``, for ids committed out of order) and the count
reads that id range, not the table: at 1M jobs the view's refresh went from 174 ms to 51 ms (median,
``python -m tests.bench``). Nothing here changes a job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import peewee as pw

from ..rules import COMPLETED
from .models import is_postgres

MINUTES = 60
SERIES = ("completed", "failed", "enqueued")
# Ids are handed out in creation order but committed in any order: a job created this long before another can
# still get the larger id. The search for the window's first id starts this much earlier to stay exact.
ID_SLACK = timedelta(minutes=5)


@dataclass(frozen=True)
class Activity:
    start: datetime  # the first minute charted (aware UTC, on a minute boundary)
    series: dict[str, list[int]]  # name -> MINUTES counts, oldest minute first

    def total(self, name: str) -> int:
        return sum(self.series[name])


class ActivityReads:
    """Per-minute counts of one repository's jobs. The backend's minute expression is picked here, once."""

    def __init__(self, repo):
        self.repo = repo
        self._minute = _postgres_minute if is_postgres(repo.db) else _sqlite_minute

    def last_hour(self, *, now: datetime | None = None, minutes: int = MINUTES) -> Activity:
        now = self.repo.now() if now is None else now
        end = now.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        start = end - timedelta(minutes=minutes)
        Job, JobError = self.repo.Job, self.repo.JobError
        completed = Job.select().where((Job.status == COMPLETED) & (Job.updated_at >= Job.updated_at.to_value(start)))
        failed = JobError.select().where(JobError.created_at >= JobError.created_at.to_value(start))
        enqueued = Job.select().where(
            (Job.id >= self._first_id_created_since(start - ID_SLACK))
            & (Job.created_at >= Job.created_at.to_value(start))
        )
        series = {
            "completed": self._per_minute(completed, Job.updated_at, start, minutes),
            "failed": self._per_minute(failed, JobError.created_at, start, minutes),
            "enqueued": self._per_minute(enqueued, Job.created_at, start, minutes),
        }
        return Activity(start, series)

    def _first_id_created_since(self, since: datetime) -> int:
        """The smallest id whose job was created at or after ``since``, by binary search on the primary key
        (about 20 one-row index reads at a million jobs). Jobs deleted by prune leave gaps; the search reads
        the next existing id at each step."""
        Job = self.repo.Job
        low, high = 1, (Job.select(pw.fn.MAX(Job.id)).scalar() or 0) + 1
        while low < high:
            middle = (low + high) // 2
            row = Job.select(Job.id, Job.created_at).where(Job.id >= middle).order_by(Job.id).limit(1).first()
            if row is None or row.created_at >= since:
                high = middle
            else:
                low = row.id + 1
        return low

    def _per_minute(self, query, column, start: datetime, minutes: int) -> list[int]:
        bucket = self._minute(column)
        grouped = query.select(bucket.alias("minute"), pw.fn.COUNT(pw.SQL("*")).alias("n")).group_by(bucket)
        counts = [0] * minutes
        for minute, n in grouped.tuples():
            index = int((_as_utc(minute) - start).total_seconds() // 60)
            if 0 <= index < minutes:  # a row stamped after "now" (a clock ahead) is not charted
                counts[index] += n
        return counts


def _sqlite_minute(column):
    # Times are stored as fixed-width text, "2026-01-01 12:34:56.789000": the first 16 characters are the minute.
    return pw.fn.SUBSTR(column, 1, 16)


def _postgres_minute(column):
    # The unit as a literal: bound, it would be two parameters, and PostgreSQL would not see that the
    # grouped expression is the selected one.
    return pw.fn.date_trunc(pw.SQL("'minute'"), column)


def _as_utc(value) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
