"""Batched acknowledgements and claims for free slots: several outcomes and claims per statement, fencing
still exact per ack (each names its attempt), and never a job claimed for a slot that is not free."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import peewee as pw
import pytest

from queue_core.errors import ValidationError
from queue_core.store.compiled import RowReader
from queue_core.worker import Worker
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


def test_the_single_statement_path_builds_only_the_claimed_job(repo, monkeypatch):
    # A worker reads (id, attempt) of its completion: building the completed row as a Job was per-job
    # work nothing read.
    for _ in range(2):
        repo.create("t")
    job = repo.claim("w")
    built = []
    build = RowReader.build
    monkeypatch.setattr(RowReader, "build", lambda self, data: built.append(data["id"]) or build(self, data))
    done, claimed = repo.complete_and_claim_many([(job.id, job.attempt, None)], 1, ["t"], worker_id="w")
    assert done == [(job.id, job.attempt)] and [j.id for j in claimed] == [job.id + 1] == built
    assert claimed[0].status == "running" and claimed[0].attempt == 1 and claimed[0].worker_id == "w"


@pytest.mark.parametrize(
    "completions, field",
    [
        ([(1, 1)], "completions[0]"),
        ([(0, 1, None)], "completions[0].job_id"),
        ([(1, "2", None)], "completions[0].attempt"),
        # Past the columns: SQLite raised OverflowError, PostgreSQL DataError ("bigint/integer out of range").
        ([(2**63, 1, None)], "completions[0].job_id"),
        ([(1, 2**31, None)], "completions[0].attempt"),
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


def test_short_jobs_claimed_together_are_claimed_for_again_together(live_repo, handlers, make_worker):
    # Without waiting, the first slot to finish claimed alone while the other three were ending their jobs,
    # then they claimed three: two statements a round of four (2.5 jobs a claim in a drain of no-op jobs).
    queue = ClaimLog(live_repo)
    handlers.register("t", lambda payload: queue.ran(current_job().id, "finish"))
    live_repo.create_many([{"type": "t"} for _ in range(40)])

    # A wait generous enough that a loaded machine's thread scheduling cannot end it before the others.
    make_worker(queue, concurrency=4, ack_delay=1.0).run(burst=True)

    assert live_repo.counts()["completed"] == 40
    assert max(queue.held_at_claims) <= 4  # still no prefetch
    rounds = [ns for ns in queue.ns if ns[1] > 0]
    assert rounds.count((4, 4)) >= 8, queue.ns  # every round but the first and the last
    assert len(rounds) <= 12, queue.ns


def gathering_worker(make_worker, live_repo, *, ack_delay=0.01, queues=None):
    from queue_core.worker.session import Session

    worker = make_worker(live_repo, ack_delay=ack_delay, **({"queues": queues} if queues else {"concurrency": 4}))
    session = Session(worker._slot_queues, False, 1.0, worker._lock)
    for idle in session.idle.values():
        idle.clear()  # every slot busy with a job
    return worker, session


def running(session, slot, claimed_ago):
    from queue_core.worker.session import Running

    job = type("Job", (), {"id": 100 + slot, "attempt": 1})()
    entry = Running(job=job, started=time.monotonic() - claimed_ago, thread=threading.current_thread(), slot=slot)
    session.running[entry.key] = entry


def test_a_slot_after_a_short_job_waits_among_the_idle_for_a_job_claimed_just_now(live_repo, make_worker):
    worker, session = gathering_worker(make_worker, live_repo)
    running(session, 1, claimed_ago=0.0)
    session.slot_wakes[0].set()  # the wait ends at once: what matters is that the slot waits as idle

    assert worker._slots.gather(session, 0, ran=0.001) is True
    assert session.idle[None] == [0]  # the slot that falls idle last claims for this one too


@pytest.mark.parametrize(
    ("ran", "neighbour", "claiming", "why"),
    [
        (0.5, 0.0, False, "its own job ran longer than the wait: the others are unlikely to end within it"),
        (0.001, 60.0, False, "the only busy slot's job has run for a minute: not worth waiting for"),
        (0.001, None, False, "no other slot is busy: nobody to wait for"),
        (0.001, 0.0, True, "a claim is under way for these queues: it feeds or wakes this slot"),
    ],
)
def test_a_slot_claims_at_once_when_waiting_would_gather_nobody(live_repo, make_worker, ran, neighbour, claiming, why):
    worker, session = gathering_worker(make_worker, live_repo)
    if neighbour is not None:
        running(session, 1, claimed_ago=neighbour)
    if claiming:
        session.claiming.add(None)

    assert worker._slots.gather(session, 0, ran=ran) is False, why
    assert session.idle[None] == []


def test_a_slot_does_not_wait_for_slots_of_other_queues(live_repo, make_worker):
    worker, session = gathering_worker(make_worker, live_repo, queues={"mail": 1, "default": 1})
    running(session, 1, claimed_ago=0.0)  # slot 1 claims from "default", slot 0 from "mail"

    assert worker._slots.gather(session, 0, ran=0.001) is False


def handed(session, slot):
    """A job a claim handed to ``slot`` that its thread has not taken yet."""
    from queue_core.worker.session import Running

    job = type("Job", (), {"id": 200 + slot, "attempt": 1})()
    entry = Running(job=job, started=time.monotonic(), thread=session.threads[slot], slot=slot)
    session.running[entry.key] = entry
    session.mail[slot] = entry
    return entry


def slot_threads_of(session):
    session.threads.extend(threading.Thread(target=lambda: None, name=f"slot-{n}") for n in range(4))


def test_a_free_slot_takes_over_the_last_job_handed_to_a_slot_of_its_queues_that_has_not_taken_it(
    live_repo, make_worker
):
    _, session = gathering_worker(make_worker, live_repo, queues={"default": 3, "mail": 1})
    slot_threads_of(session)
    first, second, other_queue = handed(session, 1), handed(session, 2), handed(session, 3)

    assert session.steal_mail(0) is second  # the last handed: the first is the one its claim woke
    assert (second.slot, second.thread) == (0, session.threads[0])  # a stop that abandons it abandons slot 0's thread
    assert session.idle[("default",)] == [2]  # slot 2 is free again, for the group's next claim to feed
    assert session.steal_mail(0) is first
    assert session.steal_mail(0) is None  # slot 3 claims from "mail": its job is not slot 0's to run
    assert session.mail == {3: other_queue} and session.idle[("default",)] == [2, 1]
    assert [entry.thread for entry in session.take_leftovers()].count(session.threads[0]) == 2


def test_a_slot_that_takes_its_job_wakes_the_next_slot_of_its_queues_with_one(live_repo, make_worker):
    _, session = gathering_worker(make_worker, live_repo, queues={"default": 3, "mail": 1})
    slot_threads_of(session)
    handed(session, 3)  # another queue's: not woken by the default queue's slots
    entries = [handed(session, 1), handed(session, 2)]

    assert session.take_mail(1) is entries[0]
    assert [wake.is_set() for wake in session.slot_wakes] == [False, False, True, False]
    assert session.take_mail(2) is entries[1]
    assert [wake.is_set() for wake in session.slot_wakes] == [False, False, True, False]  # none left to wake


def test_short_jobs_run_in_whole_rounds_when_free_slots_take_over_jobs_handed_to_others(
    live_repo, handlers, make_worker
):
    queue = ClaimLog(live_repo)
    threads = []

    def handler(payload):
        threads.append(threading.current_thread().name)
        queue.ran(current_job().id, "finish")

    handlers.register("t", handler)
    live_repo.create_many([{"type": "t"} for _ in range(200)])

    # A wait generous enough that a loaded machine's thread scheduling cannot end it before the round does.
    make_worker(queue, concurrency=4, ack_delay=1.0).run(burst=True)

    assert live_repo.counts()["completed"] == 200 and len(threads) == 200
    assert max(queue.held_at_claims) <= 4  # taking over a job never claims one for a slot that is not free
    rounds = [ns for ns in queue.ns if ns[1] > 0]
    assert rounds.count((4, 4)) >= 45, queue.ns  # every round but the first and the last few


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
    session.batch = AckBatch(worker._acks, worker._outcomes.completions, delay=1.0, size=256)
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


# --- the ack delay against stale_after, a stop with outcomes not written, a restart, a lost reply -----------


@pytest.mark.parametrize("ack_delay", [5.01, 10.0, 60.0])
def test_an_ack_delay_above_half_of_stale_after_is_refused_saying_what_to_fix(ack_delay):
    # A completion waiting in the batch is no longer heartbeated: with a delay near stale_after the reaper
    # could take a finished job back and run it again.
    with pytest.raises(ValidationError) as refused:
        Worker(FakeQueue(), worker_id="w", stale_after=10, ack_delay=ack_delay)
    assert refused.value.field == "ack_delay"
    assert f"{ack_delay:g}s is more than half of stale_after (10s)" in str(refused.value)
    assert "give ack_delay at most 5s, or a longer stale_after" in str(refused.value)


def test_an_ack_delay_of_half_of_stale_after_or_less_is_taken():
    assert Worker(FakeQueue(), worker_id="w", stale_after=10, ack_delay=5).ack_delay == 5.0
    assert Worker(FakeQueue(), worker_id="w", stale_after=0.3, ack_delay=0).ack_delay == 0.0


class HeldWrites:
    """The repository, its batch writes (``complete_many``) held until ``go`` is set (``inside``: one began)."""

    def __init__(self, repo):
        self.repo = repo
        self.inside, self.go = threading.Event(), threading.Event()

    def complete_many(self, completions, **held):
        self.inside.set()
        assert self.go.wait(WAIT)
        return self.repo.complete_many(completions, **held)

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_a_stop_with_a_write_still_under_way_says_so_and_a_restart_ends_the_old_flusher(
    live_repo, handlers, events, make_worker, monkeypatch
):
    # The stop reported "stopped" while the flusher was still in its write, and a start after it cleared the
    # batch's stop flag: that flusher, once its write returned, ran on beside the new one.
    monkeypatch.setattr("queue_core.worker.loop.ACK_GRACE", 0.2)
    go = threading.Event()
    handlers.register("t", lambda payload: go.wait(WAIT))
    job, _ = live_repo.create("t")
    queue = HeldWrites(live_repo)
    worker = make_worker(queue)
    worker.start()
    events.wait_for("claimed")
    worker.request_stop()  # no claim takes the completion along: the flusher writes it
    go.set()
    assert queue.inside.wait(WAIT)  # the flusher is in its write, held
    old_flusher = worker._session.flusher_thread

    worker.stop()

    (unwritten,) = events.of("unwritten")
    assert (
        "count=1: 1 job outcome(s) of this run not written when the worker stopped (1 still being written as the "
        in (unwritten.message)
    )
    assert f"job/attempt {job.id}/1)" in unwritten.message and "run again (at least once)" in unwritten.message
    assert events.of("stopped")[0].message.endswith(" unwritten=1")
    assert events.kinds().index("unwritten") < events.kinds().index("stopped")

    worker.start()
    queue.go.set()  # the old write lands; its flusher must end, not serve the new run beside its own
    old_flusher.join(WAIT)
    assert not old_flusher.is_alive()
    assert events.wait_for("completed")[0].job_id == job.id
    assert live_repo.find_by_id(job.id).status == "completed"
    worker.stop(timeout=WAIT)
    assert len(events.of("unwritten")) == 1  # the second stop was clean


class FailingWrites:
    """The repository, every outcome write of which fails (the database is away)."""

    def __init__(self, repo):
        self.repo = repo

    def complete_many(self, completions, **held):
        raise pw.OperationalError("server closed the connection unexpectedly")

    def complete_and_claim_many(self, completions, n, types=None, **held):
        if completions:
            raise pw.OperationalError("server closed the connection unexpectedly")
        return self.repo.complete_and_claim_many(completions, n, types, **held)

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_a_stop_ends_an_ack_retry_at_the_grace_and_reports_the_outcome_unwritten(
    live_repo, handlers, events, make_worker, monkeypatch
):
    # The slot retried its completion for stale_after (300 s) while the stop, after its grace, said "stopped"
    # as if clean; the job then ran again with nothing said.
    monkeypatch.setattr("queue_core.worker.loop.ACK_GRACE", 0.2)
    monkeypatch.setattr("queue_core.worker.acks.ACK_FIRST_WAIT", 0.01)
    monkeypatch.setattr("queue_core.worker.acks.ACK_MAX_WAIT", 0.02)
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    worker = make_worker(FailingWrites(live_repo), stale_after=300)
    worker.start()
    events.wait_for("error")  # the completion went with the next claim, which failed: it is being retried
    slots = list(worker._session.threads)

    worker.stop(timeout=0)  # no job runs: the retrying slot is not made to wait for the shutdown timeout

    (unwritten,) = events.of("unwritten")
    assert "count=1: " in unwritten.message and f"job/attempt {job.id}/1)" in unwritten.message
    assert "1 given up after database errors" in unwritten.message or "1 still being written" in unwritten.message
    assert events.of("stopped")[0].message.endswith(" unwritten=1")
    for thread in slots:  # no retry goes on after the stop
        thread.join(WAIT)
        assert not thread.is_alive()
    assert live_repo.find_by_id(job.id).status == "running"  # left to the reaper: it runs again
    assert "completed" not in events.kinds()


class Silent:
    """The repository, whose every call once ``hung`` is set waits for ``answer``: a database that never replies
    (a hung server, a connection a firewall blackholes), where no error ever comes."""

    def __init__(self, repo):
        self.repo = repo
        self.hung, self.answer = threading.Event(), threading.Event()

    def __getattr__(self, name):
        real = getattr(self.repo, name)
        if not callable(real) or name == "db":
            return real

        def call(*args, **kwargs):
            if self.hung.is_set():
                self.answer.wait()
            return real(*args, **kwargs)

        return call


@pytest.mark.parametrize("job_state", ["running", "finished"])
def test_a_stop_ends_when_the_database_never_answers_and_says_what_it_could_not_write(
    live_repo, handlers, events, make_worker, monkeypatch, job_state
):
    # The stop's release of a running job, its last flush of the batch and the registry's "stopped" ran on the
    # stopping thread and waited for an answer that never came: SIGTERM, then a second one, left the process
    # running for good, and the job was never reported.
    monkeypatch.setattr("queue_core.worker.loop.ACK_GRACE", 0.2)
    monkeypatch.setattr("queue_core.worker.stopping.FINAL_WRITE_WAIT", 0.2)
    go = threading.Event()
    handlers.register("t", lambda payload: go.wait(WAIT))
    job, _ = live_repo.create("t")
    queue = Silent(live_repo)
    worker = make_worker(queue, ack_delay=0.1)
    worker.start()
    events.wait_for("claimed")
    queue.hung.set()
    if job_state == "finished":
        worker.request_stop()
        go.set()  # its completion waits in the batch; the flusher's write gets no answer
        deadline = time.monotonic() + WAIT
        while worker._session.running:  # until the slot has handed its completion to the batch
            assert time.monotonic() < deadline
            time.sleep(0.01)
    stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 0})
    stopper.start()
    try:
        stopper.join(WAIT)
        assert not stopper.is_alive(), "the stop waited for a database that never answers"
        assert events.kinds()[-1] == "stopped"
        (unwritten,) = events.of("unwritten")
        if job_state == "running":  # its release got no answer
            assert unwritten.job_id == job.id and "the queue did not answer" in unwritten.message
        else:  # its completion got none
            assert f"1 still being written as the 0.2s grace ran out; job/attempt {job.id}/1)" in unwritten.message
            assert events.of("stopped")[0].message.endswith(" unwritten=1")
        assert live_repo.find_by_id(job.id).status == "running"  # left to the reaper, as the event says
    finally:
        go.set()
        queue.answer.set()
        stopper.join(WAIT)


class RepliesLost:
    """The repository; the first outcome write is applied, then raises as a connection dropped after COMMIT."""

    def __init__(self, repo):
        self.repo = repo
        self.dropped = False

    def _applied_then_dropped(self, answer):
        if not self.dropped:
            self.dropped = True
            raise pw.OperationalError("server closed the connection unexpectedly")
        return answer

    def complete_and_claim_many(self, completions, n, types=None, **held):
        answer = self.repo.complete_and_claim_many(completions, n, types, **held)
        return self._applied_then_dropped(answer) if completions else answer

    def complete_many(self, completions, **held):
        return self._applied_then_dropped(self.repo.complete_many(completions, **held))

    def fail(self, job_id, error, **held):
        return self._applied_then_dropped(self.repo.fail(job_id, error, **held))

    def __getattr__(self, name):
        return getattr(self.repo, name)


@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_an_outcome_written_but_its_reply_lost_is_unconfirmed_not_lost(
    live_repo, handlers, events, make_worker, monkeypatch, outcome
):
    # The re-sent ack finds the job no longer held (its first try was applied): that was reported "lost ...
    # the claim was taken back; outcome discarded", though nothing was lost.
    monkeypatch.setattr("queue_core.worker.acks.ACK_FIRST_WAIT", 0.01)

    def handler(payload):
        if outcome == "failed":
            raise RuntimeError("boom")

    handlers.register("t", handler)
    job, _ = live_repo.create("t", max_retries=0)
    worker = make_worker(RepliesLost(live_repo))

    worker.run(burst=True)

    assert live_repo.find_by_id(job.id).status == outcome  # written once, by the try whose reply was lost
    assert "lost" not in events.kinds()
    (unconfirmed,) = events.of("unconfirmed")
    assert unconfirmed.job_id == job.id
    assert "either that try was written before its reply was lost" in unconfirmed.message
    assert (worker.stats.unconfirmed, worker.stats.completed, worker.stats.failed) == (1, 0, 0)


class AppliedThenDropped:
    """A queue whose first batch write is applied but raises (its reply lost): the re-send finds none held."""

    def __init__(self):
        self.calls = 0

    def complete_many(self, acks, *, worker_id):
        self.calls += 1
        if self.calls == 1:
            raise pw.OperationalError("server closed the connection unexpectedly")
        return []


def test_a_batch_resent_after_an_error_is_unsure_of_what_it_left_out(monkeypatch):
    monkeypatch.setattr("queue_core.worker.acks.ACK_FIRST_WAIT", 0.01)
    acks = Acks(AppliedThenDropped(), "w", patience=5, on_error=lambda *args, **kwargs: None)
    done = acks.complete_many([(FakeEntry(1), None, 0.0)])
    assert done == set() and done.unsure
    clean = Acks(FakeQueue(), "w", patience=5, on_error=None).complete_many([(FakeEntry(1), None, 0.0)])
    assert clean == {(1, 1)} and not clean.unsure


class JSONQueue(FakeQueue):
    def complete_many(self, acks, *, worker_id):
        return [[job_id, attempt] for job_id, attempt, _ in acks]  # pairs as the HTTP API answers them


def test_a_batch_answered_in_json_lists_is_read_as_pairs():
    done = Acks(JSONQueue(), "w", patience=1, on_error=None).complete_many([(FakeEntry(1), None, 0.0)])
    assert (1, 1) in done


# --- a claim after a short job hands its jobs without waking their slots (worker.dispatch) ---


def dispatching_session(make_worker, live_repo):
    from queue_core.worker.session import Session

    worker = make_worker(live_repo, concurrency=3)
    session = Session(worker._slot_queues, False, 1.0, worker._lock)
    slot_threads_of(session)
    session.batch = AckBatch(worker._acks, worker._outcomes.completions, delay=1.0, size=64)
    session.idle[None] = [1, 2]  # slots 1 and 2 idle: slot 0's claim is for all three
    return worker, session


@pytest.mark.parametrize("quick", [True, False])
def test_a_claim_after_a_short_job_hands_its_jobs_to_the_dispatcher_and_otherwise_wakes_the_first(
    live_repo, make_worker, quick
):
    from queue_core.worker.dispatch import DELAY

    worker, session = dispatching_session(make_worker, live_repo)
    live_repo.create_many([{"type": "t"} for _ in range(3)])
    worker.registry.register("t", lambda payload: None)

    entry, *_ = worker._slots.claim(session, 0, quick=quick)

    assert entry is not None and sorted(session.mail) == [1, 2]
    woken = [wake.is_set() for wake in session.slot_wakes]
    dispatcher = session.dispatcher
    if not quick:
        assert woken == [False, True, False] and dispatcher.handed == {}  # at once, as before: it wakes the next
        return
    assert woken == [False, False, False] and sorted(dispatcher.handed) == [1, 2] and not dispatcher.asleep
    handed_at = dispatcher.handed[1]
    with session.lock:
        assert dispatcher.tick(handed_at + DELAY / 2) is True
        assert [wake.is_set() for wake in session.slot_wakes] == woken  # not yet: slot 0 may run them itself
        assert dispatcher.tick(handed_at + DELAY * 1.5) is True
    assert [wake.is_set() for wake in session.slot_wakes] == [False, True, False]  # the first; it wakes the next


def test_the_dispatcher_forgets_jobs_taken_over_and_sleeps_once_none_were_handed_for_a_while(live_repo, make_worker):
    from queue_core.worker.dispatch import DELAY, LINGER

    _, session = dispatching_session(make_worker, live_repo)
    dispatcher = session.dispatcher
    handed(session, 1), handed(session, 2)
    dispatcher.hand([1, 2], 100.0)
    assert dispatcher.kick.is_set()  # it slept: the first hand wakes it once, later hands do not

    session.steal_mail(0), session.steal_mail(0)  # slot 0 ran both before their slots woke
    with session.lock:
        assert dispatcher.tick(100.0 + DELAY * 1.5) is True
        assert not any(wake.is_set() for wake in session.slot_wakes) and dispatcher.handed == {}
        assert dispatcher.tick(100.0 + LINGER / 2) is True  # still polling: more short rounds likely follow
        assert dispatcher.tick(100.0 + LINGER + DELAY) is False
    assert dispatcher.asleep


def test_a_worker_with_no_slots_sharing_queues_has_no_dispatcher(make_worker, live_repo):
    from queue_core.worker.session import Session

    worker = make_worker(live_repo, queues={"mail": 1, "default": 1})
    assert Session(worker._slot_queues, False, 1.0, worker._lock).dispatcher is None


def test_a_job_handed_after_short_jobs_starts_while_the_claiming_slot_runs_a_long_one(
    live_repo, handlers, make_worker, monkeypatch
):
    # The two "pair" jobs each wait until the other runs too: they pass only if the job handed to the idle
    # slot starts while the claiming slot runs its own, which after short jobs only the dispatcher's wake does.
    from queue_core.worker import dispatch, slots

    monkeypatch.setattr(slots, "DISPATCH_DELAY", 60.0)  # every job counts as short, however loaded the machine
    hands = []
    original = dispatch.Dispatcher.hand

    def hand(self, slots_handed, now):
        hands.append(list(slots_handed))
        original(self, slots_handed, now)

    monkeypatch.setattr(dispatch.Dispatcher, "hand", hand)
    both = threading.Barrier(2, timeout=WAIT)
    handlers.register("short", lambda payload: None)
    handlers.register("pair", lambda payload: both.wait())
    # Rounds of short jobs first: each claim after one is quick, and feeds the other slot whenever it is idle.
    live_repo.create_many([{"type": "short", "priority": 10} for _ in range(20)] + [{"type": "pair"}] * 2)

    # Idle slots poll rarely: only a wake can start the handed job within the barrier's wait.
    make_worker(concurrency=2, poll_interval=WAIT * 2, max_poll_interval=WAIT * 2).run(burst=True)

    assert live_repo.counts()["completed"] == 22  # neither pair job broke the barrier (its wait timed out)
    assert hands, "no claim handed its jobs to the dispatcher"
