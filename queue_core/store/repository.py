"""``JobRepository``: every state transition of a job, as the guide's rules say.

No other module changes a job. Each transition is one guarded statement, or one transaction that
takes the write lock first, so two workers never both win the same job. The SQL each backend needs is
in store.statements, the read model in store.reads, the rules themselves in queue_core.rules.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta

import peewee as pw

from ..clock import Clock, utc_now
from ..errors import ValidationError
from ..results import encode_result
from ..rules import (
    CANCELLED,
    DEFAULT_MAX_RETRIES,
    DEFAULT_QUEUE,
    FAILED,
    FINAL,
    PENDING,
    RUNNING,
    backoff_delay,
    cutoff_before,
    has_retries_left,
    last_sign_of_life,
)
from ..validation import (
    MAX_INT32,
    validate_age,
    validate_aware,
    validate_error,
    validate_job_id,
    validate_job_ids,
    validate_positive_int,
    validate_queue_names,
    validate_schedule,
    validate_traceback,
    validate_types,
    validate_worker_id,
)
from .bulk import BulkActions
from .compiled import RowReader
from .controls import OperatorControls
from .failures import FailureGroups
from .models import Job, bind_models, is_postgres
from .reads import JobReads
from .registry import WorkerRegistry
from .specs import NewJobs, reject_repeated_keys, same_job_or_conflict, validated_fields, validated_specs
from .statements import HostTime, PostgresStatements, ServerTime, SqliteStatements
from .waiting import WaitingReasons

__all__ = ["ACK_CHUNK", "CREATE_MANY_CHUNK", "PRUNE_BATCH", "JobRepository"]

# Rows per INSERT in create_many: 11 bound values a row stays far below SQLite's 32,766 and
# PostgreSQL's 65,535 parameters per statement, while one statement per 1000 rows costs next to nothing.
CREATE_MANY_CHUNK = 1000
_KEEP = object()  # _requeue_changes: leave the latest error as it is
PRUNE_BATCH = 5000  # rows per prune transaction: short locks, and autovacuum keeps up in between
# Acknowledgements per statement in complete_many: 3 bound values each, far below every parameter limit.
ACK_CHUNK = 500
TICK_RECORD_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # fixed width, UTC: text order is time order
# How far a periodic tick may be ahead of the database's clock: a host's clock a little fast (the tick is then
# only noticed early), not one that is wrong. Recorded, a tick a year ahead made every scheduler skip the
# schedule's ticks for that year (each "enqueued before"), without an error anywhere.
MAX_TICK_AHEAD = timedelta(minutes=5)


def tick_record_key(schedule: str) -> str:
    """``queue_meta``'s key for a schedule's newest enqueued tick (a digest: the key column holds 64 characters)."""
    return "tick:" + hashlib.sha256(schedule.encode()).hexdigest()[:40]


class JobRepository(OperatorControls, BulkActions, FailureGroups, WaitingReasons, WorkerRegistry, JobReads):
    """Every transition of a job, on one database (and, from JobReads, every read of them).

    Operator controls (cancel, pause and resume a queue) come from store.controls, the worker registry
    from store.registry: the same repository, in modules of their own.

    Time: an injected ``clock`` (tests) is used for every time on both backends. Without one, PostgreSQL
    uses the server's ``now()``, so workers on hosts with skewed clocks still agree on claim and heartbeat
    ages; SQLite uses this process's clock, which is the one machine's clock every process shares.
    """

    def __init__(self, db: pw.Database, clock: Clock | None = None, *, rng: random.Random | None = None):
        self.db = db
        self.rng = rng or random.Random()
        models = bind_models(db)
        self.Job = models.Job
        self.JobError = models.JobError
        self.QueueRecord = models.QueueRecord
        self.WorkerRecord = models.WorkerRecord
        self.SchemaMeta = models.SchemaMeta
        # The one place that asks which database this is; every method after reads as the rules.
        if is_postgres(db):
            self.statements = PostgresStatements(db, self.Job, ServerTime(db) if clock is None else HostTime(clock))
        else:
            self.statements = SqliteStatements(db, self.Job, HostTime(clock or utc_now))
        self.time = self.statements.time
        self._window_reader = RowReader(self.Job)

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
        queue: str = DEFAULT_QUEUE,
        timeout: float | None = None,
    ) -> tuple[Job, bool]:
        """Enqueue a job; with an idempotency key already used, return that job and ``created=False``."""
        fields = validated_fields(
            self.time.sql(),
            type,
            payload,
            priority,
            max_retries,
            idempotency_key,
            run_at,
            retry_backoff,
            queue,
            timeout,
        )
        return self._create(fields)

    def _create(self, fields: dict) -> tuple[Job, bool]:
        """``create`` of fields ``validated_fields`` checked."""
        idempotency_key = fields["idempotency_key"]
        if idempotency_key is not None:
            existing = self.find_by_idempotency_key(idempotency_key)
            if existing is not None:
                return same_job_or_conflict(existing, fields), False
        try:
            if idempotency_key is not None and self.db.in_transaction():
                # Inside the caller's transaction, a savepoint: on PostgreSQL the INSERT that loses the race
                # for the key would otherwise abort that whole transaction, and the look-up below with it.
                with self.db.atomic():
                    job = self.statements.insert(fields)
            else:
                job = self.statements.insert(fields)  # one statement: atomic by itself, no BEGIN/COMMIT round trips
        except pw.IntegrityError:
            # Lost the race to a concurrent create: the UNIQUE constraint is the authority.
            existing = self.find_by_idempotency_key(idempotency_key) if idempotency_key is not None else None
            if existing is None:
                raise
            return same_job_or_conflict(existing, fields), False
        return job, True

    def create_tick(
        self, schedule: str, tick: datetime, type: str, payload: dict | None = None, *, idempotency_key: str, **options
    ) -> tuple[Job, bool] | None:
        """``create`` a periodic schedule's job for ``tick``, unless that tick or a later one of ``schedule`` was
        enqueued before: None then. The idempotency key alone forgot a tick once prune deleted its job, and a
        scheduler starting after that enqueued the same tick again; so each schedule's newest tick is also
        recorded (in ``queue_meta``, in the create's transaction), and kept when its job is pruned. The HTTP
        API's ``POST /schedules/{name}/ticks`` is this, for a ``--api`` worker's scheduler."""
        record = tick_record_key(validate_schedule(schedule))
        tick = validate_aware("tick", tick)
        stamp = tick.strftime(TICK_RECORD_FORMAT)  # in UTC, as the format's Z says
        # The job's fields checked first, as create checks them: a bad definition is an error for every tick,
        # not only for one newer than the schedule's last (the shortcut below answered it "nothing to do").
        fields = validated_fields(self.time.sql(), type, payload, idempotency_key=idempotency_key, **options)
        ceiling = self._latest_tick_allowed(tick)
        meta = self.SchemaMeta
        with self.db.atomic():
            known = meta.get_or_none(meta.key == record)
            # A record past the ceiling (written before it was checked) is not trusted, and is replaced.
            trusted = known is not None and stamp <= known.value <= ceiling
            if trusted and self.find_by_idempotency_key(idempotency_key) is None:
                return None  # while its job is there, create says whether this definition is the one enqueued
            made = self._create(fields)
            newer = (pw.EXCLUDED.value > meta.value) | (meta.value > ceiling)
            meta.insert(key=record, value=stamp).on_conflict(
                conflict_target=[meta.key], update={meta.value: pw.EXCLUDED.value}, where=newer
            ).execute()
        return made

    def _latest_tick_allowed(self, tick: datetime) -> str:
        """The newest tick ``create_tick`` takes, as recorded (the database's clock + ``MAX_TICK_AHEAD``);
        a ValidationError naming ``tick`` for a later one."""
        now = self.time.now()
        ceiling = now + MAX_TICK_AHEAD
        if tick > ceiling:
            raise ValidationError(
                "tick",
                f"{tick:%Y-%m-%dT%H:%M:%SZ} is ahead of the database's clock ({now:%Y-%m-%dT%H:%M:%SZ}) by more than "
                f"{MAX_TICK_AHEAD.total_seconds() / 60:g} minutes: the clock of the scheduler's host or of the "
                "database server is wrong; set it right (NTP)",
            )
        return ceiling.strftime(TICK_RECORD_FORMAT)

    def last_tick(self, schedule: str) -> datetime | None:
        """The newest tick ``create_tick`` enqueued for ``schedule`` (its job may since have been pruned)."""
        meta = self.SchemaMeta
        known = meta.get_or_none(meta.key == tick_record_key(schedule))
        return None if known is None else datetime.strptime(known.value, TICK_RECORD_FORMAT).replace(tzinfo=UTC)

    def create_many(self, specs: Iterable[Mapping]) -> list[Job]:
        """Enqueue many jobs in one transaction, all or nothing; the jobs come back in the order given.

        Each spec is a mapping of ``create``'s keyword arguments (``type`` required). Every spec is
        validated before anything is written: a bad one raises ``ValidationError`` naming it, e.g.
        ``specs[3].priority``. A spec whose idempotency key is already used gets that job back, as with
        ``create`` (``IdempotencyConflict`` if its type or payload differ, and then nothing is written);
        a key given twice in one batch is an error.
        """
        batch = validated_specs(specs, self.time.sql())
        if not len(batch):
            return []
        reject_repeated_keys(batch.columns["idempotency_key"])
        try:
            return self._insert_many(batch)
        except pw.IntegrityError:
            # A concurrent create took one of our keys between our look-up and our insert (PostgreSQL;
            # SQLite holds the write lock throughout). Nothing was written; once more sees that job.
            return self._insert_many(batch)

    def _insert_many(self, batch: NewJobs) -> list[Job]:
        Job = self.Job
        given = batch.columns["idempotency_key"]
        if given.count(None) == len(batch) <= self.statements.insert_chunk and not self.db.in_transaction():
            # No key to look up and one INSERT, atomic by itself: no BEGIN and COMMIT round trips around it.
            return self.statements.insert_rows(batch)
        with self.db.atomic():
            keys = [key for key in given if key is not None]
            existing = {}
            for start in range(0, len(keys), CREATE_MANY_CHUNK):
                chunk = keys[start : start + CREATE_MANY_CHUNK]
                existing.update(
                    (job.idempotency_key, job) for job in Job.select().where(Job.idempotency_key.in_(chunk))
                )
            jobs = [None] * len(batch)
            if existing:
                for index, key in enumerate(given):
                    if key in existing:
                        jobs[index] = same_job_or_conflict(existing[key], batch.row(index))
            new = [index for index, job in enumerate(jobs) if job is None]
            if len(new) < len(batch):
                batch = batch.part(new)
            # insert_rows wakes listening workers itself (PostgreSQL: the NOTIFY rides in its statement).
            size = self.statements.insert_chunk
            for start in range(0, len(new), size):
                part = batch.part(slice(start, start + size)) if len(new) > size else batch
                for index, job in zip(new[start : start + size], self.statements.insert_rows(part), strict=True):
                    jobs[index] = job
        return jobs

    # --- claim and run --------------------------------------------------------------------------

    def claim(
        self, worker_id: str, *, types: Iterable[str] | None = None, queues: Iterable[str] | None = None
    ) -> Job | None:
        """Atomically take the next due pending job of a queue not paused (of ``types`` and ``queues`` if
        given): highest priority, then due first, then lowest id."""
        jobs = self.claim_many(worker_id, 1, types=types, queues=queues)
        return jobs[0] if jobs else None

    def claim_many(
        self, worker_id: str, n: int, *, types: Iterable[str] | None = None, queues: Iterable[str] | None = None
    ) -> list[Job]:
        """Claim up to ``n`` jobs in one statement (in claim order), never one another claimer takes too."""
        worker_id = validate_worker_id(worker_id)
        validate_positive_int("n", n)
        types = validate_types(types)
        queues = validate_queue_names(queues)
        if types == [] or queues == []:
            return []
        jobs = self.statements.claim(worker_id, n, types, queues)
        jobs.sort(key=lambda job: (-job.priority, job.run_at, job.id))
        return jobs

    def complete_many(self, completions: Iterable[tuple[int, int, object]], *, worker_id: str) -> list[tuple[int, int]]:
        """Complete the jobs this worker holds, each at the attempt given: ``(job_id, attempt, result)`` per job
        (``result`` as ``complete``'s), in one statement per ``ACK_CHUNK``; the (job_id, attempt) completed.

        An ack whose claim was taken back (reaped, maybe claimed again) matches nothing, as ``complete``
        answers None for it: a worker batching its acknowledgements keeps exact fencing.
        """
        return self._complete_stored(validate_worker_id(worker_id), _stored_acks(completions))

    def _complete_stored(self, worker_id: str, acks: list[tuple[int, int, str | None]]) -> list[tuple[int, int]]:
        done = []
        for start in range(0, len(acks), ACK_CHUNK):
            done += self.statements.complete_many(worker_id, acks[start : start + ACK_CHUNK])
        return done

    def complete_and_claim_many(
        self,
        completions: Iterable[tuple[int, int, object]],
        n: int,
        types: Iterable[str] | None = None,
        *,
        worker_id: str,
        queues: Iterable[str] | None = None,
    ) -> tuple[list[tuple[int, int]], list[Job]]:
        """``complete_many`` and ``claim_many`` (up to ``n``, for a worker's free slots) in one transaction:
        (the (job_id, attempt) completed, the jobs claimed). A busy worker pays one commit for a batch of
        outcomes and the jobs that replace them."""
        worker_id = validate_worker_id(worker_id)
        validate_positive_int("n", n)
        acks = _stored_acks(completions)
        types = validate_types(types)
        queues = validate_queue_names(queues)
        if types == [] or queues == []:
            return self._complete_stored(worker_id, acks), []
        if not acks:
            return [], self.claim_many(worker_id, n, types=types, queues=queues)
        if len(acks) == 1 and n == 1:
            # One worker slot's round: the single-statement complete-and-claim (no BEGIN and COMMIT).
            ((job_id, attempt, result),) = acks
            return self.statements.complete_and_claim(job_id, worker_id, attempt, types, queues, result)
        if len(acks) > ACK_CHUNK:
            with self.db.atomic():
                done = self._complete_stored(worker_id, acks)
                jobs = self.statements.claim(worker_id, n, types, queues, gated=False)
        else:
            done, jobs = self.statements.complete_and_claim_many(worker_id, acks, n, types, queues)
        jobs.sort(key=lambda job: (-job.priority, job.run_at, job.id))
        return done, jobs

    def heartbeat(
        self, job_ids: Iterable[int], *, worker_id: str, attempts: Iterable[int] | None = None
    ) -> list[int] | list[tuple[int, int]]:
        """Refresh the heartbeat of running jobs this worker holds; returns the ids it still holds.

        With ``attempts`` (one per id, in order) a job counts only if held at that attempt, the fencing
        token: a run whose job was reaped and claimed again by this same worker learns it lost it. The
        answer is then the (id, attempt) pairs still held."""
        job_ids = validate_job_ids(job_ids)
        pairs = None if attempts is None else list(zip(job_ids, validated_attempts(job_ids, attempts), strict=True))
        if not job_ids:
            return []
        Job = self.Job
        condition = Job.id.in_(job_ids) & (Job.status == RUNNING) & (Job.worker_id == worker_id)
        if pairs is not None:
            condition &= pw.Tuple(Job.id, Job.attempt).in_(pairs)
        query = Job.update(heartbeat_at=self.time.sql()).where(condition).returning(Job.id, Job.attempt)
        rows = query.execute()
        if pairs is None:
            return sorted(row.id for row in rows)
        return sorted((row.id, row.attempt) for row in rows)

    def held_claims(self, worker_id: str) -> list[tuple[int, int]]:
        """The (id, attempt) of every running job ``worker_id`` holds, by id: a worker compares them with the
        jobs it tracks after a claim whose reply was lost (committed, yet it raised), to release the others.

        Only the claims made since the worker's registration (all of them if it never registered): a worker
        restarted under the same id after a crash must not release its dead predecessor's jobs without
        counting a retry (they ran, maybe killed it); the reaper takes them back and counts it."""
        Job, Worker = self.Job, self.WorkerRecord
        worker_id = validate_worker_id(worker_id)
        started = Worker.select(Worker.started_at).where(Worker.id == worker_id)
        query = Job.select(Job.id, Job.attempt).where(
            (Job.status == RUNNING)
            & (Job.worker_id == worker_id)
            & (Job.claimed_at >= pw.fn.COALESCE(started, Job.claimed_at))
        )
        return sorted(query.tuples())

    def complete(
        self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None, result=None
    ) -> Job | None:
        """Mark a running job completed, storing ``result`` (the handler's return value, JSON; None: none);
        None if it is missing, not running, or held by someone else."""
        return self.statements.complete(validate_job_id(job_id), worker_id, attempt, encode_result(result))

    def complete_and_claim(
        self,
        job_id: int,
        types: Iterable[str] | None = None,
        *,
        worker_id: str,
        attempt: int,
        queues: Iterable[str] | None = None,
        result=None,
    ) -> tuple[Job | None, Job | None]:
        """``complete`` a job this worker holds at ``attempt`` and ``claim`` its next one, in one statement.

        Returns (the completed job or None, as ``complete``; the next job or None, as ``claim``). A busy
        worker thus pays one commit and one statement per job instead of two of each.
        """
        job_id = validate_job_id(job_id)
        worker_id = validate_worker_id(worker_id)
        types = validate_types(types)
        queues = validate_queue_names(queues)
        if types == [] or queues == []:
            return self.complete(job_id, worker_id=worker_id, attempt=attempt, result=result), None
        done, claimed = self.statements.complete_and_claim(
            job_id, worker_id, attempt, types, queues, encode_result(result), whole=True
        )
        return next(iter(done), None), next(iter(claimed), None)

    def fail(
        self,
        job_id: int,
        error: str,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        traceback: str | None = None,
        final: bool = False,
    ) -> Job | None:
        """Record a failed attempt: back to pending after a back-off while retries are left, else failed.
        ``traceback``, the handler's as Python prints it, is kept with the attempt's error (its end, if long).
        ``final`` fails it for good, retries left or not: a worker's handler returned a value that cannot be
        stored as the result, and a retry would run the handler (and whatever it did) again.

        A job an operator asked to cancel is cancelled instead: it is never re-queued."""
        error = validate_error(error)
        traceback = validate_traceback(traceback)
        Job = self.Job
        with self.db.atomic():
            job = (
                Job.select()
                .where(self.statements.held(job_id, worker_id, attempt))
                .for_update(self.statements.for_update)
                .first()
            )
            if job is None:
                return None
            now = self.time.sql()
            self._record_error(job, error, now, traceback)
            delay = None
            if job.cancel_requested:
                changes = {"status": CANCELLED, "error": error, "updated_at": now}
            elif has_retries_left(job) and not final:
                delay = backoff_delay(job.retry_count, job.retry_backoff, self.rng)
                changes = self._requeue_changes(now, retry_count=job.retry_count + 1, error=error)
                changes["run_at"] = now + timedelta(seconds=delay)
            else:
                changes = {"status": FAILED, "error": error, "updated_at": now}
            query = Job.update(**changes).where(self.statements.held(job_id, job.worker_id, job.attempt)).returning(Job)
            failed = next(iter(query.execute()), None)
            if failed is not None and failed.status == PENDING and delay == 0:
                self.statements.announce_pending()
            return failed

    def release(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> Job | None:
        """Give a running job back to the queue without counting a retry (a worker shutting down); one an
        operator asked to cancel ends cancelled instead."""
        Job = self.Job
        changes = self._requeue_changes(self.time.sql(), retry_count=Job.retry_count)
        # One statement, so a cancel request that lands meanwhile is either seen here or finds it pending.
        changes["status"] = pw.Case(None, [(Job.cancel_requested_at.is_null(False), CANCELLED)], PENDING)
        query = Job.update(**changes).where(self.statements.held(job_id, worker_id, attempt)).returning(Job)
        return self._announced(next(iter(query.execute()), None))

    def _announced(self, job: Job | None) -> Job | None:
        """``job``, after waking listening workers if it is claimable again."""
        if job is not None and job.status == PENDING:
            self.statements.announce_pending()
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

    def _record_error(self, job: Job, error: str, now: datetime, traceback: str | None = None) -> None:
        self.JobError.create(
            job_id=job.id,
            attempt=job.attempt,
            worker_id=job.worker_id,
            error=error,
            created_at=now,
            traceback=traceback,
        )

    def file_gone(self) -> str | None:
        """SQLite: what became of the database file if its path no longer holds the file this repository's
        database opened (moved, deleted, replaced); else None, as always on PostgreSQL. One ``os.stat``."""
        check = getattr(self.db, "file_gone", None)
        return None if check is None else check()

    def refresh_statistics(self) -> bool:
        """PostgreSQL: ANALYZE the jobs table if its planner statistics are stale (never analyzed, or changed
        by more than autovacuum's analyze rule since), so claims read the pending jobs in index order; True
        if it analyzed. Workers call it at start and every 15 s (``store/statistics.py``)."""
        return self.statements.refresh_statistics()

    # --- operator actions -------------------------------------------------------------------------

    def reap_stale(self, older_than: timedelta) -> int:
        """Take back claims whose heartbeat (or claim, if none) is older than ``older_than``.

        A job with retries left goes back to pending at once with retry_count + 1; one without becomes
        failed, with an error naming the worker that lost it; one an operator asked to cancel becomes
        cancelled. Returns how many jobs were reaped.
        """
        validate_age("older_than", older_than)

        def why(job: Job, now: datetime) -> str:
            seen = last_sign_of_life(job)
            return (
                f"no heartbeat for {(now - seen).total_seconds():.0f}s (stale after {older_than.total_seconds():.0f}s)"
            )

        return self._reap(lambda now: self._stale(cutoff_before(now, older_than)), why)

    def reap_worker(self, worker_id: str, reason: str) -> int:
        """Take back every claim ``worker_id`` holds, whatever its heartbeat, as ``reap_stale`` takes back a
        stale one (the error says ``reason``): for a worker known to be gone, such as a pool's process that
        its parent saw die, whose jobs need not wait to go stale. Its row in the worker registry shows it
        stopped, as a worker that released its jobs does (it showed running until ``stale_after`` passed).
        Returns how many jobs were reaped."""
        worker_id = validate_worker_id(worker_id)
        Job = self.Job
        with self.db.atomic():
            reaped = self._reap(
                lambda _now: (Job.status == RUNNING) & (Job.worker_id == worker_id), lambda _job, _now: reason
            )
            self.worker_stopped(worker_id)
        return reaped

    def reap_lost_workers(self) -> dict[str, int]:
        """``reap_worker`` for every worker the registry shows lost (not seen for longer than its own
        ``stale_after``) that still holds running jobs: worker id -> jobs taken back. A SIGKILLed worker's
        jobs otherwise wait for a reaper's ``--stale-after`` (300 s by default), longer than the worker's own
        (the console showed the worker lost, and ``x`` found no stale claim)."""
        lost = {worker.id: worker for worker in self.workers() if worker.state == "lost" and worker.running}
        why = "its worker was lost (not seen for {:.0f}s, its --stale-after {:g}s)"
        return {
            worker_id: self.reap_worker(worker_id, why.format(worker.silent_for, worker.stale_after))
            for worker_id, worker in lost.items()
        }

    def _reap(self, condition, why) -> int:
        """Take back the running jobs ``condition(now)`` selects, each with the error "worker W lost its claim:
        ``why(job, now)``", in one transaction."""
        Job = self.Job
        with self.db.atomic():
            now = self.now()
            stale = list(Job.select().where(condition(now)).order_by(Job.id).for_update(self.statements.for_update))
            for job in stale:
                error = f"worker {job.worker_id} lost its claim: {why(job, now)}"
                self._record_error(job, error, now)
                if job.cancel_requested:
                    changes = {"status": CANCELLED, "error": error, "updated_at": now}
                elif has_retries_left(job):
                    changes = self._requeue_changes(now, retry_count=job.retry_count + 1, error=error)
                else:
                    changes = {"status": FAILED, "error": error + "; no retries left", "updated_at": now}
                Job.update(**changes).where(self.statements.held(job.id, job.worker_id, job.attempt)).execute()
            if stale:
                self.statements.announce_pending()
            return len(stale)

    def retry(self, job_id: int) -> Job | None:
        """Operator retry of a failed or cancelled job: back to pending now, retry_count reset to 0, claim
        and cancel request cleared.

        ``attempt`` is kept: the next claim numbers above every earlier one, so no late ack can finish it.

        The latest ``error`` and the attempt history stay, so the operator still sees why it failed.
        None if the job is missing or neither failed nor cancelled.
        """
        job_id = validate_job_id(job_id)
        Job = self.Job
        changes = self._requeue_changes(self.time.sql(), retry_count=0)
        changes["cancel_requested_at"] = None
        query = Job.update(**changes).where((Job.id == job_id) & Job.status.in_([FAILED, CANCELLED])).returning(Job)
        return self._announced(next(iter(query.execute()), None))

    def prune(
        self,
        older_than: timedelta,
        *,
        batch: int = PRUNE_BATCH,
        max_batches: int | None = None,
        on_batch: Callable[[int], bool | None] | None = None,
    ) -> int:
        """Delete completed, failed and cancelled jobs (and their error history) finished more than
        ``older_than`` ago, and the registry's stopped or lost workers last seen before then.

        In transactions of ``batch`` jobs, so that a large backlog never holds locks (SQLite: the write
        lock every worker needs) for long, and PostgreSQL's autovacuum can reclaim space in between.
        ``max_batches`` stops after that many (a worker prunes one per heartbeat, so that thread is never
        busy long); None goes on until nothing is left. ``on_batch`` hears the jobs deleted so far after each
        batch that may not be the last; returning False stops there. Returns how many jobs were deleted.
        """
        validate_age("older_than", older_than)
        validate_positive_int("batch", batch)
        if max_batches is not None:
            validate_positive_int("max_batches", max_batches)
        Job = self.Job
        cutoff = cutoff_before(self.now(), older_than)
        self.prune_workers(cutoff)
        pruned = batches = 0
        while True:
            batches += 1
            with self.db.atomic():
                # The ids first, then a delete by primary key: a DELETE ... WHERE id IN (subquery) can be
                # planned as a scan of the whole table per batch on PostgreSQL.
                found = []
                for status in FINAL:
                    found += [job_id for (job_id,) in self._prunable(status, cutoff, batch - len(found)).tuples()]
                    if len(found) == batch:
                        break
                # The condition again: an operator may have retried one of them meanwhile.
                doomed = Job.delete().where(self._still_prunable(found, cutoff)).returning(Job.id) if found else []
                deleted = [row.id for row in doomed]
                self._forget_deleted(deleted)
            pruned += len(deleted)
            if len(found) < batch or batches == max_batches:
                return pruned
            if on_batch is not None and on_batch(pruned) is False:
                return pruned

    def _still_prunable(self, ids: list[int], cutoff: datetime) -> pw.Expression:
        """These jobs, while still finished before ``cutoff``: found by primary key, as a bulk batch finds its
        jobs (``BulkActions._by_key``). Written plainly (``status IN (...) AND updated_at < ...``), SQLite
        walked the status index over every old finished job to find a batch's ids (from ten ids on), per
        batch, and PostgreSQL planned a sequential scan: a backlog's prune was quadratic in its size."""
        return self._by_key(sorted(ids), FINAL) & (self.Job.updated_at < cutoff)

    def _prunable(self, status: str, cutoff: datetime, limit: int) -> pw.Select:
        """The ids of up to ``limit`` ``status`` jobs last changed before ``cutoff``, oldest first.

        One status at a time, written as a literal (models.StatusField) and read in index order: a worker plans
        its prepared statements generically, and the generic plan of "status IN ($1, $2, $3) AND updated_at <
        $4" was a scan of the whole table whenever nothing was old enough (25 ms at 200,000 jobs, every prune).
        """
        Job = self.Job
        where = (Job.status == status) & (Job.updated_at < cutoff)
        return Job.select(Job.id).where(where).order_by(Job.updated_at).limit(limit)


def validated_attempts(job_ids: list[int], attempts: Iterable[int]) -> list[int]:
    """A heartbeat's attempts: one positive attempt per job id."""
    attempts = list(attempts)
    if len(attempts) != len(job_ids):
        raise ValidationError("attempts", f"give one attempt per job id ({len(job_ids)} ids, {len(attempts)} attempts)")
    return [validate_positive_int("attempts", attempt) for attempt in attempts]


def _stored_acks(completions: Iterable[tuple[int, int, object]]) -> list[tuple[int, int, str | None]]:
    """(job id, attempt, result as stored JSON) per completion, each checked."""
    acks = []
    for index, ack in enumerate(completions):
        try:
            job_id, attempt, result = ack
        except (TypeError, ValueError):
            raise ValidationError(f"completions[{index}]", "must be (job_id, attempt, result)") from None
        validate_positive_int(f"completions[{index}].job_id", job_id)
        # At most a 32-bit attempt column's (PostgreSQL's ack statement casts the attempts to integer[]).
        validate_positive_int(f"completions[{index}].attempt", attempt, MAX_INT32)
        acks.append((job_id, attempt, encode_result(result)))
    return acks
