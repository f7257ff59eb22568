"""A reap racing a completion, with the interleaving forced: the job ends in exactly one state."""

from __future__ import annotations

import threading
from datetime import timedelta

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
