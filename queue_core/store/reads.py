"""The read model: what the console, the API and the CLI show of jobs. Nothing here changes a job."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import peewee as pw

from ..rules import CANCELLED, COMPLETED, FAILED, PENDING, RUNNING, cutoff_before, worker_state
from ..validation import (
    MAX_INT64,
    validate_age,
    validate_job_id,
    validate_limit,
    validate_positive_int,
    validate_status,
    validate_type,
)
from .compiled import Markers, RowReader
from .models import Job, JobStatus, is_postgres
from .schema import queue_index_parts
from .statements import HostTime, ServerTime, Statements

ROW_ERROR_CHARS = 300
MAX_PRIORITY_LEVELS = 50  # seeks per read of the jobs due later; priorities past this many levels are not read
# A list page (id order) of a status or type with more jobs than this walks the primary key instead of its index.
LIST_SORT_CAP = 10_000


@dataclass(frozen=True)
class QueueState:
    """A queue as operators see it: paused or not, its jobs per status, and its latency (seconds since its
    oldest due pending job became due; None when nothing is waiting)."""

    name: str
    paused: bool
    counts: dict[str, int]
    latency: float | None

    def to_dict(self) -> dict:
        return {"name": self.name, "paused": self.paused, "counts": dict(self.counts), "latency": self.latency}


@dataclass(frozen=True)
class WorkerState:
    """A worker's registry row and its state: ``running``, ``stopped``, or ``lost`` (not seen for longer than
    its own ``stale_after``); ``silent_for`` is the seconds since it was last seen. ``running`` is the jobs it
    holds now, as the jobs table says; ``completed`` and ``failed`` are its own counts at its last beat."""

    id: str
    host: str
    pid: int
    queues: list[str] | str  # "*": every queue
    concurrency: int
    stale_after: float
    started_at: datetime
    last_seen_at: datetime
    stopped_at: datetime | None
    running: int
    completed: int
    failed: int
    state: str
    silent_for: float
    types: list[str] | None = None  # the job types it has handlers for (None: not recorded)

    def to_dict(self) -> dict:
        data = dict(self.__dict__)
        for name in ("started_at", "last_seen_at", "stopped_at"):
            data[name] = data[name].isoformat() if data[name] is not None else None
        return data


class JobReads:
    """Reads of one database's jobs; ``JobRepository`` extends it and sets what it reads through."""

    db: pw.Database
    Job: type[Job]
    JobError: type[pw.Model]
    QueueRecord: type[pw.Model]
    WorkerRecord: type[pw.Model]
    statements: Statements
    time: HostTime | ServerTime
    _window_reader: RowReader  # its own: window rows have other columns than RETURNING *

    def now(self) -> datetime:
        """The queue's current time (aware UTC): the database's on PostgreSQL, unless a clock was injected.

        Inside a transaction PostgreSQL's ``now()`` is the transaction's start, the same value every
        statement of that transaction sees.
        """
        return self.time.now()

    def local_now(self) -> datetime:
        """This host's current time (aware UTC), or the injected clock's: to stamp what a process shows, never a
        database round trip (a console's worker log line, say, which must not fail when the database is down)."""
        return self.time.local()

    def find_by_id(self, job_id: int) -> Job | None:
        return self.Job.get_or_none(self.Job.id == validate_job_id(job_id))

    def find_by_idempotency_key(self, key: str) -> Job | None:
        return self.Job.get_or_none(self.Job.idempotency_key == key)

    def errors_for(self, job_id: int) -> list:
        """Every failed attempt of a job, oldest first."""
        JobError = self.JobError
        return list(
            JobError.select().where(JobError.job_id == validate_job_id(job_id)).order_by(JobError.attempt, JobError.id)
        )

    def refusal(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> str | None:
        """Why ``complete``, ``fail`` or ``release`` with these arguments is refused now; None if it would be taken.

        The first reason that holds, in the order the acknowledgement checks them: no such job; the job is
        not running; another worker holds it; the attempt named is over. The server's 409 quotes it.
        """
        job = self.find_by_id(job_id)
        if job is None:
            return f"no job with id {job_id}"
        if job.status != RUNNING:
            return f"it is {job.status}, not running"
        if worker_id is not None and job.worker_id != worker_id:
            return f"it is held by worker {job.worker_id!r}, not {worker_id!r}"
        if attempt is not None and attempt > job.attempt:
            attempts = f"{job.attempt} attempt{'s' if job.attempt != 1 else ''}"
            return f"the job has had {attempts}: attempt {attempt} never started"
        if attempt is not None and job.attempt != attempt:
            return f"attempt {attempt} is over; the job is now on attempt {job.attempt}"
        return None

    def counts(self, *, type: str | None = None, cap: int | None = None) -> dict[str, int]:
        """Jobs per status (every status present, zero included).

        With ``cap``, each status is counted only up to ``cap + 1`` jobs, so a status holding more than
        ``cap`` reads as ``cap + 1`` ("more than cap"). Each count is then an index range read that stops
        early: a live console pays for at most ``cap`` index entries per status, not for a million rows.
        """
        Job = self.Job
        counts = {status.value: 0 for status in JobStatus}
        if cap is not None:
            validate_positive_int("cap", cap, MAX_INT64 - 1)  # counted up to cap + 1
            values = {} if type is None else {"type": type}
            for status in counts:
                # Compiled once per shape: building the query each time was a third of a console refresh.
                statement = self.statements.compiled.statement(self._capped_count, status, type is not None, cap)
                counts[status] = self.db.execute_sql(statement.sql, statement.params(values)).fetchone()[0]
            return counts
        query = Job.select(Job.status, pw.fn.COUNT(Job.id).alias("n")).group_by(Job.status)
        if type is not None:
            query = query.where(Job.type == type)
        for status, n in query.tuples():
            counts[status] = n
        return counts

    def _capped_count(self, m: Markers, status: str, typed: bool, cap: int):
        """How many jobs of ``status`` (of the marked type), counting up to ``cap + 1``."""
        Job = self.Job
        rows = Job.select(pw.SQL("1")).where(Job.status == status)
        if typed:
            rows = rows.where(Job.type == m.text("type", Job.type))
        return pw.Select([rows.limit(cap + 1).alias("capped")], [pw.fn.COUNT(pw.SQL("*"))]).bind(self.db)

    def count_stale(self, older_than: timedelta, *, type: str | None = None, now: datetime | None = None) -> int:
        """How many running jobs ``reap_stale(older_than)`` would take back now (or at ``now``)."""
        validate_age("older_than", older_than)
        now = self.now() if now is None else now
        query = self.Job.select().where(self._stale(cutoff_before(now, older_than)))
        if type is not None:
            query = query.where(self.Job.type == type)
        return query.count()

    def _stale(self, cutoff: datetime):
        """The condition that a job is running and its heartbeat (or claim, if none) is older than ``cutoff``
        (rules.is_stale, in SQL)."""
        Job = self.Job
        # A function on the left: peewee would bind the cutoff as it is (an aware datetime, which PostgreSQL
        # compares in the session's time zone), so convert it as the columns are stored.
        # The status is written as a literal (models.StatusField), as in the claim: a worker's statements are
        # planned generically (its reaps too, once psycopg prepares them), and a generic plan of "status = $1"
        # walked the primary key over every job (56 ms at 200,000 jobs, every reap interval).
        return (Job.status == RUNNING) & (_last_sign_of_life(Job) < Job.claimed_at.to_value(cutoff))

    def list(
        self, status: str | None = None, type: str | None = None, *, limit: int = 100, after: int | None = None
    ) -> list[Job]:
        """Jobs in id order, ``limit`` at a time; pass the last id seen as ``after`` for the next page."""
        Job = self.Job
        query = Job.select().order_by(Job.id).limit(validate_limit(limit))
        status = None if status is None else validate_status(status)
        # A job's type follows validate_type: another (a NUL, which PostgreSQL refused as a database error, or
        # a blank) is a mistake to name, not a filter that matches nothing.
        type = None if type is None else validate_type(type)
        walk = self._many_listed(status, type)
        if status is not None:
            query = query.where(Job.status.checked([status]) if walk else Job.status == status)
        if type is not None:
            query = query.where(Job.type.concat(pw.SQL("''")) == type if walk else Job.type == type)
        if after is not None:
            query = query.where(Job.id > after)
        return list(query)

    def _many_listed(self, status: str | None, type: str | None) -> bool:
        """Whether a list page of ``status`` and ``type`` should walk the primary key (filters no index can
        use) rather than their index: on SQLite, when they match more than LIST_SORT_CAP jobs (counted up to
        there). SQLite, which has no statistics of the table, read a page through the index: every job of the
        status in it, sorted by id for the page (0.2-0.3 s of CPU at 880,000 completed jobs, each page); the
        key walk reads from ``after`` until the page is full. PostgreSQL's planner chooses by its statistics."""
        if is_postgres(self.db) or (status is None and type is None):
            return False
        if status is None:
            return sum(self.counts(type=type, cap=LIST_SORT_CAP).values()) > LIST_SORT_CAP
        statement = self.statements.compiled.statement(self._capped_count, status, type is not None, LIST_SORT_CAP)
        values = {} if type is None else {"type": type}
        return self.db.execute_sql(statement.sql, statement.params(values)).fetchone()[0] > LIST_SORT_CAP

    def window(
        self, status: str, *, type: str | None = None, limit: int = 200, now: datetime | None = None
    ) -> list[Job]:
        """The first ``limit`` jobs of one status in the order an operator reads them.

        pending: run order, the jobs due at ``now`` (default: the queue's clock) in claim order, then those
        due later, soonest first (a job due in a minute runs after every due one, whatever its priority);
        running: the longest silent first (oldest heartbeat, or claim if none), so stale ones stay on top;
        completed, failed and cancelled: most recent first.
        """
        if validate_status(status) != PENDING:
            return list(self._window_query(status, type, limit))
        ids = [row.id for row in self.window_rows(status, type=type, limit=limit, now=now)]
        jobs = {job.id: job for job in self.Job.select().where(self.Job.id.in_(ids))} if ids else {}
        return [jobs[job_id] for job_id in ids if job_id in jobs]

    def window_rows(
        self, status: str, *, type: str | None = None, limit: int = 200, now: datetime | None = None, where=None
    ) -> list:
        """``window`` as light named tuples: every column but the payload, ``error`` cut to ``ROW_ERROR_CHARS``;
        only the jobs ``where`` (an operator's query, store.query) matches, if given.

        What a live table shows, at a fraction of the cost: a refresh never reads or decodes payloads and
        builds no model objects.
        """
        status, limit = validate_status(status), validate_limit(limit)
        pending = status == PENDING
        now = self.now() if pending and now is None else now
        if where is None:
            # Compiled once per shape, as the counts: a live table is read at every refresh.
            statement = self.statements.compiled.statement(self._window_rows, status, type is not None, limit)
            values = {"type": type} if type is not None else {}
            cursor = self.db.execute_sql(statement.sql, statement.params({**values, "now": now} if pending else values))
            rows = self._window_reader.named(cursor, keep=f"window:{status}")
        else:
            Job = self.Job
            query = self._window_query(status, type, limit, *page_columns(Job)).where(where)
            if pending:
                query = query.where(self._due_by(now))
            rows = self._window_reader.named(self.db.execute_sql(*query.sql()), keep=f"filtered:{status}")
        if not pending or len(rows) >= limit:
            return rows
        # Room left: the jobs due later, soonest first, as the scheduled state's first page.
        return rows + self.scheduled_rows(limit - len(rows), now, narrowing=narrowing_conditions(self.Job, type, where))

    def _window_rows(self, m: Markers, status: str, typed: bool, limit: int):
        Job = self.Job
        query = self._window_query(status, m.text("type", Job.type) if typed else None, limit, *page_columns(Job))
        return query.where(self._due_by(m.time("now", Job.run_at))) if status == PENDING else query

    def _due_by(self, now) -> pw.Expression:
        """Due at ``now``: a filter on the rows of the index a read picks without it (Statements.unindexed)."""
        run_at = self.Job.run_at
        return pw.Expression(self.statements.unindexed(run_at), "<=", run_at.to_value(now))

    def _window_query(self, status: str, type: str | None, limit: int, *columns):
        Job = self.Job
        status = validate_status(status)
        orders = {
            PENDING: (Job.priority.desc(), Job.run_at, Job.id),
            RUNNING: (_last_sign_of_life(Job), Job.id),
            COMPLETED: (Job.updated_at.desc(), Job.id.desc()),
            FAILED: (Job.updated_at.desc(), Job.id.desc()),
            CANCELLED: (Job.updated_at.desc(), Job.id.desc()),
        }
        query = Job.select(*columns).where(Job.status == status).order_by(*orders[status]).limit(validate_limit(limit))
        if type is not None:
            query = query.where(Job.type == type)
        return query

    def scheduled_rows(self, limit: int, now: datetime, *, after: tuple | None = None, narrowing=()) -> list:
        """The first ``limit`` pending jobs due after ``now`` (and past the (run_at, id) ``after``), soonest
        first, as light rows; only those every condition in ``narrowing`` matches.

        No index orders pending jobs by run_at alone; the claim index orders them by priority, then run_at. So
        each priority level (found by a loose scan, a seek each) is read in run_at order up to ``limit`` rows
        and the levels are merged: a read costs levels x limit index entries, not a scan of the backlog.
        """
        Job = self.Job
        pending = Job.status == PENDING  # a literal (models.StatusField): the partial claim index serves it
        due_later = Job.run_at > Job.run_at.to_value(now)
        if after is not None:
            due_later &= keyset_after(Job.run_at, Job.id, after, ascending=True)
        for condition in narrowing:
            due_later &= condition
        rows, level = [], None
        for _ in range(MAX_PRIORITY_LEVELS):
            seek = Job.select(pw.fn.MAX(Job.priority)).where(pending)
            level = (seek.where(Job.priority < level) if level is not None else seek).scalar()
            if level is None:
                break
            query = Job.select(*page_columns(Job)).where(pending & (Job.priority == level) & due_later)
            query = query.order_by(Job.run_at, Job.id).limit(limit)
            rows += self._window_reader.named(self.db.execute_sql(*query.sql()), keep=f"scheduled:{level}")
        rows.sort(key=lambda row: (row.run_at, row.id))
        return rows[:limit]

    def throughput(self, period: timedelta = timedelta(minutes=5)) -> dict[str, float]:
        """Jobs completed and attempts failed per minute over the last ``period``."""
        Job, JobError = self.Job, self.JobError
        since = self.time.sql() - period
        completed = Job.select().where((Job.status == COMPLETED) & (Job.updated_at >= since)).count()
        failed = JobError.select().where(JobError.created_at >= since).count()
        minutes = period.total_seconds() / 60
        return {"completed": completed / minutes, "failed": failed / minutes}

    # --- queues and workers -----------------------------------------------------------------------

    def queues(self) -> list[QueueState]:
        """One ``QueueState`` per queue that has jobs or is paused, sorted by name."""
        return self._queue_states(None)

    def queue_state(self, name: str) -> QueueState:
        """One queue's state (zero counts and not paused for a queue nobody used)."""
        states = self._queue_states(name)
        return states[0] if states else QueueState(name, False, {status.value: 0 for status in JobStatus}, None)

    def _queue_states(self, name: str | None) -> list[QueueState]:
        Job, Queue = self.Job, self.QueueRecord
        now = self.now()
        counts = Job.select(Job.queue, Job.status, pw.fn.COUNT(Job.id)).group_by(Job.queue, Job.status)
        # One query per (queue, ...) index, so that a queue's counts are a range of each (PostgreSQL's are partial).
        counts = [counts if part is None else counts.where(part) for part in queue_index_parts(Job)]
        due = Job.select(Job.queue, pw.fn.MIN(Job.run_at)).where(
            (Job.status == PENDING) & (Job.run_at <= Job.run_at.to_value(now))
        )
        paused = Queue.select(Queue.name, Queue.paused)
        if name is not None:
            counts, due, paused = (
                [query.where(Job.queue == name) for query in counts],
                due.where(Job.queue == name),
                paused.where(Queue.name == name),
            )
        per_queue: dict[str, dict[str, int]] = {}
        for query in counts:
            for queue, status, n in query.tuples():
                per_queue.setdefault(queue, {s.value: 0 for s in JobStatus})[status] = n
        oldest = dict(due.group_by(Job.queue).tuples())
        flags = dict(paused.tuples())
        names = set(per_queue) | {queue for queue, is_paused in flags.items() if is_paused}
        return [
            QueueState(
                queue,
                bool(flags.get(queue, False)),
                per_queue.get(queue) or {s.value: 0 for s in JobStatus},
                _seconds_since(oldest.get(queue), now, Job.run_at),
            )
            for queue in sorted(names)
        ]

    def workers(self) -> list[WorkerState]:
        """Every worker in the registry with its state, sorted by id."""
        Worker, Job = self.WorkerRecord, self.Job
        now = self.now()
        # The running jobs each worker holds, read now: the count it reported at its last beat (up to a
        # heartbeat interval old, 0 until its first) disagreed with the jobs listed for it, and a lost
        # worker's claims still hold their jobs until they are reaped.
        held = dict(
            Job.select(Job.worker_id, pw.fn.COUNT(Job.id)).where(Job.status == RUNNING).group_by(Job.worker_id).tuples()
        )
        states = []
        for row in Worker.select().order_by(Worker.id):
            fields = {name: getattr(row, name) for name in Worker._meta.sorted_field_names}
            fields["running"] = held.get(row.id, 0)
            fields["queues"] = row.queues if row.queues == "*" else json.loads(row.queues)
            fields["types"] = None if row.types is None else json.loads(row.types)
            fields["state"] = worker_state(row.stopped_at, row.last_seen_at, row.stale_after, now)
            fields["silent_for"] = max(0.0, (now - row.last_seen_at).total_seconds())
            states.append(WorkerState(**fields))
        return states


def _seconds_since(value, now: datetime, field: pw.Field) -> float | None:
    """Seconds from ``value`` (an aggregate, which comes back unconverted) to ``now``; None for None."""
    if value is None:
        return None
    return max(0.0, (now - field.python_value(value)).total_seconds())


def _last_sign_of_life(Job: type[Job]):
    """rules.last_sign_of_life in SQL: the heartbeat, or the claim if there is none yet."""
    return pw.fn.COALESCE(Job.heartbeat_at, Job.claimed_at)


def page_columns(Job) -> list:
    """A light row's columns: every column but the payload, the error cut to ``ROW_ERROR_CHARS``."""
    columns = [field for field in Job._meta.sorted_fields if field.name not in ("payload", "error")]
    return [*columns, pw.fn.SUBSTR(Job.error, 1, ROW_ERROR_CHARS).alias("error")]


def narrowing_conditions(Job, type, where) -> list:
    """The type filter and an operator's query (store.query: bound values only), those given."""
    return [c for c in (Job.type == type if type is not None else None, where) if c is not None]


def keyset_after(time_column, id_column, after: tuple, *, ascending: bool):
    """Rows strictly past ``after`` in (time, id) order (spelt out: SQLite plans row values poorly)."""
    time, job_id = after
    time_value = time_column.to_value(time)
    if ascending:
        return (time_column > time_value) | ((time_column == time_value) & (id_column > job_id))
    return (time_column < time_value) | ((time_column == time_value) & (id_column < job_id))
