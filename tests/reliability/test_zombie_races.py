"""A reap racing a completion, with the interleaving forced: the job ends in exactly one state."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


def test_complete_waits_for_a_reap_in_progress_then_loses(db_url, clock):
    reaper = JobRepository(open_database(db_url), clock=clock)
    worker = JobRepository(open_database(db_url), clock=clock)
    job, _ = reaper.create("t")
    claimed = worker.claim("zombie")
    clock.advance(600)

    inside_reap, release_reap = threading.Event(), threading.Event()
    record_error = reaper._record_error

    def paused_record_error(*args):
        record_error(*args)
        inside_reap.set()  # the reap holds its transaction open here
        assert release_reap.wait(10)

    reaper._record_error = paused_record_error
    reaped = []
    reap_thread = threading.Thread(target=lambda: reaped.append(reaper.reap_stale(timedelta(seconds=60))))
    reap_thread.start()
    assert inside_reap.wait(10)

    completed = []
    complete_thread = threading.Thread(
        target=lambda: completed.append(worker.complete(job.id, worker_id="zombie", attempt=claimed.attempt))
    )
    complete_thread.start()
    complete_thread.join(0.3)
    assert complete_thread.is_alive(), "complete must wait for the reap's transaction"
    release_reap.set()
    reap_thread.join(10)
    complete_thread.join(10)

    assert reaped == [1] and completed == [None]
    final = worker.find_by_id(job.id)
    assert final.status == "pending" and final.retry_count == 1


def test_reap_after_completion_finds_nothing(repo, clock):
    job, _ = repo.create("t")
    claimed = repo.claim("w")
    clock.advance(600)
    assert repo.complete(job.id, worker_id="w", attempt=claimed.attempt).status == "completed"
    assert repo.reap_stale(timedelta(seconds=60)) == 0
    assert repo.find_by_id(job.id).status == "completed"


def test_reaped_workers_late_ack_changes_nothing(repo, clock):
    job, _ = repo.create("t", max_retries=5)
    first = repo.claim("w1")
    clock.advance(600)
    repo.reap_stale(timedelta(seconds=60))
    second = repo.claim("w1")  # the same worker id claims it again (another thread of the same process)
    before = repo.find_by_id(job.id)
    assert repo.complete(job.id, worker_id="w1", attempt=first.attempt) is None
    assert repo.fail(job.id, "late", worker_id="w1", attempt=first.attempt) is None
    assert repo.release(job.id, worker_id="w1", attempt=first.attempt) is None
    after = repo.find_by_id(job.id)
    assert after.to_dict() == before.to_dict()
    assert repo.complete(job.id, worker_id="w1", attempt=second.attempt).status == "completed"


@pytest.mark.parametrize("ended_by", ["reap", "operator_fail"])
def test_operator_retry_then_reclaim_by_the_same_worker_fences_the_hung_threads_late_ack(repo, clock, ended_by):
    # Issue 19 defect 2 / issue 13 item 5: a thread of worker w1 hangs on a job; the job ends failed (reaped,
    # or failed by an operator); the operator retries it (retry_count back to 0); another thread of w1
    # claims it. The hung thread's late ack, naming its own attempt, must not touch the new claim.
    job, _ = repo.create("t", max_retries=0)
    hung = repo.claim("w1")
    clock.advance(600)
    if ended_by == "reap":
        assert repo.reap_stale(timedelta(seconds=60)) == 1
    else:
        assert repo.fail(job.id, "stopped by an operator").status == "failed"
    assert repo.find_by_id(job.id).status == "failed"
    assert repo.retry(job.id).retry_count == 0
    fresh = repo.claim("w1")
    assert fresh.id == job.id
    before = repo.find_by_id(job.id).to_dict()

    assert repo.complete(job.id, worker_id="w1", attempt=hung.attempt) is None
    assert repo.fail(job.id, "late", worker_id="w1", attempt=hung.attempt) is None
    assert repo.release(job.id, worker_id="w1", attempt=hung.attempt) is None
    done, following = repo.complete_and_claim(job.id, worker_id="w1", attempt=hung.attempt)
    assert (done, following) == (None, None)
    assert repo.find_by_id(job.id).to_dict() == before
    assert [e.attempt for e in repo.errors_for(job.id)] == [hung.attempt]
    assert fresh.attempt > hung.attempt

    assert repo.complete(job.id, worker_id="w1", attempt=fresh.attempt).status == "completed"
