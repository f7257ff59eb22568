"""PostgreSQL faults an operator meets: connections the server dropped (pg_terminate_backend, a restart).

Only this test's own connections are terminated (the fixture names them after its schema, in
``application_name``): never another test's, and the shared server is never restarted.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from fastapi.testclient import TestClient

from queue_core.server.app import create_app
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

pytestmark = pytest.mark.backends("postgresql")

WAIT = 15.0  # seconds a terminated backend may take to be gone (a wait for an event, not a timing check)


def terminate_this_tests_connections(db_url: str) -> int:
    """Terminate every connection of this test but the one doing it; return once they are gone, so their
    FATAL and end of stream have been sent. How many there were."""
    with psycopg.connect(db_url, autocommit=True) as killer:
        pids = [
            pid
            for (pid,) in killer.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = current_setting('application_name')"
                " AND pid <> pg_backend_pid()"
            )
        ]
        killer.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        deadline = time.monotonic() + WAIT
        while killer.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the terminated backends did not go away"
            time.sleep(0.05)
    return len(pids)


def test_a_connection_dropped_while_idle_is_replaced_before_the_next_statement(db_url):
    # Regression: the statement after a pg_terminate_backend (or a restart) failed on the dead connection
    # ("terminating connection due to administrator command"); only the one after it reconnected.
    repo = JobRepository(open_database(db_url))
    first, _ = repo.create("t")
    assert terminate_this_tests_connections(db_url) == 1
    second, created = repo.create("t")  # the write is sent once, on a new connection
    assert created and second.id != first.id
    assert [job.id for job in repo.list()] == [first.id, second.id]
    repo.db.close()


def test_a_connection_dropped_inside_a_connection_context_is_replaced_and_the_context_closes_it(db_url):
    # Review finding: the console reads and writes each inside db.connection_context(). A connection the server
    # dropped between two of its statements was replaced, and the statement ran, but the replacement emptied
    # peewee's stack of open contexts, so leaving the context raised "IndexError: pop from empty list": the
    # console said "Cannot read the queue: IndexError" for a read that worked, and a bulk write that went on
    # on the new connection ended in that error, which is no database error, so it reached the operator.
    repo = JobRepository(open_database(db_url))
    first, _ = repo.create("t")
    with repo.db.connection_context():
        assert repo.find_by_id(first.id).id == first.id
        assert terminate_this_tests_connections(db_url) == 1
        second, created = repo.create("t")  # on a new connection, inside the same context
        assert created
    assert repo.db.is_closed()  # the context closed the connection it held, the replacement
    assert [job.id for job in repo.list()] == [first.id, second.id]
    repo.db.close()


def test_a_listening_connection_keeps_its_notifications_through_the_check(db_url):
    # The check reads a readable idle socket: a notification it reads must still reach the application.
    db = open_database(db_url)
    db.execute_sql("LISTEN queue_core_test_channel")
    with psycopg.connect(db_url, autocommit=True) as other:
        other.execute("NOTIFY queue_core_test_channel, 'hello'")
    conn = db.connection()
    deadline = time.monotonic() + WAIT
    while not conn.pgconn.socket or not _readable(conn):
        assert time.monotonic() < deadline, "the notification did not arrive"
        time.sleep(0.05)
    assert db.execute_sql("SELECT 1").fetchone() == (1,)
    assert db.connection() is conn, "a live connection was replaced"
    assert [n.payload for n in conn.notifies(timeout=0, stop_after=1)] == ["hello"]
    db.close()


def _readable(conn) -> bool:
    import select

    return bool(select.select([conn.fileno()], [], [], 0)[0])


def test_the_api_answers_every_request_after_its_pooled_connections_were_terminated(db_url):
    # Regression: after a pg_terminate_backend of the server's connections (or a restart), each pooled
    # connection answered one 503 before it was replaced; none need to, as none of them had sent a statement.
    repo = JobRepository(open_database(db_url))
    with TestClient(create_app(repo)) as client:
        statuses = [client.get("/stats").status_code for _ in range(8)]
        assert terminate_this_tests_connections(db_url) >= 1
        statuses += [client.get("/stats").status_code for _ in range(8)]
        created = client.post("/jobs", json={"type": "t"})
    assert statuses == [200] * 16
    assert created.status_code == 201
    assert [job.type for job in repo.list()] == ["t"]


def with_setting(db_url: str, name: str, value: str) -> str:
    """``db_url`` with a server setting for its connections (libpq's ``options``, beside its search_path)."""
    return db_url.replace("options=-csearch_path", f"options=-c{name}%3D{value}%20-csearch_path", 1)


READ_ONLY_FIX = "point the URL at the primary, with a role that may write"


def test_a_read_only_database_is_said_with_what_to_change_by_the_api_the_cli_and_the_worker(
    db_url, capsys, caplog, handlers, events
):
    # Regression: a read-only role (or a standby after a fail-over) got "the database is unavailable or busy;
    # retry shortly" from the API, "database error: cannot execute SELECT in a read-only transaction" from the
    # CLI and the same driver words at every poll of a worker: none said which setting to change.
    from queue_core.cli import admin as cli
    from queue_core.worker import Worker

    read_only = with_setting(db_url, "default_transaction_read_only", "on")
    repo = JobRepository(open_database(read_only))
    with TestClient(create_app(repo)) as client:
        answer = client.post("/jobs", json={"type": "t"})
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "10"
    assert READ_ONLY_FIX in answer.json()["detail"] and "read-only" in answer.json()["detail"]
    [logged] = [r.getMessage() for r in caplog.records if r.name == "queue_core.server"]
    assert "\n" not in logged and READ_ONLY_FIX in logged

    assert cli.main(["--db", read_only, "enqueue", "t"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and READ_ONLY_FIX in line and "nothing was written" in line

    worker = Worker(repo, worker_id="w1", registry=handlers, on_event=events, poll_interval=0.01)
    worker.start()
    try:
        [first, *_] = events.wait_for("error")
    finally:
        worker.stop(timeout=0)
    assert READ_ONLY_FIX in first.message
    assert JobRepository(open_database(db_url)).list() == []  # nothing was written by any of them
    repo.db.close()


def test_a_statement_timeout_is_said_with_what_to_raise(db_url, capsys):
    # Regression: "database error: canceling statement due to statement timeout", with no word of the setting.
    from queue_core.cli import admin as cli

    JobRepository(open_database(db_url)).create("t")
    with psycopg.connect(db_url) as locker:
        locker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")  # held until this block ends: stats waits
        assert cli.main(["--db", with_setting(db_url, "statement_timeout", "200"), "stats"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "statement timeout" in line and "ALTER ROLE ... SET statement_timeout" in line


@pytest.mark.parametrize(
    "raised, says",
    [
        (psycopg.errors.InsufficientPrivilege("permission denied for table jobs"), "USAGE on their sequences"),
        (
            psycopg.OperationalError(
                'connection failed: connection to server at "db", port 5432 failed: FATAL:  remaining connection'
                " slots are reserved for non-replication superuser connections"
            ),
            "each worker process holds --concurrency + 3 connections",
        ),
        (psycopg.OperationalError("server closed the connection unexpectedly"), None),
    ],
    ids=["no-privilege", "no-connection-slot", "a-lost-connection-is-no-refusal"],
)
def test_a_refusal_is_told_from_its_driver_error_as_peewee_wraps_it(db_url, raised, says):
    import peewee as pw

    from queue_core.store.postgres import refusal

    try:
        try:
            raise raised
        except psycopg.Error as exc:
            raise pw.OperationalError(exc, *exc.args) from exc  # as peewee's exception wrapper does
    except pw.OperationalError as wrapped:
        why = refusal(wrapped)
    assert (why is None) if says is None else (says in why)


def test_a_running_worker_holds_no_connection_on_the_thread_that_ran_it(db_url, handlers):
    # Regression: the thread that called run() kept the connection its start used, idle until the stop: one
    # more per worker process than README's max_connections sizing (slots, heartbeat, listener, ack flusher).
    import threading

    from queue_core.worker import Worker

    repo = JobRepository(open_database(db_url))
    worker = Worker(repo, worker_id="w1", registry=handlers, poll_interval=0.01)
    opened = {}

    def run() -> None:
        opened["conn"] = repo.db.connection()  # this thread's, which the start uses (register, statistics)
        worker.run()

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.monotonic() + WAIT
        while not (worker.is_running and opened["conn"].closed):
            assert time.monotonic() < deadline, "the run's thread kept its connection open"
            time.sleep(0.02)
    finally:
        worker.request_stop(0)
        runner.join(WAIT)
    assert not runner.is_alive()
