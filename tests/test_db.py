"""Opening databases: URLs, SQLite settings, and the versioned schema."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import peewee as pw
import pytest
from support import as_schema_version_5, reopened_at_version

from queue_core.errors import DatabaseURLError
from queue_core.store.database import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_WAL_AUTOCHECKPOINT,
    default_url,
    open_database,
    without_password,
)
from queue_core.store.models import is_postgres
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version


@pytest.mark.backends("sqlite")
def test_sqlite_settings(db):
    pragma = lambda name: db.execute_sql(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
    assert pragma("journal_mode") == "wal"
    assert pragma("busy_timeout") >= 5000
    assert pragma("synchronous") == 1  # NORMAL


def test_synchronous_full_on_request(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}?synchronous=full")
    assert db.execute_sql("PRAGMA synchronous").fetchone()[0] == 2
    db.close()


def test_busy_timeout_from_url(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}?busy_timeout=250")
    assert db.execute_sql("PRAGMA busy_timeout").fetchone()[0] == 250
    db.close()


def test_wal_autocheckpoint_defaults_to_a_few_thousand_pages_and_the_url_chooses_another(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}")
    assert db.execute_sql("PRAGMA wal_autocheckpoint").fetchone()[0] == DEFAULT_WAL_AUTOCHECKPOINT > 1000
    db.close()
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}?wal_autocheckpoint=1000")
    assert db.execute_sql("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    db.close()


def test_a_new_sqlite_file_gets_the_default_page_size_and_an_old_one_keeps_its_own(tmp_path):
    page_size = lambda db: db.execute_sql("PRAGMA page_size").fetchone()[0]  # noqa: E731
    db = open_database(f"sqlite:///{tmp_path / 'new.db'}")
    assert page_size(db) == DEFAULT_PAGE_SIZE != 4096  # SQLite's own default would be 4096
    db.close()
    old = tmp_path / "old.db"  # a file made before this setting: SQLite's 4 KiB pages
    connection = sqlite3.connect(old)
    connection.execute("PRAGMA page_size = 4096")
    connection.execute("CREATE TABLE unrelated (x)")
    connection.close()
    db = open_database(f"sqlite:///{old}")
    JobRepository(db).create("t")
    assert page_size(db) == 4096 and JobRepository(db).counts()["pending"] == 1
    db.close()


def test_page_size_from_url_for_a_new_file(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'q.db'}?page_size=8192")
    JobRepository(db).create("t")
    assert db.execute_sql("PRAGMA page_size").fetchone()[0] == 8192
    db.close()
    # Asked again for the size the file has: fine.
    open_database(f"sqlite:///{tmp_path / 'q.db'}?page_size=8192").close()


def test_a_page_size_the_existing_file_does_not_have_is_refused_saying_how_to_convert(tmp_path):
    url = f"sqlite:///{tmp_path / 'q.db'}"
    db = open_database(url)
    JobRepository(db).create("t", {"keep": 1})
    db.close()
    with pytest.raises(DatabaseURLError) as info:
        open_database(url + "?page_size=4096")
    message = str(info.value)
    assert f"{DEFAULT_PAGE_SIZE}-byte pages" in message and "VACUUM" in message and "page_size=4096" in message
    db = open_database(url)
    assert db.execute_sql("PRAGMA page_size").fetchone()[0] == DEFAULT_PAGE_SIZE  # untouched
    assert [job.payload for job in JobRepository(db).list()] == [{"keep": 1}]
    db.close()


def test_schema_created_once_and_reopen_keeps_jobs(db_url):
    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION
    JobRepository(db).create("t", {"keep": True})
    db.close()
    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION
    assert JobRepository(db).list()[0].payload == {"keep": True}
    indexes = {index.name for index in db.get_indexes("jobs")}
    assert {"jobs_status_updated", "jobs_type_due"} <= indexes and "jobs_type_status" not in indexes
    # The claim's index holds pending jobs only, on both backends (PostgreSQL since v3 and v8, SQLite v10).
    assert "jobs_pending_claim" in indexes and "jobs_claim" not in indexes
    db.close()


def test_a_version_7_database_upgrades_to_8_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for priority in (0, 5):
        repo.create("t", priority=priority)
    repo.claim("w")
    before = {job.id: (job.status, job.priority) for job in repo.list()}
    db = reopened_at_version(
        db, db_url, 7, "CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (status, priority DESC, run_at, id)"
    )
    repo = JobRepository(db)
    assert {job.id: (job.status, job.priority) for job in repo.list()} == before
    assert "jobs_claim" not in {index.name for index in db.get_indexes("jobs")}  # gone (SQLite: in v10)
    assert repo.claim("w") is not None and repo.claim("w") is None  # the claim still works
    db.close()


def test_a_version_8_database_upgrades_to_9_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for type_ in ("t", "u", "t"):
        repo.create(type_)
    repo.claim("w")
    before = {job.id: (job.type, job.status) for job in repo.list()}
    db = reopened_at_version(
        db, db_url, 8, "DROP INDEX jobs_type_due", "CREATE INDEX jobs_type_status ON jobs (type, status)"
    )
    repo = JobRepository(db)
    assert {job.id: (job.type, job.status) for job in repo.list()} == before
    indexes = {index.name: index.columns for index in db.get_indexes("jobs")}
    assert indexes["jobs_type_due"] == ["type", "status", "run_at"] and "jobs_type_status" not in indexes
    assert repo.claim_many("w", 5, types=["u"])[0].type == "u"  # an idle claim's look reads the new index
    assert repo.counts(type="t")["pending"] == 1  # a read by type, through the new index's prefix
    db.close()


def test_a_version_9_database_upgrades_to_10_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for priority in (0, 5, 0, 9):
        repo.create("t", priority=priority)
    first = repo.claim("w")
    repo.complete(first.id, worker_id="w", attempt=first.attempt)
    repo.claim("w")
    before = {job.id: (job.status, job.priority) for job in repo.list()}
    # Version 9's SQLite claim index held every job by status; PostgreSQL's schema is the same at 9 and 10.
    shape = (
        ()
        if is_postgres(db)
        else (
            "DROP INDEX jobs_pending_claim",
            "CREATE INDEX jobs_claim ON jobs (status, priority DESC, run_at, id)",
        )
    )
    db = reopened_at_version(db, db_url, 9, *shape)
    repo = JobRepository(db)
    assert {job.id: (job.status, job.priority) for job in repo.list()} == before
    indexes = {index.name: index for index in db.get_indexes("jobs")}
    assert "jobs_claim" not in indexes
    # SQLite's leads with the status (schema.PENDING_CLAIM_INDEX_SQLITE), for its planner.
    columns = ["priority", "run_at", "id"] if is_postgres(db) else ["status", "priority", "run_at", "id"]
    assert indexes["jobs_pending_claim"].columns == columns
    definition = indexes["jobs_pending_claim"].sql
    assert "WHERE" in definition and "'pending'" in definition, definition
    assert [repo.claim("w").priority for _ in range(2)] == [0, 0] and repo.claim("w") is None
    db.close()


def test_a_version_10_database_upgrades_to_11_its_status_index_holding_no_pending_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for _ in range(4):
        repo.create("t")
    first = repo.claim("w")
    repo.complete(first.id, worker_id="w", attempt=first.attempt)
    repo.claim("w")
    before = {job.id: job.status for job in repo.list()}
    # Version 10's (status, updated_at) index held every job, the pending ones too.
    full = "CREATE INDEX jobs_status_updated ON jobs (status, updated_at)"
    db = reopened_at_version(db, db_url, 10, "DROP INDEX jobs_status_updated", full)
    repo = JobRepository(db)
    assert {job.id: job.status for job in repo.list()} == before
    index = {index.name: index for index in db.get_indexes("jobs")}["jobs_status_updated"]
    assert index.columns == ["status", "updated_at"]
    assert "WHERE" in index.sql and "'pending'" in index.sql, index.sql
    assert repo.counts() == {"pending": 2, "running": 1, "completed": 1, "failed": 0, "cancelled": 0}
    assert [job.id for job in repo.window_rows("running")] == [j for j, s in before.items() if s == "running"]
    db.close()


def test_a_version_12_database_upgrades_to_13_its_workers_keeping_their_rows_without_types(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    repo.register_worker("w1", host="h", pid=7, queues=["mail"], concurrency=2, stale_after=30)
    job, _ = repo.create("t", queue="mail")
    db = reopened_at_version(db, db_url, 12, "ALTER TABLE workers DROP COLUMN types")
    repo = JobRepository(db)
    assert "types" in {column.name for column in db.get_columns("workers")}
    row = repo.WorkerRecord.get_by_id("w1")
    assert (row.pid, row.queues, row.types) == (7, '["mail"]', None)
    assert [reason.kind for reason in repo.why_waiting(job.id)] == ["next"]  # types unknown: any type
    db.close()


def test_a_version_13_database_upgrades_to_14_its_workers_keeping_their_rows_and_counting_past_32_bits(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    repo.register_worker("w1", host="h", pid=7, queues=["mail"], concurrency=2, stale_after=30)
    repo.worker_seen("w1", running=1, completed=12, failed=3)
    # Version 13's counts were INTEGER on PostgreSQL (SQLite's are 64-bit whatever the declared type).
    narrow = [f"ALTER TABLE workers ALTER COLUMN {name} TYPE INTEGER" for name in ("running", "completed", "failed")]
    db = reopened_at_version(db, db_url, 13, *(narrow if is_postgres(db) else ()))
    repo = JobRepository(db)
    row = repo.WorkerRecord.get_by_id("w1")
    assert (row.pid, row.queues, row.completed, row.failed) == (7, '["mail"]', 12, 3)
    repo.worker_seen("w1", running=0, completed=2**31 + 1, failed=3)
    assert repo.WorkerRecord.get_by_id("w1").completed == 2**31 + 1
    db.close()


def column_types(db, table: str) -> dict[str, str]:
    rows = db.execute_sql(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s",
        (table,),
    )
    return dict(rows.fetchall())


@pytest.mark.backends("postgresql")
def test_a_new_postgres_database_has_64_bit_job_ids_and_double_precision_seconds(db):
    jobs, errors, workers = (column_types(db, table) for table in ("jobs", "job_errors", "workers"))
    assert (jobs["id"], errors["id"], errors["job_id"]) == ("bigint", "bigint", "bigint")
    assert {jobs["timeout"], jobs["retry_backoff"], workers["stale_after"]} == {"double precision"}
    sequence = db.execute_sql("SELECT pg_get_serial_sequence('jobs', 'id')").fetchone()[0]
    name = sequence.rsplit(".", 1)[-1]
    assert db.execute_sql("SELECT data_type FROM pg_sequences WHERE sequencename = %s", (name,)).fetchone() == (
        "bigint",
    )


def test_a_version_14_database_upgrades_to_15_its_jobs_kept_and_ids_going_past_32_bits(db_url):
    """PostgreSQL's SERIAL ids stopped at 2**31 - 1 jobs ever created (ids are never reused: a week at a few
    thousand jobs a second), and REAL seconds read 0.1 back as 0.10000000149011612."""
    db = open_database(db_url)
    repo = JobRepository(db)
    first, _ = repo.create("t", {"n": 1}, timeout=0.1, retry_backoff=0.1)
    claimed = repo.claim("w")
    repo.fail(claimed.id, "boom", worker_id="w", attempt=claimed.attempt)
    repo.register_worker("w1", host="h", pid=7, queues=None, concurrency=2, stale_after=0.1)
    if is_postgres(db):
        narrow = [
            "ALTER TABLE jobs ALTER COLUMN id TYPE integer, ALTER COLUMN timeout TYPE real,"
            " ALTER COLUMN retry_backoff TYPE real",
            "ALTER SEQUENCE jobs_id_seq AS integer",
            "ALTER TABLE job_errors ALTER COLUMN id TYPE integer, ALTER COLUMN job_id TYPE integer",
            "ALTER SEQUENCE job_errors_id_seq AS integer",
            "ALTER TABLE workers ALTER COLUMN stale_after TYPE real",
        ]
        for statement in narrow:
            db.execute_sql(statement)
        assert column_types(db, "jobs")["id"] == "integer"  # the shape of version 14
        db.execute_sql("SELECT setval('jobs_id_seq', 2147483647)")  # a sequence keeps it: no transaction
        with pytest.raises(pw.DataError, match="maximum value"):  # what version 14 did at 2**31 jobs
            repo.create("t")
    db = reopened_at_version(db, db_url, 14)
    repo = JobRepository(db)
    kept = repo.find_by_id(first.id)
    assert (kept.payload, kept.status, kept.retry_count, kept.timeout, kept.retry_backoff) == (
        {"n": 1},
        "pending",
        1,
        0.1,
        0.1,
    )
    assert [error.error for error in repo.errors_for(first.id)] == ["boom"]
    assert repo.workers()[0].stale_after == 0.1
    if is_postgres(db):
        db.execute_sql("SELECT setval('job_errors_id_seq', 2147483647)")
    else:  # SQLite's next id is one past the largest
        db.execute_sql("UPDATE jobs SET id = 2147483647 WHERE id = ?", (repo.create("filler")[0].id,))
    big, _ = repo.create("t", {"n": 2}, max_retries=0)
    assert big.id > 2**31 - 1 and repo.find_by_id(big.id).payload == {"n": 2}
    held = repo.claim("w", types=["t"])
    while held.id != big.id:  # the first job, then the new one
        repo.complete(held.id, worker_id="w", attempt=held.attempt)
        held = repo.claim("w", types=["t"])
    failed = repo.fail(big.id, "past 32 bits", worker_id="w", attempt=held.attempt)
    assert failed.status == "failed"
    db.close()


def test_a_version_11_database_upgrades_to_12_its_queue_status_index_holding_no_pending_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for queue in ("a", "b", "a", "c"):
        repo.create("t", queue=queue)
    first = repo.claim("w", queues=["a"])
    repo.complete(first.id, worker_id="w", attempt=first.attempt)
    before = {job.id: (job.queue, job.status) for job in repo.list()}
    # Version 11's (queue, status) index on PostgreSQL held every job; SQLite never had one.
    full = ["DROP INDEX jobs_queue_status", "CREATE INDEX jobs_queue_status ON jobs (queue, status)"]
    db = reopened_at_version(db, db_url, 11, *(full if is_postgres(db) else []))
    repo = JobRepository(db)
    assert {job.id: (job.queue, job.status) for job in repo.list()} == before
    indexes = {index.name: index for index in db.get_indexes("jobs")}
    if is_postgres(db):
        index = indexes["jobs_queue_status"]
        assert index.columns == ["queue", "status"]
        assert "WHERE" in index.sql and "'pending'" in index.sql, index.sql
    else:
        assert "jobs_queue_status" not in indexes
    assert {state.name: (state.counts["pending"], state.counts["completed"]) for state in repo.queues()} == {
        "a": (1, 1),
        "b": (1, 0),
        "c": (1, 0),
    }
    db.close()


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("status", ["running", "completed", "failed", "cancelled"])
def test_reads_by_a_claimed_status_use_the_status_index_that_leaves_pending_jobs_out(repo, db, status):
    # SQLite uses a partial index only when the query's WHERE has the index's own term (status <> 'pending'):
    # Job.status == RUNNING writes it (models.StatusField). Without it each of these reads scanned every job.
    Job = repo.Job
    now = repo.now()
    reads = [
        Job.select().where(Job.status == status),
        Job.select(pw.SQL("1")).where(Job.status == status).limit(101),
        repo._prunable(status, now, 1000) if status != "running" else Job.select().where(repo._stale(now)),
        Job.select().where(Job.status.in_([status, "completed"]) & (Job.updated_at < Job.updated_at.to_value(now))),
    ]
    for query in reads:
        sql, params = query.sql()
        assert "!= 'pending'" in sql, sql
        plan = " / ".join(row[-1] for row in db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params))
        assert "jobs_status_updated" in plan, (sql, plan)
    # A set that holds pending jobs too does not claim to leave them out.
    sql, _ = Job.select().where(Job.status.in_(["pending", status])).sql()
    assert "!= 'pending'" not in sql, sql
    sql, _ = Job.select().where(Job.status == "pending").sql()
    assert "!= 'pending'" not in sql, sql


@pytest.mark.backends("sqlite")
def test_claim_query_uses_the_claim_index(repo, db):
    plan = db.execute_sql(
        "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE status = 'pending' AND run_at <= ? "
        "ORDER BY priority DESC, run_at, id LIMIT 1",
        ("2030-01-01",),
    ).fetchall()
    assert any("jobs_pending_claim" in row[-1] for row in plan), plan
    assert not any("TEMP B-TREE" in row[-1] for row in plan), plan


@pytest.mark.parametrize(
    "url",
    [
        "mysql://x/y",
        "sqlite://queue.db",
        "nonsense",
        "postgresql://localhost",
        "sqlite:///x.db?synchronous=off",
        "sqlite:///x.db?busy_timeout=soon",
        "sqlite:///x.db?cache=big",
        "sqlite:///x.db?page_size=1000",
        "sqlite:///x.db?page_size=131072",
        "sqlite:///x.db?page_size=2k",
        "sqlite:///x.db?wal_autocheckpoint=0",
        "sqlite:///x.db?wal_autocheckpoint=lots",
        "sqlite:///x.db?busy_timeout=5&busy_timeout=9000",  # which one won was the parser's detail
        "sqlite:///x.db?synchronous=full&SYNCHRONOUS=normal",
    ],
)
def test_bad_urls_say_what_to_fix(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # x.db, if a check came too late, would appear here
    with pytest.raises(DatabaseURLError) as info:
        open_database(url)
    message = str(info.value).lower()
    hints = ("sqlite:///", "postgresql://", "synchronous", "busy_timeout", "page_size", "wal_autocheckpoint")
    assert any(hint in message for hint in hints)
    assert not (tmp_path / "x.db").exists()


def test_default_url_from_environment(monkeypatch):
    monkeypatch.delenv("QUEUE_DB_URL", raising=False)
    assert default_url() == "sqlite:///queue.db"
    monkeypatch.setenv("QUEUE_DB_URL", "sqlite:///elsewhere.db")
    assert default_url() == "sqlite:///elsewhere.db"


def test_version_1_database_is_migrated_keeping_jobs(db_url):
    db = open_database(db_url)
    JobRepository(db).create("t", {"keep": True})
    db = reopened_at_version(db, db_url, 1, "DROP INDEX job_errors_created")
    assert "job_errors_created" in {index.name for index in db.get_indexes("job_errors")}
    assert JobRepository(db).list()[0].payload == {"keep": True}
    db.close()


def test_version_3_database_gets_a_unique_index_on_set_keys_only(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    keyed, _ = repo.create("t", {"n": 1}, idempotency_key="invoice-7")
    # Version 3's schema: the unique index held every row, NULL keys included.
    db = reopened_at_version(
        db,
        db_url,
        3,
        "DROP INDEX jobs_idempotency_key_set",
        "CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key)",
    )
    repo = JobRepository(db)
    indexes = {index.name: index for index in db.get_indexes("jobs")}
    assert "jobs_idempotency_key" not in indexes and indexes["jobs_idempotency_key_set"].unique
    again, created = repo.create("t", {"n": 1}, idempotency_key="invoice-7")
    assert not created and again.id == keyed.id
    with pytest.raises(pw.IntegrityError):  # the database itself still refuses a second row with the key
        repo.Job.insert(
            type="t",
            payload="{}",
            status="pending",
            idempotency_key="invoice-7",
            run_at=keyed.run_at,
            created_at=keyed.run_at,
            updated_at=keyed.run_at,
        ).execute()
    for _ in range(3):
        assert repo.create("t")[1]  # keyless jobs: no entry, no conflict
    assert repo.counts()["pending"] == 4
    db.close()


@pytest.mark.backends("sqlite")
def test_idempotency_look_ups_use_the_partial_index(repo, db):
    for sql, params in [
        ("SELECT id FROM jobs WHERE idempotency_key = ?", ("k",)),
        ("SELECT id FROM jobs WHERE idempotency_key IN (?, ?)", ("k", "l")),
    ]:
        plan = db.execute_sql("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        assert any("jobs_idempotency_key_set" in row[-1] for row in plan), plan


@pytest.mark.backends("sqlite")
def test_throughput_reads_job_errors_through_its_time_index(repo, db):
    plan = db.execute_sql(
        "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM job_errors WHERE created_at >= ?", ("2030-01-01",)
    ).fetchall()
    assert any("job_errors_created" in row[-1] for row in plan), plan


def _as_version_4(db) -> None:
    """Turn a current database back into schema version 4: no ``attempt`` column on jobs."""
    as_schema_version_5(db)
    db.execute_sql("ALTER TABLE jobs DROP COLUMN attempt")
    db.execute_sql("UPDATE queue_meta SET value = '4' WHERE key = 'schema_version'")


def test_version_4_database_gets_a_stored_attempt_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    running, _ = repo.create("t", {"keep": "running"}, max_retries=5)
    retried, _ = repo.create("t", {"keep": "retried"})
    fresh, _ = repo.create("never-claimed", {"keep": "fresh"})
    done, _ = repo.create("t", {"keep": "done"})
    assert [job.id for job in repo.claim_many("w1", 3, types=["t"])] == [running.id, retried.id, done.id]
    repo.complete(done.id)
    _as_version_4(db)
    # Version 4's token was retry_count: the running job is on its third attempt, as its worker knows it.
    db.execute_sql(f"UPDATE jobs SET retry_count = 2 WHERE id = {db.param}", (running.id,))
    # The retried job failed three times, then an operator retried it: retry_count 0, history up to 3.
    db.execute_sql(f"UPDATE jobs SET status = 'pending', worker_id = NULL WHERE id = {db.param}", (retried.id,))
    for attempt in (1, 2, 3):
        repo.JobError.create(job_id=retried.id, attempt=attempt, worker_id="w1", error="x", created_at=repo.now())
    db.close()

    db = open_database(db_url)
    repo = JobRepository(db)
    assert schema_version(db) == SCHEMA_VERSION
    assert {job.payload["keep"] for job in repo.list()} == {"running", "retried", "fresh", "done"}
    assert repo.find_by_id(running.id).attempt == 3
    # The worker still holding the running job acks with the attempt it was given (retry_count + 1).
    assert repo.complete(running.id, worker_id="w1", attempt=3).status == "completed"
    assert repo.find_by_id(done.id).attempt == 1
    assert repo.find_by_id(fresh.id).attempt == 0
    # The next claim of each job numbers its attempt above every attempt its history already holds.
    claimed = {job.id: job.attempt for job in repo.claim_many("w2", 10)}
    assert claimed == {retried.id: 4, fresh.id: 1}
    db.close()


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///:memory:",
        "sqlite://",
        "sqlite:///",
        "sqlite:///file::memory:",
        "sqlite:///file:jobs?mode=memory&cache=shared",
    ],
)
def test_an_in_memory_sqlite_database_is_refused(url, tmp_path, monkeypatch):
    # Issue 19 defect 14: each thread's connection got its own empty database ("no such table" for ever).
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatabaseURLError) as info:
        open_database(url)
    assert "file" in str(info.value) and "sqlite:///queue.db" in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("create", [True, False])
def test_a_directory_is_refused_saying_so(tmp_path, create):
    # It read "no database at ..." or "no queue tables in ...", as if the path were missing or empty.
    (tmp_path / "jobs").mkdir()
    with pytest.raises(DatabaseURLError) as info:
        open_database(f"sqlite:///{tmp_path / 'jobs'}", create=create)
    assert f"{tmp_path / 'jobs'}" in str(info.value) and "is a directory" in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == ["jobs"]  # no -wal or -shm beside it


@pytest.mark.parametrize("command", [["-m", "queue_core", "list"], ["-m", "queue_core.worker", "--burst"]])
def test_a_fifo_is_refused_not_waited_on_for_ever(tmp_path, command):
    # SQLite's open of a FIFO waits for a writer, retrying through signals: the command hung for good. In a
    # process of its own, so that the hang (the bug back) fails the test at the timeout instead of hanging it.
    os.mkfifo(tmp_path / "fifo")
    done = subprocess.run(
        [sys.executable, *command, "--db", "sqlite:///fifo"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr == (
        "error: fifo (sqlite:///fifo) is not a regular file: name a SQLite database file, e.g. sqlite:///queue.db\n"
    )


def test_a_file_that_is_not_sqlite_is_one_clear_error(tmp_path):
    # Issue 19 defect 12: a raw sqlite3.DatabaseError traceback before.
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(DatabaseURLError) as info:
        open_database(f"sqlite:///{path}")
    assert str(path) in str(info.value) and "not a database" in str(info.value)
    assert path.read_text().startswith("these are my notes")


@pytest.mark.parametrize("value", ["garbage", "", "4.5", "-1"])
def test_a_corrupt_schema_version_is_one_clear_error(db_url, value):
    db = open_database(db_url)
    db.execute_sql(f"UPDATE queue_meta SET value = {db.param} WHERE key = 'schema_version'", (value,))
    db.close()
    with pytest.raises(DatabaseURLError) as info:
        open_database(db_url)
    assert "schema_version" in str(info.value) and repr(value) in str(info.value)


@pytest.mark.backends("sqlite")
def test_opening_a_current_database_takes_no_write_lock(db_url, tmp_path):
    # "Also seen": read-only commands took the write lock to migrate, so they waited for (and then failed
    # behind) any writer. A current schema is only read.
    open_database(db_url).close()
    holder = sqlite3.connect(tmp_path / "queue.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        db = open_database(db_url + "?busy_timeout=2000")
        assert JobRepository(db).counts()["pending"] == 0
        assert time.monotonic() - started < 1.5
        db.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.backends("postgresql")
def test_opening_a_current_postgres_database_does_not_wait_for_a_migration_lock(db_url):
    import psycopg

    open_database(db_url).close()
    opened = []
    with psycopg.connect(db_url) as holder:  # a transaction holding the migration lock (another migrating opener)
        holder.execute("SELECT pg_advisory_xact_lock(7312450981)")
        opener = threading.Thread(target=lambda: opened.append(open_database(db_url)), daemon=True)
        opener.start()
        opener.join(3)
        assert opened, "open_database waited for the migration lock although the schema is current"
    opener.join(10)
    opened[0].close()


@pytest.mark.backends("sqlite")
def test_sqlite_statements_keep_peewee_errors_hooks_and_reconnects_on_the_lean_path(repo, db):
    # execute_sql goes straight to the connection (store.database.QueueSqliteDatabase): what peewee's own
    # path gave its callers must hold on it.
    repo.create("t", idempotency_key="k")
    with pytest.raises(pw.IntegrityError):  # an idempotency race is told apart by this class
        db.execute_sql(
            "INSERT INTO jobs (type, payload, priority, status, retry_count, max_retries, idempotency_key, "
            "created_at, updated_at, run_at, attempt, queue) VALUES ('t', '{}', 0, 'pending', 0, 3, 'k', "
            "'2026-01-01', '2026-01-01', '2026-01-01', 0, 'default')"
        )
    with pytest.raises(pw.OperationalError, match="syntax error"):
        db.execute_sql("SELEC 1")
    assert db.execute_sql("SELECT COUNT(*) FROM jobs").fetchone() == (1,)
    seen = []
    db.query_hooks.append(lambda event: seen.append(event.sql))  # peewee's query hooks see every statement
    try:
        repo.create("u")
    finally:
        db.query_hooks.clear()
    assert any(sql.startswith('INSERT INTO "jobs"') for sql in seen), seen
    db.close()  # the next statement opens this thread's connection again, as peewee's autoconnect does
    assert db.execute_sql("SELECT COUNT(*) FROM jobs").fetchone() == (2,)


@pytest.mark.parametrize(
    "option",
    ["busy_timeout=2147483648", "wal_autocheckpoint=99999999999", "busy_timeout=²", "page_size=²", "busy_timeout=-1"],
)
def test_a_sqlite_option_sqlite_cannot_hold_is_refused_not_read_as_zero(tmp_path, option):
    path = tmp_path / "q.db"
    with pytest.raises(DatabaseURLError) as info:
        open_database(f"sqlite:///{path}?{option}")
    assert option.split("=")[0] in str(info.value) and not path.exists()


@pytest.mark.parametrize(
    "url",
    ["postgresql://queue@[::1", "postgresql://queue:secret@[::1/queue", "postgresql://queue:secret@db:port/queue"],
)
def test_a_url_that_does_not_parse_is_one_error_with_the_password_hidden(url):
    with pytest.raises(DatabaseURLError) as info:
        open_database(url)
    assert "bad database URL" in str(info.value) and "secret" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://queue@127.0.0.1:1/queue?password=secret",  # libpq reads the password from the query too
        "postgresql://queue@127.0.0.1:1/queue?sslmode=disable&password=secret&connect_timeout=2",
        "postgresql://queue@127.0.0.1:1/queue?%70assword=secret",  # libpq decodes the name
        "postgresql://queue@127.0.0.1:1/queue?sslpassword=secret",  # the client key's
        "postgresql://queue:12#secret@127.0.0.1:1/queue",  # libpq's password; urlparse's port 12 and fragment
        "postgresql://queue:se?cret@127.0.0.1:1/queue",
        "postgres-ql://queue:secret@127.0.0.1:1/queue",  # a mistyped scheme
        "postgresq://queue@127.0.0.1:1/queue?password=secret",
    ],
)
def test_no_error_of_a_url_shows_its_password(url):
    """Wherever libpq finds a password in the URL, an error that names the URL (every entry point's
    "cannot open URL", "unsupported database URL") shows it as ***, never as given."""
    with pytest.raises(DatabaseURLError) as info:
        open_database(url)
    assert "secret" not in str(info.value) and "***" in str(info.value), str(info.value)
    assert "secret" not in without_password(url)
