"""The versioned schema: every migration from an empty database to ``SCHEMA_VERSION``, each keeping every job.

``open_database`` (store.database) calls ``migrate`` when the recorded version is behind; the version is a
row of ``queue_meta``.
"""

from __future__ import annotations

import time

import peewee as pw

from ..errors import DatabaseURLError
from ..rules import PENDING
from .models import bind_models, is_postgres

SCHEMA_VERSION_KEY = "schema_version"

# Jobs by type (v9; v1's held type and status only): the console's and the API's filter by type, and the
# look an idle worker's claim takes first (statements._probe): due jobs of a type are one range of it.
TYPE_INDEX = "jobs_type_due"
# The claim's index: the pending jobs in claim order, and no other (PostgreSQL's since v3, SQLite's since
# v10, which replaced v1's index of every job by status). SQLite's claims name it, and a queue's claims
# that queue's index (v6), in statements.claim_source.
CLAIM_INDEX = "jobs_pending_claim"
QUEUE_CLAIM_INDEX = "jobs_queue_claim"
PENDING_CLAIM_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {CLAIM_INDEX} ON jobs (priority DESC, run_at, id) WHERE status = 'pending'"
)
# SQLite's leads with the status, one value in it: "status = 'pending'" is then an equality on its first column
# and the claim order the rest, the shape SQLite's planner took v1's full index for. Without it, a read of
# the pending jobs in claim order that names no index (the console's pending window) went through
# jobs_status_updated and sorted every pending job: SQLite, with no statistics, guesses an equality finds
# a few rows and a scan of an index reads them all.
PENDING_CLAIM_INDEX_SQLITE = (
    f"CREATE INDEX IF NOT EXISTS {CLAIM_INDEX} ON jobs (status, priority DESC, run_at, id) WHERE status = 'pending'"
)

# Indexes the queue's own queries need; partial ones stay small under churn (finished jobs are not in them).
INDEXES_V1 = (
    # claim: among pending jobs, highest priority, then due first, then lowest id; the ORDER BY
    # follows the index, so a claim reads one index entry, not every pending job.
    "CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (status, priority DESC, run_at, id)",
    # counts per status, the running/failed windows, the reaper, throughput, prune of finished jobs.
    "CREATE INDEX IF NOT EXISTS jobs_status_updated ON jobs (status, updated_at)",
    # the console's and the API's filter by type (replaced by v9's TYPE_INDEX).
    "CREATE INDEX IF NOT EXISTS jobs_type_status ON jobs (type, status)",
)


def _migrate_v1(db: pw.Database) -> None:
    models = bind_models(db)
    db.create_tables([models.Job, models.JobError])
    # Version 1's unique index on every row's key (the model declared it then); v4 narrows it.
    db.execute_sql("CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency_key ON jobs (idempotency_key)")
    for statement in INDEXES_V1:
        db.execute_sql(statement)


def _migrate_v2(db: pw.Database) -> None:
    # throughput's failed attempts per minute read the recent tail of job_errors, not the whole history.
    db.execute_sql("CREATE INDEX IF NOT EXISTS job_errors_created ON job_errors (created_at)")


# PostgreSQL only: what a high-churn table needs there (README, "Indexes and churn"). Every job is
# inserted, updated two or three times and deleted by prune, so dead row versions pile up fast.
POSTGRES_CHURN_V3 = (
    # The claim's own index holds pending jobs only: it stays as small as the backlog, however many
    # finished jobs the table keeps. The claim names the status as a literal so that a generic
    # (prepared) plan can still prove it matches this index's predicate.
    PENDING_CLAIM_INDEX,
    # Free space on every page so that an update that changes no indexed column (a heartbeat) is a
    # HOT update: the new row version stays on its page and no index is touched. heartbeat_at is
    # deliberately in no index for that reason.
    "ALTER TABLE jobs SET (fillfactor = 80)",
    # Vacuum after 1 % of the table is dead (default 20 %), so dead versions are reclaimed in small,
    # frequent passes instead of bloating the table and its indexes between rare big ones.
    "ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)",
)


def _migrate_v3(db: pw.Database) -> None:
    # Nothing to do on SQLite: it updates index entries in place (no dead row versions to vacuum), so
    # the pending range of jobs_claim stays contiguous and small however many finished jobs there are.
    if is_postgres(db):
        for statement in POSTGRES_CHURN_V3:
            db.execute_sql(statement)


def _migrate_v4(db: pw.Database) -> None:
    # Most jobs have no idempotency key, yet the unique index held an entry for each (NULLs are indexed
    # on both backends): one more index write per create and a bigger index to cache, for nothing. The
    # partial index keeps only set keys; "key = ?" and "key IN (...)" imply IS NOT NULL, so look-ups
    # and the UNIQUE check that settles concurrent creates use it as before.
    db.execute_sql(
        "CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency_key_set ON jobs (idempotency_key)"
        " WHERE idempotency_key IS NOT NULL"
    )
    db.execute_sql("DROP INDEX IF EXISTS jobs_idempotency_key")


# Version 5's first attempt number per job, from version 4's token (retry_count + 1 for the attempt a job
# is on) and its error history. A running job keeps exactly the number its worker holds, so that worker's
# ack still matches after the upgrade. Any other job gets at least the highest attempt its job_errors
# record (an operator retry reset retry_count but not the history), so its next claim, which adds one,
# numbers above every attempt recorded so far; finished jobs keep the number of their last attempt, and a
# pending job the number of attempts it has had (retry_count), so the next claim is the next attempt.
# (A running job that was operator-retried before the upgrade may repeat a number in its history once;
# its fencing still holds, since every later claim numbers above the one it holds.)
ATTEMPT_FROM_V4 = """
UPDATE jobs SET attempt = CASE
    WHEN status = 'running' THEN retry_count + 1
    ELSE {greatest}(
        CASE WHEN status = 'pending' THEN retry_count ELSE retry_count + 1 END,
        COALESCE((SELECT MAX(e.attempt) FROM job_errors e WHERE e.job_id = jobs.id), 0)
    )
END
WHERE status <> 'pending' OR retry_count > 0 OR id IN (SELECT job_id FROM job_errors)
"""


def _migrate_v5(db: pw.Database) -> None:
    # A fresh database already has the column: version 1 creates the table from the current model.
    # (PostgreSQL says IF NOT EXISTS itself; peewee's get_columns there looks in "public", not the search_path.)
    add = "ALTER TABLE jobs ADD COLUMN {} attempt INTEGER NOT NULL DEFAULT 0"
    if is_postgres(db):
        db.execute_sql(add.format("IF NOT EXISTS"))
        db.execute_sql(ATTEMPT_FROM_V4.format(greatest="GREATEST"))
        return
    if "attempt" not in {column.name for column in db.get_columns("jobs")}:
        db.execute_sql(add.format(""))
    db.execute_sql(ATTEMPT_FROM_V4.format(greatest="MAX"))


# Version 6's columns on jobs: name -> its definition. Every existing job is in queue "default", with no
# cancel request, result or timeout.
COLUMNS_V6 = {
    "queue": "VARCHAR(255) NOT NULL DEFAULT 'default'",
    "cancel_requested_at": "{timestamp}",
    "result": "TEXT",
    "timeout": "REAL",
}
# A claim limited to queues (a worker's per-queue slots claim with queues=[name]) reads the pending jobs
# of that queue in claim order straight from this index, however many jobs the other queues hold. As
# jobs_claim (v1) and jobs_pending_claim (v3): the full index on SQLite, the pending part on PostgreSQL.
QUEUE_CLAIM_INDEX_SQLITE = (
    f"CREATE INDEX IF NOT EXISTS {QUEUE_CLAIM_INDEX} ON jobs (queue, status, priority DESC, run_at, id)"
)
QUEUE_CLAIM_INDEX_POSTGRES = (
    "CREATE INDEX IF NOT EXISTS jobs_pending_queue_claim ON jobs (queue, priority DESC, run_at, id)"
    " WHERE status = 'pending'"
)


def _migrate_v6(db: pw.Database) -> None:
    # Named queues, cancel requests, the queues (pause state) and workers (registry) tables, and issue 14's
    # result and timeout columns, in one step. A fresh database already has the columns (v1 creates the
    # table from the current model); an old one gets them with defaults, no job rewritten or lost.
    models = bind_models(db)
    if is_postgres(db):
        for name, definition in COLUMNS_V6.items():
            db.execute_sql(
                f"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS {name} {definition.format(timestamp='TIMESTAMP')}"
            )
        db.execute_sql(QUEUE_CLAIM_INDEX_POSTGRES)
    else:
        present = {column.name for column in db.get_columns("jobs")}
        for name, definition in COLUMNS_V6.items():
            if name not in present:
                db.execute_sql(f"ALTER TABLE jobs ADD COLUMN {name} {definition.format(timestamp='DATETIME')}")
        db.execute_sql(QUEUE_CLAIM_INDEX_SQLITE)
    db.create_tables([models.QueueRecord, models.WorkerRecord])


# PostgreSQL only: the console's queues view counts each queue's jobs per status (up to a cap) and finds the
# queue names by a loose scan, seeks on (queue, status). SQLite has them already: its queue claim index
# (v6) is the full one and leads with (queue, status); PostgreSQL's is partial (pending jobs only).
QUEUE_STATUS_INDEX_POSTGRES = "CREATE INDEX IF NOT EXISTS jobs_queue_status ON jobs (queue, status)"


def _migrate_v7(db: pw.Database) -> None:
    # An index only: every job stays as it is.
    if is_postgres(db):
        db.execute_sql(QUEUE_STATUS_INDEX_POSTGRES)


def _migrate_v8(db: pw.Database) -> None:
    # PostgreSQL only: v1's jobs_claim (status, priority DESC, run_at, id) held every job, yet no read
    # there needs it: claims and the pending window read the partial pending indexes (v3, v6), and every
    # other read by status jobs_status_updated or jobs_queue_status. It was one more index entry to write
    # at every insert and every change of status (claim, completion): create_many of 5,000 jobs 1.17x
    # faster without it, interleaved rounds; the console's views on 200,000 jobs unchanged. SQLite keeps
    # it: its claim reads it (its pending range stays small, as SQLite changes index entries in place), until v10.
    if is_postgres(db):
        db.execute_sql("DROP INDEX IF EXISTS jobs_claim")


def _migrate_v9(db: pw.Database) -> None:
    # Both backends: the type index holds run_at after type and status, so that whether a type has a due
    # job is one range of it. An idle worker's claim asks that first (statements._probe); through
    # (type, status) it read every pending job of its types to check its time, and a type with many jobs
    # scheduled for later made each look read them all (49 ms with 100,000 on SQLite). As wide as v1's
    # for every other read by type (a prefix), and written at the same moments: a job's run_at changes
    # with its status (a retry), or alone only at an operator's hand.
    db.execute_sql("DROP INDEX IF EXISTS jobs_type_status")
    db.execute_sql(f"CREATE INDEX IF NOT EXISTS {TYPE_INDEX} ON jobs (type, status, run_at)")


def _migrate_v10(db: pw.Database) -> None:
    # SQLite only (PostgreSQL has had it since v3 and dropped v1's index in v8): the claim's index holds
    # the pending jobs only. v1's (status, priority DESC, run_at, id) held every job, so each claim moved
    # the job's entry from the pending range to the running one, and each completion from the running
    # range to the completed one: three ranges changed per transaction, each leaf page written whole into
    # the WAL, where the partial index changes one (a one-slot worker's complete + claim wrote 9.2 WAL
    # frames, now 8.4; README, "Indexes and churn"). Reads by other statuses have jobs_status_updated, led
    # by the status, as on PostgreSQL. Statements compare the status with a literal (models.StatusField):
    # against a bound one SQLite would prepare the statement again at every execution to check this
    # index's WHERE.
    if not is_postgres(db):
        db.execute_sql(PENDING_CLAIM_INDEX_SQLITE)
        db.execute_sql("DROP INDEX IF EXISTS jobs_claim")


# Version 11's (status, updated_at) index: every job but the pending ones. Every read of pending jobs goes
# by the pending-only claim indexes (v3, v6, v10), so v1's entry for each new job was written at its insert
# and removed at its claim for no read at all: a create wrote one index entry more than it needs (SQLite's
# one-by-one create ran 1.18x as fast without it, interleaved rounds; README, "Indexes and churn"). Reads by
# any other status name the index's term themselves (models.StatusField), as SQLite needs to use it.
STATUS_INDEX = "jobs_status_updated"
CLAIMED_STATUS_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {STATUS_INDEX} ON jobs (status, updated_at) WHERE status <> 'pending'"
)


def _migrate_v11(db: pw.Database) -> None:
    db.execute_sql(f"DROP INDEX IF EXISTS {STATUS_INDEX}")
    db.execute_sql(CLAIMED_STATUS_INDEX)


# Version 12's (queue, status) index on PostgreSQL: every job but the pending ones, as v11 did for the
# (status, updated_at) index. Its reads of pending jobs have the pending-only queue claim index (v6), led by
# the queue too: the queues view's count of a queue's pending jobs, its loose scan for the names of queues
# that hold pending jobs (overview.queue_names scans both), and a queue's oldest due job. So each new job's
# entry here was written at its insert for no read: create_many of 5,000 jobs took 45.9 ms a batch with
# it and 40.7 ms without (6 interleaved rounds; README, "Indexes and churn"). SQLite's (queue, ...) index
# is its queue claim index, which holds every job (v6): nothing changes there.
QUEUE_STATUS_INDEX_CLAIMED = (
    "CREATE INDEX IF NOT EXISTS jobs_queue_status ON jobs (queue, status) WHERE status <> 'pending'"
)


def _migrate_v12(db: pw.Database) -> None:
    if is_postgres(db):
        db.execute_sql("DROP INDEX IF EXISTS jobs_queue_status")
        db.execute_sql(QUEUE_STATUS_INDEX_CLAIMED)


def _migrate_v13(db: pw.Database) -> None:
    # The types each worker has handlers for, so that "why is this job waiting?" can say no live worker runs
    # a job's type (it said "it will be claimed next" of a job no worker could run). NULL for the workers
    # registered before: unknown, taken as every type. A fresh database has the column already (v6 creates
    # the table from the current model).
    if is_postgres(db):
        db.execute_sql("ALTER TABLE workers ADD COLUMN IF NOT EXISTS types TEXT")
    elif "types" not in {column.name for column in db.get_columns("workers")}:
        db.execute_sql("ALTER TABLE workers ADD COLUMN types TEXT")


def _migrate_v14(db: pw.Database) -> None:
    # PostgreSQL only: a worker's counts (running, completed, failed) as BIGINT, the range the registry accepts
    # (validate_count) and SQLite's INTEGER holds; INTEGER refused a heartbeat past 2**31 completions. The
    # workers table holds a row per worker: rewriting it is instant. A fresh database has them already (v6
    # creates the table from the current model).
    if is_postgres(db):
        db.execute_sql(
            "ALTER TABLE workers ALTER COLUMN running TYPE BIGINT, ALTER COLUMN completed TYPE BIGINT,"
            " ALTER COLUMN failed TYPE BIGINT"
        )


# Version 15, PostgreSQL only: job ids 64-bit (SERIAL's sequence and column stopped at 2**31 - 1 jobs ever
# created, and ids are never reused: about a week at the few thousand jobs a second README measures), and the
# seconds of a job's timeout and back-off and a worker's stale_after in double precision (REAL read 0.1 back
# as 0.10000000149011612; the values kept are read as the decimals they were written as). One ALTER TABLE
# per table: jobs is rewritten once, its indexes rebuilt, under an exclusive lock (README, "PostgreSQL": how
# long it takes). A column already of its type is left alone: a database created at v15 is not rewritten.
WIDER_COLUMNS = {
    "jobs": {"id": "bigint", "timeout": "double precision", "retry_backoff": "double precision"},
    "job_errors": {"id": "bigint", "job_id": "bigint"},
    "workers": {"stale_after": "double precision"},
}


def _migrate_v15(db: pw.Database) -> None:
    if not is_postgres(db):
        return  # SQLite's integers and reals are 64-bit whatever the declared type
    for table, columns in WIDER_COLUMNS.items():
        narrow = [
            name
            for name, kind in columns.items()
            if db.execute_sql(
                "SELECT data_type FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = %s AND column_name = %s",
                (table, name),
            ).fetchone()[0]
            != kind
        ]
        if narrow:
            db.execute_sql(f"ALTER TABLE {table} " + ", ".join(_widened(name, columns[name]) for name in narrow))
        if "id" in narrow:
            sequence = db.execute_sql("SELECT pg_get_serial_sequence(%s, 'id')", (table,)).fetchone()[0]
            db.execute_sql(f"ALTER SEQUENCE {sequence} AS bigint")


def _widened(column: str, kind: str) -> str:
    # A REAL's shortest text is the decimal it was written as (0.1, not 0.10000000149011612): read through it.
    through = f" USING {column}::text::{kind}" if kind == "double precision" else ""
    return f"ALTER COLUMN {column} TYPE {kind}{through}"


def _migrate_v16(db: pw.Database) -> None:
    # Each failed attempt's traceback beside its error (the handler's frames; NULL for the attempts recorded
    # before, and for errors with no handler frames: a lost claim, a result that could not be stored). A
    # fresh database has the column already (v1 creates the table from the current model).
    if is_postgres(db):
        db.execute_sql("ALTER TABLE job_errors ADD COLUMN IF NOT EXISTS traceback TEXT")
    elif "traceback" not in {column.name for column in db.get_columns("job_errors")}:
        db.execute_sql("ALTER TABLE job_errors ADD COLUMN traceback TEXT")


def queue_index_parts(Job) -> list:
    """The conditions that split a read by queue into reads of one (queue, ...) index each: on PostgreSQL
    its pending jobs (``jobs_pending_queue_claim``, v6) and the rest (``jobs_queue_status``, v12), as a
    partial index serves only a query that names its status set; on SQLite one part, None (its queue
    claim index holds every job)."""
    if is_postgres(Job._meta.database):
        return [Job.status == PENDING, Job.status != PENDING]
    return [None]


# (version, step): each step takes the schema from version - 1 to version, keeping every job.
MIGRATIONS = (
    (1, _migrate_v1),
    (2, _migrate_v2),
    (3, _migrate_v3),
    (4, _migrate_v4),
    (5, _migrate_v5),
    (6, _migrate_v6),
    (7, _migrate_v7),
    (8, _migrate_v8),
    (9, _migrate_v9),
    (10, _migrate_v10),
    (11, _migrate_v11),
    (12, _migrate_v12),
    (13, _migrate_v13),
    (14, _migrate_v14),
    (15, _migrate_v15),
    (16, _migrate_v16),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def schema_version(db: pw.Database) -> int:
    """The schema version recorded in the database; 0 for a new one. DatabaseURLError if the record is corrupt."""
    meta = bind_models(db).SchemaMeta
    if not meta.table_exists():
        return 0
    row = meta.get_or_none(meta.key == SCHEMA_VERSION_KEY)
    if row is None:
        return 0
    text = row.value
    if not (isinstance(text, str) and text.isascii() and text.isdigit()):
        raise DatabaseURLError(
            f"corrupt {SCHEMA_VERSION_KEY} {text!r} in table {meta._meta.table_name}: expected a whole number; "
            "restore the database from a backup, or set it to the version its tables have"
        )
    return int(text)


def newer_schema(version: int, where: str | None = None) -> DatabaseURLError:
    """The error for tables a newer queue_core made or upgraded (a downgrade after a bad deploy): this one
    cannot know their shape, so it neither reads nor writes them."""
    tables = f"the queue's tables in {where}" if where else "the queue's tables"
    return DatabaseURLError(
        f"database schema version {version} is newer than this queue_core's ({SCHEMA_VERSION}): {tables} were"
        " made or upgraded by a newer queue_core, and nothing was read or written; upgrade queue_core to the"
        " version that upgraded them (a schema is never downgraded)"
    )


# PostgreSQL: how long one try of an upgrade waits for a lock on a queue table, how many tries, and the pause
# between them. An ALTER TABLE waiting for its lock (behind a long transaction: a report, pg_dump, a session
# left idle in one) queues every later statement on the table behind it, so a worker's claim or ack waited as
# long as it did, with no word from either: each try gives up soon and lets the queue run, and the last says
# who holds the lock.
MIGRATION_LOCK_TIMEOUT_MS = 3000
MIGRATION_TRIES = 5
MIGRATION_PAUSE = 1.0  # seconds
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that expired
QUEUE_TABLES = ("jobs", "job_errors", "queues", "workers", "queue_meta")


def migrate(db: pw.Database) -> int:
    """Bring the schema to ``SCHEMA_VERSION``; idempotent and safe when several processes open at once.
    Returns the version the database held when this took the migration lock (0: no queue tables), so that
    of two opens at once only the one that made or upgraded the tables says so. On PostgreSQL a table lock
    another session holds is waited for ``MIGRATION_TRIES`` times, then a DatabaseURLError names it."""
    if not is_postgres(db):
        return _migrate_once(db)
    for tries in range(1, MIGRATION_TRIES + 1):
        try:
            return _migrate_once(db)
        except pw.OperationalError as exc:
            if getattr(getattr(exc, "orig", None), "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            if tries == MIGRATION_TRIES:
                raise _locked_out(db, schema_version(db)) from exc
            time.sleep(MIGRATION_PAUSE)
    raise AssertionError("unreachable")  # pragma: no cover


def _migrate_once(db: pw.Database) -> int:
    meta = bind_models(db).SchemaMeta
    with db.atomic():
        if is_postgres(db):
            # Serialise concurrent first opens; SQLite's BEGIN IMMEDIATE already does. Then every lock a step
            # waits for is waited for a while only (MIGRATION_LOCK_TIMEOUT_MS), for this transaction alone.
            db.execute_sql("SELECT pg_advisory_xact_lock(7312450981)")
            db.execute_sql(f"SET LOCAL lock_timeout = {int(MIGRATION_LOCK_TIMEOUT_MS)}")
        db.create_tables([meta])
        current = schema_version(db)
        if current > SCHEMA_VERSION:  # another process's newer queue_core upgraded them since our look
            raise newer_schema(current)
        for version, step in MIGRATIONS:
            if version > current:
                step(db)
                meta.insert(key=SCHEMA_VERSION_KEY, value=str(version)).on_conflict(
                    conflict_target=[meta.key], preserve=[meta.value]
                ).execute()
    return current


def _locked_out(db: pw.Database, found: int) -> DatabaseURLError:
    """The error for an upgrade that found the queue's tables locked at each try: who holds them (the longest
    transactions first: a worker's own, of milliseconds, may be among them), and what to do."""
    holders = db.execute_sql(
        "SELECT DISTINCT a.pid, a.state, now() - a.xact_start, a.query FROM pg_locks l"
        " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.granted AND a.pid <> pg_backend_pid()"
        " AND l.relation IN (SELECT to_regclass(name) FROM unnest(%s::text[]) AS name) ORDER BY 3 DESC NULLS LAST",
        (list(QUEUE_TABLES),),
    ).fetchall()
    who = "; ".join(
        f"pid {pid} ({state}{_for(held)}: {' '.join(str(query or '').split())[:80]})"
        for pid, state, held, query in holders[:3]
    )
    first = holders[0][0] if holders else "pid"
    return DatabaseURLError(
        f"the upgrade of the queue's tables from schema version {found} to {SCHEMA_VERSION} waited"
        f" {MIGRATION_LOCK_TIMEOUT_MS / 1000:g} s for a lock on them {MIGRATION_TRIES} times and gave up (the"
        " workers' statements queue behind a waiting upgrade): nothing was changed. "
        + (f"Held by {who}: " if who else "")
        + f"let that transaction finish, or end it (SELECT pg_terminate_backend({first})), then run"
        " python -m queue_core migrate again"
    )


def _for(held) -> str:
    return f" for {int(held.total_seconds())} s" if held is not None else ""
