"""Statements on jobs compare the status with literals, never with a bound value.

The claim's indexes hold pending jobs only (``WHERE status = 'pending'``: PostgreSQL since schema v3, SQLite
since v10). A planner that meets ``status = ?`` cannot prove such an index's WHERE from the SQL text:
PostgreSQL's generic plans then pass the index by, and SQLite compares the bound value instead and
re-prepares the statement each time that value is bound again. A one-slot worker's complete + claim, whose
held status ("running") was bound, ran at half speed on SQLite for it (5,500 -> 2,750 jobs a second),
and a 4-slot worker's batched acks 13 % slower. ``models.StatusField`` writes a known status as a literal.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from queue_core.store.overview import queue_overview
from queue_core.store.pages import PAGED_STATES, page

# A status column (qualified: "jobs"."status", "t1"."status", jobs.status) compared with a placeholder.
# An assignment (SET "status" = ?) is not qualified, and binds a value no planner looks at.
BOUND_STATUS = re.compile(r"\.\"?status\"?\s*(=|<>|!=|IN\s*\(|NOT IN\s*\()\s*(\?|%s)", re.IGNORECASE)


def test_the_pattern_finds_a_bound_status():
    # The check below can fail: these are the shapes the statements had before StatusField.
    assert BOUND_STATUS.search('WHERE (("jobs"."id" = ?) AND ("jobs"."status" = ?))')
    assert BOUND_STATUS.search('WHERE ("t1"."status" IN (%s, %s))')
    assert BOUND_STATUS.search("WHERE jobs.id = v.id AND jobs.status = ? AND jobs.worker_id = ?")
    assert not BOUND_STATUS.search('UPDATE "jobs" SET "status" = ? WHERE ("jobs"."status" = \'running\')')


@pytest.fixture
def statements_run(repo, monkeypatch):
    """The SQL text of every statement the repository sends, as it sends it."""
    seen: list[str] = []
    original = repo.db.execute_sql

    def spy(sql, params=None, *args, **kwargs):
        seen.append(sql)
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(repo.db, "execute_sql", spy)
    return seen


def test_every_statement_of_a_jobs_life_compares_the_status_with_literals(repo, statements_run, clock):
    ids = [job.id for job in repo.create_many([{"type": "t", "max_retries": 1} for _ in range(8)])]
    repo.create("t", idempotency_key="k")
    first = repo.claim("w", types=["t"])
    done, claimed = repo.complete_and_claim_many([(first.id, first.attempt, None)], 3, ["t"], worker_id="w")
    assert done and len(claimed) == 3
    # Several acks at once: the batched completion's own statement.
    done, more = repo.complete_and_claim_many([(j.id, j.attempt, {"ok": 1}) for j in claimed], 2, ["t"], worker_id="w")
    assert len(done) == 3 and len(more) == 2
    repo.heartbeat([j.id for j in more], worker_id="w")
    repo.cancel_requests([j.id for j in more], worker_id="w")
    repo.fail(more[0].id, "boom", worker_id="w", attempt=more[0].attempt)
    repo.release(more[1].id, worker_id="w", attempt=more[1].attempt)
    job = repo.claim("w")
    repo.complete(job.id, worker_id="w", attempt=job.attempt)
    assert repo.claim("v") is not None  # claimed by a worker that goes silent, taken back below
    clock.advance(seconds=600)
    assert repo.count_stale(timedelta(seconds=60)) == 1 and repo.reap_stale(timedelta(seconds=60)) == 1
    repo.cancel(ids[-1])
    final, _ = repo.create("final", max_retries=0)
    failing = repo.claim("w", types=["final"])
    assert repo.fail(failing.id, "boom", worker_id="w", attempt=failing.attempt).status == "failed"
    assert repo.retry(final.id).status == "pending"
    repo.counts()
    repo.counts(cap=100)
    repo.counts(type="t", cap=100)
    for status in ("pending", "running", "completed", "failed", "cancelled"):
        repo.window_rows(status)
        repo.window_rows(status, type="t")
        repo.list(status=status)
    repo.throughput()
    repo.queues()
    # The console's views: paged states (the scheduled one reads pending jobs through the claim index) and
    # the queues view (counts and each queue's oldest due job).
    for state in PAGED_STATES:
        page(repo, state)
        page(repo, state, type="t")
    assert queue_overview(repo, now=repo.now(), cap=100)
    clock.advance(seconds=3600)
    repo.prune(timedelta(seconds=60))
    bound = [sql for sql in statements_run if BOUND_STATUS.search(sql)]
    assert not bound, bound
    assert any("status" in sql for sql in statements_run)  # the spy saw the statements


def test_a_bound_value_that_is_no_status_stays_bound(repo):
    # Only the five statuses are written into the SQL; anything else is a parameter, as peewee binds it.
    Job = repo.Job
    sql, params = Job.select(Job.id).where(Job.status == "x' OR '1'='1").sql()
    assert params == ["x' OR '1'='1"] and "OR '1'" not in sql
    sql, params = Job.select(Job.id).where(Job.status.in_(["failed", "cancelled"])).sql()
    assert params == [] and "('cancelled', 'failed')" in sql
    assert [job.id for job in Job.select().where(Job.status == "pending")] == []
    repo.create("t")
    assert len(Job.select().where(Job.status.in_(["pending"]))) == 1
