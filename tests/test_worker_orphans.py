"""A claim whose reply was lost (it committed, then raised): the jobs it took are released, never left to the
reaper to count a retry for a job that never ran, and a job another claim of the worker took is never released.
"""

from __future__ import annotations

import re
import threading
import time

import peewee as pw
import pytest
from worker_support import WAIT

from queue_core.store.repository import JobRepository


class LostReply(JobRepository):
    """A repository whose claim commits, then raises (the connection dropped before its reply) when it took
    ``job_id`` (the first claim that takes anything, if None), once."""

    def __init__(self, db, job_id: int | None = None):
        super().__init__(db)
        self.job_id = job_id
        self.lost = threading.Event()  # the claim's reply was lost

    def complete_and_claim_many(self, completions, n, types=None, *, worker_id, queues=None):
        done, jobs = super().complete_and_claim_many(completions, n, types, worker_id=worker_id, queues=queues)
        if not self.lost.is_set() and jobs and (self.job_id is None or self.job_id in [job.id for job in jobs]):
            self.lost.set()
            raise pw.OperationalError("server closed the connection unexpectedly")
        return done, jobs


@pytest.mark.parametrize("concurrency", [1, 3])
def test_the_jobs_of_a_claim_whose_reply_was_lost_are_released_and_run_once(
    db, handlers, events, make_worker, concurrency
):
    repo = LostReply(db)
    ran = []
    handlers.register("t", lambda payload: ran.append(payload["n"]))
    jobs = [repo.create("t", {"n": n}, max_retries=0)[0] for n in range(2)]
    worker = make_worker(repo, concurrency=concurrency)
    worker.run(burst=True)
    assert repo.lost.is_set()
    after = [repo.find_by_id(job.id) for job in jobs]
    assert [(job.status, job.retry_count) for job in after] == [("completed", 0)] * 2
    assert sorted(ran) == [0, 1]  # each ran exactly once
    released = events.of("released")
    assert released and all("its reply was lost" in event.message for event in released)
    assert "reaped" not in events.kinds()


def test_a_job_another_claim_took_and_runs_is_not_released(db, handlers, events, make_worker):
    # Slot 0 runs A; slot 1's claim of B commits, then raises. B is found held and untracked, so released;
    # A, held and tracked, runs on: it is neither released nor told it lost its claim.
    a_started, a_may_return, ran = threading.Event(), threading.Event(), []

    def handler(payload):
        ran.append(payload["name"])
        if payload["name"] == "a":
            a_started.set()
            assert a_may_return.wait(WAIT)

    handlers.register("t", handler)
    repo = LostReply(db)
    a, _ = repo.create("t", {"name": "a"}, max_retries=0)
    repo.lost.set()  # A's claim works
    worker = make_worker(repo, concurrency=2)
    worker.start()
    assert a_started.wait(WAIT)
    b, _ = repo.create("t", {"name": "b"}, max_retries=0)
    repo.job_id = b.id
    repo.lost.clear()  # the claim that takes B loses its reply
    worker.wakeup()
    events.wait_for("completed")  # B, released and claimed again, ran while A still runs
    assert repo.lost.is_set()
    assert repo.find_by_id(a.id).status == "running"
    a_may_return.set()
    events.wait_for("completed", 2)
    worker.stop(timeout=WAIT)
    assert [(repo.find_by_id(j.id).status, repo.find_by_id(j.id).retry_count) for j in (a, b)] == [("completed", 0)] * 2
    assert ran == ["a", "b"]
    assert [event.job_id for event in events.of("released")] == [b.id]
    assert "lost" not in events.kinds()


def test_a_job_of_an_earlier_run_of_the_same_worker_id_is_left_to_the_reaper(db, handlers, events, make_worker):
    # The worker was restarted with the same --worker-id after a crash, which left job P running under that
    # id. Its first claim loses its reply: only that claim's job goes back without a retry counted. P ran
    # (and may have caused the crash): released too, it came back uncounted, and a job that kills its worker
    # could do so for ever. It is the reaper's, which counts the retry.
    ran = []
    handlers.register("t", lambda payload: ran.append(payload["name"]))
    repo = LostReply(db)
    predecessor, _ = repo.create("t", {"name": "p"}, max_retries=0)
    assert repo.claim("w1").id == predecessor.id  # the crashed run's claim
    repo.job_id = repo.create("t", {"name": "b"}, max_retries=0)[0].id
    make_worker(repo, worker_id="w1").run(burst=True)
    assert repo.lost.is_set()
    assert ran == ["b"]
    left = repo.find_by_id(predecessor.id)
    assert (left.status, left.worker_id, left.attempt) == ("running", "w1", 1)
    assert [event.job_id for event in events.of("released")] == [repo.job_id]


class CountingLock:
    """The worker's lock, counting how often it is taken."""

    def __init__(self, lock):
        self.lock, self.taken = lock, 0

    def __enter__(self):
        self.taken += 1
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


@pytest.mark.parametrize("reply_lost", [False, True])
def test_looking_for_orphans_takes_the_workers_lock_only_after_a_lost_reply(db, handlers, make_worker, reply_lost):
    # Every claim (and the stop) looks for orphans: it took the lock each time only to read a flag that is
    # almost never set, and claim threads queued on it behind one another.
    handlers.register("t", lambda payload: None)
    repo = LostReply(db)
    if not reply_lost:
        repo.lost.set()
    jobs = [repo.create("t", {"n": n}, max_retries=0)[0] for n in range(3)]
    worker = make_worker(repo, concurrency=2)
    worker._slots.orphans._lock = lock = CountingLock(worker._lock)
    worker.run(burst=True)
    assert [repo.find_by_id(job.id).status for job in jobs] == ["completed"] * 3
    assert (lock.taken > 0) == reply_lost


class AwayDatabase(JobRepository):
    """A repository whose claims and look for held jobs raise while ``away`` is set, counting each try."""

    def __init__(self, db):
        super().__init__(db)
        self.away = threading.Event()
        self.tries: list[str] = []

    def _unless_away(self, action: str) -> None:
        if self.away.is_set():
            self.tries.append(action)
            raise pw.OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')

    def complete_and_claim_many(self, completions, n, types=None, *, worker_id, queues=None):
        self._unless_away("claim")
        return super().complete_and_claim_many(completions, n, types, worker_id=worker_id, queues=queues)

    def held_claims(self, worker_id):
        self._unless_away("held_claims")
        return super().held_claims(worker_id)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_claims_during_an_outage_are_one_try_a_poll_and_a_few_error_lines(
    db, handlers, events, make_worker, concurrency
):
    # Regression: after the first failed claim, every poll of an outage first looked for the jobs a lost reply
    # might have left (held_claims), failed, then claimed anyway and failed again: two error lines a poll.
    # Regression: then each failed try was a line, at every poll of every slot: the queue away for a minute
    # was 100 lines from an idle --concurrency 8 worker. Now the 1st, 2nd, 4th, 8th... failure in a row.
    ran = []
    handlers.register("t", lambda payload: ran.append(payload["n"]))
    repo = AwayDatabase(db)
    repo.away.set()
    worker = make_worker(repo, concurrency=concurrency)
    worker.start()
    deadline = time.monotonic() + WAIT
    while len(repo.tries) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    repo.away.clear()
    job, _ = repo.create("t", {"n": 1})
    events.wait_for("completed")
    worker.stop(timeout=WAIT)
    tries = list(repo.tries)
    assert len(tries) >= 20 and tries[0] == "claim" and set(tries[1:]) == {"held_claims"}, tries
    errors = [event.message for event in events.of("error")]
    reported = [1 << k for k in range(len(tries).bit_length())]  # 1, 2, 4, ... up to the count of tries
    # A slot whose try failed just before another's claim worked may say one more "first" failure.
    assert len(errors) - len(reported) in (0, 1), errors
    assert all(f"; {n} tries failed" in line for n, line in zip(reported[1:], errors[1:], strict=False)), errors
    assert ran == [1] and repo.find_by_id(job.id).status == "completed"
    # The outage's end is said: the error lines stop at a power of two, and silence did not say it was over.
    recovered = [event.message for event in events.of("recovered")]
    counts = [int(re.search(r"after (\d+) failed tr", line).group(1)) for line in recovered]
    assert recovered and all("during=claim;" in line or "during=held_claims;" in line for line in recovered)
    # Each try is one failure in a row until a claim works; a slot whose try failed just after another's claim
    # worked starts a new row, said ended at the next claim that works (unless the stop came first).
    assert counts[0] >= 20 and sum(counts) <= len(tries) <= sum(counts) + 1, (recovered, len(tries))
    assert len(recovered) == 1 or concurrency > 1, recovered

    # A claim that works starts the count again: the next outage's first failure is a line.
    before = len(events.of("error"))
    repo.away.set()
    worker.start()
    events.wait_for("error", before + 1)
    worker.stop(timeout=WAIT)
    assert "tries failed" not in events.of("error")[before].message


class ClaimWithCompletionsRaisesOnce(JobRepository):
    """The claim that carries completions raises once, before it writes anything (the connection dropped)."""

    def __init__(self, db):
        super().__init__(db)
        self.raised = threading.Event()

    def complete_and_claim_many(self, completions, n, types=None, *, worker_id, queues=None):
        if completions and not self.raised.is_set():
            self.raised.set()
            raise pw.OperationalError("server closed the connection unexpectedly")
        return super().complete_and_claim_many(completions, n, types, worker_id=worker_id, queues=queues)


def test_completions_written_again_after_their_claim_raised_are_not_reported_unwritten(
    db, handlers, events, make_worker
):
    # Regression (913a87b): the completions that a failed claim carried, then written on their own, were
    # counted as given up: the stop said "unwritten=1 (1 given up after database errors)" for a completed job.
    handlers.register("t", lambda payload: None)
    repo = ClaimWithCompletionsRaisesOnce(db)
    jobs = [repo.create("t", {"n": n})[0] for n in range(3)]
    worker = make_worker(repo)
    worker.run(burst=True)
    assert repo.raised.is_set()
    assert [repo.find_by_id(job.id).status for job in jobs] == ["completed"] * 3
    assert "unwritten" not in events.kinds()
    assert "unwritten" not in events.of("stopped")[-1].message
