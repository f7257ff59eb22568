"""The Worker class in-process: events, threads, heartbeats, reaping, stop and release, wakeup, burst."""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
import time
from collections import Counter
from datetime import timedelta

import peewee as pw
import pytest
from worker_support import WAIT

from queue_core.errors import QueueError, ValidationError, WorkerGaveUp
from queue_core.worker import Worker, WorkerStats, next_idle_delay
from queue_core.worker.handlers import current_job


def test_a_job_runs_and_every_step_is_an_event(live_repo, handlers, events, make_worker):
    seen = []
    handlers.register("add", lambda payload: seen.append((payload["a"] + payload["b"], current_job().id)))
    job, _ = live_repo.create("add", {"a": 2, "b": 3})

    worker = make_worker()
    worker.run(burst=True)

    assert seen == [(5, job.id)]
    assert events.kinds() == ["started", "claimed", "completed", "stopped"]
    done = events.of("completed")[0]
    assert (done.worker_id, done.job_id, done.job_type, done.attempt, done.error) == ("w1", job.id, "add", 1, None)
    assert done.duration >= 0
    assert done.message.startswith(f"completed job={job.id} type=add attempt=1 worker=w1 duration=")
    assert live_repo.find_by_id(job.id).status == "completed"
    assert worker.stats == WorkerStats(completed=1, failed=0, running=0)
    assert not worker.is_running


def test_an_exception_fails_the_job_with_its_message(live_repo, handlers, events, make_worker):
    def charge(payload):
        raise ValueError("card declined")

    handlers.register("charge", charge)
    retried, _ = live_repo.create("charge", max_retries=3, retry_backoff=60)
    final, _ = live_repo.create("charge", max_retries=0)

    make_worker().run(burst=True)

    assert live_repo.find_by_id(retried.id).status == "pending"
    assert live_repo.find_by_id(retried.id).error == "card declined"
    assert live_repo.find_by_id(final.id).status == "failed"
    failures = {e.job_id: e for e in events.of("failed")}
    assert failures[retried.id].error == "card declined"
    assert 'error="card declined": retry 1/3 at ' in failures[retried.id].message
    assert failures[final.id].message.endswith("no retries left after 1 attempt")


def test_a_key_error_is_recorded_with_its_type_not_as_a_bare_key(live_repo, handlers, events, make_worker):
    # payload["invoice"] on a payload without it, the commonest handler bug, failed with the error 'invoice'.
    handlers.register("bill", lambda payload: payload["invoice"])

    class MissingSetting(KeyError): ...

    def configured(payload):
        raise MissingSetting("SMTP_HOST")

    handlers.register("configured", configured)
    bill, _ = live_repo.create("bill", {"invoce": 7}, max_retries=0)
    setting, _ = live_repo.create("configured", max_retries=0)
    make_worker().run(burst=True)

    assert live_repo.find_by_id(bill.id).error == "KeyError: 'invoice'"
    assert live_repo.find_by_id(setting.id).error == "MissingSetting: 'SMTP_HOST'"
    assert "error=\"KeyError: 'invoice'\"" in {e.job_id: e for e in events.of("failed")}[bill.id].message


def test_a_handler_that_exits_fails_its_attempt_saying_so(live_repo, handlers, make_worker):
    """sys.exit(3) in a handler fails the attempt (the worker goes on); its error names SystemExit, where
    "3" alone said nothing of what ended it. An Exception's error stays its message."""
    import sys

    handlers.register("quits", lambda payload: sys.exit(3))
    job, _ = live_repo.create("quits", max_retries=0)
    make_worker().run(burst=True)
    assert (live_repo.find_by_id(job.id).status, live_repo.find_by_id(job.id).error) == ("failed", "SystemExit: 3")


def test_only_registered_types_are_claimed(live_repo, handlers, make_worker):
    handlers.register("known", lambda payload: None)
    unknown, _ = live_repo.create("os.system", {"cmd": "rm -rf /"}, priority="critical")
    known, _ = live_repo.create("known")

    make_worker().run(burst=True)

    after = live_repo.find_by_id(unknown.id)
    assert (after.status, after.retry_count, after.worker_id) == ("pending", 0, None)
    assert live_repo.find_by_id(known.id).status == "completed"


def test_concurrency_runs_jobs_at_once_on_separate_threads(live_repo, handlers, make_worker):
    together = threading.Barrier(3, timeout=WAIT)  # breaks, failing the jobs, unless 3 run at once
    threads = set()

    def meet(payload):
        threads.add(threading.current_thread().name)
        together.wait()

    handlers.register("meet", meet)
    jobs = [live_repo.create("meet")[0] for _ in range(3)]

    make_worker(concurrency=3).run(burst=True)

    assert [live_repo.find_by_id(job.id).status for job in jobs] == ["completed"] * 3
    assert len(threads) == 3


def test_burst_drains_the_queue_with_several_threads(live_repo, handlers, make_worker):
    handlers.register("t", lambda payload: None)
    for i in range(40):
        live_repo.create("t", {"i": i})
    worker = make_worker(concurrency=3)
    worker.run(burst=True)
    assert live_repo.counts() == {"pending": 0, "running": 0, "completed": 40, "failed": 0, "cancelled": 0}
    assert worker.stats.completed == 40


def test_stop_lets_a_running_job_finish(live_repo, handlers, events, make_worker):
    handlers.register("slow", lambda payload: time.sleep(0.3))
    job, _ = live_repo.create("slow")
    worker = make_worker()
    worker.start()
    events.wait_for("claimed")
    worker.stop(timeout=WAIT)
    assert live_repo.find_by_id(job.id).status == "completed"
    assert events.kinds()[-2:] == ["completed", "stopped"]


def test_stop_releases_jobs_still_running_after_the_timeout(live_repo, handlers, events, make_worker):
    gates = [threading.Event(), threading.Event()]  # one per run of the handler, in order
    runs = iter(gates)
    handlers.register("stuck", lambda payload: next(runs).wait(WAIT))
    job, _ = live_repo.create("stuck", priority="high")
    waiting, _ = live_repo.create("stuck")
    worker = make_worker()
    worker.start()
    events.wait_for("claimed")

    worker.stop(timeout=0.1)

    released = live_repo.find_by_id(job.id)
    assert (released.status, released.retry_count, released.worker_id) == ("pending", 0, None)
    assert live_repo.find_by_id(waiting.id).status == "pending"  # never claimed after the stop
    assert [e.job_id for e in events.of("released")] == [job.id]
    assert worker.stats.running == 0 and not worker.is_running
    abandoned = [t for t in threading.enumerate() if t.name.startswith("worker-w1-")]

    # Started again, the worker claims the same job: same worker id, same attempt. The abandoned
    # handler finishing now must not complete that new claim.
    worker.start()
    assert events.wait_for("claimed", 2)[1].job_id == job.id
    gates[0].set()
    for thread in abandoned:
        thread.join(WAIT)
    assert live_repo.find_by_id(job.id).status == "running"
    assert "completed" not in events.kinds()
    gates[1].set()
    worker.stop(timeout=WAIT)
    assert [e.job_id for e in events.of("completed")] == [job.id]


def test_stop_is_idempotent_and_harmless_before_start(make_worker, events):
    worker = make_worker()
    worker.stop()
    assert events.kinds() == []
    worker.start()
    with pytest.raises(QueueError, match="already running"):
        worker.start()
    worker.stop()
    worker.stop()
    assert events.kinds() == ["started", "stopped"]


def test_a_stopped_worker_can_start_again(live_repo, handlers, events, make_worker):
    handlers.register("t", lambda payload: None)
    worker = make_worker()
    worker.start()
    worker.stop()
    job, _ = live_repo.create("t")
    worker.run(burst=True)
    assert live_repo.find_by_id(job.id).status == "completed"


class ClaimSpy:
    """A queue that forwards to the repository and lets a test see (or break) claims."""

    def __init__(self, repo, *, failures: int = 0):
        self.repo = repo
        self.failures = failures
        self.empty_claims = 0
        self.empty = threading.Event()
        self.claims = 0

    def complete_and_claim_many(self, completions, n, types=None, *, worker_id, queues=None):
        self.claims += 1
        if self.failures:
            self.failures -= 1
            raise pw.OperationalError("database is locked")
        done, jobs = self.repo.complete_and_claim_many(completions, n, types, worker_id=worker_id, queues=queues)
        if not jobs:
            self.empty_claims += 1
            self.empty.set()
        return done, jobs

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_wakeup_interrupts_an_idle_wait(live_repo, handlers, events, make_worker):
    handlers.register("t", lambda payload: None)
    spy = ClaimSpy(live_repo)
    worker = make_worker(spy, poll_interval=600, max_poll_interval=600)
    worker.start()
    assert spy.empty.wait(WAIT)  # the thread found nothing and now sleeps for 600 s
    job, _ = live_repo.create("t")
    worker.wakeup()
    assert events.wait_for("completed")[0].job_id == job.id


def test_idle_polling_backs_off_to_a_bound():
    delays = [0.5]
    for _ in range(6):
        delays.append(next_idle_delay(delays[-1], 5.0))
    assert delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_a_database_error_while_claiming_is_reported_and_survived(live_repo, handlers, events, make_worker):
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    worker = make_worker(ClaimSpy(live_repo, failures=2))
    worker.start()
    events.wait_for("completed")
    errors = events.of("error")
    assert len(errors) == 2 and "database is locked" in errors[0].error and "during=claim" in errors[0].message
    assert live_repo.find_by_id(job.id).status == "completed"


def test_heartbeats_keep_a_long_job_on_a_live_worker_from_being_reaped(live_repo, handlers, events, make_worker):
    handlers.register("long", lambda payload: time.sleep(1.2))
    job, _ = live_repo.create("long")
    # stale after 0.45 s: beats every 0.15 s, reaps every 0.225 s, while the job runs 1.2 s.
    make_worker(stale_after=0.45).run(burst=True)
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count) == ("completed", 0)
    assert after.heartbeat_at is not None
    assert live_repo.errors_for(job.id) == []
    assert "reaped" not in events.kinds() and "lost" not in events.kinds()


def test_the_worker_reaps_a_dead_workers_claim_and_runs_the_job(live_repo, handlers, events, make_worker):
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    live_repo.claim("dead-worker")
    time.sleep(0.3)
    make_worker(stale_after=0.2).run(burst=True)
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count, after.worker_id) == ("completed", 1, "w1")
    assert events.kinds()[:3] == ["started", "reaped", "claimed"]
    assert "dead-worker lost its claim" in live_repo.errors_for(job.id)[0].error


def test_a_claim_taken_back_while_running_is_reported_lost_and_never_completed(
    live_repo, handlers, events, make_worker
):
    go = threading.Event()
    handlers.register("t", lambda payload: go.wait(WAIT))
    job, _ = live_repo.create("t")
    worker = make_worker(stale_after=6)  # beats every 2 s; its reaper leaves the new claim alone for 6 s
    worker.start()
    events.wait_for("claimed")
    # As if this worker had hung: the claim is reaped and taken by another worker.
    assert live_repo.reap_stale(timedelta(0)) == 1
    other = live_repo.claim("other")
    assert other.id == job.id and other.attempt == 2

    lost = events.wait_for("lost")[0]  # seen by the heartbeat while the handler still runs
    assert lost.job_id == job.id and lost.attempt == 1
    go.set()
    worker.stop(timeout=WAIT)

    after = live_repo.find_by_id(job.id)
    assert (after.status, after.worker_id, after.retry_count) == ("running", "other", 1)
    assert "completed" not in events.kinds() and worker.stats.completed == 0
    assert live_repo.complete(job.id, worker_id="other", attempt=2).status == "completed"


def test_a_lost_plain_handler_holds_its_slot_until_it_returns_and_is_reported_once(
    live_repo, handlers, events, make_worker
):
    go, ran = threading.Event(), []
    handlers.register("t", lambda payload: go.wait(WAIT))
    handlers.register("q", lambda payload: ran.append(payload["n"]))
    job, _ = live_repo.create("t")
    queue = CountingQueue(live_repo)
    worker = make_worker(queue, stale_after=6)  # one slot
    worker.start()
    events.wait_for("claimed")
    assert live_repo.reap_stale(timedelta(0)) == 1  # as another process's reaper would, the handler still running
    assert live_repo.claim("other").id == job.id and live_repo.complete(job.id, worker_id="other", attempt=2)
    live_repo.create("q", {"n": 1})
    lost = events.wait_for("lost")[0]
    # Python cannot stop the handler's thread: the slot stays busy, claims nothing, and the event says why.
    assert "a plain function runs on until it returns, holding its slot" in lost.note
    worker.wakeup()
    time.sleep(0.3)
    assert ran == [] and worker.stats.running == 1 and events.kinds().count("claimed") == 1

    go.set()  # the handler returns: its refused completion is not reported again, and the slot is free
    events.wait_for("completed")
    assert ran == [1] and events.kinds().count("lost") == 1 and worker.stats.completed == 1

    # Lost again, then stopped while its handler still runs: no release is tried for a claim known lost.
    go.clear()
    second, _ = live_repo.create("t")
    events.wait_for("claimed", 3)
    assert live_repo.reap_stale(timedelta(0)) == 1 and live_repo.claim("other").id == second.id
    events.wait_for("lost", 2)
    worker.stop(timeout=0.2)
    go.set()
    assert queue.calls["release"] == 0
    notes = [event.note for event in events.of("lost")]
    assert len(notes) == 3 and "nothing to release" in notes[2]
    assert live_repo.find_by_id(second.id).worker_id == "other"


def test_a_lost_claims_handler_is_told_to_stop_and_a_coroutine_is_cancelled_freeing_its_slot(
    live_repo, handlers, events, make_worker
):
    """Another worker may run the job now: a coroutine still running it is cancelled, and a plain function sees
    ``current_job().cancel_requested``, as for an operator's cancel."""
    cancelled, told, ran = threading.Event(), threading.Event(), []

    async def waits(payload):
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def polls(payload):
        deadline = time.monotonic() + WAIT
        while not current_job().cancel_requested and time.monotonic() < deadline:
            time.sleep(0.02)
        told.set()

    handlers.register("async", waits)
    handlers.register("plain", polls)
    handlers.register("q", lambda payload: ran.append(payload["n"]))
    worker = make_worker(stale_after=3)  # one slot; beats every second
    worker.start()
    lost_ids = []
    for kind, stopped in (("async", cancelled), ("plain", told)):
        claims = len(events.of("claimed"))  # counted before the create: the worker may claim it at once
        job, _ = live_repo.create(kind, retry_backoff=0.01)
        lost_ids.append(job.id)
        events.wait_for("claimed", claims + 1)
        assert live_repo.reap_stale(timedelta(0)) == 1
        while (other := live_repo.claim("other")) is None:  # due again after the reap's short back-off
            time.sleep(0.01)
        assert other.id == job.id
        assert stopped.wait(WAIT), f"the {kind} handler was not told its claim was lost"
        live_repo.complete(job.id, worker_id="other", attempt=2)
    live_repo.create("q", {"n": 1})  # the slot is free again: it runs the next job
    deadline = time.monotonic() + WAIT
    while ran != [1] and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.stop(timeout=WAIT)
    assert ran == [1] and [e.attempt for e in events.of("lost")] == [1, 1]
    assert "cancel-requested" not in events.kinds()  # no operator asked: it was said as lost, once each
    assert [live_repo.find_by_id(job_id).status for job_id in lost_ids] == ["completed", "completed"]


def test_a_failing_subscriber_does_not_stop_the_worker(live_repo, handlers, make_worker):
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    worker = make_worker()

    def broken(event):
        raise RuntimeError("subscriber bug")

    worker.subscribe(broken)
    worker.run(burst=True)
    assert live_repo.find_by_id(job.id).status == "completed"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("concurrency", 0),
        ("concurrency", True),
        ("worker_id", ""),
        ("poll_interval", 0),
        ("max_poll_interval", -1),
        ("stale_after", float("inf")),
        ("shutdown_timeout", -1),
    ],
)
def test_bad_settings_name_what_to_fix(live_repo, option, value):
    with pytest.raises(ValidationError) as info:
        Worker(live_repo, **{option: value})
    assert info.value.field == option


def test_an_idle_ceiling_below_the_poll_interval_is_refused(live_repo):
    # The back-off would start above its ceiling: one of the two settings would be silently ignored.
    with pytest.raises(ValidationError) as info:
        Worker(live_repo, poll_interval=5, max_poll_interval=1)
    assert info.value.field == "max_poll_interval"
    assert "give max_poll_interval at least 5s (or leave it out), or a poll_interval of at most 1s" in str(info.value)
    assert Worker(live_repo, poll_interval=2, max_poll_interval=2).max_poll_interval == 2


def test_defaults(live_repo):
    assert Worker(live_repo).max_poll_interval == 5
    worker = Worker(live_repo, poll_interval=8)
    assert worker.max_poll_interval == 8  # the default ceiling is never below the poll interval
    assert worker.heartbeat_interval == 10 and worker.reap_interval == 150
    assert worker.worker_id.endswith(f"-{os.getpid()}")
    assert "echo" in worker.registry


class AlternatingClaims(ClaimSpy):
    """A claim that fails every other time, as on a database that keeps dropping connections."""

    def complete_and_claim_many(self, completions, n, types=None, *, worker_id, queues=None):
        self.claims += 1
        self.failures = 1 - self.failures
        if not self.failures:
            raise pw.OperationalError("server closed the connection unexpectedly")
        return self.repo.complete_and_claim_many(completions, n, types, worker_id=worker_id, queues=queues)


def test_a_burst_whose_claims_all_fail_for_stale_after_gives_up(live_repo, handlers, events, make_worker):
    # Regression: a burst (cron, CI) on a database that had gone away retried its claim for ever.
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    spy = ClaimSpy(live_repo, failures=10**9)
    worker = make_worker(spy, stale_after=0.3, poll_interval=0.01, max_poll_interval=0.05, concurrency=3)

    with pytest.raises(WorkerGaveUp, match=r"every claim failed for 0\.3s") as raised:
        worker.run(burst=True)

    assert "the last with OperationalError: database is locked" in str(raised.value)
    errors = events.of("error")
    assert len(errors) >= 3 and all("during=claim" in e.message for e in errors)  # tried again until then
    # ... after a poll wait each time, as an idle worker polls. Regression: the look for the jobs of a failed
    # claim woke the slots, which claimed again at once: thousands of claims (and error lines) a second.
    assert spy.claims <= 3 * (1 + 0.3 / 0.01)
    assert events.kinds()[-1] == "stopped" and not worker.is_running  # a whole stop, as at a signal
    assert live_repo.find_by_id(job.id).status == "pending"  # never claimed: the next run's


def test_a_burst_rides_out_claims_that_fail_now_and_then(live_repo, handlers, events, make_worker):
    # Only claims failing without a break for stale_after end a burst: each claim that works starts the count
    # again. Here every other claim fails, over more than stale_after (the jobs alone sleep 0.8 s), and no
    # failure waits more than the poll interval's ceiling (0.05 s) for the claim that works after it.
    handlers.register("t", lambda payload: time.sleep(0.02))
    live_repo.create_many([{"type": "t"} for _ in range(40)])
    spy = AlternatingClaims(live_repo)

    make_worker(spy, stale_after=0.5, ack_delay=0.0).run(burst=True)

    assert live_repo.counts()["completed"] == 40
    assert len(events.of("error")) >= 40 and spy.claims >= 80


class CountingQueue:
    """The repository, counting calls per method."""

    def __init__(self, repo):
        self.repo = repo
        self.calls = Counter()

    def __getattr__(self, name):
        method = getattr(self.repo, name)

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted


def test_a_busy_worker_completes_each_job_and_claims_the_next_in_one_call(live_repo, handlers, events, make_worker):
    # One slot: each round writes the completion waiting in the batch and claims the next job, one call.
    ran = []
    handlers.register("t", lambda payload: ran.append(payload["n"]))
    live_repo.create_many([{"type": "t", "payload": {"n": n}} for n in range(30)])
    queue = CountingQueue(live_repo)

    make_worker(queue).run(burst=True)

    assert ran == list(range(30))  # claim order kept, each once
    assert live_repo.counts() == {"pending": 0, "running": 0, "completed": 30, "failed": 0, "cancelled": 0}
    # The first claim, one per job that writes its completion and claims the next (the last finds none).
    assert queue.calls["complete_and_claim_many"] == 31 and queue.calls["complete_many"] == 0
    assert events.kinds().count("completed") == 30 and events.kinds().count("claimed") == 30


def test_a_stop_during_a_busy_drain_claims_nothing_more(live_repo, handlers, events, make_worker):
    ran = []
    live_repo.create_many([{"type": "t", "payload": {"n": n}} for n in range(5)])
    queue = CountingQueue(live_repo)
    worker = make_worker(queue)

    def handler(payload):
        ran.append(payload["n"])
        if payload["n"] == 1:
            worker.request_stop()  # as SIGTERM does

    handlers.register("t", handler)
    worker.run()

    assert ran == [0, 1]  # the job that saw the stop finished; its completion claimed no next job
    assert live_repo.counts() == {"pending": 3, "running": 0, "completed": 2, "failed": 0, "cancelled": 0}
    # The first claim and job 0's completion with the next claim; job 1's completion alone, flushed by the stop.
    assert queue.calls["complete_and_claim_many"] == 2 and queue.calls["complete_many"] == 1
    assert "released" not in events.kinds()


class DeadReleases(CountingQueue):
    """The repository, except that ``release`` always meets a database error."""

    def release(self, *args, **kwargs):
        self.calls["release"] += 1
        raise pw.OperationalError("server closed the connection unexpectedly")


def test_a_stop_tries_each_release_once_and_leaves_the_rest_to_the_reaper(live_repo, handlers, events, make_worker):
    started, let_go = threading.Event(), threading.Event()
    handlers.register("t", lambda payload: (started.set(), let_go.wait(WAIT)))
    job, _ = live_repo.create("t")
    queue = DeadReleases(live_repo)
    worker = make_worker(queue, stale_after=600)  # retrying for stale_after would hold the stop for minutes
    worker.start()
    assert started.wait(WAIT)
    worker.stop(timeout=0)
    let_go.set()
    assert queue.calls["release"] == 1
    errors = events.of("error")
    assert [e.message.endswith("; retrying") for e in errors] == [False] and "during=release" in errors[0].message
    assert live_repo.find_by_id(job.id).status == "running"  # the reaper's to take back
    # And the job it left running is named, with what becomes of it (the error alone did not say).
    [unwritten] = events.of("unwritten")
    assert (
        unwritten.job_id == job.id and "not released" in unwritten.message and "stale_after (600s)" in unwritten.message
    )


def test_a_stop_that_leaves_a_job_unreleased_does_not_say_it_stopped_clean(live_repo, handlers, events, make_worker):
    # Regression: the release that failed was said (an "unwritten ... not released" line), but the stop's last
    # line was "stopped worker=... completed=0 failed=0", as after a clean stop, while the job stayed running
    # until the reaper. An operator (or an alert) reading the stopped line, whose " unwritten=N" is there to
    # say a stop was not clean, saw nothing.
    started, let_go = threading.Event(), threading.Event()
    handlers.register("t", lambda payload: (started.set(), let_go.wait(WAIT)))
    job, _ = live_repo.create("t")
    worker = make_worker(DeadReleases(live_repo), stale_after=600)
    worker.start()
    assert started.wait(WAIT)
    worker.stop(timeout=0)
    let_go.set()
    assert live_repo.find_by_id(job.id).status == "running"
    [stopped] = events.of("stopped")
    assert stopped.message.endswith(" unwritten=1"), stopped.message


class FlakyAcks:
    """A queue whose ``complete`` (alone or with the next claim) fails the first ``failures`` times."""

    def __init__(self, repo, failures):
        self.repo = repo
        self.failures = failures
        self.failed = 0

    def _flaky(self):
        if self.failures:
            self.failures -= 1
            self.failed += 1
            raise pw.OperationalError("database is locked")

    def complete_many(self, completions, **held):
        self._flaky()
        return self.repo.complete_many(completions, **held)

    def complete_and_claim_many(self, completions, n, types=None, **held):
        if completions:
            self._flaky()
        return self.repo.complete_and_claim_many(completions, n, types, **held)

    def __getattr__(self, name):
        return getattr(self.repo, name)


@pytest.mark.parametrize("failures", [2, 10_000])
def test_a_database_error_while_recording_an_outcome_is_retried_then_left_to_the_reaper(
    live_repo, handlers, events, make_worker, monkeypatch, failures
):
    monkeypatch.setattr("queue_core.worker.acks.ACK_FIRST_WAIT", 0.01)
    monkeypatch.setattr("queue_core.worker.acks.ACK_MAX_WAIT", 0.02)
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")

    queue = FlakyAcks(live_repo, failures)
    make_worker(queue, stale_after=0.3).run(burst=True)

    errors = events.of("error")
    assert all("during=complete" in e.message for e in errors)
    if failures == 2:
        # The first try, the completion with the next claim; the second, the completion alone.
        assert errors[0].message.endswith('"; retrying') and errors[1].message.endswith('"; 2 tries failed; retrying')
        assert "during=complete_and_claim" in errors[0].message and "during=complete " in errors[1].message
        assert len(errors) == 2 and live_repo.find_by_id(job.id).status == "completed"
    else:
        # Tries for as long as the claim could be ours (stale_after), then the job stays running: the
        # reaper brings it back (at least once delivery). Said at the 1st, 2nd, 4th, 8th... try and the last:
        # every try said made an outage of a minute ~50 lines a worker.
        told = [int(m.group(1)) if (m := re.search(r"; (\d+) tries failed", e.message)) else 1 for e in errors]
        assert queue.failed >= 5 and told[-1] == queue.failed
        assert told == sorted({2**n for n in range(queue.failed.bit_length())} | {queue.failed})
        assert not errors[-1].message.endswith("; retrying")
        assert all(e.message.endswith("; retrying") for e in errors[:-1])
        # Left running for a reaper; or taken back already by this worker's own reaper (every stale_after / 2),
        # which may find the claim stale while the write is still being retried (a loaded machine): never
        # completed.
        after = live_repo.find_by_id(job.id)
        assert after.status == "running" or (after.status == "pending" and "reaped" in events.kinds()), after
        assert "completed" not in events.kinds()


class HeartbeatSpy:
    """The repository, with a condition a test can wait on for heartbeats that include a job."""

    def __init__(self, repo):
        self.repo = repo
        self.beats = threading.Condition()
        self.sent: list[list[int]] = []  # the job ids of each heartbeat call

    def heartbeat(self, job_ids, *, worker_id, attempts=None):
        job_ids = list(job_ids)
        held = self.repo.heartbeat(job_ids, worker_id=worker_id, attempts=attempts)
        with self.beats:
            self.sent.append(job_ids)
            self.beats.notify_all()
        return held

    def beats_with(self, job_id: int) -> int:
        return sum(job_id in ids for ids in self.sent)

    def __getattr__(self, name):
        return getattr(self.repo, name)


def test_a_stale_runs_clean_up_leaves_the_newer_attempt_heartbeated(live_repo, handlers, events, make_worker):
    # Issue 19, defect 1: the worker keyed its running jobs by id, so attempt 1 finishing removed attempt
    # 2's entry; attempt 2 was no longer heartbeated, the worker reaped it itself and ran it a third time.
    first_may_return, second_started, second_may_return = threading.Event(), threading.Event(), threading.Event()
    third_started = threading.Event()
    attempts = []

    def once_reclaimed(payload):
        attempt = current_job().attempt
        attempts.append(attempt)
        if attempt == 1:
            first_may_return.wait(WAIT)
        elif attempt == 2:
            second_started.set()
            second_may_return.wait(WAIT)
        else:
            with queue.beats:  # wakes the test's wait below at once
                third_started.set()
                queue.beats.notify_all()

    queue = HeartbeatSpy(live_repo)
    handlers.register("t", once_reclaimed)
    job, _ = live_repo.create("t", max_retries=5)
    stale_after = 1.5  # beats every 0.5 s, reaps every 0.75 s
    worker = make_worker(queue, concurrency=2, stale_after=stale_after)
    worker.start()
    events.wait_for("claimed")
    # As if slot 0 had hung: its claim is reaped, and slot 1 of the same worker claims attempt 2.
    assert live_repo.reap_stale(timedelta(0)) == 1
    worker.wakeup()
    assert second_started.wait(WAIT)
    first_may_return.set()
    assert events.wait_for("lost")[0].attempt == 1  # attempt 1's completion was refused

    # Attempt 2 stays heartbeated well past stale_after (beats >= 2 * stale_after / interval), unless a
    # third attempt starts: the failure this test guards against.
    with queue.beats:
        beats = queue.beats_with(job.id)
        enough = beats + math.ceil(2 * stale_after / worker.heartbeat_interval)
        queue.beats.wait_for(lambda: queue.beats_with(job.id) >= enough or third_started.is_set(), WAIT)
    assert not third_started.is_set(), attempts
    assert worker.stats.running == 1
    second_may_return.set()
    worker.stop(timeout=WAIT)

    after = live_repo.find_by_id(job.id)
    assert (after.status, after.attempt) == ("completed", 2)
    assert attempts == [1, 2]
    assert "reaped" not in events.kinds()


def test_a_run_whose_job_the_same_worker_claimed_again_is_told_it_lost_it(live_repo, handlers, events, make_worker):
    # The heartbeat named job ids only: attempt 1 of a job reaped and claimed again by this worker (attempt
    # 2) still counted as held, so its handler was never told to stop while attempt 2 ran beside it.
    told, second_started, attempts = threading.Event(), threading.Event(), []

    def reclaimed(payload):
        job = current_job()
        attempts.append(job.attempt)
        if job.attempt == 1:
            deadline = time.monotonic() + WAIT
            while not job.cancel_requested and time.monotonic() < deadline:
                time.sleep(0.01)
            if job.cancel_requested:
                told.set()
        else:
            second_started.set()
            told.wait(WAIT)

    handlers.register("t", reclaimed)
    job, _ = live_repo.create("t", max_retries=5)
    worker = make_worker(concurrency=2, stale_after=1.5)
    worker.start()
    events.wait_for("claimed")
    assert live_repo.reap_stale(timedelta(0)) == 1  # as if slot 0 had hung
    worker.wakeup()
    assert second_started.wait(WAIT)
    assert told.wait(WAIT), "attempt 1's handler was never told its job was taken back"
    lost = events.wait_for("lost")[0]
    assert lost.attempt == 1 and "taken back while it ran" in lost.message
    worker.stop(timeout=WAIT)
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.attempt, after.retry_count) == ("completed", 2, 1)
    assert attempts == [1, 2]


class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("__str__ is broken too")


class StrNotText(Exception):
    def __str__(self):
        return 42


@pytest.mark.parametrize("exception", [StrRaises, StrNotText])
def test_an_exception_without_a_readable_message_fails_the_attempt_with_its_type_name(
    live_repo, handlers, events, make_worker, exception
):
    # Issue 19, defect 3: str(exc) raising killed the worker thread and left the job running forever.
    def broken(payload):
        raise exception()

    handlers.register("broken", broken)
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("broken", max_retries=0)
    worker = make_worker()
    worker.start()  # not run(burst=True): with the defect a burst never ends

    failed = events.wait_for("failed")[0]
    assert (failed.job_id, failed.error) == (job.id, exception.__name__)
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.error) == ("failed", exception.__name__)
    # The slot survived: it runs the next job.
    other, _ = live_repo.create("t")
    worker.wakeup()
    assert events.wait_for("completed")[0].job_id == other.id
    worker.stop(timeout=WAIT)


def test_a_job_whose_handler_returns_an_unawaited_coroutine_fails_instead_of_completing(
    live_repo, handlers, events, make_worker
):
    # Issue 19, defect 4: the coroutine was never awaited and the job marked completed, its work undone.
    async def send(payload):
        pass

    handlers.register("send", lambda payload: send(payload))
    job, _ = live_repo.create("send", max_retries=0)
    make_worker().run(burst=True)
    after = live_repo.find_by_id(job.id)
    assert after.status == "failed" and "returned a coroutine" in after.error
    assert "completed" not in events.kinds()


def test_a_nul_in_a_handlers_error_is_stored_visibly_and_the_attempt_fails(live_repo, handlers, events, make_worker):
    # Issue 19, defect 5: PostgreSQL refuses NUL in text, so fail() raised DataError until stale_after ran
    # out and the job was left running with nothing recorded.
    def nul(payload):
        raise ValueError("bad byte \x00 here")

    handlers.register("nul", nul)
    job, _ = live_repo.create("nul", max_retries=0)
    make_worker(stale_after=1).run(burst=True)  # short: with the defect the worker retries fail() this long

    after = live_repo.find_by_id(job.id)
    assert (after.status, after.error) == ("failed", "bad byte \\x00 here")
    assert [e.error for e in live_repo.errors_for(job.id)] == ["bad byte \\x00 here"]
    assert "error" not in events.kinds()


@pytest.mark.parametrize("how", ["second request", "shutdown timeout"])
def test_a_release_at_stop_says_truly_why(live_repo, handlers, events, make_worker, how):
    # Issue 19, "also seen": a second SIGTERM one second in was logged as "still running after the shutdown
    # timeout (3.1s)" with a 30 s timeout: the time the job had run, not the timeout, and not the reason.
    go = threading.Event()
    handlers.register("t", lambda payload: go.wait(WAIT))
    job, _ = live_repo.create("t")
    worker = make_worker(shutdown_timeout=120 if how == "second request" else 0.25)
    worker.start()
    events.wait_for("claimed")
    worker.request_stop()  # the first SIGTERM
    if how == "second request":
        worker.request_stop(0)  # the second one
    worker.stop()
    go.set()

    note = events.wait_for("released")[0].message.split(": ", 1)[1]
    if how == "second request":
        assert note.startswith("back to pending, no retry counted: released by a second stop request ")
        assert note.endswith("s into the 120s shutdown timeout")
    else:
        assert note == "back to pending, no retry counted: still running after the shutdown timeout (0.25s)"
    assert live_repo.find_by_id(job.id).status == "pending"


class ClaimSeenBeforeAFailure:
    """The repository, but a claim made while a job runs answers what it saw before that job's failed attempt
    went back to pending: as a claim does whose statement (or HTTP request) was under way during that write."""

    def __init__(self, repo):
        self.repo = repo
        self.worker = None
        self.running = threading.Event()  # the failing job's handler is running
        self.claim_under_way = threading.Event()
        self.held = 0

    def __getattr__(self, name):
        return getattr(self.repo, name)

    def complete_and_claim_many(self, acks, n, types, **options):
        if not self.running.is_set() or self.held:
            return self.repo.complete_and_claim_many(acks, n, types, **options)
        self.held += 1
        answer = self.repo.complete_and_claim_many(acks, n, types, **options)  # the failing job still runs
        self.claim_under_way.set()
        # Answer only once the failure is written and its slot is done with the job.
        deadline = time.monotonic() + WAIT
        while self.worker.stats.running and time.monotonic() < deadline:
            time.sleep(0.005)
        return answer


def test_a_burst_does_not_end_on_a_claim_that_began_before_a_failed_attempt_went_back_to_pending(
    live_repo, handlers, make_worker
):
    # Regression: the burst ended when a slot's claim came back empty after the other slot's job had failed
    # and gone back to pending (retry_backoff=0) while that claim was under way; the retry was left pending.
    queue = ClaimSeenBeforeAFailure(live_repo)

    def decline(payload):
        queue.running.set()
        assert queue.claim_under_way.wait(WAIT), "the other slot never claimed while this job ran"
        raise ValueError("card declined")

    handlers.register("charge", decline)
    job, _ = live_repo.create("charge", max_retries=1, retry_backoff=0)
    worker = queue.worker = make_worker(queue, concurrency=2)

    worker.run(burst=True)

    assert queue.held == 1
    assert live_repo.find_by_id(job.id).status == "failed"  # both attempts ran
    assert [e.attempt for e in live_repo.errors_for(job.id)] == [1, 2]


def test_a_completion_is_counted_before_it_is_reported(live_repo, handlers):
    # Regression: a batch's completions were reported before they were counted, so a listener that read the
    # counters on the event (the console's worker pane) showed one job fewer, and kept showing it.
    handlers.register("t", lambda payload: None)
    live_repo.create_many([{"type": "t"} for _ in range(3)])
    seen = []
    worker = None

    def on_event(event):
        if event.kind == "completed":
            seen.append(worker.stats.completed)

    worker = Worker(live_repo, registry=handlers, on_event=on_event, worker_id="w1", poll_interval=0.01)
    worker.run(burst=True)

    assert seen == [1, 2, 3]
