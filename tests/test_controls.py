"""Issue 13 in the repository (both backends): named queues, pause and resume, cancel, and queues()."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queue_core import Queue
from queue_core.errors import IdempotencyConflict, ValidationError


def test_create_puts_a_job_in_a_queue_and_claim_limits_to_queues(repo):
    mail, _ = repo.create("t", queue="mail")
    plain, _ = repo.create("t")
    assert (mail.queue, plain.queue) == ("mail", "default")
    assert repo.claim("w", queues=["nothing-here"]) is None
    assert repo.claim("w", queues=["mail"]).id == mail.id
    assert repo.claim("w", queues=["mail", "default"]).id == plain.id


def test_claim_many_limits_to_queues_and_types_together(repo):
    jobs = [repo.create(t, queue=q)[0] for t, q in [("a", "x"), ("b", "x"), ("a", "y"), ("a", "x")]]
    claimed = repo.claim_many("w", 10, types=["a"], queues=["x"])
    assert [job.id for job in claimed] == [jobs[0].id, jobs[3].id]
    assert repo.claim_many("w", 10, queues=[]) == []


def test_idempotency_match_compares_the_queue(repo):
    first, _ = repo.create("t", {"a": 1}, idempotency_key="k", queue="mail")
    again, created = repo.create("t", {"a": 1}, idempotency_key="k", queue="mail")
    assert again.id == first.id and not created
    with pytest.raises(IdempotencyConflict):
        repo.create("t", {"a": 1}, idempotency_key="k", queue="other")


@pytest.mark.parametrize("name", ["", "   ", "x" * 256, "tab\there", "new\nline"])
def test_bad_queue_names_are_refused_naming_the_field_and_nothing_is_written(repo, name):
    with pytest.raises(ValidationError) as error:
        repo.create("t", queue=name)
    assert error.value.field == "queue"
    for action in (repo.pause_queue, repo.resume_queue):
        with pytest.raises(ValidationError) as error:
            action(name)
        assert error.value.field == "name"
    with pytest.raises(ValidationError) as error:
        repo.claim("w", queues=[name])
    assert error.value.field == "queues"
    assert repo.queues() == [] and sum(repo.counts().values()) == 0


@pytest.mark.parametrize("name", ["mail,sms", "mail=2", " mail", "mail "])
def test_a_new_job_refuses_a_queue_no_workers_queues_option_could_name(repo, tmp_path, name):
    # --queues mail=2,sms splits at "," and "=" and strips spaces: a job in "mail,sms" would be claimed by a
    # worker of every queue only. The rule is the create's; claims and pause still take any name, so jobs
    # a database already holds under such a name stay reachable.
    message = f"queue: {name!r} cannot be named by a worker's --queues NAME=N,...: use no ',' or '=' and no space"
    with pytest.raises(ValidationError) as error:
        repo.create("t", queue=name)
    assert error.value.field == "queue" and str(error.value).startswith(message)
    with pytest.raises(ValidationError) as error:
        repo.create_many([{"type": "t"}, {"type": "t", "queue": name}])
    assert error.value.field == "specs[1].queue"  # the batch writes none of its jobs
    assert sum(repo.counts().values()) == 0
    assert repo.pause_queue(name).paused and repo.resume_queue(name).paused is False
    assert repo.claim("w", queues=[name]) is None
    # The task API checks its options where they are written, with the same rule.
    queue = Queue(f"sqlite:///{tmp_path / 'tasks.db'}")
    with pytest.raises(ValidationError) as error:
        queue.task("t", queue=name)
    assert error.value.field == "queue"


def test_a_paused_queue_is_skipped_by_claim_claim_many_and_complete_and_claim(repo):
    paused, _ = repo.create("t", queue="mail", priority=9)
    other, _ = repo.create("t")
    runner, _ = repo.create("t", queue="mail", priority=9)
    held = repo.claim("w", queues=["mail"])
    assert held.id == paused.id
    state = repo.pause_queue("mail")
    assert state.paused and state.name == "mail"
    assert repo.claim("w", queues=["mail"]) is None
    assert [job.id for job in repo.claim_many("w2", 10)] == [other.id]
    # The running job of a paused queue still finishes; the claim half skips the paused queue (its job of a
    # higher priority) and takes the next job of another.
    extra, _ = repo.create("t")
    done, following = repo.complete_and_claim(held.id, worker_id="w", attempt=held.attempt)
    assert done.status == "completed" and following.id == extra.id
    last, _ = repo.create("t", queue="mail", priority=9)
    done, claimed = repo.complete_and_claim_many([(following.id, following.attempt, None)], 2, worker_id="w")
    assert done == [(following.id, following.attempt)] and claimed == []  # both jobs left are in the paused queue
    assert repo.resume_queue("mail").paused is False
    assert [job.id for job in repo.claim_many("w", 3)] == [runner.id, last.id]


def test_pausing_an_unknown_queue_is_fine_and_holds_its_first_job(repo):
    assert repo.pause_queue("later").paused
    assert [(q.name, q.paused) for q in repo.queues()] == [("later", True)]
    repo.create("t", queue="later")
    assert repo.claim("w") is None
    repo.resume_queue("later")
    assert repo.claim("w").queue == "later"


def test_queues_counts_per_status_and_latency_of_the_oldest_due_job(repo, clock):
    repo.create("t", queue="mail")
    clock.advance(10)
    repo.create("t", queue="mail")
    repo.create("t", queue="mail", run_at=clock.now + timedelta(hours=1))  # not due: not in the latency
    repo.create("t")
    assert repo.claim("w", queues=["default"]) is not None
    clock.advance(5)
    states = {state.name: state for state in repo.queues()}
    assert list(states) == ["default", "mail"]
    assert states["mail"].counts == {"pending": 3, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
    assert states["mail"].latency == pytest.approx(15.0)
    assert states["default"].counts["running"] == 1 and states["default"].latency is None
    repo.pause_queue("empty")
    repo.resume_queue("empty")
    assert [state.name for state in repo.queues()] == ["default", "mail"]  # no jobs, not paused: not listed


def test_cancel_of_a_pending_job_is_final_and_never_claimed(repo):
    job, _ = repo.create("t", run_at=repo.now() + timedelta(minutes=5))
    cancelled = repo.cancel(job.id)
    assert cancelled.status == "cancelled" and cancelled.cancel_requested_at is None
    assert repo.claim_many("w", 5) == []
    assert repo.cancel(job.id) is None  # already final: nothing changes
    assert repo.counts()["cancelled"] == 1


def test_cancel_of_unknown_or_final_jobs_is_none_and_changes_nothing(repo):
    assert repo.cancel(999) is None
    done, _ = repo.create("t")
    claimed = repo.claim("w")
    repo.complete(done.id, worker_id="w", attempt=claimed.attempt)
    before = repo.find_by_id(done.id)
    assert repo.cancel(done.id) is None
    assert repo.find_by_id(done.id).to_dict() == before.to_dict()


def test_cancel_of_a_running_job_records_a_request_its_worker_sees(repo, clock):
    job, _ = repo.create("t")
    other, _ = repo.create("t")
    claimed = repo.claim_many("w", 2)
    result = repo.cancel(job.id)
    assert result.status == "running" and result.cancel_requested and result.cancel_requested_at == clock.now
    clock.advance(3)
    assert repo.cancel(job.id).cancel_requested_at == result.cancel_requested_at  # the first request's time
    assert repo.cancel_requests([job.id, other.id], worker_id="w") == [job.id]
    assert repo.cancel_requests([job.id], worker_id="someone-else") == []
    assert repo.mark_cancelled(other.id, worker_id="w", attempt=claimed[1].attempt) is None  # no request
    assert repo.mark_cancelled(job.id, worker_id="w", attempt=claimed[0].attempt + 1) is None  # wrong attempt
    done = repo.mark_cancelled(job.id, worker_id="w", attempt=claimed[0].attempt)
    assert done.status == "cancelled"
    assert done.to_dict()["cancel_requested"] is True and done.to_dict()["queue"] == "default"


def test_complete_still_completes_a_job_with_a_cancel_request(repo):
    repo.create("t")
    job = repo.claim("w")
    repo.cancel(job.id)
    assert repo.complete(job.id, worker_id="w", attempt=job.attempt).status == "completed"


def test_fail_release_and_reap_of_a_cancel_requested_job_end_it_cancelled(repo, clock):
    for _ in range(3):
        repo.create("t", max_retries=5)
    failing, releasing, lost = repo.claim_many("w", 3)
    for job in (failing, releasing, lost):
        repo.cancel(job.id)
    failed = repo.fail(failing.id, "stopped", worker_id="w", attempt=failing.attempt)
    assert (failed.status, failed.retry_count, failed.error) == ("cancelled", 0, "stopped")
    assert repo.release(releasing.id, worker_id="w", attempt=releasing.attempt).status == "cancelled"
    clock.advance(60)
    assert repo.reap_stale(timedelta(seconds=30)) == 1
    assert repo.find_by_id(lost.id).status == "cancelled"
    assert repo.claim("w") is None  # none of them was re-queued
    assert repo.counts()["cancelled"] == 3


def test_release_without_a_request_still_requeues(repo):
    repo.create("t")
    job = repo.claim("w")
    assert repo.release(job.id, worker_id="w", attempt=job.attempt).status == "pending"


def test_retry_brings_a_cancelled_job_back_with_its_request_cleared(repo):
    repo.create("t")
    job = repo.claim("w")
    repo.cancel(job.id)
    repo.mark_cancelled(job.id, worker_id="w", attempt=job.attempt)
    again = repo.retry(job.id)
    assert again.status == "pending" and again.cancel_requested_at is None and not again.cancel_requested
    claimed = repo.claim("w")
    assert claimed.id == job.id and claimed.attempt == job.attempt + 1
    pending, _ = repo.create("t")
    assert repo.retry(pending.id) is None  # only failed or cancelled jobs


def test_prune_deletes_cancelled_jobs_too(repo, clock):
    job, _ = repo.create("t")
    repo.cancel(job.id)
    clock.advance(3600)
    assert repo.prune(timedelta(minutes=1)) == 1
    assert repo.find_by_id(job.id) is None


def test_window_lists_cancelled_jobs_most_recent_first(repo, clock):
    first, _ = repo.create("t")
    second, _ = repo.create("t")
    repo.cancel(first.id)
    clock.advance(1)
    repo.cancel(second.id)
    assert [job.id for job in repo.window("cancelled")] == [second.id, first.id]


@pytest.mark.backends("sqlite")
def test_a_cancel_request_is_stored_in_the_columns_fixed_width_time_format(repo, db):
    repo.create("t")
    job = repo.claim("w")
    repo.cancel(job.id)
    stored = db.execute_sql("SELECT cancel_requested_at, claimed_at FROM jobs").fetchone()
    assert len(stored[0]) == len(stored[1]) == len("2026-01-01 12:00:00.000000"), stored
