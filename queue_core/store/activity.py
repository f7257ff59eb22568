"""Activity per minute over the last hour: jobs completed, attempts failed, jobs enqueued, and queue latency.

What the console's activity view charts, for all queues and for each queue: every read groups by
(minute, queue), so one refresh has every queue's charts and picking a queue reads nothing more. Each
series is one grouped read over a time range: completed jobs through the (status, updated_at) index,
failed attempts through ``job_errors_created``. Latency is, per minute, the longest wait from due to claim
of the jobs claimed in that minute: the finished ones through the (status, updated_at) index (a job claimed
in the hour was finished in it) and the running ones through the status index. Enqueued jobs
are counted by ``created_at``, which no index covers; ids grow with creation time, so a binary search on the
primary key finds the first id of the window (less ``ID_SLACK``, for ids committed out of order) and the count
reads that id range, not the table: at 1M jobs the view's refresh went from 174 ms to 51 ms (median,
``python -m tests.bench``). Nothing here changes a job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import peewee as pw

from ..rules import COMPLETED, RUNNING
from .models import is_postgres

MINUTES = 60
SERIES = ("completed", "failed", "enqueued")
FINISHED = ("completed", "failed", "cancelled")
# Ids are handed out in creation order but committed in any order: a job created this long before another can
# still get the larger id. The search for the window's first id starts this much earlier to stay exact.
ID_SLACK = timedelta(minutes=5)
SETTLED = timedelta(minutes=2)  # minutes that ended this long ago are read once and kept (see last_hour)
RELOAD = timedelta(minutes=1)  # and every minute is read again this often


@dataclass(frozen=True)
class Activity:
    start: datetime  # the first minute charted (aware UTC, on a minute boundary)
    series: dict[str, list[int]]  # name -> MINUTES counts, oldest minute first (every queue)
    latency: list[float | None] = field(default_factory=list)  # longest wait per minute, seconds (None: no claim)
    queues: dict[str, Activity] = field(default_factory=dict)  # each queue's own charts
    queue: str | None = None  # whose charts these are (None: every queue)

    def total(self, name: str) -> int:
        return sum(self.series[name])

    def for_queue(self, name: str | None) -> Activity:
        """One queue's charts (empty ones for a queue with no activity in the hour); None: every queue."""
        if name is None:
            return self
        minutes = len(self.series["completed"])
        empty = Activity(self.start, {series: [0] * minutes for series in SERIES}, [None] * minutes, queue=name)
        return self.queues.get(name, empty)


@dataclass(frozen=True)
class _Kept:
    since: datetime  # the first minute kept
    until: datetime  # minutes before this are kept; the next call reads from here on
    read_at: datetime  # when every minute was last read
    values: dict  # as ActivityReads._read returns them


def _activity(values: dict, start: datetime, minutes: int) -> Activity:
    """The charts of every queue and of each queue, from (series, queue, minute) -> value."""
    per_queue: dict[str, dict[str, list]] = {}
    for (name, queue, minute), value in values.items():
        index = int((minute - start).total_seconds() // 60)
        if not 0 <= index < minutes:
            continue  # a row stamped after "now" (a clock ahead) is not charted
        charts = per_queue.setdefault(queue, {**{s: [0] * minutes for s in SERIES}, "latency": [None] * minutes})
        charts[name][index] = value
    queues = {
        queue: Activity(start, {s: charts[s] for s in SERIES}, charts["latency"], queue=queue)
        for queue, charts in sorted(per_queue.items())
    }
    every = {s: [sum(column) for column in zip(*(q.series[s] for q in queues.values()), strict=True)] for s in SERIES}
    waits = zip(*(q.latency for q in queues.values()), strict=True)
    longest = [max((w for w in column if w is not None), default=None) for column in waits]
    return Activity(
        start,
        {s: every[s] or [0] * minutes for s in SERIES},
        longest or [None] * minutes,
        queues,
    )


class ActivityReads:
    """Per-minute counts of one repository's jobs. The backend's minute expression is picked here, once."""

    def __init__(self, repo):
        self.repo = repo
        postgres = is_postgres(repo.db)
        self._minute = _postgres_minute if postgres else _sqlite_minute
        self._wait = _postgres_wait if postgres else _sqlite_wait
        self._kept: _Kept | None = None  # settled minutes of the previous call
        self._first_id: tuple[datetime, int] | None = None  # the last id search: (since, the id found)

    def last_hour(self, *, now: datetime | None = None, minutes: int = MINUTES) -> Activity:
        """The last ``minutes`` minutes up to ``now``'s, for every queue and each queue.

        Minutes that ended ``SETTLED`` ago are kept from the previous call and only the newer ones read,
        so a console refreshing every second reads two minutes of rows, not an hour's; everything is read
        again every ``RELOAD`` (an operator's retry or a prune can change a past minute)."""
        now = self.repo.now() if now is None else now
        end = now.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        start = end - timedelta(minutes=minutes)
        kept = self._kept
        if kept is None or not (kept.since <= start and kept.read_at <= now < kept.read_at + RELOAD):
            kept = _Kept(since=start, until=start, read_at=now, values={})
        values = {key: value for key, value in kept.values.items() if key[2] >= start}
        values.update(self._read(kept.until))
        settled = end - SETTLED
        self._kept = _Kept(start, settled, kept.read_at, {key: v for key, v in values.items() if key[2] < settled})
        return _activity(values, start, minutes)

    def _read(self, since: datetime) -> dict[tuple[str, str, datetime], float]:
        """(series, queue, minute) -> the count (the longest wait for "latency") of every minute from ``since``."""
        Job, JobError = self.repo.Job, self.repo.JobError
        completed = Job.select(Job.queue).where(
            (Job.status == COMPLETED) & (Job.updated_at >= Job.updated_at.to_value(since))
        )
        failed = (
            JobError.select(Job.queue)
            .join(Job, on=(JobError.job_id == Job.id))
            .where(JobError.created_at >= JobError.created_at.to_value(since))
        )
        enqueued = Job.select(Job.queue).where(
            (Job.id >= self._first_id_created_since(since - ID_SLACK))
            & (Job.created_at >= Job.created_at.to_value(since))
        )
        values = {}
        for name, query, column in (
            ("completed", completed, Job.updated_at),
            ("failed", failed, JobError.created_at),
            ("enqueued", enqueued, Job.created_at),
        ):
            bucket = self._minute(column)
            grouped = query.select_extend(bucket.alias("minute"), pw.fn.COUNT(pw.SQL("*")).alias("n"))
            for queue, minute, n in grouped.group_by(bucket, Job.queue).tuples():
                values[(name, queue, _as_utc(minute))] = n
        values.update(self._latency(since))
        return values

    def _latency(self, since: datetime) -> dict[tuple[str, str, datetime], float]:
        """Per queue and minute: the longest wait from due (run_at) to claim of the jobs claimed then."""
        Job = self.repo.Job
        claimed_since = Job.claimed_at >= Job.claimed_at.to_value(since)
        finished = Job.select(Job.queue).where(
            Job.status.in_(FINISHED) & (Job.updated_at >= Job.updated_at.to_value(since)) & claimed_since
        )
        running = Job.select(Job.queue).where((Job.status == RUNNING) & claimed_since)
        waits = {}
        for query in (finished, running):
            bucket = self._minute(Job.claimed_at)
            grouped = query.select_extend(bucket.alias("minute"), pw.fn.MAX(self._wait(Job)).alias("wait"))
            for queue, minute, wait in grouped.group_by(bucket, Job.queue).tuples():
                key = ("latency", queue, _as_utc(minute))
                if wait is not None:
                    waits[key] = max(float(wait), waits.get(key, 0.0))
        return waits

    def _first_id_created_since(self, since: datetime) -> int:
        """The smallest id whose job was created at or after ``since``, by binary search on the primary key
        (about 20 one-row index reads at a million jobs). Jobs deleted by prune leave gaps; the search reads
        the next existing id at each step."""
        if self._first_id is not None and self._first_id[0] == since:
            return self._first_id[1]  # the same minute as the last call's: one search a minute, not a refresh
        Job = self.repo.Job
        low, high = 1, (Job.select(pw.fn.MAX(Job.id)).scalar() or 0) + 1
        while low < high:
            middle = (low + high) // 2
            row = Job.select(Job.id, Job.created_at).where(Job.id >= middle).order_by(Job.id).limit(1).first()
            if row is None or row.created_at >= since:
                high = middle
            else:
                low = row.id + 1
        self._first_id = (since, low)
        return low


def _sqlite_minute(column):
    # Times are stored as fixed-width text, "2026-01-01 12:34:56.789000": the first 16 characters are the minute.
    return pw.fn.SUBSTR(column, 1, 16)


def _postgres_minute(column):
    # The unit as a literal: bound, it would be two parameters, and PostgreSQL would not see that the
    # grouped expression is the selected one.
    return pw.fn.date_trunc(pw.SQL("'minute'"), column)


def _sqlite_wait(Job):
    return (pw.fn.julianday(Job.claimed_at) - pw.fn.julianday(Job.run_at)) * 86400.0


def _postgres_wait(Job):
    return pw.fn.EXTRACT(pw.NodeList((pw.SQL("EPOCH FROM"), Job.claimed_at - Job.run_at)))


def _as_utc(value) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
