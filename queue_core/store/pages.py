"""Keyset pages of jobs in one state: what the console's scheduled, completed, failed and cancelled tables show.

A page is ``limit`` rows after a cursor (the sort key of the last row seen), never an OFFSET: page 500
costs what page 1 costs, and a job that arrives meanwhile never shifts a page by one. Rows are the light
rows of ``JobReads.window_rows`` (no payload, the error cut short). Nothing here changes a job.

States: ``scheduled`` is pending with ``run_at`` in the future (delayed jobs and back-offs), soonest first;
the final states are newest first. The (status, updated_at) index serves the final states' order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import peewee as pw

from ..errors import ValidationError
from ..validation import MAX_INT64, MAX_LIST_LIMIT, validate_job_id, validate_limit, validate_positive_int
from .models import JobStatus
from .reads import keyset_after, narrowing_conditions, page_columns

SCHEDULED = "scheduled"
# Final states, newest first; "cancelled" is issue 13's status (no rows until its migration has run).
NEWEST_FIRST = ("completed", "failed", "cancelled")
PAGED_STATES = (SCHEDULED, *NEWEST_FIRST)

Cursor = tuple[datetime, int]  # (the sort time, the id) of the last row of a page


@dataclass(frozen=True)
class Page:
    state: str
    rows: list  # named tuples, every column but the payload
    after: Cursor | None  # the cursor this page starts after (None: the first page)
    next_after: Cursor | None  # pass as ``after`` for the next page; None when this page is the last


def page(
    repo,
    state: str,
    *,
    after: Cursor | None = None,
    limit: int = 200,
    now: datetime | None = None,
    type=None,
    where=None,
) -> Page:
    """The ``limit`` jobs of ``state`` after ``after`` in the order an operator reads them.

    One more row than ``limit`` is read to know whether another page follows, so the last page says so.
    """
    if state not in PAGED_STATES:
        raise ValidationError("state", f"unknown state {state!r}; use one of {', '.join(PAGED_STATES)}")
    limit = validate_limit(limit)
    Job = repo.Job
    if state == SCHEDULED:
        now = repo.now() if now is None else now
        rows = repo.scheduled_rows(limit + 1, now, after=after, narrowing=narrowing_conditions(Job, type, where))
        sort_time = "run_at"
    else:
        query = Job.select(*page_columns(Job)).where(Job.status == state)
        query = query.order_by(Job.updated_at.desc(), Job.id.desc())
        if after is not None:
            query = query.where(keyset_after(Job.updated_at, Job.id, after, ascending=False))
        for condition in narrowing_conditions(Job, type, where):
            query = query.where(condition)
        rows = repo._window_reader.named(repo.db.execute_sql(*query.limit(limit + 1).sql()), keep=f"page:{state}")
        sort_time = "updated_at"
    more = len(rows) > limit
    rows = rows[:limit]
    next_after = (getattr(rows[-1], sort_time), rows[-1].id) if more else None
    return Page(state, rows, after, next_after)


def filtered_counts(repo, where, *, type=None, cap: int) -> dict[str, int]:
    """Jobs per status matching ``where``, each counted up to ``cap + 1`` as ``JobReads.counts(cap=)`` does."""
    Job = repo.Job
    counts = {}
    for status in JobStatus:
        rows = Job.select(pw.SQL("1")).where((Job.status == status.value) & where)
        if type is not None:
            rows = rows.where(Job.type == type)
        counts[status.value] = rows.limit(cap + 1).count()
    return counts


@dataclass(frozen=True)
class AttemptPage:
    """One page of a job's failed attempts, the newest page first; each row's error is cut in SQL."""

    # oldest first within the page: job_id, attempt, created_at, worker_id, error (cut), error_length, traceback (its
    # end), traceback_length (None: no traceback)
    rows: list
    total: int  # failed attempts the job has in all
    number: int  # 1: the newest ``size`` attempts; 2: the ``size`` before them; ...
    size: int

    @property
    def older(self) -> int:
        """Attempts before this page."""
        return max(0, self.total - self.number * self.size)

    @property
    def newer(self) -> int:
        """Attempts after this page."""
        return min(self.total, (self.number - 1) * self.size)


def job_without_payload(repo, job_id: int):
    """Job ``job_id`` with every column but the payload (``payload`` is None; the error cut as a light row's),
    or None if it is gone: what a view showing a job re-reads at each refresh. A payload never changes
    after ``create``, so an 850 KB one is read and decoded once, when the view opens, not every second."""
    Job = repo.Job
    return Job.select(*page_columns(Job)).where(Job.id == job_id).first()


def attempt_page(
    repo, job_id: int, *, number: int = 1, size: int = 50, chars: int = 500, traceback_chars: int = 1500
) -> AttemptPage:
    """Page ``number`` of ``job_id``'s attempt history: ``size`` attempts, errors cut to ``chars`` and
    tracebacks to their last ``traceback_chars`` by the database, so a job with 300 attempts of 10,000
    characters each costs a page's worth, not 3 MB.

    Bad arguments are a ``ValidationError`` naming the argument, as ``page`` answers a bad ``limit``, on both
    backends alike: ``number=0`` was an OFFSET below 0, which SQLite reads as 0 (page 1) and PostgreSQL refuses.
    """
    job_id = validate_job_id(job_id)
    size = validate_positive_int("size", size, MAX_LIST_LIMIT)
    # Past this page the OFFSET ((number - 1) * size) would not fit the 64-bit integer both databases take.
    number = validate_positive_int("number", number, MAX_INT64 // size)
    chars = validate_positive_int("chars", chars, MAX_INT64)
    traceback_chars = validate_positive_int("traceback_chars", traceback_chars, MAX_INT64)
    JobError = repo.JobError
    mine = JobError.job_id == job_id
    total = JobError.select().where(mine).count()
    traceback_length = pw.fn.LENGTH(JobError.traceback)
    # Its end: the innermost frames, where it was raised (SQLite's negative SUBSTR start is not PostgreSQL's).
    tail = pw.fn.SUBSTR(JobError.traceback, traceback_length - (traceback_chars - 1))
    query = (
        JobError.select(
            JobError.job_id,
            JobError.attempt,
            JobError.created_at,
            JobError.worker_id,
            pw.fn.SUBSTR(JobError.error, 1, chars).alias("error"),
            pw.fn.LENGTH(JobError.error).coerce(False).alias("error_length"),
            pw.Case(None, [(traceback_length > traceback_chars, tail)], JobError.traceback).alias("traceback"),
            traceback_length.coerce(False).alias("traceback_length"),
        )
        .where(mine)
        .order_by(JobError.attempt.desc(), JobError.id.desc())
        .limit(size)
        .offset((number - 1) * size)  # a job's own attempts through (job_id, attempt): a page deep at most
    )
    rows = list(query.objects())
    return AttemptPage(rows[::-1], total, number, size)
