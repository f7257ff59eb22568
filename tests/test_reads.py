"""queue_core.store.reads: the read model's own rules (the rest is exercised in test_repository)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from support import sqlite_plan, statements_run

from queue_core.store.query import parse_query
from queue_core.store.search import in_window_order


def test_refusal_says_why_an_ack_would_match_nothing(repo):
    pending, _ = repo.create("t")
    assert repo.refusal(424242) == "no job with id 424242"
    assert repo.refusal(pending.id) == "it is pending, not running"
    job = repo.claim("w1")
    assert repo.refusal(job.id) is None
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt) is None
    assert repo.refusal(job.id, worker_id="w2") == "it is held by worker 'w1', not 'w2'"
    # An attempt after the job's last never happened: not "over" (the message said so once).
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt + 4) == (
        f"the job has had 1 attempt: attempt {job.attempt + 4} never started"
    )
    # Each reason is the one the ack itself ran into: what refusal says None to, the ack accepts.
    assert repo.complete(job.id, worker_id="w2") is None and repo.refusal(job.id, worker_id="w2") is not None
    assert repo.complete(job.id, worker_id="w1", attempt=job.attempt) is not None
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt) == "it is completed, not running"


def test_refusal_of_an_attempt_that_is_over(repo):
    job, _ = repo.create("t")
    first = repo.claim("w1")
    repo.release(first.id, worker_id="w1", attempt=first.attempt)
    second = repo.claim("w1")
    assert second.attempt == 2
    assert repo.refusal(job.id, worker_id="w1", attempt=1) == "attempt 1 is over; the job is now on attempt 2"


def test_the_running_window_puts_the_longest_silent_first(repo, clock):
    first, _ = repo.create("t")
    second, _ = repo.create("t")
    third, _ = repo.create("t")
    repo.claim("w")  # first
    clock.advance(10)
    repo.claim("w")  # second
    clock.advance(10)
    repo.claim("w")  # third
    clock.advance(10)
    repo.heartbeat([first.id], worker_id="w")  # claimed first, but the latest sign of life now
    order = [second.id, third.id, first.id]
    assert [job.id for job in repo.window("running")] == order
    assert [row.id for row in repo.window_rows("running")] == order


def test_capped_counts_and_window_rows_replay_their_statement_with_each_type(repo):
    # Both are compiled once per shape and replayed: the type is a bound value, never the first one's.
    for type_, n in (("a", 3), ("b", 1)):
        for _ in range(n):
            repo.create(type_)
    repo.claim("w", types=["a"])
    for _ in range(2):  # the second pass replays the statements compiled by the first
        assert repo.counts(type="a", cap=10) == {**repo.counts(cap=10), "pending": 2, "running": 1}
        assert repo.counts(type="b", cap=10)["pending"] == 1 and repo.counts(type="b", cap=10)["running"] == 0
        assert repo.counts(cap=2)["pending"] == 3  # more than the cap reads as cap + 1
        assert [row.type for row in repo.window_rows("pending", type="a")] == ["a", "a"]
        assert [row.type for row in repo.window_rows("pending", type="b")] == ["b"]
        assert len(repo.window_rows("pending")) == 3


def test_the_pending_window_lists_due_jobs_in_claim_order_then_later_ones_soonest_first(repo, clock):
    # A critical job due in a minute runs after every due job, whatever its priority: the Pending table
    # reads in the order the jobs will run, so it lists it below them (it once sat on top).
    now = clock.now
    later_critical, _ = repo.create("a", priority="critical", run_at=now + timedelta(seconds=60))
    soon_low, _ = repo.create("b", priority="low", run_at=now + timedelta(seconds=20))
    due_low, _ = repo.create("a", priority="low")
    due_high, _ = repo.create("b", priority="high")
    due_low_too, _ = repo.create("a", priority="low")
    run_order = [due_high.id, due_low.id, due_low_too.id, soon_low.id, later_critical.id]
    assert [row.id for row in repo.window_rows("pending")] == run_order
    assert [job.id for job in repo.window("pending")] == run_order
    # Claims take the due jobs in that order, and none of the later ones.
    assert [repo.claim("w").id for _ in range(3)] + [repo.claim("w")] == [*run_order[:3], None]
    clock.advance(30)  # soon_low is due now: it leads, the critical job still waits
    assert [row.id for row in repo.window_rows("pending")] == [soon_low.id, later_critical.id]


def test_the_pending_window_reads_later_jobs_only_when_the_due_ones_leave_room(repo, clock):
    now = clock.now
    later, _ = repo.create("a", priority="critical", run_at=now + timedelta(seconds=60))
    due = [repo.create("a")[0].id for _ in range(3)]
    assert [row.id for row in repo.window_rows("pending", limit=3)] == due
    assert [row.id for row in repo.window_rows("pending", limit=4)] == [*due, later.id]
    assert [row.id for row in repo.window_rows("pending", limit=2, now=now + timedelta(seconds=61))] == [
        later.id,
        due[0],
    ]


def test_the_pending_window_narrowed_by_type_and_query_keeps_the_run_order(repo, clock):
    now = clock.now
    later_a, _ = repo.create("a", priority="critical", run_at=now + timedelta(seconds=60))
    later_b, _ = repo.create("b", priority="critical", run_at=now + timedelta(seconds=30))
    due_a, _ = repo.create("a")
    due_b, _ = repo.create("b", priority="high")
    due_a_too, _ = repo.create("a")
    of_a = [due_a.id, due_a_too.id, later_a.id]
    assert [row.id for row in repo.window_rows("pending", type="a")] == of_a
    where = parse_query("type:a").condition(repo)
    assert [row.id for row in repo.window_rows("pending", where=where)] == of_a
    assert repo.window_rows("pending", type="b", where=where) == []
    # A search's matches, ordered in memory, take the order the SQL gives.
    rows = repo.window_rows("pending")
    assert [row.id for row in rows] == [due_b.id, due_a.id, due_a_too.id, later_b.id, later_a.id]
    shuffled = sorted(rows, key=lambda row: -row.id)
    assert [row.id for row in in_window_order(shuffled, "pending", now)] == [row.id for row in rows]


@pytest.mark.backends("sqlite")  # EXPLAIN QUERY PLAN; PostgreSQL's planner goes by its statistics
def test_the_pending_windows_due_filter_leaves_sqlites_choice_of_index_as_it_was(repo):
    # Regression: "run_at <= now" as a plain range made jobs_type_due look the narrower for a type, and
    # SQLite read and sorted every due job of that type (a temp B-tree) where the claim index gives the
    # first ones in claim order; the same for a query naming a type.
    repo.create("a")
    with statements_run(repo, lambda sql: sql.startswith("SELECT") and "ORDER BY" in sql) as executed:
        repo.window_rows("pending", type="a", limit=1)
        repo.window_rows("pending", where=parse_query("type:a").condition(repo), limit=1)
    assert len(executed) == 2
    for sql, params in executed:
        plan = sqlite_plan(repo, sql, params)
        assert "jobs_pending_claim" in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.backends("sqlite")  # EXPLAIN QUERY PLAN; PostgreSQL's planner goes by its statistics
def test_a_list_page_of_a_common_status_or_type_walks_the_primary_key_not_every_job_of_it(repo, monkeypatch):
    # Regression: `list --status completed` (and GET /jobs?status=completed) read every completed job through
    # the status index and sorted them all by id for each page: 0.2-0.3 s of CPU a page at a million jobs,
    # ~880 pages of 1,000 to page through them. A page of a status (or type) with more jobs than the cap
    # walks the primary key from `after` until the page is full; one with fewer still uses its index.
    from queue_core.store import reads

    monkeypatch.setattr(reads, "LIST_SORT_CAP", 5, raising=False)
    repo.create_many([{"type": "common"} for _ in range(8)] + [{"type": "rare"} for _ in range(2)])

    def plan_of(listing):
        with statements_run(repo, lambda sql: sql.startswith("SELECT") and 'ORDER BY "t1"."id"' in sql) as executed:
            ids = [job.id for job in listing()]
        (sql, params), *_ = executed
        return ids, sqlite_plan(repo, sql, params)

    ids, plan = plan_of(lambda: repo.list("pending", limit=3, after=2))
    assert ids == [3, 4, 5] and "TEMP B-TREE" not in plan, plan
    ids, plan = plan_of(lambda: repo.list(type="common", limit=3, after=6))
    assert ids == [7, 8] and "TEMP B-TREE" not in plan, plan
    ids, plan = plan_of(lambda: repo.list("pending", "rare", limit=3))
    assert ids == [9, 10] and "jobs_type_due" in plan, plan  # 2 jobs: its index, not a walk of the table
