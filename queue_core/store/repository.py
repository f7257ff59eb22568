"""``JobRepository``: every state transition of a job, and the read model the console and API show.

No other module changes a job. Each transition is one guarded statement, or one transaction that
takes the write lock first, so two workers never both win the same job.
"""

from __future__ import annotations

import json
import operator
import random
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import peewee as pw

from ..clock import Clock, utc_now
from ..errors import IdempotencyConflict, ValidationError
from ..rules import (
    COMPLETED,
    DEFAULT_MAX_RETRIES,
    FAILED,
    PENDING,
    RUNNING,
    backoff_delay,
    cutoff_before,
    has_retries_left,
    last_sign_of_life,
)
from ..validation import (
    encode_payload,
    validate_age,
    validate_aware,
    validate_error,
    validate_idempotency_key,
    validate_limit,
    validate_max_retries,
    validate_positive_int,
    validate_retry_backoff,
    validate_status,
    validate_type,
    validate_types,
    validate_worker_id,
)
from .compiled import Markers, PreparedStatement, RowReader, StatementCache
from .models import Job, JobStatus, bind_models, is_postgres, parse_priority
from .notify import JOBS_CHANNEL

# Rows per INSERT in create_many: 11 bound values a row stays far below SQLite's 32,766 and
# PostgreSQL's 65,535 parameters per statement, while one statement per 1000 rows costs next to nothing.
CREATE_MANY_CHUNK = 1000
# Every column a new job sets; the rest start NULL. Values are already in their stored form.
INSERT_COLUMNS = (
    "type",
    "payload",
    "priority",
    "status",
    "retry_count",
    "attempt",
    "max_retries",
    "idempotency_key",
    "run_at",
    "retry_backoff",
    "created_at",
    "updated_at",
)
CREATE_FIELDS = ("type", "payload", "priority", "max_retries", "idempotency_key", "run_at", "retry_backoff")
_CREATE_FIELD_SET = frozenset(CREATE_FIELDS)
ROW_ERROR_CHARS = 300
_KEEP = object()  # _requeue_changes: leave the latest error as it is
PRUNE_BATCH = 5000  # rows per prune transaction: short locks, and autovacuum keeps up in between

# PostgreSQL's clock as a naive UTC timestamp (the columns' type), evaluated by the server.
POSTGRES_NOW = pw.SQL("(now() AT TIME ZONE 'UTC')")


class JobRepository:
    """Every transition of a job, on one database.

    Time: an injected ``clock`` (tests) is used for every time on both backends. Without one, PostgreSQL
    uses the server's ``now()``, so workers on hosts with skewed clocks still agree on claim and heartbeat
    ages; SQLite uses this process's clock, which is the one machine's clock every process shares.
    """

    def __init__(self, db: pw.Database, clock: Clock | None = None, *, rng: random.Random | None = None):
        self.db = db
        self.clock = clock or utc_now
        self.rng = rng or random.Random()
        self.postgres = is_postgres(db)
        self.database_clock = clock is None and self.postgres
        models = bind_models(db)
        self.Job = models.Job
        self.JobError = models.JobError
        self._statements = StatementCache()
        self._row_reader = RowReader(self.Job)
        self._window_reader = RowReader(self.Job)  # its own: window rows have other columns than RETURNING *

    def now(self) -> datetime:
        """The queue's current time (aware UTC): the database's on PostgreSQL, unless a clock was injected.

        Inside a transaction PostgreSQL's ``now()`` is the transaction's start, the same value every
        statement of that transaction sees.
        """
        if self.database_clock:
            return self.db.execute_sql("SELECT now()").fetchone()[0].astimezone(UTC)
        now = self.clock()
        if now.tzinfo is None:
            raise ValidationError("clock", "the clock returned a naive datetime; it must return aware UTC")
        return now.astimezone(UTC)

    def _now_sql(self):
        """The current time for use inside one statement: the server evaluates it when it is the clock."""
        return POSTGRES_NOW if self.database_clock else self.now()

    def _announce_pending(self) -> None:
        """Wake idle workers listening on PostgreSQL (store.notify); delivered when the transaction commits."""
        if self.postgres:
            self.db.execute(pw.Select(columns=[_pending_notification()]))

    # --- create -----------------------------------------------------------------------------------

    def create(
        self,
        type: str,
        payload: dict | None = None,
        *,
        priority: int | str = 0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        retry_backoff: float | None = None,
    ) -> tuple[Job, bool]:
        """Enqueue a job; with an idempotency key already used, return that job and ``created=False``."""
        fields = self._validated_fields(
            self._now_sql(), type, payload, priority, max_retries, idempotency_key, run_at, retry_backoff
        )
        if idempotency_key is not None:
            existing = self.find_by_idempotency_key(idempotency_key)
            if existing is not None:
                return self._same_job_or_conflict(existing, fields), False
        try:
            job = self._insert_job(fields)  # one statement: atomic by itself, no BEGIN/COMMIT round trips
        except pw.IntegrityError:
            # Lost the race to a concurrent create: the UNIQUE constraint is the authority.
            existing = self.find_by_idempotency_key(idempotency_key) if idempotency_key is not None else None
            if existing is None:
                raise
            return self._same_job_or_conflict(existing, fields), False
        return job, True

    def _insert_job(self, fields: dict) -> Job:
        """INSERT ... RETURNING the stored row, with the times the database computed when it is the clock."""
        Job = self.Job
        clocked = frozenset(name for name, value in fields.items() if isinstance(value, pw.Node))

        def build(m: Markers):
            marked = {
                "type": m.text("type", Job.type),
                "payload": m.text("payload", Job.payload),
                "priority": m.integer("priority", Job.priority),
                "max_retries": m.integer("max_retries", Job.max_retries),
                "idempotency_key": m.text("idempotency_key", Job.idempotency_key),
                "retry_backoff": m.real("retry_backoff", Job.retry_backoff),
            }
            for name in ("run_at", "created_at", "updated_at"):
                if name not in clocked:
                    marked[name] = m.time(name, Job._meta.fields[name])
            insert = Job.insert(**{**fields, **marked}).returning(Job)
            if not self.postgres:
                return insert
            # The NOTIFY that wakes listening workers rides in the same statement: it is delivered with
            # the commit that makes the job visible, in one round trip (BEGIN, INSERT, NOTIFY, COMMIT took four).
            new = insert.cte("new")
            notify = _pending_notification().alias("notified")
            return pw.Select([new, notify], [pw.SQL('"new".*')]).with_cte(new).bind(self.db)

        values = {name: value for name, value in fields.items() if name not in clocked}
        return next(iter(self._prepared(("insert", clocked), build, rows_as=Job).execute(values)))

    def create_many(self, specs: Iterable[Mapping]) -> list[Job]:
        """Enqueue many jobs in one transaction, all or nothing; the jobs come back in the order given.

        Each spec is a mapping of ``create``'s keyword arguments (``type`` required). Every spec is
        validated before anything is written: a bad one raises ``ValidationError`` naming it, e.g.
        ``specs[3].priority``. A spec whose idempotency key is already used gets that job back, as with
        ``create`` (``IdempotencyConflict`` if its type or payload differ, and then nothing is written);
        a key given twice in one batch is an error.
        """
        now = self._now_sql()
        rows = [self._validated_spec(index, spec, now) for index, spec in enumerate(specs)]
        if not rows:
            return []
        _reject_repeated_keys(rows)
        try:
            return self._insert_many(rows)
        except pw.IntegrityError:
            # A concurrent create took one of our keys between our look-up and our insert (PostgreSQL;
            # SQLite holds the write lock throughout). Nothing was written; once more sees that job.
            return self._insert_many(rows)

    def _validated_spec(self, index: int, spec, now) -> dict:
        # type() first: the Mapping ABC's isinstance is slow, and a batch is usually plain dicts.
        if type(spec) is not dict and not isinstance(spec, Mapping):
            raise ValidationError(f"specs[{index}]", f"must be a mapping of create()'s arguments, not {spec!r}")
        if not spec.keys() <= _CREATE_FIELD_SET or "type" not in spec:
            unknown = sorted(map(str, spec.keys() - _CREATE_FIELD_SET))
            what = f"unknown field(s) {', '.join(unknown)}" if unknown else "type is missing"
            raise ValidationError(f"specs[{index}]", f"{what}; a spec takes {', '.join(CREATE_FIELDS)}")
        try:
            return self._validated_fields(
                now,
                spec["type"],
                spec.get("payload"),
                spec.get("priority", 0),
                spec.get("max_retries", DEFAULT_MAX_RETRIES),
                spec.get("idempotency_key"),
                spec.get("run_at"),
                spec.get("retry_backoff"),
            )
        except ValidationError as exc:
            raise ValidationError(f"specs[{index}].{exc.field}", exc.message) from None

    def _insert_many(self, rows: list[dict]) -> list[Job]:
        Job = self.Job
        with self.db.atomic():
            keys = [row["idempotency_key"] for row in rows if row["idempotency_key"] is not None]
            existing = {}
            for start in range(0, len(keys), CREATE_MANY_CHUNK):
                chunk = keys[start : start + CREATE_MANY_CHUNK]
                existing.update(
                    (job.idempotency_key, job) for job in Job.select().where(Job.idempotency_key.in_(chunk))
                )
            jobs = [
                self._same_job_or_conflict(existing[row["idempotency_key"]], row)
                if row["idempotency_key"] in existing
                else None
                for row in rows
            ]
            new = [index for index, job in enumerate(jobs) if job is None]
            for start in range(0, len(new), CREATE_MANY_CHUNK):
                chunk = new[start : start + CREATE_MANY_CHUNK]
                for index, job in zip(chunk, self._insert_rows([rows[i] for i in chunk]), strict=True):
                    jobs[index] = job
            if new:
                self._announce_pending()
        return jobs

    def _insert_rows(self, rows: list[dict]) -> list[Job]:
        """One multi-row INSERT of validated rows; the new jobs, in the rows' order.

        Written as SQL rather than ``insert_many``: peewee spends ~50 µs a row building the statement,
        which held batch enqueue to 17k jobs/s (tests/bench); this runs at well over 50k.
        """
        Job = self.Job
        fields = [Job._meta.fields[name] for name in INSERT_COLUMNS]
        columns = ", ".join(f'"{field.column_name}"' for field in fields)
        table = f'INSERT INTO "{Job._meta.table_name}" ({columns}) VALUES '
        if any(isinstance(value, pw.Node) for value in rows[0].values()):
            # The database's clock (one "now" for the whole batch): written into the statement, and the
            # stored rows read back for the times it computed.
            values_sql, params = self._clocked_values(rows, fields)
            cursor = self.db.execute_sql(f"{table}{values_sql} RETURNING *", params)
            return sorted(self._row_reader.models(cursor), key=lambda job: job.id)
        row_values = operator.itemgetter(*INSERT_COLUMNS)
        times = [(i, field.db_value) for i, field in enumerate(fields) if isinstance(field, pw.DateTimeField)]
        stored = {}  # a batch shares one "now": convert each distinct time once
        params = []
        for row in rows:
            values = list(row_values(row))
            for i, db_value in times:
                value = values[i]
                if value not in stored:
                    stored[value] = db_value(value)
                values[i] = stored[value]
            params.extend(values)
        one_row = f"({', '.join([self.db.param] * len(fields))})"
        cursor = self.db.execute_sql(f"{table}{', '.join([one_row] * len(rows))} RETURNING id", params)
        # One statement numbers its rows in the order given, while we hold the write lock (SQLite) or
        # draws them from the sequence row by row (PostgreSQL): ascending ids follow our order.
        build = self._row_reader.build
        return [
            # The stored payload, decoded, as a read returns it.
            build({**row, "id": job_id, "payload": _decoded(row["payload"])})
            for row, (job_id,) in zip(rows, sorted(cursor.fetchall()), strict=True)
        ]

    def _clocked_values(self, rows: list[dict], fields: list) -> tuple[str, list]:
        values_sql, params = [], []
        for row in rows:
            slots = []
            for field in fields:
                value = row[field.name]
                if isinstance(value, pw.Node):
                    sql, node_params = self.db.get_sql_context().sql(value).query()
                    slots.append(sql)
                    params.extend(node_params)
                else:
                    slots.append(self.db.param)
                    params.append(field.db_value(value))
            values_sql.append(f"({', '.join(slots)})")
        return ", ".join(values_sql), params

    def _validated_fields(
        self, now, type, payload, priority, max_retries, idempotency_key, run_at, retry_backoff
    ) -> dict:
        return {
            "type": validate_type(type),
            "payload": encode_payload(payload),
            "priority": parse_priority(priority),
            "max_retries": validate_max_retries(max_retries),
            "idempotency_key": validate_idempotency_key(idempotency_key),
            "run_at": now if run_at is None else validate_aware("run_at", run_at),
            "retry_backoff": validate_retry_backoff(retry_backoff),
            "status": PENDING,
            "retry_count": 0,
            "attempt": 0,
            "created_at": now,
            "updated_at": now,
        }

    @staticmethod
    def _same_job_or_conflict(existing: Job, fields: dict) -> Job:
        # Payloads compared as canonical JSON, not as Python values: 1 == 1.0 == True in Python, yet
        # {"amount": 1}, {"amount": 1.0} and {"amount": true} are different requests. Key order is not.
        new = json.loads(fields["payload"])
        if existing.type != fields["type"] or _canonical(existing.payload) != _canonical(new):
            raise IdempotencyConflict(fields["idempotency_key"], existing)
        return existing

    # --- claim and run --------------------------------------------------------------------------

    def claim(self, worker_id: str, *, types: Iterable[str] | None = None) -> Job | None:
        """Atomically take the next due pending job: highest priority, then due first, then lowest id."""
        jobs = self.claim_many(worker_id, 1, types=types)
        return jobs[0] if jobs else None

    def claim_many(self, worker_id: str, n: int, *, types: Iterable[str] | None = None) -> list[Job]:
        """Claim up to ``n`` jobs in one statement (in claim order).

        SQLite: ``UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING``; SQLite runs one writer at a
        time, so the statement is atomic. PostgreSQL: a CTE selects the jobs ``FOR UPDATE SKIP LOCKED``
        and the UPDATE takes them, so concurrent claimers skip each other's rows instead of waiting on
        them, and a row another claimer took meanwhile fails the re-checked ``status = 'pending'``.
        """
        worker_id = validate_worker_id(worker_id)
        validate_positive_int("n", n)
        types = _padded(validate_types(types))
        if types == []:
            return []
        Job = self.Job
        values = {"worker_id": worker_id, "n": n}
        values.update((f"type{i}", name) for i, name in enumerate(types or ()))
        if not self.database_clock:
            values["now"] = self.now()

        def build(m: Markers):
            shape = None if types is None else [m.text(f"type{i}", Job.type) for i in range(len(types))]
            now = POSTGRES_NOW if self.database_clock else m.time("now", Job.run_at)
            return self._claim_statement(m.text("worker_id", Job.worker_id), m.integer("n"), shape, now=now)

        jobs = self._prepared(("claim", None if types is None else len(types)), build).execute(values)
        jobs.sort(key=lambda job: (-job.priority, job.run_at, job.id))
        return jobs

    def _claim_statement(self, worker_id: str, n: int, types: list[str] | None, now=None):
        now = self._now_sql() if now is None else now
        chosen, query = self._claim_parts(worker_id, self._due(n, types, now), now)
        return query if chosen is None else query.with_cte(chosen)

    def _due(self, n: int, types: list[str] | None, now):
        """The ids of the next ``n`` due pending jobs: highest priority, then due first, then lowest id."""
        Job = self.Job
        # A literal on PostgreSQL, so that even a generic prepared plan matches jobs_pending_claim's predicate.
        pending = pw.SQL(f"'{PENDING}'") if self.postgres else PENDING
        due = Job.select(Job.id).where((Job.status == pending) & (Job.run_at <= now))
        if types is not None:
            due = due.where(Job.type.in_(types))
        return due.order_by(Job.priority.desc(), Job.run_at, Job.id).limit(n)

    def _claim_parts(self, worker_id: str, due, now):
        """(the PostgreSQL CTE locking the ``due`` jobs or None, the UPDATE ... RETURNING that claims them)."""
        Job = self.Job
        query = Job.update(
            status=RUNNING,
            worker_id=worker_id,
            attempt=Job.attempt + 1,  # the fencing token: every claim is a new attempt
            claimed_at=now,
            heartbeat_at=None,
            updated_at=now,
        )
        if not self.postgres:
            return None, query.where(Job.id.in_(due)).returning(Job)
        chosen = due.for_update("FOR UPDATE SKIP LOCKED").cte("claimable", materialized=True)
        return chosen, query.from_(chosen).where(Job.id == chosen.c.id).returning(Job)

    def _prepared(self, key, build, rows_as=None) -> PreparedStatement:
        """The statement for ``key``, built by peewee on first use and replayed after (queue_core.store.compiled)."""
        return self._statements.get(key, lambda: PreparedStatement(self.db, build, rows_as))

    def heartbeat(self, job_ids: Iterable[int], *, worker_id: str) -> list[int]:
        """Refresh the heartbeat of running jobs this worker holds; returns the ids it still holds."""
        job_ids = list(job_ids)
        if not job_ids:
            return []
        Job = self.Job
        query = (
            Job.update(heartbeat_at=self._now_sql())
            .where(Job.id.in_(job_ids) & (Job.status == RUNNING) & (Job.worker_id == worker_id))
            .returning(Job.id)
        )
        return sorted(row.id for row in query.execute())

    def _held(self, job_id: int, worker_id: str | None, attempt: int | None):
        """The condition that ``job_id`` is running and, if given, held by ``worker_id`` at ``attempt``."""
        Job = self.Job
        condition = (Job.id == job_id) & (Job.status == RUNNING)
        if worker_id is not None:
            condition &= Job.worker_id == worker_id
        if attempt is not None:
            # The fencing token: every claim adds one and nothing resets it (not even an operator retry),
            # so a late ack of an earlier claim matches nothing.
            condition &= Job.attempt == attempt
        return condition

    def complete(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> Job | None:
        """Mark a running job completed; None if it is missing, not running, or held by someone else."""
        Job = self.Job

        def build(m: Markers):
            holder = m.text("worker_id", Job.worker_id) if worker_id is not None else None
            held_at = m.integer("attempt", Job.attempt) if attempt is not None else None
            now = POSTGRES_NOW if self.database_clock else m.time("now", Job.updated_at)
            changes = {"status": COMPLETED, "updated_at": now}
            return Job.update(**changes).where(self._held(m.integer("job_id", Job.id), holder, held_at)).returning(Job)

        values = {"job_id": job_id, "worker_id": worker_id}
        if not self.database_clock:
            values["now"] = self.now()
        if attempt is not None:
            values["attempt"] = attempt
        statement = self._prepared(("complete", worker_id is not None, attempt is not None), build)
        return next(iter(statement.execute(values)), None)

    def complete_and_claim(
        self, job_id: int, types: Iterable[str] | None = None, *, worker_id: str, attempt: int
    ) -> tuple[Job | None, Job | None]:
        """``complete`` a job this worker holds at ``attempt`` and ``claim`` its next one, in one statement.

        Returns (the completed job or None, as ``complete``; the next job or None, as ``claim``). A busy
        worker thus pays one commit and one statement per job instead of two of each. SQLite: one UPDATE
        whose rows are the held job and the next due one, each getting its own new values; PostgreSQL:
        two data-modifying CTEs, the claim choosing its job ``FOR UPDATE SKIP LOCKED`` as ``claim`` does.
        """
        worker_id = validate_worker_id(worker_id)
        types = _padded(validate_types(types))
        if types == []:
            return self.complete(job_id, worker_id=worker_id, attempt=attempt), None
        Job = self.Job
        values = {"job_id": job_id, "worker_id": worker_id, "attempt": attempt}
        values.update((f"type{i}", name) for i, name in enumerate(types or ()))
        if not self.database_clock:
            values["now"] = self.now()

        def build(m: Markers):
            now = POSTGRES_NOW if self.database_clock else m.time("now", Job.updated_at)
            holder = m.text("worker_id", Job.worker_id)
            held = self._held(m.integer("job_id", Job.id), holder, m.integer("attempt", Job.attempt))
            shape = None if types is None else [m.text(f"type{i}", Job.type) for i in range(len(types))]
            due = self._due(1, shape, now)
            if not self.postgres:
                # Each row's old status says which it is (a reaped job of ours is pending again, so its
                # id would not): the running one held is completed, the pending one is claimed.
                ours = Job.status == RUNNING
                changes = {
                    "status": pw.Case(None, [(ours, COMPLETED)], RUNNING),
                    "worker_id": holder,
                    "attempt": pw.Case(None, [(ours, Job.attempt)], Job.attempt + 1),
                    "claimed_at": pw.Case(None, [(ours, Job.claimed_at)], Job.claimed_at.to_value(now)),
                    "heartbeat_at": pw.Case(None, [(ours, Job.heartbeat_at)], None),
                    "updated_at": now,
                }
                return Job.update(**changes).where(held | Job.id.in_(due)).returning(Job)
            done = Job.update(status=COMPLETED, updated_at=now).where(held).returning(Job).cte("done")
            chosen, claim = self._claim_parts(holder, due, now)
            claimed = claim.cte("claimed")
            rows = pw.Select([done], [pw.SQL("*")]).union_all(pw.Select([claimed], [pw.SQL("*")]))
            return rows.with_cte(done, chosen, claimed).bind(self.db)

        key = ("complete_and_claim", None if types is None else len(types))
        jobs = self._prepared(key, build, rows_as=Job).execute(values)
        done = next((job for job in jobs if job.status == COMPLETED), None)
        return done, next((job for job in jobs if job.status == RUNNING), None)

    def fail(self, job_id: int, error: str, *, worker_id: str | None = None, attempt: int | None = None) -> Job | None:
        """Record a failed attempt: back to pending after a back-off while retries are left, else failed."""
        error = validate_error(error)
        Job = self.Job
        with self.db.atomic():
            job = Job.select().where(self._held(job_id, worker_id, attempt)).for_update(self._for_update()).first()
            if job is None:
                return None
            now = self._now_sql()
            self._record_error(job, error, now)
            delay = None
            if has_retries_left(job):
                delay = backoff_delay(job.retry_count, job.retry_backoff, self.rng)
                changes = self._requeue_changes(now, retry_count=job.retry_count + 1, error=error)
                changes["run_at"] = now + timedelta(seconds=delay)
            else:
                changes = {"status": FAILED, "error": error, "updated_at": now}
            query = Job.update(**changes).where(self._held(job_id, job.worker_id, job.attempt)).returning(Job)
            failed = next(iter(query.execute()), None)
            if failed is not None and failed.status == PENDING and delay == 0:
                self._announce_pending()
            return failed

    def release(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> Job | None:
        """Give a running job back to the queue without counting a retry (a worker shutting down)."""
        changes = self._requeue_changes(self._now_sql(), retry_count=self.Job.retry_count)
        query = self.Job.update(**changes).where(self._held(job_id, worker_id, attempt)).returning(self.Job)
        return self._announced(next(iter(query.execute()), None))

    def _announced(self, job: Job | None) -> Job | None:
        """``job``, after waking listening workers if it is claimable again."""
        if job is not None:
            self._announce_pending()
        return job

    @staticmethod
    def _requeue_changes(now, *, retry_count, error=_KEEP) -> dict:
        """Back to pending, claimable at ``now``, the claim cleared; ``error`` replaces the latest one if given."""
        changes = {
            "status": PENDING,
            "retry_count": retry_count,
            "worker_id": None,
            "claimed_at": None,
            "heartbeat_at": None,
            "run_at": now,
            "updated_at": now,
        }
        if error is not _KEEP:
            changes["error"] = error
        return changes

    def _record_error(self, job: Job, error: str, now: datetime) -> None:
        self.JobError.create(job_id=job.id, attempt=job.attempt, worker_id=job.worker_id, error=error, created_at=now)

    def _for_update(self) -> str | None:
        # SQLite has no row locks; its BEGIN IMMEDIATE already holds the write lock.
        return "FOR UPDATE" if self.postgres else None

    # --- operator actions -------------------------------------------------------------------------

    def reap_stale(self, older_than: timedelta) -> int:
        """Take back claims whose heartbeat (or claim, if none) is older than ``older_than``.

        A job with retries left goes back to pending at once with retry_count + 1; one without becomes
        failed, with an error naming the worker that lost it. Returns how many jobs were reaped.
        """
        validate_age("older_than", older_than)
        Job = self.Job
        with self.db.atomic():
            now = self.now()
            cutoff = cutoff_before(now, older_than)
            stale = list(Job.select().where(self._stale(cutoff)).order_by(Job.id).for_update(self._for_update()))
            for job in stale:
                seen = last_sign_of_life(job)
                error = (
                    f"worker {job.worker_id} lost its claim: no heartbeat for "
                    f"{(now - seen).total_seconds():.0f}s (stale after {older_than.total_seconds():.0f}s)"
                )
                self._record_error(job, error, now)
                if has_retries_left(job):
                    changes = self._requeue_changes(now, retry_count=job.retry_count + 1, error=error)
                else:
                    changes = {"status": FAILED, "error": error + "; no retries left", "updated_at": now}
                Job.update(**changes).where(self._held(job.id, job.worker_id, job.attempt)).execute()
            if stale:
                self._announce_pending()
            return len(stale)

    def _stale(self, cutoff: datetime):
        """The condition that a job is running and its heartbeat (or claim, if none) is older than ``cutoff``."""
        Job = self.Job
        # A function on the left: peewee would bind the cutoff as it is (an aware datetime, which PostgreSQL
        # compares in the session's time zone), so convert it as the columns are stored.
        last_seen = pw.fn.COALESCE(Job.heartbeat_at, Job.claimed_at)
        return (Job.status == RUNNING) & (last_seen < Job.claimed_at.to_value(cutoff))

    def retry(self, job_id: int) -> Job | None:
        """Operator retry of a failed job: back to pending now, retry_count reset to 0, claim cleared.

        ``attempt`` is kept: the next claim numbers above every earlier one, so no late ack can finish it.

        The latest ``error`` and the attempt history stay, so the operator still sees why it failed.
        None if the job is missing or not failed.
        """
        Job = self.Job
        changes = self._requeue_changes(self._now_sql(), retry_count=0)
        query = Job.update(**changes).where((Job.id == job_id) & (Job.status == FAILED)).returning(Job)
        return self._announced(next(iter(query.execute()), None))

    def prune(self, older_than: timedelta, *, batch: int = PRUNE_BATCH, max_batches: int | None = None) -> int:
        """Delete completed and failed jobs (and their error history) finished more than ``older_than`` ago.

        In transactions of ``batch`` jobs, so that a large backlog never holds locks (SQLite: the write
        lock every worker needs) for long, and PostgreSQL's autovacuum can reclaim space in between.
        ``max_batches`` stops after that many (a worker prunes one per heartbeat, so that thread is never
        busy long); None goes on until nothing is left. Returns how many jobs were deleted.
        """
        validate_age("older_than", older_than)
        validate_positive_int("batch", batch)
        if max_batches is not None:
            validate_positive_int("max_batches", max_batches)
        Job, JobError = self.Job, self.JobError
        cutoff = cutoff_before(self.now(), older_than)
        finished = Job.status.in_([COMPLETED, FAILED]) & (Job.updated_at < cutoff)
        pruned = batches = 0
        while True:
            batches += 1
            with self.db.atomic():
                # The ids first, then a delete by primary key: a DELETE ... WHERE id IN (subquery) can be
                # planned as a scan of the whole table per batch on PostgreSQL.
                found = [job_id for (job_id,) in Job.select(Job.id).where(finished).limit(batch).tuples()]
                # The condition again: an operator may have retried one of them meanwhile.
                doomed = Job.delete().where(Job.id.in_(found) & finished).returning(Job.id) if found else []
                deleted = [row.id for row in doomed]
                if deleted:
                    JobError.delete().where(JobError.job_id.in_(deleted)).execute()
            pruned += len(deleted)
            if len(found) < batch or batches == max_batches:
                return pruned

    # --- read model -------------------------------------------------------------------------------

    def find_by_id(self, job_id: int) -> Job | None:
        return self.Job.get_or_none(self.Job.id == job_id)

    def find_by_idempotency_key(self, key: str) -> Job | None:
        return self.Job.get_or_none(self.Job.idempotency_key == key)

    def errors_for(self, job_id: int) -> list:
        """Every failed attempt of a job, oldest first."""
        JobError = self.JobError
        return list(JobError.select().where(JobError.job_id == job_id).order_by(JobError.attempt, JobError.id))

    def counts(self, *, type: str | None = None, cap: int | None = None) -> dict[str, int]:
        """Jobs per status (every status present, zero included).

        With ``cap``, each status is counted only up to ``cap + 1`` jobs, so a status holding more than
        ``cap`` reads as ``cap + 1`` ("more than cap"). Each count is then an index range read that stops
        early: a live console pays for at most ``cap`` index entries per status, not for a million rows.
        """
        Job = self.Job
        counts = {status.value: 0 for status in JobStatus}
        if cap is not None:
            validate_positive_int("cap", cap)
            for status in counts:
                rows = Job.select(pw.SQL("1")).where(Job.status == status)
                if type is not None:
                    rows = rows.where(Job.type == type)
                counts[status] = rows.limit(cap + 1).count()
            return counts
        query = Job.select(Job.status, pw.fn.COUNT(Job.id).alias("n")).group_by(Job.status)
        if type is not None:
            query = query.where(Job.type == type)
        for status, n in query.tuples():
            counts[status] = n
        return counts

    def count_stale(self, older_than: timedelta, *, type: str | None = None, now: datetime | None = None) -> int:
        """How many running jobs ``reap_stale(older_than)`` would take back now (or at ``now``)."""
        validate_age("older_than", older_than)
        now = self.now() if now is None else now
        query = self.Job.select().where(self._stale(cutoff_before(now, older_than)))
        if type is not None:
            query = query.where(self.Job.type == type)
        return query.count()

    def list(
        self, status: str | None = None, type: str | None = None, *, limit: int = 100, after: int | None = None
    ) -> list[Job]:
        """Jobs in id order, ``limit`` at a time; pass the last id seen as ``after`` for the next page."""
        Job = self.Job
        query = Job.select().order_by(Job.id).limit(validate_limit(limit))
        if status is not None:
            query = query.where(Job.status == validate_status(status))
        if type is not None:
            query = query.where(Job.type == type)
        if after is not None:
            query = query.where(Job.id > after)
        return list(query)

    def window(self, status: str, *, type: str | None = None, limit: int = 200) -> list[Job]:
        """The first ``limit`` jobs of one status in the order an operator reads them.

        pending: claim order; running: oldest claim first (stale ones on top); completed and failed:
        most recent first.
        """
        return list(self._window_query(status, type, limit))

    def window_rows(self, status: str, *, type: str | None = None, limit: int = 200) -> list:
        """``window`` as light named tuples: every column but the payload, ``error`` cut to ``ROW_ERROR_CHARS``.

        What a live table shows, at a fraction of the cost: a refresh never reads or decodes payloads and
        builds no model objects.
        """
        Job = self.Job
        columns = [field for field in Job._meta.sorted_fields if field.name not in ("payload", "error")]
        error = pw.fn.SUBSTR(Job.error, 1, ROW_ERROR_CHARS).alias("error")
        cursor = self.db.execute_sql(*self._window_query(status, type, limit, *columns, error).sql())
        return self._window_reader.named(cursor)

    def _window_query(self, status: str, type: str | None, limit: int, *columns):
        Job = self.Job
        status = validate_status(status)
        orders = {
            PENDING: (Job.priority.desc(), Job.run_at, Job.id),
            RUNNING: (Job.claimed_at, Job.id),
            COMPLETED: (Job.updated_at.desc(), Job.id.desc()),
            FAILED: (Job.updated_at.desc(), Job.id.desc()),
        }
        query = Job.select(*columns).where(Job.status == status).order_by(*orders[status]).limit(validate_limit(limit))
        if type is not None:
            query = query.where(Job.type == type)
        return query

    def throughput(self, period: timedelta = timedelta(minutes=5)) -> dict[str, float]:
        """Jobs completed and attempts failed per minute over the last ``period``."""
        Job, JobError = self.Job, self.JobError
        since = self._now_sql() - period
        completed = Job.select().where((Job.status == COMPLETED) & (Job.updated_at >= since)).count()
        failed = JobError.select().where(JobError.created_at >= since).count()
        minutes = period.total_seconds() / 60
        return {"completed": completed / minutes, "failed": failed / minutes}

    def refusal(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> str | None:
        """Why an ack of ``job_id`` by ``worker_id`` at ``attempt`` is refused now; None if it would be taken."""
        job = self.find_by_id(job_id)
        if job is None:
            return f"no job with id {job_id}"
        if job.status != RUNNING:
            return f"it is {job.status}, not running"
        if worker_id is not None and job.worker_id != worker_id:
            return f"it is held by worker {job.worker_id!r}, not {worker_id!r}"
        if attempt is not None and job.attempt != attempt:
            return f"attempt {attempt} is over; the job is now on attempt {job.attempt}"
        return None


def _padded(types: list[str] | None) -> list[str] | None:
    """``types`` grown to the next power of two by repeating its last name: the same claim, and a list of
    any length shares one of a few compiled statements (1, 2, 4, ... names) instead of one per length."""
    if not types:
        return types
    size = 1 << (len(types) - 1).bit_length()
    return types + [types[-1]] * (size - len(types))


def _pending_notification():
    # The payload names the schema: queues in other schemas of the database ignore it.
    return pw.fn.pg_notify(JOBS_CHANNEL, pw.fn.current_schema())


def _canonical(payload: dict) -> str:
    """One text per JSON value, types included: keys sorted, no spaces."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _decoded(payload: str) -> dict:
    # Most batches carry empty payloads: skip the JSON decoder for those (a new dict each time).
    return {} if payload == "{}" else json.loads(payload)


def _reject_repeated_keys(rows: list[dict]) -> None:
    first_use = {}
    for index, row in enumerate(rows):
        key = row["idempotency_key"]
        if key is None:
            continue
        if key in first_use:
            raise ValidationError(
                f"specs[{index}].idempotency_key", f"repeats the key of specs[{first_use[key]}]; one job per key"
            )
        first_use[key] = index
