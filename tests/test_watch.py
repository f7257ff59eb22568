"""SQLite wake-ups: a watcher of other connections' commits (``PRAGMA data_version``) wakes idle workers."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from queue_core.store.notify import listen_for_jobs
from queue_core.store.watch import ChangeWatcher

pytestmark = pytest.mark.backends("sqlite")
WAIT = 20


def test_on_sqlite_listen_for_jobs_starts_a_watcher_that_hears_another_connections_commit(db, live_repo):
    heard = threading.Event()
    watcher = listen_for_jobs(db, heard.set)
    try:
        assert isinstance(watcher, ChangeWatcher) and watcher.wait_listening(WAIT)
        live_repo.create("t")
        assert heard.wait(WAIT)
    finally:
        watcher.stop(WAIT)
    assert not watcher.is_alive()


def test_a_claim_that_finds_nothing_moves_no_one_s_data_version(db, live_repo):
    # Otherwise idle workers would wake each other with their empty claims, forever.
    other = sqlite3.connect(db.database, isolation_level=None)
    before = other.execute("PRAGMA data_version").fetchone()[0]
    assert live_repo.claim("w") is None
    assert live_repo.complete_and_claim_many([], 4, worker_id="w") == ([], [])
    assert other.execute("PRAGMA data_version").fetchone()[0] == before
    live_repo.create("t")
    assert other.execute("PRAGMA data_version").fetchone()[0] != before
    other.close()


def test_an_idle_worker_woken_by_the_watcher_runs_a_new_job_without_waiting_its_poll(
    db, live_repo, handlers, events, make_worker
):
    handlers.register("t", lambda payload: None)
    worker = make_worker(poll_interval=600, max_poll_interval=600)  # polling alone would wait ten minutes
    worker.start()  # the Worker starts its own watcher, and returns once it watches
    try:
        assert worker.listening
        events.wait_for("started")
        job, _ = live_repo.create("t")
        assert events.wait_for("completed")[0].job_id == job.id
    finally:
        worker.stop(WAIT)
    assert not worker.listening  # its thread ended with the run


@pytest.mark.parametrize("options", [{"listen": False}, {"burst": True}], ids=["listen=False", "a burst"])
def test_a_worker_told_not_to_listen_or_in_a_burst_starts_no_watcher(db, live_repo, handlers, make_worker, options):
    burst = options.pop("burst", False)
    worker = make_worker(poll_interval=600, max_poll_interval=600, **options)
    if burst:
        worker.run(burst=True)
    else:
        worker.start()
        assert not worker.listening
        worker.stop(WAIT)
    assert worker._session.listener is None


def test_a_broken_callback_does_not_end_the_watch(db, live_repo):
    calls = []
    heard_twice = threading.Event()

    def callback():
        calls.append(1)
        if len(calls) >= 2:
            heard_twice.set()
        raise RuntimeError("broken on purpose")

    watcher = listen_for_jobs(db, callback)
    try:
        assert watcher.wait_listening(WAIT)
        live_repo.create("t")
        while not heard_twice.wait(0.05):
            live_repo.create("t")
    finally:
        watcher.stop(WAIT)


def test_a_watcher_that_opens_after_its_file_went_makes_no_new_file_at_the_path(tmp_path):
    # Regression: the watcher opened its own connection with a plain sqlite3.connect, which makes a missing
    # file. A worker whose database was deleted or moved stopped without making one (its own connections
    # refuse to), but its watcher, (re)opening meanwhile, made a new, empty file at the path: where an operator
    # puts the file back (seen once under load, a --processes pool's file deleted in test_worker_pool).
    path = tmp_path / "queue.db"
    heard = threading.Event()
    watcher = ChangeWatcher(str(path), heard.set, interval=0.01).start()
    try:
        assert not watcher.wait_listening(0.5)  # it cannot open what is not there, and keeps trying
    finally:
        watcher.stop(WAIT)
    assert not path.exists()
    sqlite3.connect(path).close()  # once the file is back (any SQLite file), it watches it
    watcher = ChangeWatcher(str(path), heard.set, interval=0.01).start()
    try:
        assert watcher.wait_listening(WAIT)
    finally:
        watcher.stop(WAIT)
