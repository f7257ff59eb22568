"""Orderings of a worker's threads that once broke a guarantee, each forced with events and monkeypatching.

Each test holds one thread at the point where the race happened and lets another step run meanwhile; none
waits on the clock but for ``WAIT``, a guard against hangs.
"""

from __future__ import annotations

import signal
import threading

from worker_support import WAIT

from queue_core.store.repository import JobRepository
from queue_core.worker.cli import install_signal_handlers
from queue_core.worker.slots import Slots


def hold_before_execute(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Slots hold each job they took between its claim and its start until ``gate`` is set; ``arrived``
    says one is held (a slot thread not yet scheduled after the claim that fed it)."""
    gate, arrived = threading.Event(), threading.Event()
    execute = Slots.execute

    def held(self, session, entry):
        arrived.set()
        assert gate.wait(WAIT)
        return execute(self, session, entry)

    monkeypatch.setattr(Slots, "execute", held)
    return gate, arrived


def test_a_job_a_stop_released_before_its_slot_started_it_never_runs(
    live_repo, handlers, events, make_worker, monkeypatch
):
    # A slot took a job (its own claim's, or one a claim mailed it) but had not started it when a stop with no
    # time left (a second SIGTERM) released it back to pending: another worker may claim it now. The slot
    # used to run the handler all the same, a second run of a job that had never failed.
    ran = []
    handlers.register("job", lambda payload: ran.append(payload))
    job, _ = live_repo.create("job", {"n": 1})
    gate, arrived = hold_before_execute(monkeypatch)
    worker = make_worker()
    worker.start()
    assert arrived.wait(WAIT)
    threads = list(worker._session.threads)
    worker.stop(timeout=0)
    assert live_repo.find_by_id(job.id).status == "pending"
    assert [e.job_id for e in events.of("released")] == [job.id]
    gate.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert ran == []
    assert events.of("claimed") == []


def test_a_sigterm_that_comes_before_the_worker_started_stops_it_once_it_has(make_worker):
    # The command installs its signal handlers, then starts the worker (gc.freeze, the session, the threads).
    # A SIGTERM in between (a service manager stopping a unit just started) found no session to stop: it was
    # logged as "stopping" and then ignored, and the worker ran on until a SIGKILL.
    worker = make_worker()
    previous = install_signal_handlers(worker)
    try:
        signal.raise_signal(signal.SIGTERM)  # its handler runs now, on this thread, before the start
        returned = threading.Event()
        threading.Thread(target=lambda: (worker.run(), returned.set()), daemon=True).start()
        assert returned.wait(WAIT), "the SIGTERM received before the start was lost"
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class HeldHeartbeat(JobRepository):
    """A repository whose first heartbeat of a job waits, between the worker's look at its jobs and the
    statement, until ``go`` is set; ``beating`` says it waits, ``beat_done`` that the beat after it is over."""

    def __init__(self, db):
        super().__init__(db)
        self.beating, self.go, self.beat_done = threading.Event(), threading.Event(), threading.Event()

    def heartbeat(self, job_ids, *, worker_id, attempts=None):
        job_ids = list(job_ids)
        if job_ids and not self.beating.is_set():
            self.beating.set()
            assert self.go.wait(WAIT)
        return super().heartbeat(job_ids, worker_id=worker_id, attempts=attempts)

    def worker_seen(self, worker_id, **counts):
        if self.beating.is_set():
            self.beat_done.set()  # the beat that waited has looked at its answer
        return super().worker_seen(worker_id, **counts)


def test_a_job_a_stop_releases_during_a_heartbeat_is_released_not_lost(db, handlers, events, make_worker):
    # The heartbeat read the running jobs, then the stop released one (back to pending) before the beat's
    # statement: the beat found it not held and reported it "lost" (and metrics counted it twice, released
    # and lost) though this worker had given it back itself.
    repo = HeldHeartbeat(db)
    finish = threading.Event()
    handlers.register("job", lambda payload: finish.wait(WAIT))
    job, _ = repo.create("job", {})
    worker = make_worker(repo, stale_after=0.3)

    def released(event):  # the stop, as its release is written and said (the job not yet forgotten)
        repo.go.set()
        assert repo.beat_done.wait(WAIT)

    worker.subscribe(released, ["released"])
    worker.start()
    assert repo.beating.wait(WAIT)
    worker.stop(timeout=0)
    finish.set()
    assert repo.find_by_id(job.id).status == "pending"
    assert [e.job_id for e in events.of("released")] == [job.id]
    assert events.of("lost") == []
