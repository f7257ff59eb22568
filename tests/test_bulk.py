"""Bulk actions in the repository (both backends): the plan is the dry run, the apply touches only the plan,
and a job that changed state between them is skipped and counted."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from queue_core.errors import ValidationError
from queue_core.store import bulk
from queue_core.store.bulk import BULK_ACTIONS, ELIGIBLE, BulkOutcome
from queue_core.store.query import QueryError


def failed_job(repo, type="t", error="boom", **options):
    job, _ = repo.create(type, max_retries=0, **options)
    claimed = repo.claim("w", types=[type])
    assert claimed.id == job.id
    return repo.fail(job.id, error, worker_id="w", attempt=claimed.attempt)


def test_plan_is_the_dry_run_and_retry_applies_it(repo):
    failed = [failed_job(repo, "send-invoice") for _ in range(3)]
    other = failed_job(repo, "other")
    pending, _ = repo.create("send-invoice")
    plan = repo.plan_bulk("retry", "type:send-invoice")
    assert list(plan.ids) == [job.id for job in failed]
    assert list(plan.attempts) == [1, 1, 1]
    assert plan.count == 3
    assert plan.describe() == "3 failed/cancelled jobs matching type:send-invoice"
    assert repo.counts()["failed"] == 4  # planning wrote nothing

    outcome = repo.apply_bulk(plan)
    assert outcome == BulkOutcome("retry", 3, 3, 0, False)
    for job in failed:
        again = repo.find_by_id(job.id)
        assert (again.status, again.retry_count, again.worker_id, again.attempt) == ("pending", 0, None, 1)
    assert repo.find_by_id(other.id).status == "failed"
    assert repo.find_by_id(pending.id).status == "pending"


@pytest.mark.parametrize(
    ("action", "query", "status", "said"),
    [
        (
            "retry",
            "status:completed",
            None,
            "0 completed jobs matching status:completed; retry takes no completed jobs",
        ),
        ("cancel", "", "completed", "0 completed jobs; cancel takes no completed jobs"),
        (
            "delete",
            "status:running",
            None,
            "0 running jobs matching status:running; delete takes no running jobs",
        ),
        ("cancel", "", "scheduled", "0 scheduled jobs"),  # a scheduled job is pending: cancel takes it
        ("retry", "status:failed", None, "0 failed jobs matching status:failed"),
    ],
)
def test_a_plan_of_a_status_its_action_does_not_take_says_so(repo, action, query, status, said):
    # "would retry 0 completed jobs matching status:completed" read as if no job were completed.
    repo.create("t")
    claimed = repo.claim("w", types=["t"])
    repo.complete(claimed.id, worker_id="w", attempt=claimed.attempt)
    repo.create("t")
    repo.claim("w", types=["t"])
    assert repo.plan_bulk(action, query, status=status).describe() == said


def test_a_job_that_changed_since_the_plan_is_skipped_and_counted(repo):
    jobs = [failed_job(repo) for _ in range(4)]
    plan = repo.plan_bulk("retry", status="failed")
    # Between the dry run and the confirmation: one retried by hand and claimed again (a new attempt),
    # one retried and failed again (same status, new attempt), one deleted.
    repo.retry(jobs[0].id)
    assert repo.claim("w").id == jobs[0].id
    repo.retry(jobs[1].id)
    claimed = repo.claim("w")
    repo.fail(claimed.id, "again", worker_id="w", attempt=claimed.attempt)
    repo.bulk("delete", f"id:{jobs[2].id}")
    outcome = repo.apply_bulk(plan, batch_size=1)
    assert (outcome.planned, outcome.changed, outcome.skipped) == (4, 1, 3)
    assert repo.find_by_id(jobs[0].id).status == "running"
    assert (repo.find_by_id(jobs[1].id).status, repo.find_by_id(jobs[1].id).attempt) == ("failed", 2)
    assert repo.find_by_id(jobs[3].id).status == "pending"


def test_a_job_that_changed_status_within_the_eligible_ones_is_skipped_too(repo):
    failed = failed_job(repo)
    plan = repo.plan_bulk("delete", status="failed")
    assert list(plan.statuses) == [3]  # failed, as an index of STATUSES
    repo.retry(failed.id)  # pending now, on the same attempt: still a status delete takes
    outcome = repo.apply_bulk(plan)
    assert (outcome.changed, outcome.skipped) == (0, 1)
    assert repo.find_by_id(failed.id).status == "pending"


def test_selection_limits_the_plan_to_the_ids_given(repo):
    jobs = [failed_job(repo) for _ in range(5)]
    chosen = [jobs[1].id, jobs[3].id, 10_000]
    plan = repo.plan_bulk("delete", "", ids=chosen)
    assert list(plan.ids) == [jobs[1].id, jobs[3].id]
    repo.apply_bulk(plan)
    assert sorted(job.id for job in repo.list()) == [jobs[0].id, jobs[2].id, jobs[4].id]


def test_a_large_selection_is_planned_by_its_range_and_cut_to_its_ids(repo, monkeypatch):
    monkeypatch.setattr(bulk, "PLAN_CHUNK", 2)  # what counts as large
    jobs = [failed_job(repo) for _ in range(6)]
    chosen = [jobs[1].id, jobs[2].id, jobs[4].id, 10_000]
    plan = repo.plan_bulk("retry", "", ids=chosen)
    assert list(plan.ids) == chosen[:3] and list(plan.attempts) == [1, 1, 1] and list(plan.statuses) == [3, 3, 3]
    assert repo.apply_bulk(plan).changed == 3
    statuses = [repo.find_by_id(job.id).status for job in jobs]
    assert statuses == ["failed", "pending", "pending", "failed", "pending", "failed"]


def test_a_plan_cut_down_with_replace_keeps_its_fence(repo):
    jobs = [failed_job(repo) for _ in range(3)]
    plan = repo.plan_bulk("retry")
    cut = replace(plan, ids=plan.ids[1:], attempts=plan.attempts[1:])  # statuses left as they were
    repo.retry(jobs[2].id)
    outcome = repo.apply_bulk(cut)
    assert (outcome.planned, outcome.changed, outcome.skipped) == (2, 1, 1)
    assert repo.find_by_id(jobs[0].id).status == "failed"
    with pytest.raises(ValidationError):
        repo.apply_bulk(replace(plan, attempts=plan.attempts[1:]))


def test_cancel_cancels_pending_and_requests_running(repo):
    running, _ = repo.create("t")
    assert repo.claim("w").id == running.id
    pending, _ = repo.create("t")
    already, _ = repo.create("t")
    repo.cancel(already.id)
    outcome = repo.bulk("cancel", "")
    assert (outcome.planned, outcome.changed, outcome.skipped) == (2, 2, 0)
    running = repo.find_by_id(running.id)
    assert (running.status, running.cancel_requested) == ("running", True)
    assert repo.find_by_id(pending.id).status == "cancelled"


def test_delete_removes_the_jobs_and_their_errors_but_never_running_ones(repo):
    failed = failed_job(repo)
    running, _ = repo.create("t")
    repo.claim("w")
    outcome = repo.bulk("delete", "")
    assert (outcome.planned, outcome.changed) == (1, 1)
    assert repo.find_by_id(failed.id) is None and repo.errors_for(failed.id) == []
    assert repo.find_by_id(running.id).status == "running"


def test_dry_run_writes_nothing(repo):
    failed_job(repo)
    outcome = repo.bulk("retry", "", dry_run=True)
    assert (outcome.planned, outcome.changed, outcome.skipped) == (1, 0, 0)
    assert repo.counts()["failed"] == 1


def test_on_batch_reports_progress_and_false_stops_after_that_batch(repo):
    for _ in range(5):
        failed_job(repo)
    seen = []

    def on_batch(progress):
        seen.append((progress.done, progress.changed))
        return len(seen) < 2

    outcome = repo.apply_bulk(repo.plan_bulk("retry"), batch_size=2, on_batch=on_batch)
    assert seen == [(2, 2), (4, 4)]
    assert (outcome.changed, outcome.stopped) == (4, True)
    assert repo.counts()["failed"] == 1


def test_scheduled_view_status_takes_only_future_pending_jobs(repo, clock):
    later, _ = repo.create("t", run_at=clock() + timedelta(hours=1))
    repo.create("t")
    assert list(repo.plan_bulk("cancel", status="scheduled").ids) == [later.id]


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (("explode", ""), {}, ValidationError),
        (("retry", "colour:red"), {}, QueryError),
        (("retry", ""), {"status": "lost"}, ValidationError),
        (("retry", ""), {"ids": ["7"]}, ValidationError),
        # Past a 64-bit id: SQLite raised OverflowError, PostgreSQL planned nothing.
        (("retry", ""), {"ids": [2**63]}, ValidationError),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(repo, args, kwargs, error):
    failed_job(repo)
    with pytest.raises(error):
        repo.bulk(*args, **kwargs)
    assert repo.counts()["failed"] == 1


def test_every_action_has_its_eligible_statuses():
    assert set(ELIGIBLE) == set(BULK_ACTIONS)
    assert "running" not in ELIGIBLE["delete"]


def test_a_large_selection_keeps_the_planned_status_in_its_fence(repo, monkeypatch):
    # A selection larger than PLAN_CHUNK is planned by its id range and cut down to the selected ids: the cut
    # must keep each job's planned status, or "delete 2 failed jobs" deletes one retried by hand since
    # (pending now, on the same attempt).
    from queue_core.store import bulk as store_bulk

    monkeypatch.setattr(store_bulk, "PLAN_CHUNK", 1)
    jobs = [failed_job(repo) for _ in range(3)]
    plan = repo.plan_bulk("delete", status="failed", ids=[jobs[0].id, jobs[1].id])
    assert list(plan.ids) == [jobs[0].id, jobs[1].id]
    repo.retry(jobs[1].id)

    outcome = repo.apply_bulk(plan)

    assert (outcome.changed, outcome.skipped) == (1, 1)
    assert repo.find_by_id(jobs[1].id).status == "pending"
