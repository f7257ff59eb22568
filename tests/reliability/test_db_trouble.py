"""Database trouble: a lock held past busy_timeout (SQLite) or a killed connection (PostgreSQL).

The worker reports the error, reconnects, keeps going, and retries its ack, so the job that finished
is recorded once and never run again because of the trouble. A PostgreSQL connection killed while it sat
idle is replaced before its next statement, with no error at all (store.postgres).
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.worker import Worker
from queue_core.worker.handlers import HandlerRegistry

WAIT = 30


class Gate:
    """A handler that records each run, then waits until the test opens the gate."""

    def __init__(self):
        self.runs = 0
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, payload):
        self.runs += 1
        self.entered.set()
        assert self.gate.wait(WAIT)


def until(condition, what):
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def start_worker(repo, gate, errors):
    handlers = HandlerRegistry(with_builtins=False)
    handlers.register("gated", gate)
    worker = Worker(repo, worker_id="w", registry=handlers, poll_interval=0.02, max_poll_interval=0.05,
                    stale_after=30, on_event=lambda e: e.kind == "error" and errors.append(e.error))  # fmt: skip
    worker.start()
    return worker


def test_sqlite_lock_longer_than_busy_timeout(tmp_path):
    path = tmp_path / "q.db"
    repo = JobRepository(open_database(f"sqlite:///{path}?busy_timeout=100"))
    job, _ = repo.create("gated")
    gate, errors = Gate(), []
    worker = start_worker(repo, gate, errors)
    try:
        assert gate.entered.wait(WAIT)
        locker = sqlite3.connect(path, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another writer holds the lock for 10x busy_timeout
        gate.gate.set()
        until(lambda: any("locked" in e for e in errors), "the worker to report the lock")
        time.sleep(1.0)
        locker.execute("COMMIT")
        until(lambda: repo.find_by_id(job.id).status == "completed", "the retried ack")
        second, _ = repo.create("gated")  # and it carries on with new work
        until(lambda: repo.find_by_id(second.id).status == "completed", "the next job")
    finally:
        worker.stop(timeout=5)
    assert gate.runs == 2  # the first job ran once, not again after the lock
    assert repo.find_by_id(job.id).retry_count == 0
    assert all("database is locked" in e for e in errors)


@pytest.mark.backends("postgresql")  # pg_terminate_backend is PostgreSQL's; the SQLite variant is the lock test above
def test_postgres_connection_killed_mid_job(db_url):
    repo = JobRepository(open_database(db_url))
    job, _ = repo.create("gated")
    gate, errors = Gate(), []
    worker = start_worker(repo, gate, errors)
    try:
        assert gate.entered.wait(WAIT)
        killer = open_database(db_url)
        killed = [
            pid
            for pid, terminated in killer.execute_sql(
                "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                # Only this test's connections (the fixture names them after its schema), not other tests' or users'.
                "WHERE application_name = current_setting('application_name') AND pid <> pg_backend_pid()"
            ).fetchall()
            if terminated
        ]
        assert killed
        # pg_terminate_backend only signals: gone, each backend has said its goodbye on its socket. Before that,
        # a statement sent on the connection fails whatever the client checks, as any mid-statement drop does.
        gone = "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)"
        until(lambda: killer.execute_sql(gone, (killed,)).fetchone()[0] == 0, "the killed backends to exit")
        killer.close()
        gate.gate.set()
        until(lambda: _status(db_url, job.id) == "completed", "the retried ack after reconnecting")
        second, _ = JobRepository(open_database(db_url)).create("gated")
        until(lambda: _status(db_url, second.id) == "completed", "the next job")
    finally:
        worker.stop(timeout=5)
    assert gate.runs == 2
    # The killed connections sat idle while the handler ran: each is replaced before its next statement, so
    # the completion is written at its first try, not after an error on the dead connection (it was, before).
    assert not [error for error in errors if "terminating connection" in error], errors


def _status(db_url, job_id):
    db = open_database(db_url)
    try:
        return JobRepository(db).find_by_id(job_id).status
    finally:
        db.close()
