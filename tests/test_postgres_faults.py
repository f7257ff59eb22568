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
