"""Batched acknowledgements and claims for free slots: several outcomes and claims per statement, fencing
still exact per ack (each names its attempt), and never a job claimed for a slot that is not free."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from queue_core.errors import ValidationError
from queue_core.worker.acks import AckBatch, Acks
from queue_core.worker.handlers import current_job

WAIT = 20


def test_complete_many_completes_each_held_job_at_its_attempt_only(repo):
    for _ in range(4):
        repo.create("t")
    a, b, c = repo.claim_many("w", 3)
    other = repo.claim("other")

    done = repo.complete_many(
        [
            (a.id, a.attempt, {"n": 1}),
            (b.id, b.attempt + 1, None),
            (other.id, other.attempt, None),
            (c.id, c.attempt, 7),
        ],
        worker_id="w",
    )

    assert sorted(done) == [(a.id, a.attempt), (c.id, c.attempt)]  # b's attempt is stale; other's claim is not ours
    statuses = [repo.find_by_id(job.id).status for job in (a, b, c, other)]
    assert statuses == ["completed", "running", "completed", "running"]
    assert repo.find_by_id(a.id).result == {"n": 1} and repo.find_by_id(c.id).result == 7


def test_a_completion_of_a_reaped_and_reclaimed_job_matches_nothing_in_a_batch(repo, clock):
    job, _ = repo.create("t")
    first = repo.claim("w")
    clock.advance(minutes=10)
    repo.reap_stale(timedelta(minutes=5))
    second = repo.claim("w")  # the same worker id claims it again: only the attempt tells the runs apart

    assert repo.complete_many([(job.id, first.attempt, None)], worker_id="w") == []
    assert repo.find_by_id(job.id).status == "running"
    assert repo.complete_many([(job.id, second.attempt, None)], worker_id="w") == [(job.id, second.attempt)]


def test_complete_and_claim_many_writes_the_batch_and_claims_up_to_n_in_claim_order(repo):
    for priority in (0, 0, 20, 0, 10):
        repo.create("t", priority=priority)
    held = repo.claim_many("w", 2)  # the two highest priorities

    done, claimed = repo.complete_and_claim_many([(j.id, j.attempt, None) for j in held], 2, worker_id="w")

    assert sorted(done) == sorted((j.id, j.attempt) for j in held)
    assert [j.id for j in claimed] == [1, 2] and all(j.status == "running" for j in claimed)
    assert repo.counts()["completed"] == 2 and repo.counts()["pending"] == 1


def test_complete_and_claim_many_with_one_of_each_uses_the_single_statement_and_answers_the_same(repo):
    for _ in range(2):
        repo.create("t")
    job = repo.claim("w")
    done, claimed = repo.complete_and_claim_many([(job.id, job.attempt, "ok")], 1, ["t"], worker_id="w")
    assert done == [(job.id, job.attempt)] and [j.id for j in claimed] == [job.id + 1]
    assert repo.find_by_id(job.id).result == "ok"


@pytest.mark.parametrize(
    "completions, field",
    [
        ([(1, 1)], "completions[0]"),
        ([(0, 1, None)], "completions[0].job_id"),
        ([(1, "2", None)], "completions[0].attempt"),
    ],
)
def test_bad_completions_are_refused_and_nothing_is_written(repo, completions, field):
    job, _ = repo.create("t")
    repo.claim("w")
    with pytest.raises(ValidationError) as raised:
        repo.complete_and_claim_many([(job.id, 1, None), *completions], 1, worker_id="w")
    assert raised.value.field == field.replace("[0]", "[1]")
    assert repo.find_by_id(job.id).status == "running"


class ClaimLog:
    """The repository, logging each claim's (completions, n) and the jobs the worker holds unfinished then:
    claimed and not started, or in their handler."""

    def __init__(self, repo):
        self.repo = repo
        self.lock = threading.Lock()
        self.ns = []
        self.claimed, self.started, self.finished = set(), set(), set()
        self.held_at_claims = []  # per claim: n + the jobs held unfinished, which must never exceed the slots

    def complete_and_claim_many(self, completions, n, types=None, **kwargs):
        completions = list(completions)
        with self.lock:
            self.ns.append((len(completions), n))
            self.held_at_claims.append(n + len(self.claimed - self.finished))
        done, jobs = self.repo.complete_and_claim_many(completions, n, types, **kwargs)
        with self.lock:
            self.claimed.update(job.id for job in jobs)
        return done, jobs

    def ran(self, job_id, step):
        with self.lock:
            (self.started if step == "start" else self.finished).add(job_id)

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_idle_slots_claim_together_and_never_hold_more_jobs_than_slots(live_repo, handlers, make_worker):
    gate = threading.Barrier(4, timeout=WAIT)
    queue = ClaimLog(live_repo)

    def handler(payload):
        job = current_job()
        queue.ran(job.id, "start")
        if payload["n"] < 4:
            gate.wait()  # the first four run together, so their slots fall idle together
        queue.ran(job.id, "finish")

    handlers.register("t", handler)
    live_repo.create_many([{"type": "t", "payload": {"n": n}} for n in range(40)])

    make_worker(queue, concurrency=4).run(burst=True)

    assert live_repo.counts()["completed"] == 40
    assert max(queue.held_at_claims) <= 4  # no prefetch: never a job claimed for a slot that is not free
    assert queue.ns[0] == (0, 4)  # the first claim asks for every idle slot
    # Rounds that wrote several completions and claimed for several slots in one call.
    assert any(acks > 1 and n > 1 for acks, n in queue.ns)
    assert len(queue.ns) < 40


def test_a_lost_claim_in_a_batch_is_reported_lost_and_the_rest_still_complete(live_repo, handlers, events, make_worker):
    # The first job's claim is taken back by an operator's reap while it runs: its completion matches nothing.
    release = threading.Event()

    def handler(payload):
        if payload["n"] == 0:
            live_repo.Job.update(worker_id="someone-else").where(live_repo.Job.id == 1).execute()
        release.set()

    handlers.register("t", handler)
    live_repo.create_many([{"type": "t", "payload": {"n": n}} for n in range(3)])

    make_worker(concurrency=2).run(burst=True)

    assert [e.job_id for e in events.of("lost")] == [1]
    assert sorted(e.job_id for e in events.of("completed")) == [2, 3]
    assert live_repo.find_by_id(1).status == "running" and live_repo.counts()["completed"] == 2


class Written:
    def __init__(self):
        self.batches = []
        self.done = threading.Event()

    def report(self, items, done):
        self.batches.append((items, done))
        self.done.set()


class FakeQueue:
    def __init__(self):
        self.calls = []

    def complete_many(self, acks, *, worker_id):
        self.calls.append(list(acks))
        return [(job_id, attempt) for job_id, attempt, _ in acks]


class FakeJob:
    def __init__(self, job_id):
        self.id, self.attempt = job_id, 1


class FakeEntry:
    def __init__(self, job_id):
        self.job = FakeJob(job_id)


def test_the_flusher_writes_what_no_claim_took_in_one_statement():
    queue, written = FakeQueue(), Written()
    batch = AckBatch(Acks(queue, "w", patience=1, on_error=None), written.report, delay=0.001, size=100)
    flusher = threading.Thread(target=batch.run, daemon=True)
    flusher.start()
    batch.add((FakeEntry(1), None, 0.0))
    batch.add((FakeEntry(2), None, 0.0))
    batch.nudge()  # what a slot that will not claim next does
    assert written.done.wait(WAIT)
    batch.stop()
    flusher.join(WAIT)
    assert not flusher.is_alive()
    assert sum(len(call) for call in queue.calls) == 2 and {(1, 1)} <= written.batches[0][1]


def test_a_full_batch_is_written_at_once_and_stop_leaves_the_rest_to_flush():
    queue, written = FakeQueue(), Written()
    batch = AckBatch(Acks(queue, "w", patience=1, on_error=None), written.report, delay=3600, size=2)
    flusher = threading.Thread(target=batch.run, daemon=True)
    flusher.start()
    batch.add((FakeEntry(1), None, 0.0))
    batch.add((FakeEntry(2), None, 0.0))  # full: written without waiting an hour
    assert written.done.wait(WAIT)
    batch.add((FakeEntry(3), None, 0.0))
    batch.stop()
    flusher.join(WAIT)
    batch.flush()  # what a stopping worker does last
    assert queue.calls == [[(1, 1, None), (2, 1, None)], [(3, 1, None)]]


class GatedClaims:
    """The repository, its first complete_and_claim_many held until ``go`` is set (``inside`` says it began)."""

    def __init__(self, repo):
        self.repo = repo
        self.inside, self.go = threading.Event(), threading.Event()
        self.calls = 0

    def complete_and_claim_many(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 1:
            self.inside.set()
            assert self.go.wait(WAIT)
        return self.repo.complete_and_claim_many(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_a_slot_fed_between_its_mail_check_and_its_claim_runs_that_job_and_claims_no_other(
    live_repo, handlers, make_worker
):
    # Slot 1 looked for mail (none yet) just before slot 0's claim for both slots returned and fed it; its
    # own claim must then take the job it was fed, not claim another while that one waits: no prefetch.
    from queue_core.worker.session import Session

    handlers.register("t", lambda payload: None)
    live_repo.create_many([{"type": "t"} for _ in range(3)])
    queue = GatedClaims(live_repo)
    worker = make_worker(queue, concurrency=2)
    session = Session(worker._slot_queues, False, 1.0, worker._lock)
    session.threads.extend(threading.current_thread() for _ in range(2))
    claimer = threading.Thread(target=worker._slots.claim, args=(session, 0))
    claimer.start()
    assert queue.inside.wait(WAIT)
    assert session.take_mail(1) is None  # slot 1's look for mail, while slot 0 claims for it
    queue.go.set()
    claimer.join(WAIT)

    entry, _, _, _ = worker._slots.claim(session, 1)

    assert entry is not None and queue.calls == 1
    assert live_repo.counts()["running"] == 2  # never more jobs held than slots
