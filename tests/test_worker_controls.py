"""Operator controls as a Worker lives them (issue 13): per-queue slots, the registry row, cancel of a running job.

In-process workers on both backends; the real-process checks (SIGKILL -> lost, ``--queues`` under a flood)
are in ``test_worker_cli``.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import peewee as pw
import pytest
from worker_support import WAIT

from queue_core.errors import ValidationError
from queue_core.store.repository import JobRepository
from queue_core.worker import Worker
from queue_core.worker.handlers import current_job
from queue_core.worker.handlers import sleep as builtin_sleep


def wait_until(predicate, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class CallLog(JobRepository):
    """A repository that records the worker's calls (name, keyword arguments) and can be told to fail some."""

    def __init__(self, db, failing=()):
        super().__init__(db)
        self.calls: list[tuple[str, dict]] = []
        self.failing = set(failing)
        self.lock = threading.Lock()

    def _log(self, name: str, kwargs: dict) -> None:
        with self.lock:
            self.calls.append((name, kwargs))
        if name in self.failing:
            raise RuntimeError(f"{name} broken on purpose")

    def called(self, name: str) -> list[dict]:
        with self.lock:
            return [kwargs for called, kwargs in self.calls if called == name]

    def complete_and_claim_many(self, completions, n, types=None, **kwargs):
        self._log("claim", kwargs)
        return super().complete_and_claim_many(completions, n, types, **kwargs)

    def register_worker(self, worker_id, **kwargs):
        self._log("register_worker", kwargs)
        return super().register_worker(worker_id, **kwargs)

    def worker_seen(self, worker_id, **kwargs):
        self._log("worker_seen", kwargs)
        return super().worker_seen(worker_id, **kwargs)

    def worker_stopped(self, worker_id):
        self._log("worker_stopped", {})
        return super().worker_stopped(worker_id)

    def cancel_requests(self, job_ids, *, worker_id):
        started = time.monotonic()
        found = super().cancel_requests(job_ids, worker_id=worker_id)
        self._log("cancel_requests", {"started": started, "found": list(found)})
        return found


def the_worker(repo, worker_id="w1"):
    rows = [w for w in repo.workers() if w.id == worker_id]
    return rows[0] if rows else None


# --- per-queue slots ---------------------------------------------------------------------------------


def test_each_slot_claims_only_from_its_own_queue(db, live_repo, handlers, make_worker):
    handlers.register("t", lambda payload: None)
    for queue in ("mail", "default", "mail", "other"):
        live_repo.create("t", queue=queue)
    queue = CallLog(db)

    worker = make_worker(queue, queues={"mail": 2, "default": 1})
    assert worker.concurrency == 3
    worker.run(burst=True)

    claims = queue.called("claim")
    assert {tuple(call["queues"]) for call in claims} == {("mail",), ("default",)}
    by_queue = {}
    for row in db.execute_sql("SELECT queue, status FROM jobs").fetchall():
        by_queue.setdefault(row[0], set()).add(row[1])
    assert by_queue == {"mail": {"completed"}, "default": {"completed"}, "other": {"pending"}}


def test_without_queues_every_slot_serves_every_queue(db, live_repo, handlers, make_worker):
    handlers.register("t", lambda payload: None)
    for queue in ("mail", "default", "other"):
        live_repo.create("t", queue=queue)
    queue = CallLog(db)

    make_worker(queue, concurrency=2).run(burst=True)

    assert {call["queues"] for call in queue.called("claim")} == {None}
    assert live_repo.counts()["completed"] == 3


def test_a_burst_with_per_queue_slots_drains_every_queue_before_it_ends(live_repo, handlers, make_worker):
    # One queue empty from the start must not end the burst while another still has work.
    handlers.register("t", lambda payload: time.sleep(0.02))
    for i in range(6):
        live_repo.create("t", {"i": i}, queue="busy")

    make_worker(queues={"idle": 1, "busy": 1}).run(burst=True)

    assert live_repo.counts()["completed"] == 6


def test_a_flooded_queue_does_not_hold_up_another(live_repo, handlers, make_worker):
    release = threading.Event()
    started = {}
    handlers.register("slow", lambda payload: release.wait(WAIT))
    handlers.register("fast", lambda payload: started.setdefault(current_job().id, time.monotonic()))
    for _ in range(10):
        live_repo.create("slow", queue="slow")
    fast = [live_repo.create("fast", queue="fast")[0].id for _ in range(3)]

    worker = make_worker(queues={"slow": 1, "fast": 1})
    worker.start()
    try:
        # The slow slot holds its job (its thread's first claim may come after the fast jobs' under load:
        # CI read running=0 there once), and that job stays running until ``release``.
        wait_until(lambda: live_repo.queue_state("slow").counts["running"] == 1, "the slow slot to take its job")
        # The fast jobs must finish (their acks land in the database, batched) while the slow slot still
        # holds its one job: started alone would race the last fast job's ack.
        wait_until(
            lambda: live_repo.queue_state("fast").counts["completed"] == len(fast),
            "the fast jobs to complete while the slow queue is busy",
        )
        assert len(started) == len(fast)
        assert live_repo.queue_state("slow").counts["running"] == 1  # the one slow slot
        assert live_repo.queue_state("fast").counts["running"] == 0
    finally:
        release.set()
        worker.stop()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"queues": {}}, ValidationError),
        ({"queues": {"mail": 0}}, ValidationError),
        ({"queues": {"mail": 257}}, ValidationError),
        ({"queues": {"mail": True}}, ValidationError),
        ({"queues": {"": 1}}, ValidationError),
        ({"queues": ["mail"]}, ValidationError),
        ({"queues": {"mail": 2}, "concurrency": 5}, ValidationError),
    ],
)
def test_bad_queue_slots_are_refused_before_anything_runs(live_repo, options, error):
    with pytest.raises(error):
        Worker(live_repo, **options)


# --- the registry ------------------------------------------------------------------------------------


def test_the_worker_registers_reports_its_counts_and_stops_cleanly(live_repo, handlers, make_worker):
    handlers.register("ok", lambda payload: None)
    handlers.register("bad", lambda payload: 1 / 0)
    live_repo.create("ok")
    live_repo.create("bad", max_retries=0)

    worker = make_worker(queues={"default": 2}, stale_after=30)
    worker.start()
    wait_until(lambda: worker.stats.completed + worker.stats.failed == 2, "both jobs to finish")
    row = the_worker(live_repo)
    assert row is not None and row.state == "running"
    assert (row.host, row.pid, row.concurrency, row.stale_after) == (socket.gethostname(), os.getpid(), 2, 30)
    assert list(row.queues) == ["default"]
    worker.stop()

    row = the_worker(live_repo)
    assert row.state == "stopped" and row.stopped_at is not None
    assert (row.running, row.completed, row.failed) == (0, 1, 1)


def test_heartbeats_keep_the_row_fresh(db, live_repo, make_worker):
    queue = CallLog(db)
    worker = make_worker(queue, stale_after=0.3)  # a beat every 0.1 s
    worker.start()
    wait_until(lambda: len(queue.called("worker_seen")) >= 3, "three beats")
    assert the_worker(live_repo).state == "running"
    worker.stop()
    assert queue.called("worker_stopped") == [{}]
    assert queue.called("register_worker")[0]["queues"] is None  # every queue


def test_a_registry_that_cannot_be_written_is_an_error_event_and_jobs_still_run(
    db, live_repo, handlers, events, make_worker
):
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    queue = CallLog(db, failing={"worker_seen", "worker_stopped"})

    worker = make_worker(queue, stale_after=0.3)
    worker.start()
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the job to complete")
    wait_until(lambda: len(queue.called("worker_seen")) >= 2, "beats to go on after a failed one")
    worker.stop()

    failed = {e.message.split("during=")[1].split()[0] for e in events.of("error")}
    assert failed == {"worker_seen", "worker_stopped"}
    assert events.kinds()[-1] == "stopped"


def test_a_registration_that_always_fails_is_tried_again_at_each_beat_and_jobs_still_run(
    db, live_repo, handlers, events, make_worker
):
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    queue = CallLog(db, failing={"register_worker"})

    worker = make_worker(queue, stale_after=0.3)
    worker.start()
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the job to complete")
    wait_until(lambda: len(queue.called("register_worker")) >= 3, "beats to try the registration again")
    worker.stop()

    failed = {e.message.split("during=")[1].split()[0] for e in events.of("error")}
    assert failed == {"register_worker"}  # no refresh or stop of a row that was never written
    assert queue.called("worker_seen") == [] and queue.called("worker_stopped") == []
    assert the_worker(live_repo) is None
    assert events.kinds()[-1] == "stopped"


def error_actions(events) -> list[str]:
    return [e.message.split("during=")[1].split()[0] for e in events.of("error")]


def said_at(tries: int) -> list[int]:
    """The failures in a row an outage's lines are said at: 1, 2, 4, 8... up to ``tries``."""
    return [1 << k for k in range(tries.bit_length())]


def test_a_registry_away_for_many_beats_is_a_few_lines_not_one_a_beat(db, handlers, events, make_worker):
    # Regression: every failed refresh of the row was a line, one each beat (10 s) for the whole outage, from
    # every worker; now the 1st, 2nd, 4th, 8th... in a row, as failed claims and outcome writes are said.
    queue = CallLog(db, failing={"worker_seen"})
    worker = make_worker(queue, stale_after=0.3)  # a beat every 0.1 s
    worker.start()
    wait_until(lambda: len(queue.called("worker_seen")) >= 10, "ten failed beats")
    worker.stop()
    tries = len(queue.called("worker_seen"))  # the stop's refresh of the counts included
    lines = [e.message for e in events.of("error") if "during=worker_seen" in e.message]
    assert len(lines) == len(said_at(tries)) and len(lines) < tries, lines
    assert all(f"; {n} tries failed" in line for n, line in zip(said_at(tries)[1:], lines[1:], strict=True))


class HeartbeatAway(CallLog):
    """Heartbeats raise while ``away`` is set: the queue away while a job runs."""

    def __init__(self, db):
        super().__init__(db)
        self.away = threading.Event()
        self.away.set()
        self.beats = self.worked = 0

    def heartbeat(self, job_ids, **kwargs):
        if self.away.is_set():
            self.beats += 1
            raise pw.OperationalError("server closed the connection unexpectedly")
        held = super().heartbeat(job_ids, **kwargs)
        self.worked += 1
        return held


def test_heartbeats_failing_while_a_job_runs_are_a_few_lines_and_start_again_once_one_works(
    db, handlers, events, make_worker
):
    release = threading.Event()
    handlers.register("t", lambda payload: release.wait(WAIT))
    queue = HeartbeatAway(db)
    queue.create("t")
    worker = make_worker(queue, stale_after=0.6)  # a beat every 0.2 s
    worker.start()
    wait_until(lambda: queue.beats >= 10, "ten failed heartbeats")
    queue.away.clear()
    wait_until(lambda: queue.worked >= 1, "a heartbeat that works")
    failed_beats = queue.beats
    before = len(error_actions(events))
    queue.away.set()
    wait_until(lambda: len(error_actions(events)) > before, "the next outage's first line")
    release.set()
    worker.stop()
    beats = [line for line in error_actions(events)[:before] if line == "heartbeat"]
    assert 0 < len(beats) < 10, beats
    assert "tries failed" not in [e.message for e in events.of("error")][before]
    # The end of the outage is said once, with how long it lasted in tries (the second outage never ended).
    assert [e.message for e in events.of("recovered")] == [
        f"recovered worker=w1 during=heartbeat; works again after {failed_beats} failed tries"
    ]


class FailsFirstRegistration(CallLog):
    """The database locked or away as the worker starts: its first registration raises, the next ones work."""

    def register_worker(self, worker_id, **kwargs):
        if not self.called("register_worker"):
            self._log("register_worker", kwargs)
            raise pw.OperationalError("database is locked")
        return super().register_worker(worker_id, **kwargs)


def test_a_worker_whose_registration_failed_at_start_registers_at_a_later_beat(db, live_repo, events, make_worker):
    queue = FailsFirstRegistration(db)
    worker = make_worker(queue, stale_after=0.3)  # a beat every 0.1 s
    worker.start()
    try:
        # worker_seen only updates a row: without a registration later, the worker never showed in the registry.
        wait_until(lambda: the_worker(live_repo) is not None, "the worker's row")
        assert the_worker(live_repo).state == "running"
        assert len(queue.called("register_worker")) == 2
        wait_until(lambda: len(queue.called("worker_seen")) >= 2, "beats to refresh the row")
    finally:
        worker.stop()
    assert the_worker(live_repo).state == "stopped"
    assert [e.message.split("during=")[1].split()[0] for e in events.of("error")] == ["register_worker"]
    # Once it works, a line says so: the error line alone left the operator guessing.
    assert [e.message for e in events.of("recovered")] == [
        "recovered worker=w1 during=register_worker; works again after 1 failed try"
    ]


def test_a_worker_whose_row_was_pruned_while_it_ran_registers_again_at_its_next_beat(db, live_repo, make_worker):
    """A prune of workers silent that long (after a pause past --stale-after) removed a live worker's row, and
    its beats, which only update a row, left it out of the registry for the rest of its run."""
    queue = CallLog(db)
    worker = make_worker(queue, stale_after=0.3)  # a beat every 0.1 s
    worker.start()
    try:
        wait_until(lambda: the_worker(live_repo) is not None, "the worker's row")
        WorkerRecord = live_repo.WorkerRecord
        assert WorkerRecord.delete().where(WorkerRecord.id == "w1").execute() == 1  # as prune_workers does
        wait_until(lambda: len(queue.called("register_worker")) == 2, "a second registration")
        wait_until(lambda: the_worker(live_repo) is not None, "the row again")
        assert the_worker(live_repo).state == "running"
    finally:
        worker.stop()
    assert the_worker(live_repo).state == "stopped"


# --- cancel ------------------------------------------------------------------------------------------


def watch_for_cancel(handlers, seen: dict, *, then=None):
    """Register ``watch``: runs until its job's cancel request shows, notes when, then returns or ``then()``."""

    def watch(payload):
        job = current_job()
        seen["started"] = time.monotonic()
        while not job.cancel_requested:
            assert time.monotonic() - seen["started"] < WAIT, "no cancel request reached the handler"
            time.sleep(0.005)
        seen["at"] = time.monotonic()
        if then is not None:
            then()

    handlers.register("watch", watch)


def cancel_when_running(repo, job_id) -> float:
    """Ask to cancel the job once it runs; the monotonic time just before the request."""
    wait_until(lambda: repo.find_by_id(job_id).status == "running", "the job to start")
    asked = time.monotonic()
    assert repo.cancel(job_id) is not None
    return asked


@pytest.mark.parametrize("handler_ends", ["returns", "raises"])
def test_a_running_job_sees_its_cancel_within_one_heartbeat_and_ends_cancelled(
    db, live_repo, handlers, events, make_worker, handler_ends
):
    seen = {}

    def boom():
        raise RuntimeError("stopped on request")

    watch_for_cancel(handlers, seen, then=boom if handler_ends == "raises" else None)
    job, _ = live_repo.create("watch", max_retries=3)
    queue = CallLog(db)
    worker = make_worker(queue, stale_after=1.5)  # heartbeat every 0.5 s
    worker.start()

    asked = cancel_when_running(live_repo, job.id)
    events.wait_for("cancelled")

    # Within one heartbeat: the first tick that reads the requests after the request was made finds it (the
    # second, when the first read was already under way as it was made), and the handler sees it before the
    # next tick reads again. Counted in ticks, not seconds, so a loaded machine that stretches a tick does
    # not fail it.
    reads = [call for call in queue.called("cancel_requests") if call["started"] >= asked]
    hits = [job.id in call["found"] for call in reads]
    assert True in hits[:2], hits
    later = reads[hits.index(True) + 1 :]
    assert not later or seen["at"] < later[0]["started"], "the request reached the handler a tick late"
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count) == ("cancelled", 0)
    assert [e.kind for e in events.events if e.job_id == job.id] == ["claimed", "cancel-requested", "cancelled"]
    assert worker.stats.cancelled == 1 and worker.stats.failed == 0 and worker.stats.completed == 0


def test_a_handler_that_finished_before_the_request_was_seen_completes(db, live_repo, handlers, make_worker):
    go = threading.Event()
    started = threading.Event()
    handlers.register("t", lambda payload: (started.set(), go.wait(WAIT)))
    queue = CallLog(db)
    worker = make_worker(queue, stale_after=300)  # beats 10 s apart: the request is not seen before the end
    worker.start()
    wait_until(lambda: queue.called("worker_seen"), "the first beat")
    job, _ = live_repo.create("t")
    assert started.wait(WAIT)

    assert live_repo.cancel(job.id).status == "running"
    go.set()

    wait_until(lambda: worker.stats.completed == 1, "the job to complete")
    assert live_repo.find_by_id(job.id).status == "completed"


def test_a_cancelled_pending_job_never_runs(live_repo, handlers, make_worker):
    ran = []
    handlers.register("t", lambda payload: ran.append(current_job().id))
    cancelled, _ = live_repo.create("t")
    kept, _ = live_repo.create("t")
    assert live_repo.cancel(cancelled.id).status == "cancelled"

    make_worker(concurrency=2).run(burst=True)

    assert ran == [kept.id]
    assert live_repo.find_by_id(cancelled.id).status == "cancelled"


# --- over HTTP: a remote worker does all of it through HttpQueue ----------------------------------------


def test_over_http_a_worker_registers_keeps_to_its_queues_and_honours_a_cancel(live_repo, handlers, events):
    from fastapi.testclient import TestClient

    from queue_core.client import HttpQueue
    from queue_core.server.app import create_app

    seen = {}
    watch_for_cancel(handlers, seen)
    job, _ = live_repo.create("watch", queue="mail")
    elsewhere, _ = live_repo.create("watch", queue="default")
    client = TestClient(create_app(live_repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as queue:
        worker = Worker(
            queue, worker_id="remote", registry=handlers, queues={"mail": 1}, stale_after=1.5,
            poll_interval=0.01, on_event=events,
        )  # fmt: skip
        worker.start()
        try:
            cancel_when_running(live_repo, job.id)
            events.wait_for("cancelled")
            assert the_worker(live_repo, "remote").state == "running"
        finally:
            worker.stop()

    assert live_repo.find_by_id(job.id).status == "cancelled"
    assert live_repo.find_by_id(elsewhere.id).status == "pending"  # not one of its queues
    row = the_worker(live_repo, "remote")
    assert row.state == "stopped" and list(row.queues) == ["mail"]
    assert not events.of("error"), [e.message for e in events.of("error")]


def test_the_built_in_sleep_stops_when_its_job_is_cancelled(live_repo, handlers, events, make_worker):
    # The console's demo cancels sleep jobs; the handler slept its full time and the job ended completed.
    handlers.register("sleep", builtin_sleep)
    job, _ = live_repo.create("sleep", {"seconds": 600})
    worker = make_worker(stale_after=1.5)  # heartbeat every 0.5 s
    worker.start()
    cancel_when_running(live_repo, job.id)
    events.wait_for("cancelled")
    assert live_repo.find_by_id(job.id).status == "cancelled"
    assert worker.stats.cancelled == 1 and worker.stats.completed == 0
