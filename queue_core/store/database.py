"""Opening the database: URL parsing, connection settings, and the versioned schema."""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlparse

import peewee as pw

from ..errors import DatabaseURLError
from .models import bind_models

DEFAULT_URL = "sqlite:///queue.db"
BUSY_TIMEOUT_MS = 10_000
SYNCHRONOUS_MODES = ("NORMAL", "FULL")


def default_url() -> str:
    return os.environ.get("QUEUE_DB_URL") or DEFAULT_URL


def open_database(url: str | None = None, *, synchronous: str | None = None) -> pw.Database:
    """Open ``url`` (a ``playhouse.db_url`` URL; default ``$QUEUE_DB_URL`` or ``sqlite:///queue.db``).

    The schema is created or migrated on open, so any command can be the first to touch a new file.
    SQLite: WAL, a busy timeout, ``synchronous=NORMAL`` (durable against a process crash; a power loss
    may drop the last commits) unless ``synchronous="FULL"`` or ``?synchronous=full`` in the URL asks
    for durability against power loss too, at the cost of an fsync per commit.
    """
    url = url or default_url()
    parsed = urlparse(url)
    scheme = parsed.scheme.split("+")[0]
    if scheme == "sqlite":
        db = _open_sqlite(url, parsed, synchronous)
    elif scheme in ("postgres", "postgresql"):
        db = _open_postgres(url, parsed)
    else:
        raise DatabaseURLError(
            f"unsupported database URL {url!r}: use sqlite:///path/to/file.db or postgresql://user@host/dbname"
        )
    try:
        db.connect(reuse_if_open=True)
        # A current schema is only read: no write lock (SQLite) or migration lock (PostgreSQL), so a
        # read-only command never waits behind, or fails for, a writer holding the database.
        if schema_version(db) != SCHEMA_VERSION:
            migrate(db)
    except DatabaseURLError:
        db.close()
        raise
    except DATABASE_ERRORS as exc:
        db.close()
        # The driver's first line says what is wrong; the rest (the failing SQL, a caret) is noise to an operator.
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DatabaseURLError(f"cannot open {without_password(url)}: {reason}") from exc
    return db


def without_password(url: str) -> str:
    """``url`` fit for an error message or a log: the password replaced by ``***``."""
    parsed = urlparse(url)
    if not parsed.password:
        return url
    return parsed._replace(netloc=parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)).geturl()


def _open_sqlite(url, parsed, synchronous) -> pw.SqliteDatabase:
    path = parsed.path[1:] if parsed.path.startswith("/") else parsed.path
    if not parsed.netloc and (not path or _in_memory(path, parsed.query)):
        # Every connection (each worker thread has its own) would get its own empty database.
        raise DatabaseURLError(
            f"SQLite URL {url!r} names no database file: an in-memory database is not shared between "
            "connections; use a file path, e.g. sqlite:///queue.db (or a file in a temporary directory for tests)"
        )
    if parsed.netloc:
        raise DatabaseURLError(
            f"bad SQLite URL {url!r}: use three slashes for a relative path (sqlite:///queue.db) "
            "or four for an absolute one (sqlite:////var/lib/queue.db)"
        )
    options = {k.lower(): v for k, v in parse_qsl(parsed.query)}
    unknown = set(options) - {"synchronous", "busy_timeout"}
    if unknown:
        raise DatabaseURLError(
            f"unknown SQLite URL option(s) {', '.join(sorted(unknown))}: use synchronous, busy_timeout"
        )
    mode = (synchronous or options.get("synchronous") or "NORMAL").upper()
    if mode not in SYNCHRONOUS_MODES:
        raise DatabaseURLError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {mode!r}")
    busy_ms = options.get("busy_timeout", str(BUSY_TIMEOUT_MS))
    if not busy_ms.isdigit():
        raise DatabaseURLError(f"busy_timeout must be a whole number of milliseconds, not {busy_ms!r}")
    return pw.SqliteDatabase(
        path,
        pragmas={
            "journal_mode": "wal",
            "busy_timeout": int(busy_ms),
            "synchronous": mode,
            "foreign_keys": 1,
        },
        timeout=int(busy_ms) / 1000,
        # Every transaction we open writes: take the write lock up front so a reader never has to
        # upgrade mid-transaction (the source of "database is locked" errors that busy_timeout cannot fix).
        lock_type="IMMEDIATE",
        check_same_thread=False,
    )


def _in_memory(path: str, query: str) -> bool:
    return path == ":memory:" or ":memory:" in path or (path.startswith("file:") and "mode=memory" in query)


def _open_postgres(url, parsed) -> pw.PostgresqlDatabase:
    if not parsed.path.strip("/"):
        raise DatabaseURLError(
            f"bad PostgreSQL URL {without_password(url)!r}: name the database (postgresql://user@host:5432/dbname)"
        )
    try:
        import psycopg  # noqa: F401  (peewee would only say "driver not found" at connect time)
    except ImportError:
        raise DatabaseURLError(
            "PostgreSQL needs psycopg 3: pip install 'queue-core[postgres]' (or pip install 'psycopg[binary]')"
        ) from None
    # libpq parses the URL itself (user, password, host, port, and every libpq option in the query string,
    # e.g. ?sslmode=require or ?options=-csearch_path%3Dmyschema), so what works for psql works here.
    conninfo = "postgresql://" + url.split("://", 1)[1]
    return pw.PostgresqlDatabase(conninfo, prefer_psycopg3=True)


def is_postgres(db: pw.Database) -> bool:
    return isinstance(db, pw.PostgresqlDatabase)


# --- schema -------------------------------------------------------------------------------------

SCHEMA_VERSION_KEY = "schema_version"
# What a database call can raise beyond our own errors: what the database reports, and a lost connection.
DATABASE_ERRORS = (pw.DatabaseError, pw.InterfaceError)

# Indexes the queue's own queries need; partial ones stay small under churn (finished jobs are not in them).
INDEXES_V1 = (
    # claim: among pending jobs, highest priority, then due first, then lowest id; the ORDER BY
    # follows the index, so a claim reads one index entry, not every pending job.
    "CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (status, priority DESC, run_at, id)",
    # counts per status, the running/failed windows, the reaper, throughput, prune of finished jobs.
    "CREATE INDEX IF NOT EXISTS jobs_status_updated ON jobs (status, updated_at)",
    # the console's and the API's filter by type.
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
    "CREATE INDEX IF NOT EXISTS jobs_pending_claim ON jobs (priority DESC, run_at, id) WHERE status = 'pending'",
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


# (version, step): each step takes the schema from version - 1 to version, keeping every job.
MIGRATIONS = ((1, _migrate_v1), (2, _migrate_v2), (3, _migrate_v3), (4, _migrate_v4), (5, _migrate_v5))
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


def migrate(db: pw.Database) -> int:
    """Bring the schema to ``SCHEMA_VERSION``; idempotent and safe when several processes open at once."""
    meta = bind_models(db).SchemaMeta
    with db.atomic():
        if is_postgres(db):
            # Serialise concurrent first opens; SQLite's BEGIN IMMEDIATE already does.
            db.execute_sql("SELECT pg_advisory_xact_lock(7312450981)")
        db.create_tables([meta])
        current = schema_version(db)
        if current > SCHEMA_VERSION:
            raise DatabaseURLError(
                f"database schema version {current} is newer than this queue_core's "
                f"({SCHEMA_VERSION}); upgrade queue_core"
            )
        for version, step in MIGRATIONS:
            if version > current:
                step(db)
                meta.insert(key=SCHEMA_VERSION_KEY, value=str(version)).on_conflict(
                    conflict_target=[meta.key], preserve=[meta.value]
                ).execute()
    return SCHEMA_VERSION
