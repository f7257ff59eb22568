"""Schema version 6 (issue 13): a version 5 database upgraded in place with every job kept, and the claim
index serving a claim limited to queues (both backends)."""

from __future__ import annotations

import psycopg.sql
import pytest
from support import as_schema_version_5

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version


def test_version_5_database_gets_queues_cancel_and_the_registry_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    jobs = {name: repo.create("t", {"keep": name}, max_retries=0)[0] for name in ("running", "done", "failed", "fresh")}
    claimed = {job.payload["keep"]: job for job in repo.claim_many("w1", 3)}
    repo.complete(jobs["done"].id)
    repo.fail(jobs["failed"].id, "boom", worker_id="w1", attempt=claimed["failed"].attempt)
    before = {job.id: (job.status, job.attempt, job.retry_count, job.payload) for job in repo.list()}
    as_schema_version_5(db)
    assert "queue" not in {column.name for column in db.get_columns("jobs")}
    db.close()

    db = open_database(db_url)
    repo = JobRepository(db)
    assert schema_version(db) == SCHEMA_VERSION >= 6  # and on to the latest (v7: an index only)
    after = {job.id: (job.status, job.attempt, job.retry_count, job.payload) for job in repo.list()}
    assert after == before
    assert {(job.queue, job.cancel_requested_at, job.result, job.timeout) for job in repo.list()} == {
        ("default", None, None, None)
    }
    # The worker still holding the running job acks it with the attempt it was given before the upgrade.
    running = claimed["running"]
    assert repo.complete(running.id, worker_id="w1", attempt=running.attempt).status == "completed"
    # The new tables work on the upgraded database.
    assert repo.pause_queue("default").paused and repo.claim("w2") is None
    repo.resume_queue("default")
    repo.register_worker("w2", host="h", pid=1, queues=None, concurrency=1, stale_after=5)
    assert [worker.id for worker in repo.workers()] == ["w2"]
    assert repo.cancel(jobs["fresh"].id).status == "cancelled"
    db.close()
    # Opening again is a no-op: the version is current.
    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION and len(JobRepository(db).list()) == 4
    db.close()


def queue_limited_claim(repo, queues):
    """The SQL and parameters of the claim statement limited to ``queues``, as the repository runs it."""
    now = repo.time.sql()
    statements = repo.statements
    return statements.claim_query("w", statements.due(1, None, queues, now), now).sql()


@pytest.mark.backends("sqlite")
def test_sqlite_serves_a_queue_limited_claim_from_the_queue_claim_index(repo, db):
    sql, params = queue_limited_claim(repo, ["mail"])
    plan = db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    details = [row[-1] for row in plan]
    assert any("jobs_queue_claim" in detail for detail in details), details
    assert not any("TEMP B-TREE" in detail for detail in details), details


@pytest.mark.backends("postgresql")
def test_postgres_serves_a_queue_limited_claim_from_the_pending_queue_index_even_as_a_generic_plan(repo, db):
    # Many pending jobs in another queue: reading jobs_pending_claim and filtering would read them all.
    db.execute_sql(
        "INSERT INTO jobs (type, payload, priority, status, retry_count, max_retries, created_at, updated_at, run_at) "
        "SELECT 't', '{}', 0, 'pending', 0, 3, now(), now(), now() FROM generate_series(1, 5000)"
    )
    repo.create("t", queue="mail")
    db.execute_sql("ANALYZE jobs")
    sql, params = queue_limited_claim(repo, ["mail"])
    for number in range(1, len(params) + 1):
        sql = sql.replace("%s", f"${number}", 1)
    db.execute_sql("SET plan_cache_mode = force_generic_plan")
    db.execute_sql(f"PREPARE queue_claim AS {sql}")
    arguments = psycopg.sql.SQL(", ").join(map(psycopg.sql.Literal, params)).as_string(db.connection())
    plan = "\n".join(row[0] for row in db.execute_sql(f"EXPLAIN EXECUTE queue_claim({arguments})").fetchall())
    assert "jobs_pending_queue_claim" in plan and "LockRows" in plan, plan
