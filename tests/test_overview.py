"""queue_core.store.overview (the console's queues view) and the scheduled page's merge of priority levels,
both backends: bounded reads that must still say exactly what the whole table says, up to their caps."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from support import reopened_at_version

from queue_core.store.database import open_database
from queue_core.store.models import is_postgres
from queue_core.store.overview import queue_names, queue_overview
from queue_core.store.pages import page
from queue_core.store.repository import JobRepository


def finish(repo, clock, queue, *, ok=True):
    job, _ = repo.create("t", queue=queue)
    claimed = repo.claim("w", queues=[queue])
    assert claimed.id == job.id
    if ok:
        repo.complete(job.id, worker_id="w", attempt=claimed.attempt)
    else:
        repo.fail(job.id, "boom", worker_id="w", attempt=claimed.attempt)
    return job


def test_every_queue_with_its_capped_counts_latency_and_rates(repo, clock):
    for _ in range(3):
        finish(repo, clock, "mail")
    finish(repo, clock, "mail", ok=False)
    finish(repo, clock, "bills")
    clock.advance(30)
    repo.create("t", queue="bills", priority=0)  # due first, lower priority: still the oldest
    clock.advance(10)
    repo.create("t", queue="bills", priority=20)
    repo.create("t", queue="bills", run_at=repo.now() + timedelta(hours=1))  # not due: no latency
    repo.pause_queue("idle")
    clock.advance(20)
    rows = {row.name: row for row in queue_overview(repo, now=repo.now(), cap=2)}
    assert list(rows) == ["bills", "idle", "mail"]
    assert rows["mail"].counts["completed"] == 3  # cap 2: "more than 2"
    assert rows["bills"].counts["pending"] == 3 and rows["idle"].counts["pending"] == 0
    assert rows["bills"].latency == 30.0  # its priority-0 job, created 30 s ago
    assert rows["idle"].latency is None and rows["idle"].paused and not rows["bills"].paused
    assert rows["mail"].done_per_minute == 3 / 5 and rows["bills"].done_per_minute == 1 / 5
    assert rows["mail"].failed_per_minute == 1 / 5 and rows["bills"].failed_per_minute == 0


def test_queue_names_come_from_the_jobs_by_seeks(repo, clock):
    for name in ("b", "a", "c", "a"):
        repo.create("t", queue=name)
    assert queue_names(repo) == ["a", "b", "c"]
    assert queue_names(repo, limit=2) == ["a", "b"]


def test_scheduled_pages_merge_priority_levels_in_run_at_order(repo, clock):
    now = repo.now()
    ids = {}
    for minutes, priority in ((5, 0), (1, 30), (3, 10), (2, 0), (4, 30), (6, 10)):
        job, _ = repo.create("t", priority=priority, run_at=now + timedelta(minutes=minutes))
        ids[minutes] = job.id
    repo.create("t", priority=30)  # due now: not scheduled
    seen, after = [], None
    while True:
        current = page(repo, "scheduled", after=after, limit=4)
        seen += [row.id for row in current.rows]
        if current.next_after is None:
            break
        after = current.next_after
    assert seen == [ids[minutes] for minutes in sorted(ids)]


def test_schema_v7_gives_each_backend_an_index_that_leads_with_queue_and_status(repo):
    """The queue overview's seeks need one: SQLite's full queue claim index (v6), PostgreSQL's v7 index."""
    indexes = {index.name: index.columns for index in repo.db.get_indexes("jobs")}
    name = "jobs_queue_status" if is_postgres(repo.db) else "jobs_queue_claim"
    assert indexes[name][:2] == ["queue", "status"]


def test_a_version_6_database_upgrades_to_7_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    for queue in ("a", "b", "a"):
        repo.create("t", queue=queue)
    before = {job.id: (job.queue, job.status) for job in repo.list()}
    db = reopened_at_version(db, db_url, 6, "DROP INDEX IF EXISTS jobs_queue_status")
    assert {job.id: (job.queue, job.status) for job in JobRepository(db).list()} == before
    assert ("jobs_queue_status" in {index.name for index in db.get_indexes("jobs")}) == is_postgres(db)
    db.close()


def test_queue_names_and_counts_see_queues_of_pending_jobs_only_and_of_finished_jobs_only(repo, clock):
    # PostgreSQL keeps a queue's pending jobs and its other jobs in two partial indexes (schema v6, v12):
    # a queue whose jobs are all in one of them is still found and counted.
    repo.create("t", queue="waiting")
    finish(repo, clock, "done")
    finish(repo, clock, "both")
    repo.create("t", queue="both")
    assert queue_names(repo) == ["both", "done", "waiting"]
    assert queue_names(repo, limit=2) == ["both", "done"]
    zero = {"pending": 0, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
    expected = {"both": {**zero, "pending": 1, "completed": 1}, "done": {**zero, "completed": 1}}
    expected["waiting"] = {**zero, "pending": 1}
    assert {state.name: state.counts for state in repo.queues()} == expected
    assert {name: repo.queue_state(name).counts for name in expected} == expected
    rows = {row.name: row.counts for row in queue_overview(repo, now=repo.now(), cap=10)}
    assert rows == expected


@pytest.mark.backends("postgresql")
def test_the_queue_reads_on_postgresql_seek_their_partial_indexes(repo, db, clock, monkeypatch):
    # Every read of the queues view and of one queue's state names the status set it reads, so that each
    # is a range of jobs_pending_queue_claim or jobs_queue_status (partial since v12), never a scan.
    repo.create_many([{"type": "t", "queue": f"q{i % 20:02d}"} for i in range(4000)])
    db.execute_sql("UPDATE jobs SET status = 'completed' WHERE mod(id, 2) = 0")
    db.execute_sql("ANALYZE jobs")
    statements = []
    original = db.execute_sql

    def spy(sql, params=None, *args, **kwargs):
        if sql.startswith("SELECT") and 'FROM "jobs"' in sql and "job_errors" not in sql:
            statements.append((sql, params))
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(db, "execute_sql", spy)
    queue_overview(repo, now=repo.now(), cap=100)
    repo.queue_state("q07")
    monkeypatch.undo()
    assert len(statements) > 20
    for sql, params in statements:
        if "updated_at" in sql and "GROUP BY" in sql:
            continue  # the rates: the recent range of jobs_status_updated, not a queue read
        plan = "\n".join(row[0] for row in db.execute_sql(f"EXPLAIN {sql}", params).fetchall())
        assert not re.search(r"Seq Scan on jobs\b", plan), (sql, plan)
