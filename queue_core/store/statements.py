"""What SQLite and PostgreSQL do differently, decided once: ``JobRepository.__init__`` picks one of these.

As Huey's storage and peewee's playhouse do, each backend is one class with its SQL beside it, so the
repository's methods read as the guide's rules and never ask which database they are on:

- claim: SQLite runs one writer at a time, so ``UPDATE ... WHERE id IN (SELECT ... LIMIT n)`` is atomic;
  PostgreSQL selects the jobs ``FOR UPDATE SKIP LOCKED`` in a CTE, so concurrent claimers skip each
  other's rows instead of waiting on them, and the UPDATE re-checks ``status = 'pending'``.
- complete-and-claim: one UPDATE whose two rows get CASE values (SQLite); two data-modifying CTEs
  (PostgreSQL).
- wake-ups: PostgreSQL NOTIFYs listening workers (store.notify) in the statement that makes a job
  claimable; SQLite has no channel, its workers poll.
- row locks: ``FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already holds the write lock.
- time: ``HostTime`` or ``ServerTime``, below.

The hot statements (claim, complete, complete-and-claim, create) are compiled once per shape
(store.compiled) and replayed with new values.
"""

from __future__ import annotations

import json
import operator
from datetime import UTC, datetime
from itertools import repeat
from time import monotonic

import peewee as pw

from ..clock import Clock, utc_now
from ..errors import ValidationError
from ..rules import COMPLETED, PENDING, RUNNING
from ..validation import validate_job_id
from . import statistics
from .compiled import (
    CompiledStatement,
    CompiledStatements,
    FetchedRows,
    Markers,
    RowReader,
    StatementCache,
    column_names,
    numbered,
)
from .models import Job, bind_models, decoded_json
from .notify import JOBS_CHANNEL
from .schema import CLAIM_INDEX, QUEUE_CLAIM_INDEX, TYPE_INDEX
from .specs import NewJobs

# PostgreSQL's clock as a naive UTC timestamp (the columns' type), evaluated by the server.
POSTGRES_NOW = pw.SQL("(now() AT TIME ZONE 'UTC')")
# How long a claim trusts its last look at the pauses (Statements.reads_past_paused), seconds.
PAUSES_RECHECKED = 1.0
NO_LOOK_YET = (float("-inf"), False)  # (when, any queue paused)
# How many of its types' due jobs an idle claim's look reads, while a queue is paused (Statements._past_paused_look).
LOOK_PAST_PAUSED = 32
# From how many names (after padding) a PostgreSQL claim hashes its types (PostgresStatements.type_in): 9
# is where PostgreSQL starts hashing a list of constants, and a list of 16 already cost 3x the hashed one.
HASHED_TYPES = 9
# SQLite numbers a new row one above the largest id in the table, so the ids of the newest jobs, once deleted
# (a prune of an idle queue deletes them all), went to the next jobs: a client holding a pruned job's id then
# read another job under it, and logs named two jobs with one number. PostgreSQL's sequence never goes back.
# So deletes record the largest id they removed (queue_meta, ID_FLOOR_KEY; SqliteStatements.keep_id_floor),
# and a new job takes the id above it while the table holds nothing higher (ID_FLOOR_SQL: NULL otherwise, and
# SQLite numbers the row itself). One look-up in the INSERT (two while a floor is recorded) and no write, where
# AUTOINCREMENT writes its counter at every insert: 0.78x the creates a second (tests/bench/HISTORY.md, "Job ids").
ID_FLOOR_KEY = "jobs_id_floor"
LARGEST_ID_SQL = 'coalesce((SELECT max("id") FROM "jobs"), 0)'
ID_FLOOR_SQL = (
    f"(SELECT CAST(value AS INTEGER) + 1 FROM queue_meta WHERE key = '{ID_FLOOR_KEY}'"
    f" AND CAST(value AS INTEGER) >= {LARGEST_ID_SQL})"
)
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
    "queue",
    "timeout",
    "created_at",
    "updated_at",
)


class HostTime:
    """Times from a clock in this process: an injected one (tests, demos), or the host's on SQLite, which
    is the one machine's clock every process of that database shares."""

    def __init__(self, clock: Clock):
        self.clock = clock

    def now(self) -> datetime:
        now = self.clock()
        if now.tzinfo is UTC:
            return now  # the host clock's own form: no conversion to pay for at every statement
        if now.tzinfo is None:
            raise ValidationError("clock", "the clock returned a naive datetime; it must return aware UTC")
        return now.astimezone(UTC)

    def sql(self):
        """The current time for use inside one statement."""
        return self.now()

    def local(self) -> datetime:
        """This process's time: the same clock."""
        return self.now()

    def marker(self, m: Markers, field: pw.Field):
        """A compiled statement's current time: a value each run binds (``bind``)."""
        return m.time("now", field)

    def bind(self, values: dict) -> dict:
        values["now"] = self.now()
        return values


class ServerTime:
    """PostgreSQL's ``now()``, evaluated by the server: workers on hosts with skewed clocks still agree on
    claim and heartbeat ages."""

    def __init__(self, db: pw.Database):
        self.db = db

    def now(self) -> datetime:
        # Inside a transaction now() is the transaction's start, the value every statement of it sees.
        return self.db.execute_sql("SELECT now()").fetchone()[0].astimezone(UTC)

    def local(self) -> datetime:
        """This host's time, read without a round trip (the server's clock is for what the queue writes)."""
        return utc_now()

    def sql(self):
        return POSTGRES_NOW

    def marker(self, m: Markers, field: pw.Field):
        return POSTGRES_NOW

    def bind(self, values: dict) -> dict:
        return values


class Statements:
    """The statements both backends share; a subclass per backend says where they differ."""

    insert_chunk = 1000  # rows per insert_rows: 14 bound values a row, far below every parameter limit

    # The lock a transaction takes on the rows it reads before changing them; None: its own lock suffices.
    for_update: str | None = None
    # How a claim names the pending status: a literal, so that the planner proves the claim index's WHERE
    # (status = 'pending') from the SQL text (SQLite's INDEXED BY is refused otherwise; PostgreSQL's generic
    # plans cannot see a bound value).
    pending: object = pw.SQL(f"'{PENDING}'")
    # The aggregate that is true when any row's condition is (SQLite's booleans are 0 and 1).
    any_of = "max"
    # The last look at the pauses: (time.monotonic() then, any queue paused). See reads_past_paused.
    _pauses_seen: tuple[float, bool] = NO_LOOK_YET

    def __init__(self, db: pw.Database, model: type[Job], time: HostTime | ServerTime):
        self.db = db
        self.Job = model
        self.time = time
        self.QueueRecord = bind_models(db).QueueRecord
        self.compiled = CompiledStatements(db, rows_as=model)
        self.rows = RowReader(model)

    def announce_pending(self) -> None:
        """Wake idle workers; delivered when the transaction commits. Nothing to do where workers poll."""

    def refresh_statistics(self) -> bool:
        """Bring the planner's statistics of the jobs table up to date if they are stale; True if it did.
        Nothing to do on SQLite, whose claim names its index (no statistics involved)."""
        return False

    # --- conditions -------------------------------------------------------------------------------

    def held(self, job_id, worker_id, attempt):
        """The condition that ``job_id`` is running and, if given, held by ``worker_id`` at ``attempt``."""
        Job = self.Job
        condition = (Job.id == validate_job_id(job_id)) & Job.status.checked([RUNNING])
        if worker_id is not None:
            condition &= Job.worker_id == worker_id
        if attempt is not None:
            # The fencing token: every claim adds one and nothing resets it (not even an operator retry),
            # so a late ack of an earlier claim matches nothing.
            condition &= Job.attempt == attempt
        return condition

    def due(self, n, types, queues, now, gated: bool = False, past_paused: bool = False):
        """The ids of the next ``n`` due pending jobs of queues not paused (of ``types`` and ``queues`` if
        given): highest priority, then due first, then lowest id. ``gated``: see below. ``past_paused``
        (while a queue is paused): read queue by queue, the paused ones left out (``reads_past_paused``)."""
        Job = self.Job
        source = self.claim_source(queues is not None or past_paused)
        due = self._due_rows(Job, source, types, queues, now, past_paused=past_paused)
        # The claim index orders pending jobs by priority, then run_at: without this bound, a claim read past
        # every job of a higher priority scheduled for later before it reached the due ones (20,000 critical
        # jobs due in an hour: 2.80 ms a claim on SQLite, holding the write lock). See due_level.
        level = self.due_level(now)
        if level is not None:
            due = due.where(Job.priority <= level)
        # The count written into the SQL (peewee binds a LIMIT): see _claim.
        limit = pw.SQL(str(int(n)))
        if gated and types is not None:
            # The claim reads the pending jobs in claim order and skips those of other types: with none of
            # its types due, it read every pending job (66 ms at 200,000 on SQLite, holding the write lock;
            # 60 ms of PostgreSQL's CPU), and an idle worker claims at every wake-up, which every new job
            # of any type brings. So a claim first looks through the types' own index: is any job of these
            # types claimable? Only then does it read on. A claim that carries completions is not gated:
            # its worker was busy with these types a moment ago, the look would cost a one-slot drain a few
            # per cent, and the long read is paid once, when the work runs out.
            if past_paused:
                limit = self._limit_past_paused(types, queues, now, limit)
            else:
                due, limit = self.gated(due, self._probe(types, queues, now), limit)
        return due.order_by(Job.priority.desc(), Job.run_at, Job.id).limit(limit)

    def _due_rows(self, Job, source, types, queues, now, *, probe=False, past_paused=False) -> pw.Select:
        """The ids of ``Job``'s due pending jobs of queues not paused (of ``types`` and ``queues`` if given),
        read from ``source`` (``Job``, or ``Job`` with the index to read)."""
        # Read in the claim's own statement: a claim that commits after pause_queue's commit saw the pause
        # (SQLite has one writer; PostgreSQL's pause waits for claims in flight, see pause_lock).
        paused = self._paused_names()
        due = Job.select(Job.id).from_(source)
        due = due.where((Job.status == self.pending) & (Job.run_at <= now) & Job.queue.not_in(paused))
        if types is not None:
            due = due.where(self.probe_type_in(Job.type, types) if probe else self.type_in(Job.type, types))
        if past_paused:
            due = due.where(Job.queue.in_(self._not_paused(queues)))
        elif queues is not None:
            due = due.where(Job.queue.in_(queues))
        return due

    def reads_past_paused(self) -> bool:
        """Whether a claim reads queue by queue, past the paused ones: while a paused queue holds pending jobs.

        The claim index holds a paused queue's pending jobs in claim order among the others, and a claim
        skipped them one by one: with 200,000 of them every claim took 79-82 ms on SQLite, holding the write
        lock, from the moment an operator paused their queue; a claim naming that queue and another 124 ms,
        and a slot of that queue (``--queues reports=2,...``) claimed at every wake-up. While a queue is paused, a claim
        reads each queue it may take from through the queue claim index, and only those not paused: the
        queues that hold jobs (a loose scan of that index, one lookup a name), or those it names.
        SQLite reads each queue's claim order only until the LIMIT can no longer change, then sorts the
        few rows it took; PostgreSQL reads the first jobs of each (``PostgresStatements._due_queue_by_queue``).
        With no queue paused, every claim is the statement it was.

        Which statement is a choice of speed only: both leave paused queues out, reading the pauses in
        the statement itself. So the look at the pauses is kept for ``PAUSES_RECHECKED`` seconds (another
        process's pause or resume reaches this one's claims within it), and forgotten at once when this
        repository pauses or resumes a queue. A paused queue that holds no pending job has nothing to read
        past, and the queue-by-queue read costs more than the plain one (on PostgreSQL ~40 µs of the
        server's CPU a claim): the look counts only paused queues that hold pending jobs."""
        seen, any_paused = self._pauses_seen
        now = monotonic()
        if now - seen >= PAUSES_RECHECKED:
            Queue, Job = self.QueueRecord, self.Job
            backlog = Job.select(pw.SQL("1")).where((Job.queue == Queue.name) & (Job.status == self.pending))
            held = pw.NodeList((pw.SQL("EXISTS"), backlog))
            any_paused = Queue.select(pw.SQL("1")).where((Queue.paused == True) & held).exists()  # noqa: E712
            self._pauses_seen = (now, any_paused)
        return any_paused

    def _paused_names(self) -> pw.Select:
        """The names of the paused queues, as a subquery a claim reads in its own statement."""
        Queue = self.QueueRecord
        return Queue.select(Queue.name).where(Queue.paused == True)  # noqa: E712 (SQL, not Python)

    def _not_paused(self, queues: list | None) -> pw.Node:
        """The queues a claim of ``queues`` may take from now, as a subquery: those named, or every queue that
        holds jobs (None), the paused ones left out."""
        return self._queues_not_paused() if queues is None else self._named_not_paused(queues)

    def _named_not_paused(self, queues: list) -> pw.Node:
        """A claim's named queues that are not paused, as a subquery of ``VALUES``."""
        paused = self._paused_names()
        rows = pw.CommaNodeList([pw.NodeList((pw.SQL("("), queue, pw.SQL(")")), glue="") for queue in queues])
        return pw.NodeList(
            (
                pw.SQL('(SELECT "v"."column1" FROM (VALUES'),
                rows,
                pw.SQL(') AS "v" WHERE "v"."column1" NOT IN'),
                paused,
                pw.SQL(")"),
            )
        )

    def forget_pauses(self) -> None:
        """A queue was paused or resumed here: the next claim looks at the pauses again."""
        self._pauses_seen = NO_LOOK_YET

    def _queues_not_paused(self) -> pw.Node:
        """The names of the queues that hold jobs and are not paused, as a subquery: a loose scan of a queue
        index (the next name after the last, one lookup each, ``_next_queue_name``), the paused ones left out."""
        after_last = self._next_queue_name('"q"."queue" > "names"."name"')
        return pw.NodeList(
            (
                pw.SQL(
                    f'(WITH RECURSIVE "names"("name") AS (SELECT {self._next_queue_name()} UNION ALL SELECT'
                    f' {after_last} FROM "names" WHERE "names"."name" IS NOT NULL) SELECT "names"."name" FROM'
                    ' "names" WHERE "names"."name" IS NOT NULL AND "names"."name" NOT IN'
                ),
                self._paused_names(),
                pw.SQL(")"),
            )
        )

    def _next_queue_name(self, after: str = "") -> str:
        """The first queue name (after the condition ``after`` on ``"q"."queue"``, if given) in the queue claim
        index, which on SQLite holds every job: one lookup."""
        table, index = f'"{self.Job._meta.table_name}"', f"INDEXED BY {QUEUE_CLAIM_INDEX}"
        where = f" WHERE {after}" if after else ""
        return f'(SELECT "q"."queue" FROM {table} AS "q" {index}{where} ORDER BY "q"."queue" LIMIT 1)'

    def due_level(self, now) -> pw.Node | None:
        """The highest priority a due pending job has (NULL when none is due; None: no bound, see
        PostgresStatements), read on SQLite as a loose scan of the claim index: the first job of the
        highest level; while that job is not yet due (so neither is any other of its level, which the index
        holds soonest first), the first job of the next level down, one index lookup each. When the first
        job is due, as it is unless jobs of a higher priority wait for their time, that is one lookup.

        The levels are those of every pending job, whatever the claim's types and queues and the paused
        queues: a level above the bound holds no due job at all, so the claim loses nothing by starting
        below it. A claim of other types or queues still reads past the jobs it skips at and below the
        bound, as it did before."""
        table, index = f'"{self.Job._meta.table_name}"', f" INDEXED BY {CLAIM_INDEX}"
        pending = f'"head"."status" = {self.pending.sql}'

        def first(columns: str, below: str = "") -> str:
            # The first pending job in claim order (below a level): one lookup in the claim index.
            return (
                f'SELECT {columns} FROM {table} AS "head"{index} WHERE {pending}{below}'
                ' ORDER BY "head"."priority" DESC, "head"."run_at", "head"."id" LIMIT 1'
            )

        at = self.Job.run_at.to_value(now)  # bound as the column stores it
        return pw.NodeList(
            (
                pw.SQL(
                    '(WITH RECURSIVE "levels"("priority", "run_at") AS (SELECT * FROM ('
                    + first('"head"."priority", "head"."run_at"')
                    + ') AS "top" UNION ALL SELECT "next"."priority", "next"."run_at" FROM "levels"'
                    + f' JOIN {table} AS "next" ON "next"."id" = ('
                    + first('"head"."id"', ' AND "head"."priority" < "levels"."priority"')
                    + ') WHERE "levels"."run_at" >'
                ),
                at,
                pw.SQL(') SELECT "levels"."priority" FROM "levels" WHERE "levels"."run_at" <='),
                at,
                pw.SQL(")"),
            )
        )

    def _probe(self, types, queues, now) -> pw.Select:
        """A job the claim would find, looked up in the type index (schema.TYPE_INDEX): one range per type of
        that type's due pending jobs, whatever the other types and the jobs scheduled for later."""
        Probe = self.Job.alias("probe")
        probe = self._due_rows(Probe, self.probe_source(Probe), types, queues, now, probe=True)
        return probe.order_by(Probe.type, Probe.status).limit(pw.SQL("1"))

    def _limit_past_paused(self, types, queues, now, limit: pw.Node) -> pw.Node:
        """The LIMIT of an idle claim's read while a queue is paused (SQLite): ``limit`` if ``_past_paused_look``
        finds that the claim may find a job, else 0. When no queue the claim may take from is unpaused (an idle
        slot of a paused queue), the look reads nothing: SQLite tests a LIMIT before it reads a row."""
        look = self._past_paused_look(types, queues, now)
        return pw.NodeList((pw.SQL("CASE WHEN"), look, pw.SQL("THEN"), limit, pw.SQL("ELSE 0 END")))

    def _past_paused_look(self, types, queues, now) -> pw.Node:
        """Whether an idle claim of ``types`` may find a job while a queue is paused, as a condition.

        The type index holds the paused queues' jobs too, and an exact look (a due job of these types in a
        queue not paused) read them one by one: 56-89 ms a wake-up of an idle worker behind 200,000 paused
        jobs of its types on SQLite, holding the write lock. This look reads at most ``LOOK_PAST_PAUSED`` + 1 of
        the types' due jobs in the type index; the claim reads on if one of them is in a queue it may take
        from, or if there are more, which it cannot tell apart (then the claim reads the queues not paused,
        queue by queue, as a claim that is not gated does)."""
        Probe = self.Job.alias("probe")
        due = Probe.status == self.pending
        due &= (Probe.run_at <= now) & self.probe_type_in(Probe.type, types)
        first = Probe.select(Probe.queue).from_(self.probe_source(Probe)).where(due)
        first = first.order_by(Probe.type, Probe.status).limit(pw.SQL(str(LOOK_PAST_PAUSED + 1)))
        takeable = self._not_paused(queues)
        return pw.NodeList(
            (
                pw.SQL("(EXISTS"),
                takeable,
                pw.SQL(f'AND (SELECT count(*) > {LOOK_PAST_PAUSED} OR {self.any_of}("first"."queue" IN'),
                takeable,
                pw.SQL(") FROM"),
                first,
                pw.SQL('AS "first"))'),
            )
        )

    def claim_source(self, by_queue: bool) -> pw.Node:
        """What a claim reads: on SQLite the jobs through the claim index that holds them in claim order
        (a queue's own, for a claim of queues), named, so that no planner's guess can have it read another
        index and sort what it found (with ``ANALYZE``'s statistics, or an index that would seem narrower)."""
        return pw.NodeList((self.Job, pw.SQL(f"INDEXED BY {QUEUE_CLAIM_INDEX if by_queue else CLAIM_INDEX}")))

    def unindexed(self, column: pw.Field) -> pw.Node:
        """``column`` as a term no index serves (SQLite's unary +): a read's range on it (the pending window's
        ``run_at <= now``) leaves SQLite's choice of index what it was without it. A range on ``run_at`` made
        ``jobs_type_due`` look the narrower for a type, and SQLite read and sorted every due job of the type
        instead of the first ones in claim order."""
        return pw.NodeList((pw.SQL("+"), column), glue="")

    def probe_source(self, Probe) -> pw.Node:
        # Named, as the claim's: SQLite's planner would as soon read the claim's index in its order.
        return pw.NodeList((Probe, pw.SQL(f"INDEXED BY {TYPE_INDEX}")))

    def probe_type_in(self, column: pw.Field, types: list) -> pw.Node:
        return column.in_(types)

    def type_in(self, column: pw.Node, types: list) -> pw.Node:
        """``column`` is one of ``types``, tested on each job a claim reads (SQLite looks each one up in a
        list it sorts once per statement, so any length costs about the same)."""
        return column.in_(types)

    def gated(self, due: pw.Select, probe: pw.Select, limit: pw.Node) -> tuple[pw.Select, pw.Node]:
        """``due`` and its LIMIT, made to read nothing unless ``probe`` finds a row. SQLite evaluates a LIMIT
        before it reads a row and reads none at 0 (a condition in WHERE it would test at every row)."""
        exists = pw.NodeList((pw.SQL("EXISTS"), probe))
        return due, pw.NodeList((pw.SQL("CASE WHEN"), exists, pw.SQL("THEN"), limit, pw.SQL("ELSE 0 END")))

    def claim_changes(self, worker_id, now) -> dict:
        Job = self.Job
        return {
            "status": RUNNING,
            "worker_id": worker_id,
            "attempt": Job.attempt + 1,  # the fencing token: every claim is a new attempt
            "claimed_at": now,
            "heartbeat_at": None,
            "updated_at": now,
        }

    def claim_query(self, worker_id, due, now):
        """The statement that claims the ``due`` jobs for ``worker_id``, RETURNING them."""
        raise NotImplementedError

    def pause_lock(self) -> None:
        """Inside pause_queue's transaction: wait until no claim is in flight. Nothing to do on SQLite,
        whose claims are writes and so already serialised with the pause."""

    def complete_and_claim_query(self, held, worker_id, due, now, result):
        """The statement that completes the ``held`` job (storing ``result``) and claims the ``due`` one,
        RETURNING both."""
        raise NotImplementedError

    # --- the hot paths: compiled once per shape ---------------------------------------------------

    def claim(
        self, worker_id: str, n: int, types: list[str] | None, queues: list[str] | None, *, gated: bool = True
    ) -> list[Job]:
        """Claim up to ``n`` jobs; ``gated``: look first whether any is there (``due``)."""
        type_count, queue_count, filters = claim_filters(types, queues)
        past_paused = self.reads_past_paused()
        statement = self.compiled.statement(self._claim, n, type_count, queue_count, gated, past_paused)
        return statement.execute(self.time.bind({"worker_id": worker_id, **filters}))

    def _claim(
        self, m: Markers, n: int, type_count: int | None, queue_count: int | None, gated: bool, past_paused: bool
    ):
        Job = self.Job
        now = self.time.marker(m, Job.run_at)
        # n written into the statement (one statement per slot count, a handful): a bound LIMIT is 10 % of
        # the table to PostgreSQL's generic plan, which then joined the claimed ids to a scan of every job.
        due = self.due(n, *self._filters(m, type_count, queue_count), now, gated, past_paused)
        return self.claim_query(m.text("worker_id", Job.worker_id), due, now)

    def _filters(self, m: Markers, type_count: int | None, queue_count: int | None):
        """A claim's type and queue lists as markers (None: no filter)."""
        return m.texts("type", type_count, self.Job.type), m.texts("queue", queue_count, self.Job.queue)

    def complete(self, job_id: int, worker_id: str | None, attempt: int | None, result: str | None) -> Job | None:
        values = {"job_id": job_id, "result": result}
        if worker_id is not None:
            values["worker_id"] = worker_id
        if attempt is not None:
            values["attempt"] = attempt
        statement = self.compiled.statement(self._complete, worker_id is not None, attempt is not None)
        return next(iter(statement.execute(self.time.bind(values))), None)

    def _complete(self, m: Markers, by_worker: bool, at_attempt: bool):
        Job = self.Job
        holder = m.text("worker_id", Job.worker_id) if by_worker else None
        held_at = m.integer("attempt", Job.attempt) if at_attempt else None
        changes = {"status": COMPLETED, "result": m.text("result", Job.result)}
        changes["updated_at"] = self.time.marker(m, Job.updated_at)
        return Job.update(**changes).where(self.held(m.integer("job_id", Job.id), holder, held_at)).returning(Job)

    def complete_and_claim(
        self,
        job_id: int,
        worker_id: str,
        attempt: int,
        types: list[str] | None,
        queues: list[str] | None,
        result: str | None = None,
        *,
        whole: bool = False,
    ) -> tuple[list, list[Job]]:
        """(the completed job's (id, attempt), or with ``whole`` the job; the jobs claimed). A worker's slot
        needs the (id, attempt) only: building the completed row as a job was per-job work nothing read."""
        type_count, queue_count, filters = claim_filters(types, queues)
        values = {"job_id": job_id, "worker_id": worker_id, "attempt": attempt, "result": result, **filters}
        past_paused = self.reads_past_paused()
        statement = self.compiled.statement(self._complete_and_claim, type_count, queue_count, past_paused)
        cursor = self.db.execute_sql(statement.sql, statement.params(self.time.bind(values)))
        if not whole:
            return statement.reader.partition(cursor, "status", COMPLETED, ("id", "attempt"))
        jobs = statement.reader.models(cursor)
        return [job for job in jobs if job.status == COMPLETED], [job for job in jobs if job.status == RUNNING]

    def _complete_and_claim(self, m: Markers, type_count: int | None, queue_count: int | None, past_paused: bool):
        Job = self.Job
        now = self.time.marker(m, Job.updated_at)
        holder = m.text("worker_id", Job.worker_id)
        held = self.held(m.integer("job_id", Job.id), holder, m.integer("attempt", Job.attempt))
        due = self.due(1, *self._filters(m, type_count, queue_count), now, past_paused=past_paused)
        return self.complete_and_claim_query(held, holder, due, now, m.text("result", Job.result))

    def insert(self, fields: dict) -> Job:
        """INSERT ... RETURNING the stored row; a field given as SQL (the server's clock) is computed there."""
        clocked = frozenset(name for name, value in fields.items() if isinstance(value, pw.Node))
        values = {name: value for name, value in fields.items() if name not in clocked}
        return next(iter(self.compiled.statement(self._insert, clocked).execute(values)))

    def _insert(self, m: Markers, clocked: frozenset):
        Job = self.Job
        fields = Job._meta.fields
        row = {name: self.time.sql() if name in clocked else m.of(fields[name]) for name in INSERT_COLUMNS}
        return Job.insert(**row).returning(Job)

    # --- many rows at once ------------------------------------------------------------------------

    def complete_many(self, worker_id: str, acks: list[tuple[int, int, str | None]]) -> list[tuple[int, int]]:
        """Complete the jobs ``worker_id`` holds at the attempts ``acks`` name ((id, attempt, stored result)),
        in one statement; the (id, attempt) it completed (an ack whose claim was taken back matches nothing).

        Raw SQL, not a compiled peewee query: the number of rows varies per batch, and each ack still
        names its attempt, so the fencing is the single ``complete``'s.
        """
        return self.db.execute_sql(*self._complete_many_sql(worker_id, acks)).fetchall()

    def complete_and_claim_many(
        self, worker_id: str, acks: list, n: int, types: list[str] | None, queues: list[str] | None
    ) -> tuple[list[tuple[int, int]], list[Job]]:
        """``complete_many`` and ``claim`` in one transaction: (the (id, attempt) completed, the jobs claimed)."""
        with self.db.atomic():
            return self.complete_many(worker_id, acks), self.claim(worker_id, n, types, queues, gated=False)

    def _complete_many_sql(self, worker_id: str, acks: list) -> tuple[str, list]:
        table = f'"{self.Job._meta.table_name}"'
        source, params = self._acks_source(acks)
        now_sql, now_params = self._now_param()
        sql = (
            f"UPDATE {table} SET status = {self.db.param}, result = v.result, updated_at = {now_sql} FROM {source}"
            f" WHERE {table}.id = v.id AND {table}.attempt = v.attempt AND ({table}.status || '') = '{RUNNING}'"
            f" AND {table}.worker_id = {self.db.param} RETURNING {table}.id, {table}.attempt"
        )
        # The held status a literal, as models.StatusField writes it (a bound one re-prepared on SQLite), and
        # an expression no index covers, as StatusField.checked writes it for ``held``: each ack's row is
        # found by its id (739 -> 459 us a completion with 2,000 jobs running on PostgreSQL; 4 acks and a
        # claim 992 -> 659 us).
        return sql, [COMPLETED, *now_params, *params, worker_id]

    def _acks_source(self, acks: list[tuple[int, int, str | None]]) -> tuple[str, list]:
        """The acks as a table ``v(id, attempt, result)`` in SQL, and its parameters."""
        raise NotImplementedError

    def _now_param(self) -> tuple[str, list]:
        """The current time for raw SQL: the server's clock as SQL, or a bound value from ours."""
        if isinstance(self.time, ServerTime):
            return POSTGRES_NOW.sql, []
        return self.db.param, [self.Job.updated_at.db_value(self.time.now())]

    def by_primary_key(self) -> pw.Node:
        """The jobs table, for a read that must go by its id range whatever else its WHERE says (search):
        with no statistics (SQLite keeps none unless ANALYZE ran), SQLite took an equality on an indexed
        column (``type = ?``) as the more selective and read every job of that type to find 20,000 ids:
        8 s instead of 14 ms at a million jobs."""
        return pw.NodeList((self.Job, pw.SQL("NOT INDEXED")))

    def id_in(self, column: pw.Field, ids) -> pw.Node:
        """``column IN ids`` with the ids bound as one parameter: a thousand ids compile as fast as one, where
        peewee builds a node and a placeholder per id (5 ms of SQL for 1,000)."""
        return column.in_(pw.SQL("(SELECT value FROM json_each(?))", [json.dumps([int(i) for i in ids])]))

    def insert_rows(self, batch: NewJobs) -> list[Job]:
        """One multi-row INSERT of a validated batch; the new jobs, in the batch's order. (Where workers
        listen, it wakes them too: SQLite's poll, or watch the database, and need nothing.)

        Written as SQL rather than ``insert_many``: peewee spends ~50 µs a row building the statement,
        which held batch enqueue to 17k jobs/s (tests/bench); this runs at well over 50k.
        """
        rows = batch.rows()
        Job = self.Job
        fields = [Job._meta.fields[name] for name in INSERT_COLUMNS]
        columns = ", ".join(f'"{field.column_name}"' for field in fields)
        ids = self.new_ids(len(rows))
        if ids is not None:
            columns = f'"id", {columns}'
        table = f'INSERT INTO "{Job._meta.table_name}" ({columns}) VALUES '
        if any(isinstance(value, pw.Node) for value in rows[0].values()):
            # The database's clock (one "now" for the whole batch): written into the statement, and the
            # stored rows read back for the times it computed.
            values_sql, params = self._clocked_values(rows, fields, ids)
            cursor = self.db.execute_sql(f"{table}{values_sql} RETURNING *", params)
            return sorted(self.rows.models(cursor), key=lambda job: job.id)
        slots = ", ".join([self.db.param] * len(fields))
        values = [f"({slots})"] * len(rows) if ids is None else [f"({id_sql}, {slots})" for id_sql in ids]
        params = _stored_params(rows, fields)
        cursor = self.db.execute_sql(f"{table}{', '.join(values)} RETURNING id", params)
        # One statement numbers its rows in the order given, while we hold the write lock (SQLite) or
        # draws them from the sequence row by row (PostgreSQL): ascending ids follow our order.
        build = self.rows.build
        return [
            # The stored payload, decoded, as a read returns it.
            build({**row, "id": job_id, "payload": decoded_json(row["payload"])})
            for row, (job_id,) in zip(rows, sorted(cursor.fetchall()), strict=True)
        ]

    def new_ids(self, count: int) -> list[str] | None:
        """The SQL of each new row's id in a multi-row INSERT, or None to leave the ids to the database."""
        return None

    def keep_id_floor(self, deleted: list[int]) -> None:
        """Deleted jobs' ids are never given again: PostgreSQL's sequence sees to it (SQLite's, below, here)."""

    def _clocked_values(self, rows: list[dict], fields: list, ids: list[str] | None) -> tuple[str, list]:
        values_sql, params = [], []
        for index, row in enumerate(rows):
            slots = [] if ids is None else [ids[index]]
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


class InsertBinder:
    """A create's INSERT with ``validated_fields``' values bound as they are and only the times converted by
    their field, where the compiled statement's ``params`` checks and converts each of the 14 values."""

    def __init__(self, statement: CompiledStatement, model: type[pw.Model]):
        self.sql, self.names = statement.sql, statement.names
        columns = [name for name, _ in statement.slots]  # the marker bound at each parameter, in order
        if None in columns or len(columns) == 1:
            raise RuntimeError(f"an INSERT of every column, one marker each, was expected: {statement.sql!r}")
        self.values_of = operator.itemgetter(*columns)
        fields = model._meta.fields
        self.times = [
            (i, fields[name].db_value) for i, name in enumerate(columns) if isinstance(fields[name], pw.DateTimeField)
        ]

    def params(self, fields: dict) -> list:
        if fields.keys() != self.names:
            raise ValueError(f"values {sorted(fields)} do not match the columns {sorted(self.names)} of {self.sql!r}")
        params = list(self.values_of(fields))
        for i, convert in self.times:
            params[i] = convert(params[i])
        return params


class SqliteStatements(Statements):
    _binder: InsertBinder | None = None  # built at the first create

    def insert(self, fields: dict) -> Job:
        """INSERT, the job built from ``fields`` and the new row's id: on SQLite every value is known here (its
        clock is this host's), and reading the row back and converting it was half of a create's Python.

        The id is the connection's last inserted rowid (this thread's own connection, read right after a
        plain INSERT that either inserted one row or raised), not ``RETURNING id``, whose row was built as a
        ``Job`` for its id alone and which SQLite runs in two steps through a table of results: 1.15x the
        creates a second, 0.86x the CPU a create (in-process A/B, tests/bench/HISTORY.md, "What changed").

        The values are bound without the compiled statement's field-by-field conversion: ``fields`` comes
        from ``specs.validated_fields``, whose values are all the driver's own types but the times, so only
        those go through their field (``InsertBinder``; a test holds it to the compiled statement's params).
        """
        binder = self._binder
        if binder is None:
            binder = self._binder = InsertBinder(self.compiled.statement(self._insert_row), self.Job)
        cursor = self.db.execute_sql(binder.sql, binder.params(fields))
        return self.rows.build({**fields, "id": cursor.lastrowid, "payload": decoded_json(fields["payload"])})

    def _insert_row(self, m: Markers):
        Job = self.Job
        fields = Job._meta.fields
        return Job.insert(id=pw.SQL(ID_FLOOR_SQL), **{name: m.of(fields[name]) for name in INSERT_COLUMNS})

    def new_ids(self, count: int) -> list[str]:
        # The first row above the floor (if the table holds nothing higher), each next one above the row before:
        # SQLite evaluates a subquery like the floor's once a statement, so it is the first row's only.
        return [ID_FLOOR_SQL] + ["NULL"] * (count - 1)

    def keep_id_floor(self, deleted: list[int]) -> None:
        """After a delete, in its transaction: if it took the newest ids, record the largest (unless a larger one
        is), so no new job takes it; a recorded one the table has since passed is dropped, sparing every insert
        its look (the floor is then only there from a delete of the newest jobs until the next delete)."""
        self.db.execute_sql(
            f"DELETE FROM queue_meta WHERE key = ? AND CAST(value AS INTEGER) < {LARGEST_ID_SQL}", (ID_FLOOR_KEY,)
        )
        top = max(deleted)
        self.db.execute_sql(
            f"INSERT INTO queue_meta (key, value) SELECT ?, ? WHERE ? > {LARGEST_ID_SQL}"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            " WHERE CAST(excluded.value AS INTEGER) > CAST(queue_meta.value AS INTEGER)",
            (ID_FLOOR_KEY, str(top), top),
        )

    def _acks_source(self, acks):
        rows = ", ".join(["(?, ?, ?)"] * len(acks))
        # SQLite names a VALUES table's columns column1, column2, ...: renamed in a subquery.
        source = f"(SELECT column1 AS id, column2 AS attempt, column3 AS result FROM (VALUES {rows})) AS v"
        return source, [value for ack in acks for value in ack]

    def claim_query(self, worker_id, due, now):
        Job = self.Job
        return Job.update(**self.claim_changes(worker_id, now)).where(Job.id.in_(due)).returning(Job)

    def complete_and_claim_query(self, held, worker_id, due, now, result):
        Job = self.Job
        # Each row's old status says which it is (a reaped job of ours is pending again, so its id would
        # not): the running one held is completed, the pending one is claimed.
        ours = Job.status == RUNNING
        changes = {
            "status": pw.Case(None, [(ours, COMPLETED)], RUNNING),
            "worker_id": worker_id,
            "attempt": pw.Case(None, [(ours, Job.attempt)], Job.attempt + 1),
            "claimed_at": pw.Case(None, [(ours, Job.claimed_at)], Job.claimed_at.to_value(now)),
            "heartbeat_at": pw.Case(None, [(ours, Job.heartbeat_at)], None),
            "result": pw.Case(None, [(ours, Job.result.to_value(result))], Job.result),
            "updated_at": now,
        }
        return Job.update(**changes).where(held | Job.id.in_(due)).returning(Job)


CLAIMABLE = "claimable"  # the CTE of the jobs a PostgreSQL claim locked


class _AsWritten(pw.Node):
    """SQL placed in a FROM clause as it is: the subqueries inside it get no alias of peewee's (which gives
    every subquery in a FROM clause one)."""

    def __init__(self, node: pw.Node):
        self.node = node

    def __sql__(self, ctx):
        with ctx.scope_normal():
            return ctx.sql(self.node)


class PostgresStatements(Statements):
    for_update = "FOR UPDATE"
    any_of = "bool_or"

    def announce_pending(self) -> None:
        self.db.execute(pw.Select(columns=[_pending_notification()]))

    def claim_source(self, by_queue):
        # PostgreSQL has no index hints: its claim reads the partial pending indexes by their predicate
        # and the statistics the workers keep fresh (statistics.py).
        return self.Job

    def unindexed(self, column):
        return column  # PostgreSQL weighs a range by its statistics

    def probe_source(self, Probe):
        return Probe

    def due(self, n, types, queues, now, gated: bool = False, past_paused: bool = False):
        """As on SQLite, and locked (``FOR UPDATE SKIP LOCKED``: concurrent claimers skip each other's rows);
        while a queue is paused (``past_paused``), read and locked queue by queue (``_due_queue_by_queue``)."""
        if not past_paused:
            return super().due(n, types, queues, now, gated).for_update("FOR UPDATE SKIP LOCKED")
        return self._due_queue_by_queue(n, types, queues, now, gated)

    def _due_queue_by_queue(self, n, types, queues, now, gated):
        """The next ``n`` due pending jobs of the queues not paused, read queue by queue and locked: the first
        ``n`` of each queue in its claim order (``FOR UPDATE SKIP LOCKED``), then the first ``n`` of those.

        The pending index holds a paused queue's jobs in claim order among the others, and the claim skipped
        them one by one: 35 ms of the server's CPU a claim behind 200,000 paused jobs, 71 ms for an idle
        worker's claim of their types (its look read them too), from the moment an operator paused their
        queue, for every claim of every worker. Each queue's read here goes through the pending queue index
        and stops at ``n`` jobs. A claim may lock up to ``n`` jobs of each queue it reads and take ``n`` in
        all: the others are unlocked when its statement ends, and a concurrent claim skips them meanwhile, as
        it skips the jobs being claimed. An idle claim of types looks first (``_past_paused_look``)."""
        Job = self.Job
        Each = Job.alias("each")
        limit = pw.SQL(str(int(n)))
        name = pw.SQL('"q"."name"')
        # The queue as a range of one name, not an equality, and first in the read's order: with an equality
        # PostgreSQL drops the queue from the order (one value), and with statistics that saw only the paused
        # queue it took the pending index in claim order, filtered by queue: 38-93 ms a claim behind 200,000.
        # Ordered by queue first, only the queue index gives the order without sorting every pending job.
        in_queue = (Each.queue >= name) & (Each.queue <= name)
        first = Each.select(Each.id, Each.priority, Each.run_at).where(
            (Each.status == self.pending) & (Each.run_at <= now) & in_queue
        )
        if types is not None:
            # The types as a term no index serves: a table never analyzed made the type index look the
            # narrower, and a claim of one type read every due job of it (200,000 of the paused queue) and
            # sorted them, 30 ms. A queue's read skips the other types' jobs in claim order instead, as
            # SQLite's does; an idle claim's look keeps that from reading a queue with none of its types.
            typed = pw.NodeList((pw.SQL("("), Each.type, pw.SQL("|| '')")))
            first = first.where(self.type_in(typed, types))
        first = first.order_by(Each.queue, Each.priority.desc(), Each.run_at, Each.id).limit(limit)
        first = first.for_update("FOR UPDATE SKIP LOCKED")
        source = pw.NodeList(
            (self._not_paused(queues), pw.SQL('AS "q"("name") CROSS JOIN LATERAL'), first, pw.SQL('AS "c"'))
        )
        due = pw.Select(from_list=[_AsWritten(source)], columns=[pw.SQL('"c"."id"')])
        if gated and types is not None:
            due = due.where(self._past_paused_look(types, queues, now))
        return due.order_by(pw.SQL('"c"."priority" DESC'), pw.SQL('"c"."run_at"'), pw.SQL('"c"."id"')).limit(limit)

    def _next_queue_name(self, after=""):
        # In the pending queue index: the queues that hold pending jobs.
        table, pending = f'"{self.Job._meta.table_name}"', f'"q"."status" = {self.pending.sql}'
        return f'(SELECT min("q"."queue") FROM {table} AS "q" WHERE {pending}{f" AND {after}" if after else ""})'

    def due_level(self, now):
        # No bound: PostgreSQL tests run_at <= now on each entry inside the index, without reading the row,
        # so passing jobs scheduled for later costs little (20,000: 0.82 ms a claim against 0.60), while the
        # bound's lookups cost a four-process drain 0.86x its rate in an A/B (README, "Jobs scheduled for
        # later at a higher priority").
        return None

    def probe_type_in(self, column, types):
        # An array, even of one type: ``type = $1`` with ``status = 'pending'`` would make the probe's ORDER BY
        # say nothing, and the generic plan then read the table in its own order (a sequential scan that
        # found no job of the type after 200,000 others, 57 ms); ordered by (type, status), only the index
        # reads the rows in that order without sorting them.
        return column == pw.fn.ANY(pw.NodeList((pw.SQL("ARRAY["), pw.CommaNodeList(types), pw.SQL("]")), glue=""))

    def type_in(self, column, types):
        if len(types) < HASHED_TYPES:
            return column.in_(types)
        # A list of parameters is searched name by name on each job the claim reads, the array built
        # again each time: with 1,000 types (a worker's every handler), 24 us a job, 0.5 s a claim that
        # read past 20,000 jobs of other types, against 3.6 ms with 4 types. PostgreSQL hashes a list of
        # constants itself, not one of parameters; a subquery's answers it hashes once per statement
        # (a "hashed SubPlan", 3.6 ms at any length). Written as NOT (... NOT IN ...): a plain IN
        # (subquery) would be made a semi-join, which a LIMIT made a nested loop over every name for every
        # job (1.9 s); under a NOT the planner leaves it a subquery, then folds the two NOTs away.
        # Types and the column are never NULL, so NOT IN means what IN would.
        names = pw.NodeList((pw.SQL("SELECT unnest(ARRAY["), pw.CommaNodeList(types), pw.SQL("])")), glue="")
        return pw.NodeList((pw.SQL("NOT ("), column, pw.SQL("NOT IN ("), names, pw.SQL("))")))

    def gated(self, due, probe, limit):
        # A condition on nothing but an uncorrelated subquery is a one-time filter above the scan, which
        # then never starts when it is false; the LIMIT stays a literal, which the generic plan needs (_claim).
        return due.where(pw.NodeList((probe, pw.SQL("IS NOT NULL")))), limit

    def refresh_statistics(self) -> bool:
        return statistics.refresh_statistics(self.db, self.Job._meta.table_name)

    def complete_and_claim_many(
        self, worker_id: str, acks: list, n: int, types: list[str] | None, queues: list[str] | None
    ) -> tuple[list[tuple[int, int]], list[Job]]:
        """One statement, one round trip (a transaction took four: BEGIN, two UPDATEs, COMMIT): the
        completions and the claim as two data-modifying CTEs, which touch disjoint rows (running ones
        held by this worker; pending ones), their rows returned together, the completed ones as
        (done_id, done_attempt) beside NULL job columns."""
        done_sql, params = self._complete_many_sql(worker_id, acks)
        type_count, queue_count, filters = claim_filters(types, queues)
        values = {"worker_id": worker_id, **filters}
        past_paused = self.reads_past_paused()
        claim = self.compiled.statement(self._claim, n, type_count, queue_count, False, past_paused)
        # Named as the claimed rows' columns (a UNION takes its names from its first part).
        nulls = ", ".join(f'NULL AS "{field.column_name}"' for field in self.Job._meta.sorted_fields)
        # The completions first (an Append runs its parts in order), then the claim. A claim can keep a
        # lock on a row it does not return: a job pending in its snapshot, claimed meanwhile by another
        # slot, is locked before it reads as running. Claiming first, two slots of one worker each locked
        # a job the other was completing, then waited on each other: a deadlock PostgreSQL broke after
        # deadlock_timeout (1 s). Completing first, a statement waits only before its claim, and a claim
        # (SKIP LOCKED) never waits, so no wait closes a cycle.
        sql = (
            f'WITH "done" AS ({done_sql}), "claimed" AS ({claim.sql})'
            f' SELECT {nulls}, "done"."id" AS "done_id", "done"."attempt" AS "done_attempt" FROM "done"'
            ' UNION ALL SELECT "claimed".*, NULL::bigint, NULL::integer FROM "claimed"'
        )
        cursor = self.db.execute_sql(sql, [*params, *claim.params(self.time.bind(values))])
        rows = cursor.fetchall()
        done = [(row[-2], row[-1]) for row in rows if row[-2] is not None]
        claimed = FetchedRows(column_names(cursor)[:-2], [row[:-2] for row in rows if row[-2] is None])
        return done, self.rows.models(claimed)

    def by_primary_key(self) -> pw.Node:
        # PostgreSQL has no index hints; autovacuum's ANALYZE gives its planner the statistics that show an
        # id range of 20,000 narrower than one type's jobs.
        return self.Job

    def id_in(self, column: pw.Field, ids) -> pw.Node:
        return column == pw.fn.ANY(pw.SQL("%s::bigint[]", [[int(i) for i in ids]]))

    def _acks_source(self, acks):
        ids, attempts, results = (list(column) for column in zip(*acks, strict=True))
        return "unnest(%s::bigint[], %s::integer[], %s::text[]) AS v(id, attempt, result)", [ids, attempts, results]

    def claim_query(self, worker_id, due, now):
        chosen, claim = self._claimed(worker_id, due, now)
        return claim.with_cte(chosen)

    def pause_lock(self) -> None:
        # A claim whose statement began before the pause committed reads the queue as not paused and may
        # commit after it. This mode conflicts with the ROW EXCLUSIVE lock every claim (an UPDATE) holds,
        # so the pause first waits for the claims in flight; a claim that starts meanwhile waits for the
        # pause's commit and then, in READ COMMITTED, reads the queue as paused. Claims are short, and
        # pausing is a rare operator action.
        self.db.execute_sql(f'LOCK TABLE "{self.Job._meta.table_name}" IN SHARE ROW EXCLUSIVE MODE')

    def complete_and_claim_query(self, held, worker_id, due, now, result):
        Job = self.Job
        done = Job.update(status=COMPLETED, result=result, updated_at=now).where(held).returning(Job).cte("done")
        chosen, claim = self._claimed(worker_id, due, now)
        claimed = claim.cte("claimed")
        rows = pw.Select([done], [pw.SQL("*")]).union_all(pw.Select([claimed], [pw.SQL("*")]))
        return rows.with_cte(done, chosen, claimed).bind(self.db)

    def _claimed(self, worker_id, due, now):
        """(the CTE of the ``due`` jobs, which ``due`` locks, the UPDATE ... RETURNING that claims them)."""
        Job = self.Job
        chosen = due.cte(CLAIMABLE, materialized=True)
        # By id from the locked ids (one index probe each), never a join the planner may choose to run as a
        # scan of every job: a generic plan did, taking a LIMIT it could not read for a tenth of the table.
        ids = pw.SQL(f'ARRAY(SELECT "id" FROM "{CLAIMABLE}")')
        claim = Job.update(**self.claim_changes(worker_id, now)).where(Job.id == pw.fn.ANY(ids))
        return chosen, claim.returning(Job)

    insert_chunk = 50_000  # one parameter per statement, whatever its rows: no bound-parameter limit to mind

    def insert_rows(self, batch: NewJobs) -> list[Job]:
        """One statement for the batch, the wake-up of listening workers included; the new jobs, in order.

        A column with one value in every row (the status, the times, most of a batch's settings) is one
        bound value; each other column is one JSON array of its values, the arrays unpacked side by side
        by ``ROWS FROM (json_array_elements_text(...), ...)``. So the statement is short whatever the
        batch's size, and neither side handles a value the rows share once per row: 5,000 jobs of one
        type with empty payloads send no array at all (``generate_series`` counts them), where the
        ``json_populate_recordset`` of every column this replaces parsed 70,000 JSON fields.
        On the server's clock (no injected one) the times are ``now()`` in the statement, a run_at given
        as "now" a JSON null it COALESCEs, and the statement returns the time it used with the ids (as one
        array): the whole batch is one round trip.
        """
        Job = self.Job
        n = len(batch)
        shared = batch.shared()
        columns = dict(batch.columns)
        clock = batch.now if isinstance(batch.now, pw.Node) else None
        run_at_on_clock = 0  # how many run_at are the server's clock (null in their JSON array)
        if clock is not None:
            # By identity: a Node's == builds SQL, it does not compare (list.count would count it equal).
            run_at_on_clock = sum(map(operator.is_, columns["run_at"], repeat(clock)))
            if run_at_on_clock == n:
                shared["run_at"] = clock
                del columns["run_at"]
            elif run_at_on_clock:
                columns["run_at"] = [None if value is clock else value for value in columns["run_at"]]
        varying = {}
        for name, values in columns.items():
            # Validated, a column holds one kind of value: equal values are one stored value.
            if values.count(values[0]) == n:
                shared[name] = values[0]
            else:
                varying[name] = values
        fields = Job._meta.fields
        selected, params = [], []
        for name in INSERT_COLUMNS:
            field, cast = fields[name], _pg_type(fields[name])
            if name not in shared:
                value = f'"v"."{field.column_name}"::{cast}'
                selected.append(
                    f"COALESCE({value}, {POSTGRES_NOW.sql})" if name == "run_at" and run_at_on_clock else value
                )
            elif clock is not None and shared[name] is clock:
                selected.append(POSTGRES_NOW.sql)
            else:
                selected.append(f"%s::{cast}")
                params.append(field.db_value(shared[name]))
        if varying:
            unpacked = ", ".join(["json_array_elements_text(%s::json)"] * len(varying))
            aliases = ", ".join(f'"{fields[name].column_name}"' for name in varying)
            source = f'ROWS FROM ({unpacked}) AS "v"({aliases})'
            params += [_json_array(fields[name], values) for name, values in varying.items()]
        else:
            source = "generate_series(1, %s)"
            params.append(n)
        table = f'"{Job._meta.table_name}"'
        names = ", ".join(f'"{fields[name].column_name}"' for name in INSERT_COLUMNS)
        sql = (
            f'WITH "new" AS (INSERT INTO {table} ({names}) SELECT {", ".join(selected)} FROM {source}'
            f' RETURNING "id") SELECT array_agg("new"."id" ORDER BY "new"."id"), {POSTGRES_NOW.sql}'
            ' FROM "new", pg_notify(%s, current_schema()) AS "notified"'
        )
        # One statement draws its ids from the sequence row by row, in the order its rows come: ascending
        # ids follow the batch's order.
        ids, now = self.db.execute_sql(sql, [*params, JOBS_CHANNEL]).fetchone()
        if clock is not None:
            now = now.replace(tzinfo=UTC)
            shared = {name: now if value is clock else value for name, value in shared.items()}
            if "run_at" in varying:
                varying["run_at"] = [now if value is None else value for value in varying["run_at"]]
        # Each job holds the values written, its payload decoded as a read's.
        payloads = columns["payload"]
        payloads = [{} for _ in payloads] if shared.get("payload") == "{}" else map(decoded_json, payloads)
        varying.pop("payload", None)
        rows = zip(ids, payloads, *varying.values(), strict=True)
        return self.rows.build_all(shared, ["id", "payload", *varying], rows)

    def _insert(self, m: Markers, clocked: frozenset):
        # The NOTIFY that wakes listening workers rides in the same statement: it is delivered with the
        # commit that makes the job visible, in one round trip (BEGIN, INSERT, NOTIFY, COMMIT took four).
        new = super()._insert(m, clocked).cte("new")
        notify = _pending_notification().alias("notified")
        return pw.Select([new, notify], [pw.SQL('"new".*')]).with_cte(new).bind(self.db)


def _pending_notification():
    # The payload names the schema: queues in other schemas of the database ignore it.
    return pw.fn.pg_notify(JOBS_CHANNEL, pw.fn.current_schema())


def _padded(types: list[str] | None) -> list[str] | None:
    """``types`` grown to the next power of two by repeating its last name: the same claim, and a list of
    any length shares one of a few compiled statements (1, 2, 4, ... names) instead of one per length."""
    if not types:
        return types
    size = 1 << (len(types) - 1).bit_length()
    return types + [types[-1]] * (size - len(types))


def _count(types: list[str] | None) -> int | None:
    return None if types is None else len(types)


# claim_filters' answers by (types, queues): a worker claims with the same lists before every job.
_FILTERS = StatementCache(64)


def claim_filters(types: list[str] | None, queues: list[str] | None) -> tuple[int | None, int | None, dict]:
    """(the claim's type marker count, its queue marker count, the markers' values) for these filters."""
    key = (None if types is None else tuple(types), None if queues is None else tuple(queues))
    return _FILTERS.get(key, _claim_filters, types, queues)


def _claim_filters(types: list[str] | None, queues: list[str] | None) -> tuple[int | None, int | None, dict]:
    types, queues = _padded(types), _padded(queues)
    return _count(types), _count(queues), {**numbered("type", types), **numbered("queue", queues)}


_row_values = operator.itemgetter(*INSERT_COLUMNS)


def _pg_type(field: pw.Field) -> str:
    """The PostgreSQL type a value of ``field`` is cast to (``text`` becomes the column's varchar as it is written)."""
    kinds = ((pw.DateTimeField, "timestamp"), (pw.DoubleField, "double precision"), (pw.FloatField, "real"))
    kinds += ((pw.BigIntegerField, "bigint"), (pw.BigAutoField, "bigint"), (pw.IntegerField, "integer"))
    for kind, name in kinds:
        if isinstance(field, kind):
            return name
    return "text"


def _json_array(field: pw.Field, values: tuple) -> str:
    """A column's values as one JSON array of their stored form (times as ISO text, each distinct one once)."""
    if isinstance(field, pw.DateTimeField):
        stored = {}
        for value in values:
            if value not in stored:
                stored[value] = None if value is None else field.db_value(value).isoformat()
        values = [stored[value] for value in values]
    return json.dumps(values, separators=(",", ":"), allow_nan=False)


def _stored_params(rows: list[dict], fields: list) -> list:
    """Every row's values in INSERT_COLUMNS order, times in their stored form."""
    times = [(i, field.db_value) for i, field in enumerate(fields) if isinstance(field, pw.DateTimeField)]
    stored = {}  # a batch shares one "now": convert each distinct time once
    params = []
    for row in rows:
        values = list(_row_values(row))
        for i, db_value in times:
            value = values[i]
            if value not in stored:
                stored[value] = db_value(value)
            values[i] = stored[value]
        params.extend(values)
    return params
